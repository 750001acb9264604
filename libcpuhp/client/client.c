/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One function per cpuhpd request: build the Request, make the call
 * (conn.c), turn the reply into the public structs of <cpuhp/client.h>.
 * CPU lists from the daemon are parsed by cpuhp_cpuset_parse(), the one
 * parser of them.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client-fastpath.h"
#include "client-internal.h"
#include "errmap.h"

/*
 * Every public call runs under the handle's mutex with a fresh message,
 * counted as a user of the handle so that cpuhp_client_close() on another
 * thread waits for it (life.c).  Return: 0; -ECANCELED once close began.
 */
static int enter(struct cpuhp_client *c)
{
	if (cpuhp__client_get(c) < 0)
		return cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	pthread_mutex_lock(&c->lock);
	c->message[0] = '\0';
	/* Queued behind a call that close woke: do not start. */
	if (cpuhp__client_closing(c)) {
		int ret = cpuhp__client_error(c, -ECANCELED, CPUHP__CANCELED_MSG);

		pthread_mutex_unlock(&c->lock);
		cpuhp__client_put(c);
		return ret;
	}
	return 0;
}

static int leave(struct cpuhp_client *c, int ret)
{
	/* Woken by close (it shut the socket down): say so, not "connection reset". */
	if (ret < 0 && cpuhp__client_closing(c))
		ret = cpuhp__client_error(c, -ECANCELED, CPUHP__CANCELED_MSG);
	pthread_mutex_unlock(&c->lock);
	cpuhp__client_put(c);
	return ret;
}

static int parse_list(struct cpuhp_client *c, const char *what, const char *str,
                      struct cpuhp_cpuset *out)
{
	if (cpuhp_cpuset_parse(str ? str : "", out) < 0)
		return cpuhp__client_error(c, -EPROTO,
		                           "cpuhpd sent a %s list that does not parse: \"%.64s\"",
		                           what, str ? str : "");
	return 0;
}

int cpuhp__client_too_old(struct cpuhp_client *c, int ret, Cpuhp__Response__BodyCase expect)
{
	const char *what;

	if (ret != -EOPNOTSUPP)
		return ret;
	switch (expect) {
	case CPUHP__RESPONSE__BODY_SMT:
		what = "for SMT control";
		break;
	case CPUHP__RESPONSE__BODY_METRICS:
		what = "to give metrics";
		break;
	case CPUHP__RESPONSE__BODY_IDENTIFIED:
		what = "to keep who and why";
		break;
	case CPUHP__RESPONSE__BODY_LEASE_LIST:
		what = "to list leases";
		break;
	case CPUHP__RESPONSE__BODY_FROZEN:
		what = "to freeze hotplug";
		break;
	default:
		return ret; /* a request every cpuhpd knows: the daemon's own words */
	}
	return cpuhp__client_error(c, ret, "this cpuhpd is too old %s", what);
}

int cpuhp__client_hello_send(struct cpuhp_client *c)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Hello hello = CPUHP__HELLO__INIT;
	int ret;

	hello.version = CPUHP__PROTO_VERSION;
	hello.client_name = program_invocation_short_name;
	req.body_case = CPUHP__REQUEST__BODY_HELLO;
	req.hello = &hello;
	ret = cpuhp__client_send_request(c, &req);
	if (ret == 0)
		c->hello_id = req.id;
	return ret;
}

int cpuhp__client_hello_finish(struct cpuhp_client *c, int timeout_ms)
{
	Cpuhp__Response *resp;
	int ret;

	if (!c->hello_id)
		return 0;
	ret = cpuhp__client_await(c, c->hello_id, CPUHP__RESPONSE__BODY_HELLO, timeout_ms, &resp);
	if (ret != 0)
		return ret;
	c->hello_id = 0;
	if (resp->hello->version != CPUHP__PROTO_VERSION)
		ret = c->dead = cpuhp__client_error(
		    c, -EPROTONOSUPPORT, "cpuhpd speaks protocol version %u, this client %u",
		    resp->hello->version, CPUHP__PROTO_VERSION);
	else if (resp->hello->max_frame && resp->hello->max_frame < c->max_frame)
		c->max_frame = resp->hello->max_frame;
	c->fast_offered = ret == 0 && resp->hello->fast_path;
	cpuhp__response__free_unpacked(resp, NULL);
	return ret;
}

/* The fast path, asked for on the first lease; *@f stays NULL if there is none. */
int cpuhp__client_fast_get(struct cpuhp_client *c, struct cpuhp__fast **f)
{
	int ret = 0;

	if ((ret = enter(c)) < 0)
		return ret;
	if (!atomic_load_explicit(&c->fast, memory_order_relaxed) && !c->fast_refused && !c->dead)
		ret = cpuhp__client_fast_setup(c);
	*f = atomic_load_explicit(&c->fast, memory_order_relaxed);
	return leave(c, ret);
}

/* A call whose reply says nothing but that it was done. */
static int call_ack(struct cpuhp_client *c, Cpuhp__Request *req, Cpuhp__Response__BodyCase expect)
{
	Cpuhp__Response *resp;
	int ret = cpuhp__client_call(c, req, expect, &resp);

	if (ret == 0)
		cpuhp__response__free_unpacked(resp, NULL);
	return ret;
}

/* End socket lease @id held on @c's own connection, under ->lock. */
static int socket_release_locked(struct cpuhp_client *c, uint64_t id)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseRelease rel = CPUHP__LEASE_RELEASE__INIT;

	rel.lease_id = id;
	req.body_case = CPUHP__REQUEST__BODY_LEASE_RELEASE;
	req.lease_release = &rel;
	return call_ack(c, &req, CPUHP__RESPONSE__BODY_LEASE_RELEASED);
}

/* A socket lease on @c itself: the handle has no fast path. */
static int socket_acquire(struct cpuhp_client *c, unsigned timeout_ms, uint64_t *lease_id)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire acq = CPUHP__LEASE_ACQUIRE__INIT;
	Cpuhp__Response *resp;
	int ret;

	if ((ret = enter(c)) < 0)
		return ret;
	acq.timeout_ms = timeout_ms;
	req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	req.lease_acquire = &acq;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_LEASE_GRANTED, &resp);
	if (ret == 0) {
		uint64_t id = resp->lease_granted->lease_id;

		cpuhp__response__free_unpacked(resp, NULL);
		/* Known, so that its release after the connection ended says so. */
		ret = cpuhp__fallback_add(c, id, NULL);
		if (ret == 0)
			*lease_id = id;
		else
			socket_release_locked(c, id);
	}
	return leave(c, ret);
}

/* Everything but a fast lease granted at the first try: out of line, so that has no frame. */
static int acquire_waiting(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms,
                           uint64_t *lease_id)
{
	int ret;

	if (!f && c->fast_offered) {
		ret = cpuhp__client_fast_get(c, &f);
		if (ret < 0)
			return ret;
		if (f && cpuhp__fast_acquire(c, f, lease_id) == 0)
			return 0;
	}
	if (f)
		return cpuhp__fast_slow_acquire(c, f, timeout_ms, lease_id);
	return socket_acquire(c, timeout_ms, lease_id);
}

__attribute__((noinline, cold)) static int
acquire_slow(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms, uint64_t *lease_id)
{
	int ret;

	/* A fork child: the handle's connection and leases are its parent's (fork.c). */
	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	/* It may wait: close on another thread must wake it, and free @c only after. */
	if (cpuhp__client_get(c) < 0)
		return cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	ret = acquire_waiting(c, f, timeout_ms, lease_id);
	/* A lease got meanwhile is in @c's table (or its region): close ends it. */
	if (cpuhp__client_closing(c))
		ret = cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	cpuhp__client_put(c);
	return ret;
}

int cpuhp_client_lease_acquire(struct cpuhp_client *c, unsigned timeout_ms, uint64_t *lease_id)
{
	/* No lock, no message: the handle's lock may be held by a call waiting for a hotplug. */
	struct cpuhp__fast *f = atomic_load_explicit(&c->fast, memory_order_acquire);

	if (__builtin_expect(f != NULL, 1) && cpuhp__fast_acquire(c, f, lease_id) == 0)
		return 0;
	return acquire_slow(c, f, timeout_ms, lease_id);
}

__attribute__((noinline, cold)) static int release_slow(struct cpuhp_client *c,
                                                        struct cpuhp__fast *f, uint64_t lease_id)
{
	struct cpuhp_client *w = NULL;
	bool known;
	int ret;

	(void)f;
	if (cpuhp__client_forked(c)) {
		cpuhp__client_forked_error(c);
		return -ESRCH;
	}
	known = cpuhp__fallback_take(c, lease_id, &w);
	if (w) {
		/* Held on a connection of its own (call.c): its only lease. */
		ret = cpuhp_client_lease_release(w, lease_id);
		if (ret < 0 && cpuhp__client_conn_ended(w))
			ret = cpuhp__client_lease_lost(c, lease_id);
		/* The daemon's words (revoked, stale) are for the caller of @c. */
		else if (ret < 0)
			cpuhp__client_note(c, ret, cpuhp_client_last_message(w));
		cpuhp_client_close(w);
		return ret;
	}
	if ((ret = enter(c)) < 0)
		return ret;
	/* Died with the connection: no round trip to a daemon that is gone. */
	if (known && atomic_load_explicit(&c->ended, memory_order_relaxed))
		return leave(c, cpuhp__client_error(c, -ECONNRESET, CPUHP__LEASE_LOST_FMT,
		                                    (unsigned long long)lease_id));
	ret = socket_release_locked(c, lease_id);
	if (ret < 0 && known && atomic_load_explicit(&c->ended, memory_order_relaxed))
		ret = cpuhp__client_error(c, -ECONNRESET, CPUHP__LEASE_LOST_FMT,
		                          (unsigned long long)lease_id);
	return leave(c, ret);
}

/* A fast id on a handle without the fast path: nothing to end. */
__attribute__((noinline, cold)) static int release_unknown(struct cpuhp_client *c,
                                                           uint64_t lease_id)
{
	int ret;

	if (cpuhp__client_forked(c)) {
		cpuhp__client_forked_error(c);
		return -ESRCH;
	}
	if ((ret = enter(c)) < 0)
		return ret;
	return leave(c, cpuhp__client_error(c, -ESRCH,
	                                    "no fast lease %#llx on this handle (it has no fast "
	                                    "path; the id is from another handle)",
	                                    (unsigned long long)lease_id));
}

int cpuhp_client_lease_release(struct cpuhp_client *c, uint64_t lease_id)
{
	struct cpuhp__fast *f = atomic_load_explicit(&c->fast, memory_order_acquire);

	if (__builtin_expect((lease_id & CPUHP_CLIENT_FAST_LEASE) != 0, 1))
		return f ? cpuhp__fast_release(c, f, lease_id) : release_unknown(c, lease_id);
	return release_slow(c, f, lease_id);
}

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
}

int cpuhp__client_convert_results(struct cpuhp_client *c, const Cpuhp__SetOnlineReply *reply,
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

/* The request, without the handle's lock or message handling. */
static int set_online_locked(struct cpuhp_client *c, const char *cpus, bool online,
                             unsigned timeout_ms, struct cpuhp_client_cpu_result **results,
                             size_t *n_results)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
	Cpuhp__Response *resp;
	int ret;

	so.cpus = (char *)cpus;
	so.online = online;
	so.timeout_ms = timeout_ms;
	req.body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
	req.set_online = &so;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_SET_ONLINE, &resp);
	if (ret < 0)
		return ret;
	ret = cpuhp__client_convert_results(c, resp->set_online, results, n_results);
	cpuhp__response__free_unpacked(resp, NULL);
	return ret;
}

int cpuhp_client_set_online_results(struct cpuhp_client *c, const char *cpus, bool online,
                                    unsigned timeout_ms, struct cpuhp_client_cpu_result **results,
                                    size_t *n_results)
{
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = enter(c)) < 0)
		return ret;
	return leave(c, set_online_locked(c, cpus, online, timeout_ms, results, n_results));
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

int cpuhp_client_states_list(struct cpuhp_client *c, struct cpuhp_client_state_info **out,
                             size_t *n)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListStates ls = CPUHP__LIST_STATES__INIT;
	struct cpuhp_client_state_info *v;
	Cpuhp__Response *resp;
	size_t i, k;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = enter(c)) < 0)
		return ret;
	req.body_case = CPUHP__REQUEST__BODY_LIST_STATES;
	req.list_states = &ls;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_STATE_LIST, &resp);
	if (ret < 0)
		return leave(c, ret);
	k = resp->state_list->n_states;
	v = calloc(k ? k : 1, sizeof(*v));
	if (!v) {
		cpuhp__response__free_unpacked(resp, NULL);
		return leave(c, cpuhp__client_error(c, -ENOMEM, "out of memory for %zu states", k));
	}
	for (i = 0; i < k; i++) {
		const Cpuhp__StateInfo *si = resp->state_list->states[i];

		v[i].id = si->state_id;
		snprintf(v[i].name, sizeof(v[i].name), "%s", si->name);
		snprintf(v[i].comm, sizeof(v[i].comm), "%s", si->comm);
		v[i].priority = si->priority;
		v[i].deadline_ms = si->deadline_ms;
		v[i].pid = si->pid;
		v[i].uid = si->uid;
		if (cpuhp_cpuset_parse(si->cpus, &v[i].cpus) < 0)
			cpuhp_cpuset_zero(&v[i].cpus);
	}
	cpuhp__response__free_unpacked(resp, NULL);
	*out = v;
	*n = k;
	return leave(c, 0);
}

int cpuhp_client_set_online(struct cpuhp_client *c, const char *cpus, bool online,
                            unsigned timeout_ms)
{
	struct cpuhp_client_cpu_result *r;
	size_t n, i;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = enter(c)) < 0)
		return ret;
	ret = set_online_locked(c, cpus, online, timeout_ms, &r, &n);
	if (ret < 0)
		return leave(c, ret);
	for (i = 0; i < n; i++) {
		if (r[i].error) {
			ret = cpuhp__client_error(c, r[i].error, "CPU %u: %s", r[i].cpu,
			                          r[i].message[0] ? r[i].message
			                                          : strerror(-r[i].error));
			break;
		}
	}
	cpuhp_client_results_free(r);
	return leave(c, ret);
}

int cpuhp_client_set_smt_results(struct cpuhp_client *c, const char *control, unsigned timeout_ms,
                                 struct cpuhp_client_cpu_result **results, size_t *n_results,
                                 char *smt_control)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__SetSmt ss = CPUHP__SET_SMT__INIT;
	Cpuhp__SetOnlineReply none = CPUHP__SET_ONLINE_REPLY__INIT;
	Cpuhp__Response *resp;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = enter(c)) < 0)
		return ret;
	if (!control ||
	    (strcmp(control, "on") && strcmp(control, "off") && strcmp(control, "forceoff")))
		return leave(c, cpuhp__client_error(
		                    c, -EINVAL, "SMT control '%.32s' is none of on, off, forceoff",
		                    control ? control : "(null)"));
	ss.control = (char *)control;
	ss.timeout_ms = timeout_ms;
	req.body_case = CPUHP__REQUEST__BODY_SET_SMT;
	req.set_smt = &ss;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_SMT, &resp);
	cpuhp__client_too_old(c, ret, CPUHP__RESPONSE__BODY_SMT);
	if (ret < 0)
		return leave(c, ret);
	ret = cpuhp__client_convert_results(c, resp->smt->cpus ? resp->smt->cpus : &none, results,
	                                    n_results);
	if (ret == 0 && smt_control)
		snprintf(smt_control, CPUHP_CLIENT_MESSAGE_MAX, "%s",
		         resp->smt->control ? resp->smt->control : "");
	cpuhp__response__free_unpacked(resp, NULL);
	return leave(c, ret);
}

int cpuhp_client_metrics(struct cpuhp_client *c, char **text)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__MetricsRequest mr = CPUHP__METRICS_REQUEST__INIT;
	Cpuhp__Response *resp;
	char *s;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = enter(c)) < 0)
		return ret;
	req.body_case = CPUHP__REQUEST__BODY_METRICS;
	req.metrics = &mr;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_METRICS, &resp);
	cpuhp__client_too_old(c, ret, CPUHP__RESPONSE__BODY_METRICS);
	if (ret < 0)
		return leave(c, ret);
	s = strdup(resp->metrics->text ? resp->metrics->text : "");
	cpuhp__response__free_unpacked(resp, NULL);
	if (!s)
		return leave(c, cpuhp__client_error(c, -ENOMEM, "out of memory for the metrics"));
	*text = s;
	return leave(c, 0);
}

int cpuhp__client_convert_status(struct cpuhp_client *c, const Cpuhp__Status *s,
                                 struct cpuhp_client_status *out)
{
	int ret;

	if ((ret = parse_list(c, "online", s->online, &out->online)) < 0 ||
	    (ret = parse_list(c, "offline", s->offline, &out->offline)) < 0 ||
	    (ret = parse_list(c, "possible", s->possible, &out->possible)) < 0 ||
	    (ret = parse_list(c, "present", s->present, &out->present)) < 0)
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

int cpuhp_client_status(struct cpuhp_client *c, struct cpuhp_client_status *out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__StatusRequest sr = CPUHP__STATUS_REQUEST__INIT;
	Cpuhp__Response *resp;
	struct cpuhp_client_status *st;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	/* Over 4 KiB of masks: build it on the heap so @out stays untouched on failure. */
	st = malloc(sizeof(*st));
	if (!st)
		return -ENOMEM;
	if ((ret = enter(c)) < 0) {
		free(st);
		return ret;
	}
	req.body_case = CPUHP__REQUEST__BODY_STATUS;
	req.status = &sr;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_STATUS, &resp);
	if (ret == 0) {
		ret = cpuhp__client_convert_status(c, resp->status, st);
		cpuhp__response__free_unpacked(resp, NULL);
	}
	if (ret == 0)
		*out = *st;
	free(st);
	return leave(c, ret);
}

int cpuhp_client_fast_path(struct cpuhp_client *c)
{
	struct cpuhp__fast *f = atomic_load_explicit(&c->fast, memory_order_acquire);
	int ret = 0;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if (!f && c->fast_offered)
		ret = cpuhp__client_fast_get(c, &f);
	return ret < 0 ? ret : f != NULL;
}

int cpuhp_client_watch(struct cpuhp_client *c)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Watch w = CPUHP__WATCH__INIT;
	Cpuhp__Response *resp;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = enter(c)) < 0)
		return ret;
	if (c->watch_id)
		return leave(c,
		             cpuhp__client_error(c, -EALREADY, "this connection already watches"));
	req.body_case = CPUHP__REQUEST__BODY_WATCH;
	req.watch = &w;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_WATCH_STARTED, &resp);
	if (ret == 0) {
		c->watch_id = req.id;
		cpuhp__response__free_unpacked(resp, NULL);
	}
	return leave(c, ret);
}

/* 1 with @ev filled; 0 for an event kind this client does not know; -EPROTO. */
static int convert_event(struct cpuhp_client *c, const Cpuhp__Event *in,
                         struct cpuhp_client_event *ev)
{
	size_t i;
	int ret;

	memset(ev, 0, sizeof(*ev));
	switch (in->kind_case) {
	case CPUHP__EVENT__KIND_HOTPLUG_STARTED:
		ev->type = CPUHP_CLIENT_EVENT_HOTPLUG_STARTED;
		ev->online = in->hotplug_started->online;
		ret = parse_list(c, "hotplug", in->hotplug_started->cpus, &ev->cpus);
		break;
	case CPUHP__EVENT__KIND_HOTPLUG_FINISHED:
		ev->type = CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED;
		ev->online = in->hotplug_finished->online;
		ev->ok = in->hotplug_finished->ok;
		ret = parse_list(c, "hotplug", in->hotplug_finished->cpus, &ev->cpus);
		for (i = 0; ret == 0 && i < in->hotplug_finished->n_results; i++) {
			const Cpuhp__CpuResult *r = in->hotplug_finished->results[i];

			if (!r->ok && cpuhp_cpuset_add(&ev->failed, r->cpu) < 0)
				ret = cpuhp__client_error(c, -EPROTO, "cpuhpd sent CPU %u", r->cpu);
		}
		break;
	case CPUHP__EVENT__KIND_ONLINE_CHANGED:
		ev->type = CPUHP_CLIENT_EVENT_ONLINE_CHANGED;
		ev->external = in->online_changed->external;
		ret = parse_list(c, "online", in->online_changed->online, &ev->online_cpus);
		break;
	case CPUHP__EVENT__KIND_LEASE_REVOKED:
		ev->type = CPUHP_CLIENT_EVENT_LEASE_REVOKED;
		ev->lease_id = in->lease_revoked->lease_id;
		ev->held_ms = in->lease_revoked->held_ms;
		ev->max_lease_ms = in->lease_revoked->max_lease_ms;
		ret = 0;
		break;
	case CPUHP__EVENT__KIND_LEASE_BYPASSED:
		ev->type = CPUHP_CLIENT_EVENT_LEASE_BYPASSED;
		ev->external = true;
		ev->leases = in->lease_bypassed->leases;
		ret = parse_list(c, "online", in->lease_bypassed->online, &ev->online_cpus);
		break;
	default:
		return 0; /* a newer daemon's event: skip it */
	}
	return ret < 0 ? ret : 1;
}

/* The next event from the queue or the socket, skipping kinds we do not know. */
static int next_event_locked(struct cpuhp_client *c, int timeout_ms, struct cpuhp_client_event *ev)
{
	for (;;) {
		Cpuhp__Response *resp = cpuhp__client_dequeue_event(c);
		int ret;

		if (!resp && c->lost) {
			memset(ev, 0, sizeof(*ev));
			ev->type = CPUHP_CLIENT_EVENT_LOST;
			ev->lost = c->lost;
			c->lost = 0;
			return 0;
		}
		/* After the events that came before the end, and once. */
		if (!resp && c->leases_lost_pending) {
			memset(ev, 0, sizeof(*ev));
			ev->type = CPUHP_CLIENT_EVENT_LEASES_LOST;
			ev->leases = c->leases_lost;
			c->leases_lost_pending = false;
			return 0;
		}
		if (!resp) {
			if (c->dead)
				return cpuhp__client_error(c, c->dead,
				                           "the connection to cpuhpd "
				                           "failed earlier; reconnect");
			/* Calls read until their reply, so no reply can be pending here. */
			ret = cpuhp__client_read(c, timeout_ms, &resp);
			if (ret < 0 && c->leases_lost_pending)
				continue;
			if (ret < 0)
				return ret;
			if (resp->body_case == CPUHP__RESPONSE__BODY_ERROR && resp->id == 0) {
				/* About the connection (shutdown...), which the daemon now closes.
				 */
				ret = cpuhp__client_take_error(c, resp->error);
				cpuhp__response__free_unpacked(resp, NULL);
				cpuhp__client_end(c, ret, c->message);
				if (c->leases_lost_pending)
					continue;
				return ret;
			}
			if (resp->body_case != CPUHP__RESPONSE__BODY_EVENT ||
			    (resp->id != c->watch_id && resp->id != 0)) {
				cpuhp__response__free_unpacked(resp, NULL);
				return cpuhp__client_kill(c, -EPROTO,
				                          "cpuhpd sent a reply nobody asked for");
			}
		}
		ret = convert_event(c, resp->event, ev);
		cpuhp__response__free_unpacked(resp, NULL);
		if (ret != 0)
			return ret < 0 ? ret : 0;
	}
}

int cpuhp_client_next_event(struct cpuhp_client *c, int timeout_ms, struct cpuhp_client_event *ev)
{
	/* Over 3 KiB of masks: filled on the heap so @ev stays untouched on failure. */
	struct cpuhp_client_event *tmp;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	tmp = malloc(sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	if ((ret = enter(c)) < 0) {
		free(tmp);
		return ret;
	}
	/* Without a watch only notices come (id 0): take those that are there. */
	if (!c->watch_id && timeout_ms != 0 && !c->qlen && !c->leases_lost_pending)
		ret = cpuhp__client_error(c, -EINVAL,
		                          "not watching: call cpuhp_client_watch() first (or ask "
		                          "with a timeout of 0 for the notices only)");
	else
		ret = next_event_locked(c, timeout_ms, tmp);
	if (ret == 0)
		memcpy(ev, tmp, sizeof(*ev));
	free(tmp);
	return leave(c, ret);
}

static bool identity_ok(struct cpuhp_client *c, const char *who, const char *why)
{
	if ((who && strlen(who) > CPUHP_CLIENT_IDENTITY_MAX) ||
	    (why && strlen(why) > CPUHP_CLIENT_IDENTITY_MAX)) {
		cpuhp__client_note(c, -EINVAL, "who and why may have at most 255 bytes each");
		return false;
	}
	return true;
}

int cpuhp_client_set_identity(struct cpuhp_client *c, const char *who, const char *why)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Identify id = CPUHP__IDENTIFY__INIT;
	Cpuhp__Response *resp;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if (!identity_ok(c, who, why))
		return -EINVAL;
	if ((ret = enter(c)) < 0)
		return ret;
	id.who = (char *)(who ? who : "");
	id.why = (char *)(why ? why : "");
	req.body_case = CPUHP__REQUEST__BODY_IDENTIFY;
	req.identify = &id;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_IDENTIFIED, &resp);
	if (ret == 0) {
		cpuhp__response__free_unpacked(resp, NULL);
		pthread_mutex_lock(&c->fb_lock);
		snprintf(c->who, sizeof(c->who), "%s", id.who);
		snprintf(c->why, sizeof(c->why), "%s", id.why);
		pthread_mutex_unlock(&c->fb_lock);
	}
	cpuhp__client_too_old(c, ret, CPUHP__RESPONSE__BODY_IDENTIFIED);
	return leave(c, ret);
}

int cpuhp_client_lease_acquire_as(struct cpuhp_client *c, unsigned timeout_ms, const char *who,
                                  const char *why, uint64_t *lease_id)
{
	struct cpuhp_client_call *call;
	uint64_t id;
	int ret;

	if (cpuhp__client_get(c) < 0)
		return cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	ret = cpuhp_client_lease_acquire_as_begin(c, timeout_ms, who, why, &call);
	if (ret == 0) {
		ret = cpuhp__client_call_wait(call);
		if (ret == 0)
			ret = cpuhp_client_call_lease(call, &id);
		if (ret < 0)
			cpuhp__client_note(c, ret, cpuhp_client_call_message(call));
		cpuhp_client_call_free(call);
	}
	/* As in acquire_slow(): a lease got meanwhile ends with @c. */
	if (cpuhp__client_closing(c))
		ret = cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	else if (ret == 0)
		*lease_id = id;
	cpuhp__client_put(c);
	return ret;
}

int cpuhp__client_convert_list(struct cpuhp_client *c, const Cpuhp__LeaseList *in,
                               struct cpuhp_client_lease_list **out)
{
	struct cpuhp_client_lease_list *l;
	int ret;

	l = calloc(1, sizeof(*l));
	if (!l)
		return cpuhp__client_error(c, -ENOMEM, "out of memory");
	l->leases = calloc(in->n_leases + 1, sizeof(*l->leases));
	l->hotplugs = calloc(in->n_hotplugs + 1, sizeof(*l->hotplugs));
	l->freezes = calloc(in->n_freezes + 1, sizeof(*l->freezes));
	if (!l->leases || !l->hotplugs || !l->freezes) {
		cpuhp_client_lease_list_free(l);
		return cpuhp__client_error(c, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < in->n_leases; i++) {
		const Cpuhp__LeaseInfo *li = in->leases[i];
		struct cpuhp_client_lease_info *o = &l->leases[i];

		o->lease_id = li->lease_id;
		o->fast = li->kind == CPUHP__LEASE_KIND__LEASE_FAST;
		o->count = li->count;
		o->pid = li->pid;
		o->uid = li->uid;
		snprintf(o->comm, sizeof(o->comm), "%s", li->comm);
		snprintf(o->who, sizeof(o->who), "%s", li->who);
		snprintf(o->why, sizeof(o->why), "%s", li->why);
		o->held_ms = li->held_ms;
		o->connection = li->connection;
	}
	l->n_leases = in->n_leases;
	for (size_t i = 0; i < in->n_hotplugs; i++) {
		const Cpuhp__HotplugInfo *hi = in->hotplugs[i];
		struct cpuhp_client_hotplug_info *o = &l->hotplugs[i];

		ret = parse_list(c, "hotplug", hi->cpus, &o->cpus);
		if (ret < 0) {
			cpuhp_client_lease_list_free(l);
			return ret;
		}
		o->seq = hi->seq;
		o->online = hi->online;
		o->state =
		    hi->state == CPUHP__WRITER_STATE__WRITER_RUNNING   ? CPUHP_CLIENT_WRITER_RUNNING
		    : hi->state == CPUHP__WRITER_STATE__WRITER_WAITING ? CPUHP_CLIENT_WRITER_WAITING
		                                                       : CPUHP_CLIENT_WRITER_IDLE;
		o->pid = hi->pid;
		o->uid = hi->uid;
		snprintf(o->comm, sizeof(o->comm), "%s", hi->comm);
		o->waited_ms = hi->waited_ms;
		o->timeout_ms = hi->timeout_ms;
	}
	l->n_hotplugs = in->n_hotplugs;
	for (size_t i = 0; i < in->n_freezes; i++) {
		const Cpuhp__FreezeInfo *fi = in->freezes[i];
		struct cpuhp_client_freeze_info *o = &l->freezes[i];

		o->freeze_id = fi->freeze_id;
		o->granted = fi->granted;
		o->pid = fi->pid;
		o->uid = fi->uid;
		snprintf(o->comm, sizeof(o->comm), "%s", fi->comm);
		snprintf(o->who, sizeof(o->who), "%s", fi->who);
		snprintf(o->why, sizeof(o->why), "%s", fi->why);
		o->held_ms = fi->held_ms;
		o->connection = fi->connection;
	}
	l->n_freezes = in->n_freezes;
	l->restart_grace_ms = in->restart_grace_ms;
	*out = l;
	return 0;
}

int cpuhp_client_list_leases(struct cpuhp_client *c, struct cpuhp_client_lease_list **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListLeases ll = CPUHP__LIST_LEASES__INIT;
	Cpuhp__Response *resp;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((ret = enter(c)) < 0)
		return ret;
	req.body_case = CPUHP__REQUEST__BODY_LIST_LEASES;
	req.list_leases = &ll;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_LEASE_LIST, &resp);
	if (ret == 0) {
		ret = cpuhp__client_convert_list(c, resp->lease_list, out);
		cpuhp__response__free_unpacked(resp, NULL);
	}
	cpuhp__client_too_old(c, ret, CPUHP__RESPONSE__BODY_LEASE_LIST);
	return leave(c, ret);
}

void cpuhp_client_lease_list_free(struct cpuhp_client_lease_list *list)
{
	if (!list)
		return;
	free(list->leases);
	free(list->hotplugs);
	free(list->freezes);
	free(list);
}

int cpuhp_client_freeze(struct cpuhp_client *c, const char *who, const char *why,
                        uint64_t *freeze_id)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Freeze fr = CPUHP__FREEZE__INIT;
	Cpuhp__Response *resp;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if (!identity_ok(c, who, why))
		return -EINVAL;
	if ((ret = enter(c)) < 0)
		return ret;
	fr.who = (char *)(who ? who : "");
	fr.why = (char *)(why ? why : "");
	req.body_case = CPUHP__REQUEST__BODY_FREEZE;
	req.freeze = &fr;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_FROZEN, &resp);
	if (ret == 0) {
		*freeze_id = resp->frozen->freeze_id;
		cpuhp__response__free_unpacked(resp, NULL);
	}
	cpuhp__client_too_old(c, ret, CPUHP__RESPONSE__BODY_FROZEN);
	return leave(c, ret);
}

int cpuhp_client_thaw(struct cpuhp_client *c, uint64_t freeze_id)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Thaw th = CPUHP__THAW__INIT;
	struct cpuhp_client *w;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	/* Held on a connection of its own (cpuhp_client_freeze_begin()): its only freeze. */
	if (cpuhp__freeze_take(c, freeze_id, &w)) {
		ret = cpuhp_client_thaw(w, freeze_id);
		if (ret < 0)
			cpuhp__client_note(c, ret, cpuhp_client_last_message(w));
		cpuhp_client_close(w); /* ends the freeze even if the thaw failed */
		return ret;
	}
	if ((ret = enter(c)) < 0)
		return ret;
	th.freeze_id = freeze_id;
	req.body_case = CPUHP__REQUEST__BODY_THAW;
	req.thaw = &th;
	return leave(c, call_ack(c, &req, CPUHP__RESPONSE__BODY_THAWED));
}
