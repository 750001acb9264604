/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork(): a child inherits its parent's handles (the socket, the fast
 * path's heap state), but not what they stand for: the daemon counts the
 * parent's leases on that socket, and the fast path's shared memory is not
 * mapped in the child (MADV_DONTFORK).  The child handler counts forks;
 * a handle remembers the count it was opened under, so every call can tell
 * an inherited handle with one load and refuse it before touching anything.
 *
 * The child also closes its copy of every handle's socket (they are all on
 * one list): the daemon sees a connection end when its last copy closes, so
 * a child that lived on would otherwise keep its parent's leases alive after
 * the parent died.  A lease never outlives the process that took it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client-fastpath.h"
#include "client-internal.h"

_Atomic unsigned cpuhp__client_forks;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Every open handle; held across fork() so that the child finds the list whole. */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cpuhp_client *handles;

static void prepare(void)
{
	pthread_mutex_lock(&handles_lock);
}

static void parent(void)
{
	pthread_mutex_unlock(&handles_lock);
}

static void child(void)
{
	/* The child runs one thread here. */
	atomic_fetch_add_explicit(&cpuhp__client_forks, 1, memory_order_relaxed);
	memset(cpuhp__fast_tls, 0, sizeof(cpuhp__fast_tls));
	for (struct cpuhp_client *c = handles; c; c = c->fork_next) {
		if (c->fd >= 0)
			close(c->fd);
		c->fd = -1;
	}
	pthread_mutex_unlock(&handles_lock);
}

static void init(void)
{
	pthread_atfork(prepare, parent, child);
}

void cpuhp__client_fork_track(struct cpuhp_client *c)
{
	pthread_once(&once, init);
	pthread_mutex_lock(&handles_lock);
	c->forks = atomic_load_explicit(&cpuhp__client_forks, memory_order_relaxed);
	c->fork_prev = NULL;
	c->fork_next = handles;
	if (handles)
		handles->fork_prev = c;
	handles = c;
	pthread_mutex_unlock(&handles_lock);
}

void cpuhp__client_fork_untrack(struct cpuhp_client *c)
{
	pthread_mutex_lock(&handles_lock);
	if (c->fork_prev)
		c->fork_prev->fork_next = c->fork_next;
	else if (handles == c)
		handles = c->fork_next;
	if (c->fork_next)
		c->fork_next->fork_prev = c->fork_prev;
	c->fork_next = c->fork_prev = NULL;
	pthread_mutex_unlock(&handles_lock);
}

bool cpuhp__client_forked(const struct cpuhp_client *c)
{
	return c->forks != atomic_load_explicit(&cpuhp__client_forks, memory_order_relaxed);
}

int cpuhp__client_forked_error(struct cpuhp_client *c)
{
	/* Not under c->lock: a parent's thread may have held it at fork time. */
	snprintf(c->message, sizeof(c->message),
	         "this handle was inherited through fork(): its connection and leases belong to "
	         "the parent; connect anew in the child");
	return -ECHILD;
}
