/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: cpuhp_cpuset_parse() against a reference parser written
 * the slow, obvious way, and cpuhp_cpuset_format() by round trip:
 * parse(format(parse(x))) == parse(x), format is a fixed point, and the
 * exact-size and one-short buffers behave as documented.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cpuhp/cpuset.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzzcheck.h"

static bool ref_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/*
 * A decimal number spanning exactly [s, e); *v gets its value, or
 * CPUHP_CPUSET_MAX when it has more than four significant digits.
 */
static bool ref_number(const char *s, const char *e, unsigned *v)
{
	if (s == e)
		return false;
	for (const char *p = s; p < e; p++)
		if (*p < '0' || *p > '9')
			return false;
	while (e - s > 1 && *s == '0')
		s++;
	if (e - s > 4) {
		*v = CPUHP_CPUSET_MAX;
		return true;
	}
	*v = 0;
	for (; s < e; s++)
		*v = *v * 10 + (unsigned)(*s - '0');
	if (*v > CPUHP_CPUSET_MAX)
		*v = CPUHP_CPUSET_MAX;
	return true;
}

/*
 * Split on ',' first, then on ':', '/' and '-': another shape than the real
 * parser's single scan.  A stride is judged CPU by CPU, (c - a) % g < u,
 * rather than group by group.
 */
static int ref_parse(const char *str, struct cpuhp_cpuset *out)
{
	const char *s = str, *e = str + strlen(str);
	bool too_big = false, malformed = false;

	while (s < e && ref_space(*s))
		s++;
	while (e > s && ref_space(e[-1]))
		e--;
	cpuhp_cpuset_zero(out);
	if (s == e)
		return 0;
	for (;;) {
		const char *comma = memchr(s, ',', (size_t)(e - s));
		const char *tok_end = comma ? comma : e;
		const char *colon = memchr(s, ':', (size_t)(tok_end - s));
		const char *range_end = colon ? colon : tok_end;
		const char *dash = memchr(s, '-', (size_t)(range_end - s));
		unsigned a, b, u = 1, g = 1;

		if (dash) {
			if (!ref_number(s, dash, &a) || !ref_number(dash + 1, range_end, &b))
				malformed = true;
		} else if (colon || !ref_number(s, tok_end, &a)) {
			malformed = true; /* a stride needs a range */
		} else {
			b = a;
		}
		if (!malformed && colon) {
			const char *slash = memchr(colon + 1, '/', (size_t)(tok_end - colon - 1));

			if (slash ? !ref_number(colon + 1, slash, &u) ||
			                !ref_number(slash + 1, tok_end, &g)
			          : !ref_number(colon + 1, tok_end, &g))
				malformed = true;
		}
		if (!malformed) {
			if (a >= CPUHP_CPUSET_MAX || b >= CPUHP_CPUSET_MAX ||
			    u >= CPUHP_CPUSET_MAX || g >= CPUHP_CPUSET_MAX)
				too_big = true;
			else if (a > b || u == 0 || g == 0 || u > g)
				malformed = true;
			else
				for (unsigned c = a; c <= b; c++)
					if ((c - a) % g < u)
						cpuhp_cpuset_add(out, c);
		}
		if (!comma)
			break;
		s = comma + 1;
	}
	return malformed ? -EINVAL : too_big ? -ERANGE : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char buf[32768], buf2[32768];
	struct cpuhp_cpuset set, ref, back, poisoned;
	char *str;
	int ret, n;

	/* An exact-size heap copy, so ASan sees any read past the NUL. */
	str = malloc(size + 1);
	FUZZ_CHECK(str);
	memcpy(str, data, size);
	str[size] = '\0';

	memset(&poisoned, 0x5a, sizeof(poisoned));
	set = poisoned;
	ret = cpuhp_cpuset_parse(str, &set);
	FUZZ_CHECK(ret == ref_parse(str, &ref));
	if (ret) {
		FUZZ_CHECK(memcmp(&set, &poisoned, sizeof(set)) == 0);
		free(str);
		return 0;
	}
	FUZZ_CHECK(cpuhp_cpuset_equal(&set, &ref));

	n = cpuhp_cpuset_format(&set, buf, sizeof(buf));
	FUZZ_CHECK(n >= 0 && (size_t)n == strlen(buf));
	FUZZ_CHECK(cpuhp_cpuset_parse(buf, &back) == 0);
	FUZZ_CHECK(cpuhp_cpuset_equal(&back, &set));
	FUZZ_CHECK(cpuhp_cpuset_format(&back, buf2, sizeof(buf2)) == n);
	FUZZ_CHECK(strcmp(buf, buf2) == 0);

	FUZZ_CHECK(cpuhp_cpuset_format(&set, buf2, (size_t)n + 1) == n);
	FUZZ_CHECK(strcmp(buf, buf2) == 0);
	if (n > 0) {
		FUZZ_CHECK(cpuhp_cpuset_format(&set, buf2, (size_t)n) == -ENOSPC);
		FUZZ_CHECK(buf2[0] == '\0');
	}

	unsigned count = 0;
	for (int cpu = cpuhp_cpuset_next(&set, -1); cpu >= 0; cpu = cpuhp_cpuset_next(&set, cpu)) {
		FUZZ_CHECK(cpuhp_cpuset_has(&set, (unsigned)cpu));
		count++;
	}
	FUZZ_CHECK(count == cpuhp_cpuset_count(&set));
	free(str);
	return 0;
}
