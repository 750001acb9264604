/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process-wide asymmetric fence: membarrier(PRIVATE_EXPEDITED) makes
 * every running thread of this process execute a full memory barrier before
 * it returns.  With it, the rwsem's reader fast path needs no RCU read-side
 * section and no barrier of its own (label H in internal.h): the writer pays
 * with one membarrier when it leaves the idle state.
 *
 * Where the kernel or a seccomp profile refuses membarrier, or the
 * environment says CPUHP_NO_MEMBARRIER=1 (tests run both ways), readers use
 * liburcu read-side sections instead and the writer's grace period orders
 * them (G).  The choice is made once, before any lock exists, and a fork
 * child keeps it.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

bool cpuhp__asym_fence;
/* <cpuhp/rwsem-inline.h> keeps no debug books, so debug builds turn it off. */
bool cpuhp__inline_ok;

static int membarrier(int cmd)
{
	return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

void cpuhp__membarrier_init(void)
{
	const char *off = getenv("CPUHP_NO_MEMBARRIER");
	int mask;

	cpuhp__asym_fence = false;
	cpuhp__inline_ok = false;
	if (off && *off && strcmp(off, "0"))
		return;
	mask = membarrier(MEMBARRIER_CMD_QUERY);
	if (mask < 0 || !(mask & MEMBARRIER_CMD_PRIVATE_EXPEDITED))
		return;
	/* Registration is per process (mm); a fork child registers again. */
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
		return;
	cpuhp__asym_fence = true;
	cpuhp__inline_ok = !CPUHP_DEBUG;
}

/*
 * A fork child keeps its parent's choice, whatever the environment says
 * now: the forking thread's reader handles and inline pointer were made
 * for it, and a handle is never checked again.  Registration is per mm, so
 * register again; it cannot fail where it worked in the parent.
 */
void cpuhp__membarrier_after_fork_child(void)
{
	int err;

	if (!cpuhp__asym_fence)
		return;
	err = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) ? errno : 0;
	CPUHP_BUG_ON(err, "libcpuhp",
	             "membarrier registration failed in a fork child (%s) after it worked in "
	             "the parent",
	             strerror(err));
}

void cpuhp__membarrier(void)
{
	int err = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) ? errno : 0;

	CPUHP_BUG_ON(err, "rcu_sync", "membarrier(PRIVATE_EXPEDITED) failed after registration: %s",
	             strerror(err));
}
