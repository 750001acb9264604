/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ListLeases (`cpuhpctl leases`): every socket lease, oldest first, with its
 * holder, names and age; every connection's fast leases as one row with
 * their count; the hotplug queue; the freezes; the restart grace left.
 * In pages that fit a frame (core/page.h).  Any client.  Loop thread only.
 */
#ifndef CPUHPD_LISTING_H
#define CPUHPD_LISTING_H

#include "cpuhp.pb-c.h"

struct cpuhpd_conn;

/* Handle ListLeases: answers LeaseList. */
void cpuhpd_listing_request(struct cpuhpd_conn *c, const Cpuhp__Request *req);

#endif /* CPUHPD_LISTING_H */
