/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU sets as fixed bitmaps, and the one parser and formatter of the
 * kernel's range-list syntax used by the whole project.
 *
 * The grammar accepted by cpuhp_cpuset_parse(), after leading and trailing
 * whitespace (isspace() in the C locale) is removed:
 *
 *	list   := "" | range ("," range)*
 *	range  := number | number "-" number [":" stride]	(first <= second)
 *	stride := number "/" number	(the kernel's: used/group, 1 <= used <= group)
 *	        | number		(taskset's: every Nth, N >= 1; the same as 1/N)
 *	number := [0-9]+			(decimal, leading zeros allowed)
 *
 * A stride range takes, from each group of `group` CPUs starting at
 * `first`, its first `used` ones, up to `second`: "0-15:2/4" is
 * 0-1,4-5,8-9,12-13, "0-7:2" is 0,2,4,6 (as bitmap_parselist() and
 * taskset read them).  Ranges may repeat or overlap ("1-3,2-5" is 1-5), as
 * the kernel's own parser allows.  Rejected with -EINVAL: signs, "0x",
 * inner whitespace, empty elements, a stride on a single CPU ("3:1/2", as
 * the kernel does) or without a range (":2"), a zero stride or group, more
 * used than the group ("0-7:3/2"), and the kernel's "N" and "all", which
 * sysfs never prints.  A malformed list is -EINVAL even when it also holds
 * a number >= CPUHP_CPUSET_MAX; a well-formed one holding such a number
 * (stride numbers too, as in the kernel) is -ERANGE, even if that range is
 * also reversed or its stride out of order.
 *
 * Nothing here allocates, locks or touches global state.
 */
#include <errno.h>
#include <string.h>

#include <cpuhp/cpuset.h>

#define WORD_BITS 64
#define NR_WORDS  (CPUHP_CPUSET_MAX / WORD_BITS)

_Static_assert(CPUHP_CPUSET_MAX % WORD_BITS == 0, "the bitmap must be whole words");

void cpuhp_cpuset_zero(struct cpuhp_cpuset *set)
{
	memset(set, 0, sizeof(*set));
}

int cpuhp_cpuset_add(struct cpuhp_cpuset *set, unsigned cpu)
{
	if (cpu >= CPUHP_CPUSET_MAX)
		return -ERANGE;
	set->bits[cpu / WORD_BITS] |= UINT64_C(1) << (cpu % WORD_BITS);
	return 0;
}

void cpuhp_cpuset_del(struct cpuhp_cpuset *set, unsigned cpu)
{
	if (cpu < CPUHP_CPUSET_MAX)
		set->bits[cpu / WORD_BITS] &= ~(UINT64_C(1) << (cpu % WORD_BITS));
}

bool cpuhp_cpuset_has(const struct cpuhp_cpuset *set, unsigned cpu)
{
	if (cpu >= CPUHP_CPUSET_MAX)
		return false;
	return (set->bits[cpu / WORD_BITS] >> (cpu % WORD_BITS)) & 1;
}

unsigned cpuhp_cpuset_count(const struct cpuhp_cpuset *set)
{
	unsigned n = 0;

	for (unsigned i = 0; i < NR_WORDS; i++)
		n += (unsigned)__builtin_popcountll(set->bits[i]);
	return n;
}

bool cpuhp_cpuset_equal(const struct cpuhp_cpuset *a, const struct cpuhp_cpuset *b)
{
	return memcmp(a->bits, b->bits, sizeof(a->bits)) == 0;
}

/*
 * The lowest bit at or above @from whose value is @value, or
 * CPUHP_CPUSET_MAX if there is none.  Inverting each word turns the search
 * for a clear bit into a search for a set one.
 */
static unsigned find_bit(const struct cpuhp_cpuset *set, unsigned from, bool value)
{
	uint64_t flip = value ? 0 : ~UINT64_C(0);

	if (from >= CPUHP_CPUSET_MAX)
		return CPUHP_CPUSET_MAX;
	unsigned i = from / WORD_BITS;
	uint64_t w = (set->bits[i] ^ flip) & (~UINT64_C(0) << (from % WORD_BITS));
	for (;;) {
		if (w)
			return i * WORD_BITS + (unsigned)__builtin_ctzll(w);
		if (++i == NR_WORDS)
			return CPUHP_CPUSET_MAX;
		w = set->bits[i] ^ flip;
	}
}

int cpuhp_cpuset_next(const struct cpuhp_cpuset *set, int after)
{
	unsigned from = after < 0 ? 0 : (unsigned)after + 1;
	unsigned cpu = find_bit(set, from, true);

	return cpu < CPUHP_CPUSET_MAX ? (int)cpu : -1;
}

static bool is_space(char c)
{
	/* isspace() in the C locale, without depending on the process locale. */
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Read the digits at *@p (there must be at least one) into *@val and move
 * *@p past them.  Anything >= CPUHP_CPUSET_MAX is stored as
 * CPUHP_CPUSET_MAX: saturating keeps the arithmetic far from overflow for
 * any length of digit string, and the caller only needs to know "too big".
 */
static bool parse_number(const char **p, const char *end, unsigned *val)
{
	const char *s = *p;
	unsigned v = 0;

	if (s == end || !is_digit(*s))
		return false;
	for (; s < end && is_digit(*s); s++) {
		v = v * 10 + (unsigned)(*s - '0');
		if (v > CPUHP_CPUSET_MAX)
			v = CPUHP_CPUSET_MAX;
	}
	*p = s;
	*val = v;
	return true;
}

static void add_range(struct cpuhp_cpuset *set, unsigned first, unsigned last)
{
	/* Whole words at a time: "0-8191" should not cost 8192 iterations. */
	while (first <= last) {
		unsigned i = first / WORD_BITS, lo = first % WORD_BITS;
		unsigned hi = last / WORD_BITS == i ? last % WORD_BITS : WORD_BITS - 1;
		uint64_t mask = (~UINT64_C(0) >> (WORD_BITS - 1 - hi)) & (~UINT64_C(0) << lo);

		set->bits[i] |= mask;
		first = i * WORD_BITS + hi + 1;
	}
}

/* @used CPUs of every @group from @first to @last; the caller checked the bounds. */
static void add_strided(struct cpuhp_cpuset *set, unsigned first, unsigned last, unsigned used,
                        unsigned group)
{
	/* first, used and group are below CPUHP_CPUSET_MAX: no sum here can wrap. */
	for (unsigned start = first; start <= last; start += group)
		add_range(set, start, start + used - 1 < last ? start + used - 1 : last);
}

int cpuhp_cpuset_parse(const char *str, struct cpuhp_cpuset *out)
{
	const char *p = str, *end = str + strlen(str);
	struct cpuhp_cpuset set;
	bool too_big = false;

	while (p < end && is_space(*p))
		p++;
	while (end > p && is_space(end[-1]))
		end--;

	cpuhp_cpuset_zero(&set);
	while (p < end) {
		unsigned first, last, used = 1, group = 1;

		if (!parse_number(&p, end, &first))
			return -EINVAL;
		last = first;
		if (p < end && *p == '-') {
			p++;
			if (!parse_number(&p, end, &last))
				return -EINVAL;
			if (p < end && *p == ':') {
				p++;
				if (!parse_number(&p, end, &group))
					return -EINVAL;
				if (p < end && *p == '/') {
					p++;
					used = group;
					if (!parse_number(&p, end, &group))
						return -EINVAL;
				}
			}
		}
		if (p < end) {
			/* A separator must be followed by another range: "1," is malformed. */
			if (*p != ',' || p + 1 == end)
				return -EINVAL;
			p++;
		}
		if (first >= CPUHP_CPUSET_MAX || last >= CPUHP_CPUSET_MAX ||
		    used >= CPUHP_CPUSET_MAX || group >= CPUHP_CPUSET_MAX)
			too_big = true;
		else if (first > last || used == 0 || used > group)
			return -EINVAL;
		else if (used == group)
			add_range(&set, first, last);
		else
			add_strided(&set, first, last, used, group);
	}
	if (too_big)
		return -ERANGE;
	*out = set;
	return 0;
}

/* Decimal digits of @v into @tmp (at least 10 bytes), not terminated; returns the count. */
static size_t utoa(unsigned v, char *tmp)
{
	char rev[10];
	size_t n = 0;

	do {
		rev[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		tmp[i] = rev[n - 1 - i];
	return n;
}

int cpuhp_cpuset_format(const struct cpuhp_cpuset *set, char *buf, size_t len)
{
	size_t pos = 0;
	unsigned cpu = find_bit(set, 0, true);

	while (cpu < CPUHP_CPUSET_MAX) {
		unsigned last = find_bit(set, cpu, false) - 1;
		char item[24]; /* ",8191-8191" at most */
		size_t n = 0;

		if (pos)
			item[n++] = ',';
		n += utoa(cpu, item + n);
		if (last > cpu) {
			item[n++] = '-';
			n += utoa(last, item + n);
		}
		/* pos < len whenever len > 0: one byte always stays for the NUL. */
		if (len - pos <= n) {
			if (len)
				buf[0] = '\0';
			return -ENOSPC;
		}
		memcpy(buf + pos, item, n);
		pos += n;
		cpu = find_bit(set, last + 1, true);
	}
	if (len == 0)
		return -ENOSPC;
	buf[pos] = '\0';
	return (int)pos;
}
