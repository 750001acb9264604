/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* String fields checked on the wire (strfields.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "strfields.h"
#include "text.h"

/* Deeper than any message of cpuhp.proto (Response.Event.HotplugFinished.CpuResult.StateRun). */
#define MAX_DEPTH 16

/* A varint at *@p (before @end): its value, *@p moved past it.  Return: 0 or -EPROTO. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EPROTO;
}

static int check_string(const ProtobufCMessageDescriptor *desc, const ProtobufCFieldDescriptor *f,
                        const uint8_t *s, size_t n, char *why, size_t size)
{
	const uint8_t *nul = memchr(s, 0, n);

	if (nul)
		snprintf(why, size, "%s.%s holds a NUL byte (at byte %zu)", desc->short_name,
		         f->name, (size_t)(nul - s));
	else if (!cpuhp__text_utf8_valid((const char *)s, n))
		snprintf(why, size, "%s.%s is not valid UTF-8", desc->short_name, f->name);
	else
		return 0;
	return -EINVAL;
}

static int walk(const ProtobufCMessageDescriptor *desc, const uint8_t *p, const uint8_t *end,
                unsigned depth, char *why, size_t size)
{
	if (depth > MAX_DEPTH)
		return -EPROTO;
	while (p < end) {
		const ProtobufCFieldDescriptor *f;
		uint64_t key, n;
		int ret;

		if (varint(&p, end, &key))
			return -EPROTO;
		switch (key & 7) {
		case 0: /* varint */
			if (varint(&p, end, &n))
				return -EPROTO;
			continue;
		case 1: /* 64-bit */
			n = 8;
			break;
		case 5: /* 32-bit */
			n = 4;
			break;
		case 2: /* length-delimited: strings, bytes, messages, packed scalars */
			if (varint(&p, end, &n) || n > (uint64_t)(end - p))
				return -EPROTO;
			f = key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(
			                                 desc, (unsigned)(key >> 3))
			                           : NULL;
			if (f && f->type == PROTOBUF_C_TYPE_STRING)
				ret = check_string(desc, f, p, (size_t)n, why, size);
			else if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
				ret = walk(f->descriptor, p, p + n, depth + 1, why, size);
			else
				ret = 0;
			if (ret)
				return ret;
			break;
		default: /* groups: protobuf-c refuses them in proto3 messages */
			return -EPROTO;
		}
		if (n > (uint64_t)(end - p))
			return -EPROTO;
		p += n;
	}
	return 0;
}

int cpuhp__strfields_check(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                           char *why, size_t size)
{
	int ret = walk(desc, buf, buf + len, 0, why, size);

	if (ret == -EPROTO)
		snprintf(why, size, "%s: an encoding too deep or cut short", desc->short_name);
	else if (!ret && size)
		why[0] = '\0';
	return ret;
}
