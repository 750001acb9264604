/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpctl status: print the daemon's state. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static void status_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl status\n"
	           "\n"
	           "Print cpuhpd's view: online, offline, possible and present CPUs, the\n"
	           "leases held (the fast ones, taken in shared memory, as well), whether a\n"
	           "hotplug is waiting or running, what is queued.\n");
}

/* Only --help: the commands without options of their own. */
static int parse_no_options(int argc, char **argv, void (*help)(FILE *))
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {0}};
	int opt;

	while ((opt = cpuhpctl_getopt(argc, argv, "+:h", opts, argv[0])) != -1) {
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

int cpuhpctl_status(const struct cpuhpctl *ctl, int argc, char **argv)
{
	struct cpuhp_client_status *st;
	struct cpuhp_client *c;
	int ret, err;

	ret = parse_no_options(argc, argv, status_usage);
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
	if (err < 0) {
		ret = cpuhpctl_fail(c, err, "status");
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
	}
	cpuhp_client_close(c);
	free(st);
	return ret;
}
