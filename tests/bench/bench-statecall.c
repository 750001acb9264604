/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-statecall: what one hotplug-state call costs, measured from
 * outside with libcpuhp-client, beside a socket round trip of the same run.
 *
 * A private cpuhpd on a simulated tree (CPUs 0-1).  Each repetition times:
 *
 *   - the floor: a two-process round trip over a socketpair (a 24-byte
 *     message, about a framed StateCall, each side blocked in read());
 *   - ROUNDS offline+online rounds of CPU 1 with no state;
 *   - the same rounds with NSTATES no-op states registered, each on its
 *     connection with its thread (CPUHP_CLIENT_STATE_THREAD): 2 x NSTATES
 *     calls a round, one round trip each;
 *   - and with them on one connection and thread (CPUHP_CLIENT_STATE_SHARED),
 *     where cpuhpd sends a CPU's calls in one batch.
 *
 * A call costs (median round with states - median round without) / calls;
 * its ratio to the round trip's median is taken within each repetition,
 * and the median of those ratios is the figure.  Then, with a kernel
 * counter of system calls (the raw_syscalls:sys_enter tracepoint through
 * perf_event_open, no ptrace: it barely slows the processes counted), the
 * same rounds are counted again, client and cpuhpd apart, per call and
 * per round trip.  Last the shell hook (`cpuhpctl state --teardown true
 * --startup true`, if CPUHPCTL is given): its call against one fork+exec
 * of `sh -c true` and one posix_spawn of it, timed here.
 *
 * Usage: bench-statecall [--quick] CPUHPD CPUHPD-SIMSYSFS [CPUHPCTL]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cpuhp/client.h>

#include "bench-daemon.h"

#define NSTATES   10
#define MSG_SIZE  24
#define MAX_REPS  9
#define MAX_TASKS 64

extern char **environ;

static struct bench_dir bd;
static pid_t daemon_pid;
static unsigned reps = 9, rounds = 50, rtt_iters = 2000, hook_rounds = 50, count_rounds = 50;

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-statecall: %s: %s\n", what, strerror(err < 0 ? -err : err));
	if (daemon_pid > 0)
		bench_cpuhpd_stop(daemon_pid);
	exit(1);
}

static uint64_t *samples(unsigned n)
{
	uint64_t *v = calloc(n, sizeof(*v));

	if (!v)
		die("calloc", ENOMEM);
	return v;
}

/* ---- the floor: a round trip between two processes ---- */

static void echo_child(int fd)
{
	char buf[MSG_SIZE];

	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

		if (n <= 0 || write(fd, buf, (size_t)n) != n)
			_exit(0);
	}
}

/* One whole message each way on @fd. */
static void round_trip(int fd)
{
	char buf[MSG_SIZE] = {0};
	size_t got = 0;

	if (write(fd, buf, sizeof(buf)) != sizeof(buf))
		die("round trip write", errno);
	while (got < sizeof(buf)) {
		ssize_t n = read(fd, buf, sizeof(buf) - got);

		if (n <= 0)
			die("round trip read", n ? errno : EPIPE);
		got += (size_t)n;
	}
}

/* Median ns of @n round trips; the child echoing is started and reaped here. */
static double rtt_ns(unsigned n)
{
	uint64_t *v = samples(n);
	int sv[2], st;
	double med;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		die("socketpair", errno);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		close(sv[0]);
		echo_child(sv[1]);
	}
	close(sv[1]);
	round_trip(sv[0]); /* the child is running */
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns();

		round_trip(sv[0]);
		v[i] = bench_now_ns() - t0;
	}
	close(sv[0]);
	waitpid(pid, &st, 0);
	med = (double)bench_median_ns(v, n);
	free(v);
	return med;
}

/* ---- hotplug rounds ---- */

static void set_online(struct cpuhp_client *c, bool online)
{
	int err = cpuhp_client_set_online(c, "1", online, 10000);

	if (err)
		die(cpuhp_client_last_message(c), err);
}

/* Median ns of @n offline+online rounds of CPU 1. */
static double rounds_ns(struct cpuhp_client *c, unsigned n)
{
	uint64_t *v = samples(n);
	double med;

	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns();

		set_online(c, false);
		set_online(c, true);
		v[i] = bench_now_ns() - t0;
	}
	med = (double)bench_median_ns(v, n);
	free(v);
	return med;
}

/*
 * Register the states.  Return: false if this libcpuhp-client does not know
 * @flags (an older one, run to compare: LD_LIBRARY_PATH).
 */
static bool states_add(struct cpuhp_client *c, struct cpuhp_client_state **s, unsigned flags)
{
	for (unsigned i = 0; i < NSTATES; i++) {
		char name[32];
		int err;

		snprintf(name, sizeof(name), "bench-%u", i);
		err = cpuhp_client_state_register(c, name, (int)i, 0,
		                                  CPUHP_CLIENT_STATE_NOCALLS | flags, NULL, NULL,
		                                  NULL, &s[i]);
		if (err == -EINVAL && i == 0)
			return false;
		if (err)
			die(cpuhp_client_last_message(c), err);
	}
	return true;
}

static void states_remove(struct cpuhp_client_state **s)
{
	for (unsigned i = NSTATES; i-- > 0;)
		cpuhp_client_state_remove(s[i], true);
}

/* ---- system calls counted by the kernel ---- */

static int sys_enter_id = -1;

static int read_id(void)
{
	FILE *f = fopen("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id", "re");
	int id = -1;

	if (f) {
		if (fscanf(f, "%d", &id) != 1)
			id = -1;
		fclose(f);
	}
	return id;
}

/*
 * The tracepoint's id, from tracefs; where it is not mounted, root mounts
 * it in a mount namespace of this process's own (single-threaded still),
 * so that nothing outside sees it.  -1 if neither works.
 */
static int find_sys_enter(void)
{
	int id = read_id();

	if (id >= 0 || geteuid() != 0)
		return id;
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0)
		return -1;
	return read_id();
}

/* A counter of @tid's system calls and those of threads and children it starts from now on. */
static int counter_open(pid_t tid)
{
	struct perf_event_attr a = {
	    .type = PERF_TYPE_TRACEPOINT,
	    .size = sizeof(a),
	    .config = (unsigned long long)sys_enter_id,
	    .inherit = 1,
	    .disabled = 1,
	};

	return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

struct counters {
	int fd[MAX_TASKS];
	unsigned n;
};

/* Every thread of @pid (0: this one, and what it starts from now on). */
static int counters_open(struct counters *k, pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *dir;

	k->n = 0;
	if (!pid) {
		k->fd[0] = counter_open(0);
		k->n = k->fd[0] >= 0;
		return k->n ? 0 : -errno;
	}
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((e = readdir(dir)) && k->n < MAX_TASKS) {
		int fd;

		if (e->d_name[0] == '.')
			continue;
		fd = counter_open((pid_t)atoi(e->d_name));
		if (fd < 0) {
			closedir(dir);
			return -errno;
		}
		k->fd[k->n++] = fd;
	}
	closedir(dir);
	return 0;
}

static void counters_switch(struct counters *k, bool on)
{
	for (unsigned i = 0; i < k->n; i++)
		ioctl(k->fd[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

static uint64_t counters_read(const struct counters *k)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < k->n; i++) {
		uint64_t v;

		if (read(k->fd[i], &v, sizeof(v)) == sizeof(v))
			sum += v;
	}
	return sum;
}

static void counters_close(struct counters *k)
{
	for (unsigned i = 0; i < k->n; i++)
		close(k->fd[i]);
	k->n = 0;
}

/* System calls of @self and @dmn over @n rounds (this process's own counter: @self). */
static void count_rounds_of(struct cpuhp_client *c, struct counters *self, struct counters *dmn,
                            unsigned n, uint64_t *client, uint64_t *daemon)
{
	uint64_t c0 = counters_read(self), d0 = counters_read(dmn);

	for (unsigned i = 0; i < n; i++) {
		set_online(c, false);
		set_online(c, true);
	}
	*client = counters_read(self) - c0;
	*daemon = counters_read(dmn) - d0;
}

/*
 * Per call of states registered with @flags: client's and cpuhpd's system
 * calls.  False if the counter is not available here.
 */
static bool count_syscalls(struct cpuhp_client *c, unsigned flags, double *client, double *daemon)
{
	struct cpuhp_client_state *s[NSTATES];
	struct counters self, dmn;
	struct cpuhp_client *owner;
	uint64_t pc, pd, sc, sd;
	unsigned calls = 2 * NSTATES * count_rounds;
	int err;

	if (sys_enter_id < 0 || counters_open(&self, 0) < 0)
		return false;
	if (counters_open(&dmn, daemon_pid) < 0) {
		counters_close(&self);
		return false;
	}
	counters_switch(&self, true);
	counters_switch(&dmn, true);
	count_rounds_of(c, &self, &dmn, count_rounds, &pc, &pd);
	/*
	 * Registered after the counter opened, on a handle of their own (whose
	 * shared states' thread is new too): their threads are counted.
	 */
	err = cpuhp_client_connect(bd.sock, &owner);
	if (err)
		die("connect", err);
	if (!states_add(owner, s, flags)) {
		cpuhp_client_close(owner);
		counters_close(&self);
		counters_close(&dmn);
		return false;
	}
	count_rounds_of(c, &self, &dmn, count_rounds, &sc, &sd);
	states_remove(s);
	cpuhp_client_close(owner);
	*client = ((double)sc - (double)pc) / calls;
	*daemon = ((double)sd - (double)pd) / calls;
	counters_close(&self);
	counters_close(&dmn);
	return true;
}

/* System calls of one round trip, both sides.  False if not counted. */
static bool count_rtt_syscalls(double *rtt)
{
	struct counters self;
	uint64_t r0;

	if (sys_enter_id < 0 || counters_open(&self, 0) < 0)
		return false;
	counters_switch(&self, true);
	/* The echo child is forked after the counter opened: both sides counted. */
	r0 = counters_read(&self);
	rtt_ns(rtt_iters);
	*rtt = (double)(counters_read(&self) - r0) / rtt_iters;
	counters_close(&self);
	return true;
}

/* ---- the shell hook, beside a fork+exec of sh ---- */

/* Ns of one run of `sh -c true`, by fork+exec (@spawn false) or posix_spawn. */
static uint64_t sh_once(bool spawn)
{
	char *argv[] = {"sh", "-c", "true", NULL};
	uint64_t t0 = bench_now_ns();
	pid_t pid;
	int st;

	if (spawn) {
		int err = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);

		if (err)
			die("posix_spawn /bin/sh", err);
	} else {
		pid = fork();
		if (pid < 0)
			die("fork", errno);
		if (pid == 0) {
			execv("/bin/sh", argv);
			_exit(127);
		}
	}
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid", errno);
	return bench_now_ns() - t0;
}

/*
 * The hook's call against sh: @n rounds, each an offline+online with the
 * hook (two calls), a fork+exec and a posix_spawn of sh, interleaved so
 * that the machine's ups and downs fall on all three alike.  Medians, in
 * *@hook (a call: a round less @plain, halved), *@fe, *@sp.
 */
static void hook_vs_sh(struct cpuhp_client *c, unsigned n, double plain, double *hook, double *fe,
                       double *sp)
{
	uint64_t *h = samples(n), *f = samples(n), *p = samples(n);

	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = bench_now_ns();

		set_online(c, false);
		set_online(c, true);
		h[i] = bench_now_ns() - t0;
		f[i] = sh_once(false);
		p[i] = sh_once(true);
	}
	*hook = ((double)bench_median_ns(h, n) - plain) / 2;
	*fe = (double)bench_median_ns(f, n);
	*sp = (double)bench_median_ns(p, n);
	free(h);
	free(f);
	free(p);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median_of(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: bench-statecall [--quick] CPUHPD CPUHPD-SIMSYSFS [CPUHPCTL]\n"
	        "Time one hotplug-state call through cpuhpd (%u no-op states, offline+online\n"
	        "rounds of one CPU, minus the same rounds without states) against a\n"
	        "two-process socket round trip in the same run; count the system calls of\n"
	        "each; time the shell hook's call against a fork+exec of sh.\n",
	        NSTATES);
}

int main(int argc, char **argv)
{
	const char *what;
	struct cpuhp_client_state *s[NSTATES];
	static const unsigned mode_flags[2] = {CPUHP_CLIENT_STATE_THREAD,
	                                       CPUHP_CLIENT_STATE_SHARED};
	double rtt[MAX_REPS], call[2][MAX_REPS], ratio[2][MAX_REPS];
	double sys_client, sys_daemon, sys_rtt;
	const char *cpuhpctl = NULL;
	struct cpuhp_client *c;
	int argi = 1, err;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		reps = 1;
		rounds = 5;
		rtt_iters = 100;
		hook_rounds = 3;
		count_rounds = 3;
		argi++;
	}
	if (argc - argi != 2 && argc - argi != 3) {
		usage(stderr);
		return 2;
	}
	if (argc - argi == 3)
		cpuhpctl = argv[argi + 2];
	signal(SIGPIPE, SIG_IGN);
	/* Before any thread: a mount namespace needs a single-threaded process. */
	sys_enter_id = find_sys_enter();
	err = bench_private_cpuhpd(&bd, argv[argi], argv[argi + 1], "0-1", &daemon_pid, &what);
	if (err)
		die(what, err);
	err = cpuhp_client_connect(bd.sock, &c);
	if (err)
		die("connect", err);

	printf("one hotplug-state call against a socket round trip, %u no-op states, %u\n"
	       "offline+online rounds of CPU 1 (simulated sysfs) per repetition, medians;\n"
	       "'own': each state on its connection and thread, 'shared': all on one\n"
	       "(CPUHP_CLIENT_STATE_SHARED), their calls in one batch per CPU\n",
	       NSTATES, rounds);
	printf("%4s %9s %9s %9s %9s %9s %9s %9s %9s\n", "rep", "rtt us", "round us", "own us",
	       "shared us", "own/call", "x rtt", "shr/call", "x rtt");
	for (unsigned r = 0; r < reps; r++) {
		double plain, with[2];

		rtt[r] = rtt_ns(rtt_iters) / 1e3;
		plain = rounds_ns(c, rounds) / 1e3;
		for (unsigned m = 0; m < 2; m++) {
			/* An older library without shared states: that column is 0. */
			with[m] = call[m][r] = ratio[m][r] = 0;
			if (!states_add(c, s, mode_flags[m]))
				continue;
			with[m] = rounds_ns(c, rounds) / 1e3;
			states_remove(s);
			call[m][r] = (with[m] - plain) / (2 * NSTATES);
			ratio[m][r] = call[m][r] / rtt[r];
		}
		printf("%4u %9.1f %9.1f %9.1f %9.1f %9.1f %9.2f %9.1f %9.2f\n", r + 1, rtt[r],
		       plain, with[0], with[1], call[0][r], ratio[0][r], call[1][r], ratio[1][r]);
	}
	printf("median: a round trip %.1f us; a call %.1f us (%.2fx) on its own connection, "
	       "%.1f us (%.2fx) shared\n",
	       median_of(rtt, reps), median_of(call[0], reps), median_of(ratio[0], reps),
	       median_of(call[1], reps), median_of(ratio[1], reps));

	if (count_rtt_syscalls(&sys_rtt)) {
		printf("system calls per round trip %.2f; per call:", sys_rtt);
		for (unsigned m = 0; m < 2; m++)
			if (count_syscalls(c, mode_flags[m], &sys_client, &sys_daemon))
				printf(" %s %.2f (client %.2f, cpuhpd %.2f)%s",
				       m ? "shared" : "own", sys_client + sys_daemon, sys_client,
				       sys_daemon, m ? "" : ";");
		printf("\n");
	} else {
		printf("system calls: not counted (no raw_syscalls tracepoint for "
		       "perf_event_open here)\n");
	}

	if (cpuhpctl) {
		double plain = rounds_ns(c, hook_rounds), hook, fe, sp;
		FILE *out;
		pid_t pid = bench_start_hook(cpuhpctl, bd.sock, &out);
		int st;

		if (pid < 0)
			die(cpuhpctl, (int)pid);
		hook_vs_sh(c, hook_rounds, plain, &hook, &fe, &sp);
		kill(pid, SIGTERM);
		waitpid(pid, &st, 0);
		fclose(out);
		printf("shell hook: a call %.0f us; fork+exec of sh -c true %.0f us (%.2fx), "
		       "posix_spawn %.0f us (%.2fx)\n",
		       hook / 1e3, fe / 1e3, hook / fe, sp / 1e3, hook / sp);
	}
	cpuhp_client_close(c);
	bench_cpuhpd_stop(daemon_pid);
	/* BENCH_KEEP=1 keeps the directory, cpuhpd's log with it. */
	if (getenv("BENCH_KEEP"))
		fprintf(stderr, "kept %s\n", bd.dir);
	else if (bench_dir_remove(&bd))
		fprintf(stderr, "bench-statecall: could not remove %s\n", bd.dir);
	return 0;
}
