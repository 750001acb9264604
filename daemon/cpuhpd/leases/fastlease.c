/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fast leases: the cross-process read side of the hotplug lock, with cpuhpd
 * as the writer.
 *
 * The protocol (memory, reader, writer, the barrier table P-Z, the
 * security argument, the daemon's death) is proto/FASTPATH.md; the labels
 * below are its.  Here: the header and the regions (seal_map, region_new,
 * cpuhpd_fastpath_request: V), the fast-path thread that runs Q's
 * membarrier off the loop, the sums (S) and undrained regions, FastWake
 * (W), "open" again (U), a region's leases revoked (L), and the robust
 * state word.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/membarrier.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "core/gate.h"
#include "delay.h"
#include "fastlease.h"

#define REGION_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

struct cpuhpd_fast_region {
	struct cpuhpd_list node; /* in fast.regions */
	struct cpuhpd_conn *conn;
	struct cpuhp__fast_region *map;
	size_t size;
	unsigned nslots;
	bool undrained;    /* meaningful while fast.counted */
	uint32_t delay_ms; /* its leases' delay (FastPathRequest); 0: block leases */
	/*
	 * A slot read what no honest client can write (below 0, over
	 * CPUHP__FAST_SLOT_MAX_LEASES): the connection is closed from the
	 * police timer.  Until then the region counts as holding leases.
	 */
	bool bad;
	unsigned bad_slot;
	int64_t bad_value;
	/*
	 * Adopted from the previous cpuhpd (a restart): its client's header is
	 * that daemon's, never "open" again, so the region only drains (its
	 * client takes no new fast lease there) and its releases send no
	 * FastWake: oldpoll sums it while a hotplug waits for it.
	 */
	bool old;
};

/* How often a hotplug that waits for an adopted region sums it again. */
#define OLD_POLL_MS 10

static int membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

static const char *mode_name(enum cpuhpd_fast_mode m)
{
	switch (m) {
	case CPUHPD_FAST_EXPEDITED:
		return "membarrier-global-expedited";
	case CPUHPD_FAST_GLOBAL:
		return "membarrier-global";
	case CPUHPD_FAST_FENCE:
		return "fence";
	default:
		return "off";
	}
}

int cpuhpd_fast_mode_parse(const char *s, enum cpuhpd_fast_mode *out)
{
	static const struct {
		const char *name;
		enum cpuhpd_fast_mode mode;
	} names[] = {
	    {"auto", CPUHPD_FAST_AUTO},           {"off", CPUHPD_FAST_OFF},
	    {"expedited", CPUHPD_FAST_EXPEDITED}, {"global", CPUHPD_FAST_GLOBAL},
	    {"fence", CPUHPD_FAST_FENCE},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i].name)) {
			*out = names[i].mode;
			return 0;
		}
	}
	return -EINVAL;
}

/* The mode asked for, if this kernel can do it; AUTO takes the cheapest that works. */
static int choose_mode(enum cpuhpd_fast_mode want, enum cpuhpd_fast_mode *out)
{
	int mask = membarrier(MEMBARRIER_CMD_QUERY);
	bool expedited, global;

	if (mask < 0)
		mask = 0;
	expedited = (mask & MEMBARRIER_CMD_GLOBAL_EXPEDITED) &&
	            (mask & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
	global = mask & MEMBARRIER_CMD_GLOBAL;
	switch (want) {
	case CPUHPD_FAST_AUTO:
		*out = expedited ? CPUHPD_FAST_EXPEDITED
		       : global  ? CPUHPD_FAST_GLOBAL
		                 : CPUHPD_FAST_FENCE;
		return 0;
	case CPUHPD_FAST_EXPEDITED:
		if (!expedited) {
			cpuhpd_err("--fast-path expedited: this kernel does not offer "
			           "MEMBARRIER_CMD_GLOBAL_EXPEDITED (query mask 0x%x); use auto",
			           (unsigned)mask);
			return -EOPNOTSUPP;
		}
		break;
	case CPUHPD_FAST_GLOBAL:
		if (!global) {
			cpuhpd_err("--fast-path global: this kernel does not offer "
			           "MEMBARRIER_CMD_GLOBAL (query mask 0x%x); use auto",
			           (unsigned)mask);
			return -EOPNOTSUPP;
		}
		break;
	default:
		break;
	}
	*out = want;
	return 0;
}

/* ------------------------------------------------------- the fast-path thread */

static int barrier_cmd(enum cpuhpd_fast_mode m)
{
	return m == CPUHPD_FAST_EXPEDITED ? MEMBARRIER_CMD_GLOBAL_EXPEDITED : MEMBARRIER_CMD_GLOBAL;
}

/*
 * Owns the robust state word for the daemon's lifetime, and runs the
 * membarriers (up to milliseconds with MEMBARRIER_CMD_GLOBAL) off the loop.
 */
static void fast_thread(void *arg)
{
	struct cpuhpd_fastpath *fp = arg;
	int err = 0;

	fp->rentry.next = &fp->rhead.list;
	fp->rhead.list.next = &fp->rentry;
	fp->rhead.futex_offset = (long)((char *)&fp->hdr->state - (char *)&fp->rentry);
	fp->rhead.list_op_pending = NULL;
	/*
	 * This thread never takes a robust pthread mutex, so replacing glibc's
	 * (empty) list for it loses nothing.
	 */
	if (syscall(SYS_set_robust_list, &fp->rhead, sizeof(fp->rhead)))
		err = errno;

	uv_mutex_lock(&fp->lock);
	fp->tid = (pid_t)syscall(SYS_gettid);
	fp->thread_err = err;
	uv_cond_broadcast(&fp->cond);
	while (!err && !fp->quit) {
		uint64_t phase;

		if (fp->want == fp->done) {
			uv_cond_wait(&fp->cond, &fp->lock);
			continue;
		}
		phase = fp->want;
		uv_mutex_unlock(&fp->lock);
		/* Q: every reader thread executes a full barrier in here (pairs with P, T). */
		if (membarrier(barrier_cmd(fp->mode))) {
			err = errno;
			/* GLOBAL needs no registration and is at least as strong. */
			if (!membarrier(MEMBARRIER_CMD_GLOBAL))
				err = 0;
		}
		uv_mutex_lock(&fp->lock);
		fp->barrier_err = err;
		fp->done = phase;
		uv_async_send(&fp->async);
	}
	uv_mutex_unlock(&fp->lock);
}

/* ------------------------------------------------------------------- counting */

/*
 * One slot's leases (proto/fastpath.h): ->count - ->released, in modular
 * arithmetic (both only ever move by one, and ->released only grows).
 * ->released is read before ->count and again after: every release seen
 * in the first read had its acquire counted before it, so @hi (against the
 * first) is never below 0 for an honest client and never below the leases
 * really held (what the hotplug waits for); every entry reuse seen in
 * ->count follows the release that freed it, which the second read sees,
 * so @lo (against the second) never exceeds the per-slot limit.
 * S: acquire loads, so that a zero seen here orders the reader's section
 * (R) first; Z (pairs with X and Y).
 * Return: false if the slot holds what no honest client can write.
 */
static bool slot_read(const struct cpuhp__fast_slot *sl, int64_t *hi)
{
	uint32_t r1 = (uint32_t)atomic_load_explicit(&sl->released, memory_order_acquire);
	uint32_t c = (uint32_t)atomic_load_explicit(&sl->count, memory_order_acquire);
	uint32_t r2 = (uint32_t)atomic_load_explicit(&sl->released, memory_order_acquire);
	int32_t h = (int32_t)(c - r1), lo = (int32_t)(c - r2);

	*hi = h;
	return h >= 0 && lo <= CPUHP__FAST_SLOT_MAX_LEASES;
}

static void police_arm(struct cpuhpd *d);
static void old_poll_arm(struct cpuhpd *d);

/*
 * The region's leases; a slot no honest client can produce marks the
 * region bad (its connection is closed soon, police_cb) and counts as
 * one lease held meanwhile, so that it neither unblocks nor releases a
 * hotplug by itself.
 */
static int64_t region_sum(struct cpuhpd *d, struct cpuhpd_fast_region *r)
{
	int64_t sum = 0, v;

	for (unsigned i = 0; i < r->nslots; i++) {
		if (slot_read(&r->map->slot[i], &v)) {
			sum += v;
			continue;
		}
		if (!r->bad) {
			r->bad = true;
			r->bad_slot = i;
			r->bad_value = v;
			police_arm(d);
		}
	}
	return r->bad ? (sum > 0 ? sum : 1) : sum;
}

/* The police timer: close every connection whose region went bad. */
static void police_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, fast.police);
	struct cpuhpd_list *pos;

	/* Closing may close others (a hotplug answered, its client gone): walk again each time. */
again:
	cpuhpd_list_for_each(pos, &d->fast.regions)
	{
		struct cpuhpd_fast_region *r =
		    cpuhpd_container_of(pos, struct cpuhpd_fast_region, node);
		struct cpuhpd_conn *c = r->conn;

		if (!r->bad)
			continue;
		cpuhpd_warn("client %u (pid %d, uid %u): protocol violation: fast-path slot %u "
		            "says %lld leases (0 to %d possible: a double or forged release, or "
		            "the slot written by hand); closing the connection, its leases end",
		            c->id, (int)c->peer.pid, (unsigned)c->peer.uid, r->bad_slot,
		            (long long)r->bad_value, CPUHP__FAST_SLOT_MAX_LEASES);
		cpuhpd_conn_fail(c, 0, EPROTO,
		                 "protocol violation: fast-path slot %u says %lld leases (0 to %d "
		                 "possible)",
		                 r->bad_slot, (long long)r->bad_value, CPUHP__FAST_SLOT_MAX_LEASES);
		goto again;
	}
}

static void police_arm(struct cpuhpd *d)
{
	if (d->fast.police_on && !uv_is_active((uv_handle_t *)&d->fast.police))
		uv_timer_start(&d->fast.police, police_cb, 0, 0);
}

void cpuhpd_fastpath_police(struct cpuhpd *d)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->fast.regions)
	{
		region_sum(d, cpuhpd_container_of(pos, struct cpuhpd_fast_region, node));
	}
}

/* Sum again each adopted region still undrained: their clients send no FastWake. */
static void old_poll_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, fast.oldpoll);
	struct cpuhpd_fastpath *fp = &d->fast;
	struct cpuhpd_list *pos;
	bool left = false;

	if (!fp->blocked || !fp->counted) {
		uv_timer_stop(t);
		return;
	}
	cpuhpd_list_for_each(pos, &fp->regions)
	{
		struct cpuhpd_fast_region *r =
		    cpuhpd_container_of(pos, struct cpuhpd_fast_region, node);

		if (!r->old || !r->undrained)
			continue;
		/* S: acquire loads; the decrement (R) was a release store of the client's. */
		if (region_sum(d, r) != 0) {
			left = true;
			continue;
		}
		r->undrained = false;
		fp->undrained--;
	}
	if (!left)
		uv_timer_stop(t);
	if (!fp->undrained)
		cpuhpd_gate_check(d);
}

static void old_poll_arm(struct cpuhpd *d)
{
	struct cpuhpd_fastpath *fp = &d->fast;
	struct cpuhpd_list *pos;

	if (!fp->police_on || uv_is_active((uv_handle_t *)&fp->oldpoll))
		return;
	cpuhpd_list_for_each(pos, &fp->regions)
	{
		struct cpuhpd_fast_region *r =
		    cpuhpd_container_of(pos, struct cpuhpd_fast_region, node);

		if (r->old && r->undrained) {
			uv_timer_start(&fp->oldpoll, old_poll_cb, OLD_POLL_MS, OLD_POLL_MS);
			return;
		}
	}
}

/* After Q: judge every region. */
static void count_all(struct cpuhpd *d)
{
	struct cpuhpd_fastpath *fp = &d->fast;
	struct cpuhpd_list *pos;

	fp->undrained = 0;
	cpuhpd_list_for_each(pos, &fp->regions)
	{
		struct cpuhpd_fast_region *r =
		    cpuhpd_container_of(pos, struct cpuhpd_fast_region, node);

		r->undrained = region_sum(d, r) != 0;
		fp->undrained += r->undrained;
	}
	fp->counted = true;
	if (fp->undrained)
		cpuhpd_debug("fast path: %u connection(s) hold fast leases; the hotplug waits "
		             "for them",
		             fp->undrained);
	old_poll_arm(d);
}

static void async_cb(uv_async_t *a)
{
	struct cpuhpd *d = cpuhpd_container_of(a, struct cpuhpd, fast.async);
	struct cpuhpd_fastpath *fp = &d->fast;
	uint64_t done;
	int err;

	uv_mutex_lock(&fp->lock);
	done = fp->done;
	err = fp->barrier_err;
	uv_mutex_unlock(&fp->lock);
	if (err) {
		/*
		 * It worked at start; without it no sum can be trusted, and a
		 * hotplug under a lease is worse than a restart (clients see the
		 * state word die with us and fall back to the socket).
		 */
		cpuhpd_err("membarrier failed after it worked at start: %s; cannot order fast "
		           "leases, aborting",
		           strerror(err));
		abort();
	}
	/* Stale when the gate opened (and maybe closed again) since it was asked. */
	if (!fp->blocked || fp->counted || done < fp->phase)
		return;
	/*
	 * Q, the sums' side (pairs with P and T): the membarrier returned
	 * before this (fp->lock orders it); the fence keeps every load of the
	 * sums after it on this thread too.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	count_all(d);
	cpuhpd_gate_counted(d);
}

/* ---------------------------------------------------------------- the gate */

void cpuhpd_fastpath_block(struct cpuhpd *d)
{
	struct cpuhpd_fastpath *fp = &d->fast;

	if (fp->mode == CPUHPD_FAST_OFF)
		return;
	fp->blocked = true;
	fp->counted = false;
	fp->phase++;
	/*
	 * Q (pairs with P and T), and V: "blocked" before the barrier, the sums
	 * and any later grant.
	 */
	atomic_store_explicit(&fp->hdr->state, fp->open | CPUHP__FAST_BLOCKED,
	                      memory_order_seq_cst);
	if (!fp->nregions) {
		/* Nobody to order: regions granted from now on hold nothing (V). */
		fp->counted = true;
		fp->undrained = 0;
		return;
	}
	if (fp->mode == CPUHPD_FAST_FENCE) {
		/* Q in FENCE mode: "blocked", fence, sums; pairs with the readers' fences P, T. */
		atomic_thread_fence(memory_order_seq_cst);
		count_all(d);
		return;
	}
	uv_mutex_lock(&fp->lock);
	fp->want = fp->phase;
	uv_cond_signal(&fp->cond);
	uv_mutex_unlock(&fp->lock);
}

void cpuhpd_fastpath_unblock(struct cpuhpd *d)
{
	struct cpuhpd_fastpath *fp = &d->fast;

	/* Twice per hotplug: before its answer, and when the gate opens. */
	if (fp->mode == CPUHPD_FAST_OFF || !fp->blocked)
		return;
	fp->blocked = false;
	fp->counted = false;
	/* U: the hotplug's section before "open"; pairs with P's acquire load of the state. */
	atomic_store_explicit(&fp->hdr->state, d->stopping ? CPUHP__FAST_STOPPED : fp->open,
	                      memory_order_release);
}

bool cpuhpd_fastpath_holding(const struct cpuhpd *d)
{
	const struct cpuhpd_fastpath *fp = &d->fast;

	return fp->mode != CPUHPD_FAST_OFF && (!fp->counted || fp->undrained != 0);
}

bool cpuhpd_fastpath_counting(const struct cpuhpd *d)
{
	const struct cpuhpd_fastpath *fp = &d->fast;

	return fp->mode != CPUHPD_FAST_OFF && fp->blocked && !fp->counted;
}

/* -------------------------------------------------------------- connections */

static void region_free(struct cpuhpd_fast_region *r)
{
	munmap(r->map, r->size);
	free(r);
}

/* A memfd of @size sealed with @seals, mapped writable shared; Return: the fd, or -errno. */
static int seal_map(const char *name, size_t size, int seals, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;
	void *p;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	/* After the mapping: F_SEAL_FUTURE_WRITE leaves this one writable, and only it. */
	if (fcntl(fd, F_ADD_SEALS, seals) < 0) {
		err = -errno;
		munmap(p, size);
		close(fd);
		return err;
	}
	*map = p;
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

static struct cpuhpd_fast_region *region_new(unsigned nslots, int *fd)
{
	struct cpuhpd_fast_region *r = calloc(1, sizeof(*r));
	void *map;

	if (!r)
		return NULL;
	r->nslots = nslots;
	r->size = CPUHP__FAST_REGION_SIZE(nslots);
	*fd = seal_map("cpuhpd-fast-region", r->size, REGION_SEALS, &map);
	if (*fd < 0) {
		free(r);
		return NULL;
	}
	r->map = map;
	r->map->head.nslots = nslots;
	return r;
}

void cpuhpd_fastpath_request(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__FastPathRequest *rq = req->fast_path;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	struct cpuhpd_fastpath *fp = &d->fast;
	Cpuhp__Response resp = CPUHP__RESPONSE__INIT;
	Cpuhp__FastPathGranted g = CPUHP__FAST_PATH_GRANTED__INIT;
	struct cpuhpd_fast_region *r;
	unsigned n = rq->slots;
	int fds[2], err;
	bool clipped;
	uint32_t delay_ms = cpuhpd_delay_grant(d, rq->mode, rq->delay_ms, &clipped);

	if (fp->mode == CPUHPD_FAST_OFF) {
		cpuhpd_conn_send_error(
		    c, req_id, EOPNOTSUPP,
		    "this cpuhpd runs without the fast path (--fast-path off, or "
		    "the kernel lacks memfd sealing); use socket leases");
		return;
	}
	if (!cpuhpd_fastpath_allowed(c)) {
		cpuhpd_conn_send_error(c, req_id, EOPNOTSUPP,
		                       "no fast path under cpuhpd's lease limits (--max-lease-ms, "
		                       "--max-leases-per-uid): use socket leases");
		return;
	}
	if (c->fast) {
		cpuhpd_conn_send_error(c, req_id, EALREADY,
		                       "this connection already has the fast path");
		return;
	}
	/* A region a restart would drop while keeping its connection: a lease lost unseen. */
	if (!cpuhpd_fdstore_has_room(c)) {
		cpuhpd_warn("client %u: no fast path: the fd store is full (%u descriptors, "
		            "--fd-store-max / FileDescriptorStoreMax=); its leases are socket "
		            "leases, which a restart keeps",
		            c->id, d->fdstore.max);
		cpuhpd_conn_send_error(c, req_id, ENOSPC,
		                       "cpuhpd's fd store is full, so a restart would lose a fast "
		                       "lease: use socket leases");
		return;
	}
	if (n < 1)
		n = 1;
	if (n > CPUHP__FAST_MAX_SLOTS)
		n = CPUHP__FAST_MAX_SLOTS;
	r = region_new(n, &fds[1]);
	if (!r) {
		cpuhpd_conn_send_error(c, req_id, ENOMEM,
		                       "cpuhpd cannot create shared memory for the fast path; use "
		                       "socket leases");
		return;
	}
	/*
	 * Counting from now on (a region granted while blocked holds nothing:
	 * V); the client compares the state word with it.
	 */
	atomic_store_explicit(&r->map->head.live, fp->open, memory_order_relaxed);
	r->delay_ms = delay_ms;
	/* V: in the list before the grant, so every later sum includes it. */
	r->conn = c;
	cpuhpd_list_add_tail(&fp->regions, &r->node);
	fp->nregions++;
	c->fast = r;

	g.layout = CPUHP__FAST_LAYOUT;
	g.nslots = n;
	g.barrier = fp->mode == CPUHPD_FAST_EXPEDITED
	                ? CPUHP__FAST_BARRIER__FAST_BARRIER_MEMBARRIER_EXPEDITED
	            : fp->mode == CPUHPD_FAST_GLOBAL
	                ? CPUHP__FAST_BARRIER__FAST_BARRIER_MEMBARRIER_GLOBAL
	                : CPUHP__FAST_BARRIER__FAST_BARRIER_FENCE;
	g.header_size = CPUHP__FAST_HEADER_SIZE;
	g.region_size = (uint32_t)r->size;
	g.mode = delay_ms ? CPUHP__LEASE_MODE__LEASE_DELAY : CPUHP__LEASE_MODE__LEASE_BLOCK;
	g.delay_ms = delay_ms;
	g.delay_clipped = clipped;
	resp.id = req_id;
	resp.body_case = CPUHP__RESPONSE__BODY_FAST_PATH_GRANTED;
	resp.fast_path_granted = &g;
	fds[0] = fp->hdr_fd;
	/* In the fd store (and the state text) before the client can count anything in it. */
	cpuhpd_fdstore_region_new(c, fds[1], n);
	cpuhpd_fdstore_conn_changed(c);
	err = cpuhpd_conn_send_fds(c, &resp, fds, 2);
	/* The client has its own descriptor now (or none): our mapping keeps the memory. */
	close(fds[1]);
	if (err == -EAGAIN) {
		cpuhpd_fastpath_conn_gone(c);
		cpuhpd_fdstore_region_gone(c);
		cpuhpd_fdstore_conn_changed(c);
		cpuhpd_conn_send_error(c, req_id, EBUSY,
		                       "replies are queued ahead on this connection; ask for the "
		                       "fast path again when they are read");
		return;
	}
	if (!err)
		cpuhpd_debug("client %u: fast path granted, %u slot(s)%s", c->id, n,
		             delay_ms ? ", delay leases" : "");
}

void cpuhpd_fastpath_wake(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	(void)req;
	struct cpuhpd_fastpath *fp = &c->d->fast;
	struct cpuhpd_fast_region *r = c->fast;

	/* W: this frame came after the client's slot--; sum its region again. */
	if (!r || !fp->blocked || !fp->counted || !r->undrained || region_sum(c->d, r) != 0)
		return;
	r->undrained = false;
	if (--fp->undrained == 0)
		cpuhpd_gate_check(c->d);
}

void cpuhpd_fastpath_conn_gone(struct cpuhpd_conn *c)
{
	struct cpuhpd_fastpath *fp = &c->d->fast;
	struct cpuhpd_fast_region *r = c->fast;
	bool drained = false;

	if (!r)
		return;
	c->fast = NULL;
	/*
	 * A client still running (we closed it) must not count leases nobody
	 * reads.  No partner: nothing is published with it (L's order is for
	 * a connection that lives on, cpuhpd_fastpath_revoke()).
	 */
	atomic_store_explicit(&r->map->head.live, CPUHP__FAST_LIVE_CLOSED, memory_order_release);
	cpuhpd_list_del(&r->node);
	fp->nregions--;
	if (fp->blocked && fp->counted && r->undrained) {
		cpuhpd_debug("client %u: its fast leases ended with the connection", c->id);
		drained = --fp->undrained == 0;
	}
	region_free(r);
	if (drained)
		cpuhpd_gate_check(c->d);
}

bool cpuhpd_fastpath_conn_waited(const struct cpuhpd_conn *c)
{
	const struct cpuhpd_fastpath *fp = &c->d->fast;

	return c->fast && fp->blocked && fp->counted && c->fast->undrained;
}

uint32_t cpuhpd_fastpath_conn_delay(const struct cpuhpd_conn *c)
{
	return c->fast ? c->fast->delay_ms : 0;
}

static unsigned region_snapshot(const struct cpuhpd_fast_region *r);

unsigned cpuhpd_fastpath_revoke(struct cpuhpd_conn *c)
{
	struct cpuhpd_fastpath *fp = &c->d->fast;
	struct cpuhpd_fast_region *r = c->fast;
	unsigned n;

	if (!cpuhpd_fastpath_conn_waited(c))
		return 0;
	n = region_snapshot(r);
	if (!n) {
		/* Released meanwhile, its FastWake not read yet: nothing to revoke. */
		r->undrained = false;
		fp->undrained--;
		return 0;
	}
	/*
	 * L: "revoked" before the hotplug goes on, and so before U's "open":
	 * a reader whose acquire load of the state sees that "open" then
	 * loads ->live and sees "revoked", and backs out; one that saw the
	 * state before "blocked" was counted in the sum that this revokes
	 * (P/Q).  Nothing counted here is read again: the region is dropped.
	 */
	atomic_store_explicit(&r->map->head.live, CPUHP__FAST_LIVE_REVOKED, memory_order_release);
	c->fast = NULL;
	cpuhpd_list_del(&r->node);
	fp->nregions--;
	r->undrained = false;
	fp->undrained--;
	region_free(r);
	cpuhpd_fdstore_region_gone(c);
	cpuhpd_fdstore_conn_changed(c);
	return n;
}

/* ------------------------------------------------------------------ status */

/*
 * Each slot within what an honest client can hold: a bad slot (a client's
 * bug or lie, whose connection is being closed) shows as at most the
 * limit, never as 2147483647 leases.
 */
static unsigned region_snapshot(const struct cpuhpd_fast_region *r)
{
	int64_t s = 0, v;

	for (unsigned i = 0; i < r->nslots; i++) {
		slot_read(&r->map->slot[i], &v);
		if (v > CPUHP__FAST_SLOT_MAX_LEASES)
			v = CPUHP__FAST_SLOT_MAX_LEASES;
		s += v > 0 ? v : 0;
	}
	return s > UINT32_MAX ? UINT32_MAX : (unsigned)s;
}

static void snapshot(const struct cpuhpd *d, unsigned *held, unsigned *holders)
{
	const struct cpuhpd_list *pos;

	*held = *holders = 0;
	if (d->fast.mode == CPUHPD_FAST_OFF)
		return;
	cpuhpd_list_for_each(pos, &d->fast.regions)
	{
		const struct cpuhpd_fast_region *r =
		    cpuhpd_container_of(pos, struct cpuhpd_fast_region, node);
		unsigned s = region_snapshot(r);

		if (s > 0) {
			*held += s > UINT32_MAX - *held ? UINT32_MAX - *held : s;
			(*holders)++;
		}
	}
}

void cpuhpd_fastpath_bypassed(struct cpuhpd *d)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->fast.regions)
	{
		struct cpuhpd_fast_region *r =
		    cpuhpd_container_of(pos, struct cpuhpd_fast_region, node);

		/* A flag for the client's release, with no data behind it (fastpath.h). */
		atomic_fetch_add_explicit(&r->map->head.bypasses, 1, memory_order_relaxed);
	}
}

unsigned cpuhpd_fastpath_conn_held(const struct cpuhpd_conn *c)
{
	return c->fast ? region_snapshot(c->fast) : 0;
}

unsigned cpuhpd_fastpath_conn_look(struct cpuhpd_conn *c, uint64_t now)
{
	unsigned held = cpuhpd_fastpath_conn_held(c);

	if (!held)
		c->fast_since = 0;
	else if (!c->fast_since)
		c->fast_since = now ? now : 1;
	return held;
}

void cpuhpd_fastpath_look(struct cpuhpd *d)
{
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_list *pos;

	if (d->fast.mode == CPUHPD_FAST_OFF)
		return;
	cpuhpd_list_for_each(pos, &d->fast.regions)
	{
		struct cpuhpd_fast_region *r =
		    cpuhpd_container_of(pos, struct cpuhpd_fast_region, node);

		if (r->conn)
			cpuhpd_fastpath_conn_look(r->conn, now);
	}
}

unsigned cpuhpd_fastpath_held(const struct cpuhpd *d)
{
	unsigned held, holders;

	snapshot(d, &held, &holders);
	return held;
}

void cpuhpd_fastpath_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s)
{
	snapshot(d, &s->fast_held, &s->fast_holders);
	s->fast_connections = d->fast.nregions;
	s->fast_path = mode_name(d->fast.mode);
}

bool cpuhpd_fastpath_offered(const struct cpuhpd *d)
{
	return d->fast.mode != CPUHPD_FAST_OFF && !d->stopping;
}

bool cpuhpd_fastpath_allowed(const struct cpuhpd_conn *c)
{
	const struct cpuhpd_options *o = &c->d->opt;

	/* Leases cpuhpd cannot revoke, nor see being taken, would bypass the limits (policy.h). */
	return !o->max_lease_ms && (!o->max_leases_per_uid || c->peer.admin);
}

/* ------------------------------------------------------------- start, stop */

/* Without the thread's robust word, clients could not tell a dead daemon: no fast path. */
static int start_thread(struct cpuhpd *d)
{
	struct cpuhpd_fastpath *fp = &d->fast;
	int err;

	if ((err = uv_mutex_init(&fp->lock)))
		return err;
	if ((err = uv_cond_init(&fp->cond))) {
		uv_mutex_destroy(&fp->lock);
		return err;
	}
	if ((err = uv_async_init(d->loop, &fp->async, async_cb)))
		goto fail_cond;
	if ((err = uv_thread_create(&fp->thread, fast_thread, fp)))
		goto fail_async;
	fp->running = true;
	uv_mutex_lock(&fp->lock);
	while (!fp->tid)
		uv_cond_wait(&fp->cond, &fp->lock);
	err = -fp->thread_err;
	uv_mutex_unlock(&fp->lock);
	if (err) {
		uv_thread_join(&fp->thread);
		fp->running = false;
		uv_close((uv_handle_t *)&fp->async, NULL);
		goto fail_cond;
	}
	return 0;

fail_async:
	uv_close((uv_handle_t *)&fp->async, NULL);
fail_cond:
	uv_cond_destroy(&fp->cond);
	uv_mutex_destroy(&fp->lock);
	return err;
}

int cpuhpd_fastpath_start(struct cpuhpd *d)
{
	struct cpuhpd_fastpath *fp = &d->fast;
	void *map;
	int err;

	cpuhpd_list_init(&fp->regions);
	fp->hdr_fd = -1;
	err = choose_mode(d->opt.fast_path, &fp->mode);
	if (err)
		return err;
	if (fp->mode == CPUHPD_FAST_OFF)
		return 0;
	fp->hdr_fd = seal_map("cpuhpd-fast-header", CPUHP__FAST_HEADER_SIZE,
	                      REGION_SEALS | F_SEAL_FUTURE_WRITE, &map);
	if (fp->hdr_fd < 0) {
		cpuhpd_warn("fast path off: cannot create a sealed memfd (%s; F_SEAL_FUTURE_WRITE "
		            "needs Linux 5.1); clients use socket leases",
		            strerror(-fp->hdr_fd));
		fp->mode = CPUHPD_FAST_OFF;
		return 0;
	}
	fp->hdr = map;
	uv_timer_init(d->loop, &fp->police);
	uv_timer_init(d->loop, &fp->oldpoll);
	fp->police_on = true;
	fp->hdr->magic = CPUHP__FAST_MAGIC;
	fp->hdr->layout = CPUHP__FAST_LAYOUT;
	atomic_init(&fp->hdr->state, CPUHP__FAST_STOPPED);
	err = start_thread(d);
	if (err) {
		cpuhpd_warn("fast path off: cannot start its thread or register its robust futex "
		            "(%s); clients use socket leases",
		            strerror(err < 0 ? -err : err));
		munmap(fp->hdr, CPUHP__FAST_HEADER_SIZE);
		close(fp->hdr_fd);
		fp->hdr = NULL;
		fp->hdr_fd = -1;
		fp->mode = CPUHPD_FAST_OFF;
		fp->police_on = false;
		uv_close((uv_handle_t *)&fp->police, NULL);
		uv_close((uv_handle_t *)&fp->oldpoll, NULL);
		return 0;
	}
	fp->open = (uint32_t)fp->tid;
	fp->hdr->open = fp->open;
	/* No partner: clients map the header only after a grant, which comes after this. */
	atomic_store_explicit(&fp->hdr->state, fp->open, memory_order_release);
	cpuhpd_info("fast path on: %s", mode_name(fp->mode));
	return 0;
}

void cpuhpd_fastpath_stop(struct cpuhpd *d)
{
	struct cpuhpd_fastpath *fp = &d->fast;

	/*
	 * No partner: nothing is published with "stopped"; a reader that still
	 * sees "open" holds a lease no hotplug waits for (none starts once
	 * stopping), and "blocked" already kept readers out of a running one.
	 */
	if (fp->mode != CPUHPD_FAST_OFF)
		atomic_store_explicit(&fp->hdr->state, CPUHP__FAST_STOPPED, memory_order_seq_cst);
}

void cpuhpd_fastpath_close(struct cpuhpd *d)
{
	struct cpuhpd_fastpath *fp = &d->fast;

	if (!fp->running)
		return;
	uv_mutex_lock(&fp->lock);
	fp->quit = true;
	uv_cond_signal(&fp->cond);
	uv_mutex_unlock(&fp->lock);
	uv_thread_join(&fp->thread);
	fp->running = false;
	uv_close((uv_handle_t *)&fp->async, NULL);
	if (fp->police_on) {
		fp->police_on = false;
		uv_close((uv_handle_t *)&fp->police, NULL);
		uv_close((uv_handle_t *)&fp->oldpoll, NULL);
	}
	uv_cond_destroy(&fp->cond);
	uv_mutex_destroy(&fp->lock);
	munmap(fp->hdr, CPUHP__FAST_HEADER_SIZE);
	close(fp->hdr_fd);
	fp->hdr = NULL;
	fp->hdr_fd = -1;
}

int cpuhpd_fastpath_adopt(struct cpuhpd_conn *c, int fd, unsigned nslots)
{
	struct cpuhpd_fastpath *fp = &c->d->fast;
	struct cpuhpd_fast_region *r;
	struct stat st;
	int seals;
	void *map;

	if (fd < 0)
		return -ENOENT;
	/* As region_new() made it: a client cannot have shrunk it under our reads. */
	seals = fcntl(fd, F_GET_SEALS);
	if (fp->mode == CPUHPD_FAST_OFF || nslots < 1 || nslots > CPUHP__FAST_MAX_SLOTS ||
	    fstat(fd, &st) < 0 || (size_t)st.st_size != CPUHP__FAST_REGION_SIZE(nslots) ||
	    seals < 0 || (seals & REGION_SEALS) != REGION_SEALS) {
		close(fd);
		return fp->mode == CPUHPD_FAST_OFF ? -EOPNOTSUPP : -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd); /* the store keeps its own */
	if (!r || map == MAP_FAILED) {
		free(r);
		if (map != MAP_FAILED)
			munmap(map, (size_t)st.st_size);
		return -ENOMEM;
	}
	r->map = map;
	r->size = (size_t)st.st_size;
	r->nslots = nslots;
	r->old = true;
	r->conn = c;
	cpuhpd_list_add_tail(&fp->regions, &r->node);
	fp->nregions++;
	c->fast = r;
	cpuhpd_fdstore_region_kept(c, nslots);
	return 0;
}

int cpuhpd_fastpath_adopt_conn(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc)
{
	char name[32];

	if (!sc->fast_slots)
		return 0;
	int err;

	snprintf(name, sizeof(name), "region-%u", sc->id);
	err = cpuhpd_fastpath_adopt(c, cpuhpd_fdstore_claim(c->d, name), sc->fast_slots);
	if (!err)
		c->fast->delay_ms = sc->fast_delay_ms; /* the notice.c "ready" line's */
	return err;
}
