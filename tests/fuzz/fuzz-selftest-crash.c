/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A fuzz target that finds a bug in its first input, for runner-selftest.sh:
 * it proves that run-fuzzer.sh reports a finding as a failed test, not as
 * libFuzzer's exit 77, which meson would count as skipped.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)data;
	(void)size;
	abort();
}
