/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl cpus: each possible CPU as a row, like `lscpu -e`, offline ones
 * with the topology cpuhpd read when they were last online (the kernel
 * shows none for them), and who holds what on each: the hotplug states
 * started on it, the hotplug requests that name it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"

static void cpus_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl cpus [--output COLS] [--raw] [--noheadings] [--json]\n"
	           "\n"
	           "List each possible CPU, like lscpu -e: its NUMA node, socket, core and SMT\n"
	           "siblings, whether it is online, the hotplug states started on it and the\n"
	           "hotplug request that names it. The kernel shows no topology for an offline\n"
	           "CPU: cpuhpd gives the one it read when the CPU was last online\n"
	           "(TOPOLOGY says remembered), across its restarts; one never seen online\n"
	           "since boot is unknown ('-').\n"
	           "\n"
	           "  -o, --output COLS  the columns, e.g. CPU,ONLINE,NODE; +COLS adds to the\n"
	           "                     default ones\n"
	           "  -r, --raw          unaligned, blanks and control characters as \\xHH\n"
	           "  -n, --noheadings   no header line\n"
	           "  -J, --json         one JSON object: the CPUs as rows keyed by the\n"
	           "                     columns' names (schema in cpuhpctl(8))\n");
}

enum {
	COL_CPU,
	COL_NODE,
	COL_SOCKET,
	COL_CORE,
	COL_SIBLINGS,
	COL_ONLINE,
	COL_PRESENT,
	COL_TOPOLOGY,
	COL_STATES,
	COL_HOTPLUG,
	COL_HOTPLUGS,
	COL_HOTPLUG_SEQ,
	COL_HOTPLUG_ACTION,
	COL_HOTPLUG_STATE,
	NCOLS
};

#define T CPUHPCTL_COL_TEXT
#define J CPUHPCTL_COL_JSON
#define R CPUHPCTL_COL_RIGHT
static const struct cpuhpctl_column columns[NCOLS] = {
    [COL_CPU] = {"CPU", "the CPU's number", T | J | R},
    [COL_NODE] = {"NODE", "its NUMA node", T | J | R},
    [COL_SOCKET] = {"SOCKET", "its package (topology/physical_package_id)", T | J | R},
    [COL_CORE] = {"CORE", "its core within the package (topology/core_id)", T | J | R},
    [COL_SIBLINGS] = {"SIBLINGS", "its core's SMT threads online when read (JSON: an array)",
                      T | J},
    [COL_ONLINE] = {"ONLINE", "yes or no (JSON: true or false)", T | J},
    [COL_PRESENT] = {"PRESENT", "yes or no: in the machine now (JSON: true or false)", J},
    [COL_TOPOLOGY] = {"TOPOLOGY",
                      "live (read since it came online), remembered (read when it was "
                      "last online) or unknown",
                      T | J},
    [COL_STATES] = {"STATES", "the hotplug states started on it (JSON: an array)", T | J},
    [COL_HOTPLUG] = {"HOTPLUG",
                     "the first hotplug request naming it: 'offline #N running', "
                     "'online #N queued +M' (M more)",
                     T},
    [COL_HOTPLUGS] = {"HOTPLUGS", "how many hotplug requests name it", J | R},
    [COL_HOTPLUG_SEQ] = {"HOTPLUG_SEQ", "the first one's number, as cpuhpd's log has it", J | R},
    [COL_HOTPLUG_ACTION] = {"HOTPLUG_ACTION", "the first one's direction: online or offline", J},
    [COL_HOTPLUG_STATE] = {"HOTPLUG_STATE", "the first one's state: queued, waiting or running", J},
};
#undef T
#undef J
#undef R

static const char *const topology_names[] = {
    [CPUHP_CLIENT_TOPOLOGY_UNKNOWN] = "unknown",
    [CPUHP_CLIENT_TOPOLOGY_LIVE] = "live",
    [CPUHP_CLIENT_TOPOLOGY_REMEMBERED] = "remembered",
};

/* "offline #12 running", "online #4 queued +2"; the first request's fields for JSON. */
static void hotplug_cells(struct cpuhpctl_table *t, const struct cpuhp_client_cpu_info *ci)
{
	const char *action = ci->hotplug_online ? "online" : "offline";
	const char *state = ci->hotplug_state == CPUHP_CLIENT_WRITER_IDLE
	                        ? "queued"
	                        : cpuhpctl_writer_name(ci->hotplug_state);
	char buf[96];
	int n;

	cpuhpctl_table_num(t, COL_HOTPLUGS, ci->hotplugs);
	if (!ci->hotplugs) {
		cpuhpctl_table_none(t, COL_HOTPLUG);
		cpuhpctl_table_none(t, COL_HOTPLUG_SEQ);
		cpuhpctl_table_none(t, COL_HOTPLUG_ACTION);
		cpuhpctl_table_none(t, COL_HOTPLUG_STATE);
		return;
	}
	n = snprintf(buf, sizeof(buf), "%s #%" PRIu64 " %s", action, ci->hotplug_seq, state);
	if (ci->hotplugs > 1)
		snprintf(buf + n, sizeof(buf) - (size_t)n, " +%u", ci->hotplugs - 1);
	cpuhpctl_table_str(t, COL_HOTPLUG, buf);
	cpuhpctl_table_num(t, COL_HOTPLUG_SEQ, (long long)ci->hotplug_seq);
	cpuhpctl_table_str(t, COL_HOTPLUG_ACTION, action);
	cpuhpctl_table_str(t, COL_HOTPLUG_STATE, state);
}

/* One row.  Return: 0 or -ENOMEM. */
static int row(struct cpuhpctl_table *t, const struct cpuhp_client_cpu_info *ci)
{
	bool known = ci->topology != CPUHP_CLIENT_TOPOLOGY_UNKNOWN;
	const char **names = NULL;
	struct cpuhp_cpuset sib;

	if (cpuhpctl_table_row(t) < 0)
		return -1;
	cpuhpctl_table_num(t, COL_CPU, ci->cpu);
	if (known && ci->node >= 0)
		cpuhpctl_table_num(t, COL_NODE, ci->node);
	else
		cpuhpctl_table_none(t, COL_NODE);
	if (known) {
		cpuhpctl_table_num(t, COL_SOCKET, ci->socket);
		cpuhpctl_table_num(t, COL_CORE, ci->core);
	} else {
		cpuhpctl_table_none(t, COL_SOCKET);
		cpuhpctl_table_none(t, COL_CORE);
	}
	if (known && !cpuhp_cpuset_parse(ci->siblings, &sib))
		cpuhpctl_table_cpus(t, COL_SIBLINGS, &sib);
	else
		cpuhpctl_table_none(t, COL_SIBLINGS);
	cpuhpctl_table_bool(t, COL_ONLINE, ci->online);
	cpuhpctl_table_bool(t, COL_PRESENT, ci->present);
	cpuhpctl_table_str(t, COL_TOPOLOGY, topology_names[ci->topology]);
	if (ci->n_states) {
		names = calloc(ci->n_states, sizeof(*names));
		if (!names)
			return -1;
		for (size_t k = 0; k < ci->n_states; k++)
			names[k] = ci->states[k]->name;
	}
	cpuhpctl_table_strs(t, COL_STATES, names, ci->n_states);
	free(names);
	hotplug_cells(t, ci);
	return 0;
}

int cpuhpctl_cpus(struct cpuhpctl *ctl, int argc, char **argv)
{
	struct cpuhp_client_cpu_list *l;
	struct cpuhpctl_listing opts;
	struct cpuhpctl_table *t;
	struct cpuhp_client *c;
	size_t online = 0, remembered = 0, unknown = 0;
	int ret, err;

	ret = cpuhpctl_parse_listing(ctl, argc, argv, cpus_usage, columns, NCOLS, &opts);
	if (ret >= 0)
		return ret;
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	err = cpuhp_client_list_cpus(c, &l);
	if (err < 0) {
		ret = cpuhpctl_fail(ctl, c, err, "cpus");
		cpuhp_client_close(c);
		return ret;
	}
	cpuhp_client_close(c);
	t = cpuhpctl_table_new(ctl, "cpus", columns, NCOLS, &opts);
	for (size_t i = 0; t && i < l->n_cpus; i++) {
		const struct cpuhp_client_cpu_info *ci = &l->cpus[i];

		if (row(t, ci) < 0)
			break;
		online += ci->online;
		remembered += !ci->online && ci->topology == CPUHP_CLIENT_TOPOLOGY_REMEMBERED;
		unknown += ci->topology == CPUHP_CLIENT_TOPOLOGY_UNKNOWN;
	}
	if (!t || cpuhpctl_table_print(t) < 0) {
		fprintf(stderr, "cpuhpctl cpus: out of memory\n");
		ret = CPUHPCTL_EXIT_FAILED;
	} else if (ctl->json) {
		printf("}\n");
	} else if (!opts.raw && !opts.noheadings) {
		printf("\n%zu CPU(s), %zu online", l->n_cpus, online);
		if (remembered)
			printf("; the topology of %zu offline CPU(s) as cpuhpd saw it last",
			       remembered);
		if (unknown)
			printf("; %zu CPU(s) not seen online since boot: topology unknown",
			       unknown);
		printf(".\n");
	}
	cpuhpctl_table_free(t);
	cpuhp_client_cpu_list_free(l);
	return fflush(stdout) ? CPUHPCTL_EXIT_FAILED : ret;
}
