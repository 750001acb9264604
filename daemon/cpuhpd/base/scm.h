/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Descriptors on a Unix socket message (SCM_RIGHTS), for the two places
 * that send them: a client's fast-path grant (conn.c) and the service
 * manager's fd store (notify.c).
 */
#ifndef CPUHPD_SCM_H
#define CPUHPD_SCM_H

#include <string.h>
#include <sys/socket.h>

/*
 * Attach @fds (@nfds of them, at least 1) to @mh, using @ctl, which must
 * hold CMSG_SPACE(sizeof(int) * @nfds) bytes.
 */
static inline void cpuhpd_scm_rights(struct msghdr *mh, void *ctl, const int *fds, unsigned nfds)
{
	struct cmsghdr *cm;

	memset(ctl, 0, CMSG_SPACE(sizeof(int) * nfds));
	mh->msg_control = ctl;
	mh->msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
}

#endif /* CPUHPD_SCM_H */
