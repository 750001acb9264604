/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An in-process reader for cpuhpd, injected with LD_PRELOAD by the tests.
 *
 * cpuhpd's hotplug must wait for readers of its own process-wide hotplug
 * lock too, not only for leases.  cpuhpd has none of its own, so this module
 * adds one: with CPUHPD_TEST_READER="HELD_FD,GO_FD" in the environment, a
 * thread started before main takes cpuhp_get_online_cpus() (on the same
 * libcpuhp.so as the daemon), writes one byte to HELD_FD, and holds the
 * lock until GO_FD is readable (a byte, or the test closing its end).
 * Nothing in the daemon knows about it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cpuhp/hotplug.h>

static int held_fd = -1, go_fd = -1;

static void *reader(void *arg)
{
	char c;

	cpuhp_get_online_cpus();
	if (write(held_fd, "R", 1) != 1)
		perror("inproc-reader: write");
	while (read(go_fd, &c, 1) < 0)
		;
	cpuhp_put_online_cpus();
	close(held_fd);
	close(go_fd);
	return NULL;
}

__attribute__((constructor)) static void start_reader(void)
{
	const char *spec = getenv("CPUHPD_TEST_READER");
	pthread_t t;

	if (!spec || sscanf(spec, "%d,%d", &held_fd, &go_fd) != 2)
		return;
	if (pthread_create(&t, NULL, reader, NULL) == 0)
		pthread_detach(t);
}
