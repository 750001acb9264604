/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the parts of the bench-locks driver share: the measured metrics,
 * the run configuration, the result store and the experiments.
 */
#ifndef BENCH_DRIVER_H
#define BENCH_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench.h"

enum metric_id {
	M_READ_1T,    /* ns per read pair, one thread */
	M_READ_2T,    /* ns per read pair per thread, two threads on two CPUs */
	M_READ_2T1C,  /* ns of wall time per pair, two threads on one CPU */
	M_WRITE_IDLE, /* µs, write_lock+write_unlock from idle */
	M_BURST10,    /* µs, 10 back-to-back writers from idle, no readers running */
	M_WRITE_1R,   /* µs, one writer while one reader loops on the other CPU */
	M_BURST10_1R, /* µs, 10 writers while one reader loops on the other CPU */
	M_BURST10_R,  /* µs, the same with two readers running */
	M_TPUT_BURST, /* Mpairs/s of the two readers during that burst */
	M_TPUT_NONE,  /* Mpairs/s of two readers, no writer */
	M_TPUT_1MS,   /* ... with a writer every 1 ms */
	M_TPUT_10MS,
	M_TPUT_100MS,
	M_NR
};

struct metric {
	const char *key;  /* CSV */
	const char *head; /* table column */
	const char *unit;
	bool higher_is_better;
};

extern const struct metric metrics[M_NR];

#define BENCH_MAX_REPS 64

struct config {
	unsigned reps;
	bool quick;
	double read_sample_s;       /* target duration of one read-path sample */
	unsigned idle_samples;      /* samples of each writer figure per repetition */
	unsigned idle_gap_ms;       /* quiet time so that rcu_sync is idle again */
	unsigned tput_window_ms[4]; /* none, 1 ms, 10 ms, 100 ms */
	double watchdog_s;          /* a writer experiment longer than this stops its readers */
	int cpu_a, cpu_b;           /* two CPUs this process may run on (cpu_b < 0: only one) */
};

/* --- result store (bench-stats.c) --- */
void stats_init(unsigned ndesigns, unsigned reps);
void stats_add(unsigned design, enum metric_id m, unsigned rep, double v);
/* Median over repetitions of the per-repetition median; NaN if none. */
double stats_median(unsigned design, enum metric_id m);
/* Median over repetitions of (design / ref) per repetition; NaN if none. */
double stats_ratio(unsigned design, unsigned ref, enum metric_id m);
void stats_mark_starved(unsigned design, enum metric_id m);
bool stats_starved(unsigned design, enum metric_id m);
int stats_write_csv(const char *path, const double *instr_per_pair);
double median_of(double *v, unsigned n); /* sorts v */

/* --- experiments (bench-measure.c) --- */
double now_s(void);
void sleep_ms(unsigned ms);
void pin_self(int cpu);
uint64_t calibrate_read(const struct bench_lock_ops *ops, void *lock, const struct config *cfg);
void measure_read_path(unsigned d, const struct bench_lock_ops *ops, void *lock, uint64_t n,
                       unsigned rep, const struct config *cfg);
void measure_writers(unsigned d, const struct bench_lock_ops *ops, void *lock, unsigned rep,
                     const struct config *cfg);

/* --- consistency check (bench-check.c) --- */
/* Return 0 if the lock kept readers and writers apart, -1 otherwise (printed). */
int check_design(const struct bench_lock_ops *ops, bool quick);

#endif /* BENCH_DRIVER_H */
