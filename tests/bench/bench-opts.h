/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Command-line options that several lock benchmarks share (bench-mixed,
 * bench-peers): a repetition count, a sample length, and a list of named
 * scenarios.  Each says what is wrong on stderr, prefixed with the
 * program's name, and returns -1; 0 when the value is taken.
 */
#ifndef BENCH_OPTS_H
#define BENCH_OPTS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#endif /* BENCH_OPTS_H */
