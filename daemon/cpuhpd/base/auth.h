/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who is on the other end of a connection (SO_PEERCRED), and whether it may
 * hotplug: uid 0, or a member of --admin-group.  Membership comes from the
 * peer's own supplementary groups at connect time (SO_PEERGROUPS), so a
 * process that dropped its groups (setpriv --clear-groups) is not an admin
 * even if the group database lists its user.
 */
#ifndef CPUHPD_AUTH_H
#define CPUHPD_AUTH_H

#include <sys/types.h>

struct cpuhpd_options;
struct cpuhpd_peer;

/** Return: 0 with *@out filled, or -errno from getsockopt. */
int cpuhpd_auth_peer(int fd, const struct cpuhpd_options *opt, struct cpuhpd_peer *out);

/** cpuhpd_auth_group() - resolve a group name or number. Return: 0 or -ENOENT. */
int cpuhpd_auth_group(const char *name, gid_t *out);

#endif /* CPUHPD_AUTH_H */
