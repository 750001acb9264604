/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpctl status and leases: print the daemon's state, and who holds what. */
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
	           "  -j, --json  one JSON object (schema in cpuhpctl(8))\n");
}

static void leases_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl leases [--json]\n"
	           "\n"
	           "List every lease held, oldest first, like systemd-inhibit --list: who\n"
	           "(as the holder named itself, else its command), pid, uid, why, how long\n"
	           "it has been held, and whether it is a socket lease or a connection's\n"
	           "fast leases (counted in shared memory; listed once with their count).\n"
	           "Then the hotplug requests waiting behind them, and who asked; then\n"
	           "the hotplug freezes (cpuhpctl freeze), with who holds them and why.\n"
	           "\n"
	           "  -j, --json  one JSON object (schema in cpuhpctl(8))\n");
}

int cpuhpctl_parse_no_options(int argc, char **argv, void (*help)(FILE *), bool *json)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {0}};
	int opt;

	while ((opt = cpuhpctl_getopt(argc, argv, "+:jh", opts, argv[0])) != -1) {
		if (opt == 'j') {
			*json = true;
			continue;
		}
		if (opt == 'h')
			help(stdout);
		return opt == 'h' ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_USAGE;
	}
	if (optind < argc) {
		fprintf(stderr,
		        "cpuhpctl %s: unexpected argument '%s'\nTry 'cpuhpctl %s --help'.\n",
		        argv[0], argv[optind], argv[0]);
		return CPUHPCTL_EXIT_USAGE;
	}
	return -1;
}

/* The restart grace, if one runs (cpuhpd --restart-grace-ms). */
static void print_grace(unsigned ms)
{
	if (ms)
		printf("%-13s hotplugs held %u.%03u s more: the cpuhpd before this one ended "
		       "without handing its clients over (see cpuhpd's log)\n",
		       "restart:", ms / 1000, ms % 1000);
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

int cpuhpctl_status(const struct cpuhpctl *ctl, int argc, char **argv)
{
	struct cpuhp_client_status *st;
	struct cpuhp_client *c;
	bool json = ctl->json;
	char *names = NULL;
	long nstates = -1;
	int ret, err;

	ret = cpuhpctl_parse_no_options(argc, argv, status_usage, &json);
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
		ret = json ? cpuhpctl_json_fail(c, err, "status") : cpuhpctl_fail(c, err, "status");
	} else if (json) {
		print_json(st, nstates);
	} else {
		printf("%-13s %s\n", "daemon:", st->daemon_version[0] ? st->daemon_version : "?");
		print_set("online:", &st->online);
		print_set("offline:", &st->offline);
		print_set("possible:", &st->possible);
		print_set("present:", &st->present);
		printf("%-13s %u\n", "leases held:", st->leases_held);
		/* Part of the line above: leases counted in shared memory, no round trip. */
		printf("%-13s %u held by %u client(s); %u connection(s) use it (%s)\n",
		       "fast leases:", st->fast_leases_held, st->fast_holders, st->fast_connections,
		       st->fast_path);
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
			       names ? names : "", nstates ? ")" : "");
		if (st->smt_control[0])
			printf("%-13s control %s, %s\n", "smt:", st->smt_control,
			       st->smt_active ? "active (a core runs two or more threads)"
			                      : "not active");
		else
			printf("%-13s (no smt/control in cpuhpd's sysfs tree)\n", "smt:");
		print_grace(st->restart_grace_ms);
	}
	cpuhp_client_close(c);
	free(names);
	free(st);
	return ret;
}

static void print_duration(uint64_t ms)
{
	if (ms < 10000)
		printf("%6.1fs", (double)ms / 1000);
	else if (ms < 3600000)
		printf("%5" PRIu64 "m%02" PRIu64, ms / 60000, ms / 1000 % 60);
	else
		printf("%5" PRIu64 "h%02" PRIu64, ms / 3600000, ms / 60000 % 60);
}

static void print_leases_text(const struct cpuhp_client_lease_list *l)
{
	printf("%-16s %7s %6s %-7s %5s %7s  %s\n", "WHO", "PID", "UID", "KIND", "COUNT", "HELD",
	       "WHY");
	for (size_t i = 0; i < l->n_leases; i++) {
		const struct cpuhp_client_lease_info *li = &l->leases[i];

		printf("%-16s %7u %6u %-7s %5u%s", li->who[0] ? li->who : li->comm, li->pid,
		       li->uid, li->fast ? "fast" : "socket", li->count, li->fast ? ">" : " ");
		/* Fast: since cpuhpd first saw them, so at least that long. */
		print_duration(li->held_ms);
		printf("  %s\n", li->why);
	}
	printf("\n%zu holder(s) listed.\n", l->n_leases);
	for (size_t i = 0; i < l->n_hotplugs; i++) {
		const struct cpuhp_client_hotplug_info *h = &l->hotplugs[i];
		char *cpus = cpuhpctl_format(&h->cpus);

		if (i == 0)
			printf("\nHotplug requests:\n");
		printf("  #%" PRIu64 " %s %s: %s, asked by pid %u (%s) uid %u, %" PRIu64
		       " ms ago, timeout %u ms\n",
		       h->seq, h->online ? "online" : "offline", cpus ? cpus : "?",
		       h->state == CPUHP_CLIENT_WRITER_RUNNING   ? "running"
		       : h->state == CPUHP_CLIENT_WRITER_WAITING ? "waiting for leases"
		                                                 : "queued",
		       h->pid, h->comm, h->uid, h->waited_ms, h->timeout_ms);
		free(cpus);
	}
	for (size_t i = 0; i < l->n_freezes; i++) {
		const struct cpuhp_client_freeze_info *fz = &l->freezes[i];

		if (i == 0)
			printf("\nHotplug frozen (online/offline fail at once):\n");
		printf("  freeze %" PRIu64 " by %s, pid %u uid %u, %s %" PRIu64 " ms%s%s%s\n",
		       fz->freeze_id, fz->who[0] ? fz->who : fz->comm, fz->pid, fz->uid,
		       fz->granted ? "held" : "waiting for the queued hotplugs,", fz->held_ms,
		       fz->why[0] ? ": '" : "", fz->why, fz->why[0] ? "'" : "");
	}
	if (l->restart_grace_ms)
		putchar('\n');
	print_grace(l->restart_grace_ms);
}

static void print_leases_json(const struct cpuhp_client_lease_list *l)
{
	printf("{\"leases\":[");
	for (size_t i = 0; i < l->n_leases; i++) {
		const struct cpuhp_client_lease_info *li = &l->leases[i];

		printf("%s{\"lease_id\":", i ? "," : "");
		if (li->fast)
			printf("null");
		else
			printf("%" PRIu64, li->lease_id);
		printf(",\"kind\":\"%s\",\"count\":%u,\"pid\":%u,\"uid\":%u,\"comm\":",
		       li->fast ? "fast" : "socket", li->count, li->pid, li->uid);
		cpuhpctl_json_string(stdout, li->comm);
		printf(",\"who\":");
		cpuhpctl_json_string(stdout, li->who);
		printf(",\"why\":");
		cpuhpctl_json_string(stdout, li->why);
		printf(",\"held_ms\":%" PRIu64 ",\"connection\":%u}", li->held_ms, li->connection);
	}
	printf("],\"hotplugs\":[");
	for (size_t i = 0; i < l->n_hotplugs; i++) {
		const struct cpuhp_client_hotplug_info *h = &l->hotplugs[i];

		printf("%s{\"seq\":%" PRIu64 ",\"online\":%s,\"cpus\":", i ? "," : "", h->seq,
		       h->online ? "true" : "false");
		cpuhpctl_json_cpus(stdout, &h->cpus);
		printf(",\"state\":\"%s\",\"pid\":%u,\"uid\":%u,\"comm\":",
		       h->state == CPUHP_CLIENT_WRITER_IDLE ? "queued"
		                                            : cpuhpctl_writer_name(h->state),
		       h->pid, h->uid);
		cpuhpctl_json_string(stdout, h->comm);
		printf(",\"waited_ms\":%" PRIu64 ",\"timeout_ms\":%u}", h->waited_ms,
		       h->timeout_ms);
	}
	printf("],\"freezes\":[");
	for (size_t i = 0; i < l->n_freezes; i++) {
		const struct cpuhp_client_freeze_info *fz = &l->freezes[i];

		printf("%s{\"freeze_id\":%" PRIu64 ",\"state\":\"%s\",\"pid\":%u,\"uid\":%u,"
		       "\"comm\":",
		       i ? "," : "", fz->freeze_id, fz->granted ? "held" : "pending", fz->pid,
		       fz->uid);
		cpuhpctl_json_string(stdout, fz->comm);
		printf(",\"who\":");
		cpuhpctl_json_string(stdout, fz->who);
		printf(",\"why\":");
		cpuhpctl_json_string(stdout, fz->why);
		printf(",\"held_ms\":%" PRIu64 ",\"connection\":%u}", fz->held_ms, fz->connection);
	}
	printf("],\"restart_grace_ms\":%u}\n", l->restart_grace_ms);
}

int cpuhpctl_leases(const struct cpuhpctl *ctl, int argc, char **argv)
{
	struct cpuhp_client_lease_list *l;
	struct cpuhp_client *c;
	bool json = ctl->json;
	int ret, err;

	ret = cpuhpctl_parse_no_options(argc, argv, leases_usage, &json);
	if (ret >= 0)
		return ret;
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	err = cpuhp_client_list_leases(c, &l);
	if (err < 0) {
		ret = json ? cpuhpctl_json_fail(c, err, "leases") : cpuhpctl_fail(c, err, "leases");
	} else {
		if (json)
			print_leases_json(l);
		else
			print_leases_text(l);
		cpuhp_client_lease_list_free(l);
	}
	cpuhp_client_close(c);
	return ret;
}
