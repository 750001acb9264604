/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-ready: what a hotplug's notice (HotplugPending) buys and costs, in
 * one run against a private cpuhpd on a simulated tree.
 *
 *   1. Letting go on the notice.  HOLDERS threads, each with a handle of
 *      its own, hold a lease around work of 10 ms steps that would end
 *      after HOLD ms (2000 by default).  A hotplug is asked for while they
 *      hold, and they ignore the notice and release at their natural end,
 *      or look for it between steps and release within 10 ms of it, or
 *      wait on the socket between steps and release at once (rounds of
 *      the three interleaved).  The table gives the hotplug's time from request
 *      to answer and to the last release, medians of the rounds, and the
 *      ratios.
 *   2. The notice's cost.  N connections (1000 by default) each hold a
 *      lease, socket or fast; from the hotplug's request to the notice's
 *      arrival on every socket (poll over all, nothing decoded yet:
 *      cpuhpd's side) and to its reading through libcpuhp-client on every
 *      one (epoll, then cpuhp_client_next_event: the clients' side too),
 *      beside the same fan-out of an event cpuhpd had before
 *      (HotplugStarted to N watchers holding nothing), in the same run.
 *      Target: under 5 ms to notify them all.
 *
 * Nothing is judged (the smoke test only runs it); a loaded machine moves
 * the absolute figures.  Usage: bench-ready [--quick] CPUHPD CPUHPD-SIMSYSFS
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/client.h>

#include "bench-daemon.h"

#define STEP_MS    10
#define HOLDERS    4
#define MAX_ROUNDS 16

static struct bench_dir bd;
static pid_t daemon_pid;
static unsigned hold_ms = 2000, rounds = 3, fanout = 1000, fan_rounds = 11;

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-ready: %s: %s\n", what, strerror(err < 0 ? -err : err));
	if (daemon_pid > 0)
		kill(daemon_pid, SIGTERM);
	exit(1);
}

static struct cpuhp_client *connect_one(void)
{
	struct cpuhp_client *c;
	int err = cpuhp_client_connect(bd.sock, &c);

	if (err)
		die("connect", err);
	return c;
}

/* ------------------------------------------------- 1. letting go on the notice */

/* When a holder lets go. */
enum release_when {
	AT_END,     /* at the natural end, the notice ignored */
	AFTER_STEP, /* on the notice, looked for between steps of work */
	AT_ONCE,    /* on the notice, waiting on the socket between steps */
};

struct holder {
	pthread_t thread;
	struct cpuhp_client *c;
	enum release_when when;
	pthread_barrier_t *leased; /* every holder has its lease */
	uint64_t released_at;      /* bench_now_ns() once released */
};

/* Whether the notice came (read without waiting). */
static bool told(struct cpuhp_client *c)
{
	static __thread struct cpuhp_client_event ev;
	bool pending = false;

	while (cpuhp_client_next_event(c, 0, &ev) == 0)
		if (ev.type == CPUHP_CLIENT_EVENT_HOTPLUG_PENDING)
			pending = true;
	return pending;
}

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	struct timespec step = {.tv_nsec = STEP_MS * 1000000L};
	uint64_t lease;
	int err = cpuhp_client_lease_acquire(h->c, 60000, &lease);

	if (err)
		die("lease", err);
	pthread_barrier_wait(h->leased);
	for (unsigned done = 0; done < hold_ms; done += STEP_MS) {
		struct pollfd p = {.fd = cpuhp_client_fd(h->c), .events = POLLIN};

		if (told(h->c) && h->when != AT_END)
			break;
		if (h->when == AT_ONCE)
			poll(&p, 1, STEP_MS);
		else
			nanosleep(&step, NULL);
	}
	err = cpuhp_client_lease_release(h->c, lease);
	if (err)
		die("release", err);
	h->released_at = bench_now_ns();
	told(h->c); /* a notice that came with the release: not for the next round */
	return NULL;
}

/*
 * One round: HOLDERS hold, a hotplug of CPU 1 (@online) is asked.  Return:
 * its time in ns; in *@last_release, from the request to the last release.
 */
static uint64_t release_round(struct cpuhp_client *admin, struct cpuhp_client **hc,
                              enum release_when when, bool online, uint64_t *last_release)
{
	struct holder h[HOLDERS];
	pthread_barrier_t leased;
	struct cpuhp_client_cpu_result *r;
	uint64_t t0, t;
	size_t n;
	int err;

	pthread_barrier_init(&leased, NULL, HOLDERS + 1);
	for (unsigned i = 0; i < HOLDERS; i++) {
		h[i] = (struct holder){.c = hc[i], .when = when, .leased = &leased};
		if (pthread_create(&h[i].thread, NULL, holder_main, &h[i]))
			die("pthread_create", errno);
	}
	pthread_barrier_wait(&leased);
	t0 = bench_now_ns();
	err = cpuhp_client_set_online_results(admin, "1", online, 60000, &r, &n);
	t = bench_now_ns() - t0;
	if (err || n != 1 || r[0].error)
		die("hotplug", err ? err : -EIO);
	cpuhp_client_results_free(r);
	*last_release = 0;
	for (unsigned i = 0; i < HOLDERS; i++) {
		pthread_join(h[i].thread, NULL);
		if (h[i].released_at - t0 > *last_release)
			*last_release = h[i].released_at - t0;
	}
	pthread_barrier_destroy(&leased);
	return t;
}

static void bench_release(void)
{
	static const char *const what[] = {
	    [AT_END] = "released at the natural end (the notice ignored)",
	    [AFTER_STEP] = "released on the notice, looked for between steps",
	    [AT_ONCE] = "released on the notice, waited for on the socket",
	};
	struct cpuhp_client *admin = connect_one(), *hc[HOLDERS];
	uint64_t took[3][MAX_ROUNDS], rel[3][MAX_ROUNDS];
	bool online = true;
	double ms[3];

	for (unsigned i = 0; i < HOLDERS; i++)
		hc[i] = connect_one();
	/* Interleaved; each hotplug turns CPU 1 over, so that every one of them waits. */
	for (unsigned k = 0; k < rounds; k++)
		for (unsigned w = AT_END; w <= AT_ONCE; w++) {
			online = !online;
			took[w][k] = release_round(admin, hc, w, online, &rel[w][k]);
		}
	if (!online)
		cpuhp_client_set_online(admin, "1", true, 60000);
	printf("1. A hotplug behind %u holders whose work would hold the lease %u ms\n"
	       "   (steps of %d ms; medians of %u rounds)\n\n",
	       HOLDERS, hold_ms, STEP_MS, rounds);
	printf("   %-52s %10s %14s\n", "", "hotplug", "last release");
	for (unsigned w = AT_END; w <= AT_ONCE; w++) {
		ms[w] = (double)bench_median_ns(took[w], rounds) / 1e6;
		printf("   %-52s %7.1f ms %11.1f ms\n", what[w], ms[w],
		       (double)bench_median_ns(rel[w], rounds) / 1e6);
	}
	printf("   earlier on the notice: %.0fx between steps, %.0fx at once\n\n",
	       ms[AT_END] / ms[AFTER_STEP], ms[AT_END] / ms[AT_ONCE]);
	for (unsigned i = 0; i < HOLDERS; i++)
		cpuhp_client_close(hc[i]);
	cpuhp_client_close(admin);
}

/* ------------------------------------------------------- 2. the notice's cost */

/* Read every handle until each gave one event of @type.  Return: when the last one came. */
static uint64_t read_all(int ep, struct cpuhp_client **c, unsigned n,
                         enum cpuhp_client_event_type type)
{
	static struct cpuhp_client_event ev;
	struct epoll_event evs[64];
	bool *got = calloc(n, sizeof(*got));
	unsigned left = n;

	if (!got)
		die("calloc", ENOMEM);
	while (left) {
		int k = epoll_wait(ep, evs, 64, 30000);

		if (k <= 0)
			die("epoll_wait", k ? errno : ETIMEDOUT);
		for (int j = 0; j < k; j++) {
			unsigned i = evs[j].data.u32;

			while (cpuhp_client_next_event(c[i], 0, &ev) == 0)
				if (ev.type == type && !got[i]) {
					got[i] = true;
					left--;
				}
		}
	}
	free(got);
	return bench_now_ns();
}

/*
 * Poll every handle's socket until each is readable: the moment the last
 * notice reached its socket, before anything decodes it.  Return: then.
 */
static uint64_t delivered_all(struct cpuhp_client **c, unsigned n)
{
	struct pollfd *p = calloc(n, sizeof(*p));
	unsigned left = n;

	if (!p)
		die("calloc", ENOMEM);
	for (unsigned i = 0; i < n; i++)
		p[i] = (struct pollfd){.fd = cpuhp_client_fd(c[i]), .events = POLLIN};
	while (left) {
		int k = poll(p, left, 30000);

		if (k <= 0)
			die("poll", k ? errno : ETIMEDOUT);
		/* Keep the ones still silent at the front. */
		for (unsigned i = 0; i < left;)
			if (p[i].revents)
				p[i] = p[--left];
			else
				i++;
	}
	free(p);
	return bench_now_ns();
}

/* Wait for @call's answer.  Return: as cpuhp_client_call_done(). */
static int call_wait(struct cpuhp_client_call *call)
{
	int err;

	while ((err = cpuhp_client_call_done(call)) == -EINPROGRESS) {
		struct pollfd p = {.fd = cpuhp_client_call_fd(call), .events = POLLIN};

		if (poll(&p, 1, 30000) < 0 && errno != EINTR)
			return -errno;
	}
	return err;
}

/* Drain whatever is left on every handle (a finished hotplug's events). */
static void drain(struct cpuhp_client **c, unsigned n)
{
	static struct cpuhp_client_event ev;

	for (unsigned i = 0; i < n; i++)
		while (cpuhp_client_next_event(c[i], 0, &ev) == 0)
			;
}

struct fan {
	struct cpuhp_client **c;
	uint64_t *lease;
	unsigned n;
	int ep;
};

static void fan_open(struct fan *f, unsigned n, bool watch, bool fast)
{
	f->n = n;
	f->c = calloc(n, sizeof(*f->c));
	f->lease = calloc(n, sizeof(*f->lease));
	f->ep = epoll_create1(EPOLL_CLOEXEC);
	if (!f->c || !f->lease || f->ep < 0)
		die("fan", ENOMEM);
	setenv(CPUHP_CLIENT_FAST_PATH_ENV, fast ? "1" : "0", 1);
	for (unsigned i = 0; i < n; i++) {
		struct epoll_event e = {.events = EPOLLIN, .data.u32 = i};
		int err;

		f->c[i] = connect_one();
		err = watch ? cpuhp_client_watch(f->c[i])
		            : cpuhp_client_lease_acquire(f->c[i], 60000, &f->lease[i]);
		if (err)
			die(watch ? "watch" : "lease", err);
		if (epoll_ctl(f->ep, EPOLL_CTL_ADD, cpuhp_client_fd(f->c[i]), &e))
			die("epoll_ctl", errno);
	}
	unsetenv(CPUHP_CLIENT_FAST_PATH_ENV);
}

static void fan_close(struct fan *f)
{
	for (unsigned i = 0; i < f->n; i++)
		cpuhp_client_close(f->c[i]);
	close(f->ep);
	free(f->c);
	free(f->lease);
}

/*
 * One fan-out round: ask for CPU 1 (@online), time the event of @type's
 * arrival on every socket (*@delivered) and its reading through
 * libcpuhp-client (*@read), from the request; holders then release, the
 * hotplug ends, they take their leases again.
 */
static void fan_round(struct cpuhp_client *admin, struct fan *f, bool holders, bool online,
                      uint64_t *delivered, uint64_t *read)
{
	enum cpuhp_client_event_type type =
	    holders ? CPUHP_CLIENT_EVENT_HOTPLUG_PENDING : CPUHP_CLIENT_EVENT_HOTPLUG_STARTED;
	struct cpuhp_client_call *call;
	uint64_t t0;
	int err;

	t0 = bench_now_ns();
	err = cpuhp_client_set_online_results_begin(admin, "1", online, 60000, &call);
	if (err)
		die("hotplug", err);
	*delivered = delivered_all(f->c, f->n) - t0;
	*read = read_all(f->ep, f->c, f->n, type) - t0;
	for (unsigned i = 0; holders && i < f->n; i++) {
		err = cpuhp_client_lease_release(f->c[i], f->lease[i]);
		if (err)
			die("release", err);
	}
	err = call_wait(call);
	if (err)
		die("hotplug answer", err);
	cpuhp_client_call_free(call);
	for (unsigned i = 0; holders && i < f->n; i++) {
		err = cpuhp_client_lease_acquire(f->c[i], 60000, &f->lease[i]);
		if (err)
			die("lease again", err);
	}
	drain(f->c, f->n);
}

/*
 * cpuhpd's own time for the notices to @n holders, in its debug lines
 * since the last call ("pending, N holder connection(s) told in X ms"):
 * the median in ms, or -1 if none.
 */
static double daemon_told_ms(unsigned n)
{
	static long offset;
	uint64_t ns[MAX_ROUNDS];
	unsigned k = 0;
	char line[512];
	FILE *f = fopen(bd.log, "r");

	if (!f)
		return -1;
	fseek(f, offset, SEEK_SET);
	while (fgets(line, sizeof(line), f)) {
		const char *p = strstr(line, ": pending, ");
		unsigned told;
		double ms;

		if (p &&
		    sscanf(p, ": pending, %u holder connection(s) told in %lf ms", &told, &ms) ==
		        2 &&
		    told == n && k < MAX_ROUNDS)
			ns[k++] = (uint64_t)(ms * 1e6);
	}
	offset = ftell(f);
	fclose(f);
	return k ? (double)bench_median_ns(ns, k) / 1e6 : -1;
}

/* @n handles of one kind, @fan_rounds rounds; the medians in ms. */
static void fan_kind(struct cpuhp_client *admin, unsigned n, bool watch, bool fast, bool *online,
                     double *delivered_ms, double *read_ms, double *daemon_ms)
{
	uint64_t delivered[MAX_ROUNDS], read[MAX_ROUNDS];
	struct fan f;

	fan_open(&f, n, watch, fast);
	daemon_told_ms(n); /* skip what came before */
	for (unsigned k = 0; k < fan_rounds; k++) {
		*online = !*online;
		fan_round(admin, &f, !watch, *online, &delivered[k], &read[k]);
	}
	fan_close(&f);
	*delivered_ms = (double)bench_median_ns(delivered, fan_rounds) / 1e6;
	*read_ms = (double)bench_median_ns(read, fan_rounds) / 1e6;
	*daemon_ms = daemon_told_ms(n);
}

static void bench_fanout(void)
{
	static const struct {
		const char *what;
		bool watch, fast;
	} kinds[] = {
	    {"HotplugPending to socket-lease holders", false, false},
	    {"HotplugPending to fast-lease holders", false, true},
	    {"HotplugStarted to watchers (an older event)", true, false},
	};
	struct cpuhp_client *admin = connect_one();
	bool online = true;

	printf("2. An event to %u connections, from the hotplug's request: cpuhpd's own\n"
	       "   loop over them (its debug line), the event's arrival on every socket,\n"
	       "   and its reading through libcpuhp-client here (medians of %u rounds)\n\n",
	       fanout, fan_rounds);
	printf("   %-44s %11s %11s %11s\n", "", "cpuhpd", "delivered", "read");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		double delivered, read, own;
		char own_s[16] = "-";

		fan_kind(admin, fanout, kinds[i].watch, kinds[i].fast, &online, &delivered, &read,
		         &own);
		if (own >= 0)
			snprintf(own_s, sizeof(own_s), "%.2f ms", own);
		printf("   %-44s %11s %8.2f ms %8.2f ms\n", kinds[i].what, own_s, delivered, read);
	}
	if (!online)
		cpuhp_client_set_online(admin, "1", true, 60000);
	cpuhp_client_close(admin);
	printf("   target: under 5 ms to notify them all (cpuhpd's loop: its side alone)\n");
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	char *sim_argv[5];
	int err, a = 1;

	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		hold_ms = 200;
		rounds = 1;
		fanout = 100;
		fan_rounds = 1;
		a++;
	}
	if (argc - a != 2) {
		fprintf(stderr, "Usage: bench-ready [--quick] CPUHPD CPUHPD-SIMSYSFS\n");
		return 2;
	}
	/* A thousand client connections, and the bench's own. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((err = bench_dir_make(&bd)))
		die("mkdtemp", err);
	sim_argv[0] = argv[a + 1];
	sim_argv[1] = "--cpus";
	sim_argv[2] = "0-3";
	sim_argv[3] = bd.sys_root;
	sim_argv[4] = NULL;
	if ((err = bench_run_wait(sim_argv)))
		die("cpuhpd-simsysfs", err);
	if ((err = bench_cpuhpd_start_verbose(argv[a], bd.dir, bd.sock, bd.sys_root, bd.log,
	                                      &daemon_pid)))
		die("cpuhpd", err);
	bench_release();
	bench_fanout();
	bench_cpuhpd_stop(daemon_pid);
	bench_dir_remove(&bd);
	return 0;
}
