/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Who holds what; see holders.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "holders.h"

unsigned cpuhpd_holders_total(const struct cpuhpd *d)
{
	return d->leases.held + cpuhpd_fastpath_held(d);
}

void cpuhpd_holders_identify(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__Identify *id = req->identify;
	uint64_t req_id = req->id;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Identified ok = CPUHP__IDENTIFIED__INIT;
	char *who = cpuhpd_identity_dup(id->who), *why = cpuhpd_identity_dup(id->why);

	if ((id->who[0] && !who) || (id->why[0] && !why)) {
		free(who);
		free(why);
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	free(c->who);
	free(c->why);
	c->who = who;
	c->why = why;
	cpuhpd_fdstore_conn_changed(c); /* a restart keeps the names too */
	cpuhpd_debug("client %u is '%s': '%s'", c->id, who ? who : "", why ? why : "");
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_IDENTIFIED;
	r.identified = &ok;
	cpuhpd_conn_send(c, &r);
}

/* Oldest first; then by lease id and connection, so that the order is total (page.h). */
static int by_since(const void *a, const void *b)
{
	const struct cpuhpd_holder *x = a, *y = b;

	if (x->since != y->since)
		return x->since < y->since ? -1 : 1;
	if (x->lease_id != y->lease_id)
		return x->lease_id < y->lease_id ? -1 : 1;
	return x->conn->id < y->conn->id ? -1 : x->conn->id > y->conn->id;
}

ssize_t cpuhpd_holders_collect(struct cpuhpd *d, struct cpuhpd_holder **out)
{
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_list *pos;
	struct cpuhpd_holder *v;
	size_t n = 0, cap = 0;

	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		cap += c->nleases + 1;
	}
	v = calloc(cap + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);
		const char *who = c->who ? c->who : "", *why = c->why ? c->why : "";
		unsigned fast = cpuhpd_fastpath_conn_look(c, now);

		for (unsigned i = 0; i < c->nleases; i++) {
			const struct cpuhpd_lease *l = &c->leases[i];

			v[n++] = (struct cpuhpd_holder){.conn = c,
			                                .lease_id = l->id,
			                                .count = 1,
			                                .since = l->since,
			                                .who = l->who ? l->who : who,
			                                .why = l->why ? l->why : why,
			                                .delay_ms = l->delay_ms};
		}
		if (!fast)
			continue;
		v[n++] = (struct cpuhpd_holder){.conn = c,
		                                .count = fast,
		                                .since = c->fast_since,
		                                .who = who,
		                                .why = why,
		                                .delay_ms = cpuhpd_fastpath_conn_delay(c)};
	}
	qsort(v, n, sizeof(*v), by_since);
	*out = v;
	return (ssize_t)n;
}

/* One holder in words; Return: as snprintf. */
static int describe_one(const struct cpuhpd_holder *h, uint64_t now, char *buf, size_t size)
{
	uint64_t ms = now > h->since ? now - h->since : 0;
	const char *name = h->who[0] ? h->who : h->conn->peer.comm;
	char what[40] = "";

	/* A fast lease's age is from cpuhpd's first look: it was taken then or before. */
	if (!h->lease_id)
		snprintf(what, sizeof(what), ", %u fast lease%s", h->count,
		         h->count == 1 ? "" : "s");
	/*
	 * A fast lease is taken in shared memory, unseen: cpuhpd knows only
	 * when it first saw the count above zero, which may be this very look.
	 */
	return snprintf(buf, size, "pid %d (%s)%s%s%s%s, held %s%" PRIu64 ".%" PRIu64 " s",
	                (int)h->conn->peer.pid, name, h->why[0] ? " '" : "", h->why,
	                h->why[0] ? "'" : "", what, h->lease_id ? "" : "at least ", ms / 1000,
	                ms % 1000 / 100);
}

void cpuhpd_holders_describe(struct cpuhpd *d, char *buf, size_t size)
{
	uint64_t now = uv_now(d->loop);
	struct cpuhpd_holder *v = NULL;
	ssize_t n = cpuhpd_holders_collect(d, &v);
	size_t len = 0;

	if (!size)
		return;
	buf[0] = '\0';
	if (n < 0) {
		snprintf(buf, size, "(out of memory listing them)");
		return;
	}
	if (n == 0)
		snprintf(buf, size, "no lease");
	for (ssize_t i = 0; i < n; i++) {
		char one[CPUHPD_IDENTITY_MAX * 2 + 96], more[32];
		int k = describe_one(&v[i], now, one, sizeof(one));

		snprintf(more, sizeof(more), "; and %zd more", n - i);
		/* Keep room to say how many were left out. */
		if (len + (i ? 2 : 0) + (size_t)k + (i + 1 < n ? strlen(more) : 0) >= size) {
			if (len + strlen(more) < size)
				snprintf(buf + len, size - len, "%s", i ? more : more + 2);
			break;
		}
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? "; " : "", one);
	}
	free(v);
}
