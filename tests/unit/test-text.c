/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto/text.c: client strings made safe.  Escaped text is printable and
 * reads back to the very bytes it came from (so it is unambiguous); JSON
 * text is valid UTF-8 with no raw control character, whatever the input.
 * Every string of up to two bytes is tried, and a million random ones.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

#include "check.h"

static const char *esc(const char *s, size_t len, unsigned flags)
{
	static char buf[4096];
	size_t n = cpuhp__text_escape(buf, sizeof(buf), s, len, flags);

	CHECK_EQ_INT(n, strlen(buf));
	return buf;
}

static const char *json(const char *s, size_t len)
{
	static char buf[4096];
	size_t n = cpuhp__text_json(buf, sizeof(buf), s, len);

	CHECK_EQ_INT(n, strlen(buf));
	return buf;
}

#define ESC(lit, flags) esc(lit, sizeof(lit) - 1, flags)
#define JSON(lit)       json(lit, sizeof(lit) - 1)
#define UTF8            CPUHP__TEXT_UTF8

static void text_printable_ascii_and_utf8_pass(void)
{
	CHECK_EQ_STR(ESC("sizing pools 'x' (A) \"q\" ~", 0), "sizing pools 'x' (A) \"q\" ~");
	CHECK_EQ_STR(ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7", UTF8),
	             "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa7");
	/* Without CPUHP__TEXT_UTF8 (a terminal that is not UTF-8), every byte above 0x7f. */
	CHECK_EQ_STR(ESC("caf\xc3\xa9", 0), "caf\\xc3\\xa9");
	/* A backslash is itself unless it would read as an escape. */
	CHECK_EQ_STR(ESC("C:\\temp \\n \\", UTF8), "C:\\temp \\n \\");
	CHECK_EQ_STR(ESC("\\x1b", UTF8), "\\x5cx1b");
}

static void text_controls_become_hex_escapes(void)
{
	CHECK_EQ_STR(ESC("\x1b[31mred\x07\r\nfake line\t\x7f", UTF8),
	             "\\x1b[31mred\\x07\\x0d\\x0afake line\\x09\\x7f");
	/* C1 controls: CSI (U+009B) is ESC [ to some terminals.  Both bytes are shown. */
	CHECK_EQ_STR(ESC("a\xc2\x9b"
	                 "31mb\xc2\x85",
	                 UTF8),
	             "a\\xc2\\x9b31mb\\xc2\\x85");
	/* U+00A0 is the first character past C1: it passes. */
	CHECK_EQ_STR(ESC("\xc2\xa0", UTF8), "\xc2\xa0");
	CHECK_EQ_STR(esc("a\0b", 3, UTF8), "a\\x00b");
}

static void text_invalid_utf8_is_shown_byte_by_byte(void)
{
	CHECK_EQ_STR(ESC("\xff\xfe", UTF8), "\\xff\\xfe");
	CHECK_EQ_STR(ESC("\x80x", UTF8), "\\x80x"); /* a stray continuation */
	CHECK_EQ_STR(ESC("\xe2\x82"
	                 "A",
	                 UTF8),
	             "\\xe2\\x82A");                                         /* cut short */
	CHECK_EQ_STR(ESC("\xc0\xaf", UTF8), "\\xc0\\xaf");                   /* overlong '/' */
	CHECK_EQ_STR(ESC("\xe0\x80\xaf", UTF8), "\\xe0\\x80\\xaf");          /* overlong */
	CHECK_EQ_STR(ESC("\xed\xa0\x80", UTF8), "\\xed\\xa0\\x80");          /* a surrogate */
	CHECK_EQ_STR(ESC("\xf4\x90\x80\x80", UTF8), "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
	CHECK_EQ_STR(ESC("\xe2\x82\xac", UTF8), "\xe2\x82\xac"); /* but the euro sign is fine */
}

static void text_a_short_buffer_cuts_between_escapes(void)
{
	char buf[8];

	/* "ab\x1b" is 6 bytes: fits; the next escape would make 10: cut before it. */
	CHECK_EQ_INT(cpuhp__text_escape(buf, sizeof(buf), "ab\x1b\x1b", 4, 0), 10);
	CHECK_EQ_STR(buf, "ab\\x1b");
	/* A UTF-8 character is not cut either. */
	CHECK_EQ_INT(cpuhp__text_escape(buf, 6, "abcd\xe2\x82\xac", 7, UTF8), 7);
	CHECK_EQ_STR(buf, "abcd");
	CHECK_EQ_INT(cpuhp__text_json(buf, 3, "\"\"", 2), 4);
	CHECK_EQ_STR(buf, "\\\"");
	CHECK_EQ_INT(cpuhp__text_escape(NULL, 0, "\n", 1, 0), 4);
}

static void text_json_escapes_controls_and_replaces_invalid_bytes(void)
{
	CHECK_EQ_STR(JSON("say \"hi\" \\ now"), "say \\\"hi\\\" \\\\ now");
	CHECK_EQ_STR(JSON("\x1b[31m\x07\r\n\t\b\f"), "\\u001b[31m\\u0007\\r\\n\\t\\b\\f");
	CHECK_EQ_STR(JSON("\x7f\xc2\x9b\xe2\x80\xa8\xe2\x80\xa9"), "\\u007f\\u009b\\u2028\\u2029");
	CHECK_EQ_STR(JSON("a\xff\xfe"
	                  "b"),
	             "a\xef\xbf\xbd\xef\xbf\xbd"
	             "b");
	CHECK_EQ_STR(JSON("\xe2\x82"
	                  "A\xc0\xaf"),
	             "\xef\xbf\xbd\xef\xbf\xbd"
	             "A\xef\xbf\xbd\xef\xbf\xbd");
	CHECK_EQ_STR(JSON("caf\xc3\xa9 \xf0\x9f\x90\xa7"), "caf\xc3\xa9 \xf0\x9f\x90\xa7");
	CHECK_EQ_STR(json("a\0b", 3), "a\\u0000b");
}

static void text_utf8_valid_is_protobufs_rule(void)
{
	CHECK(cpuhp__text_utf8_valid("", 0));
	CHECK(cpuhp__text_utf8_valid("caf\xc3\xa9 \x1b", 7));
	CHECK(!cpuhp__text_utf8_valid("\xff", 1));
	CHECK(!cpuhp__text_utf8_valid("\xed\xa0\x80", 3));
	CHECK(!cpuhp__text_utf8_valid("a\0b", 3));
	CHECK(!cpuhp__text_utf8_valid("\xe2\x82", 2));
}

/* --- properties, on every short string and many random ones ------------------- */

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Escaped text is printable, and reads back (each \xHH one byte) to @s. */
static void check_escape(const unsigned char *s, size_t len, unsigned flags)
{
	char out[256], back[64];
	size_t n = cpuhp__text_escape(out, sizeof(out), (const char *)s, len, flags), k = 0;

	CHECK(n < sizeof(out));
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)out[i];

		CHECK(c >= 0x20 && c != 0x7f);
		CHECK(c < 0x80 || (flags & UTF8));
		if (c == '\\' && out[i + 1] == 'x') {
			CHECK(hexval(out[i + 2]) >= 0 && hexval(out[i + 3]) >= 0);
			back[k++] = (char)(hexval(out[i + 2]) * 16 + hexval(out[i + 3]));
			i += 3;
		} else {
			back[k++] = (char)c;
		}
	}
	CHECK_EQ_INT(k, len);
	CHECK(!memcmp(back, s, len));
	/* What it let through is valid UTF-8 without C1 controls. */
	CHECK(cpuhp__text_utf8_valid(out, n));
	for (size_t i = 0; i + 1 < n; i++)
		CHECK(!((unsigned char)out[i] == 0xc2 && (unsigned char)out[i + 1] < 0xa0));
}

/* JSON text is valid UTF-8 with no raw control character, and keeps valid input's characters. */
static void check_json(const unsigned char *s, size_t len)
{
	char out[256];
	size_t n = cpuhp__text_json(out, sizeof(out), (const char *)s, len);

	CHECK(n < sizeof(out));
	CHECK(cpuhp__text_utf8_valid(out, n));
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)out[i];

		CHECK(c >= 0x20 && c != 0x7f);
		CHECK(!(c == 0xc2 && (unsigned char)out[i + 1] < 0xa0));
		if (c == '"')
			CHECK(i > 0 && out[i - 1] == '\\');
	}
	if (cpuhp__text_utf8_valid((const char *)s, len))
		CHECK(!strstr(out, "\xef\xbf\xbd") || memmem(s, len, "\xef\xbf\xbd", 3));
}

static void text_every_string_of_two_bytes_and_a_million_random_ones(void)
{
	unsigned char s[16];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (unsigned v = 0; v < 0x10000; v++) {
		s[0] = (unsigned char)v, s[1] = (unsigned char)(v >> 8);
		for (size_t len = 1; len <= 2; len++) {
			check_escape(s, len, 0);
			check_escape(s, len, UTF8);
			check_json(s, len);
		}
	}
	for (unsigned round = 0; round < 1000000; round++) {
		size_t len = 1 + round % sizeof(s);

		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
			/* Mostly bytes that start or continue UTF-8, so that valid sequences occur.
			 */
			s[i] = (unsigned char)(x % 4 ? 0x80 + (x >> 8) % 0x78 : x >> 8);
		}
		check_escape(s, len, round & 1 ? UTF8 : 0);
		check_json(s, len);
	}
}

int main(void)
{
	RUN_TEST(text_printable_ascii_and_utf8_pass);
	RUN_TEST(text_controls_become_hex_escapes);
	RUN_TEST(text_invalid_utf8_is_shown_byte_by_byte);
	RUN_TEST(text_a_short_buffer_cuts_between_escapes);
	RUN_TEST(text_json_escapes_controls_and_replaces_invalid_bytes);
	RUN_TEST(text_utf8_valid_is_protobufs_rule);
	RUN_TEST(text_every_string_of_two_bytes_and_a_million_random_ones);
	return 0;
}
