/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hotplug requests: cpuhp_client_set_online_results() and its asynchronous
 * form on a connection of its own (cpuhp_client_set_online_results_begin(),
 * cpuhp_client_call_set_online_results()), cpuhp_client_set_online() for a
 * yes or no, SMT control (cpuhp_client_set_smt_results()), and the results
 * they give: one per CPU, each with the state callbacks run for it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"
#include "errmap.h"

/*
 * The results array is the tail of this block, so that its element stays
 * the public struct (its size is ABI) while the state runs ride along:
 * cpuhp_client_results_states() and _free() find the block from the array.
 */
struct results_block {
	struct cpuhp_client_state_run *runs; /* all CPUs' runs, in order */
	size_t *first, *count;               /* per result: its runs in ->runs */
	size_t n;
	struct cpuhp_client_cpu_result r[];
};

static struct results_block *block_of(const struct cpuhp_client_cpu_result *r)
{
	return (struct results_block *)((char *)r - offsetof(struct results_block, r));
}

static void run_from_wire(struct cpuhp_client_state_run *o, const Cpuhp__StateRun *in)
{
	snprintf(o->state, sizeof(o->state), "%s", in->name);
	snprintf(o->comm, sizeof(o->comm), "%s", in->comm);
	snprintf(o->message, sizeof(o->message), "%s", in->message);
	o->pid = in->pid;
	o->cpu = in->cpu;
	o->teardown = in->phase == CPUHP__STATE_PHASE__PHASE_TEARDOWN;
	o->rollback = in->rollback;
	o->timed_out = in->timed_out;
	o->client_gone = in->client_gone;
	o->error = in->ok ? 0 : cpuhp__errmap_from_wire(in->code);
	o->micros = in->micros;
	snprintf(o->instance, sizeof(o->instance), "%s", in->instance ? in->instance : "");
	o->prepare = in->section == CPUHP__STATE_SECTION__SECTION_PREPARE;
}

/* The results of @reply, for cpuhp_client_results_free(); -ENOMEM (message set on @c). */
static int convert_results(struct cpuhp_client *c, const Cpuhp__SetOnlineReply *reply,
                           struct cpuhp_client_cpu_result **results, size_t *n_results)
{
	size_t n = reply->n_results, nruns = 0, i, k, at = 0;
	struct results_block *b;
	struct cpuhp_client_cpu_result *r;

	for (i = 0; i < n; i++)
		nruns += reply->results[i]->n_states;
	/* calloc(0) may return NULL: allocate one so success always has an array. */
	b = calloc(1, sizeof(*b) + (n ? n : 1) * sizeof(b->r[0]));
	if (b) {
		b->runs = calloc(nruns ? nruns : 1, sizeof(*b->runs));
		b->first = calloc(n ? n : 1, sizeof(*b->first));
		b->count = calloc(n ? n : 1, sizeof(*b->count));
	}
	if (!b || !b->runs || !b->first || !b->count) {
		if (b) {
			free(b->runs);
			free(b->first);
			free(b->count);
		}
		free(b);
		return cpuhp__client_error(c, -ENOMEM, "out of memory for %zu CPU results", n);
	}
	b->n = n;
	r = b->r;
	for (i = 0; i < n; i++) {
		const Cpuhp__CpuResult *in = reply->results[i];

		r[i].cpu = in->cpu;
		r[i].error = in->ok ? 0 : cpuhp__errmap_from_wire(in->code);
		r[i].changed = in->ok && in->changed;
		snprintf(r[i].message, sizeof(r[i].message), "%s", in->message ? in->message : "");
		b->first[i] = at;
		b->count[i] = in->n_states;
		for (k = 0; k < in->n_states; k++)
			run_from_wire(&b->runs[at++], in->states[k]);
	}
	*results = r;
	*n_results = n;
	return 0;
}

const struct cpuhp_client_state_run *
cpuhp_client_results_states(const struct cpuhp_client_cpu_result *results, size_t i, size_t *n)
{
	const struct results_block *b = block_of(results);

	if (i >= b->n || !b->count[i]) {
		*n = 0;
		return NULL;
	}
	*n = b->count[i];
	return &b->runs[b->first[i]];
}

/* What a forced request revoked, for free(); -ENOMEM (message set on @c). */
static int convert_revoked(struct cpuhp_client *c, const Cpuhp__SetOnlineReply *reply,
                           struct cpuhp_client_lease_info **revoked, size_t *n_revoked)
{
	struct cpuhp_client_lease_info *v = calloc(reply->n_revoked + 1, sizeof(*v));

	if (!v)
		return cpuhp__client_error(c, -ENOMEM, "out of memory for %zu revoked leases",
		                           reply->n_revoked);
	for (size_t i = 0; i < reply->n_revoked; i++)
		cpuhp__lease_info_from_wire(&v[i], reply->revoked[i]);
	*revoked = v;
	*n_revoked = reply->n_revoked;
	return 0;
}

/* Where the results go: the caller's out-parameters, written only on success. */
struct results_out {
	struct cpuhp_client_cpu_result **results;
	size_t *n_results;
	char *smt_control; /* SetSmt: NULL, or CPUHP_CLIENT_MESSAGE_MAX bytes */
	struct cpuhp_client_lease_info **revoked; /* forced: NULL, or where the list goes */
	size_t *n_revoked;
};

/* @reply's results, and what it revoked if @o asks; all or nothing. */
static int take_results(struct cpuhp_client *c, const Cpuhp__SetOnlineReply *reply,
                        const struct results_out *o)
{
	struct cpuhp_client_lease_info *rv = NULL;
	size_t nrv = 0;
	int ret = o->revoked ? convert_revoked(c, reply, &rv, &nrv) : 0;

	if (ret == 0)
		ret = convert_results(c, reply, o->results, o->n_results);
	if (ret < 0) {
		free(rv);
		return ret;
	}
	if (o->revoked) {
		*o->revoked = rv;
		*o->n_revoked = nrv;
	}
	return 0;
}

static int take_set_online(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	return take_results(c, resp->set_online, arg);
}

static void set_online_request(Cpuhp__Request *req, Cpuhp__SetOnline *so, const char *cpus,
                               bool online, unsigned timeout_ms, bool persist)
{
	so->cpus = (char *)cpus;
	so->online = online;
	so->timeout_ms = timeout_ms;
	so->persist = persist;
	req->body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
	req->set_online = so;
}

/* The request, under the handle's lock. */
static int set_online_locked(struct cpuhp_client *c, const char *cpus, bool online,
                             unsigned timeout_ms, struct cpuhp_client_cpu_result **results,
                             size_t *n_results)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
	struct results_out o = {.results = results, .n_results = n_results};

	set_online_request(&req, &so, cpus, online, timeout_ms, c->persist);
	return cpuhp__client_request_locked(c, &req, CPUHP__RESPONSE__BODY_SET_ONLINE,
	                                    take_set_online, &o);
}

int cpuhp_client_set_online_results(struct cpuhp_client *c, const char *cpus, bool online,
                                    unsigned timeout_ms, struct cpuhp_client_cpu_result **results,
                                    size_t *n_results)
{
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	return cpuhp__client_leave(
	    c, set_online_locked(c, cpus, online, timeout_ms, results, n_results));
}

int cpuhp_client_set_online(struct cpuhp_client *c, const char *cpus, bool online,
                            unsigned timeout_ms)
{
	struct cpuhp_client_cpu_result *r;
	size_t n, i;
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	ret = set_online_locked(c, cpus, online, timeout_ms, &r, &n);
	if (ret < 0)
		return cpuhp__client_leave(c, ret);
	for (i = 0; i < n; i++) {
		if (r[i].error) {
			ret = cpuhp__client_error(c, r[i].error, "CPU %u: %s", r[i].cpu,
			                          r[i].message[0] ? r[i].message
			                                          : strerror(-r[i].error));
			break;
		}
	}
	cpuhp_client_results_free(r);
	return cpuhp__client_leave(c, ret);
}

/* cpuhp_client_persist()'s flag, for a request begun on a connection of its own. */
static int persist_of(struct cpuhp_client *c, bool *persist)
{
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	*persist = c->persist;
	return cpuhp__client_leave(c, 0);
}

/* A SetOnline on a connection of its own; @force with @grace_ms when forced. */
static int set_online_begin(struct cpuhp_client *c, const char *cpus, bool online,
                            unsigned timeout_ms, bool force, unsigned grace_ms,
                            struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
	bool persist;
	int ret;

	if ((ret = persist_of(c, &persist)) < 0)
		return ret;
	set_online_request(&req, &so, cpus, online, timeout_ms, persist);
	so.force = force;
	so.force_grace_ms = grace_ms;
	return cpuhp__call_begin(c, &req, CPUHP__RESPONSE__BODY_SET_ONLINE, out);
}

int cpuhp_client_set_online_results_begin(struct cpuhp_client *c, const char *cpus, bool online,
                                          unsigned timeout_ms, struct cpuhp_client_call **out)
{
	return set_online_begin(c, cpus, online, timeout_ms, false, 0, out);
}

int cpuhp_client_call_set_online_results(struct cpuhp_client_call *call,
                                         struct cpuhp_client_cpu_result **results,
                                         size_t *n_results)
{
	const Cpuhp__Response *resp;
	struct cpuhp_client *w;
	int ret = cpuhp__call_reply(call, CPUHP__RESPONSE__BODY_SET_ONLINE, &resp, &w);

	return ret < 0 ? ret : convert_results(w, resp->set_online, results, n_results);
}

int cpuhp_client_set_online_forced(struct cpuhp_client *c, const char *cpus, bool online,
                                   unsigned timeout_ms, unsigned grace_ms,
                                   struct cpuhp_client_cpu_result **results, size_t *n_results,
                                   struct cpuhp_client_lease_info **revoked, size_t *n_revoked)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
	struct results_out o = {
	    .results = results, .n_results = n_results, .revoked = revoked, .n_revoked = n_revoked};
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	set_online_request(&req, &so, cpus, online, timeout_ms, c->persist);
	so.force = true;
	so.force_grace_ms = grace_ms;
	return cpuhp__client_leave(c, cpuhp__client_request_locked(c, &req,
	                                                           CPUHP__RESPONSE__BODY_SET_ONLINE,
	                                                           take_set_online, &o));
}

int cpuhp_client_set_online_forced_begin(struct cpuhp_client *c, const char *cpus, bool online,
                                         unsigned timeout_ms, unsigned grace_ms,
                                         struct cpuhp_client_call **out)
{
	return set_online_begin(c, cpus, online, timeout_ms, true, grace_ms, out);
}

int cpuhp_client_call_revoked(struct cpuhp_client_call *call,
                              struct cpuhp_client_lease_info **revoked, size_t *n_revoked)
{
	const Cpuhp__Response *resp;
	struct cpuhp_client *w;
	int ret = cpuhp__call_reply(call, CPUHP__RESPONSE__BODY_SET_ONLINE, &resp, &w);

	return ret < 0 ? ret : convert_revoked(w, resp->set_online, revoked, n_revoked);
}

static int take_smt(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	static const Cpuhp__SetOnlineReply none = CPUHP__SET_ONLINE_REPLY__INIT;
	const struct results_out *o = arg;
	int ret = take_results(c, resp->smt->cpus ? resp->smt->cpus : &none, o);

	if (ret == 0 && o->smt_control)
		snprintf(o->smt_control, CPUHP_CLIENT_MESSAGE_MAX, "%s",
		         resp->smt->control ? resp->smt->control : "");
	return ret;
}

/* SetSmt, forced if @revoked (then with @grace_ms). */
static int set_smt(struct cpuhp_client *c, const char *control, unsigned timeout_ms,
                   struct cpuhp_client_cpu_result **results, size_t *n_results, char *smt_control,
                   unsigned grace_ms, struct cpuhp_client_lease_info **revoked, size_t *n_revoked)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__SetSmt ss = CPUHP__SET_SMT__INIT;
	struct results_out o = {.results = results,
	                        .n_results = n_results,
	                        .smt_control = smt_control,
	                        .revoked = revoked,
	                        .n_revoked = n_revoked};
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	if (!control ||
	    (strcmp(control, "on") && strcmp(control, "off") && strcmp(control, "forceoff")))
		return cpuhp__client_leave(
		    c, cpuhp__client_error(c, -EINVAL,
		                           "SMT control '%.32s' is none of on, off, forceoff",
		                           control ? control : "(null)"));
	ss.control = (char *)control;
	ss.timeout_ms = timeout_ms;
	ss.persist = c->persist;
	ss.force = revoked != NULL;
	ss.force_grace_ms = grace_ms;
	req.body_case = CPUHP__REQUEST__BODY_SET_SMT;
	req.set_smt = &ss;
	return cpuhp__client_leave(
	    c, cpuhp__client_request_locked(c, &req, CPUHP__RESPONSE__BODY_SMT, take_smt, &o));
}

int cpuhp_client_set_smt_results(struct cpuhp_client *c, const char *control, unsigned timeout_ms,
                                 struct cpuhp_client_cpu_result **results, size_t *n_results,
                                 char *smt_control)
{
	return set_smt(c, control, timeout_ms, results, n_results, smt_control, 0, NULL, NULL);
}

int cpuhp_client_set_smt_forced(struct cpuhp_client *c, const char *control, unsigned timeout_ms,
                                unsigned grace_ms, struct cpuhp_client_cpu_result **results,
                                size_t *n_results, char *smt_control,
                                struct cpuhp_client_lease_info **revoked, size_t *n_revoked)
{
	return set_smt(c, control, timeout_ms, results, n_results, smt_control, grace_ms, revoked,
	               n_revoked);
}

void cpuhp_client_results_free(struct cpuhp_client_cpu_result *results)
{
	struct results_block *b;

	if (!results)
		return;
	b = block_of(results);
	free(b->runs);
	free(b->first);
	free(b->count);
	free(b);
}
