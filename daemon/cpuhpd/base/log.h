/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Log lines on stderr: "cpuhpd: LEVEL: message".  One write(2) per line, so
 * lines from the worker thread and the loop never interleave.  Under systemd
 * the journal adds the timestamp, and each line starts with its syslog
 * priority ("<3>" error, "<4>" warning, "<6>" info, "<7>" debug) when
 * $JOURNAL_STREAM names stderr; --verbose adds debug lines.
 */
#ifndef CPUHPD_LOG_H
#define CPUHPD_LOG_H

#include <stdbool.h>

enum cpuhpd_log_level {
	CPUHPD_LOG_ERROR,
	CPUHPD_LOG_WARN,
	CPUHPD_LOG_INFO,
	CPUHPD_LOG_DEBUG,
};

void cpuhpd_log_set_verbose(bool verbose);
bool cpuhpd_log_verbose(void);
void cpuhpd_log(enum cpuhpd_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define cpuhpd_err(...)   cpuhpd_log(CPUHPD_LOG_ERROR, __VA_ARGS__)
#define cpuhpd_warn(...)  cpuhpd_log(CPUHPD_LOG_WARN, __VA_ARGS__)
#define cpuhpd_info(...)  cpuhpd_log(CPUHPD_LOG_INFO, __VA_ARGS__)
#define cpuhpd_debug(...) cpuhpd_log(CPUHPD_LOG_DEBUG, __VA_ARGS__)

#endif /* CPUHPD_LOG_H */
