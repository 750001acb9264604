/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sd_notify; see notify.h. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cpuhpd.h"
#include "log.h"
#include "notify.h"
#include "scm.h"

int cpuhpd_notify_fds(const char *state, const int *fds, unsigned nfds)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char ctl[CMSG_SPACE(sizeof(int) * CPUHPD_NOTIFY_MAX_FDS)];
	struct iovec iov = {.iov_base = (void *)state, .iov_len = strlen(state)};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	size_t len;
	int fd, err = 0;

	if (!path || !*path)
		return -ENOENT;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path)) {
		cpuhpd_warn("NOTIFY_SOCKET=%s is not a socket path; not notifying", path);
		return -EINVAL;
	}
	if (nfds > CPUHPD_NOTIFY_MAX_FDS)
		return -E2BIG;
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0'; /* abstract namespace */
	mh.msg_name = &sa;
	mh.msg_namelen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
	if (nfds)
		cpuhpd_scm_rights(&mh, ctl, fds, nfds);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0) {
		err = -errno;
		cpuhpd_debug("cannot notify %s: %m", path); /* the listener may be gone */
	}
	close(fd);
	return err;
}

void cpuhpd_notify(const char *state)
{
	(void)cpuhpd_notify_fds(state, NULL, 0);
}

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
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, notify_timer);
	char line[sizeof(d->notify_status) + 8];

	memcpy(line, "STATUS=", 7);
	status_text(d, line + 7, sizeof(line) - 7);
	if (!strcmp(line + 7, d->notify_status))
		return;
	snprintf(d->notify_status, sizeof(d->notify_status), "%s", line + 7);
	cpuhpd_notify(line);
}

int cpuhpd_notify_status_init(struct cpuhpd *d)
{
	const char *path = getenv("NOTIFY_SOCKET");

	if (!path || !*path || uv_timer_init(d->loop, &d->notify_timer))
		return 0;
	d->notify_timer_on = true;
	cpuhpd_notify_status_changed(d);
	return 0;
}

void cpuhpd_notify_status_changed(struct cpuhpd *d)
{
	if (d->notify_timer_on && !uv_is_active((uv_handle_t *)&d->notify_timer))
		uv_timer_start(&d->notify_timer, status_timer_cb, CPUHPD_NOTIFY_STATUS_MS, 0);
}

void cpuhpd_notify_status_close(struct cpuhpd *d)
{
	if (!d->notify_timer_on)
		return;
	uv_close((uv_handle_t *)&d->notify_timer, NULL);
	d->notify_timer_on = false;
}
