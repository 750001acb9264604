/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CPUs' topology, read and remembered; see topology.h.  The file:
 *
 *   cpuhpd-topology 1
 *   boot 6f1c3a2e-...        (or "-": the boot was unknown)
 *   cpu 2 1 0 0 2,6          CPU, core, package, node (-1: none), siblings
 *
 * It is rewritten whole (a temporary file renamed over it), so that a
 * cpuhpd killed meanwhile leaves the old one or the new one.  One that does
 * not parse is forgotten whole: a half-trusted topology is worse than
 * "unknown".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "topology.h"

#define MAGIC "cpuhpd-topology 1\n"
/* Far above what CPUHP_CPUSET_MAX CPUs can take (each line is under 200 bytes). */
#define FILE_MAX (4u << 20)
#define BOOT_ID  "/proc/sys/kernel/random/boot_id"

static void free_recs(struct cpuhpd_topo *recs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(recs[i].siblings);
	free(recs);
}

int cpuhpd_topology_init(struct cpuhpd_topology *t)
{
	int err = uv_mutex_init(&t->lock);

	t->init = !err;
	return err;
}

void cpuhpd_topology_fini(struct cpuhpd_topology *t)
{
	if (!t->init)
		return;
	free_recs(t->cpus, t->ncpus);
	t->cpus = NULL;
	t->ncpus = 0;
	free(t->path);
	t->path = NULL;
	uv_mutex_destroy(&t->lock);
	t->init = false;
}

/* --- the file's text ------------------------------------------------------------- */

char *cpuhpd_topology_format(struct cpuhpd_topology *t, const char *boot)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fprintf(f, MAGIC "boot %s\n", boot[0] ? boot : "-");
	uv_mutex_lock(&t->lock);
	for (unsigned cpu = 0; cpu < t->ncpus; cpu++) {
		const struct cpuhpd_topo *r = &t->cpus[cpu];

		if (r->known)
			fprintf(f, "cpu %u %d %d %d %s\n", cpu, r->core, r->package, r->node,
			        r->siblings);
	}
	uv_mutex_unlock(&t->lock);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

/* @s (up to @end) as a decimal int into *@out.  Return: whether it is exactly one. */
static bool parse_int(const char *s, const char *end, long min, long max, long *out)
{
	char buf[16], *e;
	size_t len = (size_t)(end - s);

	if (!len || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	*out = strtol(buf, &e, 10);
	return !*e && !errno && (buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9')) &&
	       *out >= min && *out <= max;
}

/*
 * One "cpu N CORE PACKAGE NODE SIBLINGS" line, @line to @end (no newline),
 * into *@cpu and *@r (siblings malloc()ed).  Return: 0, -EINVAL, -ENOMEM.
 */
static int parse_line(const char *line, const char *end, unsigned *cpu, struct cpuhpd_topo *r)
{
	const char *f[6];
	struct cpuhp_cpuset sib;
	long v[4];
	unsigned n = 0;
	char *list;

	if (end - line < 4 || memcmp(line, "cpu ", 4))
		return -EINVAL;
	for (const char *p = line + 4; n < 6;) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));

		f[n++] = p;
		if (!sp)
			break;
		p = sp + 1;
	}
	/* Five fields: N, core, package, node, siblings; each ends at a blank or the line's end. */
	if (n != 5)
		return -EINVAL;
	if (!parse_int(f[0], f[1] - 1, 0, CPUHP_CPUSET_MAX - 1, &v[0]) ||
	    !parse_int(f[1], f[2] - 1, INT_MIN, INT_MAX, &v[1]) ||
	    !parse_int(f[2], f[3] - 1, INT_MIN, INT_MAX, &v[2]) ||
	    !parse_int(f[3], f[4] - 1, -1, INT_MAX, &v[3]))
		return -EINVAL;
	if (end == f[4] || (size_t)(end - f[4]) >= CPUHP_CPUSET_LIST_MAX)
		return -EINVAL;
	list = strndup(f[4], (size_t)(end - f[4]));
	if (!list)
		return -ENOMEM;
	if (cpuhp_cpuset_parse(list, &sib) || !cpuhp_cpuset_count(&sib) ||
	    strspn(list, "0123456789,-") != strlen(list)) {
		free(list);
		return -EINVAL;
	}
	*cpu = (unsigned)v[0];
	*r = (struct cpuhpd_topo){
	    .known = true,
	    .core = (int)v[1],
	    .package = (int)v[2],
	    .node = (int)v[3],
	    .siblings = list,
	};
	return 0;
}

/* Make room for CPU @cpu in @recs (of *@n, zeroed).  Return: 0 or -ENOMEM. */
static int grow(struct cpuhpd_topo **recs, unsigned *n, unsigned cpu)
{
	struct cpuhpd_topo *p;
	unsigned want;

	if (cpu < *n)
		return 0;
	want = cpu + 1 > *n * 2 ? cpu + 1 : *n * 2;
	if (want > CPUHP_CPUSET_MAX)
		want = CPUHP_CPUSET_MAX;
	p = realloc(*recs, want * sizeof(*p));
	if (!p)
		return -ENOMEM;
	memset(p + *n, 0, (want - *n) * sizeof(*p));
	*recs = p;
	*n = want;
	return 0;
}

int cpuhpd_topology_parse(struct cpuhpd_topology *t, const char *text, const char *boot)
{
	struct cpuhpd_topo *recs = NULL;
	unsigned n = 0;
	const char *p = text, *nl;
	size_t blen;
	bool stale;
	int err = -EINVAL;

	if (strncmp(p, MAGIC, strlen(MAGIC)))
		return -EINVAL;
	p += strlen(MAGIC);
	nl = strchr(p, '\n');
	if (!nl || strncmp(p, "boot ", 5) || nl == p + 5)
		return -EINVAL;
	blen = (size_t)(nl - (p + 5));
	/* An unknown boot on either side cannot be told apart: taken as this one. */
	stale = boot[0] && !(blen == 1 && p[5] == '-') &&
	        (blen != strlen(boot) || memcmp(p + 5, boot, blen));
	for (p = nl + 1; *p; p = nl + 1) {
		struct cpuhpd_topo r;
		unsigned cpu;

		nl = strchr(p, '\n');
		if (!nl) {
			err = -EINVAL;
			goto fail;
		}
		err = parse_line(p, nl, &cpu, &r);
		if (!err && ((err = grow(&recs, &n, cpu)) || recs[cpu].known)) {
			free(r.siblings);
			err = err ? err : -EINVAL; /* a CPU twice */
		}
		if (err)
			goto fail;
		recs[cpu] = r;
	}
	if (stale) {
		err = -ESTALE;
		goto fail;
	}
	uv_mutex_lock(&t->lock);
	free_recs(t->cpus, t->ncpus);
	t->cpus = recs;
	t->ncpus = n;
	uv_mutex_unlock(&t->lock);
	return 0;
fail:
	free_recs(recs, n);
	return err;
}

/* --- the file ---------------------------------------------------------------------- */

/*
 * @path whole into a malloc()ed string, read to its end (a /proc file has no
 * size).  Return: 0; -errno; -EINVAL if not a regular file, @max bytes or
 * more, or holding a NUL.
 */
static int read_whole(const char *path, size_t max, char **out)
{
	struct stat st;
	char *buf;
	size_t len = 0;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (fd < 0)
		return -errno;
	buf = malloc(max);
	if (!buf || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		err = !buf ? -ENOMEM : -EINVAL;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, buf + len, max - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : 0;
			break;
		}
		len += (size_t)r;
		if (len == max) {
			err = -EINVAL;
			break;
		}
	}
	if (!err) {
		buf[len] = '\0';
		if (strlen(buf) != len)
			err = -EINVAL;
	}
out:
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	return 0;
}

static void read_boot_id(struct cpuhpd_topology *t)
{
	char *id = NULL;

	t->boot_id[0] = '\0';
	if (read_whole(BOOT_ID, sizeof(t->boot_id), &id))
		return;
	id[strcspn(id, "\n ")] = '\0';
	snprintf(t->boot_id, sizeof(t->boot_id), "%s", id);
	free(id);
}

/* Write the file anew.  Main at start, then the worker only. */
static void save(struct cpuhpd_topology *t)
{
	char tmp[PATH_MAX];
	char *text;
	size_t len, off = 0;
	int fd, err = 0;

	if (!t->path)
		return;
	text = cpuhpd_topology_format(t, t->boot_id);
	if (!text) {
		err = -ENOMEM;
		goto out;
	}
	len = strlen(text);
	if (snprintf(tmp, sizeof(tmp), "%s.new", t->path) >= (int)sizeof(tmp)) {
		err = -ENAMETOOLONG;
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			err = -errno;
			break;
		}
		off += (size_t)w;
	}
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(tmp, t->path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
out:
	free(text);
	if (err && !t->save_failed)
		cpuhpd_warn("cannot write %s: %s; the topology of offline CPUs will be forgotten "
		            "when cpuhpd restarts",
		            t->path, strerror(-err));
	else if (!err && t->save_failed)
		cpuhpd_info("%s written again", t->path);
	t->save_failed = err != 0;
}

/* --- reading sysfs ------------------------------------------------------------------- */

void cpuhpd_topology_learn(struct cpuhpd_topology *t, const char *root,
                           const struct cpuhp_cpuset *online)
{
	bool changed = false;
	int cpu;

	for (cpu = -1; (cpu = cpuhp_cpuset_next(&t->tried, cpu)) >= 0;) {
		if (cpuhp_cpuset_has(online, (unsigned)cpu))
			continue;
		cpuhp_cpuset_del(&t->tried, (unsigned)cpu);
		uv_mutex_lock(&t->lock);
		if ((unsigned)cpu < t->ncpus)
			t->cpus[cpu].live = false;
		uv_mutex_unlock(&t->lock);
	}
	for (cpu = -1; (cpu = cpuhp_cpuset_next(online, cpu)) >= 0;) {
		struct cpuhp_cpu_topology got;
		struct cpuhpd_topo *r;
		char *sib;

		if (cpuhp_cpuset_has(&t->tried, (unsigned)cpu))
			continue;
		cpuhp_cpuset_add(&t->tried, (unsigned)cpu);
		/* None (an old simulated tree, a CPU that went again): what was known stays. */
		if (cpuhp_sysfs_read_topology(root, (unsigned)cpu, &got))
			continue;
		sib = cpuhpd_cpus_to_str(&got.siblings);
		uv_mutex_lock(&t->lock);
		if (!sib || grow(&t->cpus, &t->ncpus, (unsigned)cpu)) {
			uv_mutex_unlock(&t->lock);
			free(sib);
			/* Tried again at the next view. */
			cpuhp_cpuset_del(&t->tried, (unsigned)cpu);
			continue;
		}
		r = &t->cpus[cpu];
		changed |= !r->known || r->core != got.core || r->package != got.package ||
		           r->node != got.node || strcmp(r->siblings, sib);
		free(r->siblings);
		*r = (struct cpuhpd_topo){
		    .known = true,
		    .live = true,
		    .core = got.core,
		    .package = got.package,
		    .node = got.node,
		    .siblings = sib,
		};
		uv_mutex_unlock(&t->lock);
	}
	if (changed)
		save(t);
}

int cpuhpd_topology_get(struct cpuhpd_topology *t, unsigned cpu, struct cpuhpd_topo *out)
{
	int src = CPUHPD_TOPO_UNKNOWN;

	*out = (struct cpuhpd_topo){.node = -1};
	uv_mutex_lock(&t->lock);
	if (cpu < t->ncpus && t->cpus[cpu].known) {
		*out = t->cpus[cpu];
		out->siblings = strdup(t->cpus[cpu].siblings);
		src = !out->siblings ? -ENOMEM
		      : out->live    ? CPUHPD_TOPO_LIVE
		                     : CPUHPD_TOPO_REMEMBERED;
	}
	uv_mutex_unlock(&t->lock);
	return src;
}

/* --- start and stop -------------------------------------------------------------------- */

/* The remembered records, if the file is of this boot. */
static void load(struct cpuhpd_topology *t)
{
	char *text = NULL;
	int err = read_whole(t->path, FILE_MAX, &text);

	if (err == -ENOENT)
		return;
	if (!err)
		err = cpuhpd_topology_parse(t, text, t->boot_id);
	free(text);
	if (err == -ESTALE)
		cpuhpd_info("%s was written before the last boot: the topology of the CPUs not "
		            "online since is unknown",
		            t->path);
	else if (err)
		cpuhpd_warn("cannot use %s (%s): the topology of the CPUs not online since is "
		            "unknown",
		            t->path, err == -EINVAL ? "not a topology file" : strerror(-err));
}

int cpuhpd_topology_start(struct cpuhpd *d)
{
	struct cpuhpd_topology *t = &d->topology;
	unsigned before = 0, known = 0;
	int err = cpuhpd_topology_init(t);

	if (err) {
		cpuhpd_err("cannot start the topology's lock: %s", uv_strerror(err));
		return err;
	}
	cpuhp_cpuset_zero(&t->tried);
	read_boot_id(t);
	if (d->instance_stem && asprintf(&t->path, "%s.topology", d->instance_stem) < 0) {
		t->path = NULL;
		return -ENOMEM;
	}
	if (t->path)
		load(t);
	for (unsigned cpu = 0; cpu < t->ncpus; cpu++)
		before += t->cpus[cpu].known;
	cpuhpd_topology_learn(t, d->opt.sysfs_root, &d->view.online);
	for (unsigned cpu = 0; cpu < t->ncpus; cpu++)
		known += t->cpus[cpu].known;
	if (before)
		cpuhpd_info("topology: %u CPU(s) remembered from %s, %u known now", before, t->path,
		            known);
	return 0;
}

void cpuhpd_topology_close(struct cpuhpd *d)
{
	cpuhpd_topology_fini(&d->topology);
}
