/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ListCpus (`cpuhpctl cpus`): each possible CPU as a row, like `lscpu -e`:
 * online, present, its topology as read while online or remembered since
 * (sysfs/topology.h), and the hotplug requests that name it.  Paged by
 * CPU number, as many rows as fit in a frame.  Any client.  Loop thread
 * only.
 */
#ifndef CPUHPD_OPS_CPUS_H
#define CPUHPD_OPS_CPUS_H

#include "cpuhp.pb-c.h"

struct cpuhpd_conn;

/* Handle ListCpus: answers CpuList. */
void cpuhpd_cpus_request(struct cpuhpd_conn *c, const Cpuhp__Request *req);

#endif /* CPUHPD_OPS_CPUS_H */
