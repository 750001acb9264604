/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * state-client: a hotplug state of libcpuhp-client's, with its callbacks on
 * the library's thread (CPUHP_CLIENT_STATE_THREAD), for test_states.py and
 * the fault suite.
 *
 *   state-client SOCKET NAME PRIORITY [DEADLINE_MS [FAULTS]]
 *
 * Prints "registered ID" once registered, then one line per call,
 * "startup CPU" or "teardown CPU thread=lib lease=ERR" (ERR: what a lease
 * asked inside the teardown got, 0 or a negative errno); on "remove" (or EOF)
 * on stdin it removes the state, printing its teardowns, then "removed RC".
 *
 * FAULTS, comma-separated: fN fails every call for CPU N that is not a
 * rollback (-EBUSY, changing nothing); sN:MS makes every call for CPU N
 * take MS ms (then succeed), to miss a deadline.  Such calls print
 * " failed" or " slow" after their line.  "view" on stdin prints "view
 * LIST busy=B": the CPUs the state holds now (startup done, no teardown
 * since) and whether a callback is running.  Faults apply from the end of
 * the registration on.  "p" registers in the PREPARE section (whose
 * teardowns, after the CPU died, are never failed here); "m" registers a
 * multi-instance state and adds two instances, each with a view of its
 * own: "view" then prints "view MISMATCH" unless they agree; "again" on
 * stdin removes instance i1 and adds it back (on the main thread, while the
 * library's thread serves calls), printing "again RC".
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuhp/client.h>

static struct cpuhp_client *client;
static pthread_t main_thread;
static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cpuhp_cpuset views[2], fail_cpus, slow_cpus;
static unsigned flags = CPUHP_CLIENT_STATE_THREAD;
static int inst_index[2] = {0, 1};
static struct cpuhp_client_instance *insts[2];
static unsigned slow_ms;
static atomic_int busy;
static atomic_bool armed; /* faults only once registered: registration must succeed */

/* The fault of this call: 0, or -EBUSY with nothing changed; a slow CPU's call waits first. */
static int fault(const struct cpuhp_client_state_call *call, const char **what)
{
	*what = "";
	if (!atomic_load(&armed))
		return 0;
	if (cpuhp_cpuset_has(&slow_cpus, call->cpu)) {
		struct timespec ts = {.tv_sec = slow_ms / 1000,
		                      .tv_nsec = slow_ms % 1000 * 1000000L};

		nanosleep(&ts, NULL);
		*what = " slow";
	}
	if (!call->rollback && cpuhp_cpuset_has(&fail_cpus, call->cpu) &&
	    !(call->prepare && call->teardown)) {
		*what = " failed";
		return -EBUSY;
	}
	return 0;
}

static int startup(struct cpuhp_client_state_call *call, void *arg)
{
	const char *what;
	int err;

	(void)arg;
	atomic_fetch_add(&busy, 1);
	err = fault(call, &what);
	if (!err) {
		pthread_mutex_lock(&view_lock);
		cpuhp_cpuset_add(&views[call->instance ? *(int *)call->instance : 0], call->cpu);
		pthread_mutex_unlock(&view_lock);
	}
	printf("startup %u%s%s\n", call->cpu, call->external ? " external" : "", what);
	fflush(stdout);
	atomic_fetch_sub(&busy, 1);
	return err;
}

static int teardown(struct cpuhp_client_state_call *call, void *arg)
{
	const char *what;
	uint64_t lease;
	int err = 0, ret;

	(void)arg;
	atomic_fetch_add(&busy, 1);
	/* Only inside a hotplug's teardown: the writer side is held, a lease would wait. */
	if (!pthread_equal(pthread_self(), main_thread)) {
		err = cpuhp_client_lease_acquire(client, 1000, &lease);
		if (err == 0)
			cpuhp_client_lease_release(client, lease);
	}
	ret = fault(call, &what);
	if (!ret) {
		pthread_mutex_lock(&view_lock);
		cpuhp_cpuset_del(&views[call->instance ? *(int *)call->instance : 0], call->cpu);
		pthread_mutex_unlock(&view_lock);
	}
	printf("teardown %u thread=%s lease=%d%s\n", call->cpu,
	       pthread_equal(pthread_self(), main_thread) ? "main" : "lib", err, what);
	fflush(stdout);
	atomic_fetch_sub(&busy, 1);
	return ret;
}

static void parse_faults(char *spec)
{
	for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
		unsigned cpu = (unsigned)strtoul(tok + 1, NULL, 10);

		if (!strcmp(tok, "p"))
			flags |= CPUHP_CLIENT_STATE_PREPARE;
		else if (!strcmp(tok, "m"))
			flags |= CPUHP_CLIENT_STATE_MULTI;
		else if (tok[0] == 'f')
			cpuhp_cpuset_add(&fail_cpus, cpu);
		else if (tok[0] == 's' && strchr(tok, ':')) {
			cpuhp_cpuset_add(&slow_cpus, cpu);
			slow_ms = (unsigned)strtoul(strchr(tok, ':') + 1, NULL, 10);
		}
	}
}

int main(int argc, char **argv)
{
	struct cpuhp_client_state *s;
	char line[64];
	unsigned deadline_ms = 0;
	int err;

	if (argc < 4 || argc > 6) {
		fprintf(stderr,
		        "Usage: state-client SOCKET NAME PRIORITY [DEADLINE_MS [FAULTS]]\n");
		return 2;
	}
	if (argc >= 5)
		deadline_ms = (unsigned)strtoul(argv[4], NULL, 10);
	if (argc == 6)
		parse_faults(argv[5]);
	main_thread = pthread_self();
	err = cpuhp_client_connect(argv[1], &client);
	if (err) {
		fprintf(stderr, "connect: %s\n", strerror(-err));
		return 1;
	}
	err = cpuhp_client_state_register(client, argv[2], atoi(argv[3]), deadline_ms, flags,
	                                  startup, teardown, NULL, &s);
	if (err) {
		printf("error %d %s\n", err, cpuhp_client_last_message(client));
		return 1;
	}
	for (int i = 0; (flags & CPUHP_CLIENT_STATE_MULTI) && i < 2; i++) {
		char name[8];

		snprintf(name, sizeof(name), "i%d", i);
		err = cpuhp_client_state_add_instance(s, name, &inst_index[i], 0, &insts[i]);
		if (err) {
			printf("error %d adding instance %s\n", err, name);
			return 1;
		}
	}
	atomic_store(&armed, true);
	printf("registered %llu fd=%d\n", (unsigned long long)cpuhp_client_state_id(s),
	       cpuhp_client_state_fd(s));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "remove", 6)) {
		char list[CPUHP_CPUSET_LIST_MAX];

		if (!strncmp(line, "again", 5) && insts[1]) {
			err = cpuhp_client_instance_remove(insts[1], false);
			insts[1] = NULL;
			if (!err)
				err = cpuhp_client_state_add_instance(s, "i1", &inst_index[1], 0,
				                                      &insts[1]);
			printf("again %d\n", err);
			fflush(stdout);
			continue;
		}
		if (strncmp(line, "view", 4))
			continue;
		pthread_mutex_lock(&view_lock);
		if ((flags & CPUHP_CLIENT_STATE_MULTI) && !cpuhp_cpuset_equal(&views[0], &views[1]))
			snprintf(list, sizeof(list), "MISMATCH");
		else
			cpuhp_cpuset_format(&views[0], list, sizeof(list));
		pthread_mutex_unlock(&view_lock);
		printf("view %s busy=%d\n", list[0] ? list : "-", atomic_load(&busy));
		fflush(stdout);
	}
	err = cpuhp_client_state_remove(s, false);
	printf("removed %d\n", err);
	cpuhp_client_close(client);
	return 0;
}
