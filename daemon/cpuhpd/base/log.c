/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Log lines on stderr, see log.h. */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text.h"

#include "log.h"

/* Written once by main before any thread starts; atomic only to keep TSan quiet by construction. */
static atomic_bool verbose;

static const char *const level_names[] = {
    [CPUHPD_LOG_ERROR] = "error",
    [CPUHPD_LOG_WARN] = "warning",
    [CPUHPD_LOG_INFO] = "info",
    [CPUHPD_LOG_DEBUG] = "debug",
};

/* The syslog priority of each level, for the journal: "<N>" starts the line. */
static const char *const level_prio[] = {
    [CPUHPD_LOG_ERROR] = "<3>",
    [CPUHPD_LOG_WARN] = "<4>",
    [CPUHPD_LOG_INFO] = "<6>",
    [CPUHPD_LOG_DEBUG] = "<7>",
};

enum { STREAM_UNKNOWN, STREAM_JOURNAL, STREAM_PLAIN };
static atomic_int stream_kind;

/*
 * systemd sets JOURNAL_STREAM=DEV:INO for a service whose stderr is the
 * journal's stream socket; it is inherited, so it names stderr only while
 * fd 2's device and inode match (a child with stderr redirected keeps the
 * variable).  Then the journal reads a leading "<N>" as the line's
 * priority, and `journalctl -p warning` finds the warnings.  Decided once:
 * every thread computes the same answer, so a race only repeats the work.
 */
static bool to_journal(void)
{
	int kind = atomic_load_explicit(&stream_kind, memory_order_relaxed);
	const char *env;
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	if (kind == STREAM_UNKNOWN) {
		kind = STREAM_PLAIN;
		env = getenv("JOURNAL_STREAM");
		if (env && sscanf(env, "%llu:%llu%c", &dev, &ino, &tail) == 2 &&
		    fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
		    (unsigned long long)st.st_ino == ino)
			kind = STREAM_JOURNAL;
		atomic_store_explicit(&stream_kind, kind, memory_order_relaxed);
	}
	return kind == STREAM_JOURNAL;
}

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
	char msg[1024], line[2048];
	va_list ap;
	size_t len;
	int n, m;

	if (level == CPUHPD_LOG_DEBUG && !cpuhpd_log_verbose())
		return;
	va_start(ap, fmt);
	m = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	len = (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1;
	n = snprintf(line, sizeof(line), "%scpuhpd: %s: ", to_journal() ? level_prio[level] : "",
	             level_names[level]);
	/*
	 * What a message quotes came from clients and processes (who, why,
	 * state names, comm, the callbacks' words): a CR or LF there would
	 * forge a line, ESC would drive the terminal that tails the log.
	 * Escaped here, for every line at once; the daemon's own words have
	 * no control character.  A line cut in a character shows its bytes.
	 */
	cpuhp__text_escape(line + n, sizeof(line) - (size_t)n - 1, msg, len, CPUHP__TEXT_UTF8);
	n += (int)strlen(line + n);
	line[n++] = '\n';
	/* A log line that cannot be written has nowhere else to go. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}
