/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A delay lease's delay: what a LeaseAcquire or a FastPathRequest asked
 * (LEASE_DELAY and a delay in ms), clipped at --max-delay-ms, like logind's
 * InhibitDelayMaxSec.  A pending hotplug waits at most that long after its
 * notice for such a lease, then revokes it (revoke.h).  0 is a block lease.
 */
#ifndef CPUHPD_DELAY_H
#define CPUHPD_DELAY_H

#include <stdbool.h>
#include <stdint.h>

#include "cpuhp.pb-c.h"

/* --max-delay-ms: the default, and the most it may be. */
#define CPUHPD_MAX_DELAY_MS       5000
#define CPUHPD_MAX_DELAY_LIMIT_MS 3600000

struct cpuhpd;

/*
 * The delay a lease asked with @mode and @asked ms gets: 0 for a block
 * lease; a delay lease's, at most cpuhpd --max-delay-ms (which @asked 0
 * means too), *@clipped if that made it shorter.
 */
uint32_t cpuhpd_delay_grant(const struct cpuhpd *d, Cpuhp__LeaseMode mode, uint32_t asked,
                            bool *clipped);

#endif /* CPUHPD_DELAY_H */
