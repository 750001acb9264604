/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process-wide CPU hotplug lock: one cpuhp_rwsem in static storage,
 * set up by the library constructor, never freed.
 *
 * cpuhp_get_online_cpus() nests per thread (the old kernel API did): only
 * the outermost get takes the read lock, so a nested get never queues
 * behind a waiting writer that itself waits for the outer get.
 */
#include <errno.h>
#include <string.h>

#include <cpuhp/hotplug.h>

#include "internal.h"

static struct cpuhp_rwsem hotplug_sem;

void cpuhp__hotplug_init(void)
{
	int err = cpuhp__rwsem_init(&hotplug_sem, "cpuhp_hotplug_lock");

	CPUHP_BUG_ON(err, "cpuhp_hotplug_lock", "cannot set up the lock: %s", strerror(-err));
}

struct cpuhp_rwsem *cpuhp_hotplug_lock(void)
{
	return &hotplug_sem;
}

void cpuhp_get_online_cpus(void)
{
	struct cpuhp__thread *t = cpuhp__thread_get();

	/*
	 * Registering allocates nothing; if it still fails (pcount.c), the
	 * nesting count lives in the record all the same, and the read lock
	 * counts this thread in the lock's shared counter.
	 */
	if (!t)
		t = &cpuhp__self_record;
	if (t->hotplug_depth++ == 0)
		cpuhp_rwsem_read_lock(&hotplug_sem);
}

void cpuhp_put_online_cpus(void)
{
	struct cpuhp__thread *t = &cpuhp__self_record;

	CPUHP_BUG_ON(!t->hotplug_depth, hotplug_sem.readers.name,
	             "cpuhp_put_online_cpus() without cpuhp_get_online_cpus() on this thread");
	if (--t->hotplug_depth == 0)
		cpuhp_rwsem_read_unlock(&hotplug_sem);
}

static void check_not_reader(void)
{
	struct cpuhp__thread *t = &cpuhp__self_record;

	CPUHP_BUG_ON(t->hotplug_depth, hotplug_sem.readers.name,
	             "hotplug begin while this thread holds cpuhp_get_online_cpus(): it would "
	             "wait for itself");
}

void cpuhp_hotplug_begin(void)
{
	check_not_reader();
	cpuhp_rwsem_write_lock(&hotplug_sem);
}

int cpuhp_hotplug_begin_timeout(unsigned timeout_ms)
{
	check_not_reader();
	return cpuhp_rwsem_write_lock_timeout(&hotplug_sem, timeout_ms);
}

void cpuhp_hotplug_done(void)
{
	cpuhp_rwsem_write_unlock(&hotplug_sem);
}
