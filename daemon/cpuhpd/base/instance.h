/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One cpuhpd per sysfs tree, and directories that only we control: see
 * instance.c.
 */
#ifndef CPUHPD_INSTANCE_H
#define CPUHPD_INSTANCE_H

#include <stddef.h>

struct cpuhpd;

/**
 * cpuhpd_dir_check() - may the daemon trust directory @dir with its files?
 * @what: what the directory is for, for the message ("the socket").
 *
 * Only if it is owned by root or by the daemon's own uid, and nobody else
 * can create, rename or remove entries in it: not writable by group or
 * others, unless sticky (as /tmp), where only an entry's owner may rename
 * or remove it.  Logs why not.
 * Return: 0, or a negative errno (-EPERM: untrusted).
 */
int cpuhpd_dir_check(const char *dir, const char *what);

/* cpuhpd_dir_check() that says why not in @why instead of the log. */
int cpuhpd_dir_trusted(const char *dir, const char *what, char *why, size_t size);

/* The directory part of @path ("." for none), malloc()ed; NULL on ENOMEM. */
char *cpuhpd_dirname(const char *path);

/* mkdir -p @dir (mode 0755); logs a failure naming @what.  0 or -errno. */
int cpuhpd_mkdir_p(const char *dir, const char *what);

/**
 * cpuhpd_instance_lock() - make this the only cpuhpd serving its sysfs tree.
 *
 * Takes an flock() on "cpuhpd-DEV-INO.lock" in the runtime directory
 * (--runtime-dir, else $RUNTIME_DIRECTORY, else the socket's directory),
 * named for the tree's devices/system/cpu directory, and writes our pid
 * into it (what it held before, a previous instance's pid and what it
 * left in the fd store, goes into d->instance_prev; its path but ".lock"
 * into d->instance_stem, for the tree's other files).  Held until the
 * process exits.
 * Return: 0, or a negative errno, logged (-EBUSY: another cpuhpd holds
 * it; the message names its pid).
 */
int cpuhpd_instance_lock(struct cpuhpd *d);

/*
 * An orderly stop that left nothing behind: empty the lock file, so that the
 * next cpuhpd starts without a restart grace (grace.h).
 */
void cpuhpd_instance_clean(struct cpuhpd *d);

/*
 * A restart's stop left @clients holding @leases in the fd store: say so
 * after our pid ("PID handover CLIENTS LEASES"), so that a next cpuhpd
 * given none of them back (a stop, not a restart) can tell why it waits.
 */
void cpuhpd_instance_handover(struct cpuhpd *d, unsigned clients, unsigned leases);

#endif /* CPUHPD_INSTANCE_H */
