/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A byte buffer that grows as it is appended to (doubling): the records of
 * the state journal as they are built and read.  Pure code.
 */
#ifndef CPUHPD_BUF_H
#define CPUHPD_BUF_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct cpuhpd_buf {
	char *p;
	size_t len, cap;
};

/* Append @len bytes of @src.  Return: 0, or -ENOMEM (@b unchanged). */
static inline int cpuhpd_buf_put(struct cpuhpd_buf *b, const void *src, size_t len)
{
	if (!len)
		return 0;
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + len)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, len);
	b->len += len;
	return 0;
}

static inline void cpuhpd_buf_free(struct cpuhpd_buf *b)
{
	free(b->p);
	*b = (struct cpuhpd_buf){0};
}

#endif /* CPUHPD_BUF_H */
