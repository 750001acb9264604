/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpctl status: the daemon's state. */
#include <errno.h>
#include <inttypes.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static void status_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl status [--json]\n"
	           "\n"
	           "Print cpuhpd's view: online, offline, possible and present CPUs, the\n"
	           "leases held (the fast ones, taken in shared memory, as well), whether a\n"
	           "hotplug is waiting or running, what is queued, how many hotplug\n"
	           "freezes are held (cpuhpctl freeze), the hotplug states registered\n"
	           "('cpuhpctl states' lists them), and SMT: smt/control and whether\n"
	           "smt/active says a core runs more than one thread.\n"
	           "\n"
	           "  -J, --json  one JSON object (schema in cpuhpctl(8))\n");
}

static void print_set(const char *label, const struct cpuhp_cpuset *set)
{
	char *s = cpuhpctl_format(set);

	printf("%-13s %s\n", label, !s ? "(out of memory)" : s[0] ? s : "(none)");
	free(s);
}

static const char *writer_text(enum cpuhp_client_writer_state w)
{
	switch (w) {
	case CPUHP_CLIENT_WRITER_WAITING:
		return "waiting for leases to be released";
	case CPUHP_CLIENT_WRITER_RUNNING:
		return "hotplug running";
	default:
		return "idle";
	}
}

static void json_field_cpus(const char *name, const struct cpuhp_cpuset *set)
{
	printf("\"%s\":", name);
	cpuhpctl_json_cpus(stdout, set);
	putchar(',');
}

static void print_json(const struct cpuhp_client_status *st, long nstates)
{
	printf("{\"daemon_version\":");
	cpuhpctl_json_string(stdout, st->daemon_version);
	putchar(',');
	json_field_cpus("online", &st->online);
	json_field_cpus("offline", &st->offline);
	json_field_cpus("possible", &st->possible);
	json_field_cpus("present", &st->present);
	printf("\"leases_held\":%u,\"fast_leases_held\":%u,\"fast_holders\":%u,"
	       "\"fast_connections\":%u,\"fast_path\":",
	       st->leases_held, st->fast_leases_held, st->fast_holders, st->fast_connections);
	cpuhpctl_json_string(stdout, st->fast_path);
	printf(",\"writer\":\"%s\",\"pending_leases\":%u,\"pending_hotplugs\":%u,"
	       "\"connections\":%u,\"freezes\":%u,\"bypasses\":%" PRIu64 ",\"revocations\":%" PRIu64
	       ",\"states\":",
	       cpuhpctl_writer_name(st->writer), st->pending_leases, st->pending_hotplugs,
	       st->connections, st->freezes, st->bypasses, st->revocations);
	if (nstates < 0)
		printf("null");
	else
		printf("%ld", nstates);
	printf(",\"smt_control\":");
	if (st->smt_control[0])
		cpuhpctl_json_string(stdout, st->smt_control);
	else
		printf("null");
	printf(",\"smt_active\":%s,\"restart_grace_ms\":%u}\n", st->smt_active ? "true" : "false",
	       st->restart_grace_ms);
}

/*
 * The hotplug states registered, and their names in startup order in
 * *@names (to free; NULL if none or out of memory).
 * Return: how many; -1 if the daemon cannot say (one without states).
 */
static long count_states(struct cpuhp_client *c, char **names)
{
	struct cpuhp_client_state_info *s;
	size_t n, len = 0;
	char *buf;

	*names = NULL;
	if (cpuhp_client_list_states(c, &s, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		len += strlen(s[i].name) + 2;
	buf = n ? malloc(len + 1) : NULL;
	if (buf) {
		buf[0] = '\0';
		for (size_t i = 0; i < n; i++) {
			strcat(buf, i ? ", " : "");
			strcat(buf, s[i].name);
		}
	}
	*names = buf;
	free(s);
	return (long)n;
}

int cpuhpctl_status(struct cpuhpctl *ctl, int argc, char **argv)
{
	struct cpuhp_client_status *st;
	struct cpuhp_client *c;
	char *names = NULL;
	long nstates = -1;
	int ret, err;

	ret = cpuhpctl_parse_no_options(ctl, argc, argv, status_usage);
	if (ret >= 0)
		return ret;
	st = malloc(sizeof(*st));
	if (!st) {
		fprintf(stderr, "cpuhpctl: out of memory\n");
		return CPUHPCTL_EXIT_FAILED;
	}
	ret = cpuhpctl_connect(ctl, &c);
	if (ret) {
		free(st);
		return ret;
	}
	err = cpuhp_client_status(c, st);
	if (err >= 0)
		nstates = count_states(c, &names);
	if (err < 0) {
		ret = cpuhpctl_fail(ctl, c, err, "status");
	} else if (ctl->json) {
		print_json(st, nstates);
	} else {
		printf("%-13s %s\n",
		       "daemon:", st->daemon_version[0] ? cpuhpctl_safe(st->daemon_version) : "?");
		print_set("online:", &st->online);
		print_set("offline:", &st->offline);
		print_set("possible:", &st->possible);
		print_set("present:", &st->present);
		printf("%-13s %u\n", "leases held:", st->leases_held);
		/* Part of the line above: leases counted in shared memory, no round trip. */
		printf("%-13s %u held by %u client(s); %u connection(s) use it (%s)\n",
		       "fast leases:", st->fast_leases_held, st->fast_holders, st->fast_connections,
		       cpuhpctl_safe(st->fast_path));
		printf("%-13s %s\n", "writer:", writer_text(st->writer));
		printf("%-13s %u lease request(s), %u hotplug request(s)\n",
		       "pending:", st->pending_leases, st->pending_hotplugs);
		printf("%-13s %u\n", "connections:", st->connections);
		printf("%-13s %u%s\n", "freezes:", st->freezes,
		       st->freezes ? " (hotplug refused: see 'cpuhpctl leases')" : "");
		printf("%-13s %" PRIu64 " bypass(es): CPUs changed behind cpuhpd while leases "
		       "were held%s; %" PRIu64 " lease(s) revoked (--max-lease-ms)\n",
		       "policy:", st->bypasses, st->bypasses ? " (see cpuhpd's log)" : "",
		       st->revocations);
		if (nstates >= 0)
			printf("%-13s %ld%s%s%s\n", "states:", nstates, nstates ? " (" : "",
			       cpuhpctl_safe(names), nstates ? ")" : "");
		if (st->smt_control[0])
			printf("%-13s control %s, %s\n", "smt:", cpuhpctl_safe(st->smt_control),
			       st->smt_active ? "active (a core runs two or more threads)"
			                      : "not active");
		else
			printf("%-13s (no smt/control in cpuhpd's sysfs tree)\n", "smt:");
		cpuhpctl_print_grace(st->restart_grace_ms);
	}
	cpuhp_client_close(c);
	free(names);
	free(st);
	return ret;
}
