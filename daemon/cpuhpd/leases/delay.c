/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A delay lease's delay; see delay.h. */
#include "cpuhpd.h"
#include "delay.h"

uint32_t cpuhpd_delay_grant(const struct cpuhpd *d, Cpuhp__LeaseMode mode, uint32_t asked,
                            bool *clipped)
{
	*clipped = false;
	if (mode != CPUHP__LEASE_MODE__LEASE_DELAY)
		return 0;
	if (!asked)
		return d->opt.max_delay_ms; /* "as long as cpuhpd allows" */
	if (asked <= d->opt.max_delay_ms)
		return asked;
	*clipped = true;
	return d->opt.max_delay_ms;
}
