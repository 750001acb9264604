/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpd's config file, turned into command-line options: see config.h. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

/*
 * The vector handed back and the strings in it: option values point into
 * them for the life of the process, so they are never freed (and stay
 * reachable from here, which LeakSanitizer accepts).  Made once, by main.
 */
static char **config_argv;

/* Options that make no sense in a file: they do not configure the daemon. */
static const char *const not_in_file[] = {"config", "help", "version"};

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

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

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

/* One line; *arg is the option it gives ("--name=value"), or NULL for none. */
static int parse_line(const char *path, unsigned lineno, char *line, const struct option *longopts,
                      char **arg)
{
	const struct option *opt;
	char *eq, *name, *value;
	bool on;

	*arg = NULL;
	line = trim(line);
	if (!*line || *line == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		fprintf(stderr, "cpuhpd: %s:%u: expected 'name = value', got '%s'\n", path, lineno,
		        line);
		return -EINVAL;
	}
	*eq = '\0';
	name = trim(line);
	value = trim(eq + 1);
	opt = find_option(longopts, name);
	if (!opt) {
		fprintf(stderr,
		        "cpuhpd: %s:%u: no option '%s' (names are cpuhpd's long options "
		        "without the dashes; see cpuhpd --help)\n",
		        path, lineno, name);
		return -EINVAL;
	}
	if (opt->has_arg == no_argument) {
		if (parse_bool(value, &on)) {
			fprintf(stderr, "cpuhpd: %s:%u: %s takes yes or no, not '%s'\n", path,
			        lineno, name, value);
			return -EINVAL;
		}
		if (on && asprintf(arg, "--%s", name) < 0)
			return -ENOMEM;
		return 0;
	}
	if (!*value) {
		fprintf(stderr, "cpuhpd: %s:%u: %s needs a value\n", path, lineno, name);
		return -EINVAL;
	}
	if (asprintf(arg, "--%s=%s", name, value) < 0)
		return -ENOMEM;
	return 0;
}

int cpuhpd_config_argv(const char *path, bool missing_ok, const struct option *longopts, int *argc,
                       char ***argv)
{
	char *line = NULL, **args = NULL, **grown;
	size_t cap = 0;
	unsigned lineno = 0;
	int err = 0, n = 0;
	FILE *f;

	f = fopen(path, "re");
	if (!f && errno == ENOENT && missing_ok)
		return 0;
	if (!f) {
		err = -errno;
		fprintf(stderr, "cpuhpd: --config: cannot read %s: %s\n", path, strerror(errno));
		return err;
	}
	/* Room for argv[0], every line's option and the command line's. */
	args = calloc((size_t)*argc + 1, sizeof(*args));
	if (!args) {
		err = -ENOMEM;
		goto out;
	}
	args[n++] = (*argv)[0];
	while (getline(&line, &cap, f) >= 0) {
		char *arg;

		lineno++;
		err = parse_line(path, lineno, line, longopts, &arg);
		if (err)
			goto out;
		if (!arg)
			continue;
		grown = realloc(args, ((size_t)*argc + (size_t)n + 1) * sizeof(*args));
		if (!grown) {
			free(arg);
			err = -ENOMEM;
			goto out;
		}
		args = grown;
		args[n++] = arg;
	}
	if (ferror(f)) {
		err = -EIO;
		fprintf(stderr, "cpuhpd: --config: cannot read %s\n", path);
		goto out;
	}
	for (int i = 1; i < *argc; i++)
		args[n++] = (*argv)[i];
	args[n] = NULL;
out:
	free(line);
	fclose(f);
	if (err) {
		/* Only the file's options were added yet: args[1..n-1] are ours. */
		for (int i = 1; i < n; i++)
			free(args[i]);
		free(args);
		return err;
	}
	config_argv = args;
	*argc = n;
	*argv = args;
	return 0;
}
