/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * shared-states: several hotplug states of one process on one connection
 * and one thread (CPUHP_CLIENT_STATE_SHARED), for test_states.py.
 *
 *   shared-states SOCKET NAME:PRIORITY[:fCPU] ...
 *
 * Registers each state in turn (startups for the CPUs online run, on the
 * shared thread), printing "registered NAME ID" each, then "ready".  Every
 * call prints "NAME PHASE CPU[ rollback][ failed] thread=T": T is 1 for
 * the first thread that ran a callback, 2 for another one, and so on (so
 * a test sees them all on one thread that is not main's, "main").  fCPU
 * makes that state's calls for CPU fail (-EBUSY) from "ready" on, unless
 * they are rollbacks.  On stdin: "close" closes the handle (the states live on),
 * "remove" (or EOF) removes every state, last first, printing "removed
 * NAME RC", and exits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpuhp/client.h>

#define MAX_STATES 16

struct st {
	char name[64];
	int fail_cpu;
	struct cpuhp_client_state *s;
};

static pthread_t main_thread, threads[8];
static unsigned nthreads;
static atomic_bool armed; /* faults from "ready" on: the registrations must succeed */

/* Callbacks run one at a time (one shared thread): no lock needed for @threads. */
static unsigned thread_no(void)
{
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_equal(threads[i], pthread_self()))
			return i + 1;
	if (nthreads < 8)
		threads[nthreads++] = pthread_self();
	return nthreads;
}

static int call(struct cpuhp_client_state_call *c, void *arg)
{
	const struct st *st = arg;
	bool fail = atomic_load(&armed) && !c->rollback && (int)c->cpu == st->fail_cpu;

	if (pthread_equal(pthread_self(), main_thread))
		printf("%s %s %u%s%s thread=main\n", st->name, c->teardown ? "teardown" : "startup",
		       c->cpu, c->rollback ? " rollback" : "", fail ? " failed" : "");
	else
		printf("%s %s %u%s%s thread=%u\n", st->name, c->teardown ? "teardown" : "startup",
		       c->cpu, c->rollback ? " rollback" : "", fail ? " failed" : "", thread_no());
	fflush(stdout);
	return fail ? -EBUSY : 0;
}

int main(int argc, char **argv)
{
	static struct st sts[MAX_STATES];
	struct cpuhp_client *c;
	char line[64];
	int n = argc - 2, err;

	if (argc < 3 || n > MAX_STATES) {
		fprintf(stderr, "Usage: shared-states SOCKET NAME:PRIORITY[:fCPU] ...\n");
		return 2;
	}
	main_thread = pthread_self();
	err = cpuhp_client_connect(argv[1], &c);
	if (err) {
		fprintf(stderr, "connect: %s\n", strerror(-err));
		return 1;
	}
	for (int i = 0; i < n; i++) {
		char *spec = argv[i + 2], *prio = strchr(spec, ':'), *fail;

		if (!prio) {
			fprintf(stderr, "shared-states: '%s' is not NAME:PRIORITY\n", spec);
			return 2;
		}
		*prio++ = '\0';
		fail = strchr(prio, ':');
		snprintf(sts[i].name, sizeof(sts[i].name), "%s", spec);
		sts[i].fail_cpu = fail && fail[1] == 'f' ? atoi(fail + 2) : -1;
		err = cpuhp_client_state_register(c, spec, atoi(prio), 0, CPUHP_CLIENT_STATE_SHARED,
		                                  call, call, &sts[i], &sts[i].s);
		if (err) {
			printf("error %s %d %s\n", spec, err, cpuhp_client_last_message(c));
			fflush(stdout);
			sts[i].s = NULL;
			continue;
		}
		printf("registered %s %llu\n", spec,
		       (unsigned long long)cpuhp_client_state_id(sts[i].s));
		fflush(stdout);
	}
	atomic_store(&armed, true);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "remove", 6)) {
		if (!strncmp(line, "close", 5) && c) {
			cpuhp_client_close(c);
			c = NULL;
			printf("closed\n");
			fflush(stdout);
		}
	}
	for (int i = n; i-- > 0;)
		if (sts[i].s)
			printf("removed %s %d\n", sts[i].name,
			       cpuhp_client_state_remove(sts[i].s, false));
	cpuhp_client_close(c);
	return 0;
}
