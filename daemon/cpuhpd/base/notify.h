/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sd_notify protocol, without libsystemd: one datagram to
 * $NOTIFY_SOCKET.  "READY=1" once the socket listens (cpuhpd.service is
 * Type=notify; the tests wait for it the same way instead of polling the
 * socket), "STOPPING=1" when a stop begins, "STATUS=..." lines
 * (statusline.c), and the fd store's "FDSTORE=1" and "FDSTOREREMOVE=1"
 * with their descriptors (fdstore.c).  A no-op without $NOTIFY_SOCKET.
 */
#ifndef CPUHPD_NOTIFY_H
#define CPUHPD_NOTIFY_H

struct cpuhpd;

void cpuhpd_notify(const char *state);

/* Descriptors one message may carry (SCM_RIGHTS). */
#define CPUHPD_NOTIFY_MAX_FDS 4

/**
 * cpuhpd_notify_fds() - send @state with @nfds descriptors (the service
 * manager gets its own copies; the caller keeps and closes its).
 * Return: 0; -ENOENT without $NOTIFY_SOCKET; another -errno when the
 * message could not be sent (nobody listens, or the store is full).
 */
int cpuhpd_notify_fds(const char *state, const int *fds, unsigned nfds);

#endif /* CPUHPD_NOTIFY_H */
