/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where cpuhpd listens by default, and the environment variable that moves
 * its clients elsewhere.  The one home of the default: <cpuhp/client.h>
 * includes it (cpuhp_client_socket_path() resolves the two), cpuhpd's
 * options include it without linking the client, and meson reads the
 * default from here (compiler.get_define) to write cpuhpd.socket's
 * ListenStream=.  Installed with <cpuhp/client.h>.
 */
#ifndef CPUHP_SOCKET_H
#define CPUHP_SOCKET_H

/* Where cpuhpd listens unless CPUHP_SOCKET or a path argument says otherwise. */
#define CPUHP_CLIENT_DEFAULT_SOCKET "/run/cpuhpd/cpuhpd.sock"
/* Clients connect there instead when it is set and not empty. */
#define CPUHP_CLIENT_SOCKET_ENV "CPUHP_SOCKET"
/*
 * Clients trust a daemon only if it runs as root, as their own uid, or as
 * the uid this variable names (a number), so that a socket someone else
 * bound cannot fake a lease or a hotplug.
 */
#define CPUHP_CLIENT_DAEMON_UID_ENV "CPUHP_DAEMON_UID"

#endif /* CPUHP_SOCKET_H */
