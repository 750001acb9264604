/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The command line of cpuhpd. */
#ifndef CPUHPD_OPTIONS_H
#define CPUHPD_OPTIONS_H

struct cpuhpd_options;

/**
 * cpuhpd_options_parse() - fill @o from the command line; prints --help,
 * --version and usage errors itself.
 * Return: 0 to run, 1 for a clean exit (--help, --version), -1 for a usage error.
 */
int cpuhpd_options_parse(int argc, char **argv, struct cpuhpd_options *o);

#endif /* CPUHPD_OPTIONS_H */
