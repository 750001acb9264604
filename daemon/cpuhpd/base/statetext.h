/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state text: what a restarted cpuhpd needs to rebuild every client
 * connection that the service manager's fd store kept (fdstore.c), as
 * lines of text in a memfd that is in the store too.
 *
 *   cpuhpd-state 1 BYTES HASH          BYTES of body follow; HASH is their
 *                                      cpuhpd_statetext_hash(), 16 hex digits
 *   daemon PID NEXT_CONN NEXT_LEASE NEXT_STATE NEXT_FREEZE NEXT_CALL [NEXT_HOTPLUG]
 *   conn ID PID UID GID ADMIN HELLO COMM WHO WHY FAST_SLOTS WATCH_ID
 *   lease CONN ID SINCE BYPASSED WHO WHY [DELAY_MS]
 *   wait CONN REQ_ID DEADLINE TIMEOUT_MS WHO WHY [DELAY_MS]
 *   batch CONN                         its Hello said state_batch: its state calls
 *                                      may come in batches
 *   state CONN ID REG_REQ_ID PRIORITY DEADLINE_MS NAME CPUS [KIND]
 *                                      KIND: 1 the PREPARE section, 2 multi-instance
 *   inst CONN STATE_ID ID NAME CPUS    an instance of that multi state (after its
 *                                      line and its older instances')
 *   call CONN STATE_ID CPU             a call of that state or instance (after its line) for
 *                                      that CPU sent and not answered: made again
 *                                      after a restart; a line per CPU, ascending
 *   freeze CONN ID REQ_ID SINCE GRANTED WHO WHY
 *   ready CONN NOTICES_TO TOLD FAST_DELAY_MS
 *                                      where its notices go (a conn id, 0: itself),
 *                                      the hotplug it was told of, its fast leases' delay
 *   hotplug CONN REQ_ID SEQ NOTICED    the hotplug of the next req line of CONN with
 *                                      REQ_ID: its number, when it was announced (0: not)
 *   req CONN PAYLOAD                   a request not answered yet: handled again, in
 *                                      the order of these lines, before anything new
 *   run CONN PAYLOAD                   as req, for the hotplug that was in the worker:
 *                                      it runs again from where its CPUs' states are
 *   partial CONN BYTES                 the start of a frame read, not yet complete
 *   end
 *
 * Numbers are decimal; SINCE, DEADLINE and NOTICED are CLOCK_MONOTONIC milliseconds
 * (uv_now()), which a new process on the same boot shares.  Strings and
 * bytes are lower-case hex ("-" for none), so that no value can break a
 * line.  A record naming a CONN must follow that conn's line.  A text that
 * is cut, fails its hash, or breaks any rule is refused whole: the new
 * daemon then adopts nothing and falls back to the restart grace
 * (grace.c), never to a half-rebuilt lease table.
 *
 * Pure code (no libuv, no daemon object): the fuzz target
 * tests/fuzz/fuzz-statetext.c drives the parser.
 */
#ifndef CPUHPD_STATETEXT_H
#define CPUHPD_STATETEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CPUHPD_STATETEXT_VERSION 1
/* Bounds that keep a forged or broken text from costing more than a daemon's real tables. */
#define CPUHPD_STATETEXT_MAX_BYTES  (64u << 20)
#define CPUHPD_STATETEXT_MAX_CONNS  1000000u
#define CPUHPD_STATETEXT_MAX_STRING 4096u
#define CPUHPD_STATETEXT_MAX_BLOB   (1u << 20)

struct cpuhpd_saved_lease {
	uint64_t id, since;
	bool bypassed;
	char *who, *why;   /* NULL: none */
	uint32_t delay_ms; /* a delay lease's delay; 0 (or no field): a block lease */
};

struct cpuhpd_saved_wait {
	uint64_t req_id, deadline;
	uint32_t timeout_ms;
	char *who, *why;
	uint32_t delay_ms; /* as a lease's */
};

/* A "state" line's KIND bits. */
#define CPUHPD_SAVED_PREPARE 1u
#define CPUHPD_SAVED_MULTI   2u

/* A "state" line, or an "inst" line (@parent not 0: its state's id; no priority or deadline). */
struct cpuhpd_saved_state {
	uint64_t id, reg_req_id;
	uint64_t parent;
	unsigned kind; /* CPUHPD_SAVED_* */
	int32_t priority;
	uint32_t deadline_ms;
	char *name;
	char *cpus;       /* NULL: started on none */
	unsigned *unsure; /* its "call" lines: CPUs a call is in flight for, ascending */
	unsigned nunsure;
};

struct cpuhpd_saved_freeze {
	uint64_t id, req_id, since;
	bool granted;
	char *who, *why;
};

struct cpuhpd_saved_blob {
	uint8_t *data;
	size_t len;
};

struct cpuhpd_saved_conn {
	unsigned id;
	int32_t pid;
	uint32_t uid, gid;
	bool admin, hello;
	char *comm, *who, *why;
	unsigned fast_slots; /* 0: no fast-path region */
	uint64_t watch_id;   /* 0: not watching */
	/* "ready": where its notices go (0: itself), the hotplug it was told of, its fast delay */
	unsigned notices_to;
	uint64_t told_seq;
	uint32_t fast_delay_ms;
	struct cpuhpd_saved_lease *leases;
	unsigned nleases;
	struct cpuhpd_saved_wait *waits;
	unsigned nwaits;
	bool state_batch; /* "batch": its Hello said state_batch (its state calls in batches) */
	struct cpuhpd_saved_state *states;
	unsigned nstates;
	struct cpuhpd_saved_freeze *freezes;
	unsigned nfreezes;
	struct cpuhpd_saved_blob partial; /* len 0: between frames */
};

struct cpuhpd_saved_req {
	unsigned conn;
	bool running; /* a "run" line */
	struct cpuhpd_saved_blob req;
};

/* A queued hotplug's number and notice, for its req line. */
struct cpuhpd_saved_hotplug {
	unsigned conn;
	uint64_t req_id, seq, noticed_at;
};

struct cpuhpd_saved {
	int32_t pid; /* of the daemon that wrote it */
	unsigned next_conn_id;
	uint64_t next_lease_id, next_state_id, next_freeze_id, next_call_id;
	uint64_t next_hotplug_seq; /* 0: not in the text (an older writer) */
	struct cpuhpd_saved_conn *conns;
	unsigned nconns;
	struct cpuhpd_saved_req *reqs; /* in their order, every connection's */
	unsigned nreqs;
	struct cpuhpd_saved_hotplug *hotplugs;
	unsigned nhotplugs;
};

/**
 * cpuhpd_statetext_parse() - parse a whole state text.
 * @why: on failure, what was wrong (line number and rule), for the log.
 * Return: 0 and @out filled (free it with cpuhpd_statetext_free()), or
 * -EINVAL (@out empty), or -ENOMEM.
 */
int cpuhpd_statetext_parse(const char *text, size_t len, struct cpuhpd_saved *out, char *why,
                           size_t whylen);
void cpuhpd_statetext_free(struct cpuhpd_saved *s);

/* The same for @len bytes of body alone (the lines after the first; journal.c's). */
int cpuhpd_statetext_parse_body(const char *text, size_t len, struct cpuhpd_saved *out, char *why,
                                size_t whylen);

/* Find conn @id in @s; NULL if absent. */
struct cpuhpd_saved_conn *cpuhpd_statetext_conn(struct cpuhpd_saved *s, unsigned id);

/* Writing: one value as a field (" " and the hex of @s, or " -"). */
void cpuhpd_statetext_str(FILE *f, const char *s);
void cpuhpd_statetext_bytes(FILE *f, const void *p, size_t len);
/* @len bytes as lower-case hex, nothing before them. */
void cpuhpd_statetext_hex(FILE *f, const void *p, size_t len);

/* A 64-bit hash of @len bytes (FNV-1a over 8-byte words): the text's first line. */
uint64_t cpuhpd_statetext_hash(const char *p, size_t len);

/* The first line for @body into @buf (CPUHPD_STATETEXT_HEADER_MAX): its length. */
#define CPUHPD_STATETEXT_HEADER_MAX 80
int cpuhpd_statetext_header(char *buf, size_t size, const char *body, size_t body_len);

/**
 * cpuhpd_statetext_seal() - turn @body (the lines after the first) into the
 * whole text, with its first line.  Return: a malloc()ed text and its
 * length in @len, or NULL (ENOMEM).
 */
char *cpuhpd_statetext_seal(const char *body, size_t body_len, size_t *len);

#endif /* CPUHPD_STATETEXT_H */
