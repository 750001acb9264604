/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl plan: cpuhpd's plan (cpuhpd.conf(5)), where each setting came
 * from and where the machine differs from it.  cpuhpctl new-cpu CPU: wait
 * until cpuhpd has dealt with a CPU just hot-added (the udev rule shipped
 * with cpuhpd runs it, so that a distribution's rule that onlines new CPUs
 * finds the CPU online already, through cpuhpd's states).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuhp/cpuset.h>

#include "ctl.h"

static void plan_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl plan [--json]\n"
	           "\n"
	           "Show cpuhpd's plan (cpuhpd.conf(5)): offline-cpus, smt and online-new-cpus,\n"
	           "each with the file and line it came from (and what it overrides), the files\n"
	           "read and those left out, and where the machine differs from it now: CPUs\n"
	           "the plan keeps offline that are online, SMT not as it says, new CPUs not\n"
	           "online yet, what cannot be applied; the conflicts (changes behind cpuhpd's\n"
	           "back that contradicted it) and when cpuhpd applies it again.  Change it\n"
	           "with offline, online or smt --persist, or in the files (then\n"
	           "'systemctl reload cpuhpd').  Any user who may connect may look.\n"
	           "\n"
	           "  -J, --json   one JSON object (schema in cpuhpctl(8))\n");
}

static void json_key(const char *key, const char *value, bool comma)
{
	printf("\"%s\":", key);
	cpuhpctl_json_string(stdout, value);
	if (comma)
		putchar(',');
}

static bool in_force(const struct cpuhp_client_plan *p)
{
	return !cpuhp_cpuset_count(&p->to_offline) && !cpuhp_cpuset_count(&p->to_online) &&
	       !p->smt_differs;
}

static void print_json(const struct cpuhp_client_plan *p)
{
	struct cpuhp_cpuset off;

	cpuhp_cpuset_zero(&off);
	cpuhp_cpuset_parse(p->settings[0].value, &off);
	printf("{\"offline_cpus\":");
	cpuhpctl_json_cpus(stdout, &off);
	printf(",");
	json_key("smt", p->settings[1].value, true);
	printf("\"online_new_cpus\":%s,\"settings\":[",
	       !strcmp(p->settings[2].value, "yes") ? "true" : "false");
	for (int i = 0; i < 3; i++) {
		printf("%s{", i ? "," : "");
		json_key("key", p->settings[i].key, true);
		json_key("value", p->settings[i].value, true);
		json_key("source", p->settings[i].source, true);
		json_key("overridden", p->settings[i].overridden, false);
		printf("}");
	}
	printf("],");
	json_key("files", p->files, true);
	json_key("errors", p->errors, true);
	json_key("reload_error", p->reload_error, true);
	printf("\"in_force\":%s,\"to_offline\":", in_force(p) ? "true" : "false");
	cpuhpctl_json_cpus(stdout, &p->to_offline);
	printf(",\"to_online\":");
	cpuhpctl_json_cpus(stdout, &p->to_online);
	printf(",\"absent\":");
	cpuhpctl_json_cpus(stdout, &p->absent);
	printf(",\"unknown\":");
	cpuhpctl_json_cpus(stdout, &p->unknown);
	printf(",");
	json_key("smt_control", p->smt_control, true);
	printf("\"smt_differs\":%s,\"problems\":[", p->smt_differs ? "true" : "false");
	for (size_t i = 0; i < p->n_problems; i++) {
		printf("%s{\"cpu\":%u,", i ? "," : "", p->problems[i].cpu);
		json_key("message", p->problems[i].message, false);
		printf("}");
	}
	printf("],");
	json_key("smt_problem", p->smt_problem, true);
	printf("\"conflicts\":%" PRIu64 ",", p->conflicts);
	json_key("last_conflict", p->last_conflict, true);
	printf("\"last_conflict_ago_ms\":%" PRIu64 ",\"retry_in_ms\":%u,\"backoff_ms\":%u,"
	       "\"streak\":%u,\"hotplugs\":%" PRIu64 ",\"hotplug\":%" PRIu64 "}\n",
	       p->last_conflict_ago_ms, p->retry_in_ms, p->backoff_ms, p->streak, p->hotplugs,
	       p->hotplug_seq);
}

/* "CPU 3" or "CPUs 2-3": @set as words, on stdout. */
static void print_cpus(const char *lead, const struct cpuhp_cpuset *set, const char *tail)
{
	char *l = cpuhpctl_format(set);

	printf("%sCPU%s %s%s", lead, cpuhp_cpuset_count(set) == 1 ? "" : "s", l ? l : "?", tail);
	free(l);
}

static void print_text(const struct cpuhp_client_plan *p)
{
	char d[CPUHPCTL_DURATION_MAX];
	bool any = false;

	printf("plan (read from %s):\n", p->files[0] ? cpuhpctl_safe(p->files) : "no file");
	for (int i = 0; i < 3; i++) {
		const struct cpuhp_client_plan_setting *s = &p->settings[i];

		any |= s->source[0] != '\0';
		printf("  %-16s %-10s %s%s%s%s\n", s->key,
		       s->source[0] ? (s->value[0] ? cpuhpctl_safe(s->value) : "(none)") : "-",
		       s->source[0] ? "from " : "not set", cpuhpctl_safe(s->source),
		       s->overridden[0] ? ", over " : "", cpuhpctl_safe(s->overridden));
	}
	if (p->errors[0])
		printf("left out (they do not parse): %s\n", cpuhpctl_safe(p->errors));
	if (p->reload_error[0])
		printf("the last reload failed, the plan above stays: %s\n",
		       cpuhpctl_safe(p->reload_error));
	if (cpuhp_cpuset_count(&p->unknown))
		print_cpus("not on this machine, left out: ", &p->unknown, "\n");
	if (cpuhp_cpuset_count(&p->absent))
		print_cpus("not present, kept offline once added: ", &p->absent, "\n");
	if (!any)
		printf("no plan: cpuhpd keeps nothing\n");
	else if (in_force(p))
		printf("in force\n");
	else {
		printf("differs:");
		if (cpuhp_cpuset_count(&p->to_offline))
			print_cpus(" ", &p->to_offline, " online (kept offline by the plan);");
		if (cpuhp_cpuset_count(&p->to_online))
			print_cpus(" new ", &p->to_online, " not online yet;");
		if (p->smt_differs)
			printf(" %s%s (the plan: %s);",
			       p->smt_control[0] ? "SMT control " : "no SMT control",
			       cpuhpctl_safe(p->smt_control), cpuhpctl_safe(p->settings[1].value));
		printf("\n");
	}
	if (p->hotplug_seq)
		printf("cpuhpd applies it: hotplug #%" PRIu64 " ('cpuhpctl leases' shows it)\n",
		       p->hotplug_seq);
	else if (p->retry_in_ms)
		printf("cpuhpd applies it again in %s (backing off: %u in a row)\n",
		       cpuhpctl_format_duration(d, p->retry_in_ms), p->streak);
	for (size_t i = 0; i < p->n_problems; i++)
		printf("cannot apply to CPU %u: %s\n", p->problems[i].cpu,
		       cpuhpctl_safe(p->problems[i].message));
	if (p->smt_problem[0])
		printf("cannot apply smt: %s\n", cpuhpctl_safe(p->smt_problem));
	if (p->conflicts)
		printf("conflicts: %" PRIu64 ", the last %s ago: %s\n", p->conflicts,
		       cpuhpctl_format_duration(d, p->last_conflict_ago_ms),
		       cpuhpctl_safe(p->last_conflict));
	printf("hotplugs cpuhpd made for it: %" PRIu64 "\n", p->hotplugs);
}

int cpuhpctl_plan(struct cpuhpctl *ctl, int argc, char **argv)
{
	struct cpuhp_client_plan *p;
	struct cpuhp_client *c;
	int ret, err;

	ret = cpuhpctl_parse_no_options(ctl, argc, argv, plan_usage);
	if (ret >= 0)
		return ret;
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	err = cpuhp_client_plan(c, &p);
	if (err < 0) {
		ret = cpuhpctl_fail(ctl, c, err, "plan");
		cpuhp_client_close(c);
		return ret;
	}
	if (ctl->json)
		print_json(p);
	else
		print_text(p);
	cpuhp_client_plan_free(p);
	cpuhp_client_close(c);
	return fflush(stdout) ? CPUHPCTL_EXIT_FAILED : CPUHPCTL_EXIT_OK;
}

static void new_cpu_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl new-cpu [--timeout T] CPU\n"
	           "\n"
	           "Wait until cpuhpd has dealt with CPU, which was just hot-added: it brings it\n"
	           "online through its queue and hotplug states when its plan says\n"
	           "online-new-cpus = yes (cpuhpd.conf(5)).  The udev rule that comes with\n"
	           "cpuhpd runs it for each CPU added while that is so, before any rule of the\n"
	           "distribution that onlines new CPUs: such a rule then finds the CPU online\n"
	           "already (cpuhpd(8), UDEV).\n"
	           "\n"
	           "  -t, --timeout T   give up after T (default 60s)\n"
	           "\n"
	           "Exit status: 0 the CPU is online; 1 cpuhpd leaves it offline (the plan keeps\n"
	           "it offline, online-new-cpus is off, or it could not be brought up: it says\n"
	           "why); 75 timed out; 69 cpuhpd unreachable.\n");
}

/* -1: still to come; else the exit code, said on stderr when it is not 0. */
static int new_cpu_state(struct cpuhpctl *ctl, struct cpuhp_client *c, unsigned cpu)
{
	struct cpuhp_client_status st;
	struct cpuhp_client_plan *p;
	int err = cpuhp_client_status(c, &st), ret = -1;

	if (err < 0)
		return cpuhpctl_fail(ctl, c, err, "new-cpu");
	if (cpuhp_cpuset_has(&st.online, cpu)) {
		printf("CPU %u online\n", cpu);
		return CPUHPCTL_EXIT_OK;
	}
	/* Not seen present yet: the uevent is on its way to cpuhpd too. */
	if (!cpuhp_cpuset_has(&st.present, cpu))
		return -1;
	err = cpuhp_client_plan(c, &p);
	if (err < 0)
		return cpuhpctl_fail(ctl, c, err, "new-cpu");
	if (!cpuhp_cpuset_has(&p->to_online, cpu)) {
		struct cpuhp_cpuset off;
		const char *why = strcmp(p->settings[2].value, "yes")
		                      ? "cpuhpd's plan does not bring new CPUs online "
		                        "(online-new-cpus is not yes)"
		                      : "cpuhpd did not bring it up";

		if (!cpuhp_cpuset_parse(p->settings[0].value, &off) && cpuhp_cpuset_has(&off, cpu))
			why = "the plan keeps it offline (offline-cpus)";
		for (size_t i = 0; i < p->n_problems; i++)
			if (p->problems[i].cpu == cpu)
				why = p->problems[i].message;
		fprintf(stderr, "cpuhpctl new-cpu: CPU %u stays offline: %s\n", cpu,
		        cpuhpctl_safe(why));
		ret = CPUHPCTL_EXIT_FAILED;
	}
	cpuhp_client_plan_free(p);
	return ret;
}

int cpuhpctl_new_cpu(struct cpuhpctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct cpuhp_client_event *ev;
	struct cpuhp_client *c;
	struct cpuhp_cpuset set;
	unsigned timeout_ms = 60000, cpu;
	uint64_t until;
	int opt, ret, err;

	while ((opt = cpuhpctl_getopt(ctl, argc, argv, ":t:h", opts, "new-cpu")) != -1) {
		if (opt == 't' && !(ret = cpuhpctl_parse_duration(ctl, "new-cpu", "--timeout",
		                                                  optarg, 0, 3600000, &timeout_ms)))
			continue;
		if (opt == 'h')
			new_cpu_usage(stdout);
		return opt == 'h' ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_USAGE;
	}
	if (argc - optind != 1 || cpuhp_cpuset_parse(argv[optind], &set) ||
	    cpuhp_cpuset_count(&set) != 1)
		return cpuhpctl_usage_error(ctl, "new-cpu", true, "give one CPU number");
	cpu = (unsigned)cpuhp_cpuset_next(&set, -1);
	ev = malloc(sizeof(*ev));
	if (!ev)
		return CPUHPCTL_EXIT_FAILED;
	ret = cpuhpctl_connect(ctl, &c);
	if (ret) {
		free(ev);
		return ret;
	}
	/* Watch first: whatever changes after the look below is an event. */
	err = cpuhp_client_watch(c);
	if (err < 0) {
		ret = cpuhpctl_fail(ctl, c, err, "new-cpu");
		goto out;
	}
	until = cpuhpctl_now_ms() + timeout_ms;
	while ((ret = new_cpu_state(ctl, c, cpu)) < 0) {
		uint64_t now = cpuhpctl_now_ms();

		if (now >= until) {
			fprintf(stderr,
			        "cpuhpctl new-cpu: CPU %u is not online after %u ms: cpuhpd still "
			        "waits ('cpuhpctl plan' and 'cpuhpctl leases' say for what)\n",
			        cpu, timeout_ms);
			ret = CPUHPCTL_EXIT_TIMEDOUT;
			break;
		}
		err = cpuhp_client_next_event(c, (int)(until - now), ev);
		if (err < 0 && err != -ETIMEDOUT && err != -EAGAIN) {
			ret = cpuhpctl_fail(ctl, c, err, "new-cpu");
			break;
		}
	}
out:
	cpuhp_client_close(c);
	free(ev);
	return ret;
}
