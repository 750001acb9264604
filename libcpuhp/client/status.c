/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's view (masks, leases, the writer, fast path, SMT, restart
 * grace): cpuhp_client_status(), and its asynchronous form on a connection
 * of its own (cpuhp_client_status_begin(), cpuhp_client_call_status()).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "client-internal.h"

/* @s into @out; -EPROTO (message set on @c) for a CPU list that does not parse. */
static int convert_status(struct cpuhp_client *c, const Cpuhp__Status *s,
                          struct cpuhp_client_status *out)
{
	int ret;

	if ((ret = cpuhp__client_parse_cpus(c, "online", s->online, &out->online)) < 0 ||
	    (ret = cpuhp__client_parse_cpus(c, "offline", s->offline, &out->offline)) < 0 ||
	    (ret = cpuhp__client_parse_cpus(c, "possible", s->possible, &out->possible)) < 0 ||
	    (ret = cpuhp__client_parse_cpus(c, "present", s->present, &out->present)) < 0)
		return ret;
	out->leases_held = s->leases_held;
	switch (s->writer) {
	case CPUHP__WRITER_STATE__WRITER_WAITING:
		out->writer = CPUHP_CLIENT_WRITER_WAITING;
		break;
	case CPUHP__WRITER_STATE__WRITER_RUNNING:
		out->writer = CPUHP_CLIENT_WRITER_RUNNING;
		break;
	default:
		out->writer = CPUHP_CLIENT_WRITER_IDLE;
		break;
	}
	out->pending_leases = s->pending_leases;
	out->pending_hotplugs = s->pending_hotplugs;
	out->connections = s->connections;
	snprintf(out->daemon_version, sizeof(out->daemon_version), "%s",
	         s->daemon_version ? s->daemon_version : "");
	out->fast_leases_held = s->fast_leases_held;
	out->freezes = s->freezes;
	out->bypasses = s->bypasses;
	out->revocations = s->revocations;
	out->fast_holders = s->fast_holders;
	out->fast_connections = s->fast_connections;
	/* An older daemon sends no fast_path: it has none. */
	snprintf(out->fast_path, sizeof(out->fast_path), "%s",
	         s->fast_path && s->fast_path[0] ? s->fast_path : "off");
	snprintf(out->smt_control, sizeof(out->smt_control), "%s",
	         s->smt_control ? s->smt_control : "");
	out->smt_active = s->smt_active;
	out->restart_grace_ms = s->restart_grace_ms;
	return 0;
}

/* convert_status() into @out only on success: over 4 KiB of masks, built on the heap. */
static int status_out(struct cpuhp_client *c, const Cpuhp__Status *s,
                      struct cpuhp_client_status *out)
{
	struct cpuhp_client_status *st = malloc(sizeof(*st));
	int ret;

	if (!st)
		return cpuhp__client_error(c, -ENOMEM, "out of memory for the status");
	ret = convert_status(c, s, st);
	if (ret == 0)
		*out = *st;
	free(st);
	return ret;
}

static int take_status(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	return status_out(c, resp->status, arg);
}

int cpuhp_client_status(struct cpuhp_client *c, struct cpuhp_client_status *out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__StatusRequest sr = CPUHP__STATUS_REQUEST__INIT;

	req.body_case = CPUHP__REQUEST__BODY_STATUS;
	req.status = &sr;
	return cpuhp__client_request(c, &req, CPUHP__RESPONSE__BODY_STATUS, take_status, out);
}

int cpuhp_client_status_begin(struct cpuhp_client *c, struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__StatusRequest sr = CPUHP__STATUS_REQUEST__INIT;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	req.body_case = CPUHP__REQUEST__BODY_STATUS;
	req.status = &sr;
	return cpuhp__call_begin(c, &req, CPUHP__RESPONSE__BODY_STATUS, out);
}

int cpuhp_client_call_status(struct cpuhp_client_call *call, struct cpuhp_client_status *out)
{
	const Cpuhp__Response *resp;
	struct cpuhp_client *w;
	int ret = cpuhp__call_reply(call, CPUHP__RESPONSE__BODY_STATUS, &resp, &w);

	return ret < 0 ? ret : status_out(w, resp->status, out);
}
