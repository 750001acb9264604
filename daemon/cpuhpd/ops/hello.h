/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hello, a connection's first request: the protocol version both speak, the
 * daemon's version and frame limit, and whether it offers the fast path.
 * Loop thread only.
 */
#ifndef CPUHPD_HELLO_H
#define CPUHPD_HELLO_H

#include "cpuhp.pb-c.h"

struct cpuhpd_conn;

/* Handle Hello: answers HelloReply, or fails the connection (a version it cannot speak). */
void cpuhpd_hello(struct cpuhpd_conn *c, const Cpuhp__Request *req);

#endif /* CPUHPD_HELLO_H */
