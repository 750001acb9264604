/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Where a connection's notices go; see route.h. */
#include <errno.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "conn.h"
#include "route.h"

int cpuhpd_route_link(struct cpuhpd_conn *c, uint32_t id)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &c->d->conns)
	{
		struct cpuhpd_conn *o = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (o->id != id || o == c)
			continue;
		/* Another process would hear of leases it does not hold. */
		if (o->peer.pid != c->peer.pid || o->peer.uid != c->peer.uid)
			return -EPERM;
		if (c->notices_to)
			c->notices_to->notices_from--;
		c->notices_to = o;
		o->notices_from++;
		cpuhpd_debug("client %u: its notices go to client %u", c->id, o->id);
		return 0;
	}
	return -ESRCH;
}

struct cpuhpd_conn *cpuhpd_route_target(struct cpuhpd_conn *c)
{
	return c->notices_to && !c->notices_to->closing ? c->notices_to : c;
}

unsigned cpuhpd_route_saved(const struct cpuhpd_conn *c)
{
	return c->notices_to ? c->notices_to->id : 0;
}

void cpuhpd_route_conn_gone(struct cpuhpd_conn *c)
{
	struct cpuhpd_list *pos;

	if (c->notices_to) {
		c->notices_to->notices_from--;
		c->notices_to = NULL;
	}
	/* Rare (a client's own connection with others beside it): only then a walk. */
	if (!c->notices_from)
		return;
	cpuhpd_list_for_each(pos, &c->d->conns)
	{
		struct cpuhpd_conn *o = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (o->notices_to == c)
			o->notices_to = NULL;
	}
	c->notices_from = 0;
}
