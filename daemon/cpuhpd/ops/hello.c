/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hello; see hello.h. */
#include <errno.h>
#include <inttypes.h>

#include <cpuhp/version.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/route.h"
#include "hello.h"

void cpuhpd_hello(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__Hello *h = req->hello;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__HelloReply hr = CPUHP__HELLO_REPLY__INIT;

	/* A newer client gets the older protocol it must also speak: fields are only added. */
	if (h->version < 1) {
		cpuhpd_conn_fail(c, req->id, EPROTONOSUPPORT,
		                 "protocol version %" PRIu32 " is not supported; this cpuhpd "
		                 "speaks versions 1 to %u",
		                 h->version, CPUHP__PROTO_VERSION);
		return;
	}
	c->hello = true;
	/* Not for us to refuse: its notices then come here, where an older daemon sent them. */
	if (h->notices_to && cpuhpd_route_link(c, h->notices_to))
		cpuhpd_debug("client %u: its notices stay here, not at client %" PRIu32
		             " (gone, or another process's)",
		             c->id, h->notices_to);
	/* Its state calls may come in batches (states/engine.c): it said it runs them so. */
	c->state_batch = h->state_batch;
	cpuhpd_fdstore_conn_changed(c);
	cpuhpd_debug("client %u: hello from '%s'", c->id, h->client_name);
	hr.version = CPUHP__PROTO_VERSION;
	hr.daemon_version = (char *)CPUHP_VERSION_STRING;
	hr.max_frame = CPUHP__FRAME_MAX;
	hr.fast_path = cpuhpd_fastpath_offered(c->d) && cpuhpd_fastpath_allowed(c);
	hr.state_batch = h->state_batch;
	hr.max_delay_ms = c->d->opt.max_delay_ms;
	hr.connection = c->id;
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_HELLO;
	r.hello = &hr;
	cpuhpd_conn_send(c, &r);
}
