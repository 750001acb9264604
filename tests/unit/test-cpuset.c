/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhp_cpuset_*: bit operations, and the range-list parser and formatter
 * against a table of accepted and rejected lists, a naive reference
 * formatter, and exact buffer-size edges.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cpuhp/cpuset.h>

#include "check.h"

struct parse_case {
	const char *in;
	int ret;
	const char *canonical; /* what format() gives back when ret == 0 */
};

static const struct parse_case parse_cases[] = {
    /* Empty sets. */
    {"", 0, ""},
    {"\n", 0, ""},
    {" \t\r\v\f\n", 0, ""},
    /* Plain lists, and whitespace at the ends only. */
    {"0", 0, "0"},
    {" 0-3 \n", 0, "0-3"},
    {"0-3,8,10-11\n", 0, "0-3,8,10-11"},
    {"0,2-4,7", 0, "0,2-4,7"},
    {"\t1\r\n", 0, "1"},
    {"1\n\n", 0, "1"},
    /* Two or more consecutive CPUs are always written as a range. */
    {"0,1", 0, "0-1"},
    {"0,1,2,5", 0, "0-2,5"},
    {"1-1", 0, "1"},
    {"63,64", 0, "63-64"},
    {"0-63", 0, "0-63"},
    {"64-127", 0, "64-127"},
    {"62-129", 0, "62-129"},
    /* Order, duplicates and overlaps do not matter (as in the kernel). */
    {"2,1,0", 0, "0-2"},
    {"5,1,3,1", 0, "1,3,5"},
    {"1-3,2-5", 0, "1-5"},
    {"4-6,0-9", 0, "0-9"},
    {"1-8191,0", 0, "0-8191"},
    /* Leading zeros are decimal, not octal, and never overflow. */
    {"007,010", 0, "7,10"},
    {"0000000000000000000000000000005", 0, "5"},
    /* The limits. */
    {"0-8191", 0, "0-8191"},
    {"8191", 0, "8191"},
    {"8192", -ERANGE, NULL},
    {"0-8192", -ERANGE, NULL},
    {"8192-8193", -ERANGE, NULL},
    {"1,9999", -ERANGE, NULL},
    /* Numbers that would wrap a 32- or 64-bit accumulator to a small CPU. */
    {"4294967296", -ERANGE, NULL},
    {"4294967297", -ERANGE, NULL},
    {"18446744073709551616", -ERANGE, NULL},
    {"99999999999999999999", -ERANGE, NULL},
    {"0-99999999999999999999999999999999999999", -ERANGE, NULL},
    /* Out of range wins over reversed; malformed wins over out of range. */
    {"9000-1", -ERANGE, NULL},
    {"8192,a", -EINVAL, NULL},
    {"3-1,9000", -EINVAL, NULL},
    {"9000,3-1", -EINVAL, NULL},
    {"a,8192", -EINVAL, NULL},
    /* Malformed. */
    {"3-1", -EINVAL, NULL},
    {"1,,2", -EINVAL, NULL},
    {",1", -EINVAL, NULL},
    {"1,", -EINVAL, NULL},
    {"1,\n", -EINVAL, NULL},
    {",", -EINVAL, NULL},
    {" , ", -EINVAL, NULL},
    {"-", -EINVAL, NULL},
    {"-1", -EINVAL, NULL},
    {"1-", -EINVAL, NULL},
    {"1--2", -EINVAL, NULL},
    {"1-2-3", -EINVAL, NULL},
    {"a", -EINVAL, NULL},
    {"1a", -EINVAL, NULL},
    {"1-a", -EINVAL, NULL},
    {"1 2", -EINVAL, NULL},
    {"1 ,2", -EINVAL, NULL},
    {"1, 2", -EINVAL, NULL},
    {"1\n2", -EINVAL, NULL},
    {"1 - 2", -EINVAL, NULL},
    {"0x1", -EINVAL, NULL},
    {"+1", -EINVAL, NULL},
    {"1;2", -EINVAL, NULL},
    {"\xc2\xa0"
     "1",
     -EINVAL, NULL}, /* U+00A0 is not C-locale whitespace */
    /* Strides: the kernel's used/group (bitmap_parselist) and taskset's every Nth. */
    {"0-15:2/4", 0, "0-1,4-5,8-9,12-13"},
    {"0-7:2/4", 0, "0-1,4-5"},
    {"0-7:2", 0, "0,2,4,6"},
    {"0-7:1/2", 0, "0,2,4,6"},
    {"1-7:2", 0, "1,3,5,7"},
    {"0-6:3", 0, "0,3,6"},
    {"0-5:2/4", 0, "0-1,4-5"},
    {"0-4:2/4", 0, "0-1,4"}, /* the last group is cut at the range's end */
    {"0-7:4/4", 0, "0-7"},   /* all of every group */
    {"0-7:1", 0, "0-7"},
    {"0-7:1/1", 0, "0-7"},
    {"2-3:5", 0, "2"}, /* a stride past the end: the first CPU alone */
    {"0-7:8/9", 0, "0-7"},
    {"0-8191:1/4096", 0, "0,4096"},
    {"0-8191:2/2,1", 0, "0-8191"},
    {"0-7:2,1-7:2", 0, "0-7"},
    {"0-7:02/04", 0, "0-1,4-5"}, /* leading zeros, as everywhere */
    {" 0-15:2/4\n", 0, "0-1,4-5,8-9,12-13"},
    {"0-7:0", -EINVAL, NULL},
    {"0-7:0/4", -EINVAL, NULL},
    {"0-7:0/0", -EINVAL, NULL},
    {"0-7:1/0", -EINVAL, NULL},
    {"0-7:3/2", -EINVAL, NULL},
    {":2", -EINVAL, NULL},
    {"3:1/2", -EINVAL, NULL}, /* the kernel too: a stride needs a range */
    {"3:2", -EINVAL, NULL},
    {"0-7:", -EINVAL, NULL},
    {"0-7:2/", -EINVAL, NULL},
    {"0-7:/4", -EINVAL, NULL},
    {"0-7:2/4/8", -EINVAL, NULL},
    {"0-7:2:3", -EINVAL, NULL},
    {"0-7:-2", -EINVAL, NULL},
    {"0-7:2 /4", -EINVAL, NULL},
    {"0-7 :2", -EINVAL, NULL},
    {"7-0:2", -EINVAL, NULL},
    {"0-7:2/4,", -EINVAL, NULL},
    {"0-7:8192", -ERANGE, NULL}, /* stride numbers have the CPUs' bound, as in the kernel */
    {"0-7:1/8192", -ERANGE, NULL},
    {"0-8192:2", -ERANGE, NULL},
    {"0-7:9999/2", -ERANGE, NULL},   /* too big beats out of order */
    {"0-7:3/2,9000", -EINVAL, NULL}, /* as "3-1,9000": a bad range in bounds is malformed */
    {"9000,0-7:0", -EINVAL, NULL},
    {"0-7:3/2,a", -EINVAL, NULL},
    /* The kernel's other extensions, which sysfs never prints. */
    {"N", -EINVAL, NULL},
    {"0-N", -EINVAL, NULL},
    {"all", -EINVAL, NULL},
};

/* A pattern no parse can produce by accident, to prove @out is untouched. */
static void poison(struct cpuhp_cpuset *set)
{
	memset(set, 0xa5, sizeof(*set));
}

static bool is_poisoned(const struct cpuhp_cpuset *set)
{
	struct cpuhp_cpuset p;

	poison(&p);
	return memcmp(&p, set, sizeof(p)) == 0;
}

/*
 * Reference formatter: one CPU at a time, through has() alone, with
 * snprintf.  Slow and obviously right.
 */
static void naive_format(const struct cpuhp_cpuset *set, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	for (unsigned cpu = 0; cpu < CPUHP_CPUSET_MAX; cpu++) {
		unsigned last = cpu;

		if (!cpuhp_cpuset_has(set, cpu))
			continue;
		while (last + 1 < CPUHP_CPUSET_MAX && cpuhp_cpuset_has(set, last + 1))
			last++;
		if (last == cpu)
			pos += snprintf(buf + pos, len - pos, "%s%u", pos ? "," : "", cpu);
		else
			pos += snprintf(buf + pos, len - pos, "%s%u-%u", pos ? "," : "", cpu, last);
		CHECK(pos < len);
		cpu = last;
	}
}

static void check_round_trip(const struct cpuhp_cpuset *set)
{
	static char buf[32768], ref[32768];
	struct cpuhp_cpuset back;
	int n;

	n = cpuhp_cpuset_format(set, buf, sizeof(buf));
	CHECK(n >= 0);
	CHECK_EQ_INT(n, strlen(buf));
	naive_format(set, ref, sizeof(ref));
	CHECK_EQ_STR(buf, ref);
	poison(&back);
	CHECK_EQ_INT(cpuhp_cpuset_parse(buf, &back), 0);
	CHECK(cpuhp_cpuset_equal(&back, set));
}

/* Log a table input with its control characters visible. */
static void print_case(const char *s)
{
	printf("#   parse \"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"')
			putchar(c);
		else
			printf("\\x%02x", c);
	}
	printf("\"\n");
}

static void cpuset_parse_table_accepts_and_rejects_exactly(void)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct cpuhp_cpuset set;
		char buf[64];
		int ret;

		print_case(c->in);
		poison(&set);
		ret = cpuhp_cpuset_parse(c->in, &set);
		CHECK_EQ_INT(ret, c->ret);
		if (ret) {
			CHECK(is_poisoned(&set));
			continue;
		}
		CHECK_EQ_INT(cpuhp_cpuset_format(&set, buf, sizeof(buf)), strlen(c->canonical));
		CHECK_EQ_STR(buf, c->canonical);
		check_round_trip(&set);
	}
}

static void cpuset_parse_sets_exactly_the_listed_cpus(void)
{
	struct cpuhp_cpuset set;

	CHECK_EQ_INT(cpuhp_cpuset_parse("0-3,8,10-11\n", &set), 0);
	CHECK_EQ_INT(cpuhp_cpuset_count(&set), 7);
	for (unsigned cpu = 0; cpu < CPUHP_CPUSET_MAX; cpu++) {
		bool want = cpu <= 3 || cpu == 8 || cpu == 10 || cpu == 11;
		CHECK_EQ_INT(cpuhp_cpuset_has(&set, cpu), want);
	}
	CHECK_EQ_INT(cpuhp_cpuset_parse("0-8191", &set), 0);
	CHECK_EQ_INT(cpuhp_cpuset_count(&set), CPUHP_CPUSET_MAX);
}

static void cpuset_bit_ops_cover_word_edges_and_reject_out_of_range(void)
{
	static const unsigned cpus[] = {0, 1, 63, 64, 127, 128, 4095, 8190, 8191};
	struct cpuhp_cpuset set, before;

	CHECK_EQ_INT(sizeof(struct cpuhp_cpuset), CPUHP_CPUSET_MAX / 8);
	poison(&set);
	cpuhp_cpuset_zero(&set);
	CHECK_EQ_INT(cpuhp_cpuset_count(&set), 0);
	for (size_t i = 0; i < sizeof(cpus) / sizeof(cpus[0]); i++) {
		CHECK(!cpuhp_cpuset_has(&set, cpus[i]));
		CHECK_EQ_INT(cpuhp_cpuset_add(&set, cpus[i]), 0);
		CHECK(cpuhp_cpuset_has(&set, cpus[i]));
		CHECK_EQ_INT(cpuhp_cpuset_count(&set), i + 1);
	}
	/* Adding twice changes nothing. */
	CHECK_EQ_INT(cpuhp_cpuset_add(&set, 64), 0);
	CHECK_EQ_INT(cpuhp_cpuset_count(&set), 9);

	before = set;
	CHECK_EQ_INT(cpuhp_cpuset_add(&set, CPUHP_CPUSET_MAX), -ERANGE);
	CHECK_EQ_INT(cpuhp_cpuset_add(&set, UINT_MAX), -ERANGE);
	cpuhp_cpuset_del(&set, CPUHP_CPUSET_MAX);
	cpuhp_cpuset_del(&set, UINT_MAX);
	CHECK(cpuhp_cpuset_equal(&set, &before));
	CHECK(!cpuhp_cpuset_has(&set, CPUHP_CPUSET_MAX));
	CHECK(!cpuhp_cpuset_has(&set, UINT_MAX));

	cpuhp_cpuset_del(&set, 64);
	CHECK(!cpuhp_cpuset_has(&set, 64));
	CHECK(cpuhp_cpuset_has(&set, 63));
	CHECK_EQ_INT(cpuhp_cpuset_count(&set), 8);
	cpuhp_cpuset_del(&set, 64); /* deleting an absent CPU is a no-op */
	CHECK_EQ_INT(cpuhp_cpuset_count(&set), 8);
	check_round_trip(&set);
}

static void cpuset_equal_sees_every_bit(void)
{
	struct cpuhp_cpuset a, b;

	cpuhp_cpuset_zero(&a);
	cpuhp_cpuset_zero(&b);
	CHECK(cpuhp_cpuset_equal(&a, &b));
	for (unsigned cpu = 0; cpu < CPUHP_CPUSET_MAX; cpu += 97) {
		cpuhp_cpuset_add(&b, cpu);
		CHECK(!cpuhp_cpuset_equal(&a, &b));
		CHECK(!cpuhp_cpuset_equal(&b, &a));
		cpuhp_cpuset_del(&b, cpu);
		CHECK(cpuhp_cpuset_equal(&a, &b));
	}
	cpuhp_cpuset_add(&b, CPUHP_CPUSET_MAX - 1);
	CHECK(!cpuhp_cpuset_equal(&a, &b));
}

static void cpuset_next_walks_in_order_and_ends_with_minus_one(void)
{
	struct cpuhp_cpuset set;
	int cpu;

	cpuhp_cpuset_zero(&set);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, -1), -1);

	CHECK_EQ_INT(cpuhp_cpuset_parse("5,63-64,200,8191", &set), 0);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, -1), 5);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, 5), 63);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, 63), 64);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, 64), 200);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, 100), 200);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, 200), 8191);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, 8191), -1);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, 9000), -1);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, INT_MAX), -1);
	/* Any negative @after starts from the beginning. */
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, -7), 5);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, INT_MIN), 5);

	cpuhp_cpuset_parse("0", &set);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, -1), 0);
	CHECK_EQ_INT(cpuhp_cpuset_next(&set, 0), -1);

	/* A full walk visits count() CPUs. */
	cpuhp_cpuset_parse("0-8191", &set);
	unsigned n = 0;
	for (cpu = cpuhp_cpuset_next(&set, -1); cpu >= 0; cpu = cpuhp_cpuset_next(&set, cpu))
		CHECK_EQ_INT(cpu, n++);
	CHECK_EQ_INT(n, CPUHP_CPUSET_MAX);
}

static void cpuset_format_needs_room_for_the_nul_and_says_enospc(void)
{
	struct cpuhp_cpuset set;
	char buf[64];

	CHECK_EQ_INT(cpuhp_cpuset_parse("0-2,5,7-8,100-8191", &set), 0);
	const char *want = "0-2,5,7-8,100-8191";
	size_t need = strlen(want) + 1;

	/* Exactly the right size. */
	memset(buf, 'x', sizeof(buf));
	CHECK_EQ_INT(cpuhp_cpuset_format(&set, buf, need), need - 1);
	CHECK_EQ_STR(buf, want);
	CHECK_EQ_INT(buf[need], 'x'); /* nothing written past @len */

	/* Every shorter size, including one byte short, mid-number, mid-range. */
	for (size_t len = 1; len < need; len++) {
		memset(buf, 'x', sizeof(buf));
		CHECK_EQ_INT(cpuhp_cpuset_format(&set, buf, len), -ENOSPC);
		CHECK_EQ_STR(buf, "");
		for (size_t i = len; i < sizeof(buf); i++)
			CHECK_EQ_INT(buf[i], 'x');
	}
	/* A zero-length buffer is not written at all. */
	memset(buf, 'x', sizeof(buf));
	CHECK_EQ_INT(cpuhp_cpuset_format(&set, buf, 0), -ENOSPC);
	CHECK_EQ_INT(buf[0], 'x');

	/* The empty set needs one byte, for the NUL. */
	cpuhp_cpuset_zero(&set);
	memset(buf, 'x', sizeof(buf));
	CHECK_EQ_INT(cpuhp_cpuset_format(&set, buf, 1), 0);
	CHECK_EQ_STR(buf, "");
	CHECK_EQ_INT(cpuhp_cpuset_format(&set, buf, 0), -ENOSPC);
}

static void cpuset_format_longest_list_round_trips(void)
{
	struct cpuhp_cpuset set;
	static char buf[32768];
	int n;

	/*
	 * Pairs with gaps, "0-1,3-4,...,8190-8191", are the longest canonical
	 * list of CPUHP_CPUSET_MAX CPUs: per CPU, a pair costs two thirds of
	 * (digits + 1) where a singleton every other CPU costs one half.
	 */
	cpuhp_cpuset_zero(&set);
	for (unsigned cpu = 0; cpu < CPUHP_CPUSET_MAX; cpu += 3) {
		cpuhp_cpuset_add(&set, cpu);
		cpuhp_cpuset_add(&set, cpu + 1);
	}
	check_round_trip(&set);
	n = cpuhp_cpuset_format(&set, buf, sizeof(buf));
	CHECK_EQ_INT(n, 26568);
	CHECK_EQ_INT(strncmp(buf, "0-1,3-4,6-7,", 12), 0);
	CHECK_EQ_STR(buf + n - 10, ",8190-8191");
	CHECK_EQ_INT(cpuhp_cpuset_format(&set, buf, (size_t)n + 1), n);
	CHECK_EQ_INT(cpuhp_cpuset_format(&set, buf, (size_t)n), -ENOSPC);
	CHECK_EQ_STR(buf, "");

	/* Every other CPU: singletons only. */
	cpuhp_cpuset_zero(&set);
	for (unsigned cpu = 0; cpu < CPUHP_CPUSET_MAX; cpu += 2)
		cpuhp_cpuset_add(&set, cpu);
	check_round_trip(&set);
	n = cpuhp_cpuset_format(&set, buf, sizeof(buf));
	CHECK_EQ_INT(n, 19924);
}

/* xorshift64: deterministic, so a failure reproduces. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void cpuset_random_sets_match_the_reference_formatter(void)
{
	for (int iter = 0; iter < 300; iter++) {
		struct cpuhp_cpuset set;
		/* Vary density and clustering: sparse, dense, and long runs. */
		unsigned density = (unsigned)(rnd() % 100);
		unsigned run = 1 + (unsigned)(rnd() % 80);
		unsigned limit = 1 + (unsigned)(rnd() % CPUHP_CPUSET_MAX);

		cpuhp_cpuset_zero(&set);
		for (unsigned cpu = 0; cpu < limit; cpu += run) {
			if (rnd() % 100 >= density)
				continue;
			for (unsigned j = cpu; j < cpu + run && j < limit; j++)
				cpuhp_cpuset_add(&set, j);
		}
		check_round_trip(&set);
	}
}

int main(void)
{
	RUN_TEST(cpuset_parse_table_accepts_and_rejects_exactly);
	RUN_TEST(cpuset_parse_sets_exactly_the_listed_cpus);
	RUN_TEST(cpuset_bit_ops_cover_word_edges_and_reject_out_of_range);
	RUN_TEST(cpuset_equal_sees_every_bit);
	RUN_TEST(cpuset_next_walks_in_order_and_ends_with_minus_one);
	RUN_TEST(cpuset_format_needs_room_for_the_nul_and_says_enospc);
	RUN_TEST(cpuset_format_longest_list_round_trips);
	RUN_TEST(cpuset_random_sets_match_the_reference_formatter);
	return 0;
}
