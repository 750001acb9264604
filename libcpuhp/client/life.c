/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhp_client_close() while other threads wait in calls on the handle:
 * close must not free the handle under a thread blocked in recvmsg() or in
 * a lease wait on a connection of its own, which would then write into
 * freed memory (or hand a lease to a freed handle).
 *
 * So a call that may block counts itself a user of the handle (get/put),
 * and a wait on a connection of its own is on the handle's ->waiting list.
 * Close marks the handle closing (no new call starts: -ECANCELED), shuts
 * down the sockets those calls wait on (shutdown() wakes a thread blocked
 * in recvmsg() or poll() on it, and the daemon sees the connection end as
 * it would at close), and frees the handle only once the last user left.
 * A woken call says -ECANCELED.  The fast lease calls that never wait
 * (an acquire granted at once, a release) are not counted: they must not
 * overlap close, as any call that starts after it must not.
 */
#include <errno.h>
#include <sys/socket.h>

#include "client-internal.h"

int cpuhp__client_get(struct cpuhp_client *c)
{
	int ret = 0;

	pthread_mutex_lock(&c->life_lock);
	if (c->closing)
		ret = -ECANCELED;
	else
		c->users++;
	pthread_mutex_unlock(&c->life_lock);
	return ret;
}

void cpuhp__client_put(struct cpuhp_client *c)
{
	pthread_mutex_lock(&c->life_lock);
	/* The last one out lets close free the handle (it waits in close_waiters). */
	if (--c->users == 0 && c->closing)
		pthread_cond_broadcast(&c->life_cond);
	pthread_mutex_unlock(&c->life_lock);
}

void cpuhp__client_wait_on(struct cpuhp_client *c, struct cpuhp_client *w)
{
	pthread_mutex_lock(&c->life_lock);
	w->wait_next = c->waiting;
	if (c->waiting)
		c->waiting->wait_pprev = &w->wait_next;
	w->wait_pprev = &c->waiting;
	c->waiting = w;
	/* Close already shut the others down: this one would wait on. */
	if (c->closing)
		shutdown(w->fd, SHUT_RDWR);
	pthread_mutex_unlock(&c->life_lock);
}

void cpuhp__client_wait_off(struct cpuhp_client *c, struct cpuhp_client *w)
{
	pthread_mutex_lock(&c->life_lock);
	/* A no-op for a connection not on the list (an asynchronous call's). */
	if (w->wait_pprev) {
		*w->wait_pprev = w->wait_next;
		if (w->wait_next)
			w->wait_next->wait_pprev = w->wait_pprev;
		w->wait_next = NULL;
		w->wait_pprev = NULL;
	}
	pthread_mutex_unlock(&c->life_lock);
}

bool cpuhp__client_closing(struct cpuhp_client *c)
{
	bool closing;

	pthread_mutex_lock(&c->life_lock);
	closing = c->closing;
	pthread_mutex_unlock(&c->life_lock);
	return closing;
}

void cpuhp__client_close_waiters(struct cpuhp_client *c)
{
	pthread_mutex_lock(&c->life_lock);
	c->closing = true;
	if (c->users) {
		/* Under ->lock, in recvmsg() or poll() on the handle's own socket. */
		shutdown(c->fd, SHUT_RDWR);
		for (struct cpuhp_client *w = c->waiting; w; w = w->wait_next)
			shutdown(w->fd, SHUT_RDWR);
		/* A shared state's registration waits on its hub (hub.c takes this lock after its
		 * own). */
		pthread_mutex_unlock(&c->life_lock);
		cpuhp__hub_cancel(c);
		pthread_mutex_lock(&c->life_lock);
	}
	while (c->users)
		pthread_cond_wait(&c->life_cond, &c->life_lock);
	pthread_mutex_unlock(&c->life_lock);
}
