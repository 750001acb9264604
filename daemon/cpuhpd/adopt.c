/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Rebuild the previous cpuhpd's connections; see adopt.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "core/conn.h"
#include "core/dispatch.h"
#include "core/fdstore.h"
#include "leases/holders.h"
#include "adopt.h"
#include "table.h"

static int claim(struct cpuhpd *d, const char *what, unsigned id)
{
	char name[32];

	snprintf(name, sizeof(name), "%s-%u", what, id);
	return cpuhpd_fdstore_claim(d, name);
}

/* What @c held, back in every feature.  Return: 0 or a negative errno. */
static int rebuild(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc)
{
	int err = 0;

	for (const cpuhpd_adopt_conn_fn *step = cpuhpd_features.adopt_conn; *step && !err; step++)
		err = (*step)(c, sc);
	return err;
}

static void raise_ids(struct cpuhpd *d, const struct cpuhpd_saved *s)
{
	if (s->next_conn_id > d->next_conn_id)
		d->next_conn_id = s->next_conn_id;
	for (const cpuhpd_adopt_ids_fn *step = cpuhpd_features.adopt_ids; *step; step++)
		(*step)(d, s);
}

int cpuhpd_adopt(struct cpuhpd *d)
{
	struct cpuhpd_saved *s = &d->fdstore.saved;
	struct cpuhpd_conn **conns;
	unsigned n = 0;

	if (!d->fdstore.have_saved)
		return 0;
	conns = calloc(s->nconns + 1, sizeof(*conns));
	if (!conns)
		return -ENOMEM;
	raise_ids(d, s);
	/* The held first, everywhere: a request run below must find every lease in its way. */
	for (unsigned i = 0; i < s->nconns; i++) {
		struct cpuhpd_saved_conn *sc = &s->conns[i];
		int fd = claim(d, "conn", sc->id), err;

		if (fd < 0) {
			cpuhpd_info(
			    "restart: client %u (pid %d) is gone (not in the fd store); its "
			    "%u lease(s) ended with it",
			    sc->id, (int)sc->pid, sc->nleases);
			continue;
		}
		conns[i] = cpuhpd_conn_adopt(d, fd, sc);
		if (!conns[i])
			continue;
		err = rebuild(conns[i], sc);
		if (err) {
			cpuhpd_conn_fail(conns[i], 0, ECONNRESET,
			                 "cpuhpd restarted and could not rebuild this connection "
			                 "(%s): its leases are gone",
			                 strerror(-err));
			conns[i] = NULL;
			continue;
		}
		n++;
	}
	d->grace.adopted = true;
	cpuhpd_info("restart: took over %u client(s) holding %u lease(s) from cpuhpd pid %d", n,
	            cpuhpd_holders_total(d), (int)s->pid);
	/* Then what was asked and not answered, in its order, before anything new. */
	for (unsigned i = 0; i < s->nreqs; i++) {
		struct cpuhpd_saved_conn *sc = cpuhpd_statetext_conn(s, s->reqs[i].conn);
		struct cpuhpd_conn *c = conns[sc - s->conns];

		d->resuming = s->reqs[i].running;
		if (c && !c->closing)
			cpuhpd_dispatch(c, s->reqs[i].req.data, s->reqs[i].req.len);
		d->resuming = false;
	}
	/* After the hotplugs that waiting acquires waited behind are queued again. */
	cpuhpd_features_run(d, cpuhpd_features.replayed);
	for (unsigned i = 0; i < s->nconns; i++)
		if (conns[i] && !conns[i]->closing)
			cpuhpd_conn_resume(conns[i], &s->conns[i]);
	free(conns);
	return 0;
}
