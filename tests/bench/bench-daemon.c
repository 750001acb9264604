/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Starting helper programs and a private cpuhpd for the daemon benchmarks,
 * and their medians.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-daemon.h"

extern char **environ;

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void bench_sort_ns(uint64_t *ns, size_t n)
{
	qsort(ns, n, sizeof(*ns), cmp_u64);
}

uint64_t bench_median_ns(uint64_t *ns, size_t n)
{
	bench_sort_ns(ns, n);
	return ns[n / 2];
}

int bench_run_wait(char *const argv[])
{
	pid_t pid;
	int st, err = posix_spawn(&pid, argv[0], NULL, NULL, argv, environ);

	if (err)
		return -err;
	if (waitpid(pid, &st, 0) < 0)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* Wait for READY=1 on @fd. */
static int wait_ready(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	char buf[256];

	for (;;) {
		ssize_t len;

		if (poll(&pfd, 1, 30000) != 1)
			return -ETIMEDOUT;
		len = recv(fd, buf, sizeof(buf) - 1, 0);
		if (len > 0) {
			buf[len] = '\0';
			if (strstr(buf, "READY=1"))
				return 0;
		}
	}
}

static int spawn(const char *cpuhpd, const char *dir, const char *sock, const char *sys_root,
                 const char *log_path, bool netlink, bool verbose, pid_t *pid)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *argv[8] = {(char *)cpuhpd, "--socket", (char *)sock, "--sysfs-root",
	                 (char *)sys_root};
	unsigned argc = 5;
	char notify[sizeof(sa.sun_path) + 16], **env;
	posix_spawn_file_actions_t fa;
	size_t n = 0;
	int fd, err;

	if (!netlink)
		argv[argc++] = "--no-netlink";
	if (verbose)
		argv[argc++] = "--verbose";
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/notify", dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		goto out;
	}
	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(env, environ, n * sizeof(*env));
	snprintf(notify, sizeof(notify), "NOTIFY_SOCKET=%s", sa.sun_path);
	env[n] = notify;
	/* Its log goes to a file: one line per hotplug would drown the table. */
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log_path, O_WRONLY | O_CREAT | O_TRUNC,
	                                 0644);
	err = -posix_spawn(pid, cpuhpd, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (!err)
		err = wait_ready(fd);
out:
	close(fd);
	return err;
}

int bench_cpuhpd_spawn(const char *cpuhpd, const char *dir, const char *sock, const char *sys_root,
                       const char *log_path, bool netlink, pid_t *pid)
{
	return spawn(cpuhpd, dir, sock, sys_root, log_path, netlink, false, pid);
}

int bench_cpuhpd_start(const char *cpuhpd, const char *dir, const char *sock, const char *sys_root,
                       const char *log_path, pid_t *pid)
{
	return spawn(cpuhpd, dir, sock, sys_root, log_path, false, false, pid);
}

int bench_cpuhpd_start_verbose(const char *cpuhpd, const char *dir, const char *sock,
                               const char *sys_root, const char *log_path, pid_t *pid)
{
	return spawn(cpuhpd, dir, sock, sys_root, log_path, false, true, pid);
}

pid_t bench_start_hook(const char *cpuhpctl, const char *sock, FILE **out)
{
	char *argv[] = {(char *)cpuhpctl, "--socket",  (char *)sock, "state",
	                "bench-hook",     "--nocalls", "--teardown", "true",
	                "--startup",      "true",      NULL};
	posix_spawn_file_actions_t fa;
	int pfd[2], err;
	char buf[256];
	pid_t pid;

	if (pipe(pfd) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	err = posix_spawn(&pid, cpuhpctl, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	*out = err ? NULL : fdopen(pfd[0], "r");
	if (!*out) {
		close(pfd[0]);
		return err ? -err : -ENOMEM;
	}
	while (fgets(buf, sizeof(buf), *out) && !strstr(buf, "registered"))
		;
	return pid;
}

int bench_private_cpuhpd(struct bench_dir *d, const char *cpuhpd, const char *simsysfs,
                         const char *cpus, pid_t *pid, const char **what)
{
	char *sim_argv[] = {(char *)simsysfs, "--cpus", (char *)cpus, d->sys_root, NULL};
	int err;

	*what = "mkdtemp";
	err = bench_dir_make(d);
	if (err)
		return err;
	*what = simsysfs;
	err = bench_run_wait(sim_argv);
	if (err)
		return err;
	*what = "starting cpuhpd";
	return bench_cpuhpd_start(cpuhpd, d->dir, d->sock, d->sys_root, d->log, pid);
}

void bench_cpuhpd_stop(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int bench_dir_make(struct bench_dir *d)
{
	snprintf(d->dir, sizeof(d->dir), "/tmp/cpuhpd-bench-XXXXXX");
	if (!mkdtemp(d->dir))
		return -errno;
	snprintf(d->sock, sizeof(d->sock), "%s/cpuhpd.sock", d->dir);
	snprintf(d->sys_root, sizeof(d->sys_root), "%s/sys", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/cpuhpd.log", d->dir);
	return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	return remove(path) ? -errno : 0;
}

int bench_dir_remove(const struct bench_dir *d)
{
	/* Depth first, not following symlinks out of the tree. */
	return nftw(d->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}
