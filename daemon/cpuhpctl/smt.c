/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl smt on|off|forceoff: SMT control through cpuhpd, one writer
 * section like an offline (leases drain first), reported per CPU like one:
 * "CPU 3 disabled" for each sibling thread that went away.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: cpuhpctl smt [--timeout MS] [--force] [--json] on|off|forceoff\n"
	        "\n"
	        "Turn SMT (hyper-threading) on or off through cpuhpd, as one hotplug: cpuhpd\n"
	        "waits until no reader lease is held, writes smt/control, and sees each\n"
	        "sibling thread (every thread of a core but its first) into the asked state.\n"
	        "One line per CPU that changed or is a sibling, as for offline.  'status'\n"
	        "shows smt/control and smt/active.  Needs root or membership in cpuhpd's\n"
	        "admin group.\n"
	        "\n"
	        "  on                turn SMT on; the kernel brings every present CPU back\n"
	        "  off               take the sibling threads offline; SMT can come back\n"
	        "  forceoff          off until reboot: the kernel then refuses any change\n"
	        "                    (needs --force)\n"
	        "  -f, --force       allow forceoff\n"
	        "  -t, --timeout MS  wait at most MS ms for leases to be released, then give\n"
	        "                    up with nothing changed (default %u; 0: fail at once);\n"
	        "                    a state call unanswered then is cut and rolled back\n"
	        "  -j, --json        one JSON object: smt/control read back and the result\n"
	        "                    of each CPU, or the error (schema in cpuhpctl(8))\n"
	        "\n"
	        "Exit status as for offline; 1 when this machine has no SMT to control\n"
	        "(smt/control says notsupported) or SMT was forced off.\n",
	        CPUHPCTL_DEFAULT_TIMEOUT_MS);
}

/* Refusals that are about the machine, not about the caller's rights or timing. */
static bool machine_refused(int err, const char *msg)
{
	return err == -ENODEV || err == -ENOENT || (err == -EPERM && strstr(msg, "forceoff"));
}

int cpuhpctl_smt(const struct cpuhpctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"force", no_argument, NULL, 'f'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	unsigned timeout_ms = CPUHPCTL_DEFAULT_TIMEOUT_MS;
	char control[CPUHP_CLIENT_MESSAGE_MAX], what[64];
	struct cpuhp_client_cpu_result *r;
	struct cpuhp_client_status *st;
	struct cpuhp_client *c;
	bool json = ctl->json, force = false, online;
	const char *word;
	size_t n, i;
	int opt, ret, err;

	while ((opt = cpuhpctl_getopt(argc, argv, "+:t:fjh", opts, argv[0])) != -1) {
		switch (opt) {
		case 't':
			if (cpuhpctl_parse_timeout(optarg, &timeout_ms) < 0)
				return CPUHPCTL_EXIT_USAGE;
			break;
		case 'f':
			force = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return CPUHPCTL_EXIT_OK;
		default:
			return CPUHPCTL_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		fprintf(stderr, "cpuhpctl smt: %s\nTry 'cpuhpctl smt --help'.\n",
		        optind == argc ? "on, off or forceoff?"
		                       : "give one word: on, off or forceoff");
		return CPUHPCTL_EXIT_USAGE;
	}
	word = argv[optind];
	if (strcmp(word, "on") && strcmp(word, "off") && strcmp(word, "forceoff")) {
		fprintf(stderr,
		        "cpuhpctl smt: '%s' is none of on, off, forceoff ('cpuhpctl status' shows "
		        "the current state)\nTry 'cpuhpctl smt --help'.\n",
		        word);
		return CPUHPCTL_EXIT_USAGE;
	}
	if (!strcmp(word, "forceoff") && !force) {
		fprintf(stderr,
		        "cpuhpctl smt: forceoff cannot be undone until reboot (the kernel "
		        "refuses any later change); add --force if that is what you want\n");
		return CPUHPCTL_EXIT_USAGE;
	}
	online = !strcmp(word, "on");
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	err = cpuhp_client_set_smt_results(c, word, timeout_ms, &r, &n, control);
	if (err < 0) {
		snprintf(what, sizeof(what), "smt %s", word);
		if (machine_refused(err, cpuhp_client_last_message(c))) {
			if (json) {
				printf("{\"error\":");
				cpuhpctl_json_errno(stdout, err);
				printf(",\"message\":");
				cpuhpctl_json_string(stdout, cpuhp_client_last_message(c));
				printf("}\n");
			}
			fprintf(stderr, "cpuhpctl: %s: %s\n", what, cpuhp_client_last_message(c));
			ret = CPUHPCTL_EXIT_FAILED;
		} else {
			ret = json ? cpuhpctl_json_fail(c, err, what) : cpuhpctl_fail(c, err, what);
		}
		cpuhp_client_close(c);
		return ret;
	}
	st = cpuhpctl_status_if_needed(c, r, n);
	if (json) {
		printf("{\"smt_control\":");
		cpuhpctl_json_string(stdout, control);
		printf(",\"online\":%s,", online ? "true" : "false");
		cpuhpctl_json_results(r, n);
		printf("}\n");
	} else {
		for (i = 0; i < n; i++)
			cpuhpctl_report_cpu(&r[i], online, st);
		printf("SMT control: %s\n", control);
	}
	free(st);
	ret = cpuhpctl_results_exit(r, n);
	cpuhp_client_results_free(r);
	cpuhp_client_close(c);
	return ret;
}
