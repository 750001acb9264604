/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU sets, the kernel's range-list syntax ("0-3,8,10-11", "0-15:2/4"),
 * and the sysfs files of CPU hotplug.
 *
 * A struct cpuhp_cpuset is a plain bitmap value: put it on the stack, copy
 * it, compare it.  Its size is part of the ABI.  Every parser and formatter
 * of CPU lists in libcpuhp, cpuhpd, cpuhpctl and the Python binding is the
 * one here.
 */
#ifndef CPUHP_CPUSET_H
#define CPUHP_CPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cpuhp/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel's largest NR_CPUS; CPU numbers must be below it. */
#define CPUHP_CPUSET_MAX 8192

/*
 * A buffer this large holds any set cpuhp_cpuset_format() can write, with
 * its NUL (the worst case is pairs: "0-1,3-4,...,8189-8190").
 */
#define CPUHP_CPUSET_LIST_MAX 26569

struct cpuhp_cpuset {
	uint64_t bits[CPUHP_CPUSET_MAX / 64];
};

/* The sysfs masks under <root>/devices/system/cpu/. */
enum cpuhp_mask {
	CPUHP_MASK_ONLINE,
	CPUHP_MASK_OFFLINE,
	CPUHP_MASK_POSSIBLE,
	CPUHP_MASK_PRESENT,
};

CPUHP_EXPORT void cpuhp_cpuset_zero(struct cpuhp_cpuset *set);
/** Return: 0, or -ERANGE if @cpu >= CPUHP_CPUSET_MAX (the set is unchanged). */
CPUHP_EXPORT int cpuhp_cpuset_add(struct cpuhp_cpuset *set, unsigned cpu);
CPUHP_EXPORT void cpuhp_cpuset_del(struct cpuhp_cpuset *set, unsigned cpu);
CPUHP_EXPORT bool cpuhp_cpuset_has(const struct cpuhp_cpuset *set, unsigned cpu);
CPUHP_EXPORT unsigned cpuhp_cpuset_count(const struct cpuhp_cpuset *set);
CPUHP_EXPORT bool cpuhp_cpuset_equal(const struct cpuhp_cpuset *a, const struct cpuhp_cpuset *b);
/** Return: the lowest CPU in @set above @after (any negative @after starts at 0), or -1. */
CPUHP_EXPORT int cpuhp_cpuset_next(const struct cpuhp_cpuset *set, int after);

/**
 * cpuhp_cpuset_parse() - parse a kernel range list.
 * @str: e.g. "0-3,8,10-11"; leading/trailing whitespace and a final newline
 *       are accepted; an empty (or all-whitespace) string is the empty set.
 *       Overlaps and repeats are accepted, as the kernel does ("1-3,2-5" is
 *       1-5).  A range may carry a stride: the kernel's "a-b:u/g" takes the
 *       first u CPUs of every group of g from a to b ("0-15:2/4" is
 *       0-1,4-5,8-9,12-13), taskset's "a-b:s" every s-th ("0-7:2" is
 *       0,2,4,6, the same as "0-7:1/2").  A caller holding a list with a
 *       length (a wire field, a Python string) must reject embedded NULs
 *       itself: parsing stops at the first.
 * @out: written only on success.
 *
 * Return: 0; -EINVAL for anything that is not a range list (garbage, "3-1",
 * "1,,2", "-1", "1-", signs, hex, "N", "all"), or a bad stride (zero, as in
 * "0-7:0" or "0-7:0/4"; more used than the group, "0-7:3/2"; on a single CPU,
 * "3:1/2"; with no range, ":2"), checked first; then -ERANGE for a
 * well-formed list holding a number (a CPU, or a stride) >= CPUHP_CPUSET_MAX.
 */
CPUHP_EXPORT int cpuhp_cpuset_parse(const char *str, struct cpuhp_cpuset *out);

/**
 * cpuhp_cpuset_format() - write @set as a range list ("" for the empty set),
 * NUL-terminated, with no newline.
 *
 * Return: the length written (without the NUL), or -ENOSPC if @buf (of @len
 * bytes) is too small; then @buf holds "" if @len > 0.
 */
CPUHP_EXPORT int cpuhp_cpuset_format(const struct cpuhp_cpuset *set, char *buf, size_t len);

/*
 * sysfs.  @root is the sysfs mount point; NULL means "/sys".  A simulated
 * tree only needs the same files under <root>/devices/system/cpu/.
 * Unlike open() and read(), these calls are not cancellation points (a
 * cancel is acted on after they return, with no descriptor left open), and
 * none is async-signal-safe.
 */

/**
 * Return: 0; -errno from open/read; -ENOMEM; -ENAMETOOLONG for an overlong
 * @root; -EINVAL if the file is not a range list of CPUs below
 * CPUHP_CPUSET_MAX (or is over 64 KiB, or holds a NUL).
 */
CPUHP_EXPORT int cpuhp_sysfs_read_mask(const char *root, enum cpuhp_mask which,
                                       struct cpuhp_cpuset *out);

/**
 * cpuhp_sysfs_read_online() - read cpuN/online.
 * Return: 0 with *@online set; -ENOENT if the CPU has no online file (it does
 * not exist, or it cannot be hotplugged); another -errno, or -EINVAL if the
 * file holds something other than 0 or 1.
 */
CPUHP_EXPORT int cpuhp_sysfs_read_online(const char *root, unsigned cpu, bool *online);

/**
 * cpuhp_sysfs_set_online() - write cpuN/online and read it back.
 *
 * Context: blocks for as long as the kernel takes (tens of milliseconds);
 * not a cancellation point: a cancel is acted on after the call returns.
 * Return: 0 once the file reads back @online; otherwise the kernel's error:
 * -ENOENT (no such CPU, or not hotpluggable), -EINVAL, -EPERM, -EBUSY (last
 * online CPU, hotplug disabled), -EACCES (not root), -EOPNOTSUPP, ...;
 * -EIO for a short write, or if the write succeeded but the file reads back
 * anything but @online; -ENAMETOOLONG for an overlong @root.
 */
CPUHP_EXPORT int cpuhp_sysfs_set_online(const char *root, unsigned cpu, bool online);

/* Longest smt/control value the kernel writes ("notimplemented"), NUL included, with room. */
#define CPUHP_SMT_CONTROL_MAX 32

/**
 * cpuhp_sysfs_read_smt() - read smt/control and smt/active.
 * @control: the control's word without the newline ("on", "off", "forceoff",
 *           "notsupported", "notimplemented", or a thread count), in a buffer of
 *           CPUHP_SMT_CONTROL_MAX bytes.
 * @active:  whether some core runs more than one thread now.
 *
 * Return: 0; -ENOENT if the tree has no smt/control (a kernel without SMT
 * control); another -errno; -EINVAL if a file holds something else.  On an
 * error neither output is written.
 */
CPUHP_EXPORT int cpuhp_sysfs_read_smt(const char *root, char control[CPUHP_SMT_CONTROL_MAX],
                                      bool *active);

/**
 * cpuhp_sysfs_set_smt() - write @control ("on", "off", "forceoff") to
 * smt/control in one write, and read it back.
 *
 * Context: blocks while the kernel takes the sibling threads offline or
 * online (tens of milliseconds each).
 * Return: 0 once smt/control reads back @control; the kernel's error:
 * -EPERM (SMT forced off until reboot), -ENODEV (no SMT on this machine),
 * -EINVAL, -EACCES (not root), -EBUSY, ...; -EIO for a short write or a
 * read-back that differs; -ENOENT without smt/control.
 */
CPUHP_EXPORT int cpuhp_sysfs_set_smt(const char *root, const char *control);

/**
 * cpuhp_sysfs_read_siblings() - cpuN/topology/thread_siblings_list: the
 * hardware threads that share @cpu's core, @cpu included.  The kernel
 * lists only online threads, and has no topology/ for an offline CPU.
 * Return: 0; -ENOENT if there is no such file; as cpuhp_sysfs_read_mask().
 */
CPUHP_EXPORT int cpuhp_sysfs_read_siblings(const char *root, unsigned cpu,
                                           struct cpuhp_cpuset *out);

/* Where a CPU sits in the machine, as sysfs shows it while the CPU is online. */
struct cpuhp_cpu_topology {
	int core;    /* topology/core_id: its core, numbered within its package */
	int package; /* topology/physical_package_id: its socket (-1 where the platform has none) */
	int node;    /* the NUMA node of its cpuN/nodeM link; -1 if it has none (no NUMA) */
	struct cpuhp_cpuset siblings; /* topology/thread_siblings_list: its core's online threads */
};

/**
 * cpuhp_sysfs_read_topology() - read cpuN/topology/ (core_id,
 * physical_package_id, thread_siblings_list) and cpuN's nodeM link.
 *
 * The kernel removes topology/ when a CPU goes offline and makes it again
 * when the CPU comes back, so this reads an online CPU's.  Not atomic: a
 * CPU that goes offline meanwhile is -ENOENT, or a mix of what it had and
 * nothing.
 * Return: 0; -ENOENT if there is no such CPU or it has no topology/ (it is
 * offline); -EINVAL if a file holds something else (a number out of int's
 * range, a list that does not parse); another -errno; -ENAMETOOLONG.
 */
CPUHP_EXPORT int cpuhp_sysfs_read_topology(const char *root, unsigned cpu,
                                           struct cpuhp_cpu_topology *out);

#ifdef __cplusplus
}
#endif

#endif /* CPUHP_CPUSET_H */
