/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpctl metrics: print cpuhpd's metrics in the Prometheus text format, as the daemon made them.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl metrics\n"
	           "\n"
	           "Print cpuhpd's counters (hotplugs by result, timeouts, errors, external\n"
	           "changes, bypasses, revocations), histograms (lease wait, hotplug duration,\n"
	           "writer hold) and gauges (leases, freezes, CPUs) in the Prometheus text\n"
	           "exposition format, the text cpuhpd --metrics-file keeps up to date.\n"
	           "No --json: the format is Prometheus', which its own tools parse.\n");
}

int cpuhpctl_metrics(struct cpuhpctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'J'}, {"help", no_argument, NULL, 'h'}, {0}};
	struct cpuhp_client *c;
	char *text;
	int opt, ret, err;

	while ((opt = cpuhpctl_getopt(ctl, argc, argv, ":Jjh", opts, argv[0])) != -1) {
		if (opt == 'h')
			usage(stdout);
		return opt == 'h' ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_USAGE;
	}
	if (ctl->json)
		return cpuhpctl_usage_error(
		    ctl, "metrics", false,
		    "--json: the metrics are Prometheus text, for its own "
		    "parsers; 'cpuhpctl --json status' has the main counts");
	if (optind < argc)
		return cpuhpctl_usage_error(ctl, "metrics", true, "unexpected argument '%s'",
		                            argv[optind]);
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	err = cpuhp_client_metrics(c, &text);
	if (err < 0) {
		ret = cpuhpctl_fail(ctl, c, err, "metrics");
		cpuhp_client_close(c);
		return ret;
	}
	fputs(text, stdout);
	free(text);
	cpuhp_client_close(c);
	return fflush(stdout) ? CPUHPCTL_EXIT_FAILED : CPUHPCTL_EXIT_OK;
}
