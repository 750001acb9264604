/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hotplug queue and the writer side of the gate (the states are
 * described in hotplug.h, the gate in gate.h).
 *
 * Invariant: the gate is closed exactly while the head is active.  Every
 * path that removes the head goes through leave_head(), which opens the
 * gate (letting in the readers that waited) and then activates the next
 * request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmap.h"

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/gate.h"
#include "core/watch.h"
#include "leases/holders.h"
#include "states/states.h"
#include "plan.h"
#include "request.h"
static const char *verb(bool online)
{
	return online ? "online" : "offline";
}

static struct hotplug_req *head(const struct cpuhpd *d)
{
	struct cpuhpd_list *n = cpuhpd_list_first(&d->hotplug.queue);

	return n ? cpuhpd_container_of(n, struct hotplug_req, node) : NULL;
}

static void timer_cb(uv_timer_t *t);

/*
 * Whether @h's deadline is judged now.  Not while the fast path is still
 * counting its leases for @h (a membarrier in flight): until then nobody
 * knows whether a lease is in the way, and a "try" (timeout 0) would always
 * fail.  cpuhpd_hotplug_gate_counted() re-arms when the count is in.
 */
static bool deadline_counts(const struct cpuhpd *d, const struct hotplug_req *h)
{
	if (h->state == HP_WAIT_LEASES)
		return !cpuhpd_gate_counting(d);
	return h->state == HP_QUEUED;
}

/* When a forced hotplug revokes what it still waits for; UINT64_MAX: not (any more). */
static uint64_t force_at(const struct hotplug_req *h)
{
	if (!h->force || h->forced || !h->noticed || h->state != HP_WAIT_LEASES)
		return UINT64_MAX;
	return h->noticed_at + h->force_grace_ms;
}

/*
 * Arm the timer for the earliest deadline among requests not handed to the
 * worker, and the active one's forcing.
 */
static void arm(struct cpuhpd *d)
{
	struct cpuhpd_list *pos;
	uint64_t first = UINT64_MAX, now = uv_now(d->loop);

	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		if (deadline_counts(d, h) && h->deadline < first)
			first = h->deadline;
		if (force_at(h) < first)
			first = force_at(h);
	}
	if (first == UINT64_MAX)
		uv_timer_stop(&d->hotplug.timer);
	else
		uv_timer_start(&d->hotplug.timer, timer_cb, first > now ? first - now : 0, 0);
}

/*
 * Take @h out of the queue and away from its client before answering: an
 * answer can close the client, and what that triggers (its leases ending,
 * cpuhpd_hotplug_conn_gone) must not find @h any more.
 * Return: the client to answer, or NULL if it is gone.
 */
static struct cpuhpd_conn *unlink_req(struct cpuhpd *d, struct hotplug_req *h)
{
	struct cpuhpd_conn *c = h->conn;

	cpuhpd_list_del(&h->node);
	d->hotplug.nqueued--;
	if (c) {
		c->npending--;
		h->conn = NULL;
	}
	/* Out of the stored state before its answer: a restart must not run it again. */
	cpuhpd_fdstore_changed(d);
	return c;
}

static void destroy_req(struct hotplug_req *h)
{
	/* Its notices are still going out (pin()): freed when they are done. */
	if (h->pinned) {
		h->gone = true;
		return;
	}
	cpuhpd_job_fini(&h->job);
	cpuhpd_revoke_list_free(h->revoked, h->nrevoked);
	free(h->cpus_str);
	free(h);
}

void cpuhpd_hotplug_free(struct hotplug_req *h)
{
	destroy_req(h);
}

/* cpuhpd's own request @h ended (@err 0: it ran): tell the part of cpuhpd that asked. */
static void tell_owner(struct cpuhpd *d, const struct hotplug_req *h, int err)
{
	if (h->own_done)
		h->own_done(d, h, err);
}

static void job_started(struct cpuhpd *d, struct cpuhpd_job *job);

static void job_done(struct cpuhpd *d, struct cpuhpd_job *job);

static void to_worker(struct cpuhpd *d, struct hotplug_req *h)
{
	uint64_t now = uv_now(d->loop);

	h->state = HP_WORKER;
	/* It waits for no lease any more: a delay still running revokes nothing now. */
	cpuhpd_revoke_over(d);
	h->job.timeout_ms = h->deadline > now ? (unsigned)(h->deadline - now) : 0;
	/* No registration runs now (they are readers): the set of states is that of the job. */
	h->job.with_states = cpuhpd_states_any(d);
	/* Its timeout bounds its state calls too (a "try" only its states' own deadlines). */
	h->job.calls_deadline = h->timeout_ms ? h->deadline : 0;
	h->job.calls_timeout_ms = h->timeout_ms;
	cpuhpd_states_hotplug_begin(d);
	/* A kill from now on cuts it mid-way: the next cpuhpd resumes it ("run"). */
	cpuhpd_fdstore_changed(d);
	cpuhpd_debug("hotplug #%" PRIu64 ": no lease held; to the worker (%u ms left)", h->seq,
	             h->job.timeout_ms);
	cpuhpd_worker_submit(d, &h->job);
	arm(d);
}

/*
 * Keep @h's memory while something that can close connections runs: a
 * closing connection can drop @h (its client) and destroy_req() it.
 */
static void pin(struct hotplug_req *h)
{
	h->pinned++;
}

/* Return: whether @h is still the active request waiting for leases (else: hands off it). */
static bool unpin(struct cpuhpd *d, struct hotplug_req *h)
{
	if (--h->pinned == 0 && h->gone) {
		destroy_req(h);
		return false;
	}
	return !h->gone && head(d) == h && h->state == HP_WAIT_LEASES;
}

/*
 * The active request waits, and every source knows what it holds: tell
 * the watchers and the holders (notice.c), start the delays of the delay
 * leases and a forced request's grace.  After a restart the first notice's
 * time counts (->noticed_at), and only those not told yet are told.
 */
static void pending(struct cpuhpd *d, struct hotplug_req *h)
{
	if (!h->noticed_at)
		h->noticed_at = uv_now(d->loop);
	h->noticed = true;
	pin(h);
	cpuhpd_notice_pending(d, h);
	/* A holder that let go at once (or a client gone) may have let it go on already. */
	if (!unpin(d, h))
		return;
	if (h->force)
		cpuhpd_info("hotplug #%" PRIu64 " is forced: the leases still held in %" PRIu32
		            " ms will be revoked",
		            h->seq, h->force_grace_ms);
	cpuhpd_revoke_pending(d, h->seq, h->noticed_at);
	/* Before the fdstore line that keeps ->noticed_at. */
	cpuhpd_fdstore_changed(d);
}

/* Make the first request the active one, unless it already is. */
static void activate(struct cpuhpd *d)
{
	struct hotplug_req *h = head(d);
	unsigned held;

	if (!h || h->state != HP_QUEUED)
		return;
	h->state = HP_WAIT_LEASES;
	if (cpuhpd_gate_close(d)) {
		to_worker(d, h);
		return;
	}
	/* One snapshot: it sums every fast-path region, on the loop. */
	held = cpuhpd_holders_total(d);
	if (held) {
		char who[400];

		cpuhpd_holders_describe(d, who, sizeof(who));
		cpuhpd_info("hotplug #%" PRIu64 " (%s) waits for %u lease(s): %s", h->seq, h->desc,
		            held, who);
	} else if (cpuhpd_grace_holding(d)) {
		cpuhpd_info("hotplug #%" PRIu64 " (%s) waits for the restart grace: %" PRIu64
		            " ms left",
		            h->seq, h->desc, cpuhpd_grace_remaining_ms(d));
	} else
		cpuhpd_debug("hotplug #%" PRIu64 ": counting fast leases", h->seq);
	/* With the count of the fast leases still to come, cpuhpd_hotplug_gate_counted() tells. */
	if (!cpuhpd_gate_counting(d))
		pending(d, h);
	arm(d);
}

/*
 * The active request just left the queue: let the leases that waited on it
 * in, then start the next.  Granting can close clients, which can remove the
 * next request before it starts; activate() takes whatever is first then.
 */
static void leave_head(struct cpuhpd *d)
{
	cpuhpd_revoke_over(d);
	cpuhpd_gate_open(d);
	if (!d->stopping)
		activate(d);
	arm(d);
	if (!d->hotplug.nqueued)
		cpuhpd_freeze_queue_empty(d);
}

static void expire(struct cpuhpd *d, struct hotplug_req *h)
{
	bool was_active = h->state == HP_WAIT_LEASES;
	struct cpuhpd_conn *c = unlink_req(d, h);

	if (was_active)
		cpuhpd_gate_writer_done(d);
	cpuhpd_hotplug_count(d, h, h->timeout_ms == 0 ? CPUHPD_HP_BUSY : CPUHPD_HP_TIMEOUT);

	/* A timeout of 0 means "try": the answer is EAGAIN, as for a lease. */
	if (was_active && cpuhpd_grace_holding(d))
		cpuhpd_hotplug_reply_error(
		    h, c, h->timeout_ms ? ETIMEDOUT : EAGAIN,
		    "cpuhpd holds every hotplug for %" PRIu64 " ms more: the cpuhpd "
		    "before it ended without handing its clients over, whose lease "
		    "holders must notice first (--restart-grace-ms; see its log); "
		    "nothing was changed",
		    cpuhpd_grace_remaining_ms(d));
	else if (h->timeout_ms == 0 && was_active)
		cpuhpd_hotplug_reply_error(
		    h, c, EAGAIN,
		    "%u lease(s) held and no timeout given; nothing was changed (ask with "
		    "a timeout to wait for them)",
		    cpuhpd_holders_total(d));
	else if (h->timeout_ms == 0)
		cpuhpd_hotplug_reply_error(
		    h, c, EAGAIN,
		    "another hotplug is in progress and no timeout given; nothing was "
		    "changed");
	else if (was_active) {
		unsigned held = cpuhpd_holders_total(d);
		char who[400];

		cpuhpd_holders_describe(d, who, sizeof(who));
		cpuhpd_hotplug_reply_error(h, c, ETIMEDOUT,
		                           "%s%s: timed out after %" PRIu32
		                           " ms behind %u lease%s: %s; nothing "
		                           "was changed",
		                           h->kind == CPUHPD_HP_SMT ? "" : "CPU ",
		                           h->kind == CPUHPD_HP_SMT ? h->desc : h->cpus_str,
		                           h->timeout_ms, held, held == 1 ? "" : "s", who);
	} else
		cpuhpd_hotplug_reply_error(h, c, ETIMEDOUT,
		                           "timed out after %" PRIu32
		                           " ms behind earlier hotplug requests; "
		                           "nothing was changed",
		                           h->timeout_ms);
	tell_owner(d, h, h->timeout_ms == 0 ? EAGAIN : ETIMEDOUT);
	destroy_req(h);
	if (was_active)
		leave_head(d);
}

/* A forced request's grace is over: revoke what it still waits for, and let it go on. */
static void force(struct cpuhpd *d, struct hotplug_req *h)
{
	Cpuhp__LeaseInfo **list;
	size_t n;

	h->forced = true;
	pin(h);
	n = cpuhpd_revoke_all(d, h->seq, &list);
	if (h->gone) {
		cpuhpd_revoke_list_free(list, n); /* its client left meanwhile */
		unpin(d, h);
		return;
	}
	h->revoked = list;
	h->nrevoked = n;
	if (unpin(d, h))
		cpuhpd_gate_check(d);
}

static void timer_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, hotplug.timer);
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_list *pos;
	struct hotplug_req *first = head(d);

	/* Forcing before its deadline: a grace at least as long as the timeout gives way to it. */
	if (first && force_at(first) <= now && first->deadline > now)
		force(d, first);

	/* Expiring the head grants leases, which can close connections and free requests: rescan.
	 */
again:
	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		if (deadline_counts(d, h) && h->deadline <= now) {
			expire(d, h);
			goto again;
		}
	}
	arm(d);
}

int cpuhpd_hotplug_init(struct cpuhpd *d)
{
	cpuhpd_list_init(&d->hotplug.queue);
	d->hotplug.next_seq = 1;
	return uv_timer_init(d->loop, &d->hotplug.timer);
}

void cpuhpd_hotplug_close(struct cpuhpd *d)
{
	uv_close((uv_handle_t *)&d->hotplug.timer, NULL);
}

/* Whether @c may hotplug; if not, it has been told why.  For SetOnline and SetSmt alike. */
bool cpuhpd_hotplug_allowed(struct cpuhpd_conn *c, uint64_t req_id)
{
	struct cpuhpd *d = c->d;
	char why[CPUHPD_IDENTITY_MAX * 2 + 96];

	if (!c->peer.admin) {
		if (d->opt.admin_group)
			cpuhpd_conn_send_error(c, req_id, EPERM,
			                       "not allowed: hotplug is for root and members of "
			                       "group '%s'; uid %u is neither",
			                       d->opt.admin_group, (unsigned)c->peer.uid);
		else
			cpuhpd_conn_send_error(c, req_id, EPERM,
			                       "not allowed: hotplug is for root only (cpuhpd "
			                       "--admin-group GROUP allows a group); uid %u is not "
			                       "root",
			                       (unsigned)c->peer.uid);
		return false;
	}
	if (cpuhpd_freeze_active(d, why, sizeof(why))) {
		cpuhpd_conn_send_error(c, req_id, EBUSY,
		                       "CPU hotplug is frozen by %s (cpuhpctl freeze); nothing was "
		                       "changed: try again when it is thawed ('cpuhpctl leases' "
		                       "lists freezes)",
		                       why);
		return false;
	}
	return cpuhpd_conn_may_wait(c, req_id);
}

/*
 * A request that the previous cpuhpd had queued, handled again after a
 * restart: it keeps its number, and the time of its notice (the delays and
 * a forced grace count from there; those told are not told again).
 */
static void resume(struct cpuhpd *d, struct hotplug_req *h)
{
	if (!h->conn)
		return; /* cpuhpd's own: the plan is applied anew after a restart */
	for (unsigned i = 0; i < d->hotplug.nresume; i++) {
		const struct cpuhpd_saved_hotplug *r = &d->hotplug.resume[i];

		if (r->conn != h->conn->id || r->req_id != h->req_id || !r->seq)
			continue;
		d->hotplug.next_seq--; /* the one just given */
		h->seq = r->seq;
		if (r->seq >= d->hotplug.next_seq)
			d->hotplug.next_seq = r->seq + 1;
		h->noticed_at = r->noticed_at;
		h->resumed = r->noticed_at != 0;
		return;
	}
}

void cpuhpd_hotplug_save_ids(const struct cpuhpd *d, struct cpuhpd_saved *ids)
{
	ids->next_hotplug_seq = d->hotplug.next_seq;
}

void cpuhpd_hotplug_adopt_ids(struct cpuhpd *d, const struct cpuhpd_saved *s)
{
	if (s->next_hotplug_seq > d->hotplug.next_seq)
		d->hotplug.next_seq = s->next_hotplug_seq;
	if (!s->nhotplugs)
		return;
	d->hotplug.resume = calloc(s->nhotplugs, sizeof(*d->hotplug.resume));
	if (!d->hotplug.resume)
		return; /* they get new numbers, and are announced again */
	memcpy(d->hotplug.resume, s->hotplugs, s->nhotplugs * sizeof(*d->hotplug.resume));
	d->hotplug.nresume = s->nhotplugs;
}

void cpuhpd_hotplug_replayed(struct cpuhpd *d)
{
	free(d->hotplug.resume);
	d->hotplug.resume = NULL;
	d->hotplug.nresume = 0;
}

/* Queue @h: its client (if any) and peer are set; @who for the log line. */
static void queue_req(struct cpuhpd *d, struct hotplug_req *h, uint32_t timeout_ms, const char *who)
{
	h->d = d;
	h->arrived = uv_now(d->loop);
	h->arrived_ns = uv_hrtime();
	h->seq = d->hotplug.next_seq++;
	resume(d, h);
	h->state = HP_QUEUED;
	h->timeout_ms = timeout_ms;
	h->deadline = uv_now(d->loop) + timeout_ms;
	h->job.started = job_started;
	h->job.done = job_done;
	h->job.states = cpuhpd_states_hotplug_cpu;
	h->job.resume = d->resuming;
	atomic_init(&h->job.cancel, false);
	cpuhpd_list_add_tail(&d->hotplug.queue, &h->node);
	d->hotplug.nqueued++;
	cpuhpd_info("hotplug #%" PRIu64 ": %s asks %s, timeout %" PRIu32 " ms", h->seq, who,
	            h->desc, timeout_ms);
	cpuhpd_snapshot_changed(d);
	cpuhpd_fdstore_changed(d);
	if (d->hotplug.nqueued == 1 && !d->stopping)
		activate(d);
	else
		arm(d);
}

/* Queue a checked request: @h's kind, desc, cpus_str and job "in" fields are filled. */
void cpuhpd_hotplug_enqueue(struct cpuhpd_conn *c, uint64_t req_id, struct hotplug_req *h,
                            uint32_t timeout_ms)
{
	char who[64];

	h->conn = c;
	h->peer = c->peer;
	h->req_id = req_id;
	c->npending++;
	snprintf(who, sizeof(who), "client %u (pid %d, uid %u)", c->id, (int)c->peer.pid,
	         (unsigned)c->peer.uid);
	queue_req(c->d, h, timeout_ms, who);
}

int cpuhpd_hotplug_enqueue_own(struct cpuhpd *d, struct hotplug_req *h, uint32_t timeout_ms)
{
	char who[CPUHPD_IDENTITY_MAX * 2 + 96], what[160];

	if (d->stopping)
		return -ECANCELED;
	/* A freeze promises that nothing changes: cpuhpd's own hotplugs wait for its end too. */
	if (cpuhpd_freeze_active(d, who, sizeof(who))) {
		cpuhpd_debug("%s (%s) waits: CPU hotplug is frozen by %s", h->desc, h->own, who);
		return -EBUSY;
	}
	/* In listings, cpuhpd itself asked: its pid, uid and name. */
	h->peer.pid = getpid();
	h->peer.uid = getuid();
	h->peer.gid = getgid();
	h->peer.admin = true;
	snprintf(h->peer.comm, sizeof(h->peer.comm), "cpuhpd");
	snprintf(what, sizeof(what), "cpuhpd itself (%s)", h->own);
	queue_req(d, h, timeout_ms, what);
	return 0;
}

struct hotplug_req *cpuhpd_hotplug_new_cpus(const struct cpuhp_cpuset *set, bool online)
{
	struct hotplug_req *h = calloc(1, sizeof(*h));

	if (h)
		h->cpus_str = cpuhpd_cpus_to_str(set);
	if (!h || !h->cpus_str) {
		free(h);
		return NULL;
	}
	h->kind = CPUHPD_HP_CPUS;
	snprintf(h->desc, sizeof(h->desc), "CPUs %.40s%s %s", h->cpus_str,
	         strlen(h->cpus_str) > 40 ? "..." : "", verb(online));
	h->job.kind = CPUHPD_JOB_HOTPLUG;
	h->job.cpus = *set;
	h->job.online = online;
	return h;
}

bool cpuhpd_hotplug_queued_toward(const struct cpuhpd *d, unsigned cpu, bool online)
{
	const struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		const struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		if (h->kind == CPUHPD_HP_CPUS && h->job.online == online &&
		    cpuhp_cpuset_has(&h->job.cpus, cpu))
			return true;
	}
	return false;
}

bool cpuhpd_hotplug_queued_smt(const struct cpuhpd *d, const char *word)
{
	const struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		const struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		if (h->kind == CPUHPD_HP_SMT && !strcmp(h->job.smt_control, word))
			return true;
	}
	return false;
}

void cpuhpd_hotplug_submit(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__SetOnline *so = req->set_online;
	uint64_t req_id = req->id;
	struct cpuhp_cpuset set;
	struct hotplug_req *h;
	int err;

	if (!cpuhpd_hotplug_allowed(c, req_id))
		return;
	err = cpuhp_cpuset_parse(so->cpus, &set);
	if (err == -ERANGE) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "CPU number too large in '%s' (CPUs are numbered below %u)",
		                       so->cpus, CPUHP_CPUSET_MAX);
		return;
	}
	if (err) {
		cpuhpd_conn_send_error(c, req_id, EINVAL,
		                       "invalid CPU list '%s': expected a range list such as "
		                       "2-3,5",
		                       so->cpus);
		return;
	}
	if (!cpuhp_cpuset_count(&set)) {
		cpuhpd_conn_send_error(c, req_id, EINVAL, "no CPU given: name at least one CPU");
		return;
	}
	if (cpuhp_cpuset_count(&set) > CPUHPD_HOTPLUG_MAX_CPUS) {
		cpuhpd_conn_send_error(c, req_id, ERANGE,
		                       "%u CPUs in one request; the reply can carry at most %u: "
		                       "split the list",
		                       cpuhp_cpuset_count(&set), CPUHPD_HOTPLUG_MAX_CPUS);
		return;
	}
	if (!cpuhpd_plan_admit(c, req_id, &set, so->online, NULL, so->persist))
		return;
	h = cpuhpd_hotplug_new_cpus(&set, so->online);
	if (!h) {
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	h->force = so->force;
	h->force_grace_ms = so->force_grace_ms;
	cpuhpd_hotplug_enqueue(c, req_id, h, so->timeout_ms);
}

void cpuhpd_hotplug_gate_drained(struct cpuhpd *d)
{
	struct hotplug_req *h = head(d);

	if (h && h->state == HP_WAIT_LEASES)
		to_worker(d, h);
}

void cpuhpd_hotplug_gate_counted(struct cpuhpd *d)
{
	struct hotplug_req *h = head(d);

	/* The fast leases are counted and some source still holds something: it waits. */
	if (h && h->state == HP_WAIT_LEASES && !h->noticed && !cpuhpd_gate_counting(d))
		pending(d, h);
	arm(d);
}

static void job_started(struct cpuhpd *d, struct cpuhpd_job *job)
{
	struct hotplug_req *h = cpuhpd_container_of(job, struct hotplug_req, job);

	h->state = HP_RUNNING;
	h->started = true;
	if (h->kind == CPUHPD_HP_SMT) {
		/* The worker has found the siblings; watchers see them like an offline's CPUs. */
		char *s = cpuhpd_cpus_to_str(&job->cpus);

		if (s) {
			free(h->cpus_str);
			h->cpus_str = s;
		}
	}
	cpuhpd_snapshot_changed(d);
	cpuhpd_debug("hotplug #%" PRIu64 ": writing sysfs", h->seq);
	cpuhpd_watch_hotplug_started(d, h->cpus_str, job->online);
}

static void job_done(struct cpuhpd *d, struct cpuhpd_job *job)
{
	struct hotplug_req *h = cpuhpd_container_of(job, struct hotplug_req, job);
	struct cpuhpd_conn *c = unlink_req(d, h);

	/*
	 * The fast path opens before the answer goes out: a client that reads
	 * it and takes a lease at once gets it, as a socket acquire would (it is
	 * served after this callback, when leave_head() has opened the gate).
	 */
	cpuhpd_gate_writer_done(d);

	cpuhpd_hotplug_reply(d, h, c);
	cpuhpd_states_hotplug_end(d);
	tell_owner(d, h, -h->job.err);
	destroy_req(h);
	leave_head(d);
	if (d->hotplug.settled)
		d->hotplug.settled(d);
}

void cpuhpd_hotplug_conn_gone(struct cpuhpd_conn *c)
{
	struct cpuhpd *d = c->d;
	struct cpuhpd_list *pos;

again:
	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		bool was_active = h->state == HP_WAIT_LEASES;

		if (h->conn != c)
			continue;
		if (h->state >= HP_WORKER) {
			/* It runs to the end; only its answer is lost. */
			c->npending--;
			h->conn = NULL;
			continue;
		}
		cpuhpd_info("hotplug #%" PRIu64 " dropped: its client %u disconnected", h->seq,
		            c->id);
		cpuhpd_hotplug_count(d, h, CPUHPD_HP_DROPPED);
		unlink_req(d, h);
		/* Out of the queue first: what the notices close cannot find it. */
		cpuhpd_notice_cancelled(d, h, ECANCELED,
		                        "withdrawn: its client disconnected; nothing was changed");
		destroy_req(h);
		if (was_active)
			leave_head(d);
		goto again;
	}
}

void cpuhpd_hotplug_cancel(struct cpuhpd *d)
{
	struct cpuhpd_list *pos;

	/* An answer can close a client, which can free other requests: rescan after each. */
again:
	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);
		struct cpuhpd_conn *c;

		if (h->state >= HP_WORKER) {
			/* Waiting for in-process readers: gives up once it has the lock. */
			atomic_store(&h->job.cancel, true);
			continue;
		}
		if (h->state == HP_WAIT_LEASES)
			cpuhpd_revoke_over(d);
		c = unlink_req(d, h);
		cpuhpd_hotplug_count(d, h, CPUHPD_HP_CANCELED);
		cpuhpd_hotplug_reply_error(h, c, ECANCELED,
		                           "cpuhpd is shutting down; nothing was changed");
		tell_owner(d, h, ECANCELED);
		destroy_req(h);
		goto again;
	}
	uv_timer_stop(&d->hotplug.timer);
}

void cpuhpd_hotplug_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s)
{
	const struct hotplug_req *h = head(d);

	s->hotplugs_queued = d->hotplug.nqueued;
	s->hotplug_seq = h ? h->seq : 0;
	s->writer = !h                       ? CPUHP__WRITER_STATE__WRITER_IDLE
	            : h->state == HP_RUNNING ? CPUHP__WRITER_STATE__WRITER_RUNNING
	                                     : CPUHP__WRITER_STATE__WRITER_WAITING;
}

/* @h's state as listings name it. */
static Cpuhp__WriterState listed_state(const struct hotplug_req *h)
{
	return h->state == HP_QUEUED    ? CPUHP__WRITER_STATE__WRITER_IDLE
	       : h->state == HP_RUNNING ? CPUHP__WRITER_STATE__WRITER_RUNNING
	                                : CPUHP__WRITER_STATE__WRITER_WAITING;
}

void cpuhpd_hotplug_cpu_info(const struct cpuhpd *d, Cpuhp__CpuInfo *ci)
{
	const struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		const struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		/* SMT: the worker writes ->job.cpus until "started"; it only reads them after. */
		if ((h->kind == CPUHPD_HP_SMT && !h->started) ||
		    !cpuhp_cpuset_has(&h->job.cpus, ci->cpu))
			continue;
		if (!ci->hotplugs++) {
			ci->hotplug_seq = h->seq;
			ci->hotplug_online = h->job.online;
			ci->hotplug_state = listed_state(h);
		}
	}
}

int cpuhpd_hotplug_list(const struct cpuhpd *d, Cpuhp__LeaseList *out)
{
	const struct cpuhpd_list *pos;
	uint64_t now = uv_now(d->loop);
	size_t n = 0;

	out->n_hotplugs = 0;
	out->hotplugs = calloc(d->hotplug.nqueued + 1, sizeof(*out->hotplugs));
	if (!out->hotplugs)
		return -ENOMEM;
	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		const struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);
		Cpuhp__HotplugInfo *hi = calloc(1, sizeof(*hi));

		if (!hi)
			return -ENOMEM; /* the caller frees what is there */
		cpuhp__hotplug_info__init(hi);
		out->hotplugs[n++] = hi;
		out->n_hotplugs = n;
		hi->seq = h->seq;
		hi->cpus = h->cpus_str;
		hi->online = h->job.online;
		hi->state = listed_state(h);
		hi->pid = (uint32_t)h->peer.pid;
		hi->uid = (uint32_t)h->peer.uid;
		hi->comm = (char *)h->peer.comm;
		hi->waited_ms = now > h->arrived ? now - h->arrived : 0;
		hi->timeout_ms = h->timeout_ms;
		hi->reason = (char *)(h->own ? h->own : "");
		hi->force = h->force;
		hi->force_grace_ms = h->force_grace_ms;
		hi->smt = h->kind == CPUHPD_HP_SMT ? (char *)h->job.smt_control : (char *)"";
	}
	return 0;
}

bool cpuhpd_hotplug_in_worker(const struct cpuhpd *d)
{
	const struct hotplug_req *h = head(d);

	return h && h->state >= HP_WORKER;
}

void cpuhpd_hotplug_hold(struct cpuhpd *d)
{
	struct hotplug_req *h = head(d);

	/* Waiting for in-process readers: gives up (ECANCELED) once it has the lock. */
	if (h && h->state >= HP_WORKER)
		atomic_store(&h->job.cancel, true);
	uv_timer_stop(&d->hotplug.timer);
}

/* @h as the request its client sent, its timeout what is left of it. */
static void save_req(struct cpuhpd *d, FILE *f, const struct hotplug_req *h)
{
	Cpuhp__Request rq = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
	Cpuhp__SetSmt ss = CPUHP__SET_SMT__INIT;
	uint64_t now = uv_now(d->loop);
	uint32_t left = h->deadline > now ? (uint32_t)(h->deadline - now) : 1;

	rq.id = h->req_id;
	if (h->kind == CPUHPD_HP_SMT) {
		ss.control = (char *)h->job.smt_control;
		ss.timeout_ms = h->timeout_ms ? left : 0;
		ss.force = h->force;
		ss.force_grace_ms = h->force_grace_ms;
		rq.body_case = CPUHP__REQUEST__BODY_SET_SMT;
		rq.set_smt = &ss;
	} else {
		so.cpus = h->cpus_str;
		so.online = h->job.online;
		so.timeout_ms = h->timeout_ms ? left : 0;
		so.force = h->force;
		so.force_grace_ms = h->force_grace_ms;
		rq.body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
		rq.set_online = &so;
	}
	/* Its number and its notice, which the next cpuhpd keeps (resume()). */
	fprintf(f, "hotplug %u %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", h->conn->id, h->req_id,
	        h->seq, h->noticed ? h->noticed_at : 0);
	cpuhpd_fdstore_put_request(f, h->conn->id, &rq, h->state >= HP_WORKER);
}

void cpuhpd_hotplug_save(struct cpuhpd *d, FILE *f)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->hotplug.queue)
	{
		const struct hotplug_req *h = cpuhpd_container_of(pos, struct hotplug_req, node);

		if (h->conn && h->conn->stored && !h->conn->closing)
			save_req(d, f, h);
	}
}
