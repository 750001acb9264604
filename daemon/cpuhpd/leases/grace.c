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
	const struct cpuhpd_instance_prev *prev = &d->instance_prev;
	char why[300];
	int err;

	if (!prev->pid || r->adopted)
		return 0;
	if (prev->handover)
		snprintf(
		    why, sizeof(why),
		    "the previous cpuhpd (pid %ld) on this sysfs tree left %u client(s) "
		    "holding %u lease(s) in the fd store, and this start got none of them back "
		    "(a stop rather than a restart, or a store lost): they saw EOF",
		    prev->pid, prev->clients, prev->leases);
	else
		snprintf(why, sizeof(why),
		         "the previous cpuhpd (pid %ld) on this sysfs tree ended without handing "
		         "its clients over (a crash, or a stop with leases held and no fd store)",
		         prev->pid);
	if (!d->opt.restart_grace_ms) {
		cpuhpd_warn("%s; --restart-grace-ms 0: hotplugs may run at once", why);
		return 0;
	}
	err = uv_timer_init(d->loop, &r->timer);
	if (err)
		return err;
	r->timer_init = true;
	r->holding = true;
	r->until = uv_now(d->loop) + d->opt.restart_grace_ms;
	uv_timer_start(&r->timer, grace_cb, d->opt.restart_grace_ms, 0);
	cpuhpd_warn("%s: holding every hotplug for %u ms (--restart-grace-ms) so that its lease "
	            "holders notice first; leases are granted meanwhile",
	            why, d->opt.restart_grace_ms);
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
