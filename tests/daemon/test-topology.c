/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sysfs/topology.c's file on its own: what it writes reads back the same,
 * a file of another boot is refused (-ESTALE), and anything but such a
 * file is refused whole (-EINVAL), leaving what was known untouched.
 * test_cpus.py shows the same through cpuhpd and its restarts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/check.h"

#include "sysfs/topology.h"

#define BOOT  "6f1c3a2e-0000-4000-8000-000000000001"
#define OTHER "6f1c3a2e-0000-4000-8000-000000000002"
#define HEAD  "cpuhpd-topology 1\nboot " BOOT "\n"

static struct cpuhpd_topology t;

/* The text of @t now, for BOOT. */
static char *text(void)
{
	char *s = cpuhpd_topology_format(&t, BOOT);

	CHECK(s);
	return s;
}

static void check_cpu(unsigned cpu, int src, int core, int package, int node, const char *sib)
{
	struct cpuhpd_topo r;

	CHECK_EQ_INT(cpuhpd_topology_get(&t, cpu, &r), src);
	if (src == CPUHPD_TOPO_UNKNOWN) {
		CHECK(!r.siblings);
		CHECK_EQ_INT(r.node, -1);
		return;
	}
	CHECK_EQ_INT(r.core, core);
	CHECK_EQ_INT(r.package, package);
	CHECK_EQ_INT(r.node, node);
	CHECK_EQ_STR(r.siblings, sib);
	free(r.siblings);
}

static void test_a_file_reads_back_as_written(void)
{
	static const char file[] = HEAD "cpu 1 0 0 -1 1,5\n"
	                                "cpu 5 0 0 -1 1,5\n"
	                                "cpu 4095 -3 2147483647 7 4095\n";
	char *s;

	CHECK_EQ_INT(cpuhpd_topology_parse(&t, file, BOOT), 0);
	check_cpu(1, CPUHPD_TOPO_REMEMBERED, 0, 0, -1, "1,5");
	check_cpu(4095, CPUHPD_TOPO_REMEMBERED, -3, 2147483647, 7, "4095");
	check_cpu(0, CPUHPD_TOPO_UNKNOWN, 0, 0, 0, NULL);
	check_cpu(2, CPUHPD_TOPO_UNKNOWN, 0, 0, 0, NULL);
	check_cpu(8000, CPUHPD_TOPO_UNKNOWN, 0, 0, 0, NULL);
	s = text();
	CHECK_EQ_STR(s, file);
	free(s);
	/* No CPU at all is a file too. */
	CHECK_EQ_INT(cpuhpd_topology_parse(&t, HEAD, BOOT), 0);
	check_cpu(1, CPUHPD_TOPO_UNKNOWN, 0, 0, 0, NULL);
}

static void test_another_boot_is_stale_an_unknown_one_is_not(void)
{
	CHECK_EQ_INT(cpuhpd_topology_parse(&t, HEAD "cpu 2 0 0 0 2\n", BOOT), 0);
	CHECK_EQ_INT(
	    cpuhpd_topology_parse(&t, "cpuhpd-topology 1\nboot " OTHER "\ncpu 3 0 0 0 3\n", BOOT),
	    -ESTALE);
	/* Refused: what was known stays. */
	check_cpu(2, CPUHPD_TOPO_REMEMBERED, 0, 0, 0, "2");
	check_cpu(3, CPUHPD_TOPO_UNKNOWN, 0, 0, 0, NULL);
	/* A boot this cpuhpd could not read, on either side, cannot be told apart. */
	CHECK_EQ_INT(cpuhpd_topology_parse(&t, "cpuhpd-topology 1\nboot -\ncpu 3 0 0 0 3\n", BOOT),
	             0);
	check_cpu(3, CPUHPD_TOPO_REMEMBERED, 0, 0, 0, "3");
	CHECK_EQ_INT(cpuhpd_topology_parse(&t, HEAD "cpu 4 0 0 0 4\n", ""), 0);
	check_cpu(4, CPUHPD_TOPO_REMEMBERED, 0, 0, 0, "4");
}

static void test_anything_else_is_refused_whole(void)
{
	static const char *const bad[] = {
	    "",
	    "cpuhpd-topology 2\nboot " BOOT "\n",
	    "cpuhpd-topology 1\n",
	    "cpuhpd-topology 1\nboot \n",
	    "cpuhpd-topology 1\nboot " BOOT,
	    HEAD "cpu 2 0 0 0 2",                /* no newline at the end */
	    HEAD "cpu 2 0 0 0 2\ncpu 3 0 0 0 3", /* nor after a good line */
	    HEAD "cpu 2 0 0 0\n",                /* a field short */
	    HEAD "cpu 2 0 0 0 2 9\n",            /* a field more */
	    HEAD "cpu 2  0 0 0 2\n",             /* an empty field */
	    HEAD "cpu 2 0 0 0 \n",               /* no siblings */
	    HEAD "cpu 2 0 0 -2 2\n",             /* a node below -1 */
	    HEAD "cpu 8192 0 0 0 2\n",           /* no such CPU */
	    HEAD "cpu -1 0 0 0 2\n",             /* nor this */
	    HEAD "cpu 2 0x1 0 0 2\n",            /* hex */
	    HEAD "cpu 2 +1 0 0 2\n",             /* a sign */
	    HEAD "cpu 2 2147483648 0 0 2\n",     /* over int */
	    HEAD "cpu 2 0 0 0 2-\n",             /* a list that does not parse */
	    HEAD "cpu 2 0 0 0 0-7:2\n",          /* a stride: never written */
	    HEAD "cpu 2 0 0 0 8192\n",           /* a list past the last CPU */
	    HEAD "cpu 2 0 0 0 \x1b[31m\n",
	    HEAD "cpu 2 0 0 0 2\ncpu 2 0 0 0 2\n", /* a CPU twice */
	    HEAD "CPU 2 0 0 0 2\n",
	    HEAD "\n",
	};

	CHECK_EQ_INT(cpuhpd_topology_parse(&t, HEAD "cpu 6 1 2 3 6\n", BOOT), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (cpuhpd_topology_parse(&t, bad[i], BOOT) != -EINVAL) {
			fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
			CHECK(0);
		}
		check_cpu(6, CPUHPD_TOPO_REMEMBERED, 1, 2, 3, "6");
	}
}

int main(void)
{
	CHECK_EQ_INT(cpuhpd_topology_init(&t), 0);
	RUN_TEST(test_a_file_reads_back_as_written);
	RUN_TEST(test_another_boot_is_stale_an_unknown_one_is_not);
	RUN_TEST(test_anything_else_is_refused_whole);
	cpuhpd_topology_fini(&t);
	return 0;
}
