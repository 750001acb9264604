/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client handle and its transport, shared by conn.c (socket, frames,
 * request/reply matching, the event queue) and client.c (one function per
 * request).  Not installed.
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
	uint64_t next_id;
	uint64_t watch_id;  /* id of the accepted Watch request, 0 before */
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
	 * Leases a fast-path handle had to wait for: each on a connection of
	 * its own, so that no wait holds ->lock (fastpath.c says why).
	 */
	pthread_mutex_t fb_lock;
	struct cpuhp__fallback *fb; /* under fb_lock */
	unsigned nfb, capfb;

	struct sockaddr_un sa; /* the daemon's address, for those connections */

	unsigned forks; /* cpuhp__client_forks when opened: another value means a fork child */
	struct cpuhp_client *fork_next, *fork_prev; /* fork.c's list of open handles */
};

/*
 * fork.c: forks of this process counted by a pthread_atfork child handler,
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

/* Set c->message (printf format) and return @err, for `return cpuhp__client_error(...)`. */
int cpuhp__client_error(struct cpuhp_client *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The connection cannot be used again: remember @err for every later call. */
int cpuhp__client_kill(struct cpuhp_client *c, int err, const char *what);

/* An Error from the daemon: its code as -errno, its message (or a generic one) kept. */
int cpuhp__client_take_error(struct cpuhp_client *c, const Cpuhp__Error *e);

/*
 * cpuhp__client_call() - send @req (its id is assigned here) and wait for
 * the reply, queueing events that arrive first.
 * @expect: the body case of a successful reply.
 * @out:    the reply, to free with cpuhp__response__free_unpacked(); written
 *          only on success.
 * Return: 0; the daemon's Error as -errno (message set); -EPROTO for a reply
 * of another kind; a connection -errno.
 */
int cpuhp__client_call(struct cpuhp_client *c, Cpuhp__Request *req,
                       Cpuhp__Response__BodyCase expect, Cpuhp__Response **out);

/*
 * cpuhp__client_read() - the next Response, from the read-ahead or the socket.
 * @timeout_ms: -1 blocks; 0 returns -EAGAIN if no whole frame is there;
 *              else -ETIMEDOUT when it runs out.
 */
int cpuhp__client_read(struct cpuhp_client *c, int timeout_ms, Cpuhp__Response **out);

/* Queue an event response (takes ownership); drops and counts when full. */
void cpuhp__client_queue_event(struct cpuhp_client *c, Cpuhp__Response *ev);

/* Pop the oldest queued event; NULL if none. */
Cpuhp__Response *cpuhp__client_dequeue_event(struct cpuhp_client *c);

/* Connect to @sa and say hello: cpuhp_client_connect() once the path is known. */
int cpuhp__client_open(const struct sockaddr_un *sa, struct cpuhp_client **out);

/*
 * cpuhp__client_send_all() - write @buf whole to the socket, under
 * ->send_lock only (so a fast lease release may send without ->lock).
 * Return: 0 or the -errno of send().
 */
int cpuhp__client_send_all(struct cpuhp_client *c, const uint8_t *buf, size_t len);

/* Send Hello and check the version; called by connect. */
int cpuhp__client_hello(struct cpuhp_client *c);

/*
 * cpuhp__client_take_fds() - the @n descriptors that came with the reply
 * just read (FastPathGranted), now the caller's.
 * Return: 0; -EBADMSG if there were not exactly @n (all are closed then).
 */
int cpuhp__client_take_fds(struct cpuhp_client *c, int *fds, unsigned n);

#endif /* CPUHP_CLIENT_INTERNAL_H */
