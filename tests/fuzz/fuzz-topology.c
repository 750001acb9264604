/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the file in which cpuhpd remembers each CPU's topology
 * (daemon/cpuhpd/sysfs/topology.h), read at start.  Properties: a refused
 * text (-EINVAL, or -ESTALE for another boot) leaves what was known as it
 * was; an accepted one holds a record for each of its lines but the two
 * first, and written back parses again to the same text.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sysfs/topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzzcheck.h"

#define BOOT "6f1c3a2e-0000-4000-8000-000000000001"

static size_t lines(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cpuhpd_topology t;
	static bool init;
	char *text, *before, *after, *again;
	int err;

	if (!init) {
		FUZZ_CHECK(cpuhpd_topology_init(&t) == 0);
		init = true;
	}
	text = malloc(size + 1);
	FUZZ_CHECK(text);
	memcpy(text, data, size);
	text[size] = '\0';
	before = cpuhpd_topology_format(&t, BOOT);
	FUZZ_CHECK(before);
	err = cpuhpd_topology_parse(&t, text, BOOT);
	FUZZ_CHECK(err == 0 || err == -EINVAL || err == -ESTALE || err == -ENOMEM);
	after = cpuhpd_topology_format(&t, BOOT);
	FUZZ_CHECK(after);
	if (err) {
		FUZZ_CHECK(!strcmp(before, after));
	} else {
		FUZZ_CHECK(lines(after) == lines(text));
		FUZZ_CHECK(cpuhpd_topology_parse(&t, after, BOOT) == 0);
		again = cpuhpd_topology_format(&t, BOOT);
		FUZZ_CHECK(again && !strcmp(again, after));
		free(again);
	}
	free(before);
	free(after);
	free(text);
	return 0;
}
