/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Request type -> handler, through the request table; see dispatch.h. */
#include <errno.h>
#include <stdlib.h>

#include <cpuhp/version.h>

#include "strfields.h"

#include "cpuhpd.h"
#include "base/log.h"
#include "conn.h"
#include "dispatch.h"

static const struct cpuhpd_request_type *row(const struct cpuhpd *d, Cpuhp__Request__BodyCase k)
{
	static const struct cpuhpd_request_type unknown = {NULL, 0};
	const struct cpuhpd_dispatch *t = &d->dispatch;

	return (unsigned)k < t->ntypes && t->types[k].handle ? &t->types[k] : &unknown;
}

void cpuhpd_dispatch(struct cpuhpd_conn *c, const uint8_t *payload, size_t len)
{
	struct cpuhpd *d = c->d;
	const struct cpuhpd_request_type *t;
	Cpuhp__Request *req;
	char why[128];
	uint64_t id;

	if (cpuhp__frame_unpack_request(payload, len, &req)) {
		cpuhpd_conn_fail(c, 0, EPROTO, "malformed request: not a cpuhp.Request message");
		return;
	}
	id = req->id;
	t = row(d, req->body_case);
	/*
	 * A restart stops (stop.c): what does not concern the leases held now
	 * is the next cpuhpd's, and so is all that follows it on the connection,
	 * in order (but the answers to calls in flight, which this one awaits).
	 */
	if (d->handover && (c->ndeferred || !(t->flags & CPUHPD_REQ_STOPPING)) &&
	    !(t->flags & CPUHPD_REQ_AWAITED)) {
		if (cpuhpd_conn_defer(c, payload, len))
			cpuhpd_conn_send_error(c, id, ECANCELED,
			                       "cpuhpd is restarting and out of "
			                       "memory; nothing was done");
		goto out;
	}
	if (!c->hello && !(t->flags & CPUHPD_REQ_FIRST)) {
		cpuhpd_conn_fail(c, id, EPROTO, "protocol error: the first request must be Hello");
		goto out;
	}
	if (d->stopping && !(t->flags & CPUHPD_REQ_STOPPING)) {
		if (!(t->flags & CPUHPD_REQ_NO_REPLY))
			cpuhpd_conn_send_error(c, id, ECANCELED, "cpuhpd is shutting down");
		goto out;
	}
	/*
	 * protobuf-c cuts a string at its first NUL and takes any bytes: a
	 * name "abc\0def" would act as "abc".  Refused whole, naming the field.
	 */
	if (cpuhp__strfields_check(&cpuhp__request__descriptor, payload, len, why, sizeof(why))) {
		if (t->flags & CPUHPD_REQ_NO_REPLY)
			cpuhpd_warn("connection %u: ignored a request that cannot be answered: %s",
			            c->id, why);
		else
			cpuhpd_conn_send_error(c, id, EINVAL,
			                       "%s: string fields must be UTF-8 without NUL bytes; "
			                       "nothing was done",
			                       why);
		goto out;
	}
	if (!t->handle) {
		cpuhpd_conn_send_error(c, id, EOPNOTSUPP,
		                       "empty or unknown request: this cpuhpd (%s) does not know "
		                       "it; is the client newer?",
		                       CPUHP_VERSION_STRING);
		goto out;
	}
	t->handle(c, req);
out:
	cpuhp__request__free_unpacked(req, NULL);
}
