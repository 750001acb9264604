/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The STATUS= line that `systemctl status cpuhpd` shows: what the daemon is
 * doing ("2 leases held; hotplug #4 waiting for them"; "; hotplugs held
 * for the restart grace" while the grace holds them), made from one
 * snapshot (snapshot.h).  It is made again when the snapshot may have
 * changed, at most every CPUHPD_STATUSLINE_MS, and sent only when its text
 * differs from the last one.  A no-op without $NOTIFY_SOCKET.  Loop thread
 * only.
 */
#ifndef CPUHPD_STATUSLINE_H
#define CPUHPD_STATUSLINE_H

#include <stdbool.h>

#include <uv.h>

struct cpuhpd;

#define CPUHPD_STATUSLINE_MS 100

struct cpuhpd_statusline {
	char last[160]; /* the last line sent */
	uv_timer_t timer;
	bool timer_on;
};

/* Start.  Return: 0. */
int cpuhpd_statusline_init(struct cpuhpd *d);
/* The snapshot may have changed (snapshot.h's change hook). */
void cpuhpd_statusline_changed(struct cpuhpd *d);
void cpuhpd_statusline_close(struct cpuhpd *d);

#endif /* CPUHPD_STATUSLINE_H */
