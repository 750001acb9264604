/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Admission and client memory: who may connect, how much the daemon
 * buffers for whom, and how long a request may take to arrive.
 *
 *  - Connections: --max-connections for everyone; the last
 *    --reserved-connections of them only for root and --admin-group
 *    members; at most --max-connections-per-uid for each uid but 0.
 *  - Buffered bytes, in both directions (replies and events the socket has
 *    not taken, with their write requests; the reassembly buffer of a
 *    request split across reads): at most --max-buffered-bytes-per-uid for
 *    each uid but 0, and --max-buffered-bytes in all, of which the last
 *    eighth only root and admins may use.  A connection that would go over
 *    is closed (not paused: events are made without reads, so a paused
 *    watcher would keep growing).
 *  - A request whose first byte came --client-timeout-ms ago and that is
 *    still not complete closes its connection.  An idle connection (no
 *    partial frame) is never closed: leases are held on idle connections.
 *  - When what is buffered fell far from its high mark, malloc_trim() hands
 *    the freed memory back; so too, looked at a second after clients began
 *    to leave connections, leases or freezes, when the heap in use did.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_ADMIT_H
#define CPUHPD_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "base/list.h"

struct cpuhpd;
struct cpuhpd_conn;

/* Defaults of the options (options.c, --help, the README and the man page say them). */
#define CPUHPD_ADMIT_MAX_CONNECTIONS         4096
#define CPUHPD_ADMIT_RESERVED_CONNECTIONS    128 /* at most an eighth of --max-connections */
#define CPUHPD_ADMIT_MAX_CONNECTIONS_PER_UID 64
#define CPUHPD_ADMIT_MAX_BUFFERED            (64u << 20)
#define CPUHPD_ADMIT_MAX_BUFFERED_PER_UID    (4u << 20)
#define CPUHPD_ADMIT_CLIENT_TIMEOUT_MS       10000

/* One uid with connections; freed when the last of their memory is. */
struct cpuhpd_admit_uid {
	struct cpuhpd_list node; /* in a bucket of cpuhpd_admit.uids */
	uid_t uid;
	unsigned nconns; /* open, as the limits count them */
	unsigned nrefs;  /* not yet freed: closing ones may still hold bytes */
	size_t buffered;
};

#define CPUHPD_ADMIT_BUCKETS 256

struct cpuhpd_admit {
	struct cpuhpd_list uids[CPUHPD_ADMIT_BUCKETS];
	size_t buffered;       /* every client's, in bytes */
	size_t high;           /* most buffered since the last trim */
	size_t freed;          /* freed since the last trim */
	unsigned ntrims;       /* malloc_trim() calls, for the log */
	size_t heap_high;      /* most heap in use seen since the last trim (mallinfo2) */
	uv_timer_t heap_timer; /* looks at the heap after clients left something */
	/*
	 * Connections with an unfinished frame, in the order their frames began:
	 * a frame that begins is appended with the loop's time, so the list stays
	 * sorted and the timer needs only its head.
	 */
	struct cpuhpd_list partial;
	uv_timer_t timer;
	bool timer_open;
	/* conn.c: close @c, whose request came too slowly, telling it @why (ETIMEDOUT). */
	void (*timed_out)(struct cpuhpd_conn *c, const char *why);
	/*
	 * The feature table: the hotplug states of @uid's live connections, so
	 * that a refusal at --max-connections-per-uid can say why (NULL: none).
	 */
	unsigned (*states_of_uid)(const struct cpuhpd *d, uid_t uid);
};

/* Per-connection state (in struct cpuhpd_conn). */
struct cpuhpd_admit_conn {
	struct cpuhpd_admit_uid *uid;    /* NULL until admitted */
	struct cpuhpd_list partial_node; /* in cpuhpd_admit.partial while a frame is unfinished */
	uint64_t partial_since;          /* loop time of that frame's first byte */
	size_t inbuf;                    /* reassembly bytes charged */
};

/** cpuhpd_admit_init() - empty tables and the timeout timer.  Return: 0 or -errno. */
int cpuhpd_admit_init(struct cpuhpd *d);

/** cpuhpd_admit_close() - close the timer (the stop). */
void cpuhpd_admit_close(struct cpuhpd *d);

/**
 * cpuhpd_admit_conn() - may @c (its peer known) come in?  Counts it if so.
 * @why: on refusal, the reason for the client and the log (names the option).
 * Return: 0; -EUSERS over a connection limit; -ENOMEM.
 */
int cpuhpd_admit_conn(struct cpuhpd_conn *c, char *why, size_t whylen);

/** cpuhpd_admit_conn_gone() - @c no longer counts as a connection (its bytes still do). */
void cpuhpd_admit_conn_gone(struct cpuhpd_conn *c);

/** cpuhpd_admit_conn_freed() - @c's memory is going: the last of its bytes are uncharged. */
void cpuhpd_admit_conn_freed(struct cpuhpd_conn *c);

/**
 * cpuhpd_admit_charge() - account @bytes more buffered for @c.
 * Return: true; false (nothing charged, @why says which bound) when it
 * would take @c's uid or everyone over a bound.  The caller closes @c.
 */
bool cpuhpd_admit_charge(struct cpuhpd_conn *c, size_t bytes, char *why, size_t whylen);

/**
 * cpuhpd_admit_dropped() - a client's connection, lease or freeze ended:
 * HEAP_LOOK_MS after the first of a wave, if the heap in use fell by
 * TRIM_MIN and to half or less of its high mark, memory goes back to the
 * system as after a drain of buffers.
 */
void cpuhpd_admit_dropped(struct cpuhpd *d);

/** cpuhpd_admit_uncharge() - @bytes of @c were freed; may hand memory back to the system. */
void cpuhpd_admit_uncharge(struct cpuhpd_conn *c, size_t bytes);

/**
 * cpuhpd_admit_read_done() - after a read of @c was consumed.
 * @began: a frame began in this read (its first byte, or it followed one
 *         that completed in this read)
 * @idle: no frame is unfinished now
 * Starts, keeps or stops @c's request timeout.
 */
void cpuhpd_admit_read_done(struct cpuhpd_conn *c, bool began, bool idle);

#endif /* CPUHPD_ADMIT_H */
