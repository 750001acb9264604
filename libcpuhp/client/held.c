/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a handle holds outside its fast path: the socket leases on its own
 * connection, and the leases and freezes held on connections of their own
 * (an asynchronous call's, or a fast-path lease that had to wait behind a
 * hotplug), each with the connection it ends with.  A release or a thaw
 * takes its id out; the connection's end counts the leases lost; close
 * closes them all.  Under ->fb_lock, a leaf lock.
 */
#include <errno.h>
#include <stdlib.h>

#include "client-internal.h"

struct cpuhp__held {
	uint64_t id;
	struct cpuhp_client *conn; /* NULL: @c's own connection */
	bool freeze;               /* a freeze's connection (ids are per kind): no lease on it */
};

int cpuhp__held_add(struct cpuhp_client *c, uint64_t id, struct cpuhp_client *w, bool freeze)
{
	int ret = 0;

	pthread_mutex_lock(&c->fb_lock);
	if (c->nfb == c->capfb) {
		unsigned cap = c->capfb ? 2 * c->capfb : 8;
		struct cpuhp__held *fb = realloc(c->fb, cap * sizeof(*fb));

		if (fb) {
			c->fb = fb;
			c->capfb = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret)
		c->fb[c->nfb++] = (struct cpuhp__held){.id = id, .conn = w, .freeze = freeze};
	pthread_mutex_unlock(&c->fb_lock);
	return ret;
}

bool cpuhp__held_take(struct cpuhp_client *c, uint64_t id, bool freeze, struct cpuhp_client **w)
{
	bool found = false;

	pthread_mutex_lock(&c->fb_lock);
	for (unsigned i = 0; i < c->nfb; i++) {
		if (c->fb[i].id == id && c->fb[i].freeze == freeze) {
			*w = c->fb[i].conn;
			c->fb[i] = c->fb[--c->nfb];
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&c->fb_lock);
	return found;
}

unsigned cpuhp__held_lost(struct cpuhp_client *c, bool own_ended)
{
	unsigned n = 0;

	pthread_mutex_lock(&c->fb_lock);
	/*
	 * A connection of its own ends with the daemon too, a moment before or
	 * after @c's (the kernel closes a dead daemon's sockets one by one):
	 * counted if its end shows already.
	 */
	for (unsigned i = 0; i < c->nfb; i++)
		if (!c->fb[i].freeze) /* a freeze is no lease: LeasesLost does not count it */
			n += c->fb[i].conn ? cpuhp__client_conn_ended(c->fb[i].conn) : own_ended;
	pthread_mutex_unlock(&c->fb_lock);
	return n;
}

void cpuhp__held_close_all(struct cpuhp_client *c)
{
	for (unsigned i = 0; i < c->nfb; i++)
		cpuhp_client_close(
		    c->fb[i].conn); /* NULL: held on @c's own, closed by the caller */
	free(c->fb);
	c->fb = NULL;
	c->nfb = c->capfb = 0;
}
