/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fastlease-torture: reader threads that check what a lease promises.
 *
 * THREADS threads share one libcpuhp-client handle and loop: take a lease,
 * read FILE (a simulated cpuN/online, which only cpuhpd writes, under its
 * hotplug lock), yield the CPU a few times, read FILE again, release.  Two
 * different values in one section are a violation.  They run until stdin
 * reaches EOF, then one JSON line says how many sections ran, how many
 * were fast, what values were seen, and the violations.
 *
 * --unleased reads twice without a lease, around a hotplug the test makes
 * in between: it prints the first value, waits for a line on stdin, reads
 * again.  It proves the checker sees a change (the control experiment).
 *
 * Usage: fastlease-torture SOCKET FILE THREADS | --unleased FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpuhp/client.h>

#define MAX_THREADS 64

static const char *file;
static struct cpuhp_client *client;
static atomic_bool stop;
static _Atomic unsigned long sections, fast, violations, seen[2], errors;
static _Atomic int last_error;

/* The file's first character: '0' or '1' (anything else counts as an error). */
static int read_value(void)
{
	char c = 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (pread(fd, &c, 1, 0) != 1)
		c = 0;
	close(fd);
	return c == '0' || c == '1' ? c - '0' : -1;
}

static void *reader(void *arg)
{
	while (!atomic_load(&stop)) {
		uint64_t id;
		int a, b, ret = cpuhp_client_lease_acquire(client, 20000, &id);

		if (ret) {
			atomic_fetch_add(&errors, 1);
			atomic_store(&last_error, ret);
			continue;
		}
		a = read_value();
		for (int i = 0; i < 3; i++)
			sched_yield();
		b = read_value();
		if (a < 0 || b < 0)
			atomic_fetch_add(&errors, 1);
		else if (a != b)
			atomic_fetch_add(&violations, 1);
		else
			atomic_fetch_add(&seen[a], 1);
		atomic_fetch_add(&sections, 1);
		if (id & CPUHP_CLIENT_FAST_LEASE)
			atomic_fetch_add(&fast, 1);
		ret = cpuhp_client_lease_release(client, id);
		if (ret) {
			atomic_fetch_add(&errors, 1);
			atomic_store(&last_error, ret);
		}
	}
	return NULL;
}

static int unleased(void)
{
	char line[16];
	int a = read_value(), b;

	printf("{\"first\":%d}\n", a);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	b = read_value();
	printf("{\"second\":%d,\"violations\":%d}\n", b, a != b);
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t threads[MAX_THREADS];
	unsigned long n;
	char buf[64];
	int ret;

	if (argc == 3 && !strcmp(argv[1], "--unleased")) {
		file = argv[2];
		return unleased();
	}
	if (argc != 4) {
		printf("Usage: fastlease-torture SOCKET FILE THREADS | --unleased FILE\n"
		       "Check that a value only cpuhpd changes stays put under a lease.\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	file = argv[2];
	n = strtoul(argv[3], NULL, 10);
	if (n < 1 || n > MAX_THREADS)
		return 2;
	ret = cpuhp_client_connect(argv[1], &client);
	if (ret) {
		printf("{\"connect\":%d}\n", ret);
		return 1;
	}
	for (unsigned long i = 0; i < n; i++)
		if (pthread_create(&threads[i], NULL, reader, NULL))
			return 1;
	/* Running: the test starts its hotplugs once every reader process said so. */
	printf("{\"running\":true,\"fast_path\":%d}\n", cpuhp_client_fast_path(client));
	fflush(stdout);
	while (fgets(buf, sizeof(buf), stdin))
		;
	atomic_store(&stop, true);
	for (unsigned long i = 0; i < n; i++)
		pthread_join(threads[i], NULL);
	printf("{\"sections\":%lu,\"fast\":%lu,\"violations\":%lu,\"seen0\":%lu,\"seen1\":%lu,"
	       "\"errors\":%lu,\"last_error\":%d}\n",
	       atomic_load(&sections), atomic_load(&fast), atomic_load(&violations),
	       atomic_load(&seen[0]), atomic_load(&seen[1]), atomic_load(&errors),
	       atomic_load(&last_error));
	cpuhp_client_close(client);
	return 0;
}
