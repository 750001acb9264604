/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The registry of hotplug states (state.h): each state's record, its
 * references, and the list in startup order.
 *
 * Invariants:
 * - A state's ->cpus is the set of CPUs whose startup succeeded and whose
 *   teardown has not: what the client believes is online for it.
 * - A state is freed when it left the registry and no step refers to it.
 * - Startup order: the PREPARE section before the ONLINE one, priority in
 *   each, then registration order; a state's instances follow it, oldest
 *   first, so that a walk of the list calls them where it calls a state.
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
	if (--s->refs == 0) {
		if (s->parent)
			cpuhpd_state_put(s->parent);
		free(s);
	}
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
	if (s->parent) {
		s->parent->ninst--;
		d->states.ninstances--;
	} else {
		d->states.nstates--;
	}
	if (cpuhpd_state_alive(s))
		cpuhpd_fdstore_conn_changed(s->conn);
	cpuhpd_state_put(s);
}

/* Whether @a starts after @b: its section, then its priority. */
static bool starts_after(const struct cpuhpd_state *a, const struct cpuhpd_state *b)
{
	if (a->prepare != b->prepare)
		return b->prepare;
	return a->priority > b->priority;
}

/* Startup order (see the top); an instance after its state's last. */
void cpuhpd_state_insert(struct cpuhpd *d, struct cpuhpd_state *s)
{
	struct cpuhpd_list *pos;

	if (s->parent) {
		pos = s->parent->node.next;
		while (pos != &d->states.list &&
		       cpuhpd_container_of(pos, struct cpuhpd_state, node)->parent == s->parent)
			pos = pos->next;
		s->parent->ninst++;
		d->states.ninstances++;
	} else {
		cpuhpd_list_for_each(pos, &d->states.list)
		{
			struct cpuhpd_state *o =
			    cpuhpd_container_of(pos, struct cpuhpd_state, node);

			if (!o->parent && starts_after(o, s))
				break;
		}
		d->states.nstates++;
	}
	/* Before pos: add_tail on pos links s just in front of it. */
	cpuhpd_list_add_tail(pos, &s->node);
	s->listed = true;
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

		if (!s->parent && !strcmp(s->name, name))
			return s;
	}
	return NULL;
}

struct cpuhpd_state *cpuhpd_state_of_conn(const struct cpuhpd *d, const struct cpuhpd_conn *c,
                                          uint64_t id)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->states.list)
	{
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (!s->parent && s->id == id && s->conn == c)
			return s;
	}
	return NULL;
}

struct cpuhpd_state *cpuhpd_instance_find(const struct cpuhpd *d, const struct cpuhpd_state *parent,
                                          const char *name, uint64_t id)
{
	struct cpuhpd_list *pos;

	/* A state's instances follow it in the list. */
	for (pos = parent->node.next; parent->listed && pos != &d->states.list; pos = pos->next) {
		struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		if (s->parent != parent)
			break;
		if (name ? !strcmp(s->inst, name) : s->id == id)
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
		const struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		n += s->conn == c && !s->parent;
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

		n += s->conn && s->uid == uid && !s->parent;
	}
	return n;
}

bool cpuhpd_states_any(const struct cpuhpd *d)
{
	return d->states.nstates != 0;
}
