/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Strings that came from a client (who, why, state names, process names)
 * or from the daemon, shown to a person or put in JSON.  A client may put
 * any bytes there: ESC sequences that recolour or retitle a terminal, CR
 * and LF that forge lines, bytes that are not UTF-8.  What is printed must
 * show them, unambiguously, and do nothing.  One encoder for every program
 * (cpuhpctl's messages and JSON; cpuhpd's log), so that a string looks the
 * same wherever it is quoted.
 *
 * Not libcpuhp API: internal names (cpuhp__), as everywhere in proto/.
 */
#ifndef CPUHP_PROTO_TEXT_H
#define CPUHP_PROTO_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* cpuhp__text_escape()'s @flags: let valid UTF-8 through (a UTF-8 terminal or log). */
#define CPUHP__TEXT_UTF8 (1u << 0)

/**
 * cpuhp__text_escape() - @src made safe to print.
 * @dst, @size: the result, always NUL-terminated when @size > 0; a result
 *              that does not fit is cut before an escape or a character,
 *              never inside one.
 * @src, @len:  the string; @len bytes are read, NULs included (shown as \x00).
 * @flags:      CPUHP__TEXT_UTF8, or 0 to escape every byte above 0x7f.
 *
 * Each byte of a C0 control (CR, LF, ESC, BEL, TAB...), DEL, a C1 control
 * (U+0080..U+009F, which some terminals obey as ESC sequences), a byte
 * that is not part of valid UTF-8 (overlong forms and surrogates
 * included), and a backslash that is followed by 'x' becomes \xHH (two
 * lower-case hex digits): the output is printable ASCII plus, with
 * CPUHP__TEXT_UTF8, printable UTF-8.  A literal "\x41" in @src shows as
 * "\x5cx41", so every \x in the output stands for one byte of @src.  This
 * is what util-linux's tables show, so a who quoted in a message reads as
 * it does in `cpuhpctl leases`.
 *
 * Return: the length of the whole result (NUL not counted), as snprintf():
 * it was cut if that is >= @size.
 */
size_t cpuhp__text_escape(char *dst, size_t size, const char *src, size_t len, unsigned flags);

/**
 * cpuhp__text_json() - @src as the inside of a JSON string (no quotes).
 * @dst, @size, @src, @len: as for cpuhp__text_escape().
 *
 * The result is valid UTF-8 and valid JSON whatever @src holds: '"' and
 * '\' are escaped; C0 controls become \b \f \n \r \t or \u00XX; DEL, C1
 * controls, U+2028 and U+2029 (line breaks to JavaScript) become \uXXXX;
 * each byte that is not part of valid UTF-8 becomes U+FFFD, the
 * replacement character, as Python's errors='replace' does.
 *
 * Return: as for cpuhp__text_escape().
 */
size_t cpuhp__text_json(char *dst, size_t size, const char *src, size_t len);

/**
 * cpuhp__text_utf8_valid() - whether @s (@len bytes) is valid UTF-8 with
 * no NUL: what a protobuf string field must hold.
 */
bool cpuhp__text_utf8_valid(const char *s, size_t len);

#endif /* CPUHP_PROTO_TEXT_H */
