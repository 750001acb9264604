/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpd's config file, turned into command-line options: see config.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/conffile.h"
#include "hotplug/plandecl.h"
#include "config.h"

/*
 * The vector handed back and the strings in it: option values point into
 * them for the life of the process, so they are never freed (and stay
 * reachable from here, which LeakSanitizer accepts).  Made once, by main.
 */
static char **config_argv;

/* Options that make no sense in a file: they do not configure the daemon. */
static const char *const not_in_file[] = {"config", "help", "version"};

static const struct option *find_option(const struct option *longopts, const char *name)
{
	for (size_t i = 0; i < sizeof(not_in_file) / sizeof(not_in_file[0]); i++)
		if (!strcmp(name, not_in_file[i]))
			return NULL;
	for (; longopts->name; longopts++)
		if (!strcmp(longopts->name, name))
			return longopts;
	return NULL;
}

/* The vector being made: argv[0], then an option per line. */
struct args {
	const struct option *longopts;
	char **v;
	int n, cap_extra; /* cap_extra: the command line's, counted in when growing */
};

/* One line: the option it gives ("--name=value"), appended. */
static int parse_line(void *arg, const char *path, unsigned lineno, const char *name,
                      const char *value, char *err, size_t errsize)
{
	struct args *a = arg;
	const struct option *opt;
	char *o = NULL, **grown;
	bool on;

	/* The plan's keys are the plan's (hotplug/plandecl.h), read with the drop-ins. */
	if (cpuhpd_plan_key(name) >= 0)
		return 0;
	opt = find_option(a->longopts, name);
	if (!opt) {
		snprintf(err, errsize,
		         "%s:%u: no option '%s' (names are cpuhpd's long options without the "
		         "dashes; see cpuhpd --help)",
		         path, lineno, name);
		return -EINVAL;
	}
	if (opt->has_arg == no_argument) {
		if (cpuhpd_conf_bool(value, &on)) {
			snprintf(err, errsize, "%s:%u: %s takes yes or no, not '%s'", path, lineno,
			         name, value);
			return -EINVAL;
		}
		if (!on)
			return 0;
		if (asprintf(&o, "--%s", name) < 0)
			return -ENOMEM;
	} else {
		if (!*value) {
			snprintf(err, errsize, "%s:%u: %s needs a value", path, lineno, name);
			return -EINVAL;
		}
		if (asprintf(&o, "--%s=%s", name, value) < 0)
			return -ENOMEM;
	}
	grown = realloc(a->v, ((size_t)a->cap_extra + (size_t)a->n + 2) * sizeof(*a->v));
	if (!grown) {
		free(o);
		return -ENOMEM;
	}
	a->v = grown;
	a->v[a->n++] = o;
	return 0;
}

int cpuhpd_config_argv(const char *path, bool missing_ok, const struct option *longopts, int *argc,
                       char ***argv)
{
	struct args a = {.longopts = longopts, .cap_extra = *argc};
	char err[CPUHPD_CONF_ERR_MAX];
	int r;

	/* Room for argv[0], every line's option and the command line's. */
	a.v = calloc((size_t)*argc + 1, sizeof(*a.v));
	if (!a.v)
		return -ENOMEM;
	a.v[a.n++] = (*argv)[0];
	r = cpuhpd_conf_read(path, missing_ok, parse_line, &a, err, sizeof(err));
	if (r) {
		if (r == -ENOMEM)
			snprintf(err, sizeof(err), "out of memory reading %s", path);
		fprintf(stderr, "cpuhpd: %s%s\n", r == -EINVAL ? "" : "--config: ", err);
		/* Only the file's options were added yet: a.v[1..n-1] are ours. */
		for (int i = 1; i < a.n; i++)
			free(a.v[i]);
		free(a.v);
		return r;
	}
	for (int i = 1; i < *argc; i++)
		a.v[a.n++] = (*argv)[i];
	a.v[a.n] = NULL;
	config_argv = a.v;
	*argc = a.n;
	*argv = a.v;
	return 0;
}
