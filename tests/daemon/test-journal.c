/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The restart state's journal on its own (base/journal.h, written by
 * core/fdstore.c): fdstore.c's writer runs on a made-up daemon whose
 * features say what a test decides (connections, a count of records each,
 * the requests), and after every change the memfd must read back as that.
 * A kill is played by cutting the memfd's bytes where the writer may be
 * stopped: inside an appended record (the change before it is what reads
 * back), and inside a compaction, between the new base and its slot or
 * inside the slot (the old generation reads back whole).  Compactions of
 * both kinds (the new base at the data start, and after the records) must
 * happen, and the memfd must stay within a bound of what it holds.  Each
 * connection's lines end with its "ready" line, and each request has its
 * "hotplug" line, as a hotplug's notices write them.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/check.h"

#include "cpuhpd.h"
#include "base/journal.h"
#include "core/conn.h"
#include "core/fdstore.h"

#define NCONNS 40

static struct cpuhpd d;
static struct cpuhpd_conn *conns[NCONNS]; /* NULL: closed, or never opened */
static unsigned records[NCONNS];          /* "wait" lines each writes */
static unsigned nreqs;
static unsigned reqs[64][2]; /* conn id, payload byte */
static uint64_t next_lease = 1;

/* The features' parts of the text, made from the arrays above. */
static void save_conn(const struct cpuhpd_conn *c, FILE *f)
{
	for (unsigned k = 0; k < records[c->id - 1]; k++)
		fprintf(f, "wait %u %u 5 7 - -\n", c->id, k + 1);
	/* A hotplug's notice told, the record count as its number. */
	fprintf(f, "ready %u 0 %u 0\n", c->id, records[c->id - 1]);
}

static void save_requests(struct cpuhpd *dd, FILE *f)
{
	(void)dd;
	/* Each a hotplug whose number is its payload byte, announced or not. */
	for (unsigned i = 0; i < nreqs; i++)
		fprintf(f, "hotplug %u %u %u %u\nreq %u %02x\n", reqs[i][0], i + 1, reqs[i][1],
		        reqs[i][1] % 2, reqs[i][0], reqs[i][1]);
}

static void save_ids(const struct cpuhpd *dd, struct cpuhpd_saved *ids)
{
	(void)dd;
	ids->next_lease_id = next_lease;
}

static const cpuhpd_save_conn_fn conn_savers[] = {save_conn, NULL};
static const cpuhpd_save_requests_fn request_savers[] = {save_requests, NULL};
static const cpuhpd_save_ids_fn id_savers[] = {save_ids, NULL};
static const struct cpuhpd_store_savers savers = {conn_savers, request_savers, id_savers};

static char *image(size_t *len)
{
	struct stat st;
	char *buf;

	CHECK(!fstat(d.fdstore.state_fd, &st));
	buf = malloc((size_t)st.st_size + 1);
	CHECK(buf);
	CHECK(pread(d.fdstore.state_fd, buf, (size_t)st.st_size, 0) == st.st_size);
	*len = (size_t)st.st_size;
	return buf;
}

/* @buf reads back as the arrays say now. */
static void check_reads(const char *buf, size_t len)
{
	struct cpuhpd_saved s;
	char why[200];
	unsigned n = 0, r = 0;
	int err = cpuhpd_journal_read(buf, len, &s, NULL, why, sizeof(why));

	if (err)
		CHECK_FAIL_("the journal is refused: %s", why);
	CHECK_EQ_INT(s.next_lease_id, next_lease);
	for (unsigned i = 0; i < NCONNS; i++) {
		struct cpuhpd_saved_conn *sc = cpuhpd_statetext_conn(&s, i + 1);

		CHECK(!sc == !conns[i]);
		if (!sc)
			continue;
		n++;
		CHECK_EQ_STR(sc->who, conns[i]->who);
		CHECK_EQ_INT(sc->nwaits, records[i]);
		CHECK_EQ_INT(sc->told_seq, records[i]);
	}
	CHECK_EQ_INT(s.nconns, n);
	for (unsigned i = 0; i < nreqs; i++) {
		if (!conns[reqs[i][0] - 1])
			continue; /* a closed connection's request is left out */
		CHECK(r < s.nreqs);
		CHECK_EQ_INT(s.reqs[r].conn, reqs[i][0]);
		CHECK_EQ_INT(s.reqs[r].req.data[0], reqs[i][1]);
		CHECK(r < s.nhotplugs);
		CHECK_EQ_INT(s.hotplugs[r].conn, reqs[i][0]);
		CHECK_EQ_INT(s.hotplugs[r].seq, reqs[i][1]);
		CHECK_EQ_INT(s.hotplugs[r].noticed_at, reqs[i][1] % 2);
		r++;
	}
	CHECK_EQ_INT(s.nreqs, r);
	CHECK_EQ_INT(s.nhotplugs, r);
	cpuhpd_statetext_free(&s);
}

static void setup(void)
{
	memset(&d, 0, sizeof(d));
	cpuhpd_list_init(&d.conns);
	cpuhpd_list_init(&d.fdstore.dirty);
	d.fdstore.on = true;
	d.fdstore.max = 1000;
	d.fdstore.savers = &savers;
	d.fdstore.state_fd = memfd_create("test-journal", MFD_CLOEXEC);
	CHECK(d.fdstore.state_fd >= 0);
	/* As cpuhpd_fdstore_ready() leaves it for a new memfd. */
	d.fdstore.slot = 1;
	d.fdstore.live_off = d.fdstore.end = CPUHPD_JOURNAL_DATA;
	d.fdstore.broken = true;
	memset(conns, 0, sizeof(conns));
	memset(records, 0, sizeof(records));
	nreqs = 0;
	cpuhpd_fdstore_changed(&d);
}

static struct cpuhpd_conn *open_conn(unsigned i)
{
	struct cpuhpd_conn *c = calloc(1, sizeof(*c));

	CHECK(c);
	c->d = &d;
	c->id = i + 1;
	c->stored = true;
	c->who = strdup("v0");
	snprintf(c->peer.comm, sizeof(c->peer.comm), "test");
	cpuhpd_list_add_tail(&d.conns, &c->node);
	conns[i] = c;
	cpuhpd_fdstore_conn_changed(c);
	return c;
}

static void close_conn(unsigned i)
{
	struct cpuhpd_conn *c = conns[i];

	conns[i] = NULL;
	records[i] = 0;
	cpuhpd_list_del(&c->node);
	/* As conn.c: out of the store (and the text) first, the requests after. */
	c->closing = true;
	cpuhpd_fdstore_conn_gone(c);
	free(c->who);
	free(c);
}

static void teardown(void)
{
	for (unsigned i = 0; i < NCONNS; i++)
		if (conns[i])
			close_conn(i);
	close(d.fdstore.state_fd);
	cpuhpd_buf_free(&d.fdstore.body);
	free(d.fdstore.gone);
}

/* One random change, recorded as the daemon would. */
static void change(unsigned *seed)
{
	unsigned i = (unsigned)rand_r(seed) % NCONNS, what = (unsigned)rand_r(seed) % 8;

	if (!conns[i]) {
		open_conn(i);
		return;
	}
	switch (what) {
	case 0:
		close_conn(i);
		break;
	case 1:
	case 2:
		records[i] = (unsigned)rand_r(seed) % 12;
		next_lease++;
		cpuhpd_fdstore_conn_changed(conns[i]);
		break;
	case 3: {
		char v[16];

		snprintf(v, sizeof(v), "v%u", (unsigned)rand_r(seed) % 1000);
		free(conns[i]->who);
		conns[i]->who = strdup(v);
		cpuhpd_fdstore_conn_changed(conns[i]);
		break;
	}
	case 4:
		if (nreqs < 64) {
			reqs[nreqs][0] = i + 1;
			reqs[nreqs++][1] = (unsigned)rand_r(seed) % 256;
			cpuhpd_fdstore_changed(&d);
		}
		break;
	case 5:
		if (nreqs) {
			memmove(reqs[0], reqs[1], (nreqs - 1) * sizeof(reqs[0]));
			nreqs--;
			cpuhpd_fdstore_changed(&d);
		}
		break;
	default:
		records[i]++;
		cpuhpd_fdstore_conn_changed(conns[i]);
		break;
	}
}

static void every_change_reads_back_and_compactions_of_both_kinds_happen(void)
{
	unsigned seed = 29, at_start = 0, at_end = 0;
	uint64_t max_size = 0, max_text = 0;

	setup();
	for (unsigned n = 0; n < 4000; n++) {
		uint64_t gen = d.fdstore.gen;
		size_t len;
		char *buf;

		change(&seed);
		buf = image(&len);
		check_reads(buf, len);
		free(buf);
		if (d.fdstore.gen != gen) {
			at_start += d.fdstore.live_off == CPUHPD_JOURNAL_DATA;
			at_end += d.fdstore.live_off != CPUHPD_JOURNAL_DATA;
		}
		if (len > max_size)
			max_size = len;
		if (d.fdstore.base_len > max_text)
			max_text = d.fdstore.base_len;
	}
	printf("# %u compactions at the data start, %u after the records; memfd at most "
	       "%llu bytes for a base of at most %llu\n",
	       at_start, at_end, (unsigned long long)max_size, (unsigned long long)max_text);
	CHECK(at_start > 0 && at_end > 0);
	/* The old generation, the new base and its compaction's worth of records. */
	CHECK(max_size <= CPUHPD_JOURNAL_DATA + 3 * (max_text + (64u << 10)) + 4096);
	teardown();
}

static bool same(const struct cpuhpd_saved *a, const struct cpuhpd_saved *b)
{
	if (a->nconns != b->nconns || a->nreqs != b->nreqs || a->next_lease_id != b->next_lease_id)
		return false;
	for (unsigned i = 0; i < a->nconns; i++)
		if (a->conns[i].id != b->conns[i].id || a->conns[i].nwaits != b->conns[i].nwaits ||
		    strcmp(a->conns[i].who, b->conns[i].who))
			return false;
	for (unsigned i = 0; i < a->nreqs; i++)
		if (a->reqs[i].conn != b->reqs[i].conn ||
		    a->reqs[i].req.data[0] != b->reqs[i].req.data[0])
			return false;
	return true;
}

/*
 * A kill anywhere inside a change: the writer writes a record (appended at
 * the end, or a compaction's base where the valid slot names nothing),
 * then, for a compaction, the other slot, and only then gives old space
 * back.  Each cut: the old image with the change's bytes written up to the
 * cut.  It must read as before the change.
 */
static void a_change_cut_anywhere_reads_back_as_before_it(void)
{
	unsigned seed = 17, cuts = 0, compactions = 0, at_start = 0;

	setup();
	for (unsigned n = 0; n < 3000; n++) {
		size_t olen, nlen;
		char *old = image(&olen), *new, *mix, why[200];
		uint64_t gen = d.fdstore.gen, old_end = d.fdstore.end, start, stop;
		struct cpuhpd_saved before, after;

		CHECK(!cpuhpd_journal_read(old, olen, &before, NULL, why, sizeof(why)));
		change(&seed);
		new = image(&nlen);
		compactions += d.fdstore.gen != gen;
		at_start += d.fdstore.gen != gen && d.fdstore.live_off == CPUHPD_JOURNAL_DATA;
		start = d.fdstore.gen != gen ? d.fdstore.live_off : old_end;
		stop = d.fdstore.end;
		mix = malloc(olen > stop ? olen : stop);
		CHECK(mix);
		for (uint64_t cut = start; cut < stop; cut += 1 + (unsigned)rand_r(&seed) % 61) {
			size_t len = olen > cut ? olen : cut;

			memcpy(mix, old, olen);
			memcpy(mix + start, new + start, cut - start);
			if (cpuhpd_journal_read(mix, len, &after, NULL, why, sizeof(why)))
				CHECK_FAIL_("cut at %llu of a change: refused: %s",
				            (unsigned long long)cut, why);
			CHECK(same(&after, &before));
			cpuhpd_statetext_free(&after);
			cuts++;
		}
		/* A compaction's base whole, its slot half written. */
		if (d.fdstore.gen != gen) {
			size_t len = olen > stop ? olen : stop;
			unsigned slot = d.fdstore.slot;

			memcpy(mix, old, olen);
			memcpy(mix + start, new + start, stop - start);
			memcpy(mix + slot * CPUHPD_JOURNAL_SLOT, new + slot *CPUHPD_JOURNAL_SLOT,
			       20);
			CHECK(!cpuhpd_journal_read(mix, len, &after, NULL, why, sizeof(why)));
			CHECK(same(&after, &before));
			cpuhpd_statetext_free(&after);
		}
		cpuhpd_statetext_free(&before);
		free(mix);
		free(old);
		free(new);
	}
	printf("# %u cuts, %u of the changes compactions, %u of them at the data start\n", cuts,
	       compactions, at_start);
	CHECK(at_start > 0 && compactions > at_start);
	teardown();
}

static void a_version_1_text_is_still_read(void)
{
	static const char body[] = "daemon 7 3 5 1 1 9\n"
	                           "conn 2 100 0 0 1 1 - - - 0 0\n"
	                           "lease 2 4 1000 0 - -\n"
	                           "end\n";
	struct cpuhpd_saved s;
	size_t len;
	char *text = cpuhpd_statetext_seal(body, sizeof(body) - 1, &len), why[200];

	CHECK(text);
	CHECK(!cpuhpd_journal_read(text, len, &s, NULL, why, sizeof(why)));
	CHECK_EQ_INT(s.nconns, 1);
	CHECK_EQ_INT(s.conns[0].nleases, 1);
	CHECK_EQ_INT(s.next_call_id, 9);
	cpuhpd_statetext_free(&s);
	free(text);
}

/* An upgrade: the memfd holds an older cpuhpd's version 1 text; the journal goes on from it. */
static void the_journal_goes_on_from_a_version_1_text(void)
{
	static const char body[] = "daemon 7 3 5 1 1 9\n"
	                           "conn 1 100 0 0 1 1 - - - 0 0\n"
	                           "end\n";
	size_t len, ilen;
	char *text = cpuhpd_statetext_seal(body, sizeof(body) - 1, &len), *img;

	setup();
	CHECK(text);
	CHECK(!ftruncate(d.fdstore.state_fd, 0));
	CHECK(pwrite(d.fdstore.state_fd, text, len, 0) == (ssize_t)len);
	/* As cpuhpd_fdstore_ready() leaves it after reading that text. */
	d.fdstore.gen = 0;
	d.fdstore.slot = 1;
	d.fdstore.live_off = 0;
	d.fdstore.end = len > CPUHPD_JOURNAL_DATA ? len : CPUHPD_JOURNAL_DATA;
	d.fdstore.broken = true;
	open_conn(0);
	records[0] = 3;
	cpuhpd_fdstore_conn_changed(conns[0]);
	CHECK_EQ_INT(d.fdstore.gen, 1);
	img = image(&ilen);
	check_reads(img, ilen);
	free(img);
	free(text);
	teardown();
}

int main(void)
{
	RUN_TEST(every_change_reads_back_and_compactions_of_both_kinds_happen);
	RUN_TEST(a_change_cut_anywhere_reads_back_as_before_it);
	RUN_TEST(a_version_1_text_is_still_read);
	RUN_TEST(the_journal_goes_on_from_a_version_1_text);
	return 0;
}
