/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * percpu-pool: a pool of worker threads, one pinned to each online CPU,
 * kept right across CPU hotplug by a cpuhpd hotplug state (the kernel's
 * cpuhp_setup_state() for a process; daemon/cpuhpd/README.md, "Hotplug
 * states").
 *
 * The state's teardown runs before a CPU goes offline: it stops and joins
 * that CPU's worker, so no worker is ever on a CPU that leaves and the
 * kernel never has to break a worker's affinity.  Its startup runs after a
 * CPU came online: it starts a worker there.  Registration runs startup for
 * every CPU online now; removal (at the end) teardown for each.
 *
 * The callbacks run on this program's main thread, from its own poll loop
 * (cpuhp_client_state_fd() and cpuhp_client_state_dispatch()): the pool
 * needs no lock, since only that thread starts and stops workers.
 *
 * Each worker checks, again and again, that it runs on its CPU
 * (sched_getcpu()) and that its affinity mask is still that one CPU (the
 * kernel, when it takes a CPU away under a pinned thread, widens the mask:
 * "no longer affine").  The summary at the end counts what they saw.  On a
 * simulated sysfs tree a CPU may not exist on the machine: such a worker
 * runs unpinned and says so, and is not checked.
 *
 * Build: cc percpu-pool.c $(pkg-config --cflags --libs libcpuhp-client) -pthread
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getcpu, pthread_attr_setaffinity_np, signalfd */
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/client.h>

struct worker {
	pthread_t thread;
	unsigned cpu;
	bool running;
	bool pinned;
	atomic_bool stop;
	atomic_ulong checks, wrong_cpu, mask_broken;
};

struct pool {
	struct worker w[CPUHP_CPUSET_MAX];
	struct cpuhp_cpuset cpus; /* the CPUs with a worker */
	unsigned long checks, wrong_cpu, mask_broken, unpinned;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct timespec nap = {.tv_nsec = 200000};

	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		if (w->pinned) {
			cpu_set_t mask;
			int cpu = sched_getcpu();

			if (cpu != (int)w->cpu)
				atomic_fetch_add(&w->wrong_cpu, 1);
			if (sched_getaffinity(0, sizeof(mask), &mask) == 0 &&
			    (CPU_COUNT(&mask) != 1 || !CPU_ISSET(w->cpu, &mask)))
				atomic_fetch_add(&w->mask_broken, 1);
			atomic_fetch_add(&w->checks, 1);
		}
		nanosleep(&nap, NULL); /* the per-CPU work would go here */
	}
	return NULL;
}

static void print_pool(const struct pool *p, const char *what, unsigned cpu)
{
	char list[CPUHP_CPUSET_LIST_MAX];

	if (cpuhp_cpuset_format(&p->cpus, list, sizeof(list)) < 0)
		strcpy(list, "?");
	printf("percpu-pool: %s CPU %u; workers on CPUs %s\n", what, cpu,
	       list[0] ? list : "(none)");
	fflush(stdout);
}

static int startup(struct cpuhp_client_state_call *call, void *arg)
{
	struct pool *p = arg;
	struct worker *w = &p->w[call->cpu];
	pthread_attr_t attr;
	cpu_set_t mask;
	int err;

	if (w->running)
		return 0;
	memset(w, 0, sizeof(*w));
	w->cpu = call->cpu;
	CPU_ZERO(&mask);
	CPU_SET(call->cpu, &mask);
	pthread_attr_init(&attr);
	/* Pinned from its first instruction: the attribute, not a call inside the thread. */
	w->pinned = pthread_attr_setaffinity_np(&attr, sizeof(mask), &mask) == 0;
	err = pthread_create(&w->thread, &attr, worker_main, w);
	if (err == EINVAL && w->pinned) {
		/* The CPU is not this machine's (a simulated tree): run unpinned. */
		pthread_attr_destroy(&attr);
		pthread_attr_init(&attr);
		w->pinned = false;
		err = pthread_create(&w->thread, &attr, worker_main, w);
	}
	pthread_attr_destroy(&attr);
	if (err) {
		snprintf(call->message, sizeof(call->message),
		         "cannot start a worker on CPU %u: %s", call->cpu, strerror(err));
		return -err;
	}
	w->running = true;
	cpuhp_cpuset_add(&p->cpus, call->cpu);
	p->unpinned += !w->pinned;
	print_pool(p, w->pinned ? "started a worker on" : "started an unpinned worker for",
	           call->cpu);
	return 0;
}

static int teardown(struct cpuhp_client_state_call *call, void *arg)
{
	struct pool *p = arg;
	struct worker *w = &p->w[call->cpu];

	if (!w->running)
		return 0;
	atomic_store_explicit(&w->stop, true, memory_order_relaxed);
	pthread_join(w->thread, NULL);
	w->running = false;
	p->checks += atomic_load(&w->checks);
	p->wrong_cpu += atomic_load(&w->wrong_cpu);
	p->mask_broken += atomic_load(&w->mask_broken);
	cpuhp_cpuset_del(&p->cpus, call->cpu);
	print_pool(
	    p, call->external ? "stopped the worker (after the fact) of" : "stopped the worker of",
	    call->cpu);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: percpu-pool [--socket PATH] [--name NAME] [--priority N]\n"
	        "Keep one worker thread pinned to each online CPU, with a cpuhpd hotplug\n"
	        "state: its teardown stops a CPU's worker before the CPU goes offline, its\n"
	        "startup starts one after a CPU came online. Runs until end of file on\n"
	        "standard input, SIGINT or SIGTERM; then removes the state (stopping every\n"
	        "worker) and prints how often the workers found themselves on a wrong CPU\n"
	        "or with their affinity broken (both should be 0).\n"
	        "\n"
	        "  -s, --socket PATH  cpuhpd's socket (default: $%s if set, else %s)\n"
	        "  -n, --name NAME    the state's name (default percpu-pool)\n"
	        "  -p, --priority N   the state's priority (default 0)\n"
	        "  -h, --help         this help\n",
	        CPUHP_CLIENT_SOCKET_ENV, CPUHP_CLIENT_DEFAULT_SOCKET);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"name", required_argument, NULL, 'n'},
	    {"priority", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *path = NULL, *name = "percpu-pool";
	struct cpuhp_client_state *s;
	struct cpuhp_client *c;
	struct pool *p;
	sigset_t sigs;
	long prio = 0;
	int opt, err, sfd, ret = 0;
	char *end;

	while ((opt = getopt_long(argc, argv, "s:n:p:h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'p':
			errno = 0;
			prio = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || prio < -2147483647L - 1 ||
			    prio > 2147483647L) {
				fprintf(stderr,
				        "percpu-pool: --priority wants a number, not '%s'\n",
				        optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'percpu-pool --help'.\n");
			return 2;
		}
	}
	/* The signals that end the pool arrive through a descriptor, between calls. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	p = calloc(1, sizeof(*p));
	if (sfd < 0 || !p) {
		fprintf(stderr, "percpu-pool: %s\n", strerror(errno));
		return 1;
	}
	err = cpuhp_client_connect(path, &c);
	if (err) {
		fprintf(stderr, "percpu-pool: cannot connect to cpuhpd at %s: %s; is it running?\n",
		        path ? path : cpuhp_client_socket_path(), strerror(-err));
		free(p);
		return 1;
	}
	/* The startups for the online CPUs run here, on this thread, before it returns. */
	err = cpuhp_client_state_register(c, name, (int)prio, 0, 0, startup, teardown, p, &s);
	if (err) {
		fprintf(stderr, "percpu-pool: cannot register the state %s: %s\n", name,
		        cpuhp_client_last_message(c)[0] ? cpuhp_client_last_message(c)
		                                        : strerror(-err));
		cpuhp_client_close(c);
		free(p);
		return 1;
	}
	printf("percpu-pool: state %s registered; %u worker(s)\n", name,
	       cpuhp_cpuset_count(&p->cpus));
	fflush(stdout);
	for (;;) {
		struct pollfd fds[3] = {{.fd = cpuhp_client_state_fd(s), .events = POLLIN},
		                        {.fd = sfd, .events = POLLIN},
		                        {.fd = STDIN_FILENO, .events = POLLIN}};
		char buf[256];

		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[0].revents) {
			err = cpuhp_client_state_dispatch(s);
			if (err < 0) {
				fprintf(stderr, "percpu-pool: lost cpuhpd: %s\n", strerror(-err));
				ret = 1;
				break;
			}
		}
		if (fds[1].revents)
			break;
		if (fds[2].revents && read(STDIN_FILENO, buf, sizeof(buf)) <= 0)
			break;
	}
	/* Teardown for every CPU the state was started on, here; then the state is gone. */
	err = cpuhp_client_state_remove(s, ret != 0);
	if (ret) {
		/* cpuhpd is gone: stop the workers ourselves. */
		for (int cpu = cpuhp_cpuset_next(&p->cpus, -1); cpu >= 0;
		     cpu = cpuhp_cpuset_next(&p->cpus, cpu)) {
			struct cpuhp_client_state_call call = {.cpu = (unsigned)cpu,
			                                       .teardown = true};

			teardown(&call, p);
		}
	}
	cpuhp_client_close(c);
	printf("percpu-pool: done; %lu check(s) by pinned workers, %lu on a wrong CPU, %lu with "
	       "their affinity broken, %lu worker(s) unpinned\n",
	       p->checks, p->wrong_cpu, p->mask_broken, p->unpinned);
	free(p);
	return ret ? ret : err < 0 ? 1 : 0;
}
