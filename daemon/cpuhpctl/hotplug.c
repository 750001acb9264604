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
	        "Usage: cpuhpctl %s [--timeout T] [--force[=GRACE]] [--persist] [--json] LIST\n"
	        "\n"
	        "%s the CPUs in LIST in one hotplug: cpuhpd waits until no reader\n"
	        "lease is held, then writes each CPU's online file.  LIST is a range\n"
	        "list such as 2-3,5; a range may take a stride, 0-7:2 (every 2nd) or\n"
	        "0-15:2/4 (2 of every 4).  Needs root or membership in cpuhpd's admin\n"
	        "group.\n"
	        "\n"
	        "  -t, --timeout T  wait at most T (500ms, 5s, 2m; a bare number is ms)\n"
	        "                   for leases to be released, then give up with nothing\n"
	        "                   changed (default %us; 0: fail at once, exit 75, if\n"
	        "                   any lease is held); a hotplug state's call still\n"
	        "                   unanswered then is cut and that CPU rolled back\n"
	        "                   (ETIMEDOUT)\n"
	        "  -f, --force[=GRACE]\n"
	        "                   do not wait for the leases beyond GRACE (default %us;\n"
	        "                   write it --force=2s): their holders are told at once,\n"
	        "                   and those still held after GRACE are revoked and\n"
	        "                   listed; for a CPU that must go now.  --force-leases is\n"
	        "                   the same\n"
	        "  -p, --persist    change cpuhpd's plan too (cpuhpd.conf(5)), so that it\n"
	        "                   lasts across reboots and cpuhpd keeps it: %s the\n"
	        "                   plan's offline-cpus, in the drop-in cpuhpd writes\n"
	        "                   (written before the hotplug; kept if it fails).\n"
	        "                   Without it, bringing online a CPU the plan keeps\n"
	        "                   offline is refused ('cpuhpctl plan' shows the plan)\n"
	        "  -J, --json       one JSON object: the result of each CPU, or the\n"
	        "                   error (schema in cpuhpctl(8))\n",
	        cmd, !strcmp(cmd, "online") ? "Bring online" : "Take offline",
	        CPUHPCTL_DEFAULT_TIMEOUT_MS / 1000, CPUHPCTL_DEFAULT_FORCE_MS / 1000,
	        !strcmp(cmd, "online") ? "LIST leaves" : "LIST joins");
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
		        r->message[0] ? cpuhpctl_safe(r->message) : strerror(-r->error));
}

/*
 * One CPU's state runs, in order:
 * [{"state":S,"phase":"teardown"|"startup","rollback":B,"pid":N,"comm":S,"ms":F,
 *   "ok":B,"error":NAME|null,"timed_out":B,"client_gone":B,"message":S,
 *   "section":"prepare"|"online","instance":S|null}]
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
		printf(",\"section\":\"%s\",\"instance\":", run->prepare ? "prepare" : "online");
		if (run->instance[0])
			cpuhpctl_json_string(stdout, run->instance);
		else
			printf("null");
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

void cpuhpctl_report_revoked(const struct cpuhp_client_lease_info *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char t[CPUHPCTL_DURATION_MAX];

		printf("revoked: %s of pid %u (%s)%s%s%s, held %s\n",
		       v[i].fast ? "fast leases" : "lease", v[i].pid,
		       cpuhpctl_safe(v[i].who[0] ? v[i].who : v[i].comm), v[i].why[0] ? " '" : "",
		       cpuhpctl_safe(v[i].why), v[i].why[0] ? "'" : "",
		       cpuhpctl_format_duration(t, v[i].held_ms));
	}
}

void cpuhpctl_json_revoked(const struct cpuhp_client_lease_info *v, size_t n)
{
	printf(",\"revoked\":[");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"lease_id\":", i ? "," : "");
		if (v[i].fast)
			printf("null");
		else
			printf("%llu", (unsigned long long)v[i].lease_id);
		printf(",\"kind\":\"%s\",\"count\":%u,\"pid\":%u,\"uid\":%u,\"comm\":",
		       v[i].fast ? "fast" : "socket", v[i].count, v[i].pid, v[i].uid);
		cpuhpctl_json_string(stdout, v[i].comm);
		printf(",\"who\":");
		cpuhpctl_json_string(stdout, v[i].who);
		printf(",\"why\":");
		cpuhpctl_json_string(stdout, v[i].why);
		printf(",\"held_ms\":%llu,\"connection\":%u,\"mode\":\"%s\",\"delay_ms\":%u}",
		       (unsigned long long)v[i].held_ms, v[i].connection,
		       v[i].delay_ms ? "delay" : "block", v[i].delay_ms);
	}
	putchar(']');
}

/* {"action":"online"|"offline","results":[...]} and, forced, "revoked":[...] */
static void print_json(const struct cpuhp_client_cpu_result *r, size_t n, bool online, bool force,
                       const struct cpuhp_client_lease_info *rv, size_t nrv)
{
	printf("{\"action\":\"%s\",", online ? "online" : "offline");
	cpuhpctl_json_results(r, n);
	if (force)
		cpuhpctl_json_revoked(rv, nrv);
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
                       const struct cpuhp_cpuset *on_before)
{
	/* With --json, stdout has its one object (the error): the words go to stderr. */
	FILE *out = ctl->json ? stderr : stdout;
	const char *verb = online ? "enable" : "disable";
	struct cpuhp_cpuset known, on;
	unsigned n = 0, done = 0, changed = 0;

	read_files(ctl->sysfs_root, set, &known, &on);
	fprintf(stderr,
	        "cpuhpctl: cpuhpd went away during the hotplug; what %s/devices/system/cpu/cpuN/"
	        "online say now:\n",
	        cpuhpctl_safe(ctl->sysfs_root));
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

void cpuhpctl_report_states(const struct cpuhp_client_cpu_result *r, size_t i)
{
	size_t n, k;
	const struct cpuhp_client_state_run *run = cpuhp_client_results_states(r, i, &n);

	for (k = 0; k < n; k++, run++) {
		printf("  %s%s%s of state %s", run->rollback ? "rollback " : "",
		       run->prepare ? "PREPARE " : "", run->teardown ? "teardown" : "startup",
		       cpuhpctl_safe(run->state));
		if (run->instance[0])
			printf(" instance %s", cpuhpctl_safe(run->instance));
		printf(" (pid %d, %s): ", run->pid, cpuhpctl_safe(run->comm));
		if (run->client_gone)
			printf("its client is gone, counted as done after %.1f ms\n",
			       (double)run->micros / 1000);
		else if (run->error)
			printf("failed after %.1f ms: %s\n", (double)run->micros / 1000,
			       run->message[0] ? cpuhpctl_safe(run->message)
			                       : strerror(-run->error));
		else
			printf("%.1f ms\n", (double)run->micros / 1000);
	}
}

int cpuhpctl_parse_force(const struct cpuhpctl *ctl, const char *cmd, const char *opt,
                         const char *arg, unsigned *grace_ms)
{
	*grace_ms = CPUHPCTL_DEFAULT_FORCE_MS;
	return arg ? cpuhpctl_parse_duration(ctl, cmd, opt, arg, 0, UINT32_MAX, grace_ms) : 0;
}

/* The request's options.  */
struct hotplug_opts {
	unsigned timeout_ms;
	bool force, persist;
	unsigned grace_ms;
};

/* Parse the options and LIST.  Return: -1 to go on, else the exit code. */
static int parse_args(struct cpuhpctl *ctl, int argc, char **argv, struct hotplug_opts *o,
                      const char **list, struct cpuhp_cpuset *set)
{
	static const struct option opts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"force", optional_argument, NULL, 'f'},
	    {"force-leases", optional_argument, NULL, 'F'},
	    {"persist", no_argument, NULL, 'p'},
	    {"json", no_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	const char *cmd = argv[0];
	int opt, err;

	while ((opt = cpuhpctl_getopt(ctl, argc, argv, ":t:f::F::pJjh", opts, cmd)) != -1) {
		if (opt == 'p') {
			o->persist = true;
			continue;
		}
		if (opt == 't') {
			if ((err = cpuhpctl_parse_duration(ctl, cmd, "--timeout", optarg, 0,
			                                   UINT32_MAX, &o->timeout_ms)))
				return err;
			continue;
		}
		if (opt == 'f' || opt == 'F') {
			if ((err = cpuhpctl_parse_force(ctl, cmd,
			                                opt == 'f' ? "--force" : "--force-leases",
			                                optarg, &o->grace_ms)))
				return err;
			o->force = true;
			continue;
		}
		if (opt == 'h')
			usage(stdout, cmd);
		return opt == 'h' ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_USAGE;
	}
	if (argc - optind != 1)
		return cpuhpctl_usage_error(ctl, cmd, true, "%s",
		                            optind == argc
		                                ? "which CPUs? give a list such as 2-3,5"
		                                : "give one CPU list (no spaces, e.g. 2-3,5)");
	*list = argv[optind];
	/* Say what is wrong with the list here, before bothering the daemon. */
	err = cpuhp_cpuset_parse(*list, set);
	if (err == -ERANGE)
		return cpuhpctl_usage_error(
		    ctl, cmd, false,
		    "CPU list '%s' is out of range: CPU numbers and strides "
		    "are below %d",
		    *list, CPUHP_CPUSET_MAX);
	if (err < 0)
		return cpuhpctl_usage_error(
		    ctl, cmd, false, "'%s' is not a CPU list; expected e.g. 2-3,5 or 0-7:2", *list);
	if (!cpuhp_cpuset_count(set))
		return cpuhpctl_usage_error(ctl, cmd, false,
		                            "'%s' names no CPU; give a list such as 2-3,5", *list);
	return -1;
}

/*
 * After Ctrl-C cancelled a hotplug of the CPUs in @set toward @online:
 * wait until cpuhpd is done with it, then say what is true, "cancelled:
 * nothing was changed" or each CPU that changed.  @before: the status
 * taken before the request (NULL: unknown).  Return: the exit code: 130
 * if nothing changed, else 0 or 64 as for a hotplug that ran.
 */
static int report_cancel(struct cpuhpctl_wait *w, const struct cpuhp_cpuset *set, bool online,
                         const struct cpuhp_client_status *before)
{
	/* With --json, stdout has its one object (the error): the CPUs' lines go to stderr. */
	FILE *out = w->ctl->json ? stderr : stdout;
	const char *verb = online ? "enable" : "disable";
	struct cpuhp_client_status *after = malloc(sizeof(*after));
	unsigned changed = 0, there = 0, n = 0;
	int err = after ? cpuhpctl_wait_settle(w, after) : -ENOMEM;
	char msg[256];

	if (err == -EINTR || err < 0 || !before) {
		snprintf(msg, sizeof(msg),
		         err == -EINTR ? "cancelled; not waiting for the hotplug that had started: "
		                         "'cpuhpctl status' shows what it did"
		                       : "cancelled; cannot tell whether the hotplug had started: "
		                         "'cpuhpctl status' shows the CPUs");
		free(after);
		if (w->ctl->json)
			cpuhpctl_json_error(-ECANCELED, msg);
		fprintf(stderr, "cpuhpctl %s: %s\n", cpuhpctl_safe(w->what), msg);
		return CPUHPCTL_EXIT_CANCELLED;
	}
	for (int cpu = cpuhp_cpuset_next(set, -1); cpu >= 0; cpu = cpuhp_cpuset_next(set, cpu)) {
		unsigned u = (unsigned)cpu;
		bool was = cpuhp_cpuset_has(&before->online, u),
		     now = cpuhp_cpuset_has(&after->online, u);

		n++;
		there += now == online;
		if (was != now) {
			fprintf(out, "CPU %u %sd\n", u, now ? "enable" : "disable");
			changed++;
		}
	}
	free(after);
	fflush(out);
	if (!changed)
		snprintf(msg, sizeof(msg), "cancelled: nothing was changed");
	else
		snprintf(msg, sizeof(msg),
		         "cancelled too late: the hotplug had started and ran to its end (%u CPU%s "
		         "%sd, above)",
		         changed, changed == 1 ? "" : "s", verb);
	if (w->ctl->json)
		cpuhpctl_json_error(-ECANCELED, msg);
	fprintf(stderr, "cpuhpctl %s: %s\n", cpuhpctl_safe(w->what), msg);
	if (!changed)
		return CPUHPCTL_EXIT_CANCELLED;
	return there == n ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_PARTIAL;
}

int cpuhpctl_hotplug_wait(struct cpuhpctl_wait *w, const struct cpuhp_cpuset *set, bool online)
{
	struct cpuhp_client_status *before;
	int ret, err;

	ret = cpuhpctl_connect(w->ctl, &w->c);
	if (ret)
		return ret;
	/* What was online, to say what a Ctrl-C left changed (NULL: cannot say). */
	before = malloc(sizeof(*before));
	if (before && cpuhp_client_status(w->c, before) < 0) {
		free(before);
		before = NULL;
	}
	err = cpuhpctl_wait_run(w);
	if (err < 0)
		fprintf(stderr, "cpuhpctl %s: cannot wait: %s\n", cpuhpctl_safe(w->what),
		        strerror(-err));
	ret = err < 0 ? CPUHPCTL_EXIT_FAILED : -1;
	if (!err && w->cancelled) {
		struct cpuhp_cpuset none;

		cpuhp_cpuset_zero(&none);
		ret = report_cancel(w,
		                    set      ? set
		                    : before ? &before->possible
		                             : &none,
		                    online, before);
	}
	free(before);
	return ret;
}

/* The request, run by wait.c's thread. */
struct set_online_call {
	const char *list;
	bool online;
	struct hotplug_opts o;
	struct cpuhp_client_cpu_result *r;
	size_t n;
	struct cpuhp_client_lease_info *revoked; /* forced: what it revoked */
	size_t nrevoked;
};

static int call_set_online(struct cpuhp_client *c, void *arg)
{
	struct set_online_call *a = arg;
	int err = cpuhp_client_persist(c, a->o.persist);

	if (err < 0)
		return err;
	if (a->o.force)
		return cpuhp_client_set_online_forced(c, a->list, a->online, a->o.timeout_ms,
		                                      a->o.grace_ms, &a->r, &a->n, &a->revoked,
		                                      &a->nrevoked);
	return cpuhp_client_set_online_results(c, a->list, a->online, a->o.timeout_ms, &a->r,
	                                       &a->n);
}

static int set_online(struct cpuhpctl *ctl, int argc, char **argv, bool online)
{
	struct set_online_call a = {.online = online, .o.timeout_ms = CPUHPCTL_DEFAULT_TIMEOUT_MS};
	struct cpuhpctl_wait w = {
	    .ctl = ctl, .call = call_set_online, .arg = &a, .kind = CPUHPCTL_WAIT_LEASES};
	struct cpuhp_client_status *st;
	struct cpuhp_cpuset set, known, on;
	size_t i;
	char what[128];
	int ret;

	ret = parse_args(ctl, argc, argv, &a.o, &a.list, &set);
	if (ret >= 0)
		return ret;
	snprintf(what, sizeof(what), "%s %s", argv[0], a.list);
	w.what = what;
	/* Before the request: if cpuhpd dies in it, these say what it had done. */
	read_files(ctl->sysfs_root, &set, &known, &on);
	ret = cpuhpctl_hotplug_wait(&w, &set, online);
	if (ret >= 0)
		goto out;
	if (w.result < 0) {
		ret = cpuhpctl_fail(ctl, w.c, w.result, what);
		/* The connection died under the request: cpuhpd may have done part of it. */
		if (w.result == -ECONNRESET || w.result == -EPIPE)
			ret = report_lost(ctl, &set, online, &known, &on);
		goto out;
	}
	st = cpuhpctl_status_if_needed(w.c, a.r, a.n);
	if (ctl->json) {
		print_json(a.r, a.n, online, a.o.force, a.revoked, a.nrevoked);
	} else {
		cpuhpctl_report_revoked(a.revoked, a.nrevoked);
		for (i = 0; i < a.n; i++) {
			cpuhpctl_report_cpu(&a.r[i], online, st);
			fflush(stderr);
			cpuhpctl_report_states(a.r, i);
			fflush(stdout);
		}
	}
	free(st);
	ret = cpuhpctl_results_exit(a.r, a.n);
	cpuhp_client_results_free(a.r);
	free(a.revoked);
out:
	cpuhpctl_wait_end(&w);
	cpuhp_client_close(w.c);
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

int cpuhpctl_online(struct cpuhpctl *ctl, int argc, char **argv)
{
	return set_online(ctl, argc, argv, true);
}

int cpuhpctl_offline(struct cpuhpctl *ctl, int argc, char **argv)
{
	return set_online(ctl, argc, argv, false);
}
