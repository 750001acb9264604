/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds what: a client's who/why (Identify, LeaseAcquire), the listing
 * of every lease and hotplug request (ListLeases, `cpuhpctl leases`), and
 * the words that name the holders in a hotplug's log line and in the error
 * of one that timed out behind them.
 *
 * A socket lease is named by the who/why it was acquired with, else by its
 * connection's (Identify), else by the command name the daemon read at
 * accept.  Fast leases are counters in shared memory: they are listed once
 * per connection with their count, under the connection's who/why, held
 * since the daemon first saw the count above zero (it looks whenever it
 * lists, describes or starts waiting for leases).
 *
 * Loop thread only.
 */
#ifndef CPUHPD_HOLDERS_H
#define CPUHPD_HOLDERS_H

#include <stddef.h>
#include <stdint.h>

#include "cpuhp.pb-c.h"

struct cpuhpd;
struct cpuhpd_conn;

/* Handle Identify: set @c's who/why; answers Identified. */
void cpuhpd_holders_identify(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/* Handle ListLeases: answers LeaseList. */
void cpuhpd_holders_list(struct cpuhpd_conn *c, const Cpuhp__Request *req);

/*
 * cpuhpd_holders_describe() - the holders, oldest first, in one line for
 * humans: "pid 4242 (resize-pools) 'sizing worker pools', held 4.1 s; ...".
 * Cut with "and N more" to fit @size; "no lease" if none is held.
 */
void cpuhpd_holders_describe(struct cpuhpd *d, char *buf, size_t size);

#endif /* CPUHPD_HOLDERS_H */
