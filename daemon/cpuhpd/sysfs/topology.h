/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What cpuhpd knows of each CPU's place in the machine: core, package,
 * NUMA node, SMT siblings (cpuhp_sysfs_read_topology()), read while the
 * CPU is online and remembered once it is not, since the kernel removes
 * cpuN/topology/ when a CPU goes offline.
 *
 * Remembered across cpuhpd's restarts in a small file next to the instance
 * lock (the runtime directory: /run/cpuhpd under systemd), which names the
 * boot it was written in: after a reboot, or when it was lost, what was
 * not seen online since is unknown, and says so.  A file and not the fd
 * store's state text: a restart without the store (a crash, a stop and a
 * start) must remember too, and the CPUs are no client's.
 *
 * Threads: read at start (main, before the loop runs), then by the worker
 * thread after each view it reads (cpuhpd_topology_learn(), which also
 * rewrites the file); the loop reads the records for ListCpus.  ->lock
 * guards the records; the file is written by one thread at a time (main,
 * then only the worker).
 */
#ifndef CPUHPD_TOPOLOGY_H
#define CPUHPD_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include <cpuhp/cpuset.h>

struct cpuhpd;

enum cpuhpd_topo_source {
	CPUHPD_TOPO_UNKNOWN,    /* never read (since boot) */
	CPUHPD_TOPO_LIVE,       /* read since the CPU last came online */
	CPUHPD_TOPO_REMEMBERED, /* read when it was last online, or by an earlier cpuhpd */
};

struct cpuhpd_topo {
	bool known;
	bool live; /* read since the CPU last came online */
	int core, package, node;
	char *siblings; /* a range list, malloc()ed */
};

struct cpuhpd_topology {
	uv_mutex_t lock;
	bool init;
	struct cpuhpd_topo *cpus; /* indexed by CPU, under lock */
	unsigned ncpus;
	/* The worker's own: the CPUs whose topology it tried since they came online. */
	struct cpuhp_cpuset tried;
	char *path;       /* the file; NULL: remembered while this cpuhpd runs only */
	char boot_id[40]; /* /proc/sys/kernel/random/boot_id, "" if unknown */
	bool save_failed; /* logged once */
};

/*
 * Start: the file (if it is of this boot), then the topology of every CPU
 * of the view's online set.  Return: 0, or -ENOMEM (a bad or missing file is
 * logged and forgotten).
 */
int cpuhpd_topology_start(struct cpuhpd *d);
void cpuhpd_topology_close(struct cpuhpd *d);

/*
 * The online set is @online now: read the topology of each CPU of it not
 * read since it came online, forget that the others were, and rewrite the
 * file if anything changed.  Blocks on sysfs and the file.
 * Context: the worker thread (main before it starts).
 */
void cpuhpd_topology_learn(struct cpuhpd_topology *t, const char *root,
                           const struct cpuhp_cpuset *online);

/*
 * What is known of @cpu: *@out a copy (its siblings malloc()ed, NULL when
 * unknown; free() it).  Context: any thread.
 * Return: its source, or -ENOMEM.
 */
int cpuhpd_topology_get(struct cpuhpd_topology *t, unsigned cpu, struct cpuhpd_topo *out);

/* The records alone (the unit test): 0 or a libuv error; and their end. */
int cpuhpd_topology_init(struct cpuhpd_topology *t);
void cpuhpd_topology_fini(struct cpuhpd_topology *t);

/*
 * The file's text, for the unit test: cpuhpd_topology_format() gives a
 * malloc()ed text of @t's known records (under its lock) for boot @boot;
 * cpuhpd_topology_parse() takes them back from @text into @t's records,
 * none of them live.  Return: 0; -EINVAL if @text is not such a file (then
 * @t is unchanged); -ESTALE if it was written in another boot than @boot
 * (likewise); -ENOMEM.
 */
char *cpuhpd_topology_format(struct cpuhpd_topology *t, const char *boot);
int cpuhpd_topology_parse(struct cpuhpd_topology *t, const char *text, const char *boot);

#endif /* CPUHPD_TOPOLOGY_H */
