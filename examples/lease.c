/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lease: a process that holds a cpuhpd reader lease around a critical
 * section, with libcpuhp-client.
 *
 * The pattern: take the lease, then read the set of online CPUs and size
 * the work by it (here, one worker thread per online CPU), do the work, and
 * release the lease.  While the lease is held cpuhpd takes no CPU offline
 * or online, so the set read at the start is still the set at the end; the
 * program checks that before it releases.  If it dies instead, the lease
 * ends with its connection and a waiting hotplug goes ahead.
 *
 * Build: cc lease.c $(pkg-config --cflags --libs libcpuhp-client) -pthread
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpuhp/client.h>

#define DEFAULT_TIMEOUT_MS 10000

struct worker {
	pthread_t thread;
	unsigned cpu;
	unsigned long sum;
};

/* Per-CPU work: here a sum, standing for whatever was sized by the CPU set. */
static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (unsigned long i = 0; i < 100000; i++)
		w->sum += i ^ w->cpu;
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: lease [--socket PATH] [--timeout MS] [--pause]\n"
	        "Hold a cpuhpd reader lease around a critical section: read the online CPUs,\n"
	        "run one worker per online CPU, check the set did not change, release.\n"
	        "\n"
	        "  -s, --socket PATH  cpuhpd's socket (default: $%s if set, else %s)\n"
	        "  -t, --timeout MS   wait at most MS ms for a hotplug in progress to end\n"
	        "                     (default %d; 0: do not wait)\n"
	        "  -p, --pause        inside the critical section, wait for a line (or end of\n"
	        "                     file) on standard input before leaving it\n"
	        "  -h, --help         this help\n",
	        CPUHP_CLIENT_SOCKET_ENV, CPUHP_CLIENT_DEFAULT_SOCKET, DEFAULT_TIMEOUT_MS);
}

static const char *socket_shown(const char *path)
{
	return path ? path : cpuhp_client_socket_path();
}

static int fail(struct cpuhp_client *c, const char *what, int err)
{
	const char *msg = c ? cpuhp_client_last_message(c) : "";

	fprintf(stderr, "lease: %s: %s\n", what, *msg ? msg : strerror(-err));
	return 1;
}

/* The critical section: everything here may rely on @online staying as it is. */
static int critical_section(struct cpuhp_client *c, const struct cpuhp_cpuset *online, bool pause)
{
	struct cpuhp_client_status now;
	struct worker *workers;
	unsigned n = cpuhp_cpuset_count(online), i = 0;
	int err = 0;

	workers = calloc(n, sizeof(*workers));
	if (!workers)
		return fail(NULL, "critical section", -ENOMEM);
	for (int cpu = cpuhp_cpuset_next(online, -1); cpu >= 0;
	     cpu = cpuhp_cpuset_next(online, cpu), i++) {
		workers[i].cpu = (unsigned)cpu;
		err = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
		if (err) {
			fprintf(stderr, "lease: cannot start a worker: %s\n", strerror(err));
			break;
		}
	}
	printf("lease: critical section: %u workers started, one per online CPU\n", i);
	fflush(stdout);
	for (unsigned j = 0; j < i; j++)
		pthread_join(workers[j].thread, NULL);
	free(workers);
	if (err)
		return 1;

	if (pause) {
		int ch;

		printf("lease: pausing inside the critical section until a line comes on stdin\n");
		fflush(stdout);
		while ((ch = getchar()) != EOF && ch != '\n')
			;
	}

	err = cpuhp_client_status(c, &now);
	if (err)
		return fail(c, "status", err);
	if (!cpuhp_cpuset_equal(&now.online, online)) {
		fprintf(stderr, "lease: BUG: the online CPUs changed while the lease was held\n");
		return 1;
	}
	printf("lease: workers done; the online CPUs did not change\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"timeout", required_argument, NULL, 't'},
	    {"pause", no_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *path = NULL;
	unsigned long timeout_ms = DEFAULT_TIMEOUT_MS;
	bool pause = false;
	struct cpuhp_client *c;
	struct cpuhp_client_status st;
	char list[CPUHP_CPUSET_LIST_MAX];
	uint64_t lease;
	int opt, err, ret;
	char *end;

	while ((opt = getopt_long(argc, argv, "s:t:ph", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 't':
			errno = 0;
			timeout_ms = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-' ||
			    timeout_ms > 0xffffffffUL) {
				fprintf(stderr, "lease: --timeout wants milliseconds, not '%s'\n",
				        optarg);
				return 2;
			}
			break;
		case 'p':
			pause = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}

	err = cpuhp_client_connect(path, &c);
	if (err) {
		fprintf(stderr,
		        "lease: cannot connect to cpuhpd at %s: %s (is it running? Pass --socket "
		        "or set %s)\n",
		        socket_shown(path), strerror(-err), CPUHP_CLIENT_SOCKET_ENV);
		return 1;
	}

	err = cpuhp_client_lease_acquire(c, (unsigned)timeout_ms, &lease);
	if (err) {
		ret = fail(c, "no lease", err);
		goto out;
	}
	/* Read the set only now: from here until the release it cannot change. */
	err = cpuhp_client_status(c, &st);
	if (err) {
		ret = fail(c, "status", err);
		goto out;
	}
	cpuhp_cpuset_format(&st.online, list, sizeof(list));
	printf("lease: lease %llu held from cpuhpd %s: online CPUs %s will not change until it "
	       "is released\n",
	       (unsigned long long)lease, st.daemon_version, list);
	fflush(stdout);

	ret = critical_section(c, &st.online, pause);

	err = cpuhp_client_lease_release(c, lease);
	if (err)
		ret = fail(c, "release", err);
	else
		printf("lease: lease %llu released\n", (unsigned long long)lease);
out:
	cpuhp_client_close(c);
	return ret;
}
