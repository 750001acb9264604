/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libcpuhp-client: talk to cpuhpd, the daemon that owns CPU hotplug on this
 * machine, so that separate processes share one hotplug lock.
 *
 * A process that must not see the set of online CPUs change under it (it
 * sized per-CPU resources, or pins one worker per online CPU) holds a
 * reader lease; cpuhpd takes CPUs offline or online only while no lease is
 * held.  Leases die with their connection, so a crashed holder never blocks
 * hotplug.
 *
 * Link with `pkg-config --libs libcpuhp-client`.  Every call that can fail
 * returns 0 or a negative errno, and writes its out-parameters only on
 * success; cpuhp_client_last_message() then says what went wrong in words.
 *
 * Threads: every call takes the handle's mutex, so a handle may be shared,
 * but its calls run one at a time: a thread blocked in
 * cpuhp_client_lease_acquire() or cpuhp_client_next_event() holds up the
 * others on the same handle, and cpuhp_client_last_message() describes the
 * last failed call by any thread.  Give each thread that blocks its own
 * handle, or wait without the mutex: the asynchronous calls below, and
 * cpuhp_client_next_event(@c, 0, ...) with poll() on cpuhp_client_fd().
 * Calls are plain blocking socket I/O with no threads of their own; a
 * signal does not interrupt them (they resume after EINTR), the timeouts
 * bound them, and cpuhp_client_close() on another thread ends them with
 * -ECANCELED (whatever the call says it returns).  SIGPIPE is never raised.
 *
 * A daemon that goes away (stopped, killed, or closing the connection) ends
 * the handle's leases with the connection: the socket becomes readable, a
 * CPUHP_CLIENT_EVENT_LEASES_LOST notice says how many died, and releasing
 * any of them is -ECONNRESET.
 *
 * Fast leases: when cpuhpd offers it, a handle takes leases (from its first
 * one on) in memory it shares with the daemon: in nanoseconds, with no
 * round trip and without the handle's mutex, so any number of threads take
 * them on one handle at once.  While a hotplug waits or runs, an acquire
 * with a timeout waits for a socket lease as always, but on a connection of
 * its own (made for it, closed when that lease is released), so that it
 * never holds up the other threads of the handle, one of which may hold
 * the lease the hotplug waits for.  Nothing changes for the caller but the
 * speed and the ids (CPUHP_CLIENT_FAST_LEASE marks the fast ones).  Each
 * of the first 15 threads that use a handle (or $CPUHP_CLIENT_FAST_SLOTS -
 * 1, at most 63) gets a counter of its own; more threads share one with
 * atomic instructions.  $CPUHP_CLIENT_FAST_PATH=0 turns it off for handles
 * without a lease yet.
 *
 * fork(): a child must connect anew.  Every call on a handle it inherited
 * fails and changes nothing (-ECHILD; a lease release -ESRCH): the
 * connection and its leases are the parent's.  The child's copy of the
 * socket is closed at fork, so a lease ends with the process that took it
 * even while a child lives on; cpuhp_client_close() in the child frees the
 * handle's memory only, and cpuhp_client_fd() is -1 there.
 */
#ifndef CPUHP_CLIENT_H
#define CPUHP_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cpuhp/cpuset.h>
#include <cpuhp/export.h>
#include <cpuhp/socket.h> /* CPUHP_CLIENT_DEFAULT_SOCKET, CPUHP_CLIENT_SOCKET_ENV */

#ifdef __cplusplus
extern "C" {
#endif

/* "0": connect without fast leases.  A number: counters wanted (1 to 64, default 16). */
#define CPUHP_CLIENT_FAST_PATH_ENV  "CPUHP_CLIENT_FAST_PATH"
#define CPUHP_CLIENT_FAST_SLOTS_ENV "CPUHP_CLIENT_FAST_SLOTS"

/* Set in the ids of fast leases; socket lease ids never have it. */
#define CPUHP_CLIENT_FAST_LEASE (UINT64_C(1) << 63)

/* Size of the message buffers below, NUL included; longer texts are cut. */
#define CPUHP_CLIENT_MESSAGE_MAX 256

/* Events the client keeps while a call waits for its reply; see CPUHP_CLIENT_EVENT_LOST. */
#define CPUHP_CLIENT_EVENT_QUEUE_MAX 1024

/* A connection to cpuhpd.  Opaque. */
struct cpuhp_client;

enum cpuhp_client_writer_state {
	CPUHP_CLIENT_WRITER_IDLE = 0,
	CPUHP_CLIENT_WRITER_WAITING = 1, /* a hotplug waits for leases and readers to go */
	CPUHP_CLIENT_WRITER_RUNNING = 2, /* sysfs writes in progress */
};

struct cpuhp_client_status {
	struct cpuhp_cpuset online;
	struct cpuhp_cpuset offline;
	struct cpuhp_cpuset possible;
	struct cpuhp_cpuset present;
	unsigned leases_held; /* by every client */
	enum cpuhp_client_writer_state writer;
	unsigned pending_leases;   /* lease requests waiting behind a hotplug */
	unsigned pending_hotplugs; /* hotplug requests waiting, the running one included */
	unsigned connections;
	char daemon_version[64];
	/* Fast leases (counted in leases_held too): a snapshot of the shared counters. */
	unsigned fast_leases_held;
	unsigned fast_holders;     /* connections holding fast leases */
	unsigned fast_connections; /* connections with the fast path */
	/* How the daemon orders them: "membarrier-global-expedited", "membarrier-global", "fence",
	 * "off". */
	char fast_path[32];
	unsigned freezes; /* hotplug freezes held or pending (cpuhp_client_freeze()) */
	/* The online set changed behind cpuhpd while leases were held (LEASE_BYPASSED events). */
	uint64_t bypasses;
	uint64_t revocations; /* leases revoked at cpuhpd --max-lease-ms */
	/* smt/control as the kernel words it ("on", "off", "forceoff", "notsupported", ...);
	 * "" when the daemon's tree has no SMT control (or the daemon is older). */
	char smt_control[32];
	bool smt_active; /* smt/active: some core runs more than one hardware thread */
	/*
	 * Milliseconds left of cpuhpd's restart grace (cpuhpd --restart-grace-ms):
	 * the daemon before it ended without handing its clients over, and every
	 * hotplug waits until their holders could have noticed.  0: none.
	 */
	unsigned restart_grace_ms;
};

/* What happened to one CPU of a hotplug request. */
struct cpuhp_client_cpu_result {
	unsigned cpu;
	int error;    /* 0: the CPU is in the asked state; else a negative errno */
	bool changed; /* false if it already was in that state (or error) */
	char message[CPUHP_CLIENT_MESSAGE_MAX]; /* the daemon's words when error != 0 */
};

enum cpuhp_client_event_type {
	CPUHP_CLIENT_EVENT_HOTPLUG_STARTED = 1,
	CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED = 2,
	CPUHP_CLIENT_EVENT_ONLINE_CHANGED = 3,
	/*
	 * More than CPUHP_CLIENT_EVENT_QUEUE_MAX events arrived while a call
	 * waited for its reply; @lost were dropped here.  Re-read the state
	 * with cpuhp_client_status().
	 */
	CPUHP_CLIENT_EVENT_LOST = 4,
	/*
	 * Notices to a lease holder, watching or not (read by whatever call
	 * reads @c's socket next; poll cpuhp_client_fd() for them).
	 * LEASE_REVOKED: socket lease @lease_id was held @held_ms ms, past
	 * cpuhpd's --max-lease-ms (@max_lease_ms): it is no longer held, and
	 * its cpuhp_client_lease_release() fails with -ETIME.
	 */
	CPUHP_CLIENT_EVENT_LEASE_REVOKED = 5,
	/*
	 * The online set changed behind cpuhpd's back (sysfs written directly,
	 * chcpu, firmware) while @leases leases of @c were held: what they
	 * protected may be stale.  @online_cpus: the new online set.  The
	 * release of each lease held then, socket or fast, fails with -ESTALE
	 * (the lease is released all the same).
	 */
	CPUHP_CLIENT_EVENT_LEASE_BYPASSED = 6,
	/*
	 * A notice, watching or not: the connection to cpuhpd ended (the
	 * daemon was stopped, died, or closed it) while @leases leases of @c
	 * were held, socket and fast ones (and those held on connections of
	 * their own that had ended by then): they are no longer held, and
	 * CPUs may change.  cpuhp_client_fd() is readable when the daemon's
	 * end goes; this event comes after the events that arrived before it,
	 * then every call fails (-ECONNRESET, or the daemon's last word), and
	 * the release of each of those leases fails with -ECONNRESET.
	 * Not sent when the connection ends with no lease held.
	 */
	CPUHP_CLIENT_EVENT_LEASES_LOST = 7,
	/*
	 * The present CPUs changed behind cpuhpd (never its doing): @added
	 * were hot-added (a vCPU plugged in: it usually comes offline),
	 * @removed are gone (ejected).  @present_cpus: the present set now,
	 * @online_cpus: the online set now.  An ONLINE_CHANGED follows if the
	 * online set changed too.
	 */
	CPUHP_CLIENT_EVENT_PRESENT_CHANGED = 8,
	/*
	 * A hotplug became the next to run and waits (for leases, among
	 * others): to a watcher, and as a notice to a handle that holds a
	 * lease (its fast leases and those on connections of their own
	 * included), once per hotplug.  A holder that can let go now should:
	 * the hotplug runs as soon as nothing holds it.  @hotplug_id, @cpus
	 * (empty for SMT: @smt says what), @online, @timeout_ms (until it gives
	 * up), @force and @force_grace_ms (then every lease still held is
	 * revoked).  A delay lease is revoked its delay after this.
	 */
	CPUHP_CLIENT_EVENT_HOTPLUG_PENDING = 9,
	/*
	 * The hotplug of a HOTPLUG_PENDING ended without running: timed out,
	 * or withdrawn (its client left, cpuhpd stops): @error, @message.  To
	 * those told of it.  One that runs is followed by HOTPLUG_STARTED
	 * (to watchers) instead.
	 */
	CPUHP_CLIENT_EVENT_HOTPLUG_CANCELLED = 10,
};

/* Why cpuhpd revoked a lease (LEASE_REVOKED's @revoke_reason). */
enum cpuhp_client_revoke_reason {
	CPUHP_CLIENT_REVOKED_MAX_LEASE = 0, /* held past cpuhpd --max-lease-ms */
	CPUHP_CLIENT_REVOKED_DELAY = 1,     /* a delay lease: its delay after the notice is over */
	CPUHP_CLIENT_REVOKED_FORCED = 2,    /* a forced hotplug's grace is over */
};

struct cpuhp_client_event {
	enum cpuhp_client_event_type type;
	bool online;                     /* HOTPLUG_*: the state asked for */
	bool ok;                         /* HOTPLUG_FINISHED: every CPU reached it */
	bool external;                   /* ONLINE_CHANGED: not done by cpuhpd (chcpu, SMT...) */
	unsigned lost;                   /* LOST */
	struct cpuhp_cpuset cpus;        /* HOTPLUG_*: the CPUs asked for */
	struct cpuhp_cpuset failed;      /* HOTPLUG_FINISHED: those that did not get there */
	struct cpuhp_cpuset online_cpus; /* ONLINE_CHANGED, LEASE_BYPASSED, PRESENT_CHANGED: the
	                                    new online set */
	uint64_t lease_id;               /* LEASE_REVOKED (0: @fast) */
	uint64_t held_ms;                /* LEASE_REVOKED */
	unsigned max_lease_ms;           /* LEASE_REVOKED */
	unsigned leases; /* LEASE_BYPASSED, LEASES_LOST: leases of this handle held then */
	struct cpuhp_cpuset present_cpus; /* PRESENT_CHANGED: the present set now */
	struct cpuhp_cpuset added;        /* PRESENT_CHANGED: CPUs that became present */
	struct cpuhp_cpuset removed;      /* PRESENT_CHANGED: CPUs no longer present */
	/* HOTPLUG_PENDING, HOTPLUG_CANCELLED, LEASE_REVOKED (DELAY, FORCED): "hotplug #N" */
	uint64_t hotplug_id;
	char smt[16];        /* HOTPLUG_*: an SMT change's word ("off"...); "" for CPUs */
	unsigned timeout_ms; /* HOTPLUG_PENDING: until the hotplug gives up */
	bool force;          /* HOTPLUG_PENDING: leases still held after the grace are revoked */
	unsigned force_grace_ms;                /* HOTPLUG_PENDING */
	int error;                              /* HOTPLUG_CANCELLED: why, a negative errno */
	char message[CPUHP_CLIENT_MESSAGE_MAX]; /* HOTPLUG_CANCELLED: cpuhpd's words */
	enum cpuhp_client_revoke_reason revoke_reason; /* LEASE_REVOKED */
	bool fast;         /* LEASE_REVOKED: @count fast leases of this handle (no @lease_id) */
	unsigned count;    /* LEASE_REVOKED, @fast */
	unsigned delay_ms; /* LEASE_REVOKED, DELAY: the lease's delay */
};

/**
 * cpuhp_client_socket_path() - the socket a client connects to when it is
 * given no path: the one place that resolves it, for messages and for
 * cpuhp_client_connect(NULL, ...) alike.
 *
 * $CPUHP_SOCKET (CPUHP_CLIENT_SOCKET_ENV) if it is set and not empty;
 * otherwise (unset, or set to "") CPUHP_CLIENT_DEFAULT_SOCKET.  The
 * environment is read at each call, never cached.
 *
 * Context: any thread; reads the environment with getenv(), so it must not
 * race with setenv()/unsetenv()/putenv() in another thread.
 * Return: never NULL; the variable's value (valid until the environment
 * changes) or the static default.
 */
CPUHP_EXPORT const char *cpuhp_client_socket_path(void);

/**
 * cpuhp_client_connect() - connect to cpuhpd and agree on a protocol version.
 * @path: the daemon's socket; NULL: cpuhp_client_socket_path().
 * @out:  the new handle, for cpuhp_client_close().
 *
 * Context: blocks until the daemon answers the hello.
 * Return: 0; -ENOENT (no socket there), -ECONNREFUSED (nobody listening),
 * -EACCES (socket permissions) when the daemon is unreachable;
 * -EPERM if the process serving the socket is not root, not our own uid
 * and not $CPUHP_DAEMON_UID (CPUHP_CLIENT_DAEMON_UID_ENV; read from
 * SO_PEERCRED, so a socket renamed or swapped does not matter): another
 * user's daemon is never trusted; -EPROTONOSUPPORT if the daemon speaks
 * another protocol version; -EUSERS if it has too many connections;
 * -ENAMETOOLONG, -ENOMEM, other -errno.
 */
CPUHP_EXPORT int cpuhp_client_connect(const char *path, struct cpuhp_client **out);

/**
 * cpuhp_client_close() - close the connection and free @c (NULL is a no-op).
 *
 * Every lease @c holds ends with it; the daemon sees the connection close.
 * Context: may run while other threads wait in calls on @c (a lease
 * acquire, on @c's connection or on one of its own, set_online, status,
 * next_event, a state registration, any call waiting for @c's mutex): it
 * wakes them, they return -ECANCELED, and @c is freed once the last has
 * returned, so close blocks until then.  A call that starts after close
 * began, a fast lease acquire or release still running, and an
 * asynchronous call not yet freed use freed memory: end them first.
 */
CPUHP_EXPORT void cpuhp_client_close(struct cpuhp_client *c);

/**
 * cpuhp_client_lease_acquire() - take a reader lease: the set of online CPUs
 * will not change until it is released or @c is closed.
 * @timeout_ms: how long to wait while a hotplug is waiting or running;
 *              0: do not wait.
 * @lease_id:   the lease, for cpuhp_client_lease_release().
 *
 * Leases are not exclusive: any number of clients hold them at once.  With
 * the fast path (cpuhp_client_fast_path()) and no hotplug in the way, this
 * takes a few nanoseconds, does not take @c's mutex, and sets
 * CPUHP_CLIENT_FAST_LEASE in @lease_id; such a lease may be released by any
 * thread, and only once.
 * Context: blocks up to @timeout_ms (plus a round trip).
 * Return: 0; -EAGAIN (@timeout_ms 0 and a hotplug in the way, or a cpuhpd
 * restarting with this connection kept); -ETIMEDOUT; -EDQUOT (this
 * connection's lease limit, or 16 fast leases held through this thread's
 * counter); -ECHILD (a handle inherited through fork()); -ECANCELED
 * (cpuhp_client_close() on another thread); -ECONNRESET and other -errno
 * if the connection failed.
 */
CPUHP_EXPORT int cpuhp_client_lease_acquire(struct cpuhp_client *c, unsigned timeout_ms,
                                            uint64_t *lease_id);

/**
 * cpuhp_client_lease_release() - end a lease taken on @c.
 *
 * A fast lease ends without a round trip (one frame is sent, not awaited,
 * if a hotplug waits for it).  Its id is checked against @c's table of
 * live fast leases: a second release, an id never granted, or one granted
 * on another handle is -ESRCH and changes nothing, as for socket leases.
 * A lease that died with the connection (the daemon stopped, died or
 * closed it; see CPUHP_CLIENT_EVENT_LEASES_LOST) is -ECONNRESET, with a
 * message: it did not hold until now.  A fast lease's release finds that
 * out itself when the daemon is gone (one poll() of the socket, only when
 * the shared state is not "open"); while the connection lives on (a
 * restart that kept it) the release succeeds.
 * Context: blocks for a round trip (socket leases); a fast lease's never
 * blocks (it may write one frame).
 * Return: 0; -ESRCH if @c holds no such lease (also in a fork child, for
 * its parent's leases); -ECONNRESET if the lease died with the connection;
 * -ETIME (revoked, socket leases), -ESTALE (bypassed); another -errno if
 * the connection failed otherwise; -ECANCELED (cpuhp_client_close()).
 */
CPUHP_EXPORT int cpuhp_client_lease_release(struct cpuhp_client *c, uint64_t lease_id);

/**
 * cpuhp_client_set_lease_delay() - make @c's leases delay leases: when a
 * hotplug becomes the next to run, it tells the holders
 * (CPUHP_CLIENT_EVENT_HOTPLUG_PENDING) and waits for a delay lease at most
 * @delay_ms after that, then revokes it (CPUHP_CLIENT_EVENT_LEASE_REVOKED;
 * its release fails with -ETIME) and goes on.  A block lease, the default
 * (@delay_ms 0), holds it up to the hotplug's own timeout.  Like logind's
 * delay inhibitors; release on the notice to let the hotplug go at once.
 * @delay_ms:   at most cpuhpd --max-delay-ms; more is cut to that.
 * @granted_ms: NULL, or the delay the leases will get.
 *
 * For every lease @c takes from now on, fast and socket ones.
 * Context: no round trip (the limit came with the connection).
 * Return: 0; -EBUSY if @c took a lease already (set it first); -EOPNOTSUPP
 * from a cpuhpd too old for delay leases; -ECHILD.
 */
CPUHP_EXPORT int cpuhp_client_set_lease_delay(struct cpuhp_client *c, unsigned delay_ms,
                                              unsigned *granted_ms);

/* Longest who or why the daemon keeps (bytes, NUL not counted). */
#define CPUHP_CLIENT_IDENTITY_MAX 255

/**
 * cpuhp_client_set_identity() - say who holds @c's leases and why, for
 * `cpuhpctl leases` and for the message of a hotplug that times out behind
 * them ("pid 4242 (resize-pools) 'sizing worker pools', held 4.1 s").
 * @who: a short name (NULL or "": the daemon shows the command name).
 * @why: what the leases protect (NULL or "": nothing said).
 *
 * Names every lease of @c that was not acquired with a name of its own,
 * those held now included, fast leases too.  Without it the daemon still
 * knows each holder's pid, uid and command.
 * Context: blocks for a round trip.
 * Return: 0; -EINVAL if either is longer than CPUHP_CLIENT_IDENTITY_MAX
 * bytes; -ECHILD; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_set_identity(struct cpuhp_client *c, const char *who,
                                           const char *why);

/**
 * cpuhp_client_lease_acquire_as() - cpuhp_client_lease_acquire() for a
 * lease with a name of its own (see cpuhp_client_set_identity(); NULL:
 * the handle's).
 *
 * Such a lease is always a socket lease, held on a connection of its own
 * (opened here, closed by its release), since a fast lease has no place to
 * carry a name; it costs a connect and a round trip, and waiting for it
 * never holds @c's mutex.
 * Context: blocks up to @timeout_ms (plus a connect and a round trip).
 * Return: as cpuhp_client_lease_acquire(); -EINVAL for a name that is too long.
 */
CPUHP_EXPORT int cpuhp_client_lease_acquire_as(struct cpuhp_client *c, unsigned timeout_ms,
                                               const char *who, const char *why,
                                               uint64_t *lease_id);

/* One row of cpuhp_client_list_leases(): a socket lease, or one connection's fast leases. */
struct cpuhp_client_lease_info {
	uint64_t lease_id; /* socket leases; 0 for fast ones */
	bool fast;         /* @count fast leases of one connection, in shared memory */
	unsigned count;    /* 1 for a socket lease */
	unsigned pid, uid; /* from SO_PEERCRED, when the holder connected */
	char comm[17];     /* /proc/PID/comm then; "?" if unknown */
	char who[CPUHP_CLIENT_IDENTITY_MAX + 1];
	char why[CPUHP_CLIENT_IDENTITY_MAX + 1];
	uint64_t held_ms;    /* fast: since the daemon first saw them, so possibly less */
	unsigned connection; /* the connection's number in cpuhpd's log */
	unsigned delay_ms;   /* a delay lease's delay (cpuhp_client_set_lease_delay()); 0: block */
};

/* A hotplug request in cpuhpd's queue. */
struct cpuhp_client_hotplug_info {
	uint64_t seq; /* "hotplug #N" in cpuhpd's log */
	struct cpuhp_cpuset cpus;
	bool online;
	/* WAITING: first in line, for leases to go; RUNNING: writing sysfs; IDLE: queued behind. */
	enum cpuhp_client_writer_state state;
	unsigned pid, uid;
	char comm[17];
	uint64_t waited_ms; /* since it arrived */
	unsigned timeout_ms;
	/*
	 * Not empty: cpuhpd's own hotplug (@pid, @uid, @comm are cpuhpd's), and
	 * why: "plan" (cpuhpd.conf(5)'s plan applied), "new CPU" (online-new-cpus).
	 */
	char reason[16];
	bool force;              /* forced (cpuhp_client_set_online_forced()) */
	unsigned force_grace_ms; /* and its grace */
	char smt[16];            /* an SMT change's word; "" for CPUs */
};

/* A hotplug freeze (cpuhp_client_freeze()). */
struct cpuhp_client_freeze_info {
	uint64_t freeze_id;
	bool granted; /* false: waits for the hotplugs queued before it */
	unsigned pid, uid;
	char comm[17];
	char who[CPUHP_CLIENT_IDENTITY_MAX + 1];
	char why[CPUHP_CLIENT_IDENTITY_MAX + 1];
	uint64_t held_ms; /* since it was asked for */
	unsigned connection;
};

struct cpuhp_client_lease_list {
	size_t n_leases;
	struct cpuhp_client_lease_info *leases; /* oldest first */
	size_t n_hotplugs;
	struct cpuhp_client_hotplug_info *hotplugs; /* in queue order */
	size_t n_freezes;
	struct cpuhp_client_freeze_info *freezes; /* oldest first */
	unsigned restart_grace_ms;                /* as in struct cpuhp_client_status */
};

/**
 * cpuhp_client_list_leases() - every lease held (by any client) and every
 * hotplug request waiting or running, like `systemd-inhibit --list`.
 * @out: to free with cpuhp_client_lease_list_free().
 * Context: blocks for a round trip; any client may ask.
 * Return: 0; -EPROTO if the daemon sent a CPU list that does not parse;
 * -ENOMEM; -ECHILD; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_list_leases(struct cpuhp_client *c,
                                          struct cpuhp_client_lease_list **out);

/** cpuhp_client_lease_list_free() - free what list_leases gave (NULL: no-op). */
CPUHP_EXPORT void cpuhp_client_lease_list_free(struct cpuhp_client_lease_list *list);

/**
 * cpuhp_client_freeze() - freeze CPU hotplug, as the kernel's
 * cpu_hotplug_disable() does: until cpuhp_client_thaw() or @c's close,
 * every new hotplug request fails at once with -EBUSY, its message naming
 * the holder; leases stay grantable.  Around a benchmark or a
 * latency-critical window.
 * @who, @why: as cpuhp_client_lease_acquire_as() (NULL: the handle's).
 * @freeze_id: for cpuhp_client_thaw().
 *
 * Hotplugs queued before the freeze still run: this returns once none is
 * queued or running, so that from then on the online set changes only
 * behind cpuhpd's back.  Needs root or cpuhpd's admin group.  Any number of
 * freezes may be held, by any number of clients.
 * Context: blocks for a round trip, plus the hotplugs queued before it (each
 * bounded by its own timeout); holds @c's mutex meanwhile.
 * Return: 0; -EPERM; -EINVAL (a name too long); -ECHILD; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_freeze(struct cpuhp_client *c, const char *who, const char *why,
                                     uint64_t *freeze_id);

/**
 * cpuhp_client_thaw() - end a freeze taken on @c (by cpuhp_client_freeze()
 * or cpuhp_client_freeze_begin()).
 * Context: blocks for a round trip.
 * Return: 0; -ESRCH if @c holds no such freeze; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_thaw(struct cpuhp_client *c, uint64_t freeze_id);

/**
 * cpuhp_client_fast_path() - whether leases on @c are fast leases.
 *
 * A handle asks for the fast path at its first lease (or here), so that
 * handles that never take one cost the daemon nothing.
 * Context: blocks for a round trip the first time.
 * Return: 1: they are; 0: socket leases (the daemon does not offer the fast
 * path or refused it, or $CPUHP_CLIENT_FAST_PATH is 0); a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_fast_path(struct cpuhp_client *c);

/**
 * cpuhp_client_set_online_results() - bring CPUs online or take them offline,
 * and say what happened to each.
 * @cpus:       a range list, "2-3,5".
 * @online:     the state asked for.
 * @timeout_ms: how long to wait for leases and in-process readers to go;
 *              0: do not wait.
 * @results:    one per CPU named, in ascending order, to free with
 *              cpuhp_client_results_free().
 * @n_results:  how many.
 *
 * The daemon needs the caller to be root or in its admin group.  All the
 * CPUs change in one writer section: no lease is granted in between.
 *
 * Context: blocks up to @timeout_ms plus the sysfs writes (tens of ms per CPU).
 * Return: 0 when the request ran, whatever became of each CPU (see
 * @results); otherwise nothing changed: -EINVAL (bad list), -EPERM (not
 * allowed), -EAGAIN (@timeout_ms 0 and a lease held), -ETIMEDOUT (leases
 * still held after @timeout_ms), -ERANGE, -ENOMEM, or a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_set_online_results(struct cpuhp_client *c, const char *cpus,
                                                 bool online, unsigned timeout_ms,
                                                 struct cpuhp_client_cpu_result **results,
                                                 size_t *n_results);

/**
 * cpuhp_client_set_online_forced() - cpuhp_client_set_online_results() that
 * does not wait for the leases held beyond a grace: cpuhpd tells their
 * holders (CPUHP_CLIENT_EVENT_HOTPLUG_PENDING, with force), waits up to
 * @grace_ms for them to let go, then revokes every lease still held
 * (CPUHP_CLIENT_EVENT_LEASE_REVOKED to each holder; their releases fail
 * with -ETIME), logs them, and runs.  For a CPU that must go now (a
 * machine-check handler's failing CPU).  @timeout_ms still bounds the
 * whole wait, and the daemon's in-process readers are waited for as
 * always.  Root or cpuhpd's admin group, as any hotplug (-EPERM).
 * @revoked:   what was revoked, one row per socket lease and per
 *             connection's fast leases (held_ms: how long they had been
 *             held), for free(); @n_revoked rows.
 * Return: as cpuhp_client_set_online_results().
 */
CPUHP_EXPORT int cpuhp_client_set_online_forced(struct cpuhp_client *c, const char *cpus,
                                                bool online, unsigned timeout_ms, unsigned grace_ms,
                                                struct cpuhp_client_cpu_result **results,
                                                size_t *n_results,
                                                struct cpuhp_client_lease_info **revoked,
                                                size_t *n_revoked);

/** cpuhp_client_results_free() - free what set_online_results gave (NULL: no-op). */
CPUHP_EXPORT void cpuhp_client_results_free(struct cpuhp_client_cpu_result *results);

/* One hotplug state callback run for a CPU, as cpuhpd reports it. */
struct cpuhp_client_state_run {
	char state[64]; /* the state's name */
	char comm[16];  /* its owner's command */
	int pid;        /* its owner */
	unsigned cpu;
	bool teardown;                          /* else startup */
	bool rollback;                          /* undoing an earlier call of the same hotplug */
	bool timed_out;                         /* no answer within the state's deadline */
	bool client_gone;                       /* the owner died or closed: counted as done */
	int error;                              /* 0 or a negative errno */
	uint64_t micros;                        /* from the call to its end */
	char message[CPUHP_CLIENT_MESSAGE_MAX]; /* why it failed */
	char instance[64];                      /* the instance called ("": the state itself) */
	bool prepare;                           /* the state is in the PREPARE section */
};

/**
 * cpuhp_client_results_states() - the state callbacks run for
 * @results[@i], in order (a failed one is the first with error and not
 * rollback).  @results is an array from set_online_results or
 * cpuhp_client_call_set_online_results(), not a copy.
 * Return: the runs, owned by @results (valid until it is freed), and their
 * number in *@n; NULL with *@n 0 if none ran.
 */
CPUHP_EXPORT const struct cpuhp_client_state_run *
cpuhp_client_results_states(const struct cpuhp_client_cpu_result *results, size_t i, size_t *n);

/* A registered state, as cpuhp_client_list_states() gives it. */
struct cpuhp_client_state_info {
	uint64_t id;
	char name[64];
	int priority;
	unsigned deadline_ms;
	int pid;
	unsigned uid;
	char comm[16];
	struct cpuhp_cpuset cpus; /* the CPUs it was started on (none for a multi state) */
	bool prepare;             /* in the PREPARE section */
	bool multi;               /* multi-instance ... */
	unsigned instances;       /* ... with this many instances */
};

/**
 * cpuhp_client_list_states() - every state registered with the daemon, in
 * startup order (priority ascending).
 * @out: to free with free(); @n: how many.
 * Context: a round trip, under @c's mutex.
 * Return: 0; -ENOMEM; -EOPNOTSUPP (a cpuhpd without states); a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_list_states(struct cpuhp_client *c,
                                          struct cpuhp_client_state_info **out, size_t *n);

/* Where a CPU's topology in a cpuhp_client_cpu_info comes from. */
enum cpuhp_client_topology {
	CPUHP_CLIENT_TOPOLOGY_UNKNOWN = 0, /* not seen online since boot: core...siblings unset */
	CPUHP_CLIENT_TOPOLOGY_LIVE = 1,    /* read from sysfs since the CPU last came online */
	/* Read when it was last online (the kernel has no topology/ for an offline CPU). */
	CPUHP_CLIENT_TOPOLOGY_REMEMBERED = 2,
};

/* A possible CPU, as cpuhp_client_list_cpus() gives it. */
struct cpuhp_client_cpu_info {
	unsigned cpu;
	bool online, present;
	enum cpuhp_client_topology topology;
	int core;   /* topology/core_id, its core within its package (0 when UNKNOWN) */
	int socket; /* topology/physical_package_id (-1 where the platform has none) */
	int node;   /* its NUMA node; -1 if none, or UNKNOWN */
	/* topology/thread_siblings_list, the threads of its core online then ("" when UNKNOWN). */
	const char *siblings;
	/* The hotplug states started on it: pointers into the list's ->states. */
	size_t n_states;
	const struct cpuhp_client_state_info *const *states;
	/* The hotplug requests queued or running that name it, and the first of them. */
	unsigned hotplugs;
	uint64_t hotplug_seq; /* "hotplug #N" in cpuhpd's log */
	bool hotplug_online;
	enum cpuhp_client_writer_state hotplug_state; /* as in struct cpuhp_client_hotplug_info */
};

struct cpuhp_client_cpu_list {
	size_t n_cpus;
	struct cpuhp_client_cpu_info *cpus; /* each possible CPU, ascending */
	size_t n_states;
	struct cpuhp_client_state_info *states; /* as cpuhp_client_list_states() gives them */
};

/**
 * cpuhp_client_list_cpus() - each possible CPU as a row, like `lscpu -e`:
 * online, present, core, socket, NUMA node, SMT siblings, the hotplug
 * states started on it and the hotplug requests that name it.
 * @out: to free with cpuhp_client_cpu_list_free().
 *
 * The kernel has no topology for an offline CPU: cpuhpd gives the one it
 * read when the CPU was last online (CPUHP_CLIENT_TOPOLOGY_REMEMBERED),
 * across its restarts but not across a reboot.  A machine with many CPUs
 * takes a request per page of them (each page is answered at once; the
 * list is not one snapshot), then one for the states.
 * Context: blocks for those round trips, under @c's mutex.
 * Return: 0; -EOPNOTSUPP from an older cpuhpd; -EPROTO (a reply that does
 * not add up); -ENOMEM; -ECHILD; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_list_cpus(struct cpuhp_client *c, struct cpuhp_client_cpu_list **out);

/** cpuhp_client_cpu_list_free() - free what list_cpus gave (NULL: no-op). */
CPUHP_EXPORT void cpuhp_client_cpu_list_free(struct cpuhp_client_cpu_list *list);

/**
 * cpuhp_client_set_online() - cpuhp_client_set_online_results() for callers
 * that only want to know whether every CPU got there.
 *
 * Context: as cpuhp_client_set_online_results().
 * Return: 0 if every CPU named is now in the asked state; the errors of
 * set_online_results; else the error of the first CPU that failed
 * (cpuhp_client_last_message() says which and why).
 */
CPUHP_EXPORT int cpuhp_client_set_online(struct cpuhp_client *c, const char *cpus, bool online,
                                         unsigned timeout_ms);

/**
 * cpuhp_client_set_smt_results() - SMT control that honours leases: write
 * @control to smt/control in one writer section, as a hotplug (leases drain
 * first, new ones wait), and say what happened to each CPU.
 * @control:    "on", "off", or "forceoff" (then the kernel refuses every later
 *              change until reboot).
 * @timeout_ms: as for cpuhp_client_set_online_results().
 * @results:    one per sibling thread (each core's threads but its first) and
 *              per other CPU that changed, ascending; cpuhp_client_results_free().
 * @n_results:  how many.
 * @smt_control: NULL, or CPUHP_CLIENT_MESSAGE_MAX bytes for smt/control read back.
 *
 * Context: as cpuhp_client_set_online_results().
 * Return: 0 when it ran (see @results); otherwise nothing changed: -ENODEV
 * (no SMT on this machine: smt/control says notsupported or
 * notimplemented), -EPERM (forced off until reboot, or not allowed),
 * -ENOENT (no smt/control), -EINVAL (bad @control), -EAGAIN, -ETIMEDOUT,
 * -EOPNOTSUPP (an older cpuhpd), or a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_set_smt_results(struct cpuhp_client *c, const char *control,
                                              unsigned timeout_ms,
                                              struct cpuhp_client_cpu_result **results,
                                              size_t *n_results, char *smt_control);

/**
 * cpuhp_client_persist() - whether the hotplug requests of @c from now on
 * (cpuhp_client_set_online*(), cpuhp_client_set_smt_results(), and those
 * begun on connections of their own) change cpuhpd's plan too
 * (cpuhpd.conf(5)): offline takes the CPUs into the plan's offline-cpus,
 * online takes them out, SMT control sets its smt ("on" or "off").  cpuhpd
 * writes the plan's drop-in (a new file renamed into place, fsynced)
 * before it queues the hotplug, and applies the plan itself if the
 * hotplug then fails.  Without it, a request against the plan fails with
 * -EBUSY, the message naming the setting's file and line.
 * Context: no round trip.  Needs the rights of a hotplug (root or cpuhpd's
 * admin group); an older cpuhpd ignores the flag.  Return: 0; -ECHILD.
 */
CPUHP_EXPORT int cpuhp_client_persist(struct cpuhp_client *c, bool persist);

/* One setting of cpuhpd's plan (struct cpuhp_client_plan). */
struct cpuhp_client_plan_setting {
	const char *key;        /* "offline-cpus", "smt", "online-new-cpus" */
	const char *value;      /* in force; "" when not set */
	const char *source;     /* "FILE:LINE" or "command line"; "" when not set */
	const char *overridden; /* what it won over: "FILE:LINE (VALUE), ..."; "" */
};

/* A CPU the plan could not be applied to (cpuhpd tries it again once it or the plan changes). */
struct cpuhp_client_plan_problem {
	unsigned cpu;
	const char *message;
};

/* cpuhpd's plan and where the machine differs from it (cpuhp_client_plan()). */
struct cpuhp_client_plan {
	struct cpuhp_client_plan_setting settings[3]; /* offline-cpus, smt, online-new-cpus */
	const char *files;                            /* the files read, ", "-separated */
	const char *errors;             /* files left out ("FILE:LINE: why; ..."); "" none */
	const char *reload_error;       /* the last reload failed and kept the plan: why; "" */
	struct cpuhp_cpuset to_offline; /* kept offline by the plan, online now */
	struct cpuhp_cpuset to_online;  /* new CPUs (online-new-cpus) not online yet */
	struct cpuhp_cpuset absent;     /* in offline-cpus, not present (kept offline once added) */
	struct cpuhp_cpuset unknown;    /* in offline-cpus, not possible here: left out */
	const char *smt_control;        /* smt/control now; "" none */
	bool smt_differs;               /* not what the plan's smt says */
	size_t n_problems;
	const struct cpuhp_client_plan_problem *problems;
	const char *smt_problem; /* why the plan's smt cannot be applied; "" */
	uint64_t conflicts;      /* changes behind cpuhpd's back that contradicted it */
	const char *last_conflict;
	uint64_t last_conflict_ago_ms;
	unsigned retry_in_ms; /* > 0: cpuhpd applies it again then (backing off) */
	unsigned backoff_ms;  /* what the next conflict would wait */
	unsigned streak;      /* conflicts and retries in a row */
	uint64_t hotplugs;    /* hotplugs cpuhpd made in its own name for it */
	uint64_t hotplug_seq; /* the one queued or running now; 0: none */
};

/**
 * cpuhp_client_plan() - cpuhpd's plan (cpuhpd.conf(5)): each setting with
 * the file and line it came from, and where the machine differs.
 * @out: to free with cpuhp_client_plan_free() (the strings live in it).
 * Context: blocks for a round trip; any client may ask.
 * Return: 0; -EOPNOTSUPP from an older cpuhpd; -EPROTO; -ENOMEM; a
 * connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_plan(struct cpuhp_client *c, struct cpuhp_client_plan **out);

/** cpuhp_client_plan_free() - free what cpuhp_client_plan() gave (NULL: no-op). */
CPUHP_EXPORT void cpuhp_client_plan_free(struct cpuhp_client_plan *plan);

/**
 * cpuhp_client_set_smt_forced() - cpuhp_client_set_smt_results() forced as
 * cpuhp_client_set_online_forced() is: leases still held @grace_ms after
 * the notice are revoked (@revoked, @n_revoked: for free()).
 * Return: as cpuhp_client_set_smt_results().
 */
CPUHP_EXPORT int cpuhp_client_set_smt_forced(struct cpuhp_client *c, const char *control,
                                             unsigned timeout_ms, unsigned grace_ms,
                                             struct cpuhp_client_cpu_result **results,
                                             size_t *n_results, char *smt_control,
                                             struct cpuhp_client_lease_info **revoked,
                                             size_t *n_revoked);

/**
 * cpuhp_client_metrics() - the daemon's counters, histograms and gauges in
 * the Prometheus text exposition format (what cpuhpd --metrics-file writes).
 * @text: a malloc()ed NUL-terminated string for free().
 * Context: blocks for a round trip.
 * Return: 0; -EOPNOTSUPP from an older cpuhpd; -ENOMEM; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_metrics(struct cpuhp_client *c, char **text);

/**
 * cpuhp_client_status() - the daemon's view: CPU masks, leases, writer.
 * Context: blocks for a round trip; answered even while a hotplug runs.
 * Return: 0; -EPROTO if the daemon sent a mask that does not parse; a
 * connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_status(struct cpuhp_client *c, struct cpuhp_client_status *out);

/**
 * cpuhp_client_watch() - subscribe @c to events, read with
 * cpuhp_client_next_event().  Once per connection.
 *
 * @c stays usable for other calls; events that arrive while they wait are
 * kept for cpuhp_client_next_event().
 * Context: blocks for a round trip.
 * Return: 0; -EALREADY if @c already watches; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_watch(struct cpuhp_client *c);

/**
 * cpuhp_client_next_event() - the next event, oldest first.
 * @timeout_ms: -1: wait as long as it takes; 0: only what already arrived.
 * @ev:         written on success.
 *
 * Context: blocks up to @timeout_ms.
 * Without cpuhp_client_watch() only the notices to a lease holder come
 * (LEASE_REVOKED, LEASE_BYPASSED, LEASES_LOST): ask for them with
 * @timeout_ms 0.
 *
 * Return: 0; -EAGAIN (@timeout_ms 0, nothing yet); -ETIMEDOUT; -EINVAL if
 * cpuhp_client_watch() was not called and @timeout_ms is not 0 (and no
 * notice is queued); -ECONNRESET if the daemon went away (after the
 * LEASES_LOST notice, if leases were held), or its error (-ECANCELED:
 * shutting down); -ECANCELED also when cpuhp_client_close() woke the wait.
 */
CPUHP_EXPORT int cpuhp_client_next_event(struct cpuhp_client *c, int timeout_ms,
                                         struct cpuhp_client_event *ev);

/**
 * cpuhp_client_fd() - the socket, to poll() for POLLIN in an event loop.
 * It is readable also when the daemon's end goes (then the next event is
 * LEASES_LOST if leases were held).
 *
 * The client reads ahead and keeps events that came during other calls, so
 * readiness of the fd is not the whole story: drain with
 * cpuhp_client_next_event(@c, 0, ...) until -EAGAIN before each poll().
 * Do not read, write or close the fd.
 * Return: the file descriptor.
 */
CPUHP_EXPORT int cpuhp_client_fd(struct cpuhp_client *c);

/**
 * cpuhp_client_last_message() - why the last call on @c failed, in words:
 * the daemon's message ("leases still held after 500 ms ..."), or the
 * client's own for local failures.  "" after a call that succeeded.
 *
 * Return: a string owned by @c, valid until the next call on @c.
 */
CPUHP_EXPORT const char *cpuhp_client_last_message(struct cpuhp_client *c);

/*
 * Asynchronous calls, for an event loop and for a caller that must be able
 * to give up a wait (a signal, a cancelled task).  A begin sends its request
 * and returns without waiting for the daemon; poll cpuhp_client_call_fd()
 * for POLLIN and call cpuhp_client_call_done() until it stops saying
 * -EINPROGRESS; then read the result.  The daemon's timeouts bound the
 * wait, as for the blocking calls.
 *
 * Each request that may wait goes on a connection of its own, opened by
 * its begin (connect() and the hello sent, the reply not awaited) and
 * closed by cpuhp_client_call_free(), so that no wait holds @c's mutex and
 * giving up is closing: cpuhp_client_call_free() before the call is done
 * drops a lease acquire waiting behind a hotplug (no lease is ever granted
 * for it) and cancels a hotplug that is not running yet (one that runs
 * finishes; its result is lost).  A lease that a call got is @c's (release
 * it with cpuhp_client_lease_release(@c, ...)); it is held on the call's
 * connection, which ends with the lease or with @c.
 *
 * A call is used by one thread at a time; calls of one handle run on any
 * threads at once.  Free every call of @c before cpuhp_client_close(@c).
 * In a fork child, a call begun in the parent fails with -ECHILD.
 *
 * Names pair: cpuhp_client_X_begin() starts the request of the blocking
 * cpuhp_client_X(), and once it is done cpuhp_client_call_X() gives what
 * cpuhp_client_X() would (cpuhp_client_call_lease_acquire() also completes
 * cpuhp_client_lease_acquire_as_begin(), whose lease is a lease like any).
 */
struct cpuhp_client_call;

/**
 * cpuhp_client_lease_acquire_begin() - start taking a reader lease.
 * @timeout_ms: as for cpuhp_client_lease_acquire().
 * @out:        the call, for cpuhp_client_call_done().
 *
 * With the fast path and no hotplug in the way the lease is taken here and
 * @out is done at once (cpuhp_client_call_fd() is -1); the first lease of
 * a handle asks the daemon for the fast path (a round trip under @c's
 * mutex).  Otherwise the request goes on a connection of its own; so does
 * every lease of a handle without the fast path.
 * Context: does not wait for a lease; connect() may block while the
 * daemon's listen backlog is full.
 * Return: 0; -EAGAIN (@timeout_ms 0 and a hotplug in the way, fast path);
 * -EDQUOT; -ECHILD; -ENOMEM; a connection -errno.  The message is @c's.
 */
CPUHP_EXPORT int cpuhp_client_lease_acquire_begin(struct cpuhp_client *c, unsigned timeout_ms,
                                                  struct cpuhp_client_call **out);

/**
 * cpuhp_client_lease_acquire_as_begin() - start a cpuhp_client_lease_acquire_as():
 * always on a connection of its own, as that call's lease is.
 * Context: as cpuhp_client_lease_acquire_begin().
 * Return: 0; -EINVAL (a name over CPUHP_CLIENT_IDENTITY_MAX bytes); -ECHILD;
 * -ENOMEM; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_lease_acquire_as_begin(struct cpuhp_client *c, unsigned timeout_ms,
                                                     const char *who, const char *why,
                                                     struct cpuhp_client_call **out);

/**
 * cpuhp_client_set_online_results_begin() - start a
 * cpuhp_client_set_online_results() request, on a connection of its own.
 * Context: as cpuhp_client_lease_acquire_begin().
 * Return: 0; -ECHILD; -ENOMEM; a connection -errno.  A bad @cpus list is
 * the daemon's answer: cpuhp_client_call_done() says -EINVAL.
 */
CPUHP_EXPORT int cpuhp_client_set_online_results_begin(struct cpuhp_client *c, const char *cpus,
                                                       bool online, unsigned timeout_ms,
                                                       struct cpuhp_client_call **out);

/**
 * cpuhp_client_set_online_forced_begin() - start a
 * cpuhp_client_set_online_forced() request, on a connection of its own;
 * once done, cpuhp_client_call_set_online_results() gives its results and
 * cpuhp_client_call_revoked() what it revoked.
 * Context, Return: as cpuhp_client_set_online_results_begin().
 */
CPUHP_EXPORT int cpuhp_client_set_online_forced_begin(struct cpuhp_client *c, const char *cpus,
                                                      bool online, unsigned timeout_ms,
                                                      unsigned grace_ms,
                                                      struct cpuhp_client_call **out);

/** cpuhp_client_status_begin() - start a cpuhp_client_status() request, on a connection of its
 * own.
 */
CPUHP_EXPORT int cpuhp_client_status_begin(struct cpuhp_client *c, struct cpuhp_client_call **out);

/**
 * cpuhp_client_freeze_begin() - start a cpuhp_client_freeze(), on a
 * connection of its own: the freeze is held there, as @c's (thaw it with
 * cpuhp_client_thaw(@c, ...), which closes that connection; it ends with
 * @c too).  cpuhp_client_call_free() before it is done gives it up.
 * @who, @why: as for cpuhp_client_freeze() (NULL: the handle's).
 * Context: as cpuhp_client_lease_acquire_begin().
 * Return: 0; -EINVAL (a name over CPUHP_CLIENT_IDENTITY_MAX bytes); -ECHILD;
 * -ENOMEM; a connection -errno.  -EPERM, and -EOPNOTSUPP from an older cpuhpd
 * ("this cpuhpd is too old to freeze hotplug", cpuhp_client_call_message()),
 * are cpuhp_client_call_done()'s.
 */
CPUHP_EXPORT int cpuhp_client_freeze_begin(struct cpuhp_client *c, const char *who, const char *why,
                                           struct cpuhp_client_call **out);

/**
 * cpuhp_client_list_leases_begin() - start a cpuhp_client_list_leases()
 * request, on a connection of its own.
 * Context: as cpuhp_client_lease_acquire_begin().
 * Return: 0; -ECHILD; -ENOMEM; a connection -errno.  cpuhp_client_call_done()
 * says -EOPNOTSUPP for an older cpuhpd, with cpuhp_client_list_leases()'s message.
 */
CPUHP_EXPORT int cpuhp_client_list_leases_begin(struct cpuhp_client *c,
                                                struct cpuhp_client_call **out);

/**
 * cpuhp_client_call_fd() - the socket to poll() for POLLIN while
 * cpuhp_client_call_done() says -EINPROGRESS.  Do not read, write or close it.
 * Return: the file descriptor; -1 once done (nothing more to wait for).
 */
CPUHP_EXPORT int cpuhp_client_call_fd(const struct cpuhp_client_call *call);

/**
 * cpuhp_client_call_done() - read what arrived for @call, without waiting.
 * Context: never blocks.
 * Return: -EINPROGRESS while the answer is still to come; then, every
 * time, 0 (read the result) or the call's error, as the blocking call
 * would return it (cpuhp_client_call_message() says why).
 */
CPUHP_EXPORT int cpuhp_client_call_done(struct cpuhp_client_call *call);

/**
 * cpuhp_client_call_lease_acquire() - the lease of a done
 * cpuhp_client_lease_acquire_begin() or _acquire_as_begin() call.
 * Return: 0; -EINVAL (not one).
 */
CPUHP_EXPORT int cpuhp_client_call_lease_acquire(const struct cpuhp_client_call *call,
                                                 uint64_t *lease_id);

/**
 * cpuhp_client_call_set_online_results() - what a done
 * cpuhp_client_set_online_results_begin() call did, as
 * cpuhp_client_set_online_results() gives it (free with
 * cpuhp_client_results_free()).  Return: 0; -EINVAL (not one); -ENOMEM.
 */
CPUHP_EXPORT int cpuhp_client_call_set_online_results(struct cpuhp_client_call *call,
                                                      struct cpuhp_client_cpu_result **results,
                                                      size_t *n_results);

/**
 * cpuhp_client_call_revoked() - what a done set_online call revoked (empty
 * unless forced), as cpuhp_client_set_online_forced() gives it (for free()).
 * Return: 0; -EINVAL (not one); -ENOMEM.
 */
CPUHP_EXPORT int cpuhp_client_call_revoked(struct cpuhp_client_call *call,
                                           struct cpuhp_client_lease_info **revoked,
                                           size_t *n_revoked);

/**
 * cpuhp_client_call_status() - the answer of a done cpuhp_client_status_begin()
 * call.  Return: 0; -EINVAL (not one); -EPROTO; -ENOMEM.
 */
CPUHP_EXPORT int cpuhp_client_call_status(struct cpuhp_client_call *call,
                                          struct cpuhp_client_status *out);

/**
 * cpuhp_client_call_freeze() - the freeze of a done cpuhp_client_freeze_begin()
 * call.  Return: 0; -EINVAL (not one).
 */
CPUHP_EXPORT int cpuhp_client_call_freeze(const struct cpuhp_client_call *call,
                                          uint64_t *freeze_id);

/**
 * cpuhp_client_call_list_leases() - the answer of a done
 * cpuhp_client_list_leases_begin() call, as cpuhp_client_list_leases()
 * gives it (free with cpuhp_client_lease_list_free()).
 * Return: 0; -EINVAL (not one); -EPROTO (a CPU list that does not parse); -ENOMEM.
 */
CPUHP_EXPORT int cpuhp_client_call_list_leases(struct cpuhp_client_call *call,
                                               struct cpuhp_client_lease_list **out);

/**
 * cpuhp_client_call_message() - why @call failed, in words ("" if it did not).
 * Return: a string owned by @call, valid until its next use.
 */
CPUHP_EXPORT const char *cpuhp_client_call_message(const struct cpuhp_client_call *call);

/**
 * cpuhp_client_call_free() - end @call (NULL is a no-op): if it is not done,
 * give up its request (see above); close its connection unless its lease
 * is held on it.
 */
CPUHP_EXPORT void cpuhp_client_call_free(struct cpuhp_client_call *call);

/*
 * Hotplug states: the kernel's cpuhp_setup_state() for a process
 * (daemon/cpuhpd/README.md, "Hotplug states", has the rules).  A state has
 * a name unique in the daemon, a priority and a deadline per call; its
 * teardown runs before a CPU goes offline (highest priority first), its
 * startup after one came online (lowest first).  A callback returns 0 or a
 * negative errno, and may say why in @call->message; a failure or a missed
 * deadline rolls the hotplug back.
 *
 * Each state has a connection of its own, opened by register and closed by
 * remove; the state ends with it (also when the process dies).  Those
 * registered with CPUHP_CLIENT_STATE_SHARED share one connection and one
 * thread instead (per handle, up to 64 states): cpuhpd then sends a CPU's
 * calls of all of them in one write, about one round trip for all; a
 * connection error ends them all.  They outlive the handle as the others
 * do (cpuhp_client_close() leaves them registered); the last one removed
 * closes the shared connection.
 *
 * Threads (who calls what):
 * - cpuhp_client_state_register() runs the startups for the CPUs online at
 *   registration (unless CPUHP_CLIENT_STATE_NOCALLS) on the calling thread,
 *   before it returns; cpuhp_client_state_remove() runs the teardowns on
 *   the calling thread likewise.
 * - CPUHP_CLIENT_STATE_SHARED: every callback runs on the shared thread,
 *   the startups of a registration and the teardowns of a removal too
 *   (register and remove wait for them there); so a callback must not
 *   register or remove a shared state (-EDEADLK).  cpuhp_client_close()
 *   during a registration returns it -ECANCELED at once; if the daemon
 *   registers the state anyway, the library removes it (teardowns run).
 * - In between, with CPUHP_CLIENT_STATE_THREAD, a thread the library
 *   starts (one per state) runs every callback; without it the application
 *   polls cpuhp_client_state_fd() for POLLIN and calls
 *   cpuhp_client_state_dispatch(), which runs the callbacks on its caller's
 *   thread.  Either way, callbacks of one state run one at a time.
 * - The library reads ahead: a call may come in the same read as the
 *   registration's reply.  Such calls run on the registering thread before
 *   cpuhp_client_state_register() returns (or on the state's thread first,
 *   with CPUHP_CLIENT_STATE_THREAD), and cpuhp_client_state_dispatch()
 *   runs every whole call it read; so whenever either returns, nothing
 *   waits in the library, and POLLIN on the socket is all there is to wait
 *   for.  An application must not read the socket itself.
 * - A registration that fails on its connection (cpuhp_client_close() on
 *   another thread, the daemon gone) calls teardown, as a rollback, for the
 *   CPUs whose startup succeeded in it, last CPU first, on the registering
 *   thread: the daemon forgets the state with its connection and calls
 *   nothing.  One the daemon refuses was rolled back by its own calls.
 * - A callback must not take a lease (the hotplug that called it holds the
 *   writer side and waits for it): cpuhp_client_lease_acquire() and
 *   cpuhp_client_lease_acquire_begin() on a callback's thread, when a
 *   hotplug is in the way, fail at once with -EDEADLK; cpuhpd answers a
 *   lease asked by a process inside a callback the same way.
 */
struct cpuhp_client_state;

/* cpuhp_client_state_register()'s flags. */
#define CPUHP_CLIENT_STATE_NOCALLS (1u << 0) /* no startup for the CPUs online now */
#define CPUHP_CLIENT_STATE_THREAD  (1u << 1) /* callbacks on a thread of the library's */
#define CPUHP_CLIENT_STATE_SHARED  (1u << 2) /* one connection and thread for all such states */
/*
 * The PREPARE section: startup before the CPU runs anything (before the
 * write of cpuN/online), teardown after it is dead (after the write); such
 * a teardown cannot fail: its error is logged, nothing is rolled back.
 * Without it, the ONLINE section: startup after the write, teardown before.
 */
#define CPUHP_CLIENT_STATE_PREPARE (1u << 3)
/*
 * Multi-instance: the callbacks run per instance
 * (cpuhp_client_state_add_instance()), never for the state itself.  Not
 * with CPUHP_CLIENT_STATE_SHARED.
 */
#define CPUHP_CLIENT_STATE_MULTI (1u << 4)

/* What a callback is asked to do. */
struct cpuhp_client_state_call {
	unsigned cpu;
	bool teardown; /* before @cpu goes offline; else startup, after it came online */
	bool external; /* after the fact: @cpu changed behind cpuhpd's back (chcpu, echo) */
	bool rollback; /* undoing this state's earlier call of the same hotplug */
	char message[CPUHP_CLIENT_MESSAGE_MAX]; /* the callback's words on failure ("" before) */
	/* A multi state's call: the instance's arg (cpuhp_client_state_add_instance()); else NULL.
	 */
	void *instance;
	const char *instance_name; /* "" but for an instance's call */
	bool prepare;              /* the state is in the PREPARE section */
};

/* A callback: 0, or a negative errno (the hotplug rolls back). */
typedef int (*cpuhp_client_state_fn)(struct cpuhp_client_state_call *call, void *arg);

/**
 * cpuhp_client_state_register() - register a state, on a connection of its own.
 * @c:           the handle whose daemon (socket path) is used; not otherwise touched.
 * @name:        unique in the daemon; 1-63 printable characters, no spaces.
 * @priority:    teardown highest first, startup lowest first.
 * @deadline_ms: per call; 0 is 5000.
 * @flags:       CPUHP_CLIENT_STATE_NOCALLS, CPUHP_CLIENT_STATE_THREAD or
 *               CPUHP_CLIENT_STATE_SHARED.
 * @startup, @teardown: either may be NULL (that call then succeeds).
 * Context: blocks while a hotplug is queued or running (registration is a
 * reader, as in the kernel), then runs the startups on this thread.
 * Return: 0; -EEXIST (the name is taken); -EINVAL; a startup's error (the
 * ones done were torn down again); -ENOMEM; a connection -errno.  The
 * message is @c's.
 */
CPUHP_EXPORT int cpuhp_client_state_register(struct cpuhp_client *c, const char *name, int priority,
                                             unsigned deadline_ms, unsigned flags,
                                             cpuhp_client_state_fn startup,
                                             cpuhp_client_state_fn teardown, void *arg,
                                             struct cpuhp_client_state **out);

/**
 * cpuhp_client_state_remove() - remove @s and free it (NULL is a no-op):
 * unless @nocalls, teardown is called for every CPU it was started on, on
 * this thread.  Not concurrently with cpuhp_client_state_dispatch() on @s.
 * Context: blocks like register; stops and joins the state's thread.
 * Return: 0; a connection -errno (the state is gone with its connection
 * anyway).  @s is freed either way.
 */
CPUHP_EXPORT int cpuhp_client_state_remove(struct cpuhp_client_state *s, bool nocalls);

/**
 * cpuhp_client_state_fd() - the socket to poll for POLLIN; -1 with
 * CPUHP_CLIENT_STATE_THREAD or CPUHP_CLIENT_STATE_SHARED.
 */
CPUHP_EXPORT int cpuhp_client_state_fd(const struct cpuhp_client_state *s);

/**
 * cpuhp_client_state_dispatch() - run the calls that arrived, without
 * waiting for more: those read already, then one read of the socket (call
 * it when poll() says POLLIN; it is harmless otherwise).
 * Context: the callbacks run on this thread.  Never blocks but in them.
 * Return: the number of calls run; a connection -errno (the daemon is
 * gone: the state with it); -EINVAL with CPUHP_CLIENT_STATE_THREAD.
 */
CPUHP_EXPORT int cpuhp_client_state_dispatch(struct cpuhp_client_state *s);

/** cpuhp_client_state_id() - the daemon's id of @s, as `cpuhpctl states` lists it. */
CPUHP_EXPORT uint64_t cpuhp_client_state_id(const struct cpuhp_client_state *s);

/*
 * Instances of a multi state (the kernel's cpuhp_state_add_instance()): one
 * per pool, queue or cache, all over the state's one connection.  A hotplug
 * calls each in turn where it would call the state (startup oldest first,
 * teardown newest first); call->instance is the instance's @arg.
 */
struct cpuhp_client_instance;

/**
 * cpuhp_client_state_add_instance() - add an instance named @name to @s
 * (registered with CPUHP_CLIENT_STATE_MULTI).
 * @name:  unique in @s; 1-63 printable characters, no spaces.
 * @arg:   what the instance's calls find in call->instance.
 * @flags: CPUHP_CLIENT_STATE_NOCALLS: no startup now.
 * Context: blocks while a hotplug is queued or running (an add is a reader,
 * as a registration is), then runs the instance's startup for every CPU the
 * state is up on on this thread (a CPUHP_CLIENT_STATE_THREAD state's thread
 * is paused meanwhile).  Not concurrently with cpuhp_client_state_dispatch()
 * on @s, nor with another add or remove on @s.
 * Return: 0; -EINVAL (not a multi state, a bad name or flags); -EEXIST (the
 * name is taken in @s); -EDQUOT (256 instances a state, 4096 in cpuhpd);
 * -EOPNOTSUPP (a CPUHP_CLIENT_STATE_SHARED state); a startup's error (those
 * done were torn down again); -ENOMEM; a connection -errno.
 */
CPUHP_EXPORT int cpuhp_client_state_add_instance(struct cpuhp_client_state *s, const char *name,
                                                 void *arg, unsigned flags,
                                                 struct cpuhp_client_instance **out);

/**
 * cpuhp_client_instance_remove() - remove @inst and free it (NULL is a
 * no-op): unless @nocalls, its teardown runs for every CPU it is up on, on
 * this thread.  Removing the state removes its instances (their teardowns
 * too): do not use them after cpuhp_client_state_remove().
 * Context: as cpuhp_client_state_add_instance().
 * Return: 0; a connection -errno (the instance is freed either way).
 */
CPUHP_EXPORT int cpuhp_client_instance_remove(struct cpuhp_client_instance *inst, bool nocalls);

/** cpuhp_client_instance_id() - the daemon's id of @inst. */
CPUHP_EXPORT uint64_t cpuhp_client_instance_id(const struct cpuhp_client_instance *inst);

#ifdef __cplusplus
}
#endif

#endif /* CPUHP_CLIENT_H */
