/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The registry of hotplug states (state.h): each state's record, its
 * references, and the list in startup order.
 *
 * Invariants:
 * - A state's ->cpus is the set of CPUs whose startup succeeded and whose
 *   teardown has not: what the client believes is online for it.
 * - A state is freed when it left the registry and no step refers to it.
 */
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "state.h"

struct cpuhpd_state *cpuhpd_state_get(struct cpuhpd_state *s)
{
	s->refs++;
	return s;
}

void cpuhpd_state_put(struct cpuhpd_state *s)
{
	if (--s->refs == 0)
		free(s);
}

bool cpuhpd_state_alive(const struct cpuhpd_state *s)
{
	return s->conn && !s->conn->closing;
}

/* Leave the registry: no new work will name it; steps that do skip it. */
void cpuhpd_state_unlist(struct cpuhpd *d, struct cpuhpd_state *s)
{
	if (!s->listed)
		return;
	cpuhpd_list_del(&s->node);
	s->listed = false;
	s->live = false;
	d->states.nstates--;
	if (cpuhpd_state_alive(s))
		cpuhpd_fdstore_conn_changed(s->conn);
	cpuhpd_state_put(s);
}

/* Startup order: priority ascending, then registration order. */
void cpuhpd_state_insert(struct cpuhpd *d, struct cpuhpd_state *s)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *o = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (o->priority > s->priority)
			break;
	}
	/* Before pos: add_tail on pos links s just in front of it. */
	cpuhpd_list_add_tail(pos, &s->node);
	s->listed = true;
	d->states.nstates++;
}

bool cpuhpd_state_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= CPUHPD_STATE_NAME_MAX)
		return false;
	for (const char *p = name; *p; p++)
		if (*p <= ' ' || *p >= 0x7f)
			return false;
	return true;
}

struct cpuhpd_state *cpuhpd_state_find(const struct cpuhpd *d, const char *name)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (!strcmp(s->name, name))
			return s;
	}
	return NULL;
}

unsigned cpuhpd_state_count_conn(const struct cpuhpd *d, const struct cpuhpd_conn *c)
{
	struct cpuhpd_list *pos;
	unsigned n = 0;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		n += cpuhpd_container_of(pos, struct cpuhpd_state, node)->conn == c;
	}
	return n;
}

unsigned cpuhpd_states_of_uid(const struct cpuhpd *d, uid_t uid)
{
	const struct cpuhpd_list *pos;
	unsigned n = 0;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		const struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		n += s->conn && s->uid == uid;
	}
	return n;
}

bool cpuhpd_states_any(const struct cpuhpd *d)
{
	return d->states.nstates != 0;
}
