/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * admit.c on its own: the connection limits and the byte
 * bounds decided for peers of every kind, to the byte, without sockets.
 * The end-to-end tests (test_admission.py, test_memory.py) show the same
 * rules through cpuhpd; here each edge is exact, including the parts a
 * socket test cannot reach reliably: the eighth of --max-buffered-bytes
 * kept for root and admins, root's freedom from a uid's share, and when
 * malloc_trim() runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "../unit/check.h"

#include "cpuhpd.h"
#include "core/admit.h"
#include "core/conn.h"

static struct cpuhpd d;

/* A peer as cpuhpd_conn_accept() has it once the credentials are read. */
static struct cpuhpd_conn *peer(uid_t uid, bool admin)
{
	struct cpuhpd_conn *c = calloc(1, sizeof(*c));

	CHECK(c);
	c->d = &d;
	c->peer.uid = uid;
	c->peer.admin = uid == 0 || admin;
	return c;
}

/* What conn.c does around cpuhpd_admit_conn(): count the admitted. */
static int admit(struct cpuhpd_conn *c, char *why, size_t len)
{
	int err = cpuhpd_admit_conn(c, why, len);

	if (!err)
		d.nconns++;
	return err;
}

static void drop(struct cpuhpd_conn *c)
{
	if (c->admit.uid) {
		d.nconns--;
		cpuhpd_admit_conn_gone(c);
		cpuhpd_admit_conn_freed(c);
	}
	free(c);
}

static struct cpuhpd_conn *admitted(uid_t uid, bool admin)
{
	struct cpuhpd_conn *c = peer(uid, admin);
	char why[256];
	int err = admit(c, why, sizeof(why));

	if (err)
		CHECK_FAIL_("uid %u refused: %s", (unsigned)uid, why);
	return c;
}

static void refused(uid_t uid, bool admin, const char *option)
{
	struct cpuhpd_conn *c = peer(uid, admin);
	char why[256] = "";

	CHECK_EQ_INT(admit(c, why, sizeof(why)), -EUSERS);
	if (!strstr(why, option))
		CHECK_FAIL_("the refusal '%s' does not name %s", why, option);
	drop(c);
}

static bool buckets_empty(void)
{
	for (unsigned i = 0; i < CPUHPD_ADMIT_BUCKETS; i++)
		if (!cpuhpd_list_empty(&d.admit.uids[i]))
			return false;
	return true;
}

static void test_connections(void)
{
	struct cpuhpd_conn *a[5], *b[5], *n[2], *adm[4], *r[3];

	d.opt.max_connections = 16;
	d.opt.reserved_connections = 4;
	d.opt.max_connections_per_uid = 5;

	/* A uid stops at its cap, and a slot that closes is its again. */
	for (int i = 0; i < 5; i++)
		a[i] = admitted(1000, false);
	refused(1000, false, "--max-connections-per-uid");
	drop(a[0]);
	a[0] = admitted(1000, false);
	refused(1000, false, "--max-connections-per-uid");

	/* Users other than root and admins stop short of the reserve (16 - 4). */
	for (int i = 0; i < 5; i++)
		b[i] = admitted(1001, false);
	n[0] = admitted(1002, false);
	n[1] = admitted(1002, false);
	CHECK_EQ_INT(d.nconns, 12);
	refused(1002, false, "--reserved-connections");
	refused(65534, false, "--reserved-connections");

	/* An admin may use the reserve, within its own cap. */
	for (int i = 0; i < 3; i++)
		adm[i] = admitted(1003, true);
	/* Root gets the last one, and then nobody passes the limit, root neither. */
	r[0] = admitted(0, false);
	CHECK_EQ_INT(d.nconns, 16);
	refused(0, false, "--max-connections");
	refused(1003, true, "--max-connections");

	/* Root is held to no uid's cap: 3 more than --max-connections-per-uid 5 of its own. */
	for (int i = 0; i < 5; i++)
		drop(b[i]);
	for (int i = 0; i < 3; i++)
		drop(adm[i]);
	drop(n[0]);
	drop(n[1]);
	r[1] = admitted(0, false);
	r[2] = admitted(0, false);
	for (int i = 0; i < 5; i++)
		b[i] = admitted(0, false);
	CHECK_EQ_INT(d.nconns, 5 + 3 + 5);

	for (int i = 0; i < 5; i++) {
		drop(a[i]);
		drop(b[i]);
	}
	for (int i = 0; i < 3; i++)
		drop(r[i]);
	CHECK_EQ_INT(d.nconns, 0);
	CHECK(buckets_empty());
}

static void charge_ok(struct cpuhpd_conn *c, size_t bytes)
{
	char why[256];

	if (!cpuhpd_admit_charge(c, bytes, why, sizeof(why)))
		CHECK_FAIL_("uid %u refused %zu bytes with %zu buffered: %s", (unsigned)c->peer.uid,
		            bytes, d.admit.buffered, why);
}

static void charge_refused(struct cpuhpd_conn *c, size_t bytes, const char *option)
{
	size_t before = d.admit.buffered, mine = c->admit.uid->buffered;
	char why[256] = "";

	CHECK(!cpuhpd_admit_charge(c, bytes, why, sizeof(why)));
	if (!strstr(why, option))
		CHECK_FAIL_("the refusal '%s' does not name %s", why, option);
	/* A refusal charges nothing. */
	CHECK_EQ_INT(d.admit.buffered, before);
	CHECK_EQ_INT(c->admit.uid->buffered, mine);
}

static void test_bytes(void)
{
	const size_t total = 8000, share = 3000, kept = total / 8;
	struct cpuhpd_conn *u1, *u2, *u3, *adm, *root;

	d.opt.max_connections = 16;
	d.opt.reserved_connections = 2;
	d.opt.max_connections_per_uid = 8;
	d.opt.max_buffered = total;
	d.opt.max_buffered_per_uid = share;
	u1 = admitted(1000, false);
	u2 = admitted(1001, false);
	u3 = admitted(1002, false);
	adm = admitted(1003, true);
	root = admitted(0, false);

	/* A uid's share, to the byte. */
	charge_ok(u1, share);
	charge_refused(u1, 1, "--max-buffered-bytes-per-uid");
	/* Other users fill the seven eighths left to them. */
	charge_ok(u2, share);
	charge_ok(u3, total - kept - 2 * share);
	CHECK_EQ_INT(d.admit.buffered, total - kept);
	charge_refused(u3, 1, "the eighth kept for root and admins");
	/* The eighth is root's and the admins': what a client of root needs is there. */
	charge_ok(adm, kept / 2);
	charge_ok(root, kept - kept / 2);
	CHECK_EQ_INT(d.admit.buffered, total);
	/* The total holds for root too. */
	charge_refused(root, 1, "--max-buffered-bytes");
	charge_refused(adm, 1, "--max-buffered-bytes");

	/* Root is held to no uid's share: it may take all that others free. */
	cpuhpd_admit_uncharge(u1, share);
	cpuhpd_admit_uncharge(u2, share);
	charge_ok(root, 2 * share);
	CHECK(root->admit.uid->buffered > share);
	/* An admin is: the reserve is no way past its own share. */
	cpuhpd_admit_uncharge(root, 2 * share);
	charge_ok(adm, share - kept / 2);
	charge_refused(adm, 1, "--max-buffered-bytes-per-uid");

	/* A closed connection's reassembly bytes are uncharged when it is freed. */
	charge_ok(u1, 100);
	u1->admit.inbuf = 100;
	drop(u1);
	drop(u2);
	cpuhpd_admit_uncharge(u3, total - kept - 2 * share);
	drop(u3);
	cpuhpd_admit_uncharge(adm, share);
	drop(adm);
	cpuhpd_admit_uncharge(root, kept - kept / 2);
	drop(root);
	CHECK_EQ_INT(d.admit.buffered, 0);
	CHECK(buckets_empty());
}

static void test_trim(void)
{
	struct cpuhpd_conn *c;
	unsigned trims;

	d.opt.max_buffered = 64u << 20;
	d.opt.max_buffered_per_uid = 64u << 20;
	d.admit.high = 0;
	c = admitted(0, false);

	/*
	 * Steady traffic: each reply charged and uncharged as its write
	 * completes, 16 MiB in all, never more than 2 KiB at once.  No trim:
	 * there is nothing to hand back, and each would walk the heap.
	 */
	trims = d.admit.ntrims;
	for (int i = 0; i < 16384; i++) {
		charge_ok(c, 1024);
		charge_ok(c, 1024);
		cpuhpd_admit_uncharge(c, 1024);
		cpuhpd_admit_uncharge(c, 1024);
	}
	CHECK_EQ_INT(d.admit.ntrims, trims);

	/* A flood of 16 MiB drains: trimmed log2(16 MiB / 256 KiB) = 6 times, and at 0. */
	for (int i = 0; i < 16384; i++)
		charge_ok(c, 1024);
	for (int i = 0; i < 16384; i++)
		cpuhpd_admit_uncharge(c, 1024);
	printf("a 16 MiB drain: %u malloc_trim() calls\n", d.admit.ntrims - trims);
	CHECK(d.admit.ntrims - trims >= 6);
	CHECK(d.admit.ntrims - trims <= 7);
	drop(c);
}

int main(void)
{
	uv_loop_t loop;

	CHECK_EQ_INT(uv_loop_init(&loop), 0);
	d.loop = &loop;
	cpuhpd_list_init(&d.conns);
	cpuhpd_list_init(&d.states.list); /* no states: the per-uid refusal counts none */
	CHECK_EQ_INT(cpuhpd_admit_init(&d), 0);
	test_connections();
	test_bytes();
	test_trim();
	cpuhpd_admit_close(&d);
	CHECK_EQ_INT(uv_run(&loop, UV_RUN_DEFAULT), 0);
	CHECK_EQ_INT(uv_loop_close(&loop), 0);
	printf("admit: connection limits, byte bounds and trims as documented\n");
	return 0;
}
