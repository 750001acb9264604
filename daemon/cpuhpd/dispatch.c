/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Request type -> handler; Hello and Status are answered here. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include <cpuhp/version.h>

#include "cpuhpd.h"
#include "conn.h"
#include "dispatch.h"
#include "holders.h"
#include "log.h"
#include "watch.h"

static void hello(struct cpuhpd_conn *c, uint64_t id, const Cpuhp__Hello *h)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__HelloReply hr = CPUHP__HELLO_REPLY__INIT;

	/* A newer client gets the older protocol it must also speak: fields are only added. */
	if (h->version < 1) {
		cpuhpd_conn_fail(c, id, EPROTONOSUPPORT,
		                 "protocol version %" PRIu32 " is not supported; this cpuhpd "
		                 "speaks versions 1 to %u",
		                 h->version, CPUHP__PROTO_VERSION);
		return;
	}
	c->hello = true;
	cpuhpd_fdstore_conn_changed(c);
	cpuhpd_debug("client %u: hello from '%s'", c->id, h->client_name);
	hr.version = CPUHP__PROTO_VERSION;
	hr.daemon_version = (char *)CPUHP_VERSION_STRING;
	hr.max_frame = CPUHP__FRAME_MAX;
	hr.fast_path = cpuhpd_fastpath_offered(c->d) && cpuhpd_policy_fast_ok(c);
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_HELLO;
	r.hello = &hr;
	cpuhpd_conn_send(c, &r);
}

static void status(struct cpuhpd_conn *c, uint64_t id)
{
	struct cpuhpd *d = c->d;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Status st = CPUHP__STATUS__INIT;
	struct cpuhp_cpuset offline;
	char *s[4];

	cpuhpd_cpus_offline(&d->view, &offline);
	s[0] = cpuhpd_cpus_to_str(&d->view.online);
	s[1] = cpuhpd_cpus_to_str(&offline);
	s[2] = cpuhpd_cpus_to_str(&d->view.possible);
	s[3] = cpuhpd_cpus_to_str(&d->view.present);
	if (!s[0] || !s[1] || !s[2] || !s[3]) {
		cpuhpd_conn_send_error(c, id, ENOMEM, "cpuhpd is out of memory");
		goto out;
	}
	st.online = s[0];
	st.offline = s[1];
	st.possible = s[2];
	st.present = s[3];
	cpuhpd_fastpath_police(d); /* a forged count shows capped, and its connection closes */
	cpuhpd_fastpath_status(d, &st);
	st.leases_held = d->leases.held + st.fast_leases_held;
	st.writer = cpuhpd_hotplug_writer_state(d);
	st.pending_leases = d->leases.nwaiters;
	st.pending_hotplugs = d->hotplug.nqueued;
	st.connections = d->nconns;
	st.freezes = d->freezes.n;
	st.bypasses = d->policy.bypasses;
	st.revocations = d->policy.revocations;
	st.daemon_version = (char *)CPUHP_VERSION_STRING;
	st.smt_control = d->view.smt_control;
	st.smt_active = d->view.smt_active;
	st.restart_grace_ms = (uint32_t)cpuhpd_restart_remaining_ms(d);
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_STATUS;
	r.status = &st;
	cpuhpd_conn_send(c, &r);
out:
	for (int i = 0; i < 4; i++)
		free(s[i]);
}

/* What a stopping daemon still handles: leases held, calls in progress, looking. */
static bool stop_handles(Cpuhp__Request__BodyCase k)
{
	return k == CPUHP__REQUEST__BODY_STATUS || k == CPUHP__REQUEST__BODY_LEASE_RELEASE ||
	       k == CPUHP__REQUEST__BODY_LIST_LEASES || k == CPUHP__REQUEST__BODY_THAW ||
	       k == CPUHP__REQUEST__BODY_STATE_ANSWER || k == CPUHP__REQUEST__BODY_METRICS ||
	       k == CPUHP__REQUEST__BODY_FAST_WAKE;
}

void cpuhpd_dispatch(struct cpuhpd_conn *c, const uint8_t *payload, size_t len)
{
	Cpuhp__Request *req;
	uint64_t id;

	if (cpuhp__frame_unpack_request(payload, len, &req)) {
		cpuhpd_conn_fail(c, 0, EPROTO, "malformed request: not a cpuhp.Request message");
		return;
	}
	id = req->id;
	/*
	 * A restart stops (stop.c): what does not concern the leases held now
	 * is the next cpuhpd's, and so is all that follows it on the connection,
	 * in order (but the answers to calls in flight, which this one awaits).
	 */
	if (c->d->restart.keep && (c->ndeferred || !stop_handles(req->body_case)) &&
	    req->body_case != CPUHP__REQUEST__BODY_STATE_ANSWER) {
		if (cpuhpd_conn_defer(c, payload, len))
			cpuhpd_conn_send_error(c, id, ECANCELED,
			                       "cpuhpd is restarting and out of "
			                       "memory; nothing was done");
		goto out;
	}
	if (!c->hello && req->body_case != CPUHP__REQUEST__BODY_HELLO) {
		cpuhpd_conn_fail(c, id, EPROTO, "protocol error: the first request must be Hello");
		goto out;
	}
	/* FastWake and StateAnswer are never answered, not even with an error. */
	if (c->d->stopping && !stop_handles(req->body_case)) {
		cpuhpd_conn_send_error(c, id, ECANCELED, "cpuhpd is shutting down");
		goto out;
	}
	switch (req->body_case) {
	case CPUHP__REQUEST__BODY_HELLO:
		hello(c, id, req->hello);
		break;
	case CPUHP__REQUEST__BODY_LEASE_ACQUIRE:
		cpuhpd_lease_acquire(c, id, req->lease_acquire);
		break;
	case CPUHP__REQUEST__BODY_LEASE_RELEASE:
		cpuhpd_lease_release(c, id, req->lease_release->lease_id);
		break;
	case CPUHP__REQUEST__BODY_SET_ONLINE:
		cpuhpd_hotplug_submit(c, id, req->set_online);
		break;
	case CPUHP__REQUEST__BODY_STATUS:
		status(c, id);
		break;
	case CPUHP__REQUEST__BODY_WATCH:
		cpuhpd_watch_start(c, id);
		break;
	case CPUHP__REQUEST__BODY_FAST_PATH:
		cpuhpd_fastpath_request(c, id, req->fast_path);
		break;
	case CPUHP__REQUEST__BODY_FAST_WAKE:
		cpuhpd_fastpath_wake(c);
		break;
	case CPUHP__REQUEST__BODY_IDENTIFY:
		cpuhpd_holders_identify(c, id, req->identify);
		break;
	case CPUHP__REQUEST__BODY_LIST_LEASES:
		cpuhpd_holders_list(c, id);
		break;
	case CPUHP__REQUEST__BODY_FREEZE:
		cpuhpd_freeze_request(c, id, req->freeze);
		break;
	case CPUHP__REQUEST__BODY_THAW:
		cpuhpd_freeze_thaw(c, id, req->thaw->freeze_id);
		break;
	case CPUHP__REQUEST__BODY_REGISTER_STATE:
		cpuhpd_states_register(c, id, req->register_state);
		break;
	case CPUHP__REQUEST__BODY_REMOVE_STATE:
		cpuhpd_states_remove(c, id, req->remove_state);
		break;
	case CPUHP__REQUEST__BODY_STATE_ANSWER:
		cpuhpd_states_answer(c, req->state_answer);
		break;
	case CPUHP__REQUEST__BODY_LIST_STATES:
		cpuhpd_states_list(c, id);
		break;
	case CPUHP__REQUEST__BODY_SET_SMT:
		cpuhpd_hotplug_submit_smt(c, id, req->set_smt);
		break;
	case CPUHP__REQUEST__BODY_METRICS:
		cpuhpd_metrics_request(c, id);
		break;
	default:
		cpuhpd_conn_send_error(c, id, EOPNOTSUPP,
		                       "empty or unknown request: this cpuhpd (%s) does not know "
		                       "it; is the client newer?",
		                       CPUHP_VERSION_STRING);
		break;
	}
out:
	cpuhp__request__free_unpacked(req, NULL);
}
