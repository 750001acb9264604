/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Requests: decode one payload and hand it to its handler.  Hello must come
 * first; a payload that is not a Request closes the connection (EPROTO); a
 * request kind this daemon does not know (a newer client) gets EOPNOTSUPP
 * and the connection stays open.  Loop thread only.
 */
#ifndef CPUHPD_DISPATCH_H
#define CPUHPD_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

struct cpuhpd_conn;

void cpuhpd_dispatch(struct cpuhpd_conn *c, const uint8_t *payload, size_t len);

#endif /* CPUHPD_DISPATCH_H */
