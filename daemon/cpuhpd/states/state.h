/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The registry of hotplug states (registry.c), private to states/: a
 * state's record, its references (the registry's, and one per step naming
 * it), and the list of states in startup order (priority ascending, then
 * registration order).  Loop thread only.
 */
#ifndef CPUHPD_STATES_STATE_H
#define CPUHPD_STATES_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <cpuhp/cpuset.h>

#include "base/list.h"
#include "states.h"

struct cpuhpd;
struct cpuhpd_conn;

struct cpuhpd_state {
	struct cpuhpd_list node; /* in states.list while registered */
	bool listed;
	bool live; /* registered and its startups done: hotplugs and reconciles call it */
	uint64_t id;
	char name[CPUHPD_STATE_NAME_MAX]; /* an instance: its state's */
	/*
	 * The PREPARE section: startup before the write of an online, teardown
	 * after the write of an offline (doc/design.md, "Hotplug states: sections and instances").
	 * An instance has its state's.
	 */
	bool prepare;
	/* Called per instance, never itself: its ->cpus is unused. */
	bool multi;
	/*
	 * An instance: a record of its own, right after its state and its older
	 * instances in the registry, with its own ->cpus and ->unsure, so that
	 * the engine calls it as it calls a state.  Holds a reference to @parent.
	 */
	struct cpuhpd_state *parent;
	char inst[CPUHPD_STATE_NAME_MAX]; /* an instance's name, unique in its state */
	unsigned ninst;                   /* a multi state: its instances listed */
	int32_t priority;
	uint32_t deadline_ms;
	struct cpuhpd_conn *conn; /* NULL once its owner is gone */
	unsigned conn_id;
	uint64_t reg_req_id; /* Response.id of its calls */
	pid_t pid;
	uid_t uid;
	char comm[16];
	struct cpuhp_cpuset cpus; /* started on */
	/*
	 * CPUs a call was sent for and not answered on (engine.c's due()): a set,
	 * since a batch of a registration or a removal sends one state's calls on
	 * many CPUs in one write, and a call cut by a hotplug's timeout may still
	 * be unanswered when the next one goes out.
	 */
	struct cpuhp_cpuset unsure;
	unsigned refs; /* the registry's, and one per step naming it */
};

struct cpuhpd_state *cpuhpd_state_get(struct cpuhpd_state *s);
/* Drop a reference; the last one frees @s. */
void cpuhpd_state_put(struct cpuhpd_state *s);
/* Its owner's connection is open. */
bool cpuhpd_state_alive(const struct cpuhpd_state *s);
/* Into the registry, in startup order (takes the registry's reference). */
void cpuhpd_state_insert(struct cpuhpd *d, struct cpuhpd_state *s);
/* Out of it: no new work names it; steps that do skip it.  A no-op if out already. */
void cpuhpd_state_unlist(struct cpuhpd *d, struct cpuhpd_state *s);
/* 1 to CPUHPD_STATE_NAME_MAX - 1 printable characters, no spaces. */
bool cpuhpd_state_name_ok(const char *name);
/* The state (not instance) named @name. */
struct cpuhpd_state *cpuhpd_state_find(const struct cpuhpd *d, const char *name);
/* @c's state (not instance) with @id. */
struct cpuhpd_state *cpuhpd_state_of_conn(const struct cpuhpd *d, const struct cpuhpd_conn *c,
                                          uint64_t id);
/* @parent's instance named @name, or with @id (@name NULL). */
struct cpuhpd_state *cpuhpd_instance_find(const struct cpuhpd *d, const struct cpuhpd_state *parent,
                                          const char *name, uint64_t id);
/* The states (not instances) @c registered. */
unsigned cpuhpd_state_count_conn(const struct cpuhpd *d, const struct cpuhpd_conn *c);

#endif /* CPUHPD_STATES_STATE_H */
