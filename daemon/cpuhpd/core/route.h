/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a connection's notices go.  A client opens connections beside its
 * own (a lease that waits apart, an asynchronous call) but reads its events
 * on its own; such a connection names that one in its Hello
 * (Hello.notices_to, the number HelloReply.connection gave it), and the
 * notices about what it holds (HotplugPending, HotplugCancelled,
 * LeaseRevoked) go there.  Only between connections of one process (the
 * peers' SO_PEERCRED pids), so a client can send notices to no one else.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_ROUTE_H
#define CPUHPD_ROUTE_H

#include <stdint.h>

struct cpuhpd_conn;

/*
 * Hello.notices_to @id: @c's notices go to connection @id from now on.
 * Return: 0; -ESRCH (no such connection, or @c itself); -EPERM (another
 * process's): nothing changed then, the notices stay on @c.
 */
int cpuhpd_route_link(struct cpuhpd_conn *c, uint32_t id);

/* Where @c's notices go now: the connection it named, while that one lives; else @c. */
struct cpuhpd_conn *cpuhpd_route_target(struct cpuhpd_conn *c);

/* The id @c named (its notices go there), for the state text; 0: none. */
unsigned cpuhpd_route_saved(const struct cpuhpd_conn *c);

/* The connection is going away: it neither sends nor takes notices any more. */
void cpuhpd_route_conn_gone(struct cpuhpd_conn *c);

#endif /* CPUHPD_ROUTE_H */
