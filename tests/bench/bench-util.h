/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What several lock benchmarks share (bench-mixed, bench-peers): their
 * options (a repetition count, a sample length, a list of named
 * scenarios: each says what is wrong on stderr, prefixed with the
 * program's name, and returns -1; 0 when the value is taken), and how
 * long a thread waited for a CPU.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * The calling thread's time spent runnable but waiting for a CPU, ns, from
 * /proc (schedstat's second field); NAN where the kernel has none.
 */
static inline double bench_runqueue_wait_ns(void)
{
	char path[64];
	unsigned long long run, wait;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/schedstat", (long)syscall(SYS_gettid));
	f = fopen(path, "r");
	if (!f)
		return NAN;
	n = fscanf(f, "%llu %llu", &run, &wait);
	fclose(f);
	return n == 2 ? (double)wait : NAN;
}

/* --NAME N, N in [lo, hi]. */
static inline int bench_opt_count(const char *prog, const char *name, const char *arg, unsigned lo,
                                  unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*arg < '0' || *arg > '9' || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: --%s wants a whole number from %u to %u, not '%s'\n", prog,
		        name, lo, hi, arg);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

/* --seconds S, S in (0, 60]. */
static inline int bench_opt_seconds(const char *prog, const char *arg, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v > 0 && v <= 60)) {
		fprintf(stderr, "%s: --seconds wants a number in (0, 60], not '%s'\n", prog, arg);
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * A comma-separated list of names out of a table of @n entries whose names
 * are @stride bytes apart, the first at @first (&table[0].name): @on[i]
 * says whether entry i's name is in it.  An unknown name is an error that
 * lists the known ones.
 */
static inline const char *bench_opt_name_at(const char *const *first, size_t stride, unsigned i)
{
	return *(const char *const *)(const void *)((const char *)first + i * stride);
}

static inline int bench_opt_names(const char *prog, const char *what, const char *list,
                                  const char *const *first, size_t stride, unsigned n, bool *on)
{
	const char *p = list;

	for (unsigned i = 0; i < n; i++)
		on[i] = false;
	for (;;) {
		size_t len = strcspn(p, ",");
		unsigned i;

		for (i = 0; i < n; i++) {
			const char *name = bench_opt_name_at(first, stride, i);

			if (strlen(name) == len && !strncmp(p, name, len))
				break;
		}
		if (i == n) {
			fprintf(stderr, "%s: unknown %s '%.*s' (known:", prog, what, (int)len, p);
			for (i = 0; i < n; i++)
				fprintf(stderr, "%s %s", i ? "," : "",
				        bench_opt_name_at(first, stride, i));
			fprintf(stderr, ")\n");
			return -1;
		}
		on[i] = true;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

#endif /* BENCH_UTIL_H */
