/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl online / offline: one request to cpuhpd, then one chcpu-like line
 * per CPU ("CPU 3 disabled", "CPU 0 is not hot pluggable") and chcpu's exit
 * codes: 0 all done, 1 none, 64 some.  With hotplug states registered, each
 * CPU's line is followed by one per state callback run for it: what ran and
 * how long it took ("  teardown of state pool: 1.2 ms").
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpuhp/cpuset.h>

#include "ctl.h"

static void usage(FILE *f, const char *cmd)
{
	fprintf(f,
	        "Usage: cpuhpctl %s [--timeout MS] [--json] LIST\n"
	        "\n"
	        "%s the CPUs in LIST in one hotplug: cpuhpd waits until no reader\n"
	        "lease is held, then writes each CPU's online file.  LIST is a range\n"
	        "list such as 2-3,5; a range may take a stride, 0-7:2 (every 2nd) or\n"
	        "0-15:2/4 (2 of every 4).  Needs root or membership in cpuhpd's admin\n"
	        "group.\n"
	        "\n"
	        "  -t, --timeout MS  wait at most MS ms for leases to be released, then\n"
	        "                    give up with nothing changed (default %u; 0:\n"
	        "                    fail at once, exit 75, if any lease is held); a\n"
	        "                    hotplug state's call still unanswered then is cut\n"
	        "                    and that CPU rolled back (ETIMEDOUT)\n"

	        "  -j, --json        one JSON object: the result of each CPU, or the\n"
	        "                    error (schema in cpuhpctl(8))\n",
	        cmd, !strcmp(cmd, "online") ? "Bring online" : "Take offline",
	        CPUHPCTL_DEFAULT_TIMEOUT_MS);
}

/*
 * The present mask, to tell a CPU that does not exist from one that cannot
 * be hotplugged (the kernel says ENOENT or EINVAL for both).  NULL if
 * nothing needs it or the daemon cannot say.
 */
struct cpuhp_client_status *
cpuhpctl_status_if_needed(struct cpuhp_client *c, const struct cpuhp_client_cpu_result *r, size_t n)
{
	struct cpuhp_client_status *st;
	size_t i;

	for (i = 0; i < n; i++)
		if (r[i].error == -ENOENT || r[i].error == -EINVAL)
			break;
	if (i == n)
		return NULL;
	st = malloc(sizeof(*st));
	if (st && cpuhp_client_status(c, st) < 0) {
		free(st);
		st = NULL;
	}
	return st;
}

void cpuhpctl_report_cpu(const struct cpuhp_client_cpu_result *r, bool online,
                         const struct cpuhp_client_status *st)
{
	const char *verb = online ? "enable" : "disable";

	if (!r->error) {
		printf(r->changed ? "CPU %u %sd\n" : "CPU %u is already %sd\n", r->cpu, verb);
		return;
	}
	if ((r->error == -ENOENT || r->error == -EINVAL) && st &&
	    !cpuhp_cpuset_has(&st->present, r->cpu))
		fprintf(stderr, "cpuhpctl: CPU %u does not exist\n", r->cpu);
	else if (r->error == -ENOENT)
		fprintf(stderr, "cpuhpctl: CPU %u is not hot pluggable\n", r->cpu);
	else if (r->error == -EBUSY && !online && !r->message[0])
		fprintf(stderr,
		        "cpuhpctl: CPU %u disable failed (last online CPU, or hotplug disabled)\n",
		        r->cpu);
	else
		fprintf(stderr, "cpuhpctl: CPU %u %s failed: %s\n", r->cpu, verb,
		        r->message[0] ? r->message : strerror(-r->error));
}

/*
 * One CPU's state runs, in order:
 * [{"state":S,"phase":"teardown"|"startup","rollback":B,"pid":N,"comm":S,"ms":F,
 *   "ok":B,"error":NAME|null,"timed_out":B,"client_gone":B,"message":S}]
 */
static void print_json_states(const struct cpuhp_client_cpu_result *r, size_t i)
{
	size_t n, k;
	const struct cpuhp_client_state_run *run = cpuhp_client_results_states(r, i, &n);

	putchar('[');
	for (k = 0; k < n; k++, run++) {
		printf("%s{\"state\":", k ? "," : "");
		cpuhpctl_json_string(stdout, run->state);
		printf(",\"phase\":\"%s\",\"rollback\":%s,\"pid\":%d,\"comm\":",
		       run->teardown ? "teardown" : "startup", run->rollback ? "true" : "false",
		       run->pid);
		cpuhpctl_json_string(stdout, run->comm);
		printf(",\"ms\":%.3f,\"ok\":%s,\"error\":", (double)run->micros / 1000,
		       run->error ? "false" : "true");
		cpuhpctl_json_errno(stdout, run->error);
		printf(",\"timed_out\":%s,\"client_gone\":%s,\"message\":",
		       run->timed_out ? "true" : "false", run->client_gone ? "true" : "false");
		cpuhpctl_json_string(stdout, run->error && !run->message[0] ? strerror(-run->error)
		                                                            : run->message);
		putchar('}');
	}
	putchar(']');
}

/* "results":[{"cpu":N,"ok":B,"changed":B,"error":NAME|null,"message":S,"states":[...]}] */
void cpuhpctl_json_results(const struct cpuhp_client_cpu_result *r, size_t n)
{
	printf("\"results\":[");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"cpu\":%u,\"ok\":%s,\"changed\":%s,\"error\":", i ? "," : "", r[i].cpu,
		       r[i].error ? "false" : "true", r[i].changed ? "true" : "false");
		cpuhpctl_json_errno(stdout, r[i].error);
		printf(",\"message\":");
		cpuhpctl_json_string(stdout, r[i].error && !r[i].message[0] ? strerror(-r[i].error)
		                                                            : r[i].message);
		printf(",\"states\":");
		print_json_states(r, i);
		putchar('}');
	}
	putchar(']');
}

/* {"online":B,"results":[...]} */
static void print_json(const struct cpuhp_client_cpu_result *r, size_t n, bool online)
{
	printf("{\"online\":%s,", online ? "true" : "false");
	cpuhpctl_json_results(r, n);
	printf("}\n");
}

/*
 * What the cpuN/online files of @set say: *@known the CPUs whose file could
 * be read, *@on those of them online.  cpuhpctl reads them only to tell,
 * if cpuhpd dies in the middle of a hotplug, which CPUs it had changed.
 */
static void read_files(const char *root, const struct cpuhp_cpuset *set, struct cpuhp_cpuset *known,
                       struct cpuhp_cpuset *on)
{
	cpuhp_cpuset_zero(known);
	cpuhp_cpuset_zero(on);
	for (int cpu = cpuhp_cpuset_next(set, -1); cpu >= 0; cpu = cpuhp_cpuset_next(set, cpu)) {
		bool online;

		if (cpuhp_sysfs_read_online(root, (unsigned)cpu, &online) < 0)
			continue;
		cpuhp_cpuset_add(known, (unsigned)cpu);
		if (online)
			cpuhp_cpuset_add(on, (unsigned)cpu);
	}
}

/*
 * cpuhpd went away before answering (killed, crashed): it may have written
 * some of the files already.  Read them again and say, per CPU, what they
 * show against what they showed before the request.
 * Return: 0 if every CPU is in the asked state, 64 if some changed, else 69.
 */
static int report_lost(const struct cpuhpctl *ctl, const struct cpuhp_cpuset *set, bool online,
                       const struct cpuhp_cpuset *known_before,
                       const struct cpuhp_cpuset *on_before, bool json)
{
	/* With --json, stdout has its one object (the error): the words go to stderr. */
	FILE *out = json ? stderr : stdout;
	const char *verb = online ? "enable" : "disable";
	struct cpuhp_cpuset known, on;
	unsigned n = 0, done = 0, changed = 0;

	read_files(ctl->sysfs_root, set, &known, &on);
	fprintf(stderr,
	        "cpuhpctl: cpuhpd went away during the hotplug; what %s/devices/system/cpu/cpuN/"
	        "online say now:\n",
	        ctl->sysfs_root);
	for (int cpu = cpuhp_cpuset_next(set, -1); cpu >= 0; cpu = cpuhp_cpuset_next(set, cpu)) {
		unsigned u = (unsigned)cpu;
		bool now = cpuhp_cpuset_has(&on, u);

		n++;
		if (!cpuhp_cpuset_has(&known, u)) {
			fprintf(stderr,
			        "cpuhpctl: CPU %u: cannot tell (its online file cannot be read)\n",
			        u);
			continue;
		}
		if (now != online) {
			fprintf(stderr, "cpuhpctl: CPU %u not %sd\n", u, verb);
			continue;
		}
		done++;
		if (cpuhp_cpuset_has(known_before, u) && cpuhp_cpuset_has(on_before, u) == online) {
			fprintf(out, "CPU %u is already %sd\n", u, verb);
		} else {
			fprintf(out, "CPU %u %sd\n", u, verb);
			changed++;
		}
	}
	if (done == n)
		return CPUHPCTL_EXIT_OK;
	if (!changed) {
		fprintf(stderr, "cpuhpctl: nothing changed; is cpuhpd running again? ('cpuhpctl "
		                "status')\n");
		return CPUHPCTL_EXIT_UNREACHABLE;
	}
	return CPUHPCTL_EXIT_PARTIAL;
}

/* The state callbacks run for one CPU, indented under its line, on stdout. */
static void report_states(const struct cpuhp_client_cpu_result *r, size_t i)
{
	size_t n, k;
	const struct cpuhp_client_state_run *run = cpuhp_client_results_states(r, i, &n);

	for (k = 0; k < n; k++, run++) {
		printf("  %s%s of state %s (pid %d, %s): ", run->rollback ? "rollback " : "",
		       run->teardown ? "teardown" : "startup", run->state, run->pid, run->comm);
		if (run->client_gone)
			printf("its client is gone, counted as done after %.1f ms\n",
			       (double)run->micros / 1000);
		else if (run->error)
			printf("failed after %.1f ms: %s\n", (double)run->micros / 1000,
			       run->message[0] ? run->message : strerror(-run->error));
		else
			printf("%.1f ms\n", (double)run->micros / 1000);
	}
}

/* Parse the options and LIST.  Return: -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, unsigned *timeout_ms, const char **list,
                      struct cpuhp_cpuset *set, bool *json)
{
	static const struct option opts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int opt, err;

	while ((opt = cpuhpctl_getopt(argc, argv, "+:t:jh", opts, argv[0])) != -1) {
		if (opt == 'j') {
			*json = true;
			continue;
		}
		if (opt == 't') {
			if (cpuhpctl_parse_timeout(optarg, timeout_ms) < 0)
				return CPUHPCTL_EXIT_USAGE;
			continue;
		}
		if (opt == 'h')
			usage(stdout, argv[0]);
		return opt == 'h' ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_USAGE;
	}
	if (argc - optind != 1) {
		fprintf(stderr, "cpuhpctl %s: %s\nTry 'cpuhpctl %s --help'.\n", argv[0],
		        optind == argc ? "which CPUs? give a list such as 2-3,5"
		                       : "give one CPU list (no spaces, e.g. 2-3,5)",
		        argv[0]);
		return CPUHPCTL_EXIT_USAGE;
	}
	*list = argv[optind];
	/* Say what is wrong with the list here, before bothering the daemon. */
	err = cpuhp_cpuset_parse(*list, set);
	if (err == -ERANGE)
		fprintf(stderr,
		        "cpuhpctl %s: CPU list '%s' is out of range: CPU numbers and strides are "
		        "below %d\n",
		        argv[0], *list, CPUHP_CPUSET_MAX);
	else if (err < 0)
		fprintf(stderr,
		        "cpuhpctl %s: '%s' is not a CPU list; expected e.g. 2-3,5 or 0-7:2\n",
		        argv[0], *list);
	else if (!cpuhp_cpuset_count(set))
		fprintf(stderr, "cpuhpctl %s: '%s' names no CPU; give a list such as 2-3,5\n",
		        argv[0], *list);
	return err < 0 || !cpuhp_cpuset_count(set) ? CPUHPCTL_EXIT_USAGE : -1;
}

int cpuhpctl_set_online(const struct cpuhpctl *ctl, int argc, char **argv, bool online)
{
	unsigned timeout_ms = CPUHPCTL_DEFAULT_TIMEOUT_MS;
	struct cpuhp_cpuset set, known, on;
	struct cpuhp_client_cpu_result *r;
	struct cpuhp_client_status *st;
	struct cpuhp_client *c;
	size_t n, i;
	const char *list;
	char what[128];
	bool json = ctl->json;
	int ret, err;

	ret = parse_args(argc, argv, &timeout_ms, &list, &set, &json);
	if (ret >= 0)
		return ret;
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	read_files(ctl->sysfs_root, &set, &known, &on);
	err = cpuhp_client_set_online_results(c, list, online, timeout_ms, &r, &n);
	if (err < 0) {
		snprintf(what, sizeof(what), "%s %s", argv[0], list);
		ret = json ? cpuhpctl_json_fail(c, err, what) : cpuhpctl_fail(c, err, what);
		cpuhp_client_close(c);
		/* The connection died under the request: cpuhpd may have done part of it. */
		if (err == -ECONNRESET || err == -EPIPE)
			ret = report_lost(ctl, &set, online, &known, &on, json);
		return ret;
	}
	st = cpuhpctl_status_if_needed(c, r, n);
	if (json)
		print_json(r, n, online);
	else
		for (i = 0; i < n; i++) {
			cpuhpctl_report_cpu(&r[i], online, st);
			fflush(stderr);
			report_states(r, i);
			fflush(stdout);
		}
	free(st);
	ret = cpuhpctl_results_exit(r, n);
	cpuhp_client_results_free(r);
	cpuhp_client_close(c);
	return ret;
}

int cpuhpctl_results_exit(const struct cpuhp_client_cpu_result *r, size_t n)
{
	size_t done = 0;

	for (size_t i = 0; i < n; i++)
		done += !r[i].error;
	if (done == n)
		return CPUHPCTL_EXIT_OK;
	return done ? CPUHPCTL_EXIT_PARTIAL : CPUHPCTL_EXIT_FAILED;
}
