/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto/strfields.c: a string field with a NUL byte or bytes that are not
 * UTF-8, at any depth, is found and named; valid messages, unknown fields
 * and every other wire type pass; random encodings that protobuf-c accepts
 * never make the walk read out of bounds (the sanitizer builds run this).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpuhp.pb-c.h"
#include "strfields.h"

#include "check.h"

static char why[256];

/* @req packed, then the first "X" in it replaced by @with. */
static size_t pack_patched(const Cpuhp__Request *req, uint8_t *buf, size_t size, const char *with)
{
	size_t n = cpuhp__request__get_packed_size(req);
	uint8_t *x;

	CHECK(n <= size);
	cpuhp__request__pack(req, buf);
	if (with) {
		x = memchr(buf, 'X', n);
		CHECK(x);
		*x = (uint8_t)with[0];
	}
	return n;
}

static int check_register(const char *name, const char *with)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__RegisterState rs = CPUHP__REGISTER_STATE__INIT;
	uint8_t buf[256];
	size_t n;

	rs.name = (char *)name;
	rs.priority = -3;
	rs.deadline_ms = 100;
	req.id = 7;
	req.body_case = CPUHP__REQUEST__BODY_REGISTER_STATE;
	req.register_state = &rs;
	n = pack_patched(&req, buf, sizeof(buf), with);
	return cpuhp__strfields_check(&cpuhp__request__descriptor, buf, n, why, sizeof(why));
}

static void strfields_valid_strings_pass(void)
{
	CHECK_EQ_INT(check_register("abc", NULL), 0);
	CHECK_EQ_STR(why, "");
	CHECK_EQ_INT(check_register("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", NULL), 0);
	CHECK_EQ_INT(check_register("", NULL), 0);
}

static void strfields_a_nul_is_named_with_its_field_and_place(void)
{
	CHECK_EQ_INT(check_register("abcXdef", "\0"), -EINVAL);
	CHECK_EQ_STR(why, "RegisterState.name holds a NUL byte (at byte 3)");
}

static void strfields_bytes_that_are_not_utf8_are_named(void)
{
	CHECK_EQ_INT(check_register("abcXdef", "\xff"), -EINVAL);
	CHECK_EQ_STR(why, "RegisterState.name is not valid UTF-8");
	CHECK_EQ_INT(check_register("abcX", "\xc3"), -EINVAL); /* a sequence cut short */
}

static void strfields_the_first_bad_field_of_several_is_named(void)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire la = CPUHP__LEASE_ACQUIRE__INIT;
	uint8_t buf[256];
	size_t n;

	la.timeout_ms = 5;
	la.who = "ok";
	la.why = "bXd";
	req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	req.lease_acquire = &la;
	n = pack_patched(&req, buf, sizeof(buf), "\x1b"); /* ESC is valid UTF-8 */
	CHECK_EQ_INT(cpuhp__strfields_check(&cpuhp__request__descriptor, buf, n, why, sizeof(why)),
	             0);
	n = pack_patched(&req, buf, sizeof(buf), "\x80");
	CHECK_EQ_INT(cpuhp__strfields_check(&cpuhp__request__descriptor, buf, n, why, sizeof(why)),
	             -EINVAL);
	CHECK_EQ_STR(why, "LeaseAcquire.why is not valid UTF-8");
}

/* Strings three messages deep, beside repeated ones: Response.Event.HotplugFinished.CpuResult. */
static void strfields_nested_and_repeated_messages_are_walked(void)
{
	Cpuhp__Response resp = CPUHP__RESPONSE__INIT;
	Cpuhp__Event ev = CPUHP__EVENT__INIT;
	Cpuhp__HotplugFinished hf = CPUHP__HOTPLUG_FINISHED__INIT;
	Cpuhp__CpuResult r0 = CPUHP__CPU_RESULT__INIT, r1 = CPUHP__CPU_RESULT__INIT;
	Cpuhp__CpuResult *rs[] = {&r0, &r1};
	uint8_t buf[512], *x;
	size_t n;

	r0.cpu = 1, r0.message = "fine";
	r1.cpu = 2, r1.message = "bad X here", r1.failed_state = "st";
	hf.cpus = "1-2";
	hf.n_results = 2;
	hf.results = rs;
	ev.kind_case = CPUHP__EVENT__KIND_HOTPLUG_FINISHED;
	ev.hotplug_finished = &hf;
	resp.id = 300;
	resp.body_case = CPUHP__RESPONSE__BODY_EVENT;
	resp.event = &ev;
	n = cpuhp__response__pack(&resp, buf);
	CHECK_EQ_INT(cpuhp__strfields_check(&cpuhp__response__descriptor, buf, n, why, sizeof(why)),
	             0);
	x = memchr(buf, 'X', n);
	*x = 0;
	CHECK_EQ_INT(cpuhp__strfields_check(&cpuhp__response__descriptor, buf, n, why, sizeof(why)),
	             -EINVAL);
	CHECK_EQ_STR(why, "CpuResult.message holds a NUL byte (at byte 4)");
}

/* A newer peer's field, even a length-delimited one with any bytes, is not ours to judge. */
static void strfields_unknown_fields_and_other_wire_types_are_skipped(void)
{
	/* Request: id 9 (varint), field 900 as bytes "\0\xff", field 901 fixed64, field 902
	 * fixed32. */
	static const uint8_t buf[] = {0x08, 0x09, 0xa2, 0x38, 0x02, 0x00, 0xff, 0xa9, 0x38, 1, 2, 3,
	                              4,    5,    6,    7,    8,    0xb5, 0x38, 1,    2,    3, 4};
	Cpuhp__Request *req = cpuhp__request__unpack(NULL, sizeof(buf), buf);

	CHECK(req);
	cpuhp__request__free_unpacked(req, NULL);
	CHECK_EQ_INT(
	    cpuhp__strfields_check(&cpuhp__request__descriptor, buf, sizeof(buf), why, sizeof(why)),
	    0);
}

static void strfields_truncated_encodings_are_eproto(void)
{
	static const uint8_t cut_len[] = {0x52, 0x05, 0x0a, 0x01}; /* register_state of 5, 2 left */
	static const uint8_t cut_varint[] = {0x08, 0x80};

	CHECK_EQ_INT(cpuhp__strfields_check(&cpuhp__request__descriptor, cut_len, sizeof(cut_len),
	                                    why, sizeof(why)),
	             -EPROTO);
	CHECK_EQ_INT(cpuhp__strfields_check(&cpuhp__request__descriptor, cut_varint,
	                                    sizeof(cut_varint), why, sizeof(why)),
	             -EPROTO);
}

/* Random bytes, and valid requests with random bytes flipped: whatever decodes is walked. */
static void strfields_random_encodings_stay_in_bounds(void)
{
	uint64_t x = 0x9e3779b97f4a7c15u;
	unsigned decoded = 0, refused = 0;

	for (unsigned round = 0; round < 200000; round++) {
		uint8_t buf[64];
		size_t n;
		Cpuhp__Request *req;
		int ret;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (round & 1) {
			n = 1 + x % sizeof(buf);
			for (size_t i = 0; i < n; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				buf[i] = (uint8_t)x;
			}
		} else {
			Cpuhp__Request r = CPUHP__REQUEST__INIT;
			Cpuhp__Identify id = CPUHP__IDENTIFY__INIT;

			id.who = "some who";
			id.why = "some why";
			r.id = x >> 40;
			r.body_case = CPUHP__REQUEST__BODY_IDENTIFY;
			r.identify = &id;
			n = pack_patched(&r, buf, sizeof(buf), NULL);
			buf[x % n] = (uint8_t)(x >> 32);
		}
		req = cpuhp__request__unpack(NULL, n, buf);
		ret = cpuhp__strfields_check(&cpuhp__request__descriptor, buf, n, why, sizeof(why));
		if (!req)
			continue;
		cpuhp__request__free_unpacked(req, NULL);
		decoded++;
		/* What the decoder took, the walk follows: never EPROTO. */
		CHECK(ret == 0 || ret == -EINVAL);
		refused += ret != 0;
	}
	printf("  %u decoded, %u of them refused for a string\n", decoded, refused);
	CHECK(decoded > 1000 && refused > 100);
}

int main(void)
{
	RUN_TEST(strfields_valid_strings_pass);
	RUN_TEST(strfields_a_nul_is_named_with_its_field_and_place);
	RUN_TEST(strfields_bytes_that_are_not_utf8_are_named);
	RUN_TEST(strfields_the_first_bad_field_of_several_is_named);
	RUN_TEST(strfields_nested_and_repeated_messages_are_walked);
	RUN_TEST(strfields_unknown_fields_and_other_wire_types_are_skipped);
	RUN_TEST(strfields_truncated_encodings_are_eproto);
	RUN_TEST(strfields_random_encodings_stay_in_bounds);
	return 0;
}
