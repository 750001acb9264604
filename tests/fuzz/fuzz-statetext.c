/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: what a restarted cpuhpd reads from the fd store, the
 * state text's parser (daemon/cpuhpd/base/statetext.h) and the journal it
 * is kept in (daemon/cpuhpd/base/journal.h).  The first byte picks the
 * mode:
 *   0: the rest is a whole version 1 text, header and hash included;
 *   1: the rest is a body, sealed here with its length and hash, so that
 *      the fuzzer reaches the line grammar;
 *   2: the rest is a memfd's bytes for the journal reader;
 *   3: the rest is record bodies separated by 0xff bytes, made here into a
 *      journal of one generation (the next byte picks where it is cut).
 * Properties: a refused text leaves the result empty and says why; an
 * accepted one, written back in the same format (a writer of the fuzzer's
 * own, records in canonical order), parses to the same thing again, and so
 * does the same written as a journal's base; a journal cut anywhere reads
 * as the records whole before the cut (a torn tail is dropped, never
 * misread), or is refused if its base is cut.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "statetext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzzcheck.h"

static void w_str(FILE *f, const char *s)
{
	cpuhpd_statetext_str(f, s);
}

/*
 * @s in the canonical order: each conn's line and its records, then the
 * requests.  @journal: as a journal's base (a "reqs" line before the
 * requests, no "end"), else a whole sealed text.
 */
static char *write_out(const struct cpuhpd_saved *s, size_t *len, bool journal)
{
	char *body = NULL, *text;
	size_t blen = 0;
	FILE *f = open_memstream(&body, &blen);

	FUZZ_CHECK(f);
	fprintf(f, "daemon %d %u %llu %llu %llu %llu %llu\n", (int)s->pid, s->next_conn_id,
	        (unsigned long long)s->next_lease_id, (unsigned long long)s->next_state_id,
	        (unsigned long long)s->next_freeze_id, (unsigned long long)s->next_call_id,
	        (unsigned long long)s->next_hotplug_seq);
	for (unsigned i = 0; i < s->nconns; i++) {
		const struct cpuhpd_saved_conn *c = &s->conns[i];

		fprintf(f, "conn %u %d %u %u %d %d", c->id, (int)c->pid, c->uid, c->gid, c->admin,
		        c->hello);
		w_str(f, c->comm);
		w_str(f, c->who);
		w_str(f, c->why);
		fprintf(f, " %u %llu\n", c->fast_slots, (unsigned long long)c->watch_id);
		for (unsigned k = 0; k < c->nleases; k++) {
			fprintf(f, "lease %u %llu %llu %d", c->id,
			        (unsigned long long)c->leases[k].id,
			        (unsigned long long)c->leases[k].since, c->leases[k].bypassed);
			w_str(f, c->leases[k].who);
			w_str(f, c->leases[k].why);
			fprintf(f, " %u\n", c->leases[k].delay_ms);
		}
		for (unsigned k = 0; k < c->nwaits; k++) {
			fprintf(f, "wait %u %llu %llu %u", c->id,
			        (unsigned long long)c->waits[k].req_id,
			        (unsigned long long)c->waits[k].deadline, c->waits[k].timeout_ms);
			w_str(f, c->waits[k].who);
			w_str(f, c->waits[k].why);
			fprintf(f, " %u\n", c->waits[k].delay_ms);
		}
		if (c->state_batch)
			fprintf(f, "batch %u\n", c->id);
		for (unsigned k = 0; k < c->nstates; k++) {
			if (c->states[k].parent) {
				fprintf(f, "inst %u %llu %llu", c->id,
				        (unsigned long long)c->states[k].parent,
				        (unsigned long long)c->states[k].id);
				w_str(f, c->states[k].name);
				w_str(f, c->states[k].cpus);
			} else {
				fprintf(f, "state %u %llu %llu %d %u", c->id,
				        (unsigned long long)c->states[k].id,
				        (unsigned long long)c->states[k].reg_req_id,
				        (int)c->states[k].priority, c->states[k].deadline_ms);
				w_str(f, c->states[k].name);
				w_str(f, c->states[k].cpus);
				fprintf(f, " %u", c->states[k].kind);
			}
			fputc('\n', f);
			for (unsigned u = 0; u < c->states[k].nunsure; u++)
				fprintf(f, "call %u %llu %u\n", c->id,
				        (unsigned long long)c->states[k].id,
				        c->states[k].unsure[u]);
		}
		for (unsigned k = 0; k < c->nfreezes; k++) {
			fprintf(f, "freeze %u %llu %llu %llu %d", c->id,
			        (unsigned long long)c->freezes[k].id,
			        (unsigned long long)c->freezes[k].req_id,
			        (unsigned long long)c->freezes[k].since, c->freezes[k].granted);
			w_str(f, c->freezes[k].who);
			w_str(f, c->freezes[k].why);
			fputc('\n', f);
		}
		fprintf(f, "ready %u %u %llu %u\n", c->id, c->notices_to,
		        (unsigned long long)c->told_seq, c->fast_delay_ms);
	}
	if (journal)
		fputs("reqs\n", f);
	for (unsigned i = 0; i < s->nhotplugs; i++)
		fprintf(f, "hotplug %u %llu %llu %llu\n", s->hotplugs[i].conn,
		        (unsigned long long)s->hotplugs[i].req_id,
		        (unsigned long long)s->hotplugs[i].seq,
		        (unsigned long long)s->hotplugs[i].noticed_at);
	for (unsigned i = 0; i < s->nreqs; i++) {
		fprintf(f, "%s %u", s->reqs[i].running ? "run" : "req", s->reqs[i].conn);
		cpuhpd_statetext_bytes(f, s->reqs[i].req.data, s->reqs[i].req.len);
		fputc('\n', f);
	}
	for (unsigned i = 0; i < s->nconns; i++) {
		if (!s->conns[i].partial.len)
			continue;
		fprintf(f, "partial %u", s->conns[i].id);
		cpuhpd_statetext_bytes(f, s->conns[i].partial.data, s->conns[i].partial.len);
		fputc('\n', f);
	}
	if (!journal)
		fputs("end\n", f);
	FUZZ_CHECK(fclose(f) == 0);
	if (journal) {
		*len = blen;
		return body;
	}
	text = cpuhpd_statetext_seal(body, blen, len);
	FUZZ_CHECK(text);
	free(body);
	return text;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static bool same_blob(const struct cpuhpd_saved_blob *a, const struct cpuhpd_saved_blob *b)
{
	return a->len == b->len && (!a->len || !memcmp(a->data, b->data, a->len));
}

static void check_same(const struct cpuhpd_saved *a, const struct cpuhpd_saved *b)
{
	FUZZ_CHECK(a->pid == b->pid && a->next_conn_id == b->next_conn_id &&
	           a->next_lease_id == b->next_lease_id && a->next_state_id == b->next_state_id &&
	           a->next_freeze_id == b->next_freeze_id && a->next_call_id == b->next_call_id &&
	           a->next_hotplug_seq == b->next_hotplug_seq);
	FUZZ_CHECK(a->nconns == b->nconns && a->nreqs == b->nreqs && a->nhotplugs == b->nhotplugs);
	for (unsigned i = 0; i < a->nhotplugs; i++)
		FUZZ_CHECK(a->hotplugs[i].conn == b->hotplugs[i].conn &&
		           a->hotplugs[i].req_id == b->hotplugs[i].req_id &&
		           a->hotplugs[i].seq == b->hotplugs[i].seq &&
		           a->hotplugs[i].noticed_at == b->hotplugs[i].noticed_at);
	for (unsigned i = 0; i < a->nreqs; i++)
		FUZZ_CHECK(a->reqs[i].conn == b->reqs[i].conn &&
		           a->reqs[i].running == b->reqs[i].running &&
		           same_blob(&a->reqs[i].req, &b->reqs[i].req));
	for (unsigned i = 0; i < a->nconns; i++) {
		const struct cpuhpd_saved_conn *x = &a->conns[i], *y = &b->conns[i];

		FUZZ_CHECK(x->id == y->id && x->pid == y->pid && x->uid == y->uid &&
		           x->gid == y->gid && x->admin == y->admin && x->hello == y->hello &&
		           x->fast_slots == y->fast_slots && x->watch_id == y->watch_id &&
		           x->notices_to == y->notices_to && x->told_seq == y->told_seq &&
		           x->fast_delay_ms == y->fast_delay_ms);
		FUZZ_CHECK(same_str(x->comm, y->comm) && same_str(x->who, y->who) &&
		           same_str(x->why, y->why) && same_blob(&x->partial, &y->partial));
		FUZZ_CHECK(x->nleases == y->nleases && x->nwaits == y->nwaits &&
		           x->nstates == y->nstates && x->nfreezes == y->nfreezes &&
		           x->state_batch == y->state_batch);
		for (unsigned k = 0; k < x->nleases; k++)
			FUZZ_CHECK(x->leases[k].id == y->leases[k].id &&
			           x->leases[k].since == y->leases[k].since &&
			           x->leases[k].bypassed == y->leases[k].bypassed &&
			           x->leases[k].delay_ms == y->leases[k].delay_ms &&
			           same_str(x->leases[k].who, y->leases[k].who) &&
			           same_str(x->leases[k].why, y->leases[k].why));
		for (unsigned k = 0; k < x->nwaits; k++)
			FUZZ_CHECK(x->waits[k].req_id == y->waits[k].req_id &&
			           x->waits[k].deadline == y->waits[k].deadline &&
			           x->waits[k].timeout_ms == y->waits[k].timeout_ms &&
			           x->waits[k].delay_ms == y->waits[k].delay_ms &&
			           same_str(x->waits[k].who, y->waits[k].who) &&
			           same_str(x->waits[k].why, y->waits[k].why));
		for (unsigned k = 0; k < x->nstates; k++)
			FUZZ_CHECK(x->states[k].id == y->states[k].id &&
			           x->states[k].parent == y->states[k].parent &&
			           x->states[k].kind == y->states[k].kind &&
			           x->states[k].reg_req_id == y->states[k].reg_req_id &&
			           x->states[k].priority == y->states[k].priority &&
			           x->states[k].deadline_ms == y->states[k].deadline_ms &&
			           x->states[k].nunsure == y->states[k].nunsure &&
			           (!x->states[k].nunsure ||
			            !memcmp(x->states[k].unsure, y->states[k].unsure,
			                    x->states[k].nunsure * sizeof(unsigned))) &&
			           same_str(x->states[k].name, y->states[k].name) &&
			           same_str(x->states[k].cpus, y->states[k].cpus));
		for (unsigned k = 0; k < x->nfreezes; k++)
			FUZZ_CHECK(x->freezes[k].id == y->freezes[k].id &&
			           x->freezes[k].req_id == y->freezes[k].req_id &&
			           x->freezes[k].since == y->freezes[k].since &&
			           x->freezes[k].granted == y->freezes[k].granted &&
			           same_str(x->freezes[k].who, y->freezes[k].who) &&
			           same_str(x->freezes[k].why, y->freezes[k].why));
	}
}

/* A journal of generation 1: slot 0 naming the first record at the data start. */
static char *journal(const char *const *bodies, const size_t *lens, unsigned n, size_t *len,
                     size_t *ends)
{
	size_t cap = CPUHPD_JOURNAL_DATA, off = CPUHPD_JOURNAL_DATA;
	char *img;

	for (unsigned i = 0; i < n; i++)
		cap += CPUHPD_JOURNAL_REC_HEADER_MAX + lens[i];
	img = calloc(1, cap);
	FUZZ_CHECK(img);
	cpuhpd_journal_slot(img, 1, CPUHPD_JOURNAL_DATA);
	for (unsigned i = 0; i < n; i++) {
		char hdr[CPUHPD_JOURNAL_REC_HEADER_MAX];
		int h = cpuhpd_journal_rec_header(hdr, 1, bodies[i], lens[i]);

		memcpy(img + off, hdr, (size_t)h);
		memcpy(img + off + h, bodies[i], lens[i]);
		off += (size_t)h + lens[i];
		if (ends)
			ends[i] = off;
	}
	*len = off;
	return img;
}

/* A text read back as a journal's base reads the same. */
static void check_as_journal(const struct cpuhpd_saved *s)
{
	struct cpuhpd_saved again;
	char *img, why[200];
	size_t ilen, blen;
	const char *bodies[1];
	char *body = write_out(s, &blen, true);

	bodies[0] = body;
	img = journal(bodies, &blen, 1, &ilen, NULL);
	FUZZ_CHECK(cpuhpd_journal_read(img, ilen, &again, NULL, why, sizeof(why)) == 0);
	check_same(s, &again);
	cpuhpd_statetext_free(&again);
	free(img);
	free(body);
}

/* Mode 3: records from the input, the journal cut where the input says. */
static void cut_journal(const uint8_t *data, size_t size)
{
	const char *bodies[64];
	size_t lens[64], ends[64], len, cut;
	struct cpuhpd_saved whole, part;
	char why[200], *img, *copy;
	unsigned n = 0, keep = 0;
	int err, err2;

	if (size < 2)
		return;
	cut = data[0];
	data++;
	size--;
	while (size && n < 64) {
		const uint8_t *sep = memchr(data, 0xff, size);
		size_t l = sep ? (size_t)(sep - data) : size;

		bodies[n] = (const char *)data;
		lens[n++] = l;
		data += l + (sep != NULL);
		size -= l + (sep != NULL);
	}
	img = journal(bodies, lens, n, &len, ends);
	/* Anywhere from the data start to the end, scaled from one byte. */
	cut = CPUHPD_JOURNAL_DATA + (len - CPUHPD_JOURNAL_DATA) * cut / 255;
	while (keep < n && ends[keep] <= cut)
		keep++;
	/* The records whole before the cut, alone; then the cut image. */
	{
		size_t klen;
		char *kimg = journal(bodies, lens, keep, &klen, NULL);

		err = keep ? cpuhpd_journal_read(kimg, klen, &whole, NULL, why, sizeof(why))
		           : -EINVAL;
		free(kimg);
	}
	copy = malloc(cut);
	FUZZ_CHECK(copy);
	memcpy(copy, img, cut);
	err2 = cpuhpd_journal_read(copy, cut, &part, NULL, why, sizeof(why));
	FUZZ_CHECK(!err == !err2 || err == -ENOMEM || err2 == -ENOMEM);
	if (!err && !err2)
		check_same(&whole, &part);
	if (!err)
		cpuhpd_statetext_free(&whole);
	if (!err2)
		cpuhpd_statetext_free(&part);
	free(copy);
	free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct cpuhpd_saved empty;
	struct cpuhpd_saved s, again;
	char why[200], *text, *back;
	size_t len, blen;

	if (size < 1)
		return 0;
	if ((data[0] & 3) == 3) {
		cut_journal(data + 1, size - 1);
		return 0;
	}
	if ((data[0] & 3) == 2) {
		/* An exact-size copy, so that ASan sees a read past its end. */
		text = malloc(size);
		FUZZ_CHECK(text);
		memcpy(text, data + 1, size - 1);
		if (cpuhpd_journal_read(text, size - 1, &s, NULL, why, sizeof(why))) {
			FUZZ_CHECK(!memcmp(&s, &empty, sizeof(s)) && why[0]);
		} else {
			check_as_journal(&s);
			cpuhpd_statetext_free(&s);
		}
		free(text);
		return 0;
	}
	if (data[0] & 1) {
		text = cpuhpd_statetext_seal((const char *)data + 1, size - 1, &len);
		FUZZ_CHECK(text);
	} else {
		/* An exact-size copy, so that ASan sees a read past its end. */
		len = size - 1;
		text = malloc(len + 1);
		FUZZ_CHECK(text);
		memcpy(text, data + 1, len);
	}
	if (cpuhpd_statetext_parse(text, len, &s, why, sizeof(why))) {
		FUZZ_CHECK(!memcmp(&s, &empty, sizeof(s)) && why[0]);
		free(text);
		return 0;
	}
	back = write_out(&s, &blen, false);
	FUZZ_CHECK(cpuhpd_statetext_parse(back, blen, &again, why, sizeof(why)) == 0);
	check_same(&s, &again);
	check_as_journal(&s);
	cpuhpd_statetext_free(&again);
	cpuhpd_statetext_free(&s);
	free(back);
	free(text);
	return 0;
}
