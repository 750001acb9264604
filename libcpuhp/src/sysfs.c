/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CPU hotplug files of sysfs: the range-list masks under
 * <root>/devices/system/cpu/ and each CPU's online switch.
 *
 * Files are read whole into a bounded buffer: a file larger than any the
 * kernel can produce (or one that never ends, like /dev/zero) is not a
 * sysfs file we understand, and is -EINVAL rather than an unbounded read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpuhp/cpuset.h>

/*
 * The longest canonical list of CPUHP_CPUSET_MAX CPUs is pairs with gaps,
 * "0-1,3-4,...,8190-8191": 26,568 bytes (the kernel itself stops at a page).
 * The cap leaves room for that with a wide margin, and is small enough to
 * allocate without a second thought.
 */
#define MASK_FILE_MAX (64 * 1024)

/* "0\n" or "1\n"; anything longer than this is not an online file. */
#define ONLINE_FILE_MAX 16

static const char *const mask_names[] = {
    [CPUHP_MASK_ONLINE] = "online",
    [CPUHP_MASK_OFFLINE] = "offline",
    [CPUHP_MASK_POSSIBLE] = "possible",
    [CPUHP_MASK_PRESENT] = "present",
};

/* <root>/devices/system/cpu/<rel> into @path, or -ENAMETOOLONG. */
static int cpu_path(char *path, size_t size, const char *root, const char *rel)
{
	int n = snprintf(path, size, "%s/devices/system/cpu/%s", root ? root : "/sys", rel);

	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * Read all of @path into @buf (of @size bytes) and NUL-terminate it.
 * Return: 0; -errno from open/read; -EINVAL if the file does not fit in
 * size - 1 bytes or holds a NUL byte (neither can be a sysfs text file).
 */
static int read_small_file(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	int fd, ret = 0, cancel;

	/*
	 * open() and read() are cancellation points, and a cancel acted on
	 * here would leak the fd: internal.h's rule, by hand, since this file
	 * is also built alone (the fuzzers).
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	do
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		ret = -errno;
		pthread_setcancelstate(cancel, &cancel);
		return ret;
	}

	/* Ask for one byte more than fits, so that a full buffer means "too big". */
	for (;;) {
		ssize_t n = read(fd, buf + len, size - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == size) {
			ret = -EINVAL;
			break;
		}
	}
	/* close() on Linux releases the fd even when it reports EINTR: never retry it. */
	close(fd);
	pthread_setcancelstate(cancel, &cancel);
	if (ret)
		return ret;
	if (memchr(buf, '\0', len))
		return -EINVAL;
	buf[len] = '\0';
	return 0;
}

int cpuhp_sysfs_read_mask(const char *root, enum cpuhp_mask which, struct cpuhp_cpuset *out)
{
	char path[PATH_MAX];
	char *buf;
	int ret;

	if ((unsigned)which >= sizeof(mask_names) / sizeof(mask_names[0]))
		return -EINVAL;
	ret = cpu_path(path, sizeof(path), root, mask_names[which]);
	if (ret)
		return ret;
	/* The heap, not the stack: callers may run on small thread stacks. */
	buf = malloc(MASK_FILE_MAX);
	if (!buf)
		return -ENOMEM;
	ret = read_small_file(path, buf, MASK_FILE_MAX);
	if (!ret)
		ret = cpuhp_cpuset_parse(buf, out);
	free(buf);
	/* A number too big for the set is still a file we cannot represent. */
	return ret == -ERANGE ? -EINVAL : ret;
}

static bool is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

int cpuhp_sysfs_read_online(const char *root, unsigned cpu, bool *online)
{
	char path[PATH_MAX], rel[32], buf[ONLINE_FILE_MAX];
	char *p, *end;
	int ret;

	snprintf(rel, sizeof(rel), "cpu%u/online", cpu);
	ret = cpu_path(path, sizeof(path), root, rel);
	if (ret)
		return ret;
	ret = read_small_file(path, buf, sizeof(buf));
	if (ret)
		return ret;

	/* Same whitespace tolerance as the masks: the kernel writes "1\n". */
	p = buf;
	end = buf + strlen(buf);
	while (p < end && is_space(*p))
		p++;
	while (end > p && is_space(end[-1]))
		end--;
	if (end - p != 1 || (*p != '0' && *p != '1'))
		return -EINVAL;
	*online = *p == '1';
	return 0;
}

/*
 * Write @val (@len bytes) to the control file @path.  No O_CREAT: a missing
 * file means a missing or non-hotpluggable CPU, or no SMT control.  One
 * write() carries the whole value: the kernel acts on each write call, so a
 * value split over two calls would be two requests.  The kernel's refusal
 * (EBUSY, EPERM, ENODEV, ...) comes back as this write's errno.
 * Return: 0, -errno, or -EIO for a short write.
 */
static int write_control(const char *path, const char *val, size_t len)
{
	ssize_t n;
	int fd, ret, cancel;

	/* As in read_small_file(): not a cancellation point. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	do
		fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		ret = -errno;
		pthread_setcancelstate(cancel, &cancel);
		return ret;
	}
	do
		n = write(fd, val, len);
	while (n < 0 && errno == EINTR);
	ret = n < 0 ? -errno : (size_t)n != len ? -EIO : 0;
	close(fd);
	pthread_setcancelstate(cancel, &cancel);
	return ret;
}

int cpuhp_sysfs_set_online(const char *root, unsigned cpu, bool online)
{
	char path[PATH_MAX], rel[32];
	bool now;
	int ret;

	snprintf(rel, sizeof(rel), "cpu%u/online", cpu);
	ret = cpu_path(path, sizeof(path), root, rel);
	if (ret)
		return ret;
	ret = write_control(path, online ? "1\n" : "0\n", 2);
	if (ret)
		return ret;

	/*
	 * The write was accepted; the file must now say so.  A read-back that
	 * is not a 0/1 value is as much a failed verification as the wrong
	 * value: -EINVAL here would wrongly suggest the kernel refused @online.
	 */
	ret = cpuhp_sysfs_read_online(root, cpu, &now);
	if (ret == -EINVAL)
		return -EIO;
	if (ret)
		return ret;
	return now == online ? 0 : -EIO;
}

/* @s without leading and trailing whitespace, in place. */
static char *trim(char *s)
{
	char *end;

	while (is_space(*s))
		s++;
	end = s + strlen(s);
	while (end > s && is_space(end[-1]))
		end--;
	*end = '\0';
	return s;
}

int cpuhp_sysfs_read_smt(const char *root, char control[CPUHP_SMT_CONTROL_MAX], bool *active)
{
	char path[PATH_MAX], buf[CPUHP_SMT_CONTROL_MAX], abuf[ONLINE_FILE_MAX];
	char *word, *a;
	int ret;

	if ((ret = cpu_path(path, sizeof(path), root, "smt/control")) ||
	    (ret = read_small_file(path, buf, sizeof(buf))))
		return ret;
	word = trim(buf);
	if (!*word)
		return -EINVAL;
	if ((ret = cpu_path(path, sizeof(path), root, "smt/active")) ||
	    (ret = read_small_file(path, abuf, sizeof(abuf))))
		return ret;
	a = trim(abuf);
	if (strcmp(a, "0") && strcmp(a, "1"))
		return -EINVAL;
	memmove(control, word, strlen(word) + 1);
	*active = *a == '1';
	return 0;
}

int cpuhp_sysfs_set_smt(const char *root, const char *control)
{
	char path[PATH_MAX], val[CPUHP_SMT_CONTROL_MAX + 1], now[CPUHP_SMT_CONTROL_MAX];
	size_t len = control ? strlen(control) : 0;
	bool active;
	int ret;

	if (!len || len >= CPUHP_SMT_CONTROL_MAX || strchr(control, '\n'))
		return -EINVAL;
	ret = cpu_path(path, sizeof(path), root, "smt/control");
	if (ret)
		return ret;
	memcpy(val, control, len);
	val[len] = '\n';
	ret = write_control(path, val, len + 1);
	if (ret)
		return ret;
	ret = cpuhp_sysfs_read_smt(root, now, &active);
	if (ret == -EINVAL)
		return -EIO;
	if (ret)
		return ret;
	return strcmp(now, control) ? -EIO : 0;
}

int cpuhp_sysfs_read_siblings(const char *root, unsigned cpu, struct cpuhp_cpuset *out)
{
	char path[PATH_MAX], rel[64], buf[4096];
	int ret;

	snprintf(rel, sizeof(rel), "cpu%u/topology/thread_siblings_list", cpu);
	if ((ret = cpu_path(path, sizeof(path), root, rel)) ||
	    (ret = read_small_file(path, buf, sizeof(buf))))
		return ret;
	ret = cpuhp_cpuset_parse(buf, out);
	return ret == -ERANGE ? -EINVAL : ret;
}

/* The int in cpuN/topology/@name.  Return: 0, -errno, -EINVAL unless one decimal int. */
static int read_topology_int(const char *root, unsigned cpu, const char *name, int *out)
{
	char path[PATH_MAX], rel[96], buf[32], *word, *end;
	long v;
	int ret;

	snprintf(rel, sizeof(rel), "cpu%u/topology/%s", cpu, name);
	if ((ret = cpu_path(path, sizeof(path), root, rel)) ||
	    (ret = read_small_file(path, buf, sizeof(buf))))
		return ret;
	word = trim(buf);
	errno = 0;
	v = strtol(word, &end, 10);
	if (!*word || *end || errno || v < INT_MIN || v > INT_MAX)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* The N of cpuN's "nodeN" entry, or -1 if it has none.  Return: 0 or -errno. */
static int read_node(const char *root, unsigned cpu, int *node)
{
	char path[PATH_MAX], rel[32];
	struct dirent *e;
	DIR *dir;
	int ret, cancel;

	snprintf(rel, sizeof(rel), "cpu%u", cpu);
	if ((ret = cpu_path(path, sizeof(path), root, rel)))
		return ret;
	/* As in read_small_file(): not a cancellation point, no descriptor left behind. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	dir = opendir(path);
	if (!dir) {
		ret = -errno;
		pthread_setcancelstate(cancel, &cancel);
		return ret;
	}
	*node = -1;
	while ((e = readdir(dir))) {
		const char *digits = e->d_name + 4;
		char *end;
		long v;

		if (strncmp(e->d_name, "node", 4) || *digits < '0' || *digits > '9')
			continue;
		errno = 0;
		v = strtol(digits, &end, 10);
		if (!*end && !errno && v <= INT_MAX) {
			*node = (int)v;
			break;
		}
	}
	closedir(dir);
	pthread_setcancelstate(cancel, &cancel);
	return 0;
}

int cpuhp_sysfs_read_topology(const char *root, unsigned cpu, struct cpuhp_cpu_topology *out)
{
	struct cpuhp_cpu_topology t;
	int ret;

	if ((ret = read_topology_int(root, cpu, "core_id", &t.core)) ||
	    (ret = read_topology_int(root, cpu, "physical_package_id", &t.package)) ||
	    (ret = cpuhp_sysfs_read_siblings(root, cpu, &t.siblings)) ||
	    (ret = read_node(root, cpu, &t.node)))
		return ret;
	*out = t;
	return 0;
}
