/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd's gate on its own, with made-up sources: what a hotplug waits for,
 * the order in which the sources are blocked, told the writer is done and
 * unblocked, when the engine hears "drained" and "counted", and that
 * readers arriving while a hotplug is active are let in, in the sources'
 * order and each in arrival order, before the next hotplug closes the gate
 * (writer preference without starving readers).  The end-to-end tests
 * (test_ordering.py, test_fastlease.py, test_states.py, test_restart.py)
 * show the same rules through cpuhpd with the real sources.
 */
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "../unit/check.h"

#include "cpuhpd.h"
#include "core/gate.h"

static struct cpuhpd d;

/* What happened, in order: one letter per call, e.g. "Ab" = source A blocked, B unblocked. */
static char trail[256];

static void note(const char *what)
{
	CHECK(strlen(trail) + strlen(what) < sizeof(trail));
	strcat(trail, what);
}

/* A made-up source: a count of readers in, and a FIFO of readers waiting for the gate. */
struct fake {
	char name;
	unsigned held;
	bool counting;
	pid_t awaited;
	int waiting[8];
	unsigned nwaiting;
};

static struct fake fakes[3] = {{.name = 'a'}, {.name = 'b'}, {.name = 'c'}};

/* The readers let in, in order, across the sources ("a1 a2 b1 ..."). */
static char admitted[128];

static void reader_arrives(struct fake *f, int id)
{
	if (!cpuhpd_gate_closed(&d)) {
		f->held++;
		return;
	}
	CHECK(f->nwaiting < 8);
	f->waiting[f->nwaiting++] = id;
}

static void letters(char op, const struct fake *f)
{
	char s[3] = {op, f->name, '\0'};

	note(s);
}

#define FAKE_HOOKS(i)                                                                              \
	static __attribute__((unused)) bool holding##i(const struct cpuhpd *dd)                    \
	{                                                                                          \
		(void)dd;                                                                          \
		return fakes[i].held || fakes[i].counting;                                         \
	}                                                                                          \
	static __attribute__((unused)) void block##i(struct cpuhpd *dd)                            \
	{                                                                                          \
		(void)dd;                                                                          \
		CHECK(cpuhpd_gate_closed(&d)); /* closed before the sources hear of it */          \
		letters('B', &fakes[i]);                                                           \
	}                                                                                          \
	static __attribute__((unused)) void writer_done##i(struct cpuhpd *dd)                      \
	{                                                                                          \
		(void)dd;                                                                          \
		letters('W', &fakes[i]);                                                           \
	}                                                                                          \
	static __attribute__((unused)) void unblock##i(struct cpuhpd *dd)                          \
	{                                                                                          \
		struct fake *f = &fakes[i];                                                        \
		(void)dd;                                                                          \
		CHECK(!cpuhpd_gate_closed(&d));                                                    \
		letters('U', f);                                                                   \
		for (unsigned k = 0; k < f->nwaiting; k++) {                                       \
			char s[8];                                                                 \
			snprintf(s, sizeof(s), "%c%d ", f->name, f->waiting[k]);                   \
			CHECK(strlen(admitted) + strlen(s) < sizeof(admitted));                    \
			strcat(admitted, s);                                                       \
			f->held++;                                                                 \
		}                                                                                  \
		f->nwaiting = 0;                                                                   \
	}                                                                                          \
	static __attribute__((unused)) bool counting##i(const struct cpuhpd *dd)                   \
	{                                                                                          \
		(void)dd;                                                                          \
		return fakes[i].counting;                                                          \
	}                                                                                          \
	static __attribute__((unused)) bool awaits##i(const struct cpuhpd *dd, pid_t pid)          \
	{                                                                                          \
		(void)dd;                                                                          \
		return fakes[i].awaited && fakes[i].awaited == pid;                                \
	}

FAKE_HOOKS(0)
FAKE_HOOKS(1)
FAKE_HOOKS(2)

/* a: every hook; b: holds and unblocks only; c: holds only (as the restart grace). */
static const struct cpuhpd_gate_source sources[] = {
    {"a", holding0, block0, writer_done0, unblock0, counting0, awaits0},
    {"b", holding1, NULL, NULL, unblock1, NULL, awaits1},
    {"c", holding2, NULL, NULL, NULL, NULL, NULL},
};

static unsigned ndrained, ncounted;

static void drained(struct cpuhpd *dd)
{
	(void)dd;
	CHECK(cpuhpd_gate_closed(&d));
	ndrained++;
	note("D");
}

static void counted(struct cpuhpd *dd)
{
	(void)dd;
	ncounted++;
	note("C");
}

static const struct cpuhpd_gate_engine engine = {drained, counted};

static void reset(void)
{
	memset(fakes, 0, sizeof(fakes));
	fakes[0].name = 'a';
	fakes[1].name = 'b';
	fakes[2].name = 'c';
	trail[0] = admitted[0] = '\0';
	ndrained = ncounted = 0;
	cpuhpd_gate_plug(&d, sources, 3, &engine);
}

static void test_starts_open(void)
{
	reset();
	CHECK(!cpuhpd_gate_closed(&d));
	CHECK(!cpuhpd_gate_counting(&d));
	cpuhpd_gate_check(&d); /* open: nobody to tell */
	CHECK_EQ_INT(ndrained, 0);
}

static void test_close_with_nothing_held_goes_on_at_once(void)
{
	reset();
	CHECK(cpuhpd_gate_close(&d));
	CHECK(cpuhpd_gate_closed(&d));
	/* Only the sources with a block hook, in order; the engine is not called back. */
	CHECK_EQ_STR(trail, "Ba");
	CHECK_EQ_INT(ndrained, 0);
}

static void test_any_source_holding_keeps_the_hotplug_waiting(void)
{
	for (int i = 0; i < 3; i++) {
		reset();
		fakes[i].held = 1;
		CHECK(!cpuhpd_gate_close(&d));
		cpuhpd_gate_check(&d);
		CHECK_EQ_INT(ndrained, 0);
		fakes[i].held = 0;
		cpuhpd_gate_check(&d);
		CHECK_EQ_INT(ndrained, 1);
	}
}

static void test_drained_only_when_every_source_let_go(void)
{
	reset();
	fakes[0].held = 2;
	fakes[2].held = 1;
	CHECK(!cpuhpd_gate_close(&d));
	fakes[0].held = 0;
	cpuhpd_gate_check(&d);
	CHECK_EQ_INT(ndrained, 0); /* c still holds */
	fakes[2].held = 0;
	cpuhpd_gate_check(&d);
	CHECK_EQ_INT(ndrained, 1);
}

static void test_open_unblocks_in_registration_order(void)
{
	reset();
	CHECK(cpuhpd_gate_close(&d));
	trail[0] = '\0';
	cpuhpd_gate_open(&d);
	CHECK(!cpuhpd_gate_closed(&d));
	CHECK_EQ_STR(trail, "UaUb");
	/* Open: a source letting go tells nobody. */
	cpuhpd_gate_check(&d);
	CHECK_EQ_INT(ndrained, 0);
}

static void test_writer_done_tells_only_those_that_ask(void)
{
	reset();
	CHECK(cpuhpd_gate_close(&d));
	trail[0] = '\0';
	cpuhpd_gate_writer_done(&d);
	CHECK_EQ_STR(trail, "Wa");
	CHECK(cpuhpd_gate_closed(&d)); /* the gate itself opens later */
}

/*
 * Writer preference and fairness: readers that come while a hotplug is
 * active wait; when it leaves, all of them are in (source a's, then b's,
 * each in arrival order) before the next hotplug closes the gate, and
 * that one waits for them.
 */
static void test_readers_that_waited_go_in_before_the_next_hotplug(void)
{
	reset();
	CHECK(cpuhpd_gate_close(&d));
	reader_arrives(&fakes[1], 1);
	reader_arrives(&fakes[0], 1);
	reader_arrives(&fakes[1], 2);
	reader_arrives(&fakes[0], 2);
	CHECK_EQ_INT(fakes[0].held + fakes[1].held, 0);
	cpuhpd_gate_open(&d);
	CHECK_EQ_STR(admitted, "a1 a2 b1 b2 ");
	/* The next hotplug finds them held and waits until they let go. */
	CHECK(!cpuhpd_gate_close(&d));
	fakes[0].held = 0;
	cpuhpd_gate_check(&d);
	CHECK_EQ_INT(ndrained, 0);
	fakes[1].held = 0;
	cpuhpd_gate_check(&d);
	CHECK_EQ_INT(ndrained, 1);
	/* While it is active, a new reader waits. */
	reader_arrives(&fakes[0], 3);
	CHECK_EQ_INT(fakes[0].held, 0);
}

static void test_counting_holds_and_counted_tells_the_engine_after_drained(void)
{
	reset();
	fakes[0].counting = true;
	CHECK(!cpuhpd_gate_counting(&d)); /* open: nobody counts for a hotplug */
	CHECK(!cpuhpd_gate_close(&d));    /* not known yet: as if held */
	CHECK(cpuhpd_gate_counting(&d));
	fakes[0].counting = false;
	trail[0] = '\0';
	cpuhpd_gate_counted(&d);
	/* Nothing held: the hotplug goes on first, then its deadline counts again. */
	CHECK_EQ_STR(trail, "DC");
	CHECK(!cpuhpd_gate_counting(&d));

	reset();
	fakes[0].counting = true;
	fakes[1].held = 1;
	CHECK(!cpuhpd_gate_close(&d));
	fakes[0].counting = false;
	cpuhpd_gate_counted(&d);
	CHECK_EQ_INT(ndrained, 0); /* b holds: only the deadline */
	CHECK_EQ_INT(ncounted, 1);
}

static void test_counting_and_awaits_only_while_closed(void)
{
	reset();
	fakes[0].counting = true;
	fakes[1].awaited = 4242;
	CHECK(!cpuhpd_gate_counting(&d));
	CHECK(!cpuhpd_gate_awaits(&d, 4242));
	cpuhpd_gate_close(&d);
	CHECK(cpuhpd_gate_counting(&d));
	CHECK(cpuhpd_gate_awaits(&d, 4242));
	CHECK(!cpuhpd_gate_awaits(&d, 4243));
	cpuhpd_gate_open(&d);
	CHECK(!cpuhpd_gate_awaits(&d, 4242));
}

int main(void)
{
	RUN_TEST(test_starts_open);
	RUN_TEST(test_close_with_nothing_held_goes_on_at_once);
	RUN_TEST(test_any_source_holding_keeps_the_hotplug_waiting);
	RUN_TEST(test_drained_only_when_every_source_let_go);
	RUN_TEST(test_open_unblocks_in_registration_order);
	RUN_TEST(test_writer_done_tells_only_those_that_ask);
	RUN_TEST(test_readers_that_waited_go_in_before_the_next_hotplug);
	RUN_TEST(test_counting_holds_and_counted_tells_the_engine_after_drained);
	RUN_TEST(test_counting_and_awaits_only_while_closed);
	return 0;
}
