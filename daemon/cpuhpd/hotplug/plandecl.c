/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The declared plan: reading it from the files, writing the persist drop-in; see plandecl.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "base/conffile.h"
#include "base/log.h"
#include "sysfs/cpus.h"
#include "plandecl.h"

const char *const cpuhpd_plan_key_names[CPUHPD_PLAN_NKEYS] = {
    [CPUHPD_PLAN_OFFLINE] = "offline-cpus",
    [CPUHPD_PLAN_SMT] = "smt",
    [CPUHPD_PLAN_NEW] = "online-new-cpus",
};

int cpuhpd_plan_key(const char *name)
{
	for (int k = 0; k < CPUHPD_PLAN_NKEYS; k++)
		if (!strcmp(name, cpuhpd_plan_key_names[k]))
			return k;
	return -1;
}

/* @value of @key in its canonical form (malloc()ed), or NULL with @err set (or ENOMEM). */
static char *canonical(enum cpuhpd_plan_key key, const char *value, char *err, size_t errsize)
{
	struct cpuhp_cpuset set;
	bool on;
	int r;

	switch (key) {
	case CPUHPD_PLAN_OFFLINE:
		r = cpuhp_cpuset_parse(value, &set);
		if (r == -ERANGE) {
			snprintf(err, errsize,
			         "offline-cpus: a CPU number in '%.100s' is too large "
			         "(CPUs are numbered below %u)",
			         value, CPUHP_CPUSET_MAX);
			return NULL;
		}
		if (r) {
			snprintf(err, errsize,
			         "offline-cpus: '%.100s' is not a CPU list such as 2-3,5 "
			         "(empty: none)",
			         value);
			return NULL;
		}
		return cpuhpd_cpus_to_str(&set);
	case CPUHPD_PLAN_SMT:
		if (strcmp(value, "on") && strcmp(value, "off") && *value) {
			snprintf(err, errsize,
			         "smt: '%.100s' is neither on nor off (empty: SMT is not "
			         "kept)",
			         value);
			return NULL;
		}
		return strdup(value);
	default:
		if (cpuhpd_conf_bool(value, &on)) {
			snprintf(err, errsize, "online-new-cpus takes yes or no, not '%.100s'",
			         value);
			return NULL;
		}
		return strdup(on ? "yes" : "no");
	}
}

bool cpuhpd_plan_value_ok(enum cpuhpd_plan_key key, const char *value, char *err, size_t errsize)
{
	char *v;

	snprintf(err, errsize, "out of memory");
	v = canonical(key, value, err, errsize);
	free(v);
	return v != NULL;
}

static void setting_free(struct cpuhpd_plan_setting *s)
{
	free(s->value);
	free(s->source);
	free(s->overridden);
	memset(s, 0, sizeof(*s));
}

void cpuhpd_plan_decl_free(struct cpuhpd_plan_decl *p)
{
	for (int k = 0; k < CPUHPD_PLAN_NKEYS; k++)
		setting_free(&p->setting[k]);
	free(p->files);
	free(p->errors);
	memset(p, 0, sizeof(*p));
}

/* Append @s to the "@sep"-separated list *@list. */
static int append(char **list, const char *sep, const char *s)
{
	char *n;

	if (asprintf(&n, "%s%s%s", *list ? *list : "", *list ? sep : "", s) < 0)
		return -ENOMEM;
	free(*list);
	*list = n;
	return 0;
}

/* @key is @value (canonical, taken) from @source (taken): it wins over what was set. */
static int set_key(struct cpuhpd_plan_decl *p, enum cpuhpd_plan_key key, char *value, char *source)
{
	struct cpuhpd_plan_setting *s = &p->setting[key];
	char *was = NULL;
	int r = 0;

	if (s->set) {
		cpuhpd_info("plan: %s = %s (%s) overrides %s = %s (%s)", cpuhpd_plan_key_names[key],
		            value, source, cpuhpd_plan_key_names[key], s->value, s->source);
		if (asprintf(&was, "%s (%s)", s->source, s->value) < 0 ||
		    append(&s->overridden, ", ", was))
			r = -ENOMEM;
		free(was);
	}
	free(s->value);
	free(s->source);
	s->set = true;
	s->value = value;
	s->source = source;
	return r;
}

/* One file's lines, checked whole before any counts. */
struct file_lines {
	bool dropin; /* only plan keys may be named */
	unsigned n;
	struct {
		enum cpuhpd_plan_key key;
		unsigned lineno;
		char *value; /* canonical */
	} line[64];
};

static int take_line(void *arg, const char *path, unsigned lineno, const char *name,
                     const char *value, char *err, size_t errsize)
{
	struct file_lines *fl = arg;
	int key = cpuhpd_plan_key(name);
	char what[CPUHPD_CONF_ERR_MAX];

	if (key < 0) {
		if (!fl->dropin)
			return 0; /* an option: config.c's */
		snprintf(err, errsize,
		         "%s:%u: '%.100s' is not a key of the plan (offline-cpus, smt, "
		         "online-new-cpus); options go in the main file",
		         path, lineno, name);
		return -EINVAL;
	}
	if (fl->n == sizeof(fl->line) / sizeof(fl->line[0])) {
		snprintf(err, errsize, "%s:%u: more than %zu settings in one file", path, lineno,
		         sizeof(fl->line) / sizeof(fl->line[0]));
		return -EINVAL;
	}
	snprintf(what, sizeof(what), "out of memory");
	fl->line[fl->n].value = canonical((enum cpuhpd_plan_key)key, value, what, sizeof(what));
	if (!fl->line[fl->n].value) {
		snprintf(err, errsize, "%s:%u: %s", path, lineno, what);
		return -EINVAL;
	}
	fl->line[fl->n].key = (enum cpuhpd_plan_key)key;
	fl->line[fl->n].lineno = lineno;
	fl->n++;
	return 0;
}

/* Read @path's settings into @p; a file that does not parse is left out and named. */
static int load_file(struct cpuhpd_plan_decl *p, const char *path, bool dropin, bool missing_ok)
{
	struct file_lines *fl = calloc(1, sizeof(*fl));
	char err[CPUHPD_CONF_ERR_MAX];
	int r;

	if (!fl)
		return -ENOMEM;
	fl->dropin = dropin;
	r = cpuhpd_conf_read(path, missing_ok, take_line, fl, err, sizeof(err));
	if (r == -ENOMEM)
		goto out;
	if (r) {
		cpuhpd_err("plan: %s: the file is left out", err);
		p->nerrors++;
		r = append(&p->errors, "; ", err);
		goto out;
	}
	if (access(path, F_OK) == 0 && append(&p->files, ", ", path)) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < fl->n && !r; i++) {
		char *src;

		if (asprintf(&src, "%s:%u", path, fl->line[i].lineno) < 0) {
			r = -ENOMEM;
			break;
		}
		r = set_key(p, fl->line[i].key, fl->line[i].value, src);
		fl->line[i].value = NULL;
	}
out:
	for (unsigned i = 0; i < fl->n; i++)
		free(fl->line[i].value);
	free(fl);
	return r;
}

/* The values the winning settings say. */
static void derive(struct cpuhpd_plan_decl *p)
{
	const struct cpuhpd_plan_setting *s = p->setting;

	cpuhp_cpuset_zero(&p->offline);
	if (s[CPUHPD_PLAN_OFFLINE].set)
		cpuhp_cpuset_parse(s[CPUHPD_PLAN_OFFLINE].value, &p->offline);
	p->smt = !s[CPUHPD_PLAN_SMT].set                    ? CPUHPD_PLAN_SMT_ANY
	         : !strcmp(s[CPUHPD_PLAN_SMT].value, "on")  ? CPUHPD_PLAN_SMT_ON
	         : !strcmp(s[CPUHPD_PLAN_SMT].value, "off") ? CPUHPD_PLAN_SMT_OFF
	                                                    : CPUHPD_PLAN_SMT_ANY;
	p->online_new = s[CPUHPD_PLAN_NEW].set && !strcmp(s[CPUHPD_PLAN_NEW].value, "yes");
}

int cpuhpd_plan_load(const char *conf, bool missing_ok, const struct cpuhpd_plan_cmdline *cl,
                     struct cpuhpd_plan_decl *out)
{
	char **dropins = NULL, err[CPUHPD_CONF_ERR_MAX];
	int r;

	memset(out, 0, sizeof(*out));
	r = load_file(out, conf, false, missing_ok);
	if (!r) {
		r = cpuhpd_conf_dropins(conf, &dropins, err, sizeof(err));
		if (r && r != -ENOMEM) {
			/* An unreadable directory: its files cannot count, and the log says so. */
			cpuhpd_err("plan: %s: its drop-ins are left out", err);
			out->nerrors++;
			r = append(&out->errors, "; ", err);
		}
	}
	for (char **f = dropins; !r && f && *f; f++)
		r = load_file(out, *f, true, true);
	cpuhpd_conf_free(dropins);
	for (int k = 0; !r && cl && k < CPUHPD_PLAN_NKEYS; k++) {
		char *v, *src;

		if (!cl->value[k])
			continue;
		v = canonical((enum cpuhpd_plan_key)k, cl->value[k], err, sizeof(err));
		src = strdup("command line");
		if (!v || !src) {
			free(v);
			free(src);
			r = -ENOMEM; /* options.c checked the value */
			break;
		}
		r = set_key(out, (enum cpuhpd_plan_key)k, v, src);
	}
	derive(out);
	return r;
}

/* "@conf.d/" CPUHPD_PLAN_PERSIST_NAME, malloc()ed. */
static char *persist_path(const char *conf)
{
	char *p;

	return asprintf(&p, "%s.d/" CPUHPD_PLAN_PERSIST_NAME, conf) < 0 ? NULL : p;
}

const char *cpuhpd_plan_persist_blocked(const char *conf, const struct cpuhpd_plan_decl *p,
                                        enum cpuhpd_plan_key key)
{
	const struct cpuhpd_plan_setting *s = &p->setting[key];
	char *dir = persist_path(conf);
	const char *src = s->source, *name;
	size_t n;
	bool later;

	if (!s->set || !dir)
		goto no;
	if (!strcmp(src, "command line")) {
		free(dir);
		return src;
	}
	/* A drop-in of the same directory named after ours wins over it. */
	n = strlen(dir) - strlen(CPUHPD_PLAN_PERSIST_NAME);
	if (strncmp(src, dir, n) || strchr(src + n, '/'))
		goto no;
	name = src + n;
	later = strncmp(name, CPUHPD_PLAN_PERSIST_NAME, strlen(CPUHPD_PLAN_PERSIST_NAME)) > 0;
	free(dir);
	return later ? src : NULL;
no:
	free(dir);
	return NULL;
}

/* The persist drop-in as it is now: each key's value and the comment lines above it. */
struct persisted {
	char *value[CPUHPD_PLAN_NKEYS];
	char *comment[CPUHPD_PLAN_NKEYS];
};

static int persisted_line(void *arg, const char *path, unsigned lineno, const char *name,
                          const char *value, char *err, size_t errsize)
{
	struct persisted *ps = arg;
	int key = cpuhpd_plan_key(name);
	char *v;

	if (key < 0) {
		snprintf(err, errsize, "%s:%u: '%.100s' is not a key of the plan", path, lineno,
		         name);
		return -EINVAL;
	}
	v = strdup(value);
	if (!v)
		return -ENOMEM;
	free(ps->value[key]);
	ps->value[key] = v;
	return 0;
}

/* The comment above each key's line: who asked last (kept when another key changes). */
static void read_comments(const char *path, struct persisted *ps)
{
	FILE *f = fopen(path, "re");
	char *line = NULL, *last = NULL;
	size_t cap = 0;

	if (!f)
		return;
	while (getline(&line, &cap, f) >= 0) {
		int key;
		char *eq;

		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "# by ", 5)) {
			free(last);
			last = strdup(line);
			continue;
		}
		eq = strchr(line, '=');
		if (eq) {
			char name[32];

			snprintf(name, sizeof(name), "%.*s", (int)(eq - line), line);
			name[strcspn(name, " \t")] = '\0';
			key = cpuhpd_plan_key(name);
			if (key >= 0 && last) {
				free(ps->comment[key]);
				ps->comment[key] = last;
				last = NULL;
			}
		}
		free(last);
		last = NULL;
	}
	free(last);
	free(line);
	fclose(f);
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write @text to @path by a temporary file and a rename; the directory fsync()ed. */
static int replace_file(const char *dir, const char *path, const char *text, char *err,
                        size_t errsize)
{
	char *tmp = NULL;
	int fd = -1, dfd, r;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	/* Hidden, and not "*.conf": never read as a drop-in, even if a crash leaves it. */
	if (asprintf(&tmp, "%s/.%s.%ld%09ld.tmp", dir, CPUHPD_PLAN_PERSIST_NAME, (long)ts.tv_sec,
	             ts.tv_nsec) < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errsize, "cannot create %s: %s", tmp, strerror(-r));
		free(tmp);
		return r;
	}
	r = write_all(fd, text, strlen(text));
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		snprintf(err, errsize, "cannot write %s: %s", path, strerror(-r));
		unlink(tmp);
		free(tmp);
		return r;
	}
	free(tmp);
	/* The rename itself is only durable once the directory is. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) < 0) {
		r = -errno;
		snprintf(err, errsize, "cannot fsync the directory %s: %s", dir, strerror(-r));
	}
	if (dfd >= 0)
		close(dfd);
	return r;
}

/* Temporary files a crash left: ours only, never read, removed after a good write. */
static void remove_leftovers(const char *dir)
{
	char prefix[64];
	DIR *dp = opendir(dir);
	struct dirent *e;

	if (!dp)
		return;
	snprintf(prefix, sizeof(prefix), ".%s.", CPUHPD_PLAN_PERSIST_NAME);
	while ((e = readdir(dp))) {
		size_t n = strlen(e->d_name);

		if (!strncmp(e->d_name, prefix, strlen(prefix)) && n > 4 &&
		    !strcmp(e->d_name + n - 4, ".tmp") && unlinkat(dirfd(dp), e->d_name, 0) == 0)
			cpuhpd_info("plan: removed %s/%s, left by a write cut short", dir,
			            e->d_name);
	}
	closedir(dp);
}

int cpuhpd_plan_persist(const char *conf, struct cpuhpd_plan_decl *p, enum cpuhpd_plan_key key,
                        const char *value, const char *who, char *err, size_t errsize)
{
	struct cpuhpd_plan_setting *s = &p->setting[key];
	struct persisted ps = {0};
	char *dir = cpuhpd_conf_dropin_dir(conf), *path = persist_path(conf), *text = NULL;
	char *v = NULL, *src = NULL, *was = NULL;
	unsigned line = 2, keyline = 0; /* the header's two lines */
	int r = -ENOMEM;

	if (!dir || !path)
		goto out;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		r = -errno;
		snprintf(err, errsize, "cannot make the directory %s: %s", dir, strerror(-r));
		goto out;
	}
	r = cpuhpd_conf_read(path, true, persisted_line, &ps, err, errsize);
	if (r) {
		if (r == -EINVAL) {
			char why[CPUHPD_CONF_ERR_MAX];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errsize, "%s; fix or remove it first", why);
		}
		goto out;
	}
	read_comments(path, &ps);
	r = -ENOMEM;
	free(ps.value[key]);
	free(ps.comment[key]);
	ps.value[key] = strdup(value);
	/* One line whatever @who holds (a command name may hold a newline). */
	if (asprintf(&ps.comment[key], "# by %s", who) < 0)
		ps.comment[key] = NULL;
	for (char *c = ps.comment[key]; c && *c; c++)
		if (!isprint((unsigned char)*c))
			*c = '?';
	if (!ps.value[key] || !ps.comment[key] ||
	    asprintf(&text,
	             "# The plan's settings kept by cpuhpctl --persist: cpuhpd writes this file\n"
	             "# (cpuhpd.conf(5)).  Edit or remove it, then: systemctl reload cpuhpd\n") < 0)
		goto out;
	for (int k = 0; k < CPUHPD_PLAN_NKEYS; k++) {
		char *more;

		if (!ps.value[k])
			continue;
		if (asprintf(&more, "%s\n%s%s%s = %s\n", text, ps.comment[k] ? ps.comment[k] : "",
		             ps.comment[k] ? "\n" : "", cpuhpd_plan_key_names[k], ps.value[k]) < 0)
			goto out;
		/* A blank line, the comment, the key. */
		line += 2 + !!ps.comment[k];
		if (k == (int)key)
			keyline = line;
		free(text);
		text = more;
	}
	r = replace_file(dir, path, text, err, errsize);
	if (r)
		goto out;
	remove_leftovers(dir);
	/* What the loaded plan says now: that line of the drop-in. */
	r = -ENOMEM;
	v = strdup(value);
	if (!v || asprintf(&src, "%s:%u", path, keyline) < 0)
		goto out;
	if (s->set && strncmp(s->source, path, strlen(path)) &&
	    (asprintf(&was, "%s (%s)", s->source, s->value) < 0 ||
	     append(&s->overridden, ", ", was)))
		goto out;
	free(s->value);
	free(s->source);
	s->set = true;
	s->value = v;
	s->source = src;
	v = src = NULL;
	derive(p);
	if (!p->files || !strstr(p->files, path))
		append(&p->files, ", ", path);
	r = 0;
out:
	if (r == -ENOMEM)
		snprintf(err, errsize, "cpuhpd is out of memory");
	for (int k = 0; k < CPUHPD_PLAN_NKEYS; k++) {
		free(ps.value[k]);
		free(ps.comment[k]);
	}
	free(was);
	free(v);
	free(src);
	free(text);
	free(path);
	free(dir);
	return r;
}
