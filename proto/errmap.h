/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Errors on the wire: errno values differ between architectures, so the
 * protocol carries Cpuhp__ErrorCode and each side maps at its edge, here and
 * nowhere else.  Used by cpuhpd (errno -> code), libcpuhp-client (code ->
 * errno), and through the client the Python binding.
 */
#ifndef CPUHP_PROTO_ERRMAP_H
#define CPUHP_PROTO_ERRMAP_H

#include "cpuhp.pb-c.h"

/**
 * cpuhp__errmap_to_wire() - the code for an errno.
 * @err: an errno value, negative or positive.
 * Return: its code; CPUHP__ERROR_CODE__ERR_UNKNOWN for 0 and for any errno
 * the protocol has no name for.
 */
Cpuhp__ErrorCode cpuhp__errmap_to_wire(int err);

/**
 * cpuhp__errmap_from_wire() - the errno for a code.
 * @code: as received; a newer peer may send values this side does not know.
 * Return: a negative errno; -EIO for ERR_UNKNOWN and unknown values, so a
 * failure never maps to success.
 */
int cpuhp__errmap_from_wire(int code);

/**
 * cpuhp__errmap_describe() - a short human text for @code in the terms of
 * the protocol ("a hotplug is in the way", "no such lease ..."), for log
 * lines and messages when the peer sent none.
 * Return: a static string, never NULL.
 */
const char *cpuhp__errmap_describe(int code);

#endif /* CPUHP_PROTO_ERRMAP_H */
