/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests: decode one payload and hand it to the handler its type's row
 * names in the request table (table.c).  Hello must come first; a
 * payload that is not a Request closes the connection (EPROTO); a request
 * type without a row (a newer client's) gets EOPNOTSUPP and the connection
 * stays open.  While cpuhpd stops, a type not flagged for it gets
 * ECANCELED; while a restart hands over to the next cpuhpd, it is kept for
 * that one (and so is all that follows it on its connection).  Loop thread
 * only.
 */
#ifndef CPUHPD_DISPATCH_H
#define CPUHPD_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "cpuhp.pb-c.h"

struct cpuhpd;
struct cpuhpd_conn;

/* Allowed as a connection's first request (Hello): the others need it first. */
#define CPUHPD_REQ_FIRST 1u
/*
 * Handled while cpuhpd stops: the leases held now, the calls in progress,
 * looking.  Any other gets ECANCELED then, or, in a restart's stop, is
 * kept for the next cpuhpd.
 */
#define CPUHPD_REQ_STOPPING 2u
/* Never answered, not even with an error (FastWake, StateAnswer). */
#define CPUHPD_REQ_NO_REPLY 4u
/*
 * The answer to a call this cpuhpd awaits (StateAnswer): handled in a
 * restart's stop even behind requests kept for the next cpuhpd, since
 * the work the stop lets finish waits for it.
 */
#define CPUHPD_REQ_AWAITED 8u

/* One row of the request table, indexed by the Request's body case. */
struct cpuhpd_request_type {
	void (*handle)(struct cpuhpd_conn *c, const Cpuhp__Request *req);
	unsigned flags;
};

struct cpuhpd_dispatch {
	const struct cpuhpd_request_type *types; /* [body case]; a NULL handler: unknown */
	unsigned ntypes;
};

/* The connection hook (conn.h): one request's payload, decoded and handled. */
void cpuhpd_dispatch(struct cpuhpd_conn *c, const uint8_t *payload, size_t len);

#endif /* CPUHPD_DISPATCH_H */
