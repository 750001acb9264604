/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Starting helper programs and a private cpuhpd for the daemon benchmarks,
 * and their medians.
 */
#ifndef CPUHP_BENCH_DAEMON_H
#define CPUHP_BENCH_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/* A benchmark's private directory and the paths its cpuhpd uses in it. */
struct bench_dir {
	char dir[32];      /* /tmp/cpuhpd-bench-XXXXXX */
	char sock[64];     /* DIR/cpuhpd.sock */
	char sys_root[64]; /* DIR/sys, the simulated tree */
	char log[64];      /* DIR/cpuhpd.log, cpuhpd's stderr */
};

/* Make the directory (mkdtemp) and fill in the paths.  0 or -errno. */
int bench_dir_make(struct bench_dir *d);

/* Remove the directory and everything below it.  0 or -errno. */
int bench_dir_remove(const struct bench_dir *d);

/* Sort @n samples of nanoseconds, ascending, in place. */
void bench_sort_ns(uint64_t *ns, size_t n);

/* The median of @n (> 0) samples, which it sorts in place. */
uint64_t bench_median_ns(uint64_t *ns, size_t n);

/*
 * A private cpuhpd: make @d, a simulated tree of @cpus there (@simsysfs),
 * start @cpuhpd on it.  0 with *@pid set, or -errno with *@what naming the
 * step that failed.
 */
int bench_private_cpuhpd(struct bench_dir *d, const char *cpuhpd, const char *simsysfs,
                         const char *cpus, pid_t *pid, const char **what);

/* Run @argv to completion.  0, or -errno (-EIO if it did not exit 0). */
int bench_run_wait(char *const argv[]);

/*
 * Start @cpuhpd on @sock over the simulated tree @sys_root, stderr to
 * @log_path, and wait for its sd_notify READY=1 on a socket in @dir (a 30 s
 * bound only catches a broken daemon).  0 with *@pid set, or -errno.
 */
int bench_cpuhpd_start(const char *cpuhpd, const char *dir, const char *sock, const char *sys_root,
                       const char *log_path, pid_t *pid);

/*
 * The same, listening to the kernel's uevents if @netlink (on the real
 * /sys, where a raw write is an external change cpuhpd must notice).
 */
int bench_cpuhpd_spawn(const char *cpuhpd, const char *dir, const char *sock, const char *sys_root,
                       const char *log_path, bool netlink, pid_t *pid);

/*
 * The shell hook, `CPUHPCTL --socket SOCK state bench-hook --nocalls
 * --teardown true --startup true`, once it says it is registered; its
 * stdout, read that far, in *@out (its lines after that are not read: a
 * pipe holds a few hundred).  Return: its pid, or -errno.
 */
pid_t bench_start_hook(const char *cpuhpctl, const char *sock, FILE **out);
/* bench_cpuhpd_start() with --verbose: its debug lines in @log_path too. */
int bench_cpuhpd_start_verbose(const char *cpuhpd, const char *dir, const char *sock,
                               const char *sys_root, const char *log_path, pid_t *pid);

/* Stop the cpuhpd of bench_cpuhpd_start() (SIGTERM) and reap it. */
void bench_cpuhpd_stop(pid_t pid);

#endif /* CPUHP_BENCH_DAEMON_H */
