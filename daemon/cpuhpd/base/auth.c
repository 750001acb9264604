/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Peer credentials and the admin check; see auth.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "cpuhpd.h"
#include "core/conn.h"
#include "auth.h"

static bool in_groups(const gid_t *groups, size_t n, gid_t gid)
{
	for (size_t i = 0; i < n; i++)
		if (groups[i] == gid)
			return true;
	return false;
}

/* The groups the peer process had when it connected. */
static int peer_in_group(int fd, uid_t uid, gid_t gid, gid_t want, bool *out)
{
	gid_t small[64], *groups = small;
	socklen_t len = sizeof(small);
	int err = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		if (errno != ERANGE)
			goto fallback;
		groups = malloc(len);
		if (!groups)
			return -ENOMEM;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
			err = -errno;
			free(groups);
			return err;
		}
	}
	*out = in_groups(groups, len / sizeof(gid_t), want);
	if (groups != small)
		free(groups);
	return 0;

fallback:
	/* Kernels before 4.13: the group database's view of the peer's user. */
	{
		struct passwd *pw = getpwuid(uid);
		int n = (int)(sizeof(small) / sizeof(small[0]));

		if (!pw) {
			*out = false;
			return 0;
		}
		if (getgrouplist(pw->pw_name, gid, small, &n) < 0)
			n = (int)(sizeof(small) / sizeof(small[0]));
		*out = in_groups(small, (size_t)n, want);
		return 0;
	}
}

/*
 * The peer's command name, for `cpuhpctl leases` and log lines.  Read once,
 * at accept: the pid may be reused later.  A peer in another pid namespace
 * has pid 0 here; we say "?" rather than guess.
 */
static void read_comm(pid_t pid, char *out, size_t size)
{
	char path[32];
	ssize_t n = -1;
	int fd;

	snprintf(out, size, "?");
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	do
		n = read(fd, out, size - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0) {
		snprintf(out, size, "?");
		return;
	}
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

int cpuhpd_auth_peer(int fd, const struct cpuhpd_options *opt, struct cpuhpd_peer *out)
{
	struct ucred uc;
	socklen_t len = sizeof(uc);
	bool admin;
	int err;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) < 0)
		return -errno;
	admin = uc.uid == 0;
	if (!admin && opt->admin_group) {
		admin = uc.gid == opt->admin_gid;
		if (!admin) {
			err = peer_in_group(fd, uc.uid, uc.gid, opt->admin_gid, &admin);
			if (err)
				return err;
		}
	}
	out->pid = uc.pid;
	out->uid = uc.uid;
	out->gid = uc.gid;
	out->admin = admin;
	read_comm(uc.pid, out->comm, sizeof(out->comm));
	return 0;
}

int cpuhpd_auth_group(const char *name, gid_t *out)
{
	struct group *gr = getgrnam(name);
	char *end;
	unsigned long v;

	if (gr) {
		*out = gr->gr_gid;
		return 0;
	}
	errno = 0;
	v = strtoul(name, &end, 10);
	if (*name && !*end && !errno && v < (gid_t)-1) {
		*out = (gid_t)v;
		return 0;
	}
	return -ENOENT;
}
