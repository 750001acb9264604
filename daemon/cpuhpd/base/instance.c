/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who else could act on our tree or our files.
 *
 * Two daemons on one sysfs tree would each believe it alone holds the
 * writer side: the second could offline a CPU under the first's leases.
 * So the first takes an exclusive flock() on a lock file named for the
 * tree (the device and inode of its devices/system/cpu, so that two paths
 * to one tree share it), and the second fails naming the first's pid.
 * flock() dies with the process, so a crashed daemon leaves no stale lock
 * (the file stays, unlocked: unlinking it could race with a new holder).
 *
 * A directory that another user may write is one in which that user can
 * rename our socket away and bind a fake daemon in its place, swap our
 * lock file, or put a FIFO or a file of theirs where we write the metrics:
 * such directories are refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpuhpd.h"
#include "instance.h"
#include "log.h"

int cpuhpd_dir_trusted(const char *dir, const char *what, char *why, size_t size)
{
	struct stat st;

	if (stat(dir, &st) < 0) {
		int err = -errno;

		snprintf(why, size, "cannot use %s as the directory of %s: %s", dir, what,
		         strerror(errno));
		return err;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, size, "%s (for %s) is not a directory", dir, what);
		return -ENOTDIR;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(why, size,
		         "refusing %s as the directory of %s: it belongs to uid %u, which could "
		         "replace what we put there; use a directory owned by root (or by uid %u)",
		         dir, what, (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)) {
		snprintf(why, size,
		         "refusing %s as the directory of %s: mode %04o lets others rename or "
		         "replace what we put there; chmod go-w %s",
		         dir, what, (unsigned)(st.st_mode & 07777), dir);
		return -EPERM;
	}
	return 0;
}

int cpuhpd_dir_check(const char *dir, const char *what)
{
	char why[PATH_MAX + 256];
	int err = cpuhpd_dir_trusted(dir, what, why, sizeof(why));

	if (err)
		cpuhpd_err("%s", why);
	return err;
}

char *cpuhpd_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	return strndup(path, slash == path ? 1 : (size_t)(slash - path));
}

int cpuhpd_mkdir_p(const char *dir, const char *what)
{
	char *p = strdup(dir), *s;
	int err = 0;

	if (!p)
		return -ENOMEM;
	for (s = p + 1;; s++) {
		bool last = *s == '\0';

		if (*s != '/' && !last)
			continue;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			err = -errno;
			cpuhpd_err("cannot create directory %s for %s: %s", p, what,
			           strerror(errno));
			break;
		}
		if (last)
			break;
		*s = '/';
	}
	free(p);
	return err;
}

/* --runtime-dir, else systemd's RuntimeDirectory=, else the socket's directory. */
static char *runtime_dir(const struct cpuhpd *d)
{
	const char *env = getenv("RUNTIME_DIRECTORY");

	if (d->opt.runtime_dir)
		return strdup(d->opt.runtime_dir);
	/* systemd may list several, separated by ':': ours is the first. */
	if (env && env[0] == '/')
		return strndup(env, strcspn(env, ":"));
	return cpuhpd_dirname(d->opt.socket_path);
}

/* The pid a holder wrote, or 0; and what a restart's stop left in the store, if it says. */
static long holder_pid_handover(int fd, struct cpuhpd_instance_prev *prev)
{
	char buf[80];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	if (prev)
		prev->handover =
		    sscanf(buf, "%*d handover %u %u", &prev->clients, &prev->leases) == 2;
	return pid;
}

static long holder_pid(int fd)
{
	return holder_pid_handover(fd, NULL);
}

int cpuhpd_instance_lock(struct cpuhpd *d)
{
	char cpu[PATH_MAX], path[PATH_MAX], pid[32];
	struct stat st;
	char *dir;
	int fd, err, n;

	snprintf(cpu, sizeof(cpu), "%s/devices/system/cpu", d->opt.sysfs_root);
	if (stat(cpu, &st) < 0) {
		err = -errno;
		cpuhpd_err("cannot read %s: %s; is --sysfs-root right?", cpu, strerror(errno));
		return err;
	}
	dir = runtime_dir(d);
	if (!dir)
		return -ENOMEM;
	err = cpuhpd_mkdir_p(dir, "the lock file (--runtime-dir)");
	if (!err)
		err = cpuhpd_dir_check(dir, "the lock file");
	n = snprintf(path, sizeof(path), "%s/cpuhpd-%llx-%llx.lock", dir,
	             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	free(dir);
	if (err)
		return err;
	if (n >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* The files of this tree (the remembered topology) are named as the lock is. */
	d->instance_stem = strndup(path, (size_t)n - strlen(".lock"));
	if (!d->instance_stem)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		err = -errno;
		cpuhpd_err("cannot open the lock file %s: %s", path, strerror(errno));
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		if (err == -EBUSY)
			cpuhpd_err(
			    "another cpuhpd (pid %ld) already serves the sysfs tree %s (lock "
			    "file %s); stop it first, or give this one another --sysfs-root",
			    holder_pid(fd), d->opt.sysfs_root, path);
		else
			cpuhpd_err("cannot lock %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	/* A pid left in it: the last cpuhpd here did not stop clean (grace.h). */
	d->instance_prev.pid = holder_pid_handover(fd, &d->instance_prev);
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		cpuhpd_warn("cannot write our pid into %s: %m", path);
	/* Kept open (and locked) until we exit. */
	d->instance_fd = fd;
	return 0;
}

void cpuhpd_instance_handover(struct cpuhpd *d, unsigned clients, unsigned leases)
{
	char line[80];
	int n =
	    snprintf(line, sizeof(line), "%ld handover %u %u\n", (long)getpid(), clients, leases);

	if (d->instance_fd > 0 &&
	    (ftruncate(d->instance_fd, 0) < 0 || pwrite(d->instance_fd, line, (size_t)n, 0) != n))
		cpuhpd_warn("cannot write the lock file: %m");
}

void cpuhpd_instance_clean(struct cpuhpd *d)
{
	if (d->instance_fd > 0 && ftruncate(d->instance_fd, 0) < 0)
		cpuhpd_warn("cannot empty the lock file: %m; the next cpuhpd will wait its restart "
		            "grace");
}
