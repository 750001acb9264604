/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-locks: the CPU-hotplug lock designs side by side in one process.
 *
 * For every design (bench-designs.c) it checks that the lock works, then,
 * repetition by repetition (designs interleaved, so slow drifts of a noisy
 * machine hit all of them alike), measures the read path and the writers.
 * It prints medians and, for each figure, the median over repetitions of
 * the ratio to design 3 (cpuhp_rwsem) measured in the same repetition.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench-driver.h"

#ifndef BENCH_SRCDIR
#define BENCH_SRCDIR "."
#endif

void bench_check(int err, const char *what, const char *file, int line)
{
	if (!err)
		return;
	fprintf(stderr, "bench-locks: %s:%d: %s: %s\n", file, line, what, strerror(-err));
	abort();
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: bench-locks [OPTION]...\n"
	        "Compare read-lock and writer costs of the CPU-hotplug lock designs in one run.\n"
	        "\n"
	        "  --quick              a short run for CI smoke tests (figures are rough)\n"
	        "  --reps N             repetitions, medians are printed (default 7, max %d)\n"
	        "  --only LIST          comma-separated designs to run (default: all; %s is\n"
	        "                       always added as the reference)\n"
	        "  --csv FILE           write every raw sample to FILE\n"
	        "  --callgrind[=SCRIPT] count instructions per read pair with valgrind via\n"
	        "                       SCRIPT (default %s/callgrind.sh)\n"
	        "  --plot PNG           draw reader throughput and writer latency into PNG\n"
	        "                       (needs --csv; runs %s/plot.py)\n"
	        "  --check              only check that every design excludes correctly\n"
	        "  --no-check           skip that check\n"
	        "  --callgrind-loop DESIGN N\n"
	        "                       run N read pairs of DESIGN on one thread and exit\n"
	        "                       (what callgrind.sh runs under valgrind)\n"
	        "  --list               print the design names\n"
	        "  --help               this text\n"
	        "\n"
	        "Exit status: 0, 1 if a design failed its consistency check, 2 on bad usage.\n",
	        BENCH_MAX_REPS, BENCH_REFERENCE, BENCH_SRCDIR, BENCH_SRCDIR);
}

static int find_design(const char *name)
{
	for (unsigned d = 0; d < bench_ndesigns; d++)
		if (!strcmp(bench_designs[d]->name, name))
			return (int)d;
	return -1;
}

static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return true;
		p = e ? e + 1 : NULL;
	}
	return false;
}

/* The mode callgrind.sh runs: N pairs on the main thread, nothing else. */
static int callgrind_loop(const char *name, const char *count)
{
	int d = find_design(name);
	char *end;
	unsigned long long n = strtoull(count, &end, 10);
	const struct bench_lock_ops *ops;
	void *lock;

	if (d < 0 || *end || !*count) {
		fprintf(stderr,
		        "bench-locks: --callgrind-loop wants a design (see --list) and "
		        "a count, got '%s' '%s'\n",
		        name, count);
		return 2;
	}
	ops = bench_designs[d];
	BENCH_CHECK(ops->init(&lock));
	if (ops->thread_init)
		ops->thread_init(lock);
	ops->read_loop(lock, n);
	/* Exit without fini: its cost would not depend on N anyway. */
	fflush(stdout);
	_exit(0);
}

/* Run callgrind.sh on ourselves; it prints "design instructions-per-pair". */
static void run_callgrind(const char *script, const char *only, double *instr)
{
	char exe[4096], cmd[8192], name[64];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	double v;
	FILE *p;

	if (len < 0) {
		perror("bench-locks: readlink /proc/self/exe");
		return;
	}
	exe[len] = 0;
	snprintf(cmd, sizeof(cmd), "sh '%s' '%s' %s", script, exe, only ? only : "");
	for (char *c = cmd; *c; c++)
		if (*c == ',')
			*c = ' ';
	fprintf(stderr, "bench-locks: counting instructions: %s\n", cmd);
	p = popen(cmd, "r");
	if (!p) {
		perror("bench-locks: popen");
		return;
	}
	while (fscanf(p, "%63s %lf", name, &v) == 2) {
		int d = find_design(name);

		if (d >= 0)
			instr[d] = v;
	}
	if (pclose(p))
		fprintf(stderr,
		        "bench-locks: %s failed; the instructions column stays empty "
		        "(is valgrind installed?)\n",
		        script);
}

static void pick_cpus(struct config *cfg)
{
	cpu_set_t set;
	int found = 0;

	cfg->cpu_a = cfg->cpu_b = -1;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (found++ == 0)
			cfg->cpu_a = c;
		else
			cfg->cpu_b = c;
	}
}

/* "12.3 (1.85x)" into buf: the median and its ratio to the reference. */
static const char *cell(char *buf, size_t len, unsigned d, unsigned ref, enum metric_id m)
{
	double v = stats_median(d, m), r = stats_ratio(d, ref, m);
	int prec = v >= 100 ? 0 : v >= 10 ? 1 : 2;
	int n;

	if (isnan(v))
		return "–";
	n = snprintf(buf, len, "%.*f", prec, v);
	if (stats_starved(d, m))
		n += snprintf(buf + n, len - (size_t)n, " starved");
	if (!isnan(r) && d != ref)
		snprintf(buf + n, len - (size_t)n, " (%.2f×)", r);
	return buf;
}

static void print_table(const char *title, const enum metric_id *cols, unsigned ncols,
                        const bool *run, unsigned ref, const double *instr, bool writers_only)
{
	char buf[64];

	printf("\n%s\n\n| design |", title);
	if (instr)
		printf(" instr/pair |");
	for (unsigned i = 0; i < ncols; i++)
		printf(" %s, %s |", metrics[cols[i]].head, metrics[cols[i]].unit);
	if (!writers_only)
		printf(" 2T/1T |");
	printf("\n|---|");
	if (instr)
		printf("---:|");
	for (unsigned i = 0; i < ncols; i++)
		printf("---:|");
	if (!writers_only)
		printf("---:|");
	printf("\n");
	for (unsigned d = 0; d < bench_ndesigns; d++) {
		if (!run[d] || (writers_only && !bench_designs[d]->write_lock))
			continue;
		printf("| %s |", bench_designs[d]->label);
		if (instr) {
			if (isnan(instr[d]))
				printf(" – |");
			else
				printf(" %.0f%s |", instr[d],
				       bench_designs[d]->uses_rseq ? "†" : "");
		}
		for (unsigned i = 0; i < ncols; i++)
			printf(" %s |", cell(buf, sizeof(buf), d, ref, cols[i]));
		if (!writers_only)
			printf(" %.2f |", stats_median(d, M_READ_2T) / stats_median(d, M_READ_1T));
		printf("\n");
	}
}

static void target(const char *what, double value, bool met)
{
	printf("- %s: %s (%.2f)\n", what,
	       isnan(value) ? "not measured"
	       : met        ? "MET"
	                    : "MISSED",
	       value);
}

/* The ways a program can call design 3's read path, as the targets name them. */
static const struct {
	const char *design, *how;
} read_variants[] = {
    {"cpuhp", "libcpuhp.so"},
    {"cpuhp-static", "static"},
    {"cpuhp-inline", "inline header"},
    {"cpuhp-handle", "reader handle"},
};

enum read_target { T_RWLOCK_1T, T_RWLOCK_2T, T_FLOOR4, T_FLOOR2, T_FLAT };

/*
 * One line per variant that ran, under the target's title.  NaN when the
 * comparison design was not run.
 */
static void read_target(enum read_target t, const char *title, int rw, int floor)
{
	printf("- %s:\n", title);
	for (unsigned i = 0; i < sizeof(read_variants) / sizeof(read_variants[0]); i++) {
		int d = find_design(read_variants[i].design);
		double v = NAN;
		bool met = false;

		if (d < 0 || isnan(stats_median((unsigned)d, M_READ_1T)))
			continue;
		switch (t) {
		case T_RWLOCK_1T:
			v = rw < 0 ? NAN : stats_ratio((unsigned)d, (unsigned)rw, M_READ_1T);
			met = v < 1;
			break;
		case T_RWLOCK_2T:
			v = rw < 0 ? NAN : stats_ratio((unsigned)rw, (unsigned)d, M_READ_2T);
			met = v >= 3;
			break;
		case T_FLOOR4:
		case T_FLOOR2:
			v = floor < 0 ? NAN : stats_ratio((unsigned)d, (unsigned)floor, M_READ_1T);
			met = v <= (t == T_FLOOR4 ? 4 : 2);
			break;
		case T_FLAT:
			v = stats_median((unsigned)d, M_READ_2T) /
			    stats_median((unsigned)d, M_READ_1T);
			met = v <= 1.10;
			break;
		}
		printf("  ");
		target(read_variants[i].how, v, met);
	}
}

static void print_targets(unsigned ref)
{
	int floor = find_design("floor"), rw = find_design("rwlock"),
	    p13 = find_design("percpu2013");
	double v;

	printf("\nTargets (ratios from the same repetitions; the read path for each way to "
	       "call design 3):\n");
	read_target(T_RWLOCK_1T, "design 3, 1 thread, faster than pthread_rwlock (d3/rwlock < 1)",
	            rw, floor);
	read_target(T_RWLOCK_2T,
	            "design 3, 2 threads, per-thread cost >= 3x lower than pthread_rwlock "
	            "(rwlock/d3 >= 3)",
	            rw, floor);
	read_target(T_FLOOR4, "design 3, 1 thread, within 4x of the floor (d3/floor <= 4)", rw,
	            floor);
	read_target(T_FLOOR2, "design 3, 1 thread, within 2x of the floor (d3/floor <= 2)", rw,
	            floor);
	read_target(T_FLAT, "design 3, 2 threads within 10% of its 1-thread figure (2T/1T <= 1.10)",
	            rw, floor);
	if (p13 >= 0) {
		v = stats_ratio((unsigned)p13, ref, M_BURST10);
		target("10-writer burst from idle, no reader running, design 3 >= 5x faster than "
		       "design 2 (d2/d3 >= 5)",
		       v, v >= 5);
		v = stats_ratio((unsigned)p13, ref, M_BURST10_1R);
		target("10-writer burst, 1 busy reader on the other CPU (d2/d3 >= 5)", v, v >= 5);
		v = stats_ratio((unsigned)p13, ref, M_BURST10_R);
		target("10-writer burst, 2 busy readers (CPUs oversubscribed) (d2/d3 >= 5)", v,
		       v >= 5);
	}
}

int main(int argc, char **argv)
{
	enum {
		O_REPS = 256,
		O_ONLY,
		O_CSV,
		O_CALLGRIND,
		O_PLOT,
		O_CHECK,
		O_NOCHECK,
		O_LOOP,
		O_LIST,
		O_QUICK,
		O_READONLY
	};
	static const struct option longopts[] = {
	    {"quick", no_argument, NULL, O_QUICK},
	    {"reps", required_argument, NULL, O_REPS},
	    {"only", required_argument, NULL, O_ONLY},
	    {"csv", required_argument, NULL, O_CSV},
	    {"callgrind", optional_argument, NULL, O_CALLGRIND},
	    {"plot", required_argument, NULL, O_PLOT},
	    {"read-only", no_argument, NULL, O_READONLY},
	    {"check", no_argument, NULL, O_CHECK},
	    {"no-check", no_argument, NULL, O_NOCHECK},
	    {"callgrind-loop", required_argument, NULL, O_LOOP},
	    {"list", no_argument, NULL, O_LIST},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct config cfg = {
	    .reps = 7,
	    .read_sample_s = 0.04,
	    .idle_samples = 3,
	    .idle_gap_ms = 30,
	    .tput_window_ms = {100, 200, 200, 500},
	    .watchdog_s = 10,
	};
	const char *only = NULL, *csv = NULL, *plot = NULL, *callgrind = NULL, *loop = NULL;
	bool check_only = false, check = true, read_only = false;
	double instr[64];
	bool run[64];
	uint64_t n[64];
	int ref, opt, failed = 0;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_QUICK:
			cfg.quick = true;
			break;
		case O_REPS:
			cfg.reps = (unsigned)atoi(optarg);
			if (cfg.reps < 1 || cfg.reps > BENCH_MAX_REPS) {
				fprintf(stderr, "bench-locks: --reps wants 1..%d\n",
				        BENCH_MAX_REPS);
				return 2;
			}
			break;
		case O_ONLY:
			only = optarg;
			break;
		case O_CSV:
			csv = optarg;
			break;
		case O_CALLGRIND:
			callgrind = optarg ? optarg : BENCH_SRCDIR "/callgrind.sh";
			break;
		case O_PLOT:
			plot = optarg;
			break;
		case O_READONLY:
			read_only = true;
			break;
		case O_CHECK:
			check_only = true;
			break;
		case O_NOCHECK:
			check = false;
			break;
		case O_LOOP:
			loop = optarg;
			break;
		case O_LIST:
			for (unsigned d = 0; d < bench_ndesigns; d++)
				printf("%-14s %s\n", bench_designs[d]->name,
				       bench_designs[d]->label);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (loop) {
		if (optind >= argc) {
			fprintf(stderr, "bench-locks: --callgrind-loop DESIGN N: N is missing\n");
			return 2;
		}
		return callgrind_loop(loop, argv[optind]);
	}
	if (optind < argc) {
		fprintf(stderr, "bench-locks: unexpected argument '%s' (see --help)\n",
		        argv[optind]);
		return 2;
	}
	if (plot && !csv) {
		fprintf(stderr, "bench-locks: --plot draws from the CSV: add --csv FILE\n");
		return 2;
	}
	if (cfg.quick) {
		if (cfg.reps == 7)
			cfg.reps = 1;
		cfg.read_sample_s = 0.004;
		cfg.idle_samples = 1;
		cfg.idle_gap_ms = 15;
		for (int i = 0; i < 4; i++)
			cfg.tput_window_ms[i] = 15;
		cfg.watchdog_s = 5;
	}
	pick_cpus(&cfg);
	setvbuf(stdout, NULL, _IOLBF, 0);

	ref = find_design(BENCH_REFERENCE);
	for (unsigned d = 0; d < bench_ndesigns; d++) {
		run[d] = !only || in_list(only, bench_designs[d]->name) || (int)d == ref;
		instr[d] = NAN;
	}
	if (only) {
		for (const char *p = only; p && *p;) {
			char name[64];
			const char *e = strchr(p, ',');
			size_t len = e ? (size_t)(e - p) : strlen(p);

			snprintf(name, sizeof(name), "%.*s", (int)len, p);
			if (find_design(name) < 0) {
				fprintf(stderr, "bench-locks: no design '%s' (see --list)\n", name);
				return 2;
			}
			p = e ? e + 1 : NULL;
		}
	}

	if (check || check_only) {
		for (unsigned d = 0; d < bench_ndesigns; d++)
			if (run[d] && check_design(bench_designs[d], cfg.quick || check_only))
				failed = 1;
		if (failed || check_only)
			return failed;
	}
	if (callgrind)
		run_callgrind(callgrind, only, instr);

	stats_init(bench_ndesigns, cfg.reps);
	printf("\nbench-locks: %u repetitions%s, CPUs %d and %d\n", cfg.reps,
	       cfg.quick ? " (quick: rough figures)" : "", cfg.cpu_a, cfg.cpu_b);
	for (unsigned rep = 0; rep < cfg.reps; rep++) {
		for (unsigned d = 0; d < bench_ndesigns; d++) {
			const struct bench_lock_ops *ops = bench_designs[d];
			void *lock;

			if (!run[d])
				continue;
			fprintf(stderr, "\rrepetition %u/%u: %-14s", rep + 1, cfg.reps, ops->name);
			BENCH_CHECK(ops->init(&lock));
			if (rep == 0)
				n[d] = calibrate_read(ops, lock, &cfg);
			measure_read_path(d, ops, lock, n[d], rep, &cfg);
			if (ops->write_lock && !read_only)
				measure_writers(d, ops, lock, rep, &cfg);
			ops->fini(lock);
		}
	}
	fprintf(stderr, "\r%40s\r", "");

	{
		static const enum metric_id read_cols[] = {M_READ_1T, M_READ_2T, M_READ_2T1C};
		static const enum metric_id write_cols[] = {M_WRITE_IDLE, M_BURST10, M_WRITE_1R,
		                                            M_BURST10_1R, M_BURST10_R};
		static const enum metric_id tput_cols[] = {M_TPUT_NONE, M_TPUT_100MS, M_TPUT_10MS,
		                                           M_TPUT_1MS, M_TPUT_BURST};

		print_table("Read lock+unlock (median; in parentheses the median ratio to design 3 "
		            "in the same repetition, >1 = slower)",
		            read_cols, sizeof(read_cols) / sizeof(read_cols[0]), run, (unsigned)ref,
		            callgrind ? instr : NULL, false);
		print_table("Writers: write_lock+write_unlock latency (median; ratio to design 3)",
		            write_cols, sizeof(write_cols) / sizeof(write_cols[0]), run,
		            (unsigned)ref, NULL, true);
		print_table("Reader throughput, two reader threads, total (median; ratio to "
		            "design 3, <1 = fewer reads)",
		            tput_cols, sizeof(tput_cols) / sizeof(tput_cols[0]), run, (unsigned)ref,
		            NULL, true);
		if (callgrind)
			printf(
			    "\ninstr/pair: callgrind, (Ir(N2) - Ir(N1)) / (N2 - N1).  † valgrind "
			    "cannot register rseq, so the fallback path was counted, not the "
			    "restartable sequence.\n");
		for (unsigned d = 0; d < bench_ndesigns; d++)
			if (run[d] && bench_designs[d]->note)
				printf("\n%s: %s", bench_designs[d]->name, bench_designs[d]->note);
		printf("\n");
		print_targets((unsigned)ref);
	}
	if (csv) {
		int err = stats_write_csv(csv, instr);

		if (err) {
			fprintf(stderr, "bench-locks: writing %s: %s\n", csv, strerror(-err));
			return 1;
		}
		printf("\nraw samples: %s\n", csv);
	}
	if (plot) {
		char cmd[8192];

		snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s/plot.py' '%s' '%s'", BENCH_SRCDIR,
		         csv, plot);
		if (system(cmd))
			fprintf(stderr, "bench-locks: plotting failed: %s\n", cmd);
		else
			printf("plot: %s\n", plot);
	}
	return 0;
}
