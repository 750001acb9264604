/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's view of the CPUs: which are possible, present and online.
 *
 * Online state is read per CPU from cpuN/online where that file exists, and
 * from the `online` mask for the CPUs without one (cpu0 on most machines).
 * On a real sysfs both agree; on a simulated tree nothing rewrites the mask
 * when cpuN/online is written, so the per-CPU files are what counts.  The
 * `offline` file is never read: offline is possible minus online.
 *
 * Reading can block behind a hotplug in progress (the kernel holds the CPU
 * device's lock while it runs), so only the worker thread calls
 * cpuhpd_cpus_read(); the loop keeps a copy.
 */
#ifndef CPUHPD_CPUS_H
#define CPUHPD_CPUS_H

#include <stdbool.h>
#include <stddef.h>

#include <cpuhp/cpuset.h>

struct cpuhpd_cpus {
	struct cpuhp_cpuset possible;
	struct cpuhp_cpuset present;
	struct cpuhp_cpuset online;
	/* smt/control's word, "" if the tree has none (or it cannot be read); smt/active. */
	char smt_control[CPUHP_SMT_CONTROL_MAX];
	bool smt_active;
};

/**
 * cpuhpd_cpus_read() - read the view from <@root>/devices/system/cpu.
 * Context: blocks on sysfs; worker thread, or main before the loop runs.
 * Return: 0, or the -errno of the mask that could not be read (*@which names it).
 */
int cpuhpd_cpus_read(const char *root, struct cpuhpd_cpus *out, const char **which);

/**
 * cpuhpd_cpus_read_some() - what a hotplug of @cpus must know before it
 * writes: possible, present, and the online state of the CPUs of @cpus
 * (read as cpuhpd_cpus_read() does; the others are left out of ->online,
 * and SMT is not read).  Two mask files and one file a CPU, where
 * cpuhpd_cpus_read() reads one a present CPU: a one-CPU hotplug's reads
 * before its write go from 7 files to 3 on a 2-CPU machine, and stay 3 on a
 * big one.
 * Context: blocks on sysfs; worker thread.
 * Return: as cpuhpd_cpus_read().
 */
int cpuhpd_cpus_read_some(const char *root, const struct cpuhp_cpuset *cpus,
                          struct cpuhpd_cpus *out, const char **which);

/*
 * cpuhpd_cpus_smt_secondaries() - the hardware threads that SMT off takes
 * away: every CPU of @v's present set whose topology/thread_siblings_list
 * names a lower-numbered CPU (the first of a core is the one that stays).
 * The kernel has no topology/ for an offline CPU, so only those whose
 * file can be read, or that another CPU's list names, are found.
 * Context: reads sysfs; worker thread.
 */
void cpuhpd_cpus_smt_secondaries(const char *root, const struct cpuhpd_cpus *v,
                                 struct cpuhp_cpuset *out);

/*
 * Whether smt/control's word @now lets anyone change it.  Return: 0, or the
 * kernel's own answer to a write: -ENOENT (no SMT control in this kernel or
 * tree: @now is ""), -ENODEV (no SMT on this machine: "notsupported",
 * "notimplemented"), -EPERM (forced off until reboot: "forceoff").
 */
int cpuhpd_cpus_smt_changeable(const char *now);

/* @set as a range list in a malloc()ed string, or NULL when out of memory. */
char *cpuhpd_cpus_to_str(const struct cpuhp_cpuset *set);

/* @out = @possible minus @online. */
void cpuhpd_cpus_offline(const struct cpuhpd_cpus *v, struct cpuhp_cpuset *out);

/* @out = @a and @b, @a but not @b, @a or @b, either but not both (@out may be @a or @b). */
void cpuhpd_cpus_and(struct cpuhp_cpuset *out, const struct cpuhp_cpuset *a,
                     const struct cpuhp_cpuset *b);
void cpuhpd_cpus_andnot(struct cpuhp_cpuset *out, const struct cpuhp_cpuset *a,
                        const struct cpuhp_cpuset *b);
void cpuhpd_cpus_or(struct cpuhp_cpuset *out, const struct cpuhp_cpuset *a,
                    const struct cpuhp_cpuset *b);
void cpuhpd_cpus_xor(struct cpuhp_cpuset *out, const struct cpuhp_cpuset *a,
                     const struct cpuhp_cpuset *b);

#endif /* CPUHPD_CPUS_H */
