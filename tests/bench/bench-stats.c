/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Raw samples of every (design, metric, repetition), their medians, the
 * per-repetition ratios to the reference design, and the CSV of it all.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench-driver.h"

const struct metric metrics[M_NR] = {
    [M_READ_1T] = {"read_1t", "1 thread", "ns/pair", false},
    [M_READ_2T] = {"read_2t", "2 threads, per thread", "ns/pair", false},
    [M_READ_2T1C] = {"read_2t_1core", "2 threads on 1 core", "ns/pair", false},
    [M_WRITE_IDLE] = {"writer_idle", "1 writer from idle", "us", false},
    [M_BURST10] = {"burst10", "burst of 10 writers", "us", false},
    [M_WRITE_1R] = {"writer_1reader", "1 writer, 1 busy reader", "us", false},
    [M_BURST10_1R] = {"burst10_1reader", "burst of 10, 1 busy reader", "us", false},
    [M_BURST10_R] = {"burst10_readers", "burst of 10, 2 readers running", "us", false},
    [M_TPUT_BURST] = {"tput_during_burst", "during the burst", "Mpairs/s", true},
    [M_TPUT_NONE] = {"tput_no_writer", "no writer", "Mpairs/s", true},
    [M_TPUT_1MS] = {"tput_writer_1ms", "writer every 1 ms", "Mpairs/s", true},
    [M_TPUT_10MS] = {"tput_writer_10ms", "writer every 10 ms", "Mpairs/s", true},
    [M_TPUT_100MS] = {"tput_writer_100ms", "writer every 100 ms", "Mpairs/s", true},
};

struct cell {
	double *v;
	unsigned *rep;
	unsigned n, cap;
	bool starved;
};

static struct cell *cells;
static unsigned nd, nreps;

static struct cell *cell(unsigned d, enum metric_id m)
{
	return &cells[d * M_NR + m];
}

void stats_init(unsigned ndesigns, unsigned reps)
{
	nd = ndesigns;
	nreps = reps;
	cells = calloc((size_t)nd * M_NR, sizeof(*cells));
	if (!cells)
		BENCH_CHECK(-ENOMEM);
}

void stats_add(unsigned d, enum metric_id m, unsigned rep, double v)
{
	struct cell *c = cell(d, m);

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		c->rep = realloc(c->rep, c->cap * sizeof(*c->rep));
		if (!c->v || !c->rep)
			BENCH_CHECK(-ENOMEM);
	}
	c->v[c->n] = v;
	c->rep[c->n] = rep;
	c->n++;
}

void stats_mark_starved(unsigned d, enum metric_id m)
{
	cell(d, m)->starved = true;
}

bool stats_starved(unsigned d, enum metric_id m)
{
	return cell(d, m)->starved;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double median_of(double *v, unsigned n)
{
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of one repetition's samples; NaN if it has none. */
static double rep_median(unsigned d, enum metric_id m, unsigned rep)
{
	struct cell *c = cell(d, m);
	double buf[64];
	unsigned k = 0;

	for (unsigned i = 0; i < c->n && k < 64; i++)
		if (c->rep[i] == rep)
			buf[k++] = c->v[i];
	return median_of(buf, k);
}

double stats_median(unsigned d, enum metric_id m)
{
	double buf[BENCH_MAX_REPS];
	unsigned k = 0;

	for (unsigned r = 0; r < nreps; r++) {
		double x = rep_median(d, m, r);

		if (!isnan(x))
			buf[k++] = x;
	}
	return median_of(buf, k);
}

double stats_ratio(unsigned d, unsigned ref, enum metric_id m)
{
	double buf[BENCH_MAX_REPS];
	unsigned k = 0;

	for (unsigned r = 0; r < nreps; r++) {
		double x = rep_median(d, m, r), y = rep_median(ref, m, r);

		if (!isnan(x) && !isnan(y) && y > 0)
			buf[k++] = x / y;
	}
	return median_of(buf, k);
}

int stats_write_csv(const char *path, const double *instr)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "design,metric,unit,rep,sample,value\n");
	for (unsigned d = 0; d < nd; d++) {
		const char *name = bench_designs[d]->name;

		if (instr && !isnan(instr[d]))
			fprintf(f, "%s,instructions,Ir/pair,0,0,%.2f\n", name, instr[d]);
		for (unsigned m = 0; m < M_NR; m++) {
			struct cell *c = cell(d, m);
			unsigned per_rep[BENCH_MAX_REPS] = {0};

			for (unsigned i = 0; i < c->n; i++) {
				unsigned r = c->rep[i];

				fprintf(f, "%s,%s,%s,%u,%u,%.6g\n", name, metrics[m].key,
				        metrics[m].unit, r, r < BENCH_MAX_REPS ? per_rep[r]++ : 0,
				        c->v[i]);
			}
		}
	}
	if (fclose(f))
		return -errno;
	return 0;
}
