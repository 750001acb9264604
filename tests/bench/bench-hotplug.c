/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-hotplug: one CPU's offline and online through cpuhpd against a raw
 * write into its cpuN/online, in one run.
 *
 * Interleaved, round by round (the order rotates each round, so that no
 * kind always follows the same one), it times:
 *
 *   raw     open + write "0\n"/"1\n" + close of cpuN/online, as `echo` does
 *   client  cpuhp_client_set_online() on a connection made beforehand: what
 *           cpuhpd adds, no process start
 *   fresh   the same on a new connection each time (connect, version
 *           handshake, request, close): what a new process adds but exec
 *   ctl     `cpuhpctl offline N` / `cpuhpctl online N`, process start included
 *   start   the client's own start-up, `cpuhpctl status` (exec, dynamic
 *           linking, connect, the version handshake, one round trip, exit),
 *           in each of the two states the hotplug commands start in: with
 *           the CPU online (the baseline of `offline`) and with it offline
 *           (that of `online`: one CPU fewer to run on, with the machine's
 *           other load, makes a process start slower)
 *   version `cpuhpctl --version` in both states: exec and exit alone
 *
 * and prints medians and the ratios the issue asks for: client / raw, and
 * ctl against 1.2 x raw + the start-up.
 *
 * On the real /sys only when asked (--real or CPUHP_TEST_REAL_HOTPLUG=1,
 * as the real-hotplug tests), as root, with a hotpluggable CPU that is
 * online (--cpu, default 1); the CPU is brought back online at exit, on
 * SIGINT/SIGTERM/SIGHUP and on every failure path.  Otherwise it says what
 * it skipped and runs on a simulated tree, where the "raw write" is a
 * plain file write: the ratios then measure cpuhpd alone.
 *
 * Usage: bench-hotplug [--quick] [--real] [--cpu N] [--rounds N] [--keep]
 *                      [--sim-cpus LIST]
 *                      CPUHPD CPUHPD-SIMSYSFS CPUHPCTL
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/client.h>

#include "bench-daemon.h"

extern char **environ;

enum kind { RAW, CLIENT, FRESH, CTL, START, VERSION, NKINDS };

static struct bench_dir bd;
static char online_path[96];
static pid_t daemon_pid;
static unsigned rounds = 30, cpu = 1;
static const char *sim_cpus = "0-1";
static bool real, keep;
static volatile sig_atomic_t restoring;

/* Write @val into the CPU's online file as `echo` would.  0 or -errno. */
static int raw_write(const char *val)
{
	int fd = open(online_path, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, 2) != 2)
		err = -errno;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

/* Async-signal-safe: the CPU goes back online whatever ends the run. */
static void restore_cpu(void)
{
	if (real && !restoring) {
		restoring = 1;
		raw_write("1\n");
	}
}

static void on_signal(int sig)
{
	restore_cpu();
	if (daemon_pid > 0)
		kill(daemon_pid, SIGTERM);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-hotplug: %s: %s\n", what, strerror(err < 0 ? -err : err));
	restore_cpu();
	if (daemon_pid > 0)
		bench_cpuhpd_stop(daemon_pid);
	exit(1);
}

static double median_ms(uint64_t *ns, unsigned n)
{
	return (double)bench_median_ns(ns, n) / 1e6;
}

/* Run cpuhpctl with @args (NULL-ended, at most 4), stdout to /dev/null.  Return: its time. */
static uint64_t ctl(const char *cpuhpctl, const char *a1, const char *a2)
{
	char *argv[] = {(char *)cpuhpctl, "--socket", bd.sock, (char *)a1, (char *)a2, NULL};
	posix_spawn_file_actions_t fa;
	uint64_t t0 = bench_now_ns();
	int err, st;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	err = posix_spawn(&pid, cpuhpctl, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		die(cpuhpctl, err);
	if (waitpid(pid, &st, 0) < 0)
		die("waitpid", errno);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die(a1, EIO);
	return bench_now_ns() - t0;
}

/* Connect, ask, close: cpuhpctl's work without its process start. */
static int set_online_fresh(const char *cpus, bool online)
{
	struct cpuhp_client *c;
	int err = cpuhp_client_connect(bd.sock, &c);

	if (err)
		return err;
	err = cpuhp_client_set_online(c, cpus, online, 10000);
	cpuhp_client_close(c);
	return err;
}

/*
 * off/on: the offline and online of each kind; for START and VERSION, the
 * command run with the CPU online and with it offline.
 */
struct samples {
	uint64_t *off[NKINDS], *on[NKINDS];
};

/* cpuhpctl @a1 with the CPU online, then with it offline (the raw writes not timed). */
static void both_states(const char *cpuhpctl, const char *a1, uint64_t *online_ns,
                        uint64_t *offline_ns)
{
	int err;

	*online_ns = ctl(cpuhpctl, a1, NULL);
	err = raw_write("0\n");
	if (err)
		die(online_path, err);
	*offline_ns = ctl(cpuhpctl, a1, NULL);
	err = raw_write("1\n");
	if (err)
		die(online_path, err);
}

static void one(enum kind k, const char *cpuhpctl, struct cpuhp_client *c, struct samples *s,
                unsigned i)
{
	char cpus[16];
	uint64_t t0, t1, t2;
	int err = 0;

	snprintf(cpus, sizeof(cpus), "%u", cpu);
	switch (k) {
	case RAW:
		t0 = bench_now_ns();
		err = raw_write("0\n");
		t1 = bench_now_ns();
		if (err)
			die(online_path, err);
		err = raw_write("1\n");
		t2 = bench_now_ns();
		if (err)
			die(online_path, err);
		s->off[k][i] = t1 - t0;
		s->on[k][i] = t2 - t1;
		break;
	case CLIENT:
		t0 = bench_now_ns();
		err = cpuhp_client_set_online(c, cpus, false, 10000);
		t1 = bench_now_ns();
		if (err)
			die(cpuhp_client_last_message(c), err);
		err = cpuhp_client_set_online(c, cpus, true, 10000);
		t2 = bench_now_ns();
		if (err)
			die(cpuhp_client_last_message(c), err);
		s->off[k][i] = t1 - t0;
		s->on[k][i] = t2 - t1;
		break;
	case FRESH:
		t0 = bench_now_ns();
		err = set_online_fresh(cpus, false);
		t1 = bench_now_ns();
		if (err)
			die("fresh connection: offline", err);
		err = set_online_fresh(cpus, true);
		t2 = bench_now_ns();
		if (err)
			die("fresh connection: online", err);
		s->off[k][i] = t1 - t0;
		s->on[k][i] = t2 - t1;
		break;
	case CTL:
		s->off[k][i] = ctl(cpuhpctl, "offline", cpus);
		s->on[k][i] = ctl(cpuhpctl, "online", cpus);
		break;
	case START:
		both_states(cpuhpctl, "status", &s->off[k][i], &s->on[k][i]);
		break;
	default:
		both_states(cpuhpctl, "--version", &s->off[k][i], &s->on[k][i]);
		break;
	}
}

/*
 * Whether the real /sys may be used; if not, *@why says what was skipped.
 * The CPU must be online to start with: the run ends with it online.
 */
static bool real_ok(bool asked, const char **why)
{
	char buf[4] = "";
	int fd;

	if (!asked) {
		*why = "not asked (--real or CPUHP_TEST_REAL_HOTPLUG=1)";
		return false;
	}
	if (geteuid() != 0) {
		*why = "not root";
		return false;
	}
	snprintf(online_path, sizeof(online_path), "/sys/devices/system/cpu/cpu%u/online", cpu);
	fd = open(online_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = "the CPU has no online file (not hot pluggable)";
		return false;
	}
	if (read(fd, buf, sizeof(buf) - 1) < 1 || buf[0] != '1') {
		close(fd);
		*why = "the CPU is offline now";
		return false;
	}
	close(fd);
	return true;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: bench-hotplug [--quick] [--real] [--cpu N] [--rounds N] [--keep]\n"
	           "                     [--sim-cpus LIST]\n"
	           "                     CPUHPD CPUHPD-SIMSYSFS CPUHPCTL\n"
	           "Time one CPU's offline and online through cpuhpd (libcpuhp-client, and\n"
	           "cpuhpctl with its process start) against a raw write into cpuN/online,\n"
	           "interleaved in one run, beside cpuhpctl's own start-up.  --real (or\n"
	           "CPUHP_TEST_REAL_HOTPLUG=1): on this machine's /sys, as root; else on a\n"
	           "simulated tree (of CPUs --sim-cpus, default 0-1; CPU 1 is the one\n"
	           "hotplugged).  --keep: keep the temporary directory (cpuhpd's log).\n");
}

int main(int argc, char **argv)
{
	static const char *names[NKINDS] = {"raw write", "cpuhpd (client)",
	                                    "cpuhpd (new connection)", "cpuhpctl", ""};
	const char *env = getenv("CPUHP_TEST_REAL_HOTPLUG"), *why = NULL, *cpuhpctl;
	char *sim_argv[] = {NULL, "--cpus", "0-1", bd.sys_root, NULL};
	bool asked = env && !strcmp(env, "1");
	struct samples s;
	double off[NKINDS], on[NKINDS];
	struct cpuhp_client *c;
	int argi = 1, err;

	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (!strcmp(argv[argi], "--help") || !strcmp(argv[argi], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[argi], "--quick")) {
			rounds = 3;
		} else if (!strcmp(argv[argi], "--sim-cpus") && argi + 1 < argc) {
			sim_cpus = argv[++argi];
		} else if (!strcmp(argv[argi], "--keep")) {
			keep = true;
		} else if (!strcmp(argv[argi], "--real")) {
			asked = true;
		} else if (!strcmp(argv[argi], "--cpu") && argi + 1 < argc) {
			cpu = (unsigned)strtoul(argv[++argi], NULL, 10);
		} else if (!strcmp(argv[argi], "--rounds") && argi + 1 < argc) {
			rounds = (unsigned)strtoul(argv[++argi], NULL, 10);
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (argc - argi != 3 || !rounds || !cpu) {
		usage(stderr);
		return 2;
	}
	cpuhpctl = argv[argi + 2];
	signal(SIGPIPE, SIG_IGN);
	err = bench_dir_make(&bd);
	if (err)
		die("mkdtemp", err);
	real = real_ok(asked, &why);
	if (real) {
		snprintf(bd.sys_root, sizeof(bd.sys_root), "/sys");
		atexit(restore_cpu);
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
		signal(SIGHUP, on_signal);
	} else {
		printf("bench-hotplug: real /sys skipped: %s; on a simulated tree instead (its "
		       "\"raw write\" is a file write: the ratios measure cpuhpd alone)\n",
		       why);
		cpu = 1;
		snprintf(online_path, sizeof(online_path), "%s/devices/system/cpu/cpu1/online",
		         bd.sys_root);
		sim_argv[0] = argv[argi + 1];
		sim_argv[2] = (char *)sim_cpus;
		err = bench_run_wait(sim_argv);
		if (err)
			die(sim_argv[0], err);
	}
	err =
	    bench_cpuhpd_spawn(argv[argi], bd.dir, bd.sock, bd.sys_root, bd.log, real, &daemon_pid);
	if (err)
		die("starting cpuhpd", err);
	err = cpuhp_client_connect(bd.sock, &c);
	if (err)
		die("connect", err);

	for (unsigned k = 0; k < NKINDS; k++) {
		s.off[k] = calloc(rounds, sizeof(uint64_t));
		s.on[k] = calloc(rounds, sizeof(uint64_t));
		if (!s.off[k] || !s.on[k])
			die("calloc", ENOMEM);
	}
	/* One warm-up round, not counted: first exec, first hotplug, page cache. */
	for (unsigned k = 0; k < NKINDS; k++)
		one((enum kind)k, cpuhpctl, c, &s, 0);
	for (unsigned i = 0; i < rounds; i++)
		for (unsigned j = 0; j < NKINDS; j++)
			one((enum kind)((i + j) % NKINDS), cpuhpctl, c, &s, i);
	cpuhp_client_close(c);
	bench_cpuhpd_stop(daemon_pid);
	daemon_pid = 0;

	for (unsigned k = 0; k < NKINDS; k++) {
		off[k] = median_ms(s.off[k], rounds);
		on[k] = median_ms(s.on[k], rounds);
	}
	printf("CPU %u offline and online, %s, medians of %u interleaved rounds (ms)\n", cpu,
	       real ? "real /sys" : "simulated tree", rounds);
	printf("%-34s %10s %10s\n", "", "offline", "online");
	for (unsigned k = 0; k < START; k++)
		printf("%-34s %10.3f %10.3f\n", names[k], off[k], on[k]);
	printf("%-34s %10.3f %10.3f\n", "start-up: cpuhpctl status", off[START], on[START]);
	printf("%-34s %10.3f %10.3f\n", "exec alone: cpuhpctl --version", off[VERSION],
	       on[VERSION]);
	printf("(start-up and exec: run with the CPU online | offline, the states in which\n"
	       " `cpuhpctl offline` | `online` start)\n");
	printf("ratios (target: at most 1.2)\n");
	printf("%-34s %10.2f %10.2f\n", "client / raw", off[CLIENT] / off[RAW],
	       on[CLIENT] / on[RAW]);
	printf("%-34s %10.2f %10.2f\n", "new connection / raw", off[FRESH] / off[RAW],
	       on[FRESH] / on[RAW]);
	printf("%-34s %10.2f %10.2f\n", "(cpuhpctl - start-up) / raw",
	       (off[CTL] - off[START]) / off[RAW], (on[CTL] - on[START]) / on[RAW]);
	printf("%-34s %10.2f %10.2f\n", "cpuhpctl / (raw + start-up)",
	       off[CTL] / (off[RAW] + off[START]), on[CTL] / (on[RAW] + on[START]));
	{
		FILE *f = fopen("/proc/loadavg", "r");
		char buf[64] = "?";

		if (f && fgets(buf, sizeof(buf), f))
			printf("load average: %s", buf);
		if (f)
			fclose(f);
	}
	for (unsigned k = 0; k < NKINDS; k++) {
		free(s.off[k]);
		free(s.on[k]);
	}
	if (keep) {
		printf("cpuhpd's log: %s\n", bd.log);
	} else {
		if (bench_dir_remove(&bd))
			fprintf(stderr, "bench-hotplug: could not remove %s\n", bd.dir);
	}
	return 0;
}
