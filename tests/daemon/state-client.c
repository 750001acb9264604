/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * state-client: a hotplug state of libcpuhp-client's, with its callbacks on
 * the library's thread (CPUHP_CLIENT_STATE_THREAD), for test_states.py.
 *
 *   state-client SOCKET NAME PRIORITY
 *
 * Prints "registered ID" once registered, then one line per call,
 * "startup CPU" or "teardown CPU thread=lib lease=ERR" (ERR: what a lease
 * asked inside the teardown got, 0 or a negative errno); on "remove" (or EOF)
 * on stdin it removes the state, printing its teardowns, then "removed RC".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpuhp/client.h>

static struct cpuhp_client *client;
static pthread_t main_thread;

static int startup(struct cpuhp_client_state_call *call, void *arg)
{
	(void)arg;
	printf("startup %u%s\n", call->cpu, call->external ? " external" : "");
	fflush(stdout);
	return 0;
}

static int teardown(struct cpuhp_client_state_call *call, void *arg)
{
	uint64_t lease;
	int err = 0;

	(void)arg;
	/* Only inside a hotplug's teardown: the writer side is held, a lease would wait. */
	if (!pthread_equal(pthread_self(), main_thread)) {
		err = cpuhp_client_lease_acquire(client, 1000, &lease);
		if (err == 0)
			cpuhp_client_lease_release(client, lease);
	}
	printf("teardown %u thread=%s lease=%d\n", call->cpu,
	       pthread_equal(pthread_self(), main_thread) ? "main" : "lib", err);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct cpuhp_client_state *s;
	char line[64];
	int err;

	if (argc != 4) {
		fprintf(stderr, "Usage: state-client SOCKET NAME PRIORITY\n");
		return 2;
	}
	main_thread = pthread_self();
	err = cpuhp_client_connect(argv[1], &client);
	if (err) {
		fprintf(stderr, "connect: %s\n", strerror(-err));
		return 1;
	}
	err = cpuhp_client_state_register(client, argv[2], atoi(argv[3]), 0,
	                                  CPUHP_CLIENT_STATE_THREAD, startup, teardown, NULL, &s);
	if (err) {
		printf("error %d %s\n", err, cpuhp_client_last_message(client));
		return 1;
	}
	printf("registered %llu fd=%d\n", (unsigned long long)cpuhp_client_state_id(s),
	       cpuhp_client_state_fd(s));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "remove", 6))
		;
	err = cpuhp_client_state_remove(s, false);
	printf("removed %d\n", err);
	cpuhp_client_close(client);
	return 0;
}
