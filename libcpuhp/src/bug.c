/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one place libcpuhp reports misuse or an impossible state: a message
 * naming the lock and the call site on stderr, then abort().  A lock used
 * wrongly cannot be trusted again, so there is nothing to return.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

void cpuhp__bug(const char *file, int line, const char *func, const char *lock, const char *fmt,
                ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* One write, so that concurrent reports do not interleave. */
	fprintf(stderr, "libcpuhp: BUG: lock '%s': %s (%s:%d %s)\n", lock, msg, file, line, func);
	abort();
}
