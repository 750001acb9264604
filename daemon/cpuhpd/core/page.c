/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Listings in pages; see page.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "page.h"

/* The cursor's first byte: a cursor of another layout is refused, never misread. */
#define CURSOR_VERSION 1

static int key_cmp(const uint64_t *a, const uint64_t *b)
{
	for (unsigned i = 0; i < CPUHPD_PAGE_KEYS; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct cpuhpd_page_row *x = a, *y = b;

	return key_cmp(x->key, y->key);
}

static int cursor_get(ProtobufCBinaryData c, uint64_t *key)
{
	if (c.len != CPUHPD_PAGE_CURSOR || c.data[0] != CURSOR_VERSION)
		return -EINVAL;
	for (unsigned i = 0; i < CPUHPD_PAGE_KEYS; i++) {
		key[i] = 0;
		for (unsigned b = 0; b < 8; b++)
			key[i] = key[i] << 8 | c.data[1 + 8 * i + b];
	}
	return 0;
}

static void cursor_put(const uint64_t *key, uint8_t *out)
{
	out[0] = CURSOR_VERSION;
	for (unsigned i = 0; i < CPUHPD_PAGE_KEYS; i++)
		for (unsigned b = 0; b < 8; b++)
			out[1 + 8 * i + b] = (uint8_t)(key[i] >> (56 - 8 * b));
}

/* What a row adds to its repeated field: a one-byte tag, the length, the message. */
static size_t row_size(const struct cpuhpd_page_row *r)
{
	size_t len = protobuf_c_message_get_packed_size(r->msg), size = 1 + len;

	do
		size++;
	while (len >>= 7);
	return size;
}

int cpuhpd_page_cut(struct cpuhpd_page_row *rows, size_t n, ProtobufCBinaryData after,
                    uint32_t limit, struct cpuhpd_page *out)
{
	uint64_t from[CPUHPD_PAGE_KEYS];
	size_t i = 0, used = 0;

	memset(out, 0, sizeof(*out));
	if (after.len && cursor_get(after, from))
		return -EINVAL;
	qsort(rows, n, sizeof(*rows), row_cmp);
	if (after.len)
		while (i < n && key_cmp(rows[i].key, from) <= 0)
			i++;
	out->first = i;
	for (; i < n && (!limit || out->count < limit); i++) {
		size_t size = row_size(&rows[i]);

		if (out->count && used + size > CPUHPD_PAGE_BUDGET)
			break;
		used += size;
		out->count++;
	}
	out->more = (uint32_t)(n - i);
	if (out->more) {
		cursor_put(rows[i - 1].key, out->next);
		out->next_len = CPUHPD_PAGE_CURSOR;
	}
	return 0;
}
