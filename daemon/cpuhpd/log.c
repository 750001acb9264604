/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log lines on stderr, see log.h. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "log.h"

/* Written once by main before any thread starts; atomic only to keep TSan quiet by construction. */
static atomic_bool verbose;

static const char *const level_names[] = {
    [CPUHPD_LOG_ERROR] = "error",
    [CPUHPD_LOG_WARN] = "warning",
    [CPUHPD_LOG_INFO] = "info",
    [CPUHPD_LOG_DEBUG] = "debug",
};

void cpuhpd_log_set_verbose(bool v)
{
	atomic_store_explicit(&verbose, v, memory_order_relaxed);
}

bool cpuhpd_log_verbose(void)
{
	return atomic_load_explicit(&verbose, memory_order_relaxed);
}

void cpuhpd_log(enum cpuhpd_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n, m;

	if (level == CPUHPD_LOG_DEBUG && !cpuhpd_log_verbose())
		return;
	n = snprintf(line, sizeof(line), "cpuhpd: %s: ", level_names[level]);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* A log line that cannot be written has nowhere else to go. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
