/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What every fuzz target does on a broken property: say which, then abort,
 * which libFuzzer reports as a crash (and keeps the input).
 */
#ifndef CPUHP_FUZZCHECK_H
#define CPUHP_FUZZCHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s: property failed: %s (line %d)\n", __FILE__, #cond,    \
			        __LINE__);                                                         \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif /* CPUHP_FUZZCHECK_H */
