/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl leases: who holds what, like systemd-inhibit --list: the leases
 * as a table (table.c), then the hotplug requests waiting behind them and
 * the freezes.  Every name in it is a client's: shown safe.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"

enum {
	COL_WHO,
	COL_PID,
	COL_UID,
	COL_KIND,
	COL_MODE,
	COL_COUNT,
	COL_HELD,
	COL_WHY,
	COL_COMM,
	COL_ID,
	COL_HELD_MS,
	COL_CONNECTION,
	COL_DELAY_MS,
	NCOLS
};

#define T  CPUHPCTL_COL_TEXT
#define J  CPUHPCTL_COL_JSON
#define R  CPUHPCTL_COL_RIGHT
#define TR CPUHPCTL_COL_TRUNC
static const struct cpuhpctl_column columns[NCOLS] = {
    [COL_WHO] = {"WHO", "who holds it, as it named itself (in the table: else its command)",
                 T | J | TR},
    [COL_PID] = {"PID", "the holder's process id", T | J | R},
    [COL_UID] = {"UID", "the holder's user id", T | J | R},
    [COL_KIND] = {"KIND", "socket (one lease) or fast (a connection's, in shared memory)", T | J},
    [COL_COUNT] = {"COUNT", "how many leases the row stands for", T | J | R},
    [COL_HELD] = {"HELD", "how long it has been held (fast leases: since cpuhpd saw them)", T | R},
    [COL_WHY] = {"WHY", "what it protects, as the holder said", T | J | TR},
    [COL_COMM] = {"COMM", "the holder's command (its /proc/PID/comm)", J},
    [COL_ID] = {"LEASE_ID", "the lease's id (none for fast leases)", J | R},
    [COL_HELD_MS] = {"HELD_MS", "HELD in milliseconds", J | R},
    [COL_CONNECTION] = {"CONNECTION", "the holder's connection, as cpuhpd's log numbers it", J | R},
    [COL_MODE] = {"MODE",
                  "block (holds a hotplug up to its timeout) or delay (revoked its delay "
                  "after the hotplug's notice)",
                  T | J},
    [COL_DELAY_MS] = {"DELAY_MS", "a delay lease's delay, in milliseconds (0: block)", J | R},
};
#undef T
#undef J
#undef R
#undef TR

static void leases_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl leases [--output COLS] [--raw] [--noheadings] [--json]\n"
	           "\n"
	           "List every lease held, oldest first, like systemd-inhibit --list: who\n"
	           "(as the holder named itself, else its command), pid, uid, why, how long\n"
	           "it has been held, and whether it is a socket lease or a connection's\n"
	           "fast leases (counted in shared memory; listed once with their count).\n"
	           "Then the hotplug requests waiting behind them, and who asked; then\n"
	           "the hotplug freezes (cpuhpctl freeze), with who holds them and why.\n"
	           "\n"
	           "  -o, --output COLS  the columns, e.g. WHO,PID,WHY; +COLS adds to the\n"
	           "                     default ones\n"
	           "  -r, --raw          unaligned, blanks and control characters as \\xHH:\n"
	           "                     the table alone, for scripts\n"
	           "  -n, --noheadings   no header line; the table alone\n"
	           "  -J, --json         one JSON object: the leases as rows keyed by the\n"
	           "                     columns' names, the requests and the freezes\n"
	           "                     (schema in cpuhpctl(8))\n");
}

/* The restart grace, if one runs (cpuhpd --restart-grace-ms). */
void cpuhpctl_print_grace(unsigned ms)
{
	if (ms)
		printf("%-13s hotplugs held %u.%03u s more: the cpuhpd before this one ended "
		       "without handing its clients over (see cpuhpd's log)\n",
		       "restart:", ms / 1000, ms % 1000);
}

static int fill_table(struct cpuhpctl_table *t, const struct cpuhp_client_lease_list *l, bool json)
{
	for (size_t i = 0; i < l->n_leases; i++) {
		const struct cpuhp_client_lease_info *li = &l->leases[i];

		if (cpuhpctl_table_row(t) < 0)
			return -1;
		cpuhpctl_table_str(t, COL_WHO, li->who[0] || json ? li->who : li->comm);
		cpuhpctl_table_num(t, COL_PID, li->pid);
		cpuhpctl_table_num(t, COL_UID, li->uid);
		cpuhpctl_table_str(t, COL_KIND, li->fast ? "fast" : "socket");
		cpuhpctl_table_num(t, COL_COUNT, li->count);
		if (li->fast && !json) {
			/* cpuhpd knows only when it first saw them: at least that long. */
			char buf[CPUHPCTL_DURATION_MAX], held[CPUHPCTL_DURATION_MAX + 1];

			snprintf(held, sizeof(held), ">%s",
			         cpuhpctl_format_duration(buf, li->held_ms));
			cpuhpctl_table_str(t, COL_HELD, held);
		} else {
			cpuhpctl_table_ms(t, COL_HELD, li->held_ms);
		}
		cpuhpctl_table_str(t, COL_WHY, li->why);
		cpuhpctl_table_str(t, COL_COMM, li->comm);
		if (!li->fast)
			cpuhpctl_table_num(t, COL_ID, (long long)li->lease_id);
		cpuhpctl_table_num(t, COL_HELD_MS, (long long)li->held_ms);
		cpuhpctl_table_num(t, COL_CONNECTION, li->connection);
		cpuhpctl_table_str(t, COL_MODE, li->delay_ms ? "delay" : "block");
		cpuhpctl_table_num(t, COL_DELAY_MS, li->delay_ms);
	}
	return 0;
}

/* The requests and freezes after the table, for people. */
static void print_queue_text(const struct cpuhp_client_lease_list *l)
{
	printf("\n%zu holder(s) listed.\n", l->n_leases);
	for (size_t i = 0; i < l->n_hotplugs; i++) {
		const struct cpuhp_client_hotplug_info *h = &l->hotplugs[i];
		char *cpus = cpuhpctl_format(&h->cpus);

		if (i == 0)
			printf("\nHotplug requests:\n");
		char grace[64] = "";

		if (h->force)
			snprintf(grace, sizeof(grace),
			         ", forced: leases revoked %u ms after its notice",
			         h->force_grace_ms);
		printf("  #%" PRIu64 " %s%s %s: %s, asked by %spid %u (%s) uid %u%s%s%s, %" PRIu64
		       " ms ago, timeout %u ms%s\n",
		       h->seq, h->smt[0] ? "smt " : "",
		       h->smt[0]   ? cpuhpctl_safe(h->smt)
		       : h->online ? "online"
		                   : "offline",
		       cpus ? cpus : "?",
		       h->state == CPUHP_CLIENT_WRITER_RUNNING   ? "running"
		       : h->state == CPUHP_CLIENT_WRITER_WAITING ? "waiting for leases"
		                                                 : "queued",
		       h->reason[0] ? "cpuhpd itself, " : "", h->pid, cpuhpctl_safe(h->comm),
		       h->uid, h->reason[0] ? " for its " : "", cpuhpctl_safe(h->reason),
		       h->reason[0] ? " (cpuhpctl plan)" : "", h->waited_ms, h->timeout_ms, grace);
		free(cpus);
	}
	for (size_t i = 0; i < l->n_freezes; i++) {
		const struct cpuhp_client_freeze_info *fz = &l->freezes[i];

		if (i == 0)
			printf("\nHotplug frozen (online/offline fail at once):\n");
		printf("  freeze %" PRIu64 " by %s, pid %u uid %u, %s %" PRIu64 " ms%s%s%s\n",
		       fz->freeze_id, cpuhpctl_safe(fz->who[0] ? fz->who : fz->comm), fz->pid,
		       fz->uid, fz->granted ? "held" : "waiting for the queued hotplugs,",
		       fz->held_ms, fz->why[0] ? ": '" : "", cpuhpctl_safe(fz->why),
		       fz->why[0] ? "'" : "");
	}
	if (l->restart_grace_ms)
		putchar('\n');
	cpuhpctl_print_grace(l->restart_grace_ms);
}

/* ,"hotplugs":[...],"freezes":[...],"restart_grace_ms":N */
static void print_queue_json(const struct cpuhp_client_lease_list *l)
{
	printf(",\"hotplugs\":[");
	for (size_t i = 0; i < l->n_hotplugs; i++) {
		const struct cpuhp_client_hotplug_info *h = &l->hotplugs[i];

		printf("%s{\"seq\":%" PRIu64 ",", i ? "," : "", h->seq);
		cpuhpctl_json_action(stdout, h->online, h->smt);
		printf(",\"cpus\":");
		cpuhpctl_json_cpus(stdout, &h->cpus);
		printf(",\"state\":\"%s\",\"pid\":%u,\"uid\":%u,\"comm\":",
		       h->state == CPUHP_CLIENT_WRITER_IDLE ? "queued"
		                                            : cpuhpctl_writer_name(h->state),
		       h->pid, h->uid);
		cpuhpctl_json_string(stdout, h->comm);
		printf(",\"reason\":");
		cpuhpctl_json_string(stdout, h->reason);
		printf(",\"waited_ms\":%" PRIu64 ",\"timeout_ms\":%u,\"force\":%s,"
		       "\"force_grace_ms\":%u}",
		       h->waited_ms, h->timeout_ms, h->force ? "true" : "false", h->force_grace_ms);
	}
	printf("],\"freezes\":[");
	for (size_t i = 0; i < l->n_freezes; i++) {
		const struct cpuhp_client_freeze_info *fz = &l->freezes[i];

		printf("%s{\"freeze_id\":%" PRIu64 ",\"state\":\"%s\",\"pid\":%u,\"uid\":%u,"
		       "\"comm\":",
		       i ? "," : "", fz->freeze_id, fz->granted ? "held" : "pending", fz->pid,
		       fz->uid);
		cpuhpctl_json_string(stdout, fz->comm);
		printf(",\"who\":");
		cpuhpctl_json_string(stdout, fz->who);
		printf(",\"why\":");
		cpuhpctl_json_string(stdout, fz->why);
		printf(",\"held_ms\":%" PRIu64 ",\"connection\":%u}", fz->held_ms, fz->connection);
	}
	printf("],\"restart_grace_ms\":%u}\n", l->restart_grace_ms);
}

int cpuhpctl_leases(struct cpuhpctl *ctl, int argc, char **argv)
{
	struct cpuhp_client_lease_list *l;
	struct cpuhpctl_listing opts;
	struct cpuhpctl_table *t;
	struct cpuhp_client *c;
	int ret, err;

	ret = cpuhpctl_parse_listing(ctl, argc, argv, leases_usage, columns, NCOLS, &opts);
	if (ret >= 0)
		return ret;
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	err = cpuhp_client_list_leases(c, &l);
	if (err < 0) {
		ret = cpuhpctl_fail(ctl, c, err, "leases");
		cpuhp_client_close(c);
		return ret;
	}
	cpuhp_client_close(c);
	t = cpuhpctl_table_new(ctl, "leases", columns, NCOLS, &opts);
	if (!t || fill_table(t, l, ctl->json) < 0 || cpuhpctl_table_print(t) < 0) {
		fprintf(stderr, "cpuhpctl leases: out of memory\n");
		ret = CPUHPCTL_EXIT_FAILED;
	} else if (ctl->json) {
		print_queue_json(l);
	} else if (!opts.raw && !opts.noheadings) {
		print_queue_text(l);
	}
	cpuhpctl_table_free(t);
	cpuhp_client_lease_list_free(l);
	return fflush(stdout) ? CPUHPCTL_EXIT_FAILED : ret;
}
