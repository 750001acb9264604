/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Listings in pages (ListLeases, ListStates): a reply holds the rows that
 * fit one frame, and a cursor that says where the next page starts.
 *
 * Each row has a key, unique in its listing, whose order is the listing's
 * order; the cursor is the last key sent.  The next page starts at the
 * first row whose key is greater, so a row that exists from the first
 * page to the last is listed exactly once, whatever came or went between
 * them.  The cursor is opaque to clients: a version byte, then the key.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_PAGE_H
#define CPUHPD_PAGE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "frame.h"

#define CPUHPD_PAGE_KEYS   4
#define CPUHPD_PAGE_CURSOR (1 + 8 * CPUHPD_PAGE_KEYS)
/* The rows' share of a frame: the reply's other fields and its envelope take < 128 bytes. */
#define CPUHPD_PAGE_BUDGET (CPUHP__FRAME_MAX - 256)

struct cpuhpd_page_row {
	uint64_t key[CPUHPD_PAGE_KEYS]; /* compared in turn */
	const ProtobufCMessage *msg;    /* what the row puts into the reply */
};

struct cpuhpd_page {
	size_t first, count; /* the page: rows[first .. first + count), in key order */
	uint32_t more;       /* rows after the page */
	uint8_t next[CPUHPD_PAGE_CURSOR];
	size_t next_len; /* 0 when nothing is after the page */
};

/* A signed key (a priority) as an unsigned one in the same order. */
static inline uint64_t cpuhpd_page_signed(int64_t v)
{
	return (uint64_t)v ^ (UINT64_C(1) << 63);
}

/**
 * cpuhpd_page_cut() - sort @rows by key and choose the page after @after.
 * @after: empty for the first page, else the cursor a page before gave
 * @limit: at most this many rows; 0 for as many as fit CPUHPD_PAGE_BUDGET
 *         (one row at least, whatever its size)
 * Return: 0; -EINVAL for a cursor this cpuhpd did not make.
 */
int cpuhpd_page_cut(struct cpuhpd_page_row *rows, size_t n, ProtobufCBinaryData after,
                    uint32_t limit, struct cpuhpd_page *out);

#endif /* CPUHPD_PAGE_H */
