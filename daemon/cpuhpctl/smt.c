/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl smt on|off|forceoff: SMT control through cpuhpd, one writer
 * section like an offline (leases drain first), reported per CPU like one:
 * "CPU 3 disabled" for each sibling thread that went away, with the state
 * callbacks run for it under its line.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpuhp/cpuset.h>

#include "ctl.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: cpuhpctl smt [--timeout T] [--force] [--force-leases[=GRACE]] [--persist]\n"
	        "                    [--json] on|off|forceoff\n"
	        "\n"
	        "Turn SMT (hyper-threading) on or off through cpuhpd, as one hotplug: cpuhpd\n"
	        "waits until no reader lease is held, writes smt/control, and sees each\n"
	        "sibling thread (every thread of a core but its first) into the asked state.\n"
	        "One line per CPU that changed or is a sibling, and under it the state\n"
	        "callbacks run for it, as for offline.  'status'\n"
	        "shows smt/control and smt/active.  Needs root or membership in cpuhpd's\n"
	        "admin group.\n"
	        "\n"
	        "  on                turn SMT on; the kernel brings every present CPU back\n"
	        "  off               take the sibling threads offline; SMT can come back\n"
	        "  forceoff          off until reboot: the kernel then refuses any change\n"
	        "                    (needs --force)\n"
	        "  -f, --force       allow forceoff (here --force is that confirmation,\n"
	        "                    as it always was: it revokes no lease)\n"
	        "  -F, --force-leases[=GRACE]\n"
	        "                    do not wait for the leases beyond GRACE (default %us;\n"
	        "                    write it --force-leases=2s): their holders are told at\n"
	        "                    once, and those still held after GRACE are revoked and\n"
	        "                    listed (what --force means for online and offline)\n"
	        "  -t, --timeout T   wait at most T (500ms, 5s, 2m; a bare number is ms) for\n"
	        "                    leases to be released, then give up with nothing\n"
	        "                    changed (default %us; 0: fail at once); a state call\n"
	        "                    unanswered then is cut and rolled back\n"
	        "  -p, --persist     make it the plan's smt too (cpuhpd.conf(5)): kept across\n"
	        "                    reboots and against writers behind cpuhpd's back (on\n"
	        "                    or off; written before the hotplug, kept if it fails).\n"
	        "                    Without it, a word against the plan's smt is refused.\n"
	        "  -J, --json        one JSON object: smt/control read back and the result\n"
	        "                    of each CPU, or the error (schema in cpuhpctl(8))\n"
	        "\n"
	        "Exit status as for offline; 1 when this machine has no SMT to control\n"
	        "(smt/control says notsupported) or SMT was forced off.\n",
	        CPUHPCTL_DEFAULT_FORCE_MS / 1000, CPUHPCTL_DEFAULT_TIMEOUT_MS / 1000);
}

/* Refusals that are about the machine, not about the caller's rights or timing. */
static bool machine_refused(int err, const char *msg)
{
	return err == -ENODEV || err == -ENOENT || (err == -EPERM && strstr(msg, "forceoff"));
}

/* The request, run by wait.c's thread. */
struct smt_call {
	const char *word;
	bool persist;
	unsigned timeout_ms;
	bool force_leases; /* with grace_ms */
	unsigned grace_ms;
	struct cpuhp_client_cpu_result *r;
	size_t n;
	char control[CPUHP_CLIENT_MESSAGE_MAX];
	struct cpuhp_client_lease_info *revoked;
	size_t nrevoked;
};

static int call_smt(struct cpuhp_client *c, void *arg)
{
	struct smt_call *a = arg;
	int err = cpuhp_client_persist(c, a->persist);

	if (err < 0)
		return err;
	if (a->force_leases)
		return cpuhp_client_set_smt_forced(c, a->word, a->timeout_ms, a->grace_ms, &a->r,
		                                   &a->n, a->control, &a->revoked, &a->nrevoked);
	return cpuhp_client_set_smt_results(c, a->word, a->timeout_ms, &a->r, &a->n, a->control);
}

int cpuhpctl_smt(struct cpuhpctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"force", optional_argument, NULL, 'f'},
	    {"force-leases", optional_argument, NULL, 'F'},
	    {"json", no_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},
	    {"persist", no_argument, NULL, 'p'},
	    {0},
	};
	struct smt_call a = {.timeout_ms = CPUHPCTL_DEFAULT_TIMEOUT_MS};
	struct cpuhpctl_wait w = {
	    .ctl = ctl, .call = call_smt, .arg = &a, .kind = CPUHPCTL_WAIT_LEASES};
	struct cpuhp_client_status *st;
	bool force = false, online;
	const char *word;
	char what[64];
	size_t i;
	int opt, ret;

	while ((opt = cpuhpctl_getopt(ctl, argc, argv, ":t:fF::pJjh", opts, "smt")) != -1) {
		switch (opt) {
		case 'p':
			a.persist = true;
			break;
		case 't':
			if ((ret = cpuhpctl_parse_duration(ctl, "smt", "--timeout", optarg, 0,
			                                   UINT32_MAX, &a.timeout_ms)))
				return ret;
			break;
		case 'f':
			/* Here --force confirms forceoff, as it did before it meant forcing too. */
			if (optarg)
				return cpuhpctl_usage_error(
				    ctl, "smt", false,
				    "--force=%s: for smt, --force confirms forceoff and takes no "
				    "value; to revoke the leases still held after a grace, give "
				    "--force-leases=%s",
				    optarg, optarg);
			force = true;
			break;
		case 'F':
			if ((ret = cpuhpctl_parse_force(ctl, "smt", "--force-leases", optarg,
			                                &a.grace_ms)))
				return ret;
			a.force_leases = true;
			break;
		case 'h':
			usage(stdout);
			return CPUHPCTL_EXIT_OK;
		default:
			return CPUHPCTL_EXIT_USAGE;
		}
	}
	if (argc - optind != 1)
		return cpuhpctl_usage_error(ctl, "smt", true, "%s",
		                            optind == argc ? "on, off or forceoff?"
		                                           : "give one word: on, off or forceoff");
	word = argv[optind];
	if (strcmp(word, "on") && strcmp(word, "off") && strcmp(word, "forceoff"))
		return cpuhpctl_usage_error(ctl, "smt", true,
		                            "'%s' is none of on, off, forceoff ('cpuhpctl status' "
		                            "shows the current state)",
		                            word);
	if (!strcmp(word, "forceoff") && !force)
		return cpuhpctl_usage_error(
		    ctl, "smt", false,
		    "forceoff cannot be undone until reboot (the kernel "
		    "refuses any later change); add --force if that is what "
		    "you want");
	online = !strcmp(word, "on");
	a.word = word;
	snprintf(what, sizeof(what), "smt %s", word);
	w.what = what;
	ret = cpuhpctl_hotplug_wait(&w, NULL, online);
	if (ret >= 0)
		goto out;
	if (w.result < 0) {
		const char *msg = cpuhp_client_last_message(w.c);

		if (machine_refused(w.result, msg)) {
			/* No hint about rights or timeouts: it is the machine that says no. */
			if (ctl->json)
				cpuhpctl_json_error(w.result, msg);
			fprintf(stderr, "cpuhpctl: %s: %s\n", what, cpuhpctl_safe(msg));
			ret = CPUHPCTL_EXIT_FAILED;
		} else {
			ret = cpuhpctl_fail(ctl, w.c, w.result, what);
		}
		goto out;
	}
	st = cpuhpctl_status_if_needed(w.c, a.r, a.n);
	if (ctl->json) {
		printf("{\"smt_control\":");
		cpuhpctl_json_string(stdout, a.control);
		printf(",\"action\":\"%s\",", online ? "online" : "offline");
		cpuhpctl_json_results(a.r, a.n);
		if (a.force_leases)
			cpuhpctl_json_revoked(a.revoked, a.nrevoked);
		printf("}\n");
	} else {
		cpuhpctl_report_revoked(a.revoked, a.nrevoked);
		for (i = 0; i < a.n; i++) {
			cpuhpctl_report_cpu(&a.r[i], online, st);
			fflush(stderr);
			cpuhpctl_report_states(a.r, i);
			fflush(stdout);
		}
		printf("SMT control: %s\n", cpuhpctl_safe(a.control));
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
