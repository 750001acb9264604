/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd's config file (--config FILE, else SYSCONFDIR/cpuhpd.conf): one
 * option per line, "name = value", named as the long options without the
 * leading dashes; "name = yes" / "name = no" for an option without a
 * value; blank lines and lines starting with '#' are ignored.  Its options
 * go in front of the command line's, so the command line wins.
 */
#ifndef CPUHPD_CONFIG_H
#define CPUHPD_CONFIG_H

#include <getopt.h>
#include <stdbool.h>

/**
 * cpuhpd_config_argv() - @argv with the options of the config file @path
 * inserted after argv[0].
 * @path:     the file; read whole, never written
 * @missing_ok: a @path that does not exist gives no option (the default
 *            file), instead of an error (a file named on the command line)
 * @longopts: the options a line may name (getopt_long's table)
 * @argc:     in: @argv's length; out: the new vector's
 * @argv:     in: the command line; out: the new vector, which lives until
 *            exit (option values point into it)
 *
 * Context: main, before any thread starts.  Prints what is wrong itself,
 * with the file name and line number.
 * Return: 0 (@argv untouched when a @missing_ok file is missing), -ENOENT
 * (or another errno) if @path cannot be read, -EINVAL
 * for a line naming no option, an option that takes no value given one
 * other than yes/no, or a missing value; -ENOMEM.
 */
int cpuhpd_config_argv(const char *path, bool missing_ok, const struct option *longopts, int *argc,
                       char ***argv);

#endif /* CPUHPD_CONFIG_H */
