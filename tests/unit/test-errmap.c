/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto/errmap.c: every ErrorCode the .proto declares maps to an errno and
 * back; errnos and codes nobody named map to ERR_UNKNOWN and -EIO, never to
 * success.
 */
#include <errno.h>
#include <string.h>

#include "errmap.h"

#include "check.h"

static void errmap_every_declared_code_round_trips(void)
{
	const ProtobufCEnumDescriptor *desc = &cpuhp__error_code__descriptor;
	unsigned i, named = 0;

	for (i = 0; i < desc->n_values; i++) {
		int code = desc->values[i].value;
		int err;

		if (code == CPUHP__ERROR_CODE__ERR_UNKNOWN)
			continue;
		err = cpuhp__errmap_from_wire(code);
		printf("  %s -> %d (%s): %s\n", desc->values[i].name, err, strerror(-err),
		       cpuhp__errmap_describe(code));
		CHECK(err < 0);
		CHECK_EQ_INT(cpuhp__errmap_to_wire(err), code);
		CHECK_EQ_INT(cpuhp__errmap_to_wire(-err), code);
		CHECK(strcmp(cpuhp__errmap_describe(code), "unknown error") != 0);
		/* The enumerator's name says which errno it carries. */
		CHECK_EQ_STR(desc->values[i].name + strlen("ERR_"), strerrorname_np(-err));
		named++;
	}
	CHECK_EQ_INT(named, desc->n_values - 1);
}

static void errmap_unknown_errno_becomes_unknown_then_eio(void)
{
	CHECK_EQ_INT(cpuhp__errmap_to_wire(-ENOTTY), CPUHP__ERROR_CODE__ERR_UNKNOWN);
	CHECK_EQ_INT(cpuhp__errmap_to_wire(EXDEV), CPUHP__ERROR_CODE__ERR_UNKNOWN);
	CHECK_EQ_INT(cpuhp__errmap_to_wire(0), CPUHP__ERROR_CODE__ERR_UNKNOWN);
	CHECK_EQ_INT(cpuhp__errmap_to_wire(100000), CPUHP__ERROR_CODE__ERR_UNKNOWN);
	CHECK_EQ_INT(cpuhp__errmap_from_wire(CPUHP__ERROR_CODE__ERR_UNKNOWN), -EIO);
	CHECK_EQ_STR(cpuhp__errmap_describe(CPUHP__ERROR_CODE__ERR_UNKNOWN), "unknown error");
}

static void errmap_codes_from_a_newer_peer_are_failures(void)
{
	CHECK_EQ_INT(cpuhp__errmap_from_wire(9999), -EIO);
	CHECK_EQ_INT(cpuhp__errmap_from_wire(-1), -EIO);
	CHECK(cpuhp__errmap_describe(9999) != NULL);
}

/*
 * ECANCELED is cpuhpd's stop for a request, and the kernel's answer for one
 * CPU of a hotplug: the text a client shows when no message came must not
 * claim either.
 */
static void errmap_ecanceled_claims_no_shutdown(void)
{
	const char *t = cpuhp__errmap_describe(CPUHP__ERROR_CODE__ERR_ECANCELED);

	CHECK(strstr(t, "shutting down") == NULL);
	CHECK_EQ_STR(t, "canceled");
}

int main(void)
{
	RUN_TEST(errmap_every_declared_code_round_trips);
	RUN_TEST(errmap_unknown_errno_becomes_unknown_then_eio);
	RUN_TEST(errmap_codes_from_a_newer_peer_are_failures);
	RUN_TEST(errmap_ecanceled_claims_no_shutdown);
	return 0;
}
