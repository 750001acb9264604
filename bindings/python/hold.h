/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The locking calls of the cpuhp Python package's lock context managers
 * (cpuhp/_locks.py): the C source that build_cffi.py writes for cpuhp._cpuhp
 * includes this header, and cpuhp.cdef declares what Python calls.  So does
 * cpuhp._cpuhp_client's, which has these types too (it includes the lock
 * module's), but calls nothing here: hence static inline.
 *
 * CPython raises a pending signal's exception (Ctrl-C: KeyboardInterrupt)
 * as a C function returns to Python, before the caller has its result.  A
 * lock taken by that call would be held with no Python code knowing it.
 * So the call that takes a lock records it in a struct cpuhp_py_hold that
 * Python owns, in the same call, and the one that releases it clears the
 * record: after any exception, Python reads ->taken to know whether it
 * holds the lock, and releases it if so.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>

#ifndef CPUHP_PY_HOLD_H
#define CPUHP_PY_HOLD_H

#include <cpuhp/cpuhp.h>

/* What a hold takes (cpuhp_py_take()'s @op). */
enum cpuhp_py_op {
	CPUHP_PY_READ,        /* cpuhp_rwsem_read_lock(), or _timeout() */
	CPUHP_PY_TRY_READ,    /* cpuhp_rwsem_read_trylock() */
	CPUHP_PY_WRITE,       /* cpuhp_rwsem_write_lock(), or _timeout() */
	CPUHP_PY_ONLINE_CPUS, /* cpuhp_get_online_cpus() */
	CPUHP_PY_HOTPLUG,     /* cpuhp_hotplug_begin(), or _timeout() */
};

/*
 * One lock held by one Python context manager.  Zeroed: not held.  Used by
 * one thread at a time: the one that took the lock, until it releases it.
 */
struct cpuhp_py_hold {
	bool taken; /* the lock is held: release it exactly once */
	enum cpuhp_py_op op;
	struct cpuhp_rwsem *sem; /* the RWSem's; NULL for the hotplug lock */
	long *held;              /* the RWSem's count of held locks, or NULL */
	pthread_t owner;
};

/*
 * Take the lock @op names and record it in @h, or fail and leave @h as it
 * was.  @timeout_ms: -1 to wait as long as it takes, else up to UINT_MAX
 * (READ, WRITE, HOTPLUG).  Returns 0; -EBUSY if @h already holds a lock;
 * -ETIMEDOUT; -EAGAIN (TRY_READ, a writer in the way); -EINVAL.
 */
static inline int cpuhp_py_take(struct cpuhp_py_hold *h, enum cpuhp_py_op op,
                                struct cpuhp_rwsem *sem, long long timeout_ms, long *held)
{
	bool wait = timeout_ms < 0;
	unsigned ms = wait ? 0 : (unsigned)timeout_ms;
	int err = 0;

	if (h->taken)
		return -EBUSY;
	if (timeout_ms > (long long)UINT_MAX ||
	    (!sem && (op == CPUHP_PY_READ || op == CPUHP_PY_TRY_READ || op == CPUHP_PY_WRITE)))
		return -EINVAL;
	switch (op) {
	case CPUHP_PY_READ:
		if (wait)
			cpuhp_rwsem_read_lock(sem);
		else
			err = cpuhp_rwsem_read_lock_timeout(sem, ms);
		break;
	case CPUHP_PY_TRY_READ:
		err = cpuhp_rwsem_read_trylock(sem) ? 0 : -EAGAIN;
		break;
	case CPUHP_PY_WRITE:
		if (wait)
			cpuhp_rwsem_write_lock(sem);
		else
			err = cpuhp_rwsem_write_lock_timeout(sem, ms);
		break;
	case CPUHP_PY_ONLINE_CPUS:
		cpuhp_get_online_cpus();
		break;
	case CPUHP_PY_HOTPLUG:
		if (wait)
			cpuhp_hotplug_begin();
		else
			err = cpuhp_hotplug_begin_timeout(ms);
		break;
	default:
		return -EINVAL;
	}
	if (err)
		return err;
	h->op = op;
	h->sem = sem;
	h->held = held;
	h->owner = pthread_self();
	if (held)
		__atomic_fetch_add(held, 1, __ATOMIC_RELAXED);
	h->taken = true;
	return 0;
}

/* Whether @h holds its lock for the calling thread, which may release it. */
static inline bool cpuhp_py_mine(const struct cpuhp_py_hold *h)
{
	return h->taken && pthread_equal(h->owner, pthread_self());
}

/*
 * Release what @h holds, if it holds it for the calling thread (the only
 * one that may).  Returns 0, or -ENOLCK if @h holds nothing, or -EPERM if
 * another thread took it; the lock is then untouched.
 */
static inline int cpuhp_py_release(struct cpuhp_py_hold *h)
{
	if (!h->taken)
		return -ENOLCK;
	if (!cpuhp_py_mine(h))
		return -EPERM;
	h->taken = false;
	if (h->held)
		__atomic_fetch_sub(h->held, 1, __ATOMIC_RELAXED);
	switch (h->op) {
	case CPUHP_PY_READ:
	case CPUHP_PY_TRY_READ:
		cpuhp_rwsem_read_unlock(h->sem);
		break;
	case CPUHP_PY_WRITE:
		cpuhp_rwsem_write_unlock(h->sem);
		break;
	case CPUHP_PY_ONLINE_CPUS:
		cpuhp_put_online_cpus();
		break;
	case CPUHP_PY_HOTPLUG:
		cpuhp_hotplug_done();
		break;
	}
	return 0;
}

#endif /* CPUHP_PY_HOLD_H */
