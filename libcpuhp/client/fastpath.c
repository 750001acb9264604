/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The client's fast path around the inline acquire and release of
 * client-fastpath.h: asking for it at a handle's first lease (or at
 * cpuhp_client_fast_path()), mapping what the daemon sent, the membarrier
 * registration, a thread's slot, and FastWake (W).  The protocol and its
 * barrier labels are proto/FASTPATH.md.
 *
 * Slots: slot 0 is shared (atomic read-modify-writes); every other slot
 * belongs to one thread at a time, found by its TID under ->claim_lock the
 * first time a thread uses the handle.  A thread's slot is taken over only
 * once that thread is gone (tgkill(pid, tid, 0) says ESRCH): a count it
 * left there stays counted (a lease it never released), and the new owner
 * continues from that value.  More threads than slots share slot 0.
 *
 * While a hotplug waits or runs, a fast acquire with a timeout waits for a
 * socket lease on a connection of its own, made for it and closed when that
 * lease is released (cpuhp__fast_slow_acquire, with lease.c's calls).  Not
 * on the handle's own connection: a call holds the handle's lock while it waits, and another
 * thread of this process may need that lock to release a socket lease it
 * holds, the lease the hotplug, and so the wait, is waiting for.  The
 * daemon's rules (writer preference, FIFO fairness, timeouts) apply to that
 * connection as to any.
 *
 * Lease ids: each slot has a table of the ids counted in it
 * (client-fastpath.h, struct cpuhp__fast_table); a release takes its id out
 * of the table with one compare-and-swap before it touches a count, so a
 * second release, an id never granted or one of another handle is -ESRCH
 * and changes nothing.  A lease released by another thread than the one
 * that took it is counted back in its own slot's ->released word
 * (proto/fastpath.h), which keeps each slot within what the daemon allows.
 *
 * fork: the child gets neither mapping (MADV_DONTFORK) and its thread's
 * cache is emptied (fork.c), so it never writes its parent's slots (nor
 * reads the header it does not have: every path compares ->forks first);
 * every call on a handle it inherited fails (fork.c).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client-fastpath.h"
#include "client-internal.h"

/* Threads of one process that get a slot of their own per handle, by default. */
#define DEFAULT_SLOTS 16

__thread struct cpuhp__fast_tls cpuhp__fast_tls[CPUHP__FAST_TLS_WAYS]
    __attribute__((tls_model("initial-exec")));

_Static_assert(CPUHP__FAST_SLOT_MAX_LEASES == 16, "the -EDQUOT message says 16");

static _Atomic uint64_t next_serial;

static bool thread_gone(pid_t pid, pid_t tid)
{
	return syscall(SYS_tgkill, pid, tid, 0) < 0 && errno == ESRCH;
}

struct cpuhp__fast_tls *cpuhp__fast_claim(struct cpuhp__fast *f)
{
	struct cpuhp__fast_tls *t = &cpuhp__fast_tls[f->serial % CPUHP__FAST_TLS_WAYS];
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	unsigned i, slot = 0;

	if (f->forks != atomic_load_explicit(&cpuhp__client_forks, memory_order_relaxed))
		return NULL;
	pthread_mutex_lock(&f->claim_lock);
	for (i = 1; i < f->nslots && !slot; i++)
		if (f->owner[i] == tid)
			slot = i;
	for (i = 1; i < f->nslots && !slot; i++)
		if (!f->owner[i])
			slot = i;
	for (i = 1; i < f->nslots && !slot; i++)
		if (thread_gone(pid, f->owner[i]))
			slot = i;
	if (slot)
		f->owner[slot] = tid;
	pthread_mutex_unlock(&f->claim_lock);
	t->serial = f->serial;
	t->count = &f->reg->slot[slot].count;
	t->table = &f->table[slot];
	t->slot = slot;
	return t;
}

void cpuhp__fast_back_out(struct cpuhp_client *c, struct cpuhp__fast *f,
                          const struct cpuhp__fast_tls *t, unsigned entry)
{
	cpuhp__fast_add(t, -1);
	/* Y, as in a release: the decrement before the entry is free again. */
	atomic_store_explicit(&t->table->id[entry], 0, memory_order_release);
	cpuhp__fast_order(f); /* T */
	/* Nothing was granted: what the connection's end means is cpuhp__fast_try's to say. */
	(void)cpuhp__fast_after_release(c, f, 0);
}

int cpuhp__fast_released_late(struct cpuhp_client *c, struct cpuhp__fast *f, uint64_t id,
                              uint32_t bypasses)
{
	int ret = 0;

	if (atomic_load_explicit(&f->hdr->state, memory_order_relaxed) !=
	    atomic_load_explicit(&f->reg->head.live, memory_order_relaxed))
		ret = cpuhp__fast_after_release(c, f, id);
	if (ret == 0 &&
	    atomic_load_explicit(&f->reg->head.bypasses, memory_order_relaxed) != bypasses)
		ret =
		    cpuhp__client_note(c, -ESTALE,
		                       "the online CPUs changed behind cpuhpd's back while this "
		                       "fast lease was held (see the LEASE_BYPASSED event); it is "
		                       "released all the same");
	return ret;
}

int cpuhp__fast_release_refused(struct cpuhp_client *c, struct cpuhp__fast *f, uint64_t id)
{
	char msg[CPUHP_CLIENT_MESSAGE_MAX];

	if (f && f->forks != atomic_load_explicit(&cpuhp__client_forks, memory_order_relaxed))
		return cpuhp__client_note(
		    c, -ESRCH,
		    "this handle was inherited through fork(): its leases are the "
		    "parent's; connect anew in the child");
	/* Acquire: pairs with the release that put it on the list (fast_renew). */
	for (struct cpuhp__fast *r = atomic_load_explicit(&c->retired, memory_order_acquire); r;
	     r = r->retired_next)
		if (r != f && CPUHP__FAST_ID_SERIAL(id) == (r->serial & 0x7fff))
			return cpuhp__fast_release(c, r, id);
	snprintf(msg, sizeof(msg),
	         "no fast lease %#llx on this handle: released already, never granted, or "
	         "taken on another handle (nothing was changed)",
	         (unsigned long long)id);
	return cpuhp__client_note(c, -ESRCH, msg);
}

int cpuhp__fast_after_release(struct cpuhp_client *c, struct cpuhp__fast *f, uint64_t id)
{
	uint32_t s = atomic_load_explicit(&f->hdr->state, memory_order_relaxed);
	uint32_t l = atomic_load_explicit(&f->reg->head.live, memory_order_relaxed);
	bool live = l == f->open;
	char msg[CPUHP_CLIENT_MESSAGE_MAX];

	/* Open again since the caller looked: nobody waits for this count. */
	if (live && s == f->open)
		return 0;
	/* Revoked: cpuhpd stopped counting the region when it told us (LEASE_REVOKED). */
	if (l == CPUHP__FAST_LIVE_REVOKED) {
		if (!id)
			return 0;
		snprintf(
		    msg, sizeof(msg),
		    "fast lease %#llx was revoked (a delay lease's delay, or a forced hotplug, "
		    "ran out after the hotplug's notice): it was no longer held from then on",
		    (unsigned long long)id);
		return cpuhp__client_note(c, -ETIME, msg);
	}
	/*
	 * Stopped, died or revoked, when the connection has ended too: so has
	 * the lease (the daemon forgot it), which its holder must hear.  Not
	 * decided by the state: a daemon restarted under systemd keeps the
	 * connection (fd store) while the old state word says it died.
	 */
	if (!live || (s != (f->open | CPUHP__FAST_BLOCKED) && cpuhp__client_conn_ended(c)))
		return id ? cpuhp__client_lease_lost(c, id) : -ECONNRESET;
	/*
	 * W: after the slot--.  Under the send lock only, not the call lock: a
	 * thread of this handle may be blocked in a call (a lease waiting behind
	 * this very hotplug).  Sent while the daemon is blocked, and also while
	 * it is stopped or dead with the connection kept (its successor sums
	 * on it).  A failed send means the connection is gone, and with it
	 * what the daemon counted for us.
	 */
	if (cpuhp__client_send_all(c, f->wake_frame, f->wake_len) < 0) {
		atomic_store_explicit(&c->ended, true, memory_order_relaxed);
		return id ? cpuhp__client_lease_lost(c, id) : -ECONNRESET;
	}
	return 0;
}

unsigned cpuhp__fast_lost(struct cpuhp__fast *f)
{
	unsigned n = 0;

	uint32_t open;

	if (!f)
		return 0;
	/* Unless cpuhpd dropped it first (closed, revoked): that says as much. */
	open = f->open;
	atomic_compare_exchange_strong_explicit(&f->reg->head.live, &open, CPUHP__FAST_LIVE_ENDED,
	                                        memory_order_relaxed, memory_order_relaxed);
	for (unsigned s = 0; s < f->nslots; s++)
		for (unsigned k = 0; k < CPUHP__FAST_SLOT_MAX_LEASES; k++) {
			uint64_t v = atomic_load_explicit(&f->table[s].id[k], memory_order_relaxed);

			n += v != 0 && v != CPUHP__FAST_TOMB && v != CPUHP__FAST_RESERVED;
		}
	return n;
}

void cpuhp__client_fast_free(struct cpuhp__fast *f, bool forked)
{
	if (!f)
		return;
	cpuhp__client_fast_free(f->retired_next, forked);
	/* A fork child has no such mappings (MADV_DONTFORK); its claim_lock may be taken. */
	if (f->hdr && !forked)
		munmap((void *)f->hdr, CPUHP__FAST_HEADER_SIZE);
	if (f->reg && !forked)
		munmap(f->reg, f->reg_size);
	free(f->table);
	if (!forked)
		pthread_mutex_destroy(&f->claim_lock);
	free(f);
}

static unsigned slots_wanted(void)
{
	const char *s = getenv(CPUHP_CLIENT_FAST_SLOTS_ENV);
	char *end;
	unsigned long n;

	if (!s || !*s)
		return DEFAULT_SLOTS;
	n = strtoul(s, &end, 10);
	if (*end || !n)
		return DEFAULT_SLOTS;
	return n > CPUHP__FAST_MAX_SLOTS ? CPUHP__FAST_MAX_SLOTS : (unsigned)n;
}

static bool fast_disabled(void)
{
	const char *s = getenv(CPUHP_CLIENT_FAST_PATH_ENV);

	return s && !strcmp(s, "0");
}

static void *map_fd(int fd, size_t size, int prot)
{
	struct stat st;
	void *p;

	/* A shorter file would fault on access instead of failing here. */
	if (fstat(fd, &st) < 0 || st.st_size < 0 || (size_t)st.st_size < size)
		return NULL;
	p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, size, MADV_DONTFORK);
	return p;
}

/* Map what came with @g into @f; false if it does not look like the layout we know. */
static bool map_granted(struct cpuhp__fast *f, const Cpuhp__FastPathGranted *g, const int *fds)
{
	if (g->layout != CPUHP__FAST_LAYOUT || g->header_size != CPUHP__FAST_HEADER_SIZE ||
	    g->nslots < 1 || g->nslots > CPUHP__FAST_MAX_SLOTS ||
	    g->region_size < CPUHP__FAST_REGION_SIZE(g->nslots))
		return false;
	f->hdr = map_fd(fds[0], CPUHP__FAST_HEADER_SIZE, PROT_READ);
	if (!f->hdr || f->hdr->magic != CPUHP__FAST_MAGIC || f->hdr->layout != CPUHP__FAST_LAYOUT)
		return false;
	f->reg_size = g->region_size;
	f->reg = map_fd(fds[1], f->reg_size, PROT_READ | PROT_WRITE);
	if (!f->reg)
		return false;
	f->nslots = g->nslots;
	/* Zeroed: every entry free. */
	f->table = aligned_alloc(CPUHP__FAST_LINE, f->nslots * sizeof(*f->table));
	if (!f->table)
		return false;
	memset(f->table, 0, f->nslots * sizeof(*f->table));
	f->open = f->hdr->open;
	switch (g->barrier) {
	case CPUHP__FAST_BARRIER__FAST_BARRIER_MEMBARRIER_EXPEDITED:
		/* Per process and idempotent; without it the daemon's barrier skips us. */
		f->fence =
		    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) != 0;
		break;
	case CPUHP__FAST_BARRIER__FAST_BARRIER_MEMBARRIER_GLOBAL:
		f->fence = false;
		break;
	default:
		f->fence = true;
		break;
	}
	return true;
}

static bool pack_wake(struct cpuhp__fast *f)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__FastWake w = CPUHP__FAST_WAKE__INIT;
	uint8_t *frame;
	size_t len;

	req.id = 0; /* never answered (proto/FRAMING.md) */
	req.body_case = CPUHP__REQUEST__BODY_FAST_WAKE;
	req.fast_wake = &w;
	if (cpuhp__frame_pack_request(&req, &frame, &len) < 0)
		return false;
	if (len <= sizeof(f->wake_frame)) {
		memcpy(f->wake_frame, frame, len);
		f->wake_len = len;
	}
	free(frame);
	return f->wake_len != 0;
}

static int fast_setup(struct cpuhp_client *c);

/*
 * cpuhpd revoked @f's leases and dropped its region: ask for a new one on
 * the connection, keeping @f for the releases of what it counted.  Never
 * waits for the handle's lock (a call may hold it for as long as it
 * waits): when another thread has it, this lease goes to the socket.
 * Return: the handle's fast path now, NULL if none.
 */
static struct cpuhp__fast *fast_renew(struct cpuhp_client *c, struct cpuhp__fast *f)
{
	struct cpuhp__fast *now;

	if (pthread_mutex_trylock(&c->lock))
		return NULL;
	now = atomic_load_explicit(&c->fast, memory_order_relaxed);
	if (now == f && !c->dead && !cpuhp__client_closing(c)) {
		f->retired_next = atomic_load_explicit(&c->retired, memory_order_relaxed);
		/* Release: a release that finds it on the list sees it whole. */
		atomic_store_explicit(&c->retired, f, memory_order_release);
		atomic_store_explicit(&c->fast, NULL, memory_order_release);
		c->fast_refused = false;
		fast_setup(c);
		now = atomic_load_explicit(&c->fast, memory_order_relaxed);
	}
	pthread_mutex_unlock(&c->lock);
	return now;
}

int cpuhp__fast_try(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms,
                    uint64_t *lease_id)
{
	for (;;) {
		uint32_t s = atomic_load_explicit(&f->hdr->state, memory_order_relaxed);
		uint32_t l = atomic_load_explicit(&f->reg->head.live, memory_order_relaxed);

		if (l == CPUHP__FAST_LIVE_REVOKED) {
			struct cpuhp__fast *nf = fast_renew(c, f);

			/* No region now: a socket lease, which a timeout of 0 only tries. */
			if (!nf)
				return 1;
			f = nf;
			continue;
		}
		if (l == CPUHP__FAST_LIVE_CLOSED)
			return cpuhp__client_note(c, -ECONNRESET,
			                          "cpuhpd closed this connection (see its log); "
			                          "reconnect");
		if (l != f->open)
			return cpuhp__client_note(c, -ECONNRESET,
			                          "the connection to cpuhpd ended (the daemon "
			                          "stopped, died or closed it); reconnect");
		if (s == f->open) {
			/* The hotplug ended since the attempt: try again. */
			int ret = cpuhp__fast_acquire(c, f, lease_id);

			if (ret == -EDQUOT)
				return cpuhp__client_note(
				    c, ret,
				    "this thread holds 16 fast leases on this "
				    "handle, the limit per thread; release one "
				    "first");
			if (ret == 0)
				return 0;
			continue;
		}
		if (s != (f->open | CPUHP__FAST_BLOCKED) && cpuhp__client_conn_ended(c))
			return cpuhp__client_note(c, -ECONNRESET,
			                          "cpuhpd stopped or died; reconnect");
		if (!timeout_ms)
			return cpuhp__client_note(
			    c, -EAGAIN,
			    s == (f->open | CPUHP__FAST_BLOCKED)
			        ? "a CPU hotplug is waiting or running; ask again, or "
			          "ask with a timeout to wait for it"
			        : "cpuhpd is restarting; ask again, or ask with a timeout "
			          "to wait for it");
		return 1;
	}
}

int cpuhp__fast_slow_acquire(struct cpuhp_client *c, struct cpuhp__fast *f, unsigned timeout_ms,
                             uint64_t *lease_id)
{
	struct cpuhp_client_call *call;
	int ret = cpuhp__fast_try(c, f, timeout_ms, lease_id);

	if (ret <= 0)
		return ret;
	/* A hotplug is in the way, and it waits for the callback running on this thread. */
	if (cpuhp__client_in_state_cb)
		return cpuhp__client_deadlk(c);
	/* A socket lease on a connection of its own (see the top of the file). */
	ret = cpuhp__client_lease_begin_own(c, timeout_ms, NULL, NULL, &call);
	if (ret < 0)
		return ret;
	ret = cpuhp__client_call_wait(call);
	if (ret == 0)
		ret = cpuhp_client_call_lease_acquire(call, lease_id);
	if (ret < 0)
		cpuhp__client_note(c, ret, cpuhp_client_call_message(call));
	cpuhp_client_call_free(call);
	return ret;
}

/*
 * Ask for the fast path, map it, publish it in c->fast.  Under c->lock, the
 * fast path offered and not yet set.  Return: 0 (whether or not it was
 * granted); a connection -errno.
 */
static int fast_setup(struct cpuhp_client *c)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__FastPathRequest fr = CPUHP__FAST_PATH_REQUEST__INIT;
	Cpuhp__Response *resp;
	struct cpuhp__fast *f;
	int ret, fds[2];
	bool ok;

	if (fast_disabled()) {
		c->fast_refused = true;
		return 0;
	}
	fr.slots = slots_wanted();
	fr.mode = c->delay_ms ? CPUHP__LEASE_MODE__LEASE_DELAY : CPUHP__LEASE_MODE__LEASE_BLOCK;
	fr.delay_ms = c->delay_ms;
	req.body_case = CPUHP__REQUEST__BODY_FAST_PATH;
	req.fast_path = &fr;
	ret = cpuhp__client_call(c, &req, CPUHP__RESPONSE__BODY_FAST_PATH_GRANTED, &resp);
	/*
	 * Refused: socket leases only, unless the connection died.  EBUSY
	 * (replies were queued ahead of the grant) may go next time.
	 */
	if (ret < 0) {
		c->fast_refused = ret != -EBUSY;
		return c->dead ? ret : 0;
	}
	c->fast_refused = true; /* unless everything below works */
	if (cpuhp__client_take_fds(c, fds, 2) < 0) {
		cpuhp__response__free_unpacked(resp, NULL);
		return 0;
	}
	f = calloc(1, sizeof(*f));
	ok = f && !pthread_mutex_init(&f->claim_lock, NULL);
	if (!ok) {
		free(f);
		f = NULL;
	}
	ok = ok && map_granted(f, resp->fast_path_granted, fds) && pack_wake(f);
	cpuhp__response__free_unpacked(resp, NULL);
	close(fds[0]);
	close(fds[1]);
	if (!ok) {
		cpuhp__client_fast_free(f, false);
		return 0;
	}
	f->pid = getpid();
	f->forks = c->forks;
	f->serial = atomic_fetch_add(&next_serial, 1) + 1;
	c->fast_refused = false;
	/*
	 * Release: lease calls on other threads read it without the lock; pairs
	 * with their acquire loads of c->fast (lease.c).
	 */
	atomic_store_explicit(&c->fast, f, memory_order_release);
	return 0;
}

int cpuhp__client_fast_get(struct cpuhp_client *c, struct cpuhp__fast **f)
{
	int ret;

	if ((ret = cpuhp__client_enter(c)) < 0)
		return ret;
	if (!atomic_load_explicit(&c->fast, memory_order_relaxed) && !c->fast_refused && !c->dead)
		ret = fast_setup(c);
	*f = atomic_load_explicit(&c->fast, memory_order_relaxed);
	return cpuhp__client_leave(c, ret);
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
