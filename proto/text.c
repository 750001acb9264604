/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Client strings made safe for a terminal, a log line or JSON (text.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

/*
 * The output buffer, written as snprintf() writes: all of a piece or none
 * of it, so that an escape or a character is never cut in half, and
 * nothing after the first piece that did not fit.
 */
struct sink {
	char *dst;
	size_t size;
	size_t len;     /* of the whole result */
	size_t written; /* in @dst */
	bool cut;
};

static void put(struct sink *s, const char *p, size_t n)
{
	if (!s->cut && s->written + n < s->size) {
		memcpy(s->dst + s->written, p, n);
		s->written += n;
	} else {
		s->cut = true;
	}
	s->len += n;
}

static size_t finish(struct sink *s)
{
	if (s->size)
		s->dst[s->written] = '\0';
	return s->len;
}

/*
 * The valid UTF-8 character at @s: its length (1 to 4) and code point;
 * 0 if @s does not start one (a stray continuation byte, a truncated
 * sequence, an overlong form, a surrogate, beyond U+10FFFF).
 */
static size_t utf8_char(const unsigned char *s, size_t len, uint32_t *cp)
{
	uint32_t c, min;
	size_t n;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2, c = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3, c = s[0] & 0x0f, min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4, c = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

size_t cpuhp__text_escape(char *dst, size_t size, const char *src, size_t len, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)src;
	struct sink s = {.dst = dst, .size = size};

	for (size_t i = 0; i < len;) {
		uint32_t cp = 0;
		size_t n = utf8_char(p + i, len - i, &cp);
		bool ambiguous = cp == '\\' && i + 1 < len && p[i + 1] == 'x';

		if (n && !is_control(cp) && !ambiguous && (n == 1 || (flags & CPUHP__TEXT_UTF8))) {
			put(&s, (const char *)p + i, n);
			i += n;
			continue;
		}
		/* Every byte of it, so that each \x stands for one byte of @src. */
		for (size_t k = 0; k < (n ? n : 1); k++) {
			char hex[5];

			snprintf(hex, sizeof(hex), "\\x%02x", p[i + k]);
			put(&s, hex, 4);
		}
		i += n ? n : 1;
	}
	return finish(&s);
}

size_t cpuhp__text_json(char *dst, size_t size, const char *src, size_t len)
{
	static const char shorts[] = "\b\f\n\r\t";
	const unsigned char *p = (const unsigned char *)src;
	struct sink s = {.dst = dst, .size = size};

	for (size_t i = 0; i < len;) {
		uint32_t cp = 0;
		size_t n = utf8_char(p + i, len - i, &cp);
		const char *short_esc;
		char esc[7];

		if (!n) {
			put(&s, "\xef\xbf\xbd", 3); /* U+FFFD for one byte that is no UTF-8 */
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\') {
			esc[0] = '\\', esc[1] = (char)cp;
			put(&s, esc, 2);
		} else if (cp && cp < 0x20 && (short_esc = strchr(shorts, (int)cp))) {
			/* JSON's short escapes: the letter at the same place in "bfnrt". */
			esc[0] = '\\';
			esc[1] = "bfnrt"[short_esc - shorts];
			put(&s, esc, 2);
		} else if (is_control(cp) || cp == 0x2028 || cp == 0x2029) {
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
			put(&s, esc, 6);
		} else {
			put(&s, (const char *)p + i, n);
		}
		i += n;
	}
	return finish(&s);
}

bool cpuhp__text_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = utf8_char(p + i, len - i, &cp);

		if (!n || !cp)
			return false;
		i += n;
	}
	return true;
}
