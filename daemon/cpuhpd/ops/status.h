/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Status: the CPU sets as cpuhpd last read them and what it is doing
 * (leases, hotplugs, freezes, bypasses, the restart grace).  Any client.
 * Loop thread only.
 */
#ifndef CPUHPD_STATUS_H
#define CPUHPD_STATUS_H

#include "cpuhp.pb-c.h"

struct cpuhpd_conn;

/* Handle Status: answers Status. */
void cpuhpd_status_request(struct cpuhpd_conn *c, const Cpuhp__Request *req);

#endif /* CPUHPD_STATUS_H */
