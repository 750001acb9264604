/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsysfs-fault.so: preloaded into cpuhpd by the fault-injection suite to
 * make a simulated cpuN/online fail the way the kernel's does.  A plain file
 * cannot refuse a write with EBUSY; this shim makes open(2) or write(2) of
 * chosen paths fail with a chosen errno, or write(2) come back short.
 *
 * CPUHP_FAULT_FILE names a control file the test rewrites between faults,
 * read at every open() for writing, one rule a line:
 *
 *   SUFFIX open ERRNO    open() of a path ending in SUFFIX fails with ERRNO
 *   SUFFIX open stall    open() never returns: the caller is stuck there
 *                        (after the log line below), until it is killed
 *   SUFFIX write ERRNO   open() succeeds, the first write() fails with ERRNO
 *   SUFFIX write short   the first write() returns 1 and writes nothing
 *   SUFFIX write kernel  for smt/control: the first write() goes through,
 *                        then does what the kernel does with it: "off" and
 *                        "forceoff" write 0 into the cpuN/online of every
 *                        sibling thread (a CPU whose topology/
 *                        thread_siblings_list starts with a lower CPU), "on"
 *                        writes 1 there; smt/active follows.  A simulated
 *                        tree's siblings then change before cpuhpd's own
 *                        per-CPU writes, as they do on a real kernel
 *
 * ERRNO is a name: EBUSY, EIO, EPERM, EACCES, EINVAL, EOPNOTSUPP, ENOSPC,
 * ECANCELED (the kernel's answer to the first online of an SMT sibling that
 * never ran, while SMT is off).
 * Each injection appends "SUFFIX OP ERRNO PATH" to CPUHP_FAULT_LOG (when
 * set), so the test proves that the fault it meant did happen; a FIFO
 * there lets a test wait for the injection (a stall) instead of sleeping.
 *
 * Only opens for writing are looked at: the daemon's reads of the tree and
 * everything else in the process go straight through.
 */
/* Both symbols are defined below: the headers must not rename open to open64. */
#undef _FILE_OFFSET_BITS
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ARMED 64
/* The "errno" of a "write kernel" rule: no errno can be this large. */
#define KERNEL 1000000

struct armed {
	int fd;
	int err; /* 0: short write */
	char rule[192];
	char path[256];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct armed armed[MAX_ARMED]; /* under lock */
/* Written under lock; read without it first, so that unarmed writes never take the lock. */
static atomic_uint narmed;

static int (*real_open)(const char *, int, ...);
static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_close)(int);

static const struct {
	const char *name;
	int err;
} errnos[] = {
    {"EBUSY", EBUSY},   {"EIO", EIO},       {"EPERM", EPERM},           {"EACCES", EACCES},
    {"EINVAL", EINVAL}, {"ENOSPC", ENOSPC}, {"EOPNOTSUPP", EOPNOTSUPP}, {"ECANCELED", ECANCELED},
};

static void resolve(void)
{
	if (!real_open) {
		real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
		real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
		real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
	}
}

static void log_injection(const char *rule, const char *path)
{
	const char *log = getenv("CPUHP_FAULT_LOG");
	char line[512];
	int fd, n;

	if (!log)
		return;
	n = snprintf(line, sizeof(line), "%s %s\n", rule, path);
	fd = real_open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (real_write(fd, line, (size_t)n) < 0)
		n = 0;
	real_close(fd);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t ls = strlen(s), lx = strlen(suffix);

	return lx && ls >= lx && !strcmp(s + ls - lx, suffix);
}

/*
 * The rule for @path from the control file.  Return: true if one matched;
 * *@op is "open" or "write", *@err the errno (0 for "short").
 */
static bool find_rule(const char *path, char *op, int *err, char *rule, size_t rule_len)
{
	const char *ctl = getenv("CPUHP_FAULT_FILE");
	char buf[2048], suffix[128], o[8], e[16];
	ssize_t n;
	int fd;

	if (!ctl)
		return false;
	fd = real_open(ctl, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	real_close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	for (char *save, *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%127s %7s %15s", suffix, o, e) != 3 || !ends_with(path, suffix))
			continue;
		if (strcmp(o, "open") && strcmp(o, "write"))
			continue;
		*err = -1;
		/* 0 is the errno-less fault of each op: a short write, a stalled open. */
		if (!strcmp(o, "write") && !strcmp(e, "short"))
			*err = 0;
		if (!strcmp(o, "open") && !strcmp(e, "stall"))
			*err = 0;
		if (!strcmp(o, "write") && !strcmp(e, "kernel"))
			*err = KERNEL;
		for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
			if (!strcmp(e, errnos[i].name))
				*err = errnos[i].err;
		if (*err < 0)
			continue;
		strcpy(op, o);
		snprintf(rule, rule_len, "%s %s %s", suffix, o, e);
		return true;
	}
	return false;
}

static int open_common(const char *path, int flags, mode_t mode)
{
	char op[8], rule[192];
	int err, fd;

	resolve();
	if ((flags & O_ACCMODE) == O_RDONLY || !find_rule(path, op, &err, rule, sizeof(rule)))
		return real_open(path, flags, mode);
	if (!strcmp(op, "open")) {
		log_injection(rule, path);
		while (!err)
			pause(); /* a stall: only a signal that kills ends it */
		errno = err;
		return -1;
	}
	fd = real_open(path, flags, mode);
	if (fd < 0)
		return fd;
	pthread_mutex_lock(&lock);
	if (narmed < MAX_ARMED) {
		struct armed *a = &armed[narmed++];

		a->fd = fd;
		a->err = err;
		snprintf(a->rule, sizeof(a->rule), "%s", rule);
		snprintf(a->path, sizeof(a->path), "%s", path);
	}
	pthread_mutex_unlock(&lock);
	return fd;
}

/* The mode argument exists only with O_CREAT or O_TMPFILE. */
#define MODE_ARG(flags, mode)                                                                      \
	do {                                                                                       \
		if ((flags) & (O_CREAT | O_TMPFILE)) {                                             \
			va_list ap;                                                                \
                                                                                                   \
			va_start(ap, flags);                                                       \
			mode = va_arg(ap, mode_t);                                                 \
			va_end(ap);                                                                \
		}                                                                                  \
	} while (0)

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return open_common(path, flags, mode);
}

/* The same symbol under its large-file name (an alias of open in glibc on 64-bit). */
int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;

	MODE_ARG(flags, mode);
	return open_common(path, flags, mode);
}

/* Take @fd's rule, if it has one: each armed open fails its first write only. */
static bool disarm(int fd, struct armed *out)
{
	bool found = false;

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < narmed; i++) {
		if (armed[i].fd == fd) {
			*out = armed[i];
			armed[i] = armed[narmed - 1];
			narmed--;
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return found;
}

/* Write @text into <@cpu_dir>/@rel, as far as that goes. */
static void put(const char *cpu_dir, const char *rel, const char *text)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", cpu_dir, rel);
	fd = real_open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return;
	/* A failed write leaves the file as it was: the test sees that. */
	(void)!real_write(fd, text, strlen(text));
	real_close(fd);
}

/* The kernel's side of a write of @buf into @path, .../devices/system/cpu/smt/control. */
static void act_like_kernel(const char *path, const char *buf, size_t len)
{
	char cpu_dir[256], word[16] = "";
	const char *on;
	size_t l = strlen(path);
	DIR *dir;
	struct dirent *e;

	if (l < 12 || l - 11 >= sizeof(cpu_dir))
		return;
	memcpy(cpu_dir, path, l - 11); /* without "smt/control" */
	cpu_dir[l - 12] = '\0';
	memcpy(word, buf, len < sizeof(word) - 1 ? len : sizeof(word) - 1);
	word[strcspn(word, "\n")] = '\0';
	if (!strcmp(word, "on"))
		on = "1\n";
	else if (!strcmp(word, "off") || !strcmp(word, "forceoff"))
		on = "0\n";
	else
		return;
	dir = opendir(cpu_dir);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		char rel[600], list[64] = "";
		unsigned cpu;
		ssize_t n;
		int fd;

		if (sscanf(e->d_name, "cpu%u", &cpu) != 1)
			continue;
		snprintf(rel, sizeof(rel), "%s/%s/topology/thread_siblings_list", cpu_dir,
		         e->d_name);
		fd = real_open(rel, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, list, sizeof(list) - 1);
		real_close(fd);
		if (n <= 0 || strtoul(list, NULL, 10) >= cpu)
			continue;
		snprintf(rel, sizeof(rel), "%s/online", e->d_name);
		put(cpu_dir, rel, on);
	}
	closedir(dir);
	put(cpu_dir, "smt/active", on);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	struct armed a;

	resolve();
	if (!narmed || !disarm(fd, &a))
		return real_write(fd, buf, len);
	log_injection(a.rule, a.path);
	if (a.err == KERNEL) {
		ssize_t n = real_write(fd, buf, len);

		if (n == (ssize_t)len)
			act_like_kernel(a.path, buf, len);
		return n;
	}
	if (a.err) {
		errno = a.err;
		return -1;
	}
	return len ? 1 : 0;
}

int close(int fd)
{
	struct armed a;

	resolve();
	if (narmed)
		disarm(fd, &a);
	return real_close(fd);
}
