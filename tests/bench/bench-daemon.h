/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Starting helper programs and a private cpuhpd for the daemon benchmarks,
 * and their medians.
 */
#ifndef CPUHP_BENCH_DAEMON_H
#define CPUHP_BENCH_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Sort @n samples of nanoseconds, ascending, in place. */
void bench_sort_ns(uint64_t *ns, size_t n);

/* The median of @n (> 0) samples, which it sorts in place. */
uint64_t bench_median_ns(uint64_t *ns, size_t n);

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

/* Stop the cpuhpd of bench_cpuhpd_start() (SIGTERM) and reap it. */
void bench_cpuhpd_stop(pid_t pid);

#endif /* CPUHP_BENCH_DAEMON_H */
