/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The asynchronous calls of <cpuhp/client.h>: a request on a connection of
 * its own, sent without waiting, its answer read when the caller's poll()
 * says it came.  The request families build the request (their _begin())
 * and turn the answer into their results (their cpuhp_client_call_*());
 * this file runs the call between the two.  A lease or a freeze a call
 * gets stays held on its connection, for the handle that began it (held.c).
 *
 * A call's connection is a handle of its own (cpuhp__client_open without
 * awaiting the hello), used only by the call's thread: the Hello and the
 * request go out back to back, and done() reads the Hello's reply, then
 * the request's, each only when a whole frame is there.  Nothing here
 * takes the parent handle's mutex except the fast path's first setup.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include "client-internal.h"

struct cpuhp_client_call {
	struct cpuhp_client *c; /* the handle it was begun on */
	/* Its own connection; NULL once its lease is c's (held.c) or it was a fast one. */
	struct cpuhp_client *conn;
	uint64_t req_id;
	Cpuhp__Response__BodyCase expect;
	int result;             /* -EINPROGRESS until done */
	Cpuhp__Response *reply; /* when done: the answer, for the result getters */
	uint64_t lease_id;      /* when done, for a lease; a freeze's id for a freeze */
	char message[CPUHP_CLIENT_MESSAGE_MAX];
	/* A listing in pages: asks for the next; the pages before the last (which is ->reply). */
	cpuhp__client_again_fn again;
	Cpuhp__Response **pages;
	size_t npages;
};

/* --- beginning --------------------------------------------------------------- */

static struct cpuhp_client_call *call_new(struct cpuhp_client *c, Cpuhp__Response__BodyCase expect)
{
	struct cpuhp_client_call *call = calloc(1, sizeof(*call));

	if (call) {
		call->c = c;
		call->expect = expect;
		call->result = -EINPROGRESS;
	}
	return call;
}

int cpuhp__call_begin(struct cpuhp_client *c, Cpuhp__Request *req, Cpuhp__Response__BodyCase expect,
                      struct cpuhp_client_call **out)
{
	struct cpuhp_client_call *call;
	struct cpuhp_client *w;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	call = call_new(c, expect);
	if (!call)
		return -ENOMEM;
	/* Notices about what it holds go where @c reads them. */
	ret = cpuhp__client_open(&c->sa, 0, c->conn_id, &w);
	if (ret < 0) {
		free(call);
		return cpuhp__client_note(c, ret, "cannot connect to cpuhpd for this request");
	}
	/* Its one request is the one below: it never asks for the fast path. */
	w->fast_offered = false;
	ret = cpuhp__client_send_request(w, req);
	if (ret < 0) {
		cpuhp__client_note(c, ret, cpuhp_client_last_message(w));
		cpuhp_client_close(w);
		free(call);
		return ret;
	}
	call->conn = w;
	call->req_id = req->id;
	*out = call;
	return 0;
}

int cpuhp__call_begin_pages(struct cpuhp_client *c, Cpuhp__Request *req,
                            Cpuhp__Response__BodyCase expect, cpuhp__client_again_fn again,
                            struct cpuhp_client_call **out)
{
	int ret = cpuhp__call_begin(c, req, expect, out);

	if (ret == 0)
		(*out)->again = again;
	return ret;
}

int cpuhp__call_granted(struct cpuhp_client *c, uint64_t id, struct cpuhp_client_call **out)
{
	struct cpuhp_client_call *call = call_new(c, CPUHP__RESPONSE__BODY_LEASE_GRANTED);

	if (!call)
		return -ENOMEM;
	call->lease_id = id;
	call->result = 0;
	*out = call;
	return 0;
}

/* --- progress ---------------------------------------------------------------- */

int cpuhp_client_call_fd(const struct cpuhp_client_call *call)
{
	return call->result == -EINPROGRESS ? cpuhp_client_fd(call->conn) : -1;
}

/* The answer (or @ret) is in: keep what the getters need, hand a lease to the handle. */
static int finish(struct cpuhp_client_call *call, int ret, Cpuhp__Response *resp)
{
	struct cpuhp_client *w = call->conn;

	/* Off the handle's list of waits before @w is closed or handed over. */
	cpuhp__client_wait_off(call->c, w);
	if (ret == 0 && (call->expect == CPUHP__RESPONSE__BODY_LEASE_GRANTED ||
	                 call->expect == CPUHP__RESPONSE__BODY_FROZEN)) {
		bool freeze = call->expect == CPUHP__RESPONSE__BODY_FROZEN;

		call->lease_id = freeze ? resp->frozen->freeze_id : resp->lease_granted->lease_id;
		cpuhp__response__free_unpacked(resp, NULL);
		resp = NULL;
		ret = cpuhp__held_add(call->c, call->lease_id, w, freeze);
		if (ret == 0)
			call->conn = NULL; /* c's now, with its lease or freeze */
		else
			cpuhp__client_error(w, ret, "out of memory for the lease table");
	}
	if (ret < 0) {
		snprintf(call->message, sizeof(call->message), "%s", cpuhp_client_last_message(w));
		/* Gone with it: whatever the daemon still had for this request. */
		cpuhp_client_close(w);
		call->conn = NULL;
	}
	call->reply = resp;
	call->result = ret;
	return ret;
}

int cpuhp_client_call_done(struct cpuhp_client_call *call)
{
	struct cpuhp_client *w = call->conn;
	Cpuhp__Response *resp = NULL;
	int ret;

	if (call->result != -EINPROGRESS)
		return call->result;
	if (cpuhp__client_forked(w)) {
		ret = cpuhp__client_forked_error(w);
		return finish(call, ret, NULL);
	}
	ret = cpuhp__client_hello_finish(w, 0);
	if (ret == 1)
		return -EINPROGRESS;
	while (ret == 0) {
		Cpuhp__Response **grown;

		ret = cpuhp__client_await(w, call->req_id, call->expect, 0, &resp);
		if (ret == 1)
			return -EINPROGRESS;
		if (ret < 0 || !call->again)
			break;
		/* A page: the next is asked for before this one's cursor is freed. */
		grown = realloc(call->pages, (call->npages + 1) * sizeof(*grown));
		ret = grown ? call->again(w, resp, &call->req_id) : -ENOMEM;
		if (grown)
			call->pages = grown;
		if (ret <= 0)
			break;
		call->pages[call->npages++] = resp;
		resp = NULL;
		ret = 0;
	}
	if (ret < 0 && resp) {
		cpuhp__response__free_unpacked(resp, NULL);
		resp = NULL;
	}
	return finish(call, ret, resp);
}

int cpuhp__client_call_wait(struct cpuhp_client_call *call)
{
	int ret;

	/* Where close on another thread finds the socket to wake us on (life.c); finish() ends it.
	 */
	if (call->result == -EINPROGRESS)
		cpuhp__client_wait_on(call->c, call->conn);
	while ((ret = cpuhp_client_call_done(call)) == -EINPROGRESS) {
		struct pollfd pfd = {.fd = cpuhp_client_call_fd(call), .events = POLLIN};

		/* A signal: poll again (the blocking calls resume after EINTR). */
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return finish(call,
			              cpuhp__client_kill(call->conn, -errno,
			                                 "polling the cpuhpd socket failed"),
			              NULL);
	}
	return ret;
}

/* --- results ----------------------------------------------------------------- */

static int check_done(const struct cpuhp_client_call *call, Cpuhp__Response__BodyCase expect)
{
	if (call->expect != expect || call->result == -EINPROGRESS)
		return -EINVAL;
	return call->result;
}

int cpuhp__call_id(const struct cpuhp_client_call *call, Cpuhp__Response__BodyCase expect,
                   uint64_t *id)
{
	int ret = check_done(call, expect);

	if (ret == 0)
		*id = call->lease_id;
	return ret;
}

int cpuhp__call_reply(struct cpuhp_client_call *call, Cpuhp__Response__BodyCase expect,
                      const Cpuhp__Response **resp, struct cpuhp_client **conn)
{
	int ret = check_done(call, expect);

	if (ret == 0) {
		*resp = call->reply;
		*conn = call->conn;
	}
	return ret;
}

int cpuhp__call_pages(struct cpuhp_client_call *call, Cpuhp__Response__BodyCase expect,
                      Cpuhp__Response *const **pages, size_t *npages, struct cpuhp_client **conn)
{
	int ret = check_done(call, expect);
	Cpuhp__Response **grown;

	if (ret < 0)
		return ret;
	/* The last page joins the others the first time they are asked for. */
	if (call->reply) {
		grown = realloc(call->pages, (call->npages + 1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		call->pages = grown;
		call->pages[call->npages++] = call->reply;
		call->reply = NULL;
	}
	*pages = call->pages;
	*npages = call->npages;
	*conn = call->conn;
	return 0;
}

const char *cpuhp_client_call_message(const struct cpuhp_client_call *call)
{
	return call->conn ? cpuhp_client_last_message(call->conn) : call->message;
}

void cpuhp_client_call_free(struct cpuhp_client_call *call)
{
	if (!call)
		return;
	cpuhp_client_close(call->conn);
	if (call->reply)
		cpuhp__response__free_unpacked(call->reply, NULL);
	for (size_t i = 0; i < call->npages; i++)
		cpuhp__response__free_unpacked(call->pages[i], NULL);
	free(call->pages);
	free(call);
}
