/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-states: what hotplug states add to one CPU's offline and online
 * through cpuhpd, beside a plain one, in one run.
 *
 * A private cpuhpd on a simulated tree (CPUs 0-1); CPU 1 is taken offline
 * and brought back with cpuhp_client_set_online(), with 0, 1, 10 and 100
 * states registered (each on its own connection, its callbacks on
 * libcpuhp-client's thread, doing nothing: what is timed is the protocol,
 * one StateCall and one StateAnswer per state and CPU), then with one
 * state of the shell hook (`cpuhpctl state --teardown true --startup
 * true`: a fork and exec of sh per call) if CPUHPCTL is given.
 *
 * Prints medians and ratios against the plain offline/online of the same
 * run, and the added cost per state and call.
 *
 * Usage: bench-states [--quick] CPUHPD CPUHPD-SIMSYSFS [CPUHPCTL]
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/client.h>

#include "bench-daemon.h"

#define MAX_STATES 100

static struct bench_dir bd;
static pid_t daemon_pid;
static unsigned iters = 200;

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-states: %s: %s\n", what, strerror(err < 0 ? -err : err));
	if (daemon_pid > 0)
		bench_cpuhpd_stop(daemon_pid);
	exit(1);
}

static double median_us(uint64_t *ns, unsigned n)
{
	return (double)bench_median_ns(ns, n) / 1000;
}

struct result {
	double off_us, on_us;
};

/* Time @iters offline+online cycles of CPU 1. */
static struct result cycle(struct cpuhp_client *c)
{
	uint64_t *off = calloc(iters, sizeof(*off)), *on = calloc(iters, sizeof(*on));
	struct result r;

	if (!off || !on)
		die("calloc", ENOMEM);
	for (unsigned i = 0; i < iters; i++) {
		uint64_t t0 = bench_now_ns();
		int err = cpuhp_client_set_online(c, "1", false, 10000);
		uint64_t t1 = bench_now_ns();

		if (err)
			die(cpuhp_client_last_message(c), err);
		err = cpuhp_client_set_online(c, "1", true, 10000);
		if (err)
			die(cpuhp_client_last_message(c), err);
		off[i] = t1 - t0;
		on[i] = bench_now_ns() - t1;
	}
	r.off_us = median_us(off, iters);
	r.on_us = median_us(on, iters);
	free(off);
	free(on);
	return r;
}

int main(int argc, char **argv)
{
	static const unsigned counts[] = {0, 1, 10, 100};
	struct cpuhp_client_state *states[MAX_STATES];
	struct result res[4], hook = {0};
	const char *what;
	const char *cpuhpctl = NULL;
	struct cpuhp_client *c;
	unsigned have = 0;
	int argi = 1, err;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: bench-states [--quick] CPUHPD CPUHPD-SIMSYSFS [CPUHPCTL]\n"
		       "Time one CPU's offline and online through cpuhpd with 0, 1, 10 and 100\n"
		       "hotplug states registered, and with one shell-hook state.\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		iters = 5;
		argi++;
	}
	if (argc - argi != 2 && argc - argi != 3) {
		fprintf(stderr,
		        "Usage: bench-states [--quick] CPUHPD CPUHPD-SIMSYSFS [CPUHPCTL]\n");
		return 2;
	}
	if (argc - argi == 3)
		cpuhpctl = argv[argi + 2];
	signal(SIGPIPE, SIG_IGN);
	err = bench_private_cpuhpd(&bd, argv[argi], argv[argi + 1], "0-1", &daemon_pid, &what);
	if (err)
		die(what, err);
	err = cpuhp_client_connect(bd.sock, &c);
	if (err)
		die("connect", err);

	for (unsigned k = 0; k < 4; k++) {
		while (have < counts[k]) {
			char name[32];

			snprintf(name, sizeof(name), "bench-%u", have);
			err = cpuhp_client_state_register(c, name, (int)have, 0,
			                                  CPUHP_CLIENT_STATE_THREAD, NULL, NULL,
			                                  NULL, &states[have]);
			if (err)
				die(cpuhp_client_last_message(c), err);
			have++;
		}
		res[k] = cycle(c);
	}
	while (have > 0)
		cpuhp_client_state_remove(states[--have], true);
	if (cpuhpctl) {
		FILE *out;
		pid_t pid = bench_start_hook(cpuhpctl, bd.sock, &out);
		int st;

		if (pid < 0)
			die(cpuhpctl, (int)pid);

		hook = cycle(c);
		kill(pid, SIGTERM);
		waitpid(pid, &st, 0);
		fclose(out);
	}
	cpuhp_client_close(c);
	bench_cpuhpd_stop(daemon_pid);

	printf("one CPU's offline and online through cpuhpd (simulated sysfs), medians of %u\n",
	       iters);
	printf("%-34s %11s %11s %9s %9s %12s\n", "", "offline us", "online us", "x plain",
	       "x plain", "us per call");
	for (unsigned k = 0; k < 4; k++) {
		double per = counts[k] ? (res[k].off_us - res[0].off_us) / counts[k] : 0;
		char label[48];

		snprintf(label, sizeof(label),
		         counts[k] ? "%u state(s), callbacks doing nothing" : "plain (no states)",
		         counts[k]);
		printf("%-34s %11.1f %11.1f %9.2f %9.2f %12.1f\n", label, res[k].off_us,
		       res[k].on_us, res[k].off_us / res[0].off_us, res[k].on_us / res[0].on_us,
		       per);
	}
	if (cpuhpctl)
		printf("%-34s %11.1f %11.1f %9.2f %9.2f %12.1f\n", "1 shell hook (sh -c true)",
		       hook.off_us, hook.on_us, hook.off_us / res[0].off_us,
		       hook.on_us / res[0].on_us, hook.off_us - res[0].off_us);
	{
		if (bench_dir_remove(&bd))
			fprintf(stderr, "bench-states: could not remove %s\n", bd.dir);
	}
	return 0;
}
