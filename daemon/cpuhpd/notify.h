/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sd_notify protocol, without libsystemd: one datagram to
 * $NOTIFY_SOCKET.  "READY=1" once the socket listens (cpuhpd.service is
 * Type=notify; the tests wait for it the same way instead of polling the
 * socket), "STOPPING=1" when a stop begins.  A no-op without $NOTIFY_SOCKET.
 */
#ifndef CPUHPD_NOTIFY_H
#define CPUHPD_NOTIFY_H

void cpuhpd_notify(const char *state);

#endif /* CPUHPD_NOTIFY_H */
