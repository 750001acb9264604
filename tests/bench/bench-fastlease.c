/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-fastlease: what a reader pays across processes, in one run.
 *
 * It starts a private cpuhpd on a simulated tree and times one read-side
 * acquire+release pair of each of:
 *
 *   - a fast lease (libcpuhp-client, shared memory, no round trip);
 *   - a socket lease (the same calls with $CPUHP_CLIENT_FAST_PATH=0);
 *   - a pthread_rwlock with PTHREAD_PROCESS_SHARED in shared memory;
 *   - flock(LOCK_SH) and flock(LOCK_UN) on one file (each process its own open);
 *   - cpuhp_rwsem read_lock+read_unlock through libcpuhp.so, in process (its
 *     "2" column is two threads of one process, the others are processes).
 *
 * Each runs in 1 and in 2 worker processes at once (children, released
 * together through a pipe); each worker times rounds of N pairs and reports
 * its median round; a cell is the mean over the workers.  The table gives
 * ns per pair and the ratio to cpuhp_rwsem in the same column, then the
 * two targets: fast lease within 2x of cpuhp_rwsem, and at least
 * 100x faster than the socket lease.  Nothing is judged (the smoke test only
 * runs it); noisy VMs move the absolute figures, rarely the ratios.
 *
 * Usage: bench-fastlease [--quick] CPUHPD CPUHPD-SIMSYSFS
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/client.h>
#include <cpuhp/rwsem.h>

#include "bench-daemon.h"

#define ROUNDS 7

enum kind { FAST, SOCKET, RWLOCK, FLOCK, RWSEM, NKINDS };

static const char *const names[NKINDS] = {
    [FAST] = "fast lease (shared memory)",       [SOCKET] = "socket lease (round trips)",
    [RWLOCK] = "pthread_rwlock, PROCESS_SHARED", [FLOCK] = "flock(LOCK_SH) + flock(LOCK_UN)",
    [RWSEM] = "cpuhp_rwsem, in process",
};

/* Pairs per round; --quick divides them by 20. */
static unsigned long pairs[NKINDS] = {
    [FAST] = 2000000, [SOCKET] = 2000, [RWLOCK] = 2000000, [FLOCK] = 200000, [RWSEM] = 2000000,
};

static char dir[40], sock_path[80], sys_root[80], lock_path[80], log_path[80];
static pid_t daemon_pid;
static pthread_rwlock_t *shared_rwlock;

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-fastlease: %s: %s\n", what, strerror(err < 0 ? -err : err));
	if (daemon_pid > 0)
		kill(daemon_pid, SIGTERM);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------ cpuhpd */

static void run_wait(char *const argv[])
{
	int err = bench_run_wait(argv);

	if (err)
		die(argv[0], -err);
}

/* Start cpuhpd and wait for its READY=1 on a notify socket of ours. */
static void start_daemon(const char *cpuhpd)
{
	int err = bench_cpuhpd_start(cpuhpd, dir, sock_path, sys_root, log_path, &daemon_pid);

	if (err)
		die(cpuhpd, -err);
}

static void stop_daemon(void)
{
	bench_cpuhpd_stop(daemon_pid);
	daemon_pid = 0;
}

/* --------------------------------------------------------------- the loops */

struct ctx {
	enum kind kind;
	struct cpuhp_client *client;
	struct cpuhp_rwsem *sem;
	int lock_fd;
	int go_fd; /* read end: EOF releases every worker at once */
	double median_ns;
};

static void fail_pair(const char *what, int err)
{
	fprintf(stderr, "bench-fastlease: %s failed in a worker: %s\n", what, strerror(-err));
	_exit(1);
}

static void one_round(struct ctx *x, unsigned long n)
{
	uint64_t id;
	int ret;

	switch (x->kind) {
	case FAST:
	case SOCKET:
		for (unsigned long i = 0; i < n; i++) {
			ret = cpuhp_client_lease_acquire(x->client, 1000, &id);
			if (ret)
				fail_pair("lease acquire", ret);
			ret = cpuhp_client_lease_release(x->client, id);
			if (ret)
				fail_pair("lease release", ret);
		}
		break;
	case RWLOCK:
		for (unsigned long i = 0; i < n; i++) {
			pthread_rwlock_rdlock(shared_rwlock);
			pthread_rwlock_unlock(shared_rwlock);
		}
		break;
	case FLOCK:
		for (unsigned long i = 0; i < n; i++) {
			if (flock(x->lock_fd, LOCK_SH) || flock(x->lock_fd, LOCK_UN))
				fail_pair("flock", -errno);
		}
		break;
	case RWSEM:
		for (unsigned long i = 0; i < n; i++) {
			cpuhp_rwsem_read_lock(x->sem);
			cpuhp_rwsem_read_unlock(x->sem);
		}
		break;
	default:
		break;
	}
}

/* Wait for the go, then time ROUNDS rounds (after one to warm up); keep the median. */
static void *timed(void *arg)
{
	struct ctx *x = arg;
	unsigned long n = pairs[x->kind];
	double per[ROUNDS];
	char c;

	while (read(x->go_fd, &c, 1) < 0 && errno == EINTR)
		;
	one_round(x, n / 4 + 1);
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t t0 = now_ns();

		one_round(x, n);
		per[r] = (double)(now_ns() - t0) / (double)n;
	}
	qsort(per, ROUNDS, sizeof(per[0]), cmp_double);
	x->median_ns = per[ROUNDS / 2];
	return NULL;
}

/* One worker process: set up, say ready, run (threads for RWSEM), write the medians. */
static void worker(enum kind kind, unsigned threads, int ready_fd, int go_fd, int out_fd)
{
	struct ctx x[2] = {0};
	pthread_t th[2];
	struct cpuhp_rwsem *sem = NULL;
	double sum = 0;
	int ret;

	if (kind == RWSEM && (ret = cpuhp_rwsem_new(&sem)))
		fail_pair("cpuhp_rwsem_new", ret);
	for (unsigned t = 0; t < threads; t++) {
		x[t].kind = kind;
		x[t].go_fd = go_fd;
		x[t].sem = sem;
		if (kind == FAST || kind == SOCKET) {
			if (kind == SOCKET)
				setenv(CPUHP_CLIENT_FAST_PATH_ENV, "0", 1);
			ret = cpuhp_client_connect(sock_path, &x[t].client);
			if (ret)
				fail_pair("connect", ret);
			if (cpuhp_client_fast_path(x[t].client) != (kind == FAST))
				fail_pair(kind == FAST ? "fast path not granted"
				                       : "fast path not off",
				          -EPROTO);
		}
		if (kind == FLOCK && (x[t].lock_fd = open(lock_path, O_RDONLY | O_CLOEXEC)) < 0)
			fail_pair("open", -errno);
	}
	if (write(ready_fd, "r", 1) != 1)
		_exit(1);
	for (unsigned t = 0; t < threads; t++)
		pthread_create(&th[t], NULL, timed, &x[t]);
	for (unsigned t = 0; t < threads; t++) {
		pthread_join(th[t], NULL);
		sum += x[t].median_ns;
		if (x[t].client)
			cpuhp_client_close(x[t].client);
	}
	sum /= threads;
	if (write(out_fd, &sum, sizeof(sum)) != sizeof(sum))
		_exit(1);
	cpuhp_rwsem_free(sem);
	_exit(0);
}

/* @n workers at once (RWSEM: one process of @n threads); Return: mean ns per pair. */
static double measure(enum kind kind, unsigned n)
{
	unsigned procs = kind == RWSEM ? 1 : n, threads = kind == RWSEM ? n : 1;
	int ready[2], go[2], out[2];
	double sum = 0;
	char c;

	if (pipe(ready) || pipe(go) || pipe(out))
		die("pipe", errno);
	for (unsigned i = 0; i < procs; i++) {
		pid_t pid = fork();

		if (pid < 0)
			die("fork", errno);
		if (pid == 0) {
			close(go[1]);
			worker(kind, threads, ready[1], go[0], out[1]);
		}
	}
	close(go[0]);
	for (unsigned i = 0; i < procs; i++)
		if (read(ready[0], &c, 1) != 1)
			die("a worker failed to start", EIO);
	close(go[1]); /* go */
	for (unsigned i = 0; i < procs; i++) {
		double v;

		if (read(out[0], &v, sizeof(v)) != sizeof(v))
			die("a worker failed", EIO);
		sum += v;
	}
	for (unsigned i = 0; i < procs; i++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			die("a worker exited badly", EIO);
	}
	close(ready[0]);
	close(ready[1]);
	close(out[0]);
	close(out[1]);
	return sum / procs;
}

static void setup_shared(void)
{
	pthread_rwlockattr_t a;
	int fd;

	shared_rwlock = mmap(NULL, sizeof(*shared_rwlock), PROT_READ | PROT_WRITE,
	                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared_rwlock == MAP_FAILED)
		die("mmap", errno);
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_rwlock_init(shared_rwlock, &a);
	pthread_rwlockattr_destroy(&a);
	fd = open(lock_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		die(lock_path, errno);
	close(fd);
}

static void print_table(double ns[NKINDS][2])
{
	double fast_vs_rwsem = ns[FAST][0] / ns[RWSEM][0];
	double socket_vs_fast = ns[SOCKET][0] / ns[FAST][0];

	printf("\n%-34s %14s %14s %12s %12s\n", "ns per read acquire+release", "1 process",
	       "2 processes", "x rwsem (1)", "x rwsem (2)");
	for (int k = 0; k < NKINDS; k++)
		printf("%-34s %14.1f %14.1f %12.2f %12.2f\n", names[k], ns[k][0], ns[k][1],
		       ns[k][0] / ns[RWSEM][0], ns[k][1] / ns[RWSEM][1]);
	printf("(cpuhp_rwsem's \"2 processes\" column is 2 threads of one process.)\n\n");
	printf("fast lease vs cpuhp_rwsem:  %.2fx (1), %.2fx (2)   target <= 2x: %s\n",
	       fast_vs_rwsem, ns[FAST][1] / ns[RWSEM][1], fast_vs_rwsem <= 2.0 ? "met" : "missed");
	printf("socket lease vs fast lease: %.0fx (1), %.0fx (2)   target >= 100x: %s\n",
	       socket_vs_fast, ns[SOCKET][1] / ns[FAST][1],
	       socket_vs_fast >= 100.0 ? "met" : "missed");
}

int main(int argc, char **argv)
{
	double ns[NKINDS][2];
	int argi = 1;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: bench-fastlease [--quick] CPUHPD CPUHPD-SIMSYSFS\n"
		       "Time a fast lease beside a socket lease, a process-shared rwlock, flock\n"
		       "and the in-process cpuhp_rwsem, at 1 and 2 processes.\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		for (int k = 0; k < NKINDS; k++)
			pairs[k] /= 20;
		argi++;
	}
	if (argc - argi != 2) {
		fprintf(stderr, "Usage: bench-fastlease [--quick] CPUHPD CPUHPD-SIMSYSFS\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "/tmp/cpuhpd-fastbench-XXXXXX");
	if (!mkdtemp(dir))
		die("mkdtemp", errno);
	snprintf(sock_path, sizeof(sock_path), "%s/cpuhpd.sock", dir);
	snprintf(sys_root, sizeof(sys_root), "%s/sys", dir);
	snprintf(lock_path, sizeof(lock_path), "%s/flock", dir);
	snprintf(log_path, sizeof(log_path), "%s/cpuhpd.log", dir);
	{
		char *sim_argv[] = {argv[argi + 1], "--cpus", "0-1", sys_root, NULL};

		run_wait(sim_argv);
	}
	setup_shared();
	start_daemon(argv[argi]);
	for (int k = 0; k < NKINDS; k++) {
		ns[k][0] = measure(k, 1);
		ns[k][1] = measure(k, 2);
		fprintf(stderr, "  %-34s done\n", names[k]);
	}
	stop_daemon();
	print_table(ns);
	{
		char *rm_argv[] = {"/bin/rm", "-rf", dir, NULL};

		run_wait(rm_argv);
	}
	return 0;
}
