/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The view and its subscribers; see view.h. */
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "cpus.h"
#include "view.h"

int cpuhpd_view_start(struct cpuhpd *d)
{
	const char *which = NULL;
	int err = cpuhpd_cpus_read(d->opt.sysfs_root, &d->view, &which);

	if (err)
		cpuhpd_err("cannot read %s/devices/system/cpu/%s: %s; is --sysfs-root right?",
		           d->opt.sysfs_root, which, strerror(-err));
	return err;
}

void cpuhpd_view_plug(struct cpuhpd *d, const cpuhpd_view_fn *subscribers)
{
	d->view_subscribers = subscribers;
}

bool cpuhpd_view_update(struct cpuhpd *d, const struct cpuhpd_cpus *v, bool external)
{
	struct cpuhpd_view_change ch = {.external = external};
	char *was = NULL, *now = NULL;

	ch.present_changed = !cpuhp_cpuset_equal(&d->view.present, &v->present);
	for (int cpu = -1; ch.present_changed && (cpu = cpuhp_cpuset_next(&v->present, cpu)) >= 0;)
		if (!cpuhp_cpuset_has(&d->view.present, (unsigned)cpu))
			cpuhp_cpuset_add(&ch.added, (unsigned)cpu);
	for (int cpu = -1;
	     ch.present_changed && (cpu = cpuhp_cpuset_next(&d->view.present, cpu)) >= 0;)
		if (!cpuhp_cpuset_has(&v->present, (unsigned)cpu))
			cpuhp_cpuset_add(&ch.removed, (unsigned)cpu);
	ch.online_was = d->view.online;
	memcpy(ch.smt_was, d->view.smt_control, sizeof(ch.smt_was));
	ch.changed = !cpuhp_cpuset_equal(&d->view.online, &v->online);
	if (ch.changed)
		was = cpuhpd_cpus_to_str(&d->view.online);
	d->view = *v;
	if (ch.changed)
		now = cpuhpd_cpus_to_str(&d->view.online);
	ch.was = was;
	ch.now = now;
	for (const cpuhpd_view_fn *fn = d->view_subscribers; fn && *fn; fn++)
		(*fn)(d, &ch);
	free(was);
	free(now);
	return ch.changed;
}
