/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state memfd's layout: see journal.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "journal.h"

/* The record hash: the text's, with the generation folded in. */
static uint64_t rec_hash(uint64_t gen, const char *body, size_t len)
{
	uint64_t h = cpuhpd_statetext_hash(body, len) ^ gen;

	h *= 0x100000001b3ull;
	return h ^ h >> 29;
}

int cpuhpd_journal_rec_header(char buf[CPUHPD_JOURNAL_REC_HEADER_MAX], uint64_t gen,
                              const char *body, size_t len)
{
	return snprintf(buf, CPUHPD_JOURNAL_REC_HEADER_MAX, "rec %" PRIu64 " %zu %016" PRIx64 "\n",
	                gen, len, rec_hash(gen, body, len));
}

void cpuhpd_journal_slot(char slot[CPUHPD_JOURNAL_SLOT], uint64_t gen, uint64_t off)
{
	int n;

	memset(slot, 0, CPUHPD_JOURNAL_SLOT);
	n = snprintf(slot, CPUHPD_JOURNAL_SLOT, "cpuhpd-journal %d %" PRIu64 " %" PRIu64,
	             CPUHPD_JOURNAL_VERSION, gen, off);
	snprintf(slot + n, CPUHPD_JOURNAL_SLOT - (size_t)n, " %016" PRIx64 "\n",
	         cpuhpd_statetext_hash(slot, (size_t)n));
}

/* ------------------------------------------------------------- the sections */

struct sect {
	unsigned id;
	struct cpuhpd_buf b;
};

struct text {
	struct sect daemon, reqs;
	struct sect *conns; /* ascending ids */
	unsigned n, cap;
	bool in_reqs;
	struct sect *cur; /* the conn whose lines follow */
};

/* The index of conn @id, or where it would go (*@found false). */
static unsigned conn_find(const struct text *t, unsigned id, bool *found)
{
	unsigned lo = 0, hi = t->n;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (t->conns[mid].id == id) {
			*found = true;
			return mid;
		}
		if (t->conns[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

/* Conn @id's section, emptied (made if new).  NULL: ENOMEM. */
static struct sect *conn_reset(struct text *t, unsigned id)
{
	bool found;
	unsigned i = conn_find(t, id, &found);

	if (!found) {
		if (t->n == t->cap) {
			unsigned cap = t->cap ? 2 * t->cap : 16;
			struct sect *c = realloc(t->conns, cap * sizeof(*c));

			if (!c)
				return NULL;
			t->conns = c;
			t->cap = cap;
		}
		memmove(&t->conns[i + 1], &t->conns[i], (t->n - i) * sizeof(*t->conns));
		t->conns[i] = (struct sect){.id = id};
		t->n++;
	}
	t->conns[i].b.len = 0;
	return &t->conns[i];
}

static void conn_drop(struct text *t, unsigned id)
{
	bool found;
	unsigned i = conn_find(t, id, &found);

	if (!found)
		return;
	cpuhpd_buf_free(&t->conns[i].b);
	memmove(&t->conns[i], &t->conns[i + 1], (t->n - i - 1) * sizeof(*t->conns));
	t->n--;
}

static void text_free(struct text *t)
{
	for (unsigned i = 0; i < t->n; i++)
		cpuhpd_buf_free(&t->conns[i].b);
	free(t->conns);
	cpuhpd_buf_free(&t->daemon.b);
	cpuhpd_buf_free(&t->reqs.b);
}

/* The second field of @line (up to @end) as a conn id; Return: 0, or -EINVAL. */
static int field_id(const char *line, const char *end, unsigned *id)
{
	const char *p = memchr(line, ' ', (size_t)(end - line));
	uint64_t v = 0;

	if (!p || ++p == end || *p < '0' || *p > '9')
		return -EINVAL;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > UINT32_MAX)
			return -EINVAL;
	}
	if (p < end && *p != ' ')
		return -EINVAL;
	*id = (unsigned)v;
	return 0;
}

static bool is(const char *line, size_t wlen, const char *word)
{
	return strlen(word) == wlen && !memcmp(line, word, wlen);
}

/* One line of a record, @len bytes with its newline: into its section. */
static int apply_line(struct text *t, const char *line, size_t len, char *why, size_t whylen)
{
	const char *end = line + len - 1; /* the newline */
	size_t wlen = strcspn(line, " \n");
	unsigned id;

	if (wlen > (size_t)(end - line))
		wlen = (size_t)(end - line);
	if (is(line, wlen, "daemon")) {
		t->cur = NULL;
		t->in_reqs = false;
		t->daemon.b.len = 0;
		return cpuhpd_buf_put(&t->daemon.b, line, len);
	}
	if (is(line, wlen, "reqs") && wlen == (size_t)(end - line)) {
		t->cur = NULL;
		t->in_reqs = true;
		t->reqs.b.len = 0;
		return 0;
	}
	if (is(line, wlen, "req") || is(line, wlen, "run") || is(line, wlen, "partial") ||
	    is(line, wlen, "hotplug")) {
		if (!t->in_reqs) {
			snprintf(why, whylen, "a request outside the 'reqs' section");
			return -EINVAL;
		}
		return cpuhpd_buf_put(&t->reqs.b, line, len);
	}
	if (field_id(line, end, &id)) {
		snprintf(why, whylen, "a line that names no conn: '%.*s'",
		         (int)(wlen < 20 ? wlen : 20), line);
		return -EINVAL;
	}
	if (is(line, wlen, "conn")) {
		t->in_reqs = false;
		t->cur = conn_reset(t, id);
		return t->cur ? cpuhpd_buf_put(&t->cur->b, line, len) : -ENOMEM;
	}
	if (is(line, wlen, "gone")) {
		t->cur = NULL;
		t->in_reqs = false;
		conn_drop(t, id);
		return 0;
	}
	if (is(line, wlen, "lease") || is(line, wlen, "wait") || is(line, wlen, "state") ||
	    is(line, wlen, "freeze") || is(line, wlen, "call") || is(line, wlen, "ready") ||
	    is(line, wlen, "batch") || is(line, wlen, "inst")) {
		if (!t->cur || t->cur->id != id) {
			snprintf(why, whylen, "a record of conn %u outside its section", id);
			return -EINVAL;
		}
		return cpuhpd_buf_put(&t->cur->b, line, len);
	}
	snprintf(why, whylen, "an unknown line '%.*s'", (int)(wlen < 20 ? wlen : 20), line);
	return -EINVAL;
}

static int apply(struct text *t, const char *body, size_t len, char *why, size_t whylen)
{
	const char *p = body, *end = body + len;

	t->cur = NULL;
	t->in_reqs = false;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		int err;

		if (!nl || nl == p) {
			snprintf(why, whylen, nl ? "an empty line" : "a line without its newline");
			return -EINVAL;
		}
		err = apply_line(t, p, (size_t)(nl + 1 - p), why, whylen);
		if (err)
			return err;
		p = nl + 1;
	}
	return 0;
}

/* The text the sections make; requests of connections that closed are left out. */
static int assemble(struct text *t, struct cpuhpd_buf *out)
{
	const char *p = t->reqs.b.p, *end = p ? p + t->reqs.b.len : NULL;
	int err = cpuhpd_buf_put(out, t->daemon.b.p, t->daemon.b.len);

	for (unsigned i = 0; i < t->n && !err; i++)
		err = cpuhpd_buf_put(out, t->conns[i].b.p, t->conns[i].b.len);
	while (!err && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		unsigned id;
		bool found = true;

		if (!field_id(p, nl, &id))
			conn_find(t, id, &found);
		if (found)
			err = cpuhpd_buf_put(out, p, (size_t)(nl + 1 - p));
		p = nl + 1;
	}
	return err ? err : cpuhpd_buf_put(out, "end\n", 4);
}

/* ------------------------------------------------------------- reading */

/* Slot @i: 0 and its generation and offset, or -EINVAL. */
static int slot_read(const char *buf, size_t len, unsigned i, uint64_t *gen, uint64_t *off)
{
	const char *s = buf + i * CPUHPD_JOURNAL_SLOT, *nl, *sp;
	char line[CPUHPD_JOURNAL_SLOT];
	unsigned version;
	uint64_t check;
	int n = -1;

	nl = memchr(s, '\n', CPUHPD_JOURNAL_SLOT);
	if (!nl)
		return -EINVAL;
	for (const char *z = nl + 1; z < s + CPUHPD_JOURNAL_SLOT; z++)
		if (*z)
			return -EINVAL;
	memcpy(line, s, (size_t)(nl - s));
	line[nl - s] = '\0';
	sp = strrchr(line, ' ');
	if (!sp ||
	    sscanf(line, "cpuhpd-journal %u %" SCNu64 " %" SCNu64 " %16" SCNx64 "%n", &version, gen,
	           off, &check, &n) != 4 ||
	    n != nl - s || version != CPUHPD_JOURNAL_VERSION ||
	    cpuhpd_statetext_hash(line, (size_t)(sp - line)) != check || !*gen ||
	    *off < CPUHPD_JOURNAL_DATA || *off >= len)
		return -EINVAL;
	return 0;
}

/* The record at @off: its body and the offset after it, or -EINVAL (cut, or not of @gen). */
static int rec_read(const char *buf, size_t len, uint64_t off, uint64_t gen, const char **body,
                    size_t *blen, uint64_t *next)
{
	char line[CPUHPD_JOURNAL_REC_HEADER_MAX];
	const char *nl;
	uint64_t g, hash;
	size_t n;
	int k = -1;

	if (off >= len)
		return -EINVAL;
	nl = memchr(buf + off, '\n',
	            len - off < CPUHPD_JOURNAL_REC_HEADER_MAX ? len - off
	                                                      : CPUHPD_JOURNAL_REC_HEADER_MAX - 1);
	if (!nl)
		return -EINVAL;
	memcpy(line, buf + off, (size_t)(nl - (buf + off)));
	line[nl - (buf + off)] = '\0';
	if (sscanf(line, "rec %" SCNu64 " %zu %16" SCNx64 "%n", &g, &n, &hash, &k) != 3 ||
	    k != nl - (buf + off) || g != gen || !n || n > CPUHPD_STATETEXT_MAX_BYTES ||
	    n > len - (size_t)(nl + 1 - buf) || rec_hash(gen, nl + 1, n) != hash)
		return -EINVAL;
	*body = nl + 1;
	*blen = n;
	*next = (uint64_t)(nl + 1 - buf) + n;
	return 0;
}

/* Generation @gen from @off: its records into @t, *@end after the last whole one. */
static int replay(const char *buf, size_t len, uint64_t gen, uint64_t off, struct text *t,
                  uint64_t *end, char *why, size_t whylen)
{
	const char *body;
	size_t blen;
	uint64_t next;
	int err;

	if (rec_read(buf, len, off, gen, &body, &blen, &next)) {
		snprintf(why, whylen, "the base record of generation %" PRIu64 " is cut", gen);
		return -EINVAL;
	}
	do {
		err = apply(t, body, blen, why, whylen);
		if (err)
			return err;
		off = next;
	} while (!rec_read(buf, len, off, gen, &body, &blen, &next));
	*end = off;
	return 0;
}

int cpuhpd_journal_read(const char *buf, size_t len, struct cpuhpd_saved *out,
                        struct cpuhpd_journal_pos *pos, char *why, size_t whylen)
{
	static const char v1[] = "cpuhpd-state ";
	uint64_t gen[2] = {0, 0}, off[2], end = 0;
	char scratch[200];
	struct text t = {0};
	struct cpuhpd_buf whole = {0};
	unsigned first;
	int err;

	if (!why || !whylen) {
		why = scratch;
		whylen = sizeof(scratch);
	}
	memset(out, 0, sizeof(*out));
	why[0] = '\0';
	if (len >= sizeof(v1) - 1 && !memcmp(buf, v1, sizeof(v1) - 1)) {
		err = cpuhpd_statetext_parse(buf, len, out, why, whylen);
		if (!err && pos)
			*pos = (struct cpuhpd_journal_pos){.off = 0, .end = len};
		return err;
	}
	if (len < CPUHPD_JOURNAL_DATA || len > CPUHPD_JOURNAL_MAX_BYTES) {
		snprintf(why, whylen, "%zu bytes: not a cpuhpd state journal", len);
		return -EINVAL;
	}
	for (unsigned i = 0; i < 2; i++)
		if (slot_read(buf, len, i, &gen[i], &off[i]))
			gen[i] = 0;
	if (!gen[0] && !gen[1]) {
		snprintf(why, whylen,
		         "no valid slot: not a cpuhpd state journal, or written in part");
		return -EINVAL;
	}
	/* The newest first; the other if the newest's base is not whole. */
	first = gen[1] > gen[0];
	err = replay(buf, len, gen[first], off[first], &t, &end, why, whylen);
	if (err == -EINVAL && gen[!first]) {
		text_free(&t);
		t = (struct text){0};
		first = !first;
		err = replay(buf, len, gen[first], off[first], &t, &end, why, whylen);
	}
	if (!err)
		err = assemble(&t, &whole);
	text_free(&t);
	if (err == -ENOMEM)
		snprintf(why, whylen, "out of memory");
	if (!err)
		err = cpuhpd_statetext_parse_body(whole.p, whole.len, out, why, whylen);
	cpuhpd_buf_free(&whole);
	if (!err && pos)
		*pos = (struct cpuhpd_journal_pos){
		    .gen = gen[first], .slot = first, .off = off[first], .end = end};
	return err;
}
