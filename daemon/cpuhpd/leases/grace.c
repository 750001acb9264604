/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The restart grace; see grace.h. */
#include "cpuhpd.h"
#include "base/log.h"
#include "core/gate.h"
#include "grace.h"

static void grace_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, grace.timer);

	d->grace.holding = false;
	cpuhpd_info("restart grace over: hotplugs may run");
	cpuhpd_snapshot_changed(d);
	/* A hotplug that waited for nothing but the grace goes on now. */
	cpuhpd_gate_check(d);
}

int cpuhpd_grace_start(struct cpuhpd *d)
{
	struct cpuhpd_grace *r = &d->grace;
	int err;

	if (!d->instance_prev_pid || r->adopted)
		return 0;
	if (!d->opt.restart_grace_ms) {
		cpuhpd_warn("the previous cpuhpd (pid %ld) on this sysfs tree ended without "
		            "handing its clients over; --restart-grace-ms 0: hotplugs may run at "
		            "once",
		            d->instance_prev_pid);
		return 0;
	}
	err = uv_timer_init(d->loop, &r->timer);
	if (err)
		return err;
	r->timer_init = true;
	r->holding = true;
	r->until = uv_now(d->loop) + d->opt.restart_grace_ms;
	uv_timer_start(&r->timer, grace_cb, d->opt.restart_grace_ms, 0);
	cpuhpd_warn("the previous cpuhpd (pid %ld) on this sysfs tree ended without handing "
	            "its clients over (a crash, or a stop with leases held and no fd store): "
	            "holding every hotplug for %u ms (--restart-grace-ms) so that its lease "
	            "holders notice first; leases are granted meanwhile",
	            d->instance_prev_pid, d->opt.restart_grace_ms);
	return 0;
}

void cpuhpd_grace_close(struct cpuhpd *d)
{
	if (d->grace.timer_init)
		uv_close((uv_handle_t *)&d->grace.timer, NULL);
	d->grace.timer_init = false;
	d->grace.holding = false;
}

bool cpuhpd_grace_holding(const struct cpuhpd *d)
{
	return d->grace.holding;
}

uint64_t cpuhpd_grace_remaining_ms(const struct cpuhpd *d)
{
	uint64_t now;

	if (!d->grace.holding)
		return 0;
	now = uv_now(d->loop);
	return d->grace.until > now ? d->grace.until - now : 1;
}

void cpuhpd_grace_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s)
{
	s->grace_ms = cpuhpd_grace_remaining_ms(d);
}
