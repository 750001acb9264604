/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state memfd's layout: the state text of statetext.h, kept current by
 * appending what changed, so that a change costs what changed, not the
 * whole text (core/fdstore.c writes it; a restarted cpuhpd reads it).
 *
 *   bytes 0-127     slot 0   "cpuhpd-journal 2 GEN OFF CHECK\n", then NUL
 *   bytes 128-255   slot 1   bytes; CHECK: the hash of the line before it
 *   from OFF        the records of generation GEN, one after the other
 *
 * A record is "rec GEN LEN HASH\n" and LEN bytes of lines; HASH covers GEN
 * and those bytes.  The first record at OFF (the base) holds the whole
 * text; each next one only what changed, as sections that replace the
 * same section of the text:
 *
 *   daemon ...                       the daemon line
 *   conn ID ...  then the lease, wait, state, call, freeze and ready lines
 *                of ID:              all of connection ID
 *   gone ID                          connection ID closed: none of it
 *   reqs  then req, run, hotplug and partial lines:  the requests still to answer
 *
 * Reading takes the valid slot of the highest generation and applies its
 * records in order up to the first one that is cut, fails its hash or
 * belongs to another generation: a kill while appending.  What that record
 * said was told to nobody (the writer appends before it replies), so the
 * text before it is what the clients were told.  The text the sections
 * make (requests of connections that closed are left out) is then parsed
 * as statetext.h says; anything wrong in it refuses it whole.
 *
 * Compaction: a new base of generation GEN + 1 goes where it overlaps
 * nothing the valid slot names, then the other slot names it.  A kill
 * before that slot is whole leaves the old one valid, with its base and
 * records intact; only then is the old space given back.
 *
 * A version 1 text (statetext.h's first line, written whole at each change
 * by an older cpuhpd) is read too, so that an upgrade keeps every lease.
 *
 * Pure code (no libuv, no daemon object): tests/fuzz/fuzz-statetext.c
 * drives the reader.
 */
#ifndef CPUHPD_JOURNAL_H
#define CPUHPD_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "statetext.h"

#define CPUHPD_JOURNAL_VERSION 2
#define CPUHPD_JOURNAL_SLOT    128u /* bytes of a slot */
#define CPUHPD_JOURNAL_DATA    256u /* where records may start */
/* The largest memfd read: a base and the records since it, and the space before it. */
#define CPUHPD_JOURNAL_MAX_BYTES (3 * (uint64_t)CPUHPD_STATETEXT_MAX_BYTES)
/* Bytes of a record's first line, at most. */
#define CPUHPD_JOURNAL_REC_HEADER_MAX 80

/* Where the valid records are: a writer goes on from there. */
struct cpuhpd_journal_pos {
	uint64_t gen;      /* the valid slot's generation; 0: a version 1 text */
	unsigned slot;     /* the valid slot */
	uint64_t off, end; /* the bytes of its records, the base first */
};

/**
 * cpuhpd_journal_read() - read a state memfd's bytes, version 2 or 1.
 * @pos: where the valid records are (may be NULL).
 * @why: on failure, what was wrong, for the log.
 * Return: 0 and @out filled (free it with cpuhpd_statetext_free()), or
 * -EINVAL (@out empty), or -ENOMEM.
 */
int cpuhpd_journal_read(const char *buf, size_t len, struct cpuhpd_saved *out,
                        struct cpuhpd_journal_pos *pos, char *why, size_t whylen);

/* The first line of a record of @len bytes at @body in generation @gen: its length. */
int cpuhpd_journal_rec_header(char buf[CPUHPD_JOURNAL_REC_HEADER_MAX], uint64_t gen,
                              const char *body, size_t len);

/* Slot bytes naming generation @gen's base at @off. */
void cpuhpd_journal_slot(char slot[CPUHPD_JOURNAL_SLOT], uint64_t gen, uint64_t off);

#endif /* CPUHPD_JOURNAL_H */
