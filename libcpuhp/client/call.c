/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The asynchronous calls of <cpuhp/client.h>: a request on a connection of
 * its own, sent without waiting, its answer read when the caller's poll()
 * says it came.  Also the table of leases held on such connections, which
 * belong to the handle that began them (and to the fast path's waits
 * behind a hotplug, fastpath.c).
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
#include <string.h>

#include "client-fastpath.h"
#include "client-internal.h"

struct cpuhp_client_call {
	struct cpuhp_client *c; /* the handle it was begun on */
	/* Its own connection; NULL once its lease is c's (fallback table) or it was a fast one. */
	struct cpuhp_client *conn;
	uint64_t req_id;
	Cpuhp__Response__BodyCase expect;
	int result;             /* -EINPROGRESS until done */
	Cpuhp__Response *reply; /* when done: the answer, for the result getters */
	uint64_t lease_id;      /* when done, for a lease; a freeze's id for a freeze */
	char message[CPUHP_CLIENT_MESSAGE_MAX];
};

/* --- leases on connections of their own --------------------------------------- */

struct cpuhp__fallback {
	uint64_t id;
	struct cpuhp_client *conn;
	bool freeze; /* a freeze's connection (ids are per kind): no lease on it */
};

static int table_add(struct cpuhp_client *c, uint64_t id, struct cpuhp_client *w, bool freeze)
{
	int ret = 0;

	pthread_mutex_lock(&c->fb_lock);
	if (c->nfb == c->capfb) {
		unsigned cap = c->capfb ? 2 * c->capfb : 8;
		struct cpuhp__fallback *fb = realloc(c->fb, cap * sizeof(*fb));

		if (fb) {
			c->fb = fb;
			c->capfb = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		c->fb[c->nfb++] = (struct cpuhp__fallback){.id = id, .conn = w, .freeze = freeze};
	pthread_mutex_unlock(&c->fb_lock);
	return ret;
}

static bool table_take(struct cpuhp_client *c, uint64_t id, bool freeze, struct cpuhp_client **w)
{
	bool found = false;

	pthread_mutex_lock(&c->fb_lock);
	for (unsigned i = 0; i < c->nfb; i++) {
		if (c->fb[i].id == id && c->fb[i].freeze == freeze) {
			*w = c->fb[i].conn;
			c->fb[i] = c->fb[--c->nfb];
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&c->fb_lock);
	return found;
}

int cpuhp__fallback_add(struct cpuhp_client *c, uint64_t id, struct cpuhp_client *w)
{
	return table_add(c, id, w, false);
}

bool cpuhp__fallback_take(struct cpuhp_client *c, uint64_t id, struct cpuhp_client **w)
{
	return table_take(c, id, false, w);
}

bool cpuhp__freeze_take(struct cpuhp_client *c, uint64_t id, struct cpuhp_client **w)
{
	return table_take(c, id, true, w);
}

unsigned cpuhp__fallback_lost(struct cpuhp_client *c, bool own_ended)
{
	unsigned n = 0;

	pthread_mutex_lock(&c->fb_lock);
	/*
	 * A connection of its own ends with the daemon too, a moment before or
	 * after @c's (the kernel closes a dead daemon's sockets one by one):
	 * counted if its end shows already.
	 */
	for (unsigned i = 0; i < c->nfb; i++)
		if (!c->fb[i].freeze) /* a freeze is no lease: LeasesLost does not count it */
			n += c->fb[i].conn ? cpuhp__client_conn_ended(c->fb[i].conn) : own_ended;
	pthread_mutex_unlock(&c->fb_lock);
	return n;
}

void cpuhp__client_fallback_close_all(struct cpuhp_client *c)
{
	for (unsigned i = 0; i < c->nfb; i++)
		cpuhp_client_close(
		    c->fb[i].conn); /* NULL: held on @c's own, closed by the caller */
	free(c->fb);
	c->fb = NULL;
	c->nfb = c->capfb = 0;
}

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

/* Open @call's connection and send @req on it after the hello; frees @call on failure. */
static int begin_own(struct cpuhp_client *c, struct cpuhp_client_call *call, Cpuhp__Request *req,
                     struct cpuhp_client_call **out)
{
	struct cpuhp_client *w;
	int ret = cpuhp__client_open(&c->sa, false, &w);

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

/* @c's names, for what a connection of its own holds: the daemon learns them only from its request.
 */
static void handle_names(struct cpuhp_client *c, char (*who)[sizeof(c->who)],
                         char (*why)[sizeof(c->why)])
{
	pthread_mutex_lock(&c->fb_lock);
	memcpy(*who, c->who, sizeof(*who));
	memcpy(*why, c->why, sizeof(*why));
	pthread_mutex_unlock(&c->fb_lock);
}

static int names_check(struct cpuhp_client *c, const char *who, const char *why)
{
	if ((who && strlen(who) > CPUHP_CLIENT_IDENTITY_MAX) ||
	    (why && strlen(why) > CPUHP_CLIENT_IDENTITY_MAX))
		return cpuhp__client_note(c, -EINVAL,
		                          "who and why may have at most 255 bytes each");
	return 0;
}

int cpuhp__client_lease_begin_own(struct cpuhp_client *c, unsigned timeout_ms, const char *who,
                                  const char *why, struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire acq = CPUHP__LEASE_ACQUIRE__INIT;
	struct cpuhp_client_call *call = call_new(c, CPUHP__RESPONSE__BODY_LEASE_GRANTED);
	char hwho[sizeof(c->who)], hwhy[sizeof(c->why)];

	if (!call)
		return -ENOMEM;
	handle_names(c, &hwho, &hwhy);
	acq.who = (char *)(who ? who : hwho);
	acq.why = (char *)(why ? why : hwhy);
	acq.timeout_ms = timeout_ms;
	req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	req.lease_acquire = &acq;
	return begin_own(c, call, &req, out);
}

int cpuhp_client_lease_acquire_begin(struct cpuhp_client *c, unsigned timeout_ms,
                                     struct cpuhp_client_call **out)
{
	struct cpuhp__fast *f;
	struct cpuhp_client_call *call;
	uint64_t id;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	/* Acquire: pairs with the release that publishes c->fast (fastpath.c). */
	f = atomic_load_explicit(&c->fast, memory_order_acquire);
	if (!f && c->fast_offered) {
		ret = cpuhp__client_fast_get(c, &f);
		if (ret < 0)
			return ret;
	}
	if (!f)
		return cpuhp__client_lease_begin_own(c, timeout_ms, NULL, NULL, out);
	ret = cpuhp__fast_acquire(c, f, &id);
	if (ret != 0)
		ret = cpuhp__fast_try(c, f, timeout_ms, &id);
	if (ret < 0)
		return ret;
	if (ret == 1 && cpuhp__client_in_state_cb)
		return cpuhp__client_deadlk(c);
	if (ret == 1)
		return cpuhp__client_lease_begin_own(c, timeout_ms, NULL, NULL, out);
	call = call_new(c, CPUHP__RESPONSE__BODY_LEASE_GRANTED);
	if (!call) {
		cpuhp_client_lease_release(c, id);
		return -ENOMEM;
	}
	call->lease_id = id;
	call->result = 0;
	*out = call;
	return 0;
}

int cpuhp_client_lease_acquire_as_begin(struct cpuhp_client *c, unsigned timeout_ms,
                                        const char *who, const char *why,
                                        struct cpuhp_client_call **out)
{
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = names_check(c, who, why)) < 0)
		return ret;
	return cpuhp__client_lease_begin_own(c, timeout_ms, who, why, out);
}

int cpuhp_client_set_online_begin(struct cpuhp_client *c, const char *cpus, bool online,
                                  unsigned timeout_ms, struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
	struct cpuhp_client_call *call;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	call = call_new(c, CPUHP__RESPONSE__BODY_SET_ONLINE);
	if (!call)
		return -ENOMEM;
	so.cpus = (char *)cpus;
	so.online = online;
	so.timeout_ms = timeout_ms;
	req.body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
	req.set_online = &so;
	return begin_own(c, call, &req, out);
}

int cpuhp_client_status_begin(struct cpuhp_client *c, struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__StatusRequest sr = CPUHP__STATUS_REQUEST__INIT;
	struct cpuhp_client_call *call;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	call = call_new(c, CPUHP__RESPONSE__BODY_STATUS);
	if (!call)
		return -ENOMEM;
	req.body_case = CPUHP__REQUEST__BODY_STATUS;
	req.status = &sr;
	return begin_own(c, call, &req, out);
}

int cpuhp_client_leases_begin(struct cpuhp_client *c, struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListLeases ll = CPUHP__LIST_LEASES__INIT;
	struct cpuhp_client_call *call;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	call = call_new(c, CPUHP__RESPONSE__BODY_LEASE_LIST);
	if (!call)
		return -ENOMEM;
	req.body_case = CPUHP__REQUEST__BODY_LIST_LEASES;
	req.list_leases = &ll;
	return begin_own(c, call, &req, out);
}

int cpuhp_client_freeze_begin(struct cpuhp_client *c, const char *who, const char *why,
                              struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Freeze fr = CPUHP__FREEZE__INIT;
	struct cpuhp_client_call *call;
	char hwho[sizeof(c->who)], hwhy[sizeof(c->why)];
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = names_check(c, who, why)) < 0)
		return ret;
	call = call_new(c, CPUHP__RESPONSE__BODY_FROZEN);
	if (!call)
		return -ENOMEM;
	handle_names(c, &hwho, &hwhy);
	fr.who = (char *)(who ? who : hwho);
	fr.why = (char *)(why ? why : hwhy);
	req.body_case = CPUHP__REQUEST__BODY_FREEZE;
	req.freeze = &fr;
	return begin_own(c, call, &req, out);
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
		ret = table_add(call->c, call->lease_id, w, freeze);
		if (ret == 0)
			call->conn = NULL; /* c's now, with its lease or freeze */
		else
			cpuhp__client_error(w, ret, "out of memory for the lease table");
	}
	if (ret < 0) {
		cpuhp__client_too_old(w, ret, call->expect); /* as the blocking calls say it */
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
	if (ret == 0)
		ret = cpuhp__client_await(w, call->req_id, call->expect, 0, &resp);
	if (ret == 1)
		return -EINPROGRESS;
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

int cpuhp_client_call_lease(const struct cpuhp_client_call *call, uint64_t *lease_id)
{
	int ret = check_done(call, CPUHP__RESPONSE__BODY_LEASE_GRANTED);

	if (ret == 0)
		*lease_id = call->lease_id;
	return ret;
}

int cpuhp_client_call_freeze(const struct cpuhp_client_call *call, uint64_t *freeze_id)
{
	int ret = check_done(call, CPUHP__RESPONSE__BODY_FROZEN);

	if (ret == 0)
		*freeze_id = call->lease_id;
	return ret;
}

int cpuhp_client_call_results(struct cpuhp_client_call *call,
                              struct cpuhp_client_cpu_result **results, size_t *n_results)
{
	int ret = check_done(call, CPUHP__RESPONSE__BODY_SET_ONLINE);

	if (ret == 0)
		ret = cpuhp__client_convert_results(call->conn, call->reply->set_online, results,
		                                    n_results);
	return ret;
}

int cpuhp_client_call_status(struct cpuhp_client_call *call, struct cpuhp_client_status *out)
{
	struct cpuhp_client_status *st;
	int ret = check_done(call, CPUHP__RESPONSE__BODY_STATUS);

	if (ret < 0)
		return ret;
	/* Over 4 KiB of masks: on the heap, so that @out stays untouched on failure. */
	st = malloc(sizeof(*st));
	if (!st)
		return -ENOMEM;
	ret = cpuhp__client_convert_status(call->conn, call->reply->status, st);
	if (ret == 0)
		*out = *st;
	free(st);
	return ret;
}

int cpuhp_client_call_leases(struct cpuhp_client_call *call, struct cpuhp_client_lease_list **out)
{
	int ret = check_done(call, CPUHP__RESPONSE__BODY_LEASE_LIST);

	if (ret == 0)
		ret = cpuhp__client_convert_list(call->conn, call->reply->lease_list, out);
	return ret;
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
	free(call);
}
