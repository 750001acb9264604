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
