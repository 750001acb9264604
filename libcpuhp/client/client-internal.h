/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client handle, and what the library's files give each other.  The
 * layers, bottom up: message.c (what a failed call says), conn.c (connect,
 * frames, close), request.c (one request and its reply, the one helper of
 * every blocking call), call.c (the same on a connection of its own, for
 * the asynchronous calls) and held.c (what a handle holds on such
 * connections); then one file per request family: lease.c with
 * fastpath.c, identity.c, hotplug.c, status.c, metrics.c, list.c,
 * freeze.c, events.c, state.c, cpus.c.  life.c and fork.c keep a handle safe from
 * close on another thread and from fork().  Not installed.
 */
#ifndef CPUHP_CLIENT_INTERNAL_H
#define CPUHP_CLIENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include <cpuhp/client.h>

#include "frame.h"

struct cpuhp__fast;

/* Descriptors kept from the reads ahead until a reply claims them (cpuhp__client_take_fds). */
#define CPUHP__CLIENT_MAX_FDS 2

struct cpuhp_client {
	pthread_mutex_t lock; /* held by every public call, for its whole length */
	/*
	 * Held around every write to fd: by calls (under ->lock) and by a fast
	 * lease release on any thread (FastWake), which must not wait for a
	 * call that may itself wait for that release.
	 */
	pthread_mutex_t send_lock;
	int fd;
	/*
	 * Sticky: once the connection is unusable (closed, bad frame) every
	 * call fails with this at once, since the stream cannot resynchronise.
	 */
	int dead;
	/*
	 * The daemon's end of the connection is gone (EOF, ECONNRESET, or its
	 * last word before closing): the leases counted on it died with it.
	 * Set once; read without the lock by fast lease releases
	 * (cpuhp__client_conn_ended).
	 */
	_Atomic bool ended;
	/* Leases of this handle held when it ended, for one LEASES_LOST event (under lock). */
	unsigned leases_lost;
	bool leases_lost_pending;
	uint64_t next_id;
	uint64_t watch_id;  /* id of the accepted Watch request, 0 before */
	uint64_t hello_id;  /* the Hello sent, while its reply is not read yet */
	uint32_t max_frame; /* the daemon's limit, from HelloReply */

	/* Bytes read ahead: rbuf[rpos, rlen) is not yet fed to dec. */
	struct cpuhp__frame_decoder dec;
	size_t rpos, rlen;
	uint8_t rbuf[16384];

	/* Events read while a call waited for its reply, oldest at qhead. */
	Cpuhp__Response *queue[CPUHP_CLIENT_EVENT_QUEUE_MAX];
	unsigned qhead, qlen;
	unsigned lost; /* dropped since the queue was last drained */

	char message[CPUHP_CLIENT_MESSAGE_MAX];

	/* Descriptors that came with bytes read ahead (SCM_RIGHTS), oldest first. */
	int fds[CPUHP__CLIENT_MAX_FDS];
	unsigned nfds;

	bool fast_offered; /* HelloReply.fast_path; written before connect returns */
	bool fast_refused; /* under lock: asked, and the daemon said no for good */
	/*
	 * Set once, under lock, by the first lease call that finds the fast
	 * path offered (cpuhp__client_fast_get); read without the lock by lease
	 * calls (acquire: the mapping is complete before it is seen); freed by
	 * close.  NULL: socket leases only, so far.
	 */
	struct cpuhp__fast *_Atomic fast;
	/*
	 * Regions cpuhpd revoked (fastpath.c, fast_renew), newest first, kept
	 * until close for the releases of the leases they counted; pushed
	 * under lock, read without it.
	 */
	struct cpuhp__fast *_Atomic retired;

	/* HelloReply: this connection's number, which connections opened beside it name
	 * (Hello.notices_to), and the daemon's --max-delay-ms (0: no delay leases). */
	uint32_t conn_id, max_delay_ms;
	/* Connections opened beside this one name it, so that notices come here. */
	uint32_t notices_to;
	/* cpuhp_client_set_lease_delay(): this handle's leases are delay leases of it (0: block).
	 */
	unsigned delay_ms;

	/*
	 * Leases held on connections of their own (held.c): those a fast-path
	 * handle had to wait for, so that no wait holds ->lock (fastpath.c
	 * says why), and those of asynchronous calls.
	 */
	pthread_mutex_t fb_lock;
	struct cpuhp__held *fb; /* under fb_lock */
	unsigned nfb, capfb;

	/*
	 * cpuhp_client_set_identity(), under fb_lock too (a leaf lock that
	 * lease waits on connections of their own may take while a call holds
	 * ->lock): sent with every LeaseAcquire made on such a connection.
	 */
	char who[CPUHP_CLIENT_IDENTITY_MAX + 1], why[CPUHP_CLIENT_IDENTITY_MAX + 1];

	struct sockaddr_un sa; /* the daemon's address, for those connections */

	/* cpuhp_client_persist(), under ->lock: hotplug requests change the plan too. */
	bool persist;

	/* CPUHP_CLIENT_STATE_SHARED: the connection and thread its states share (hub.c). */
	struct cpuhp__hub *hub; /* under fb_lock */

	/*
	 * cpuhp_client_close() while other threads wait in calls on the handle
	 * (life.c): the calls that may block count themselves in ->users, and
	 * the connections of their own they wait on are on ->waiting; close
	 * sets ->closing, shuts those sockets and its own down so that every
	 * wait ends (-ECANCELED), and frees the handle once ->users is 0.
	 */
	pthread_mutex_t life_lock;
	pthread_cond_t life_cond;
	unsigned users;               /* under life_lock */
	bool closing;                 /* under life_lock; also read under ->lock */
	struct cpuhp_client *waiting; /* under life_lock, linked by ->wait_next */
	struct cpuhp_client *wait_next, **wait_pprev;

	unsigned forks; /* cpuhp__client_forks when opened: another value means a fork child */
	struct cpuhp_client *fork_next, *fork_prev; /* fork.c's list of open handles */
};

/* --- message.c: what a failed call says --------------------------------------------- */

/* Set c->message (printf format) and return @err, for `return cpuhp__client_error(...)`. */
int cpuhp__client_error(struct cpuhp_client *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * The handle's message, if no call runs on it: one that runs (and may
 * wait) holds ->lock and owns the message.  Return: @err.
 */
int cpuhp__client_note(struct cpuhp_client *c, int err, const char *msg);

/* An Error from the daemon: its code as -errno, its message (or a generic one) kept. */
int cpuhp__client_take_error(struct cpuhp_client *c, const Cpuhp__Error *e);

/*
 * cpuhp__client_too_old() - the one wording of "this cpuhpd is too old to
 * ...": for -EOPNOTSUPP answering a request newer than the protocol's first
 * (named by the reply it @expect-s), set @c's message.  Every reply is
 * awaited through cpuhp__client_await(), which says it.
 * Return: @ret.
 */
int cpuhp__client_too_old(struct cpuhp_client *c, int ret, Cpuhp__Response__BodyCase expect);

/* -EPROTO with a message unless @str (NULL: "") is a CPU list: the parse of every list a reply
 * carries. */
int cpuhp__client_parse_cpus(struct cpuhp_client *c, const char *what, const char *str,
                             struct cpuhp_cpuset *out);

/* --- conn.c: connect, frames, close ------------------------------------------------- */

/*
 * Connect to @sa and say hello: cpuhp_client_connect() once the path is
 * known.  @how: CPUHP__OPEN_AWAIT reads the Hello's reply now; without it
 * the Hello is only sent, and the connection's first await
 * (cpuhp__client_hello_finish()) reads its reply, so that a request may
 * follow it at once (call.c).  CPUHP__OPEN_STATES: a connection for hotplug
 * states, whose Hello says the client runs batches of calls (state.c).
 * @notices_to: the daemon's number of the handle this connection is opened
 * beside (its conn_id), where notices about what this one holds go; 0: here.
 */
#define CPUHP__OPEN_AWAIT  (1u << 0)
#define CPUHP__OPEN_STATES (1u << 1)
int cpuhp__client_open(const struct sockaddr_un *sa, unsigned how, uint32_t notices_to,
                       struct cpuhp_client **out);

/*
 * Read the reply to the Hello sent (if it is not read yet) and check the
 * version.  @timeout_ms and the return as for cpuhp__client_await().
 */
int cpuhp__client_hello_finish(struct cpuhp_client *c, int timeout_ms);

/* The connection cannot be used again: remember @err for every later call. */
int cpuhp__client_kill(struct cpuhp_client *c, int err, const char *what);

/*
 * cpuhp__client_end() - the daemon closed the connection (or said its last
 * word, @err, before closing): cpuhp__client_kill(), and, the first time,
 * count the leases that died with it for a LEASES_LOST event and send
 * every later fast lease release to cpuhp__fast_after_release().  Under
 * ->lock (or on a handle no other thread uses).  Return: @err.
 */
int cpuhp__client_end(struct cpuhp_client *c, int err, const char *what);

/*
 * cpuhp__client_conn_ended() - has the daemon's end of @c's connection
 * gone?  Without the lock: ->ended, else one poll() of the socket for a
 * hang-up (a daemon killed or stopped closes it; one that restarts with
 * its connections kept in systemd's fd store does not).
 */
bool cpuhp__client_conn_ended(struct cpuhp_client *c);

/* c->dead, the error of a connection that failed before, with a message that says so. */
int cpuhp__client_dead_error(struct cpuhp_client *c);

/*
 * cpuhp__client_send_request() - send @req (its id is assigned here) and
 * do not wait.  Return: 0; -EMSGSIZE; the daemon's last word or a
 * connection -errno if the send failed.
 */
int cpuhp__client_send_request(struct cpuhp_client *c, Cpuhp__Request *req);

/*
 * cpuhp__client_send_all() - write @buf whole to the socket, under
 * ->send_lock only (so a fast lease release may send without ->lock).
 * Return: 0 or the -errno of send().
 */
int cpuhp__client_send_all(struct cpuhp_client *c, const uint8_t *buf, size_t len);

/*
 * cpuhp__client_read() - the next Response, from the read-ahead or the socket.
 * @timeout_ms: -1 blocks; 0 returns -EAGAIN if no whole frame is there;
 *              else -ETIMEDOUT when it runs out.
 */
int cpuhp__client_read(struct cpuhp_client *c, int timeout_ms, Cpuhp__Response **out);

/*
 * cpuhp__client_read_ahead() - the next whole Response among the bytes read
 * from the socket already, without reading it.  When it returns 0 every
 * byte read is consumed (a frame's beginning is kept by the decoder), so
 * that poll() on the socket sees whatever else there is.
 * Return: 1 with *@out; 0 if none; a connection -errno.
 */
int cpuhp__client_read_ahead(struct cpuhp_client *c, Cpuhp__Response **out);

/*
 * cpuhp__client_fill() - one recvmsg() into the read-ahead, which must be
 * consumed (cpuhp__client_read_ahead() returned 0).  @nonblock: do not
 * wait (after poll() said readable).
 * Return: 0; -EAGAIN (@nonblock, nothing there); a connection -errno.
 */
int cpuhp__client_fill(struct cpuhp_client *c, bool nonblock);

/*
 * cpuhp__client_take_fds() - the @n descriptors that came with the reply
 * just read (FastPathGranted), now the caller's.
 * Return: 0; -EBADMSG if there were not exactly @n (all are closed then).
 */
int cpuhp__client_take_fds(struct cpuhp_client *c, int *fds, unsigned n);

/* --- request.c: one request and its reply ------------------------------------------- */

/*
 * cpuhp__client_enter() - begin a public call on @c: refuse a handle a fork
 * child inherited, count the call as a user of @c (so that close on
 * another thread waits for it, life.c), take ->lock and clear the message.
 * Return: 0; -ECHILD; -ECANCELED once close began (message set).
 */
int cpuhp__client_enter(struct cpuhp_client *c);
/* End the call: unlock, say -ECANCELED for a failure close caused.  Return: @ret or that. */
int cpuhp__client_leave(struct cpuhp_client *c, int ret);

/*
 * cpuhp__client_await() - the reply to request @id, queueing events that
 * arrive first.  Requests are answered in order: await each before the next.
 * @expect:     the body case of a successful reply.
 * @timeout_ms: -1 blocks; 0 returns 1 while no whole reply is there.
 * @out:        the reply, to free with cpuhp__response__free_unpacked();
 *              written only on success.
 * Return: 0; 1 (not yet); the daemon's Error as -errno (message set, in
 * cpuhp__client_too_old()'s words for a request it does not know); -EPROTO
 * for a reply of another kind; a connection -errno.
 */
int cpuhp__client_await(struct cpuhp_client *c, uint64_t id, Cpuhp__Response__BodyCase expect,
                        int timeout_ms, Cpuhp__Response **out);

/* cpuhp__client_send_request(), then cpuhp__client_await() its reply for as long as it takes. */
int cpuhp__client_call(struct cpuhp_client *c, Cpuhp__Request *req,
                       Cpuhp__Response__BodyCase expect, Cpuhp__Response **out);

/*
 * What a request family makes of a successful reply, under ->lock: fill
 * what @arg points to (the caller's out-parameter only at the end, so that
 * it stays untouched on failure).  Return: 0; -errno with the message set.
 */
typedef int (*cpuhp__client_take_fn)(struct cpuhp_client *c, const Cpuhp__Response *resp,
                                     void *arg);

/*
 * cpuhp__client_request_locked() - cpuhp__client_call(), then @take (NULL:
 * the reply says only that it was done) on the reply, which is freed.
 * Under ->lock, between cpuhp__client_enter() and _leave().
 */
int cpuhp__client_request_locked(struct cpuhp_client *c, Cpuhp__Request *req,
                                 Cpuhp__Response__BodyCase expect, cpuhp__client_take_fn take,
                                 void *arg);

/* A whole blocking call: enter, cpuhp__client_request_locked(), leave. */
int cpuhp__client_request(struct cpuhp_client *c, Cpuhp__Request *req,
                          Cpuhp__Response__BodyCase expect, cpuhp__client_take_fn take, void *arg);

/*
 * A listing that comes in pages (ListLeases, ListStates): given a page,
 * send the request for the next one on @c (its id into *@id).  Return: 1
 * sent; 0 @resp was the last page; -EPROTO (set on @c) for a cursor with
 * no row before it, which would never end; a connection -errno.
 */
typedef int (*cpuhp__client_again_fn)(struct cpuhp_client *c, const Cpuhp__Response *resp,
                                      uint64_t *id);

/*
 * cpuhp__client_next_page() - the again function's common part: after a
 * page of @rows rows whose cursor is @next, send @req (the next page's
 * request, asking from @next) unless the listing is complete.  Return: as
 * cpuhp__client_again_fn.
 */
int cpuhp__client_next_page(struct cpuhp_client *c, ProtobufCBinaryData next, size_t rows,
                            Cpuhp__Request *req, uint64_t *id);

/*
 * cpuhp__client_pages() - cpuhp__client_request() of a listing in pages:
 * @req asks for the first, @take gets each page in turn (it appends to
 * @arg), @again asks for the next; one bracket for all of them.
 */
int cpuhp__client_pages(struct cpuhp_client *c, Cpuhp__Request *req,
                        Cpuhp__Response__BodyCase expect, cpuhp__client_again_fn again,
                        cpuhp__client_take_fn take, void *arg);

/* cpuhp__client_pages() for a caller inside cpuhp__client_enter()/_leave(). */
int cpuhp__client_pages_locked(struct cpuhp_client *c, Cpuhp__Request *req,
                               Cpuhp__Response__BodyCase expect, cpuhp__client_again_fn again,
                               cpuhp__client_take_fn take, void *arg);

/* --- call.c: a request on a connection of its own ------------------------------------ */

/*
 * cpuhp__call_begin() - open a connection of its own for @c, send its
 * Hello and @req there (the replies not awaited), and make the call that
 * cpuhp_client_call_done() completes.  A reply of @expect LEASE_GRANTED or
 * FROZEN leaves the connection holding that lease or freeze for @c
 * (held.c).  Return: 0; -ENOMEM; a connection -errno (@c's message set).
 */
int cpuhp__call_begin(struct cpuhp_client *c, Cpuhp__Request *req, Cpuhp__Response__BodyCase expect,
                      struct cpuhp_client_call **out);

/* cpuhp__call_begin() of a listing in pages: the call asks for each next page with @again. */
int cpuhp__call_begin_pages(struct cpuhp_client *c, Cpuhp__Request *req,
                            Cpuhp__Response__BodyCase expect, cpuhp__client_again_fn again,
                            struct cpuhp_client_call **out);

/*
 * cpuhp__call_pages() - the pages of done @call, a paged call of @expect,
 * in order (owned by @call).  Return: as cpuhp__call_reply().
 */
int cpuhp__call_pages(struct cpuhp_client_call *call, Cpuhp__Response__BodyCase expect,
                      Cpuhp__Response *const **pages, size_t *npages, struct cpuhp_client **conn);

/* A lease call done at once: fast lease @id, taken without the daemon.  Return: 0; -ENOMEM. */
int cpuhp__call_granted(struct cpuhp_client *c, uint64_t id, struct cpuhp_client_call **out);

/*
 * cpuhp__call_reply() - the answer of done @call, a call of @expect: the
 * reply (owned by @call) and the connection whose message a conversion
 * sets.  Return: 0; -EINVAL (not done, or another kind); the call's error.
 */
int cpuhp__call_reply(struct cpuhp_client_call *call, Cpuhp__Response__BodyCase expect,
                      const Cpuhp__Response **resp, struct cpuhp_client **conn);

/* The lease's or freeze's id of done @call, a call of @expect.  Return: as cpuhp__call_reply(). */
int cpuhp__call_id(const struct cpuhp_client_call *call, Cpuhp__Response__BodyCase expect,
                   uint64_t *id);

/* Poll and read until @call is done, resuming after signals.  Return: as done. */
int cpuhp__client_call_wait(struct cpuhp_client_call *call);

/* --- held.c: leases and freezes held on connections of their own ----------------------- */

/*
 * Leases held on connections of their own (a lease that waited behind a
 * hotplug, a lease of cpuhp_client_lease_acquire_begin()), which are
 * @c's: cpuhp_client_lease_release(@c, id) releases one and closes its
 * connection, cpuhp_client_close(@c) closes them all.  The table also has
 * the socket leases held on @c's own connection (@w NULL), so that a
 * release knows a lease that died with it, and the freezes of
 * cpuhp_client_freeze_begin() (@freeze), each on its connection.
 * Return: 0; -ENOMEM (nothing changed).
 */
int cpuhp__held_add(struct cpuhp_client *c, uint64_t id, struct cpuhp_client *w, bool freeze);
/*
 * Take lease (or freeze, @freeze) @id out of the table: true if it was
 * there, with *@w the connection it is held on, now the caller's (NULL:
 * @c's own).
 */
bool cpuhp__held_take(struct cpuhp_client *c, uint64_t id, bool freeze, struct cpuhp_client **w);
/* Leases in the table that died with their connection (@c's own one if @own_ended). */
unsigned cpuhp__held_lost(struct cpuhp_client *c, bool own_ended);
/* Close every connection in the table, and free it: cpuhp_client_close(). */
void cpuhp__held_close_all(struct cpuhp_client *c);

/* --- life.c: close against calls that wait -------------------------------------------- */

/*
 * A call that may block brackets itself with get (-ECANCELED once close
 * has begun) and put; a wait on a connection of its own registers it for
 * close to shut down.  Once close began, a call's failure is -ECANCELED.
 */
int cpuhp__client_get(struct cpuhp_client *c);
void cpuhp__client_put(struct cpuhp_client *c);
void cpuhp__client_wait_on(struct cpuhp_client *c, struct cpuhp_client *w);
void cpuhp__client_wait_off(struct cpuhp_client *c, struct cpuhp_client *w);
bool cpuhp__client_closing(struct cpuhp_client *c);
#define CPUHP__CANCELED_MSG "cpuhp_client_close() was called on this handle"

/* close: refuse new calls, end the waits, and return once none is left. */
void cpuhp__client_close_waiters(struct cpuhp_client *c);

/* --- fork.c: a handle a fork child inherited ------------------------------------------ */

/*
 * Forks of this process counted by a pthread_atfork child handler,
 * registered by the first connect.  A handle inherited through fork() is
 * refused by every call (cpuhp__client_forked).
 */
extern _Atomic unsigned cpuhp__client_forks;
/* Put @c on the list (its socket is closed in fork children) and note the fork count. */
void cpuhp__client_fork_track(struct cpuhp_client *c);
void cpuhp__client_fork_untrack(struct cpuhp_client *c);
bool cpuhp__client_forked(const struct cpuhp_client *c);
/* -ECHILD with a message, for every call on a handle a fork child inherited. */
int cpuhp__client_forked_error(struct cpuhp_client *c);

/* --- the request families -------------------------------------------------------------- */

/*
 * lease.c: -ECONNRESET with a message for lease @id, which died with @c's
 * connection (a message only if no call holds ->lock).
 */
int cpuhp__client_lease_lost(struct cpuhp_client *c, uint64_t id);

/* list.c: one row of a lease listing (or of what a forced hotplug revoked). */
void cpuhp__lease_info_from_wire(struct cpuhp_client_lease_info *o, const Cpuhp__LeaseInfo *li);

/* lease.c: @c's lease mode (cpuhp_client_set_lease_delay()) into @acq. */
void cpuhp__lease_mode(const struct cpuhp_client *c, Cpuhp__LeaseAcquire *acq);

/*
 * lease.c: begin a LeaseAcquire on a connection of its own (no fast path
 * tried), named @who/@why (NULL: the handle's identity).
 */
int cpuhp__client_lease_begin_own(struct cpuhp_client *c, unsigned timeout_ms, const char *who,
                                  const char *why, struct cpuhp_client_call **out);

/* fastpath.c: ask for the fast path (a call on @c); *@f stays NULL if there is none. */
int cpuhp__client_fast_get(struct cpuhp_client *c, struct cpuhp__fast **f);

/*
 * identity.c: may a call that names its holder start?  -ECHILD on a handle
 * a fork child inherited; -EINVAL (@c's message set, if no call runs on
 * it) if @who or @why is over CPUHP_CLIENT_IDENTITY_MAX bytes; else 0.
 */
int cpuhp__identity_check(struct cpuhp_client *c, const char *who, const char *why);
/*
 * identity.c: the names of a request made on a connection of its own for
 * @c: @who and @why, or where NULL the handle's (copied into @hwho, @hwhy,
 * which the daemon learns only from the request).
 */
void cpuhp__identity_names(struct cpuhp_client *c, const char **who, const char **why,
                           char (*hwho)[CPUHP_CLIENT_IDENTITY_MAX + 1],
                           char (*hwhy)[CPUHP_CLIENT_IDENTITY_MAX + 1]);

/* events.c: queue an event response (takes ownership); drops and counts when full. */
void cpuhp__client_queue_event(struct cpuhp_client *c, Cpuhp__Response *ev);
/* events.c: free the events still queued (close). */
void cpuhp__client_events_free(struct cpuhp_client *c);

/*
 * state.c: true while a state callback runs on this thread.  A lease that
 * would wait is refused there with -EDEADLK (cpuhp__client_deadlk).
 */
extern _Thread_local bool cpuhp__client_in_state_cb;
int cpuhp__client_deadlk(struct cpuhp_client *c);

/* state.c: cpuhp_client_list_states() under ->lock, for cpus.c's listing too. */
int cpuhp__client_list_states_locked(struct cpuhp_client *c, struct cpuhp_client_state_info **out,
                                     size_t *n);

/* --- state.c and hub.c: hotplug states ---------------------------------------------- */

struct cpuhp__hub;

struct cpuhp_client_state {
	struct cpuhp_client *conn; /* its own connection; NULL on a hub */
	uint64_t id;
	uint64_t reg_id; /* the RegisterState request: its StateCalls carry this id */
	cpuhp_client_state_fn startup, teardown;
	void *arg;
	bool threaded;
	/*
	 * While registering: the CPUs whose startup ran and succeeded here and
	 * were not torn down since.  A registration that fails on its
	 * connection (closed under it, the daemon gone) tears them down here:
	 * the daemon forgets the state with the connection and calls nothing.
	 */
	bool registering;
	struct cpuhp_cpuset started;
	pthread_t thread;
	bool thread_live;    /* @thread runs (or ended by itself) and is to be joined */
	int stop_pipe[2];    /* the thread leaves when [0] is readable */
	int err;             /* the thread's connection error, once it left for one */
	uint64_t skip_batch; /* a call of this batch failed: the rest are not run */
	/* CPUHP_CLIENT_STATE_SHARED: the hub it is on (hub.c), and its next there. */
	struct cpuhp__hub *hub;
	struct cpuhp_client_state *hub_next;
	bool prepare, multi;
	/*
	 * A multi state's instances, oldest first; changed only by add and
	 * remove, which pause the state's thread (or own the dispatching).
	 * @adding: the one being added, whose id comes with its reply, after
	 * its startups: their calls name an id not in the list yet.
	 */
	struct cpuhp_client_instance *insts, *adding;
};

struct cpuhp_client_instance {
	struct cpuhp_client_state *s;
	struct cpuhp_client_instance *next;
	uint64_t id;
	void *arg;
	char name[64];
	bool registering; /* being added: ->started says what to undo */
	struct cpuhp_cpuset started;
};

/*
 * cpuhp__state_call() - run @sc, a call of @s, on this thread and answer it
 * on @conn.  A call of a batch (proto/FRAMING.md, "Batches") whose earlier
 * call failed (*@skip_batch, @conn's) is not run: answered skipped.
 * Return: 0 or a connection -errno.
 */
int cpuhp__state_call(struct cpuhp_client_state *s, struct cpuhp_client *conn,
                      const Cpuhp__StateCall *sc, uint64_t *skip_batch);

/*
 * hub.c: CPUHP_CLIENT_STATE_SHARED.  cpuhp__hub_register() registers @s
 * (its callbacks and @rs set) on @c's hub, made with its connection and
 * thread by the first, and waits for the answer: the calls run on the
 * hub's thread.  close(@c) ends the wait (-ECANCELED): the hub then removes
 * the state, with its teardowns, if it registers.  Return: 0 with s->id
 * set; -EDEADLK on the hub's own thread; the daemon's error; a connection
 * -errno (@c's message set); on failure @s is freed (or, abandoned, the hub's).
 */
int cpuhp__hub_register(struct cpuhp_client *c, struct cpuhp_client_state *s,
                        const Cpuhp__RegisterState *rs);
/* Remove @s from its hub (its teardowns run on the hub's thread) and free it.  Return: as remove.
 */
int cpuhp__hub_remove(struct cpuhp_client_state *s, bool nocalls);
/* close(@c): wake its registrations waiting on its hub (not under life_lock). */
void cpuhp__hub_cancel(struct cpuhp_client *c);
/* close(@c), once no call is left: the handle lets go of its hub. */
void cpuhp__hub_release(struct cpuhp_client *c);

#endif /* CPUHP_CLIENT_INTERNAL_H */
