/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpd's configuration files: the main file and its drop-ins; see conffile.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conffile.h"

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

int cpuhpd_conf_read(const char *path, bool missing_ok, cpuhpd_conf_line_fn fn, void *arg,
                     char *err, size_t errsize)
{
	char *buf = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int r = 0;
	FILE *f = fopen(path, "re");

	if (!f && errno == ENOENT && missing_ok)
		return 0;
	if (!f) {
		r = -errno;
		snprintf(err, errsize, "cannot read %s: %s", path, strerror(errno));
		return r;
	}
	while (!r && getline(&buf, &cap, f) >= 0) {
		char *line = trim(buf), *eq;

		lineno++;
		if (!*line || *line == '#')
			continue;
		eq = strchr(line, '=');
		if (!eq) {
			snprintf(err, errsize, "%s:%u: expected 'name = value', got '%.200s'", path,
			         lineno, line);
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		r = fn(arg, path, lineno, trim(line), trim(eq + 1), err, errsize);
	}
	if (!r && ferror(f)) {
		r = -EIO;
		snprintf(err, errsize, "cannot read %s", path);
	}
	free(buf);
	fclose(f);
	return r;
}

char *cpuhpd_conf_dropin_dir(const char *conf)
{
	char *dir;

	return asprintf(&dir, "%s.d", conf) < 0 ? NULL : dir;
}

/* A drop-in is read: "*.conf", and not hidden (a writer's temporary file is ".NAME.XXXXXX"). */
static int is_dropin(const struct dirent *e)
{
	size_t n = strlen(e->d_name);

	return e->d_name[0] != '.' && n > 5 && !strcmp(e->d_name + n - 5, ".conf");
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

void cpuhpd_conf_free(char **list)
{
	for (char **p = list; p && *p; p++)
		free(*p);
	free(list);
}

int cpuhpd_conf_dropins(const char *conf, char ***out, char *err, size_t errsize)
{
	struct dirent **names = NULL;
	char *dir = cpuhpd_conf_dropin_dir(conf), **list = NULL;
	int n, r = 0;

	*out = NULL;
	if (!dir)
		return -ENOMEM;
	n = scandir(dir, &names, is_dropin, by_name);
	if (n < 0 && (errno == ENOENT || errno == ENOTDIR))
		n = 0;
	else if (n < 0) {
		r = -errno;
		snprintf(err, errsize, "cannot read the directory %s: %s", dir, strerror(errno));
		free(dir);
		return r;
	}
	list = calloc((size_t)n + 1, sizeof(*list));
	for (int i = 0; i < n; i++) {
		if (list && !r && asprintf(&list[i], "%s/%s", dir, names[i]->d_name) < 0) {
			list[i] = NULL;
			r = -ENOMEM;
		}
		free(names[i]);
	}
	free(names);
	free(dir);
	if (!list || r) {
		/* The entries made before the failure end at the first NULL. */
		cpuhpd_conf_free(list);
		return -ENOMEM;
	}
	*out = list;
	return 0;
}

int cpuhpd_conf_bool(const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}
