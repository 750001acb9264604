/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Admission, client memory and the request timeout; see admit.h. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "admit.h"
#include "conn.h"

/*
 * Hand memory back once what is buffered fell by at least this much, and
 * to half or less, from its high mark since the last trim: a drain of B
 * bytes trims about log2(B / TRIM_MIN) times, and a steady trickle of
 * replies (each charged, then uncharged as its write completes) never,
 * however many bytes it frees in all.
 */
#define TRIM_MIN (256u << 10)
/*
 * What clients leave when they go (a connection, a lease's names, a
 * freeze) is looked at this long after the first of them: the heap as
 * glibc counts it, by the same rule.
 */
#define HEAP_LOOK_MS 1000

static struct cpuhpd_list *bucket(struct cpuhpd *d, uid_t uid)
{
	return &d->admit.uids[(uid ^ (uid >> 8) ^ (uid >> 16)) % CPUHPD_ADMIT_BUCKETS];
}

static struct cpuhpd_admit_uid *uid_get(struct cpuhpd *d, uid_t uid, bool create)
{
	struct cpuhpd_list *b = bucket(d, uid);
	struct cpuhpd_admit_uid *u;

	for (struct cpuhpd_list *n = b->next; n != b; n = n->next) {
		u = cpuhpd_container_of(n, struct cpuhpd_admit_uid, node);
		if (u->uid == uid)
			return u;
	}
	if (!create || !(u = calloc(1, sizeof(*u))))
		return NULL;
	u->uid = uid;
	cpuhpd_list_add_tail(b, &u->node);
	return u;
}

static void uid_put(struct cpuhpd_admit_uid *u)
{
	if (u->nrefs == 0) {
		cpuhpd_list_del(&u->node);
		free(u);
	}
}

/* Root and admins may use the reserves; everyone else stops short of them. */
static bool privileged(const struct cpuhpd_conn *c)
{
	return c->peer.uid == 0 || c->peer.admin;
}

static void on_timer(uv_timer_t *t);

static void timer_arm(struct cpuhpd *d)
{
	struct cpuhpd_list *n = cpuhpd_list_first(&d->admit.partial);
	uint64_t now = uv_now(d->loop), due;
	struct cpuhpd_conn *c;

	if (!n || !d->admit.timer_open)
		return;
	c = cpuhpd_container_of(n, struct cpuhpd_conn, admit.partial_node);
	due = c->admit.partial_since + d->opt.client_timeout_ms;
	uv_timer_start(&d->admit.timer, on_timer, due > now ? due - now : 0, 0);
}

static void on_timer(uv_timer_t *t)
{
	struct cpuhpd *d = t->data;
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_list *n;

	while ((n = cpuhpd_list_first(&d->admit.partial))) {
		struct cpuhpd_conn *c =
		    cpuhpd_container_of(n, struct cpuhpd_conn, admit.partial_node);
		char why[128];

		if (c->admit.partial_since + d->opt.client_timeout_ms > now)
			break;
		snprintf(why, sizeof(why),
		         "request incomplete %u ms after its first byte (--client-timeout-ms %u)",
		         (unsigned)(now - c->admit.partial_since), d->opt.client_timeout_ms);
		/* Closing takes it off the list (cpuhpd_admit_conn_gone). */
		d->admit.timed_out(c, why);
	}
	timer_arm(d);
}

int cpuhpd_admit_init(struct cpuhpd *d)
{
	int err;

	for (unsigned i = 0; i < CPUHPD_ADMIT_BUCKETS; i++)
		cpuhpd_list_init(&d->admit.uids[i]);
	cpuhpd_list_init(&d->admit.partial);
	err = uv_timer_init(d->loop, &d->admit.timer);
	if (err) {
		cpuhpd_err("cannot make the client timeout timer: %s", uv_strerror(err));
		return err;
	}
	d->admit.timer.data = d;
	err = uv_timer_init(d->loop, &d->admit.heap_timer);
	if (err) {
		uv_close((uv_handle_t *)&d->admit.timer, NULL);
		cpuhpd_err("cannot make the heap timer: %s", uv_strerror(err));
		return err;
	}
	d->admit.timer_open = true;
	return 0;
}

void cpuhpd_admit_close(struct cpuhpd *d)
{
	if (!d->admit.timer_open)
		return;
	d->admit.timer_open = false;
	uv_close((uv_handle_t *)&d->admit.timer, NULL);
	uv_close((uv_handle_t *)&d->admit.heap_timer, NULL);
}

/* Bytes of the heap in use, as glibc counts them (mallinfo2() walks its bins). */
static size_t heap_used(void)
{
	return mallinfo2().uordblks;
}

static void heap_look(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, admit.heap_timer);
	struct cpuhpd_admit *a = &d->admit;
	size_t used = heap_used();

	if (a->heap_high - used < TRIM_MIN || used > a->heap_high / 2) {
		/* Not yet: the high mark stays, until a trim or a higher one. */
		if (used > a->heap_high)
			a->heap_high = used;
		return;
	}
	malloc_trim(0);
	a->ntrims++;
	cpuhpd_debug("the heap fell from %zu to %zu bytes in use: memory handed back to the "
	             "system (trim %u)",
	             a->heap_high, used, a->ntrims);
	a->heap_high = used;
}

void cpuhpd_admit_dropped(struct cpuhpd *d)
{
	struct cpuhpd_admit *a = &d->admit;
	size_t used;

	if (!a->timer_open || uv_is_active((uv_handle_t *)&a->heap_timer))
		return;
	/* The first of a wave: the heap is about as high as it got. */
	used = heap_used();
	if (used > a->heap_high)
		a->heap_high = used;
	uv_timer_start(&a->heap_timer, heap_look, HEAP_LOOK_MS, 0);
}

int cpuhpd_admit_conn(struct cpuhpd_conn *c, char *why, size_t whylen)
{
	struct cpuhpd *d = c->d;
	const struct cpuhpd_options *o = &d->opt;
	struct cpuhpd_admit_uid *u;

	if (d->nconns >= o->max_connections) {
		snprintf(
		    why, whylen,
		    "too many connections (the limit is %u, --max-connections); try again later",
		    o->max_connections);
		return -EUSERS;
	}
	u = uid_get(d, c->peer.uid, true);
	if (!u) {
		snprintf(why, whylen, "cpuhpd is out of memory");
		return -ENOMEM;
	}
	if (c->peer.uid != 0 && u->nconns >= o->max_connections_per_uid) {
		/* A process with many states meets the cap first: say why (daemon/cpuhpd/README.md,
		 * "Hotplug states"). */
		unsigned nstates =
		    d->admit.states_of_uid ? d->admit.states_of_uid(d, c->peer.uid) : 0;

		if (nstates)
			snprintf(why, whylen,
			         "too many connections from uid %u (the limit is %u per uid, "
			         "--max-connections-per-uid; its %u hotplug state%s take%s one "
			         "each: libcpuhp-client gives every state a connection of its "
			         "own); close some, or raise the limit",
			         (unsigned)c->peer.uid, o->max_connections_per_uid, nstates,
			         nstates == 1 ? "" : "s", nstates == 1 ? "s" : "");
		else
			snprintf(why, whylen,
			         "too many connections from uid %u (the limit is %u per uid, "
			         "--max-connections-per-uid); close some",
			         (unsigned)c->peer.uid, o->max_connections_per_uid);
		uid_put(u);
		return -EUSERS;
	}
	if (!privileged(c) && d->nconns >= o->max_connections - o->reserved_connections) {
		snprintf(why, whylen,
		         "too many connections: the last %u of the %u (--max-connections) are kept "
		         "for root and --admin-group (--reserved-connections); try again later",
		         o->reserved_connections, o->max_connections);
		uid_put(u);
		return -EUSERS;
	}
	u->nconns++;
	u->nrefs++;
	c->admit.uid = u;
	cpuhpd_list_init(&c->admit.partial_node);
	return 0;
}

void cpuhpd_admit_conn_gone(struct cpuhpd_conn *c)
{
	if (!c->admit.uid)
		return;
	cpuhpd_list_del(&c->admit.partial_node);
	c->admit.uid->nconns--;
}

void cpuhpd_admit_conn_freed(struct cpuhpd_conn *c)
{
	struct cpuhpd_admit_uid *u = c->admit.uid;

	if (!u)
		return;
	if (c->admit.inbuf)
		cpuhpd_admit_uncharge(c, c->admit.inbuf);
	c->admit.inbuf = 0;
	c->admit.uid = NULL;
	u->nrefs--;
	uid_put(u);
	cpuhpd_admit_dropped(c->d);
}

bool cpuhpd_admit_charge(struct cpuhpd_conn *c, size_t bytes, char *why, size_t whylen)
{
	struct cpuhpd *d = c->d;
	const struct cpuhpd_options *o = &d->opt;
	struct cpuhpd_admit *a = &d->admit;
	struct cpuhpd_admit_uid *u = c->admit.uid;
	size_t limit = o->max_buffered;

	if (c->peer.uid != 0 && u->buffered + bytes > o->max_buffered_per_uid) {
		snprintf(why, whylen,
		         "uid %u would have over %zu bytes buffered in cpuhpd "
		         "(--max-buffered-bytes-per-uid): read your replies, send whole requests",
		         (unsigned)c->peer.uid, o->max_buffered_per_uid);
		return false;
	}
	if (!privileged(c))
		limit -= limit / 8;
	if (a->buffered + bytes > limit) {
		snprintf(why, whylen,
		         "cpuhpd would have over %zu bytes buffered for its clients "
		         "(--max-buffered-bytes%s)",
		         limit, privileged(c) ? "" : ", less the eighth kept for root and admins");
		return false;
	}
	u->buffered += bytes;
	a->buffered += bytes;
	if (a->buffered > a->high)
		a->high = a->buffered;
	return true;
}

void cpuhpd_admit_uncharge(struct cpuhpd_conn *c, size_t bytes)
{
	struct cpuhpd_admit *a = &c->d->admit;

	c->admit.uid->buffered -= bytes;
	a->buffered -= bytes;
	a->freed += bytes;
	/*
	 * glibc keeps freed chunks for reuse and returns only the top of the heap
	 * by itself; after a drain most pages are free but below live chunks.
	 * malloc_trim() releases every free page of every arena (madvise).
	 */
	if (a->high - a->buffered >= TRIM_MIN && a->buffered <= a->high / 2) {
		malloc_trim(0);
		a->ntrims++;
		cpuhpd_debug("%zu bytes of client buffers freed, %zu still buffered: memory "
		             "handed back to the system (trim %u)",
		             a->freed, a->buffered, a->ntrims);
		a->freed = 0;
		a->high = a->buffered;
	}
}

void cpuhpd_admit_read_done(struct cpuhpd_conn *c, bool began, bool idle)
{
	struct cpuhpd *d = c->d;
	bool listed = !cpuhpd_list_empty(&c->admit.partial_node);

	if (c->closing || d->opt.client_timeout_ms == 0)
		return;
	if (idle) {
		cpuhpd_list_del(&c->admit.partial_node);
		return;
	}
	if (listed && !began)
		return; /* the same frame goes on: its clock keeps running */
	cpuhpd_list_del(&c->admit.partial_node);
	/* The loop's time is that of this read, and later than that of every frame listed. */
	c->admit.partial_since = uv_now(d->loop);
	cpuhpd_list_add_tail(&d->admit.partial, &c->admit.partial_node);
	if (!uv_is_active((uv_handle_t *)&d->admit.timer))
		timer_arm(d);
}
