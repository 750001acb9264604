/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds what: a client's who/why (Identify, LeaseAcquire), every
 * holder for the listing of leases (ListLeases, `cpuhpctl leases`,
 * listing.c), and the words that name the holders in a hotplug's log line
 * and in the error of one that timed out behind them.
 *
 * A socket lease is named by the who/why it was acquired with, else by its
 * connection's (Identify), else by the command name the daemon read at
 * accept.  Fast leases are counters in shared memory: they are listed once
 * per connection with their count, under the connection's who/why, held
 * since the daemon first saw the count above zero (it looks whenever it
 * lists, describes or starts waiting for leases): taken then or before,
 * which every word about them says ("held at least 1.2 s", ">1.2s").
 *
 * Loop thread only.
 */
#ifndef CPUHPD_HOLDERS_H
#define CPUHPD_HOLDERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpuhp.pb-c.h"

struct cpuhpd;
struct cpuhpd_conn;

/* One holder: a socket lease, or one connection's fast leases. */
struct cpuhpd_holder {
	const struct cpuhpd_conn *conn;
	uint64_t lease_id; /* 0: fast */
	unsigned count;
	uint64_t since;
	const char *who, *why; /* never NULL */
	uint32_t delay_ms;     /* a delay lease's (or region's) delay; 0: block */
};

/* Handle Identify: set @c's who/why; answers Identified. */
void cpuhpd_holders_identify(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/*
 * cpuhpd_holders_collect() - every holder, oldest first, in a malloc()ed
 * array.  Looks at the fast counts now, which starts (or ends) a
 * connection's "held since".
 * Return: the count, or -ENOMEM.
 */
ssize_t cpuhpd_holders_collect(struct cpuhpd *d, struct cpuhpd_holder **out);

/* Leases held, socket and fast (a snapshot of the slots), for log lines. */
unsigned cpuhpd_holders_total(const struct cpuhpd *d);

/*
 * cpuhpd_holders_describe() - the holders, oldest first, in one line for
 * humans: "pid 4242 (resize-pools) 'sizing worker pools', held 4.1 s; ...".
 * Cut with "and N more" to fit @size; "no lease" if none is held.
 */
void cpuhpd_holders_describe(struct cpuhpd *d, char *buf, size_t size);

#endif /* CPUHPD_HOLDERS_H */
