/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kernel uevents and the injection socket; see uevent.h. */
#include <errno.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "view.h"

/* Is this datagram "a CPU went online/offline, appeared or went away"? */
static bool is_cpu_event(const char *buf, size_t len)
{
	const char *action = NULL, *devpath = NULL;
	const char *p = buf, *end = buf + len;
	const char *num;

	while (p < end) {
		size_t n = strnlen(p, (size_t)(end - p));

		if (n > 7 && !strncmp(p, "ACTION=", 7))
			action = p + 7;
		else if (n > 8 && !strncmp(p, "DEVPATH=", 8))
			devpath = p + 8;
		p += n + 1;
	}
	/* Both point into NUL-terminated fields: a field cut by the end of @buf has no NUL. */
	if (!action || !devpath || buf[len - 1] != '\0')
		return false;
	if (strcmp(action, "online") && strcmp(action, "offline") && strcmp(action, "add") &&
	    strcmp(action, "remove"))
		return false;
	if (strncmp(devpath, "/devices/system/cpu/cpu", 23))
		return false;
	num = devpath + 23;
	if (!*num)
		return false;
	for (; *num; num++)
		if (*num < '0' || *num > '9')
			return false;
	return true;
}

static void refresh_done(struct cpuhpd *d, struct cpuhpd_job *job)
{
	struct cpuhpd_uevent *u = &d->uevent;

	u->busy = false;
	if (!job->view_ok)
		cpuhpd_warn("after a uevent: cannot read %s/devices/system/cpu/%s: %s",
		            d->opt.sysfs_root, job->err_what ? job->err_what : "?",
		            strerror(-job->err));
	else
		cpuhpd_view_update(d, &job->view, true);
	if (u->again && !d->stopping) {
		u->again = false;
		cpuhpd_uevent_refresh(d);
	}
}

void cpuhpd_uevent_refresh(struct cpuhpd *d)
{
	struct cpuhpd_uevent *u = &d->uevent;

	if (u->busy) {
		u->again = true;
		return;
	}
	u->busy = true;
	u->refresh.kind = CPUHPD_JOB_REFRESH;
	u->refresh.started = NULL;
	u->refresh.done = refresh_done;
	cpuhpd_worker_submit(d, &u->refresh);
}

static void on_datagrams(struct cpuhpd *d, int fd, bool from_kernel_only)
{
	char buf[8192];
	bool hit = false;

	for (;;) {
		struct sockaddr_nl nl;
		struct iovec iov = {buf, sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		ssize_t n;

		if (from_kernel_only) {
			mh.msg_name = &nl;
			mh.msg_namelen = sizeof(nl);
		}
		n = recvmsg(fd, &mh, MSG_DONTWAIT);
		if (n < 0) {
			if (errno == ENOBUFS) {
				/* Events were lost: re-read to be safe. */
				hit = true;
				continue;
			}
			break;
		}
		if (n == 0 || (mh.msg_flags & MSG_TRUNC))
			continue;
		if (from_kernel_only && nl.nl_pid != 0)
			continue;
		if (is_cpu_event(buf, (size_t)n)) {
			cpuhpd_debug("uevent: %.*s", (int)strnlen(buf, (size_t)n), buf);
			hit = true;
		}
	}
	if (hit && !d->stopping)
		cpuhpd_uevent_refresh(d);
}

static void nl_cb(uv_poll_t *p, int status, int events)
{
	struct cpuhpd *d = cpuhpd_container_of(p, struct cpuhpd, uevent.nl_poll);

	on_datagrams(d, d->uevent.nl_fd, true);
}

static void inj_cb(uv_poll_t *p, int status, int events)
{
	struct cpuhpd *d = cpuhpd_container_of(p, struct cpuhpd, uevent.inj_poll);

	on_datagrams(d, d->uevent.inj_fd, false);
}

static int open_netlink(struct cpuhpd *d)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = 1};
	int fd =
	    socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	d->uevent.nl_fd = fd;
	return 0;
}

static int open_injection(struct cpuhpd *d)
{
	const char *path = d->opt.uevent_socket;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	mode_t old;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		cpuhpd_err("--uevent-socket %s: path too long (the limit is %zu bytes)", path,
		           sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	/* A datagram socket has no listener to probe: a leftover socket file is just removed. */
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	strcpy(sa.sun_path, path);
	old = umask(0177);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old);
	if (err) {
		cpuhpd_err("--uevent-socket %s: cannot bind: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	d->uevent.inj_fd = fd;
	return 0;
}

int cpuhpd_uevent_start(struct cpuhpd *d)
{
	struct cpuhpd_uevent *u = &d->uevent;
	int err;

	u->nl_fd = u->inj_fd = -1;
	if (!d->opt.no_netlink) {
		err = open_netlink(d);
		if (err) {
			/* Not fatal: hotplugs still re-read; only external changes go unnoticed. */
			cpuhpd_warn(
			    "cannot listen to kernel uevents (%s): CPU hotplug done outside "
			    "cpuhpd is noticed only at the next hotplug",
			    strerror(-err));
		} else {
			uv_poll_init(d->loop, &u->nl_poll, u->nl_fd);
			uv_poll_start(&u->nl_poll, UV_READABLE, nl_cb);
			u->nl_open = true;
		}
	}
	if (d->opt.uevent_socket) {
		err = open_injection(d);
		if (err)
			return err;
		uv_poll_init(d->loop, &u->inj_poll, u->inj_fd);
		uv_poll_start(&u->inj_poll, UV_READABLE, inj_cb);
		u->inj_open = true;
	}
	return 0;
}

void cpuhpd_uevent_stop(struct cpuhpd *d)
{
	struct cpuhpd_uevent *u = &d->uevent;

	/* uv_close() of a poll handle stops watching the fd at once: it may be closed now. */
	if (u->nl_open) {
		uv_close((uv_handle_t *)&u->nl_poll, NULL);
		close(u->nl_fd);
		u->nl_open = false;
	}
	if (u->inj_open) {
		uv_close((uv_handle_t *)&u->inj_poll, NULL);
		close(u->inj_fd);
		unlink(d->opt.uevent_socket);
		u->inj_open = false;
	}
}
