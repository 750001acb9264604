/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd's configuration files, read the one way for the options at start
 * (config.c) and for the plan at start and at every reload (hotplug/plan*):
 *
 *   FILE     the main file (--config FILE, else SYSCONFDIR/cpuhpd.conf);
 *   FILE.d/  its drop-ins: every entry whose name ends in ".conf" and does
 *            not start with '.', read after FILE in the byte order of the
 *            names (strcmp), so that "50-x.conf" comes before "60-y.conf"
 *            and a later file's line wins over an earlier one's.
 *
 * A line is "name = value" (spaces around either are dropped); blank lines
 * and lines whose first character that is not a space is '#' are
 * ignored.  A writer that renames a finished file into place names its
 * temporary file ".NAME.XXXXXX" (cpuhpd's own do): a crash before the
 * rename leaves only a file that is never read.
 */
#ifndef CPUHPD_CONFFILE_H
#define CPUHPD_CONFFILE_H

#include <stdbool.h>
#include <stddef.h>

/* Room for a message about one line: its path, line number and what is wrong. */
#define CPUHPD_CONF_ERR_MAX 1024

/*
 * One meaningful line of @path (@lineno counts from 1): fill @err and
 * return a negative errno to stop reading the file, else 0.
 */
typedef int (*cpuhpd_conf_line_fn)(void *arg, const char *path, unsigned lineno, const char *name,
                                   const char *value, char *err, size_t errsize);

/**
 * cpuhpd_conf_read() - every meaningful line of @path, in order, to @fn.
 * @missing_ok: a file that does not exist is read as empty (return 0)
 * @err:        on failure, what is wrong, naming the file (and the line)
 *
 * Context: any; blocks on the file system.
 * Return: 0; -ENOENT for a missing file unless @missing_ok; -EINVAL for a
 * line that is not "name = value"; the errno of a read; what @fn returned.
 */
int cpuhpd_conf_read(const char *path, bool missing_ok, cpuhpd_conf_line_fn fn, void *arg,
                     char *err, size_t errsize);

/**
 * cpuhpd_conf_dropins() - the drop-ins of @conf (the files of "@conf.d"
 * that are read, as above), sorted, as a NULL-terminated vector of
 * malloc()ed paths (free it with cpuhpd_conf_free()).  No directory: an
 * empty vector.
 * Return: 0; -ENOMEM; the errno of a directory that exists but cannot be
 * read (@err says which).
 */
int cpuhpd_conf_dropins(const char *conf, char ***out, char *err, size_t errsize);

/* "@conf.d" in a malloc()ed string; NULL when out of memory. */
char *cpuhpd_conf_dropin_dir(const char *conf);

/* Free a vector of cpuhpd_conf_dropins(). */
void cpuhpd_conf_free(char **list);

/* "yes", "true", "1" / "no", "false", "0" into *@out.  Return: 0 or -EINVAL. */
int cpuhpd_conf_bool(const char *value, bool *out);

#endif /* CPUHPD_CONFFILE_H */
