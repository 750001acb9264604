/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-cpuhpd: what a lease costs across processes, beside the floor.
 *
 * In one run it starts a private cpuhpd on a simulated sysfs tree and a
 * plain Unix-socket echo server (a separate process, one blocking thread
 * per connection: the least a request/response over a Unix socket can
 * cost), then times through libcpuhp-client:
 *
 *   - the echo round trip (the floor);
 *   - a lease acquire, and an acquire+release pair (two round trips), with
 *     one client and with N clients on N threads at once;
 *   - leases per second with N clients;
 *   - the time from the release of the last lease to the daemon's first
 *     sysfs access for the waiting hotplug.  The hotplugged CPU's online
 *     file is a FIFO for that moment: the worker's open() of it is what
 *     wakes the benchmark's open() of the other end, so the time is taken
 *     where the worker is, not after an event travelled back.
 *
 * Usage: bench-cpuhpd [--quick] CPUHPD CPUHPD-SIMSYSFS
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/client.h>

#include "bench-daemon.h"

#define MSG_SIZE 16 /* about a framed LeaseAcquire */

static struct bench_dir bd;
static char echo_path[64];
static pid_t daemon_pid, echo_pid;
static unsigned iters = 20000, nthreads = 8, hotplug_iters = 200;

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-cpuhpd: %s: %s\n", what, strerror(err < 0 ? -err : err));
	if (daemon_pid > 0)
		kill(daemon_pid, SIGTERM);
	if (echo_pid > 0)
		kill(echo_pid, SIGKILL);
	exit(1);
}

struct stats {
	double median_us, p99_us;
};

static struct stats summarize(uint64_t *ns, size_t n)
{
	struct stats s;

	bench_sort_ns(ns, n);
	s.median_us = (double)ns[n / 2] / 1e3;
	s.p99_us = (double)ns[(n * 99) / 100] / 1e3;
	return s;
}

/* ---- the echo server: the floor ---- */

static void *echo_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[MSG_SIZE];

	for (;;) {
		size_t got = 0;

		while (got < sizeof(buf)) {
			ssize_t n = read(fd, buf + got, sizeof(buf) - got);

			if (n <= 0)
				goto out;
			got += (size_t)n;
		}
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			break;
	}
out:
	close(fd);
	return NULL;
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0)
		die("echo server: listen", errno);
	return fd;
}

static void start_echo(void)
{
	int lfd = listen_unix(echo_path);

	echo_pid = fork();
	if (echo_pid < 0)
		die("fork", errno);
	if (echo_pid == 0) {
		for (;;) {
			int fd = accept(lfd, NULL, NULL);
			pthread_t t;

			if (fd < 0)
				_exit(0);
			pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)fd);
			pthread_detach(t);
		}
	}
	close(lfd);
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strncpy(sa.sun_path, path, sizeof(sa.sun_path) - 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect", errno);
	return fd;
}

static void echo_once(int fd)
{
	char buf[MSG_SIZE] = {0};
	size_t got = 0;

	if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
		die("echo write", errno);
	while (got < sizeof(buf)) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);

		if (n <= 0)
			die("echo read", n ? errno : EPIPE);
		got += (size_t)n;
	}
}

/* ---- the daemon ---- */

static void run_wait(char *const argv[])
{
	int err = bench_run_wait(argv);

	if (err)
		die(argv[0], -err);
}

static void start_daemon(const char *cpuhpd)
{
	int err = bench_cpuhpd_start(cpuhpd, bd.dir, bd.sock, bd.sys_root, bd.log, &daemon_pid);

	if (err)
		die(cpuhpd, -err);
}

static void stop_daemon(void)
{
	int st;

	bench_cpuhpd_stop(daemon_pid);
	kill(echo_pid, SIGKILL);
	waitpid(echo_pid, &st, 0);
}

static struct cpuhp_client *client(void)
{
	struct cpuhp_client *c;
	int err = cpuhp_client_connect(bd.sock, &c);

	if (err)
		die("cpuhp_client_connect", err);
	return c;
}

/* ---- measurements ---- */

static struct stats bench_echo(unsigned n)
{
	uint64_t *ns = calloc(n, sizeof(*ns));
	int fd = connect_unix(echo_path);
	struct stats s;

	for (unsigned i = 0; i < n / 10; i++)
		echo_once(fd);
	for (unsigned i = 0; i < n; i++) {
		uint64_t t = bench_now_ns();

		echo_once(fd);
		ns[i] = bench_now_ns() - t;
	}
	close(fd);
	s = summarize(ns, n);
	free(ns);
	return s;
}

struct lease_run {
	unsigned n;
	uint64_t *acq_ns, *pair_ns;
	pthread_barrier_t *start;
};

static void *lease_thread(void *arg)
{
	struct lease_run *r = arg;
	struct cpuhp_client *c = client();
	uint64_t id;
	int err;

	for (unsigned i = 0; i < r->n / 10; i++) {
		if ((err = cpuhp_client_lease_acquire(c, 1000, &id)) ||
		    (err = cpuhp_client_lease_release(c, id)))
			die("warm-up lease", err);
	}
	if (r->start)
		pthread_barrier_wait(r->start);
	for (unsigned i = 0; i < r->n; i++) {
		uint64_t t0 = bench_now_ns(), t1;

		err = cpuhp_client_lease_acquire(c, 1000, &id);
		t1 = bench_now_ns();
		if (!err)
			err = cpuhp_client_lease_release(c, id);
		if (err)
			die("lease", err);
		r->acq_ns[i] = t1 - t0;
		r->pair_ns[i] = bench_now_ns() - t0;
	}
	cpuhp_client_close(c);
	return NULL;
}

struct lease_result {
	struct stats acq, pair;
	double leases_per_s;
};

static struct lease_result bench_leases(unsigned threads, unsigned n)
{
	struct lease_run *runs = calloc(threads, sizeof(*runs));
	pthread_t *tid = calloc(threads, sizeof(*tid));
	uint64_t *acq = calloc((size_t)threads * n, sizeof(*acq));
	uint64_t *pair = calloc((size_t)threads * n, sizeof(*pair));
	pthread_barrier_t start;
	struct lease_result res;
	uint64_t t0, t1;

	pthread_barrier_init(&start, NULL, threads + 1);
	for (unsigned i = 0; i < threads; i++) {
		runs[i].n = n;
		runs[i].acq_ns = acq + (size_t)i * n;
		runs[i].pair_ns = pair + (size_t)i * n;
		runs[i].start = &start;
		pthread_create(&tid[i], NULL, lease_thread, &runs[i]);
	}
	pthread_barrier_wait(&start);
	t0 = bench_now_ns();
	for (unsigned i = 0; i < threads; i++)
		pthread_join(tid[i], NULL);
	t1 = bench_now_ns();
	res.acq = summarize(acq, (size_t)threads * n);
	res.pair = summarize(pair, (size_t)threads * n);
	res.leases_per_s = (double)threads * n / ((double)(t1 - t0) / 1e9);
	pthread_barrier_destroy(&start);
	free(acq);
	free(pair);
	free(runs);
	free(tid);
	return res;
}

struct hp_arg {
	struct cpuhp_client *c;
	bool online;
	int err;
};

static void *hotplug_thread(void *arg)
{
	struct hp_arg *a = arg;

	a->err = cpuhp_client_set_online(a->c, "1", a->online, 10000);
	return NULL;
}

/* Last lease released -> the worker's first sysfs access for the waiting hotplug. */
static struct stats bench_release_to_write(unsigned n)
{
	struct cpuhp_client *holder = client(), *hp = client(), *st = client();
	uint64_t *ns = calloc(n, sizeof(*ns));
	char online[128], tmp[136];
	bool state = true; /* cpu1 starts online */
	struct stats s;

	snprintf(online, sizeof(online), "%s/devices/system/cpu/cpu1/online", bd.sys_root);
	snprintf(tmp, sizeof(tmp), "%s.tmp", online);
	for (unsigned i = 0; i < n; i++) {
		struct cpuhp_client_status status;
		struct hp_arg a = {hp, !state, 0};
		const char *val = state ? "1\n" : "0\n";
		pthread_t t;
		uint64_t lease, t0;
		int fd, err, tfd;

		if ((err = cpuhp_client_lease_acquire(holder, 1000, &lease)))
			die("lease", err);
		pthread_create(&t, NULL, hotplug_thread, &a);
		/* Until the daemon says the hotplug waits: a round trip per look. */
		do {
			if ((err = cpuhp_client_status(st, &status)))
				die("status", err);
		} while (status.writer != CPUHP_CLIENT_WRITER_WAITING);
		/* The worker will not touch the file before the lease goes. */
		unlink(online);
		if (mkfifo(online, 0644) < 0)
			die("mkfifo", errno);
		t0 = bench_now_ns();
		if ((err = cpuhp_client_lease_release(holder, lease)))
			die("release", err);
		fd = open(online, O_WRONLY);
		ns[i] = bench_now_ns() - t0;
		if (fd < 0)
			die("open fifo", errno);
		/* Let the hotplug go on: the value for its read, then a plain file again. */
		tfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (tfd < 0 || write(tfd, val, 2) != 2 || close(tfd) < 0)
			die("write online file", errno);
		if (write(fd, val, 2) != 2)
			die("write fifo", errno);
		if (rename(tmp, online) < 0)
			die("rename", errno);
		close(fd);
		pthread_join(t, NULL);
		if (a.err)
			die("set_online", a.err);
		state = !state;
	}
	cpuhp_client_close(holder);
	cpuhp_client_close(hp);
	cpuhp_client_close(st);
	s = summarize(ns, n);
	free(ns);
	return s;
}

int main(int argc, char **argv)
{
	char *sim_argv[5];
	struct stats echo, rel;
	struct lease_result one, many;
	int argi = 1, err;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: bench-cpuhpd [--quick] CPUHPD CPUHPD-SIMSYSFS\n"
		       "Time cpuhpd leases through libcpuhp-client beside a Unix-socket echo.\n");
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "--quick")) {
		iters = 500;
		nthreads = 4;
		hotplug_iters = 10;
		argi++;
	}
	if (argc - argi != 2) {
		fprintf(stderr, "Usage: bench-cpuhpd [--quick] CPUHPD CPUHPD-SIMSYSFS\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Socket leases, the round trips this measures; bench-fastlease times the fast path. */
	setenv(CPUHP_CLIENT_FAST_PATH_ENV, "0", 1);
	err = bench_dir_make(&bd);
	if (err)
		die("mkdtemp", err);
	snprintf(echo_path, sizeof(echo_path), "%s/echo.sock", bd.dir);
	sim_argv[0] = argv[argi + 1];
	sim_argv[1] = "--cpus";
	sim_argv[2] = "0-1";
	sim_argv[3] = bd.sys_root;
	sim_argv[4] = NULL;
	run_wait(sim_argv);
	start_daemon(argv[argi]);
	start_echo();

	echo = bench_echo(iters);
	one = bench_leases(1, iters);
	many = bench_leases(nthreads, iters / nthreads);
	rel = bench_release_to_write(hotplug_iters);
	stop_daemon();

	printf("cpuhpd through libcpuhp-client, simulated sysfs (%u samples; %u threads)\n", iters,
	       nthreads);
	printf("%-46s %10s %10s %8s\n", "", "median us", "p99 us", "x echo");
	printf("%-46s %10.1f %10.1f %8.2f\n", "unix socket echo round trip (the floor)",
	       echo.median_us, echo.p99_us, 1.0);
	printf("%-46s %10.1f %10.1f %8.2f\n", "lease acquire, 1 client", one.acq.median_us,
	       one.acq.p99_us, one.acq.median_us / echo.median_us);
	printf("%-46s %10.1f %10.1f %8.2f\n", "lease acquire+release (2 trips), 1 client",
	       one.pair.median_us, one.pair.p99_us, one.pair.median_us / echo.median_us);
	printf("%-46s %10.1f %10.1f %8.2f\n", "lease acquire, N clients", many.acq.median_us,
	       many.acq.p99_us, many.acq.median_us / echo.median_us);
	printf("%-46s %10.1f %10.1f %8.2f\n", "lease acquire+release, N clients",
	       many.pair.median_us, many.pair.p99_us, many.pair.median_us / echo.median_us);
	printf("%-46s %10.1f %10.1f %8.2f\n", "last lease released -> first sysfs access",
	       rel.median_us, rel.p99_us, rel.median_us / echo.median_us);
	printf("leases/s (acquire+release pairs): 1 client %.0f, %u clients %.0f\n",
	       one.leases_per_s, nthreads, many.leases_per_s);
	printf("target: acquire within 2x of the echo floor: %s (%.2fx)\n",
	       one.acq.median_us <= 2 * echo.median_us ? "met" : "NOT met",
	       one.acq.median_us / echo.median_us);
	if (bench_dir_remove(&bd))
		fprintf(stderr, "bench-cpuhpd: could not remove %s\n", bd.dir);
	return 0;
}
