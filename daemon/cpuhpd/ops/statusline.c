/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The STATUS= line; see statusline.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpuhpd.h"
#include "base/notify.h"
#include "core/snapshot.h"
#include "statusline.h"

/* What the daemon is doing, in one line for `systemctl status`. */
static void status_text(struct cpuhpd *d, char *buf, size_t size)
{
	struct cpuhpd_snapshot s;
	unsigned held;
	int n;

	cpuhpd_snapshot_take(d, &s);
	held = s.leases_held + s.fast_held;
	n = snprintf(buf, size, "%u lease%s held", held, held == 1 ? "" : "s");
	if (n < 0 || (size_t)n >= size)
		return;
	switch (s.writer) {
	case CPUHP__WRITER_STATE__WRITER_WAITING:
		snprintf(buf + n, size - (size_t)n, "; hotplug #%" PRIu64 " waiting for %s",
		         s.hotplug_seq, held ? "them" : "in-process readers");
		break;
	case CPUHP__WRITER_STATE__WRITER_RUNNING:
		snprintf(buf + n, size - (size_t)n, "; hotplug #%" PRIu64 " writing sysfs",
		         s.hotplug_seq);
		break;
	default:
		snprintf(buf + n, size - (size_t)n, "; no hotplug pending; %u connection%s",
		         s.connections, s.connections == 1 ? "" : "s");
		break;
	}
	if (s.hotplugs_queued > 1) {
		size_t len = strlen(buf);

		snprintf(buf + len, size - len, "; %u more queued", s.hotplugs_queued - 1);
	}
	if (s.grace_ms) {
		size_t len = strlen(buf);

		/* No time left in it: the line changes only when something else does. */
		snprintf(buf + len, size - len, "; hotplugs held for the restart grace");
	}
}

static void status_timer_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, statusline.timer);
	char line[sizeof(d->statusline.last) + 8];

	memcpy(line, "STATUS=", 7);
	status_text(d, line + 7, sizeof(line) - 7);
	if (!strcmp(line + 7, d->statusline.last))
		return;
	snprintf(d->statusline.last, sizeof(d->statusline.last), "%s", line + 7);
	cpuhpd_notify(line);
}

int cpuhpd_statusline_init(struct cpuhpd *d)
{
	const char *path = getenv("NOTIFY_SOCKET");

	if (!path || !*path || uv_timer_init(d->loop, &d->statusline.timer))
		return 0;
	d->statusline.timer_on = true;
	cpuhpd_statusline_changed(d);
	return 0;
}

void cpuhpd_statusline_changed(struct cpuhpd *d)
{
	if (d->statusline.timer_on && !uv_is_active((uv_handle_t *)&d->statusline.timer))
		uv_timer_start(&d->statusline.timer, status_timer_cb, CPUHPD_STATUSLINE_MS, 0);
}

void cpuhpd_statusline_close(struct cpuhpd *d)
{
	if (!d->statusline.timer_on)
		return;
	uv_close((uv_handle_t *)&d->statusline.timer, NULL);
	d->statusline.timer_on = false;
}
