/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhp_sysfs_*: against a simulated tree that each case builds in a
 * mkdtemp() directory, and read-only against the real /sys when it exists.
 *
 * A plain file cannot refuse a write the way the kernel does, so errno
 * propagation is shown with what a tree can hold: a missing file, a
 * dangling symlink, a directory, and symlinks to /dev/full (write fails
 * with ENOSPC), /dev/null (write succeeds, reads back nothing) and
 * /dev/zero (never ends).  A FIFO served by a thread plays the kernel for
 * the write-then-verify protocol, including a file that reads back the
 * other value.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpuhp/cpuset.h>

#include "check.h"

/* A string literal's bytes, embedded NULs included, as {data, len}. */
#define BYTES(s)                                                                                   \
	{                                                                                          \
		s, sizeof(s) - 1                                                                   \
	}

static char tree[64];

static void path_of(char *path, size_t size, const char *rel)
{
	int n = snprintf(path, size, "%s/devices/system/cpu/%s", tree, rel);

	CHECK(n > 0 && (size_t)n < size);
}

static void put_file(const char *rel, const char *data, size_t len)
{
	char path[PATH_MAX];
	int fd;

	path_of(path, sizeof(path), rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, data, len), len);
	CHECK_EQ_INT(close(fd), 0);
}

static void put(const char *rel, const char *text)
{
	put_file(rel, text, strlen(text));
}

static void put_dir(const char *rel)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), rel);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
}

static void put_symlink(const char *rel, const char *target)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), rel);
	CHECK_EQ_INT(symlink(target, path), 0);
}

static void put_fifo(const char *rel)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), rel);
	CHECK_EQ_INT(mkfifo(path, 0600), 0);
}

static void del(const char *rel)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), rel);
	CHECK_EQ_INT(unlink(path), 0);
}

static bool exists(const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	path_of(path, sizeof(path), rel);
	return lstat(path, &st) == 0;
}

/* The whole content of a file in the tree, as a string. */
static const char *slurp(const char *rel)
{
	static char buf[256];
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	path_of(path, sizeof(path), rel);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	CHECK(n >= 0);
	buf[n] = '\0';
	close(fd);
	return buf;
}

/* A fresh tree: <tmp>/devices/system/cpu/ with cpu0/ (no online file) to cpu2/. */
static void tree_new(void)
{
	char path[PATH_MAX];

	strcpy(tree, "/tmp/cpuhp-test-sysfs-XXXXXX");
	CHECK(mkdtemp(tree) != NULL);
	snprintf(path, sizeof(path), "%s/devices", tree);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/devices/system", tree);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/devices/system/cpu", tree);
	CHECK_EQ_INT(mkdir(path, 0755), 0);
	put_dir("cpu0");
	put_dir("cpu1");
	put_dir("cpu2");
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void tree_free(void)
{
	/* FTW_PHYS: never follow the symlinks to /dev into the removal. */
	CHECK_EQ_INT(nftw(tree, rm_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void parse_ok(const char *list, struct cpuhp_cpuset *set)
{
	CHECK_EQ_INT(cpuhp_cpuset_parse(list, set), 0);
}

static void poison(struct cpuhp_cpuset *set)
{
	memset(set, 0xa5, sizeof(*set));
}

static bool is_poisoned(const struct cpuhp_cpuset *set)
{
	struct cpuhp_cpuset p;

	poison(&p);
	return memcmp(&p, set, sizeof(p)) == 0;
}

static void sysfs_read_mask_reads_each_named_file(void)
{
	struct cpuhp_cpuset got, want;

	tree_new();
	/* Different contents, so a mix-up of names shows. */
	put("online", "0-1,3\n");
	put("offline", "2,4-7\n");
	put("possible", "0-7\n");
	put("present", "0-5\n");

	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_ONLINE, &got), 0);
	parse_ok("0-1,3", &want);
	CHECK(cpuhp_cpuset_equal(&got, &want));
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_OFFLINE, &got), 0);
	parse_ok("2,4-7", &want);
	CHECK(cpuhp_cpuset_equal(&got, &want));
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_POSSIBLE, &got), 0);
	parse_ok("0-7", &want);
	CHECK(cpuhp_cpuset_equal(&got, &want));
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_PRESENT, &got), 0);
	parse_ok("0-5", &want);
	CHECK(cpuhp_cpuset_equal(&got, &want));

	/* A root with a trailing slash names the same tree. */
	char root[80];
	snprintf(root, sizeof(root), "%s/", tree);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(root, CPUHP_MASK_PRESENT, &got), 0);
	CHECK(cpuhp_cpuset_equal(&got, &want));
	tree_free();
}

static void sysfs_read_mask_of_an_empty_line_is_the_empty_set(void)
{
	struct cpuhp_cpuset got;

	tree_new();
	put("offline", "\n"); /* what the kernel prints with every CPU online */
	poison(&got);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_OFFLINE, &got), 0);
	CHECK_EQ_INT(cpuhp_cpuset_count(&got), 0);

	put("offline", "");
	poison(&got);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_OFFLINE, &got), 0);
	CHECK_EQ_INT(cpuhp_cpuset_count(&got), 0);
	tree_free();
}

static void sysfs_read_mask_rejects_what_is_not_a_range_list(void)
{
	static const struct {
		const char *data;
		size_t len;
	} bad[] = {
	    BYTES("0-3 garbage\n"),
	    BYTES("3-1\n"),
	    BYTES("0,\n"),
	    BYTES("9000\n"), /* too big for a cpuset: not a list we can return */
	    BYTES("0\0"
	          "1\n"), /* a NUL byte is never part of sysfs text */
	    BYTES("\0"),
	};
	struct cpuhp_cpuset got;

	tree_new();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put_file("online", bad[i].data, bad[i].len);
		poison(&got);
		CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_ONLINE, &got), -EINVAL);
		CHECK(is_poisoned(&got));
	}
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, (enum cpuhp_mask)4, &got), -EINVAL);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, (enum cpuhp_mask) - 1, &got), -EINVAL);
	CHECK(is_poisoned(&got));
	tree_free();
}

static void sysfs_read_mask_passes_open_and_read_errors_through(void)
{
	struct cpuhp_cpuset got;
	char root[PATH_MAX];

	tree_new();
	poison(&got);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_POSSIBLE, &got), -ENOENT);
	put_symlink("possible", "nonexistent");
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_POSSIBLE, &got), -ENOENT);
	put_dir("present");
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_PRESENT, &got), -EISDIR);

	snprintf(root, sizeof(root), "%s/no-such-root", tree);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(root, CPUHP_MASK_ONLINE, &got), -ENOENT);
	/* A root that is a file, not a directory. */
	put("online", "0\n");
	snprintf(root, sizeof(root), "%s/devices/system/cpu/online", tree);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(root, CPUHP_MASK_ONLINE, &got), -ENOTDIR);
	CHECK(is_poisoned(&got));

	if (geteuid() != 0) {
		char path[PATH_MAX];

		path_of(path, sizeof(path), "online");
		CHECK_EQ_INT(chmod(path, 0), 0);
		CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_ONLINE, &got), -EACCES);
		CHECK(is_poisoned(&got));
	} else {
		printf("# skipped the EACCES case: root ignores file modes\n");
	}
	tree_free();
}

static void sysfs_read_mask_bounds_what_it_reads(void)
{
	struct cpuhp_cpuset got, want;
	static char list[32768], big[1 << 20];
	int n;

	tree_new();
	/* The longest canonical list of 8192 CPUs ("0-1,3-4,...") fits. */
	cpuhp_cpuset_zero(&want);
	for (unsigned cpu = 0; cpu < CPUHP_CPUSET_MAX; cpu += 3) {
		cpuhp_cpuset_add(&want, cpu);
		cpuhp_cpuset_add(&want, cpu + 1);
	}
	n = cpuhp_cpuset_format(&want, list, sizeof(list) - 1);
	CHECK(n > 0);
	list[n] = '\n';
	put_file("possible", list, (size_t)n + 1);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_POSSIBLE, &got), 0);
	CHECK(cpuhp_cpuset_equal(&got, &want));

	/* A valid but absurdly long list (1 MiB of "0,") is refused, not read whole. */
	for (size_t i = 0; i + 1 < sizeof(big); i += 2)
		memcpy(big + i, "0,", 2);
	big[sizeof(big) - 2] = '0';
	big[sizeof(big) - 1] = '\n';
	CHECK_EQ_INT(cpuhp_cpuset_parse("0,0,0\n", &got), 0); /* the pattern is valid */
	put_file("possible", big, sizeof(big));
	poison(&got);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_POSSIBLE, &got), -EINVAL);
	CHECK(is_poisoned(&got));

	/* A file that never ends: the read must stop. */
	put_symlink("present", "/dev/zero");
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(tree, CPUHP_MASK_PRESENT, &got), -EINVAL);
	CHECK(is_poisoned(&got));
	tree_free();
}

static void sysfs_read_online_reads_zero_and_one(void)
{
	bool on;

	tree_new();
	put("cpu1/online", "1\n");
	put("cpu2/online", "0\n");
	on = false;
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 1, &on), 0);
	CHECK(on);
	on = true;
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 2, &on), 0);
	CHECK(!on);

	/* The same whitespace tolerance as the masks. */
	put("cpu1/online", "0");
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 1, &on), 0);
	CHECK(!on);
	put("cpu1/online", " 1 \n");
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 1, &on), 0);
	CHECK(on);
	tree_free();
}

static void sysfs_read_online_rejects_other_content_and_keeps_out(void)
{
	static const struct {
		const char *data;
		size_t len;
	} bad[] = {
	    BYTES(""),
	    BYTES("\n"),
	    BYTES("2\n"),
	    BYTES("10\n"),
	    BYTES("01\n"),
	    BYTES("1\n1\n"),
	    BYTES("y\n"),
	    BYTES("-1\n"),
	    BYTES("1\0"),
	    BYTES("\0"
	          "1"),
	    BYTES("1 1\n"),
	    BYTES("1                                                \n"), /* too long */
	};

	tree_new();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool on = true;

		put_file("cpu1/online", bad[i].data, bad[i].len);
		CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 1, &on), -EINVAL);
		CHECK(on);
		on = false;
		CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 1, &on), -EINVAL);
		CHECK(!on);
	}
	del("cpu1/online");
	put_symlink("cpu1/online", "/dev/zero");
	bool on = true;
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 1, &on), -EINVAL);
	CHECK(on);
	tree_free();
}

static void sysfs_read_online_is_enoent_for_missing_and_unpluggable_cpus(void)
{
	bool on = true;

	tree_new();
	/* cpu0/ exists without an online file: the kernel's "not hotpluggable". */
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 0, &on), -ENOENT);
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 3, &on), -ENOENT);
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, UINT_MAX, &on), -ENOENT);
	put_dir("cpu1/online");
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 1, &on), -EISDIR);
	CHECK(on);
	tree_free();
}

static void sysfs_set_online_writes_the_value_and_verifies_it(void)
{
	tree_new();
	put("cpu1/online", "0\n");
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 1, true), 0);
	CHECK_EQ_STR(slurp("cpu1/online"), "1\n");
	/* Setting the current state again succeeds, as in the kernel. */
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 1, true), 0);
	CHECK_EQ_STR(slurp("cpu1/online"), "1\n");
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 1, false), 0);
	CHECK_EQ_STR(slurp("cpu1/online"), "0\n");

	bool on = true;
	CHECK_EQ_INT(cpuhp_sysfs_read_online(tree, 1, &on), 0);
	CHECK(!on);
	tree_free();
}

static void sysfs_read_smt_reads_control_and_active(void)
{
	char control[CPUHP_SMT_CONTROL_MAX] = "unchanged";
	bool active = true;

	tree_new();
	/* No smt/: a kernel without SMT control; nothing is written. */
	CHECK_EQ_INT(cpuhp_sysfs_read_smt(tree, control, &active), -ENOENT);
	CHECK_EQ_STR(control, "unchanged");
	put_dir("smt");
	put("smt/control", "notsupported\n");
	put("smt/active", "0\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_smt(tree, control, &active), 0);
	CHECK_EQ_STR(control, "notsupported");
	CHECK(!active);
	put("smt/active", "2\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_smt(tree, control, &active), -EINVAL);
	put("smt/active", "1\n");
	put("smt/control", "\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_smt(tree, control, &active), -EINVAL);
	CHECK_EQ_STR(control, "notsupported");
	put("smt/control", "this-word-is-far-too-long-for-any-smt-control\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_smt(tree, control, &active), -EINVAL);
	tree_free();
}

static void sysfs_set_smt_writes_one_word_and_verifies_it(void)
{
	tree_new();
	CHECK_EQ_INT(cpuhp_sysfs_set_smt(tree, "off"), -ENOENT); /* never created */
	put_dir("smt");
	put("smt/control", "on\n");
	put("smt/active", "1\n");
	CHECK_EQ_INT(cpuhp_sysfs_set_smt(tree, "off"), 0);
	CHECK_EQ_STR(slurp("smt/control"), "off\n");
	CHECK_EQ_INT(cpuhp_sysfs_set_smt(tree, ""), -EINVAL);
	CHECK_EQ_INT(cpuhp_sysfs_set_smt(tree, "on\noff"), -EINVAL);
	CHECK_EQ_INT(cpuhp_sysfs_set_smt(tree, NULL), -EINVAL);
	CHECK_EQ_STR(slurp("smt/control"), "off\n");
	tree_free();
}

static void sysfs_read_siblings_parses_the_thread_list(void)
{
	struct cpuhp_cpuset set, want;

	tree_new();
	CHECK_EQ_INT(cpuhp_sysfs_read_siblings(tree, 1, &set), -ENOENT);
	put_dir("cpu1/topology");
	put("cpu1/topology/thread_siblings_list", "1,65\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_siblings(tree, 1, &set), 0);
	cpuhp_cpuset_zero(&want);
	cpuhp_cpuset_add(&want, 1);
	cpuhp_cpuset_add(&want, 65);
	CHECK(cpuhp_cpuset_equal(&set, &want));
	put("cpu1/topology/thread_siblings_list", "one\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_siblings(tree, 1, &set), -EINVAL);
	put("cpu1/topology/thread_siblings_list", "99999\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_siblings(tree, 1, &set), -EINVAL);
	tree_free();
}

static void sysfs_read_topology_reads_core_package_siblings_and_node(void)
{
	struct cpuhp_cpu_topology t;
	struct cpuhp_cpuset want;

	tree_new();
	/* An offline CPU: the kernel took its topology/ away. */
	CHECK_EQ_INT(cpuhp_sysfs_read_topology(tree, 2, &t), -ENOENT);
	CHECK_EQ_INT(cpuhp_sysfs_read_topology(tree, 7, &t), -ENOENT);
	put_dir("cpu2/topology");
	put("cpu2/topology/core_id", "5\n");
	put("cpu2/topology/physical_package_id", "-1\n");
	put("cpu2/topology/thread_siblings_list", "2,6\n");
	/* No node link: a kernel without NUMA. */
	CHECK_EQ_INT(cpuhp_sysfs_read_topology(tree, 2, &t), 0);
	CHECK_EQ_INT(t.core, 5);
	CHECK_EQ_INT(t.package, -1);
	CHECK_EQ_INT(t.node, -1);
	cpuhp_cpuset_zero(&want);
	cpuhp_cpuset_add(&want, 2);
	cpuhp_cpuset_add(&want, 6);
	CHECK(cpuhp_cpuset_equal(&t.siblings, &want));
	put_symlink("cpu2/node13", "../../node/node13");
	put_dir("cpu2/nodefoo");
	CHECK_EQ_INT(cpuhp_sysfs_read_topology(tree, 2, &t), 0);
	CHECK_EQ_INT(t.node, 13);
	/* What is not one int, or not a list, is refused; nothing is written then. */
	put("cpu2/topology/core_id", "5 6\n");
	t.core = 77;
	CHECK_EQ_INT(cpuhp_sysfs_read_topology(tree, 2, &t), -EINVAL);
	CHECK_EQ_INT(t.core, 77);
	put("cpu2/topology/core_id", "4294967296\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_topology(tree, 2, &t), -EINVAL);
	put("cpu2/topology/core_id", "\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_topology(tree, 2, &t), -EINVAL);
	put("cpu2/topology/core_id", "0\n");
	put("cpu2/topology/thread_siblings_list", "two\n");
	CHECK_EQ_INT(cpuhp_sysfs_read_topology(tree, 2, &t), -EINVAL);
	tree_free();
}

static void sysfs_set_online_never_creates_a_missing_file(void)
{
	tree_new();
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 0, false), -ENOENT);
	CHECK(!exists("cpu0/online"));
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 3, true), -ENOENT);
	CHECK(!exists("cpu3"));
	/* Not even through a dangling symlink. */
	put_symlink("cpu1/online", "target");
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 1, true), -ENOENT);
	CHECK(!exists("cpu1/target"));
	tree_free();
}

static void sysfs_set_online_returns_the_errno_of_open_and_write(void)
{
	tree_new();
	put_dir("cpu1/online");
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 1, true), -EISDIR);
	/* /dev/full refuses every write with ENOSPC: the write's errno is returned. */
	put_symlink("cpu2/online", "/dev/full");
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 2, false), -ENOSPC);
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 2, true), -ENOSPC);

	if (geteuid() != 0) {
		char path[PATH_MAX];

		put_dir("cpu3");
		put("cpu3/online", "0\n");
		path_of(path, sizeof(path), "cpu3/online");
		CHECK_EQ_INT(chmod(path, 0444), 0);
		CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 3, true), -EACCES);
		CHECK_EQ_STR(slurp("cpu3/online"), "0\n");
	} else {
		printf("# skipped the EACCES case: root ignores file modes\n");
	}
	tree_free();
}

static void sysfs_set_online_is_eio_when_an_accepted_write_does_not_read_back(void)
{
	tree_new();
	/* /dev/null takes the write and reads back nothing: unverified, so -EIO, not -EINVAL. */
	put_symlink("cpu1/online", "/dev/null");
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 1, true), -EIO);
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 1, false), -EIO);
	/* /dev/zero takes it and reads back endless NULs. */
	put_symlink("cpu2/online", "/dev/zero");
	CHECK_EQ_INT(cpuhp_sysfs_set_online(tree, 2, true), -EIO);
	tree_free();
}

/*
 * A thread behind a FIFO acting as the kernel's online file: it takes one
 * write, then answers the read-back with a chosen value.  Opening a FIFO
 * blocks until the other end opens it, so each step waits for the one
 * before without any sleep.
 */
struct fake_kernel {
	char path[PATH_MAX];
	const char *answer;
	char got[16];
};

static void *fake_kernel_main(void *arg)
{
	struct fake_kernel *k = arg;
	size_t len = 0;
	ssize_t n;
	int fd;

	fd = open(k->path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	while ((n = read(fd, k->got + len, sizeof(k->got) - 1 - len)) > 0)
		len += (size_t)n;
	CHECK_EQ_INT(n, 0);
	k->got[len] = '\0';
	close(fd);

	fd = open(k->path, O_WRONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT(write(fd, k->answer, strlen(k->answer)), strlen(k->answer));
	close(fd);
	return NULL;
}

static int set_online_against_fake_kernel(bool online, const char *answer, char *got)
{
	struct fake_kernel k = {.answer = answer};
	pthread_t thread;
	int ret;

	path_of(k.path, sizeof(k.path), "cpu1/online");
	CHECK_EQ_INT(pthread_create(&thread, NULL, fake_kernel_main, &k), 0);
	ret = cpuhp_sysfs_set_online(tree, 1, online);
	CHECK_EQ_INT(pthread_join(thread, NULL), 0);
	strcpy(got, k.got);
	return ret;
}

static void sysfs_set_online_is_eio_when_the_file_reads_back_the_other_value(void)
{
	char got[16];

	tree_new();
	put_fifo("cpu1/online");
	/* The control: the device agrees, and it saw exactly one "1\n". */
	CHECK_EQ_INT(set_online_against_fake_kernel(true, "1\n", got), 0);
	CHECK_EQ_STR(got, "1\n");
	CHECK_EQ_INT(set_online_against_fake_kernel(false, "0\n", got), 0);
	CHECK_EQ_STR(got, "0\n");
	/* The device took the write but still says the old state. */
	CHECK_EQ_INT(set_online_against_fake_kernel(true, "0\n", got), -EIO);
	CHECK_EQ_STR(got, "1\n");
	CHECK_EQ_INT(set_online_against_fake_kernel(false, "1\n", got), -EIO);
	CHECK_EQ_STR(got, "0\n");
	tree_free();
}

static void sysfs_paths_too_long_are_enametoolong(void)
{
	static char root[PATH_MAX];
	struct cpuhp_cpuset got;
	size_t len;
	bool on;

	/*
	 * A root that is itself a valid path (short components, under
	 * PATH_MAX) but too long once the file name is appended.  Cut short,
	 * the path would still name something (the tree, or a missing file),
	 * so only a length check of its own gives ENAMETOOLONG.
	 */
	tree_new();
	strcpy(root, tree);
	for (len = strlen(root); len + 2 < sizeof(root) - 4; len += 2)
		memcpy(root + len, "/.", 3);
	CHECK_EQ_INT(access(root, F_OK), 0);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(root, CPUHP_MASK_ONLINE, &got), -ENAMETOOLONG);
	CHECK_EQ_INT(cpuhp_sysfs_read_online(root, 1, &on), -ENAMETOOLONG);
	CHECK_EQ_INT(cpuhp_sysfs_set_online(root, 1, true), -ENAMETOOLONG);
	tree_free();
}

/* Subset test: every CPU of @a is in @b. */
static bool subset(const struct cpuhp_cpuset *a, const struct cpuhp_cpuset *b)
{
	for (int cpu = cpuhp_cpuset_next(a, -1); cpu >= 0; cpu = cpuhp_cpuset_next(a, cpu))
		if (!cpuhp_cpuset_has(b, (unsigned)cpu))
			return false;
	return true;
}

/*
 * Read-only: the real masks under the default root are consistent.  Another
 * process may hotplug a CPU meanwhile, so the checks that compare online
 * with other reads retry until two reads of online agree around them.
 */
static void sysfs_real_masks_are_consistent(void)
{
	struct cpuhp_cpuset online, online2, offline, possible, present, explicit_root;
	int tries;

	if (access("/sys/devices/system/cpu/online", R_OK) != 0) {
		printf("# skipped: /sys/devices/system/cpu/online is not readable here\n");
		return;
	}
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(NULL, CPUHP_MASK_POSSIBLE, &possible), 0);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask(NULL, CPUHP_MASK_PRESENT, &present), 0);
	CHECK_EQ_INT(cpuhp_sysfs_read_mask("/sys", CPUHP_MASK_POSSIBLE, &explicit_root), 0);
	CHECK(cpuhp_cpuset_equal(&possible, &explicit_root));
	CHECK(cpuhp_cpuset_count(&possible) > 0);
	CHECK(subset(&present, &possible));

	for (tries = 0; tries < 100; tries++) {
		bool stable = true;

		CHECK_EQ_INT(cpuhp_sysfs_read_mask(NULL, CPUHP_MASK_ONLINE, &online), 0);
		CHECK_EQ_INT(cpuhp_sysfs_read_mask(NULL, CPUHP_MASK_OFFLINE, &offline), 0);
		for (int cpu = cpuhp_cpuset_next(&possible, -1); cpu >= 0;
		     cpu = cpuhp_cpuset_next(&possible, cpu)) {
			bool on;
			int ret = cpuhp_sysfs_read_online(NULL, (unsigned)cpu, &on);

			/* No online file: a CPU that cannot be hotplugged, or not present. */
			if (ret == -ENOENT)
				continue;
			CHECK_EQ_INT(ret, 0);
			if (on != cpuhp_cpuset_has(&online, (unsigned)cpu))
				stable = false;
		}
		CHECK_EQ_INT(cpuhp_sysfs_read_mask(NULL, CPUHP_MASK_ONLINE, &online2), 0);
		if (!stable || !cpuhp_cpuset_equal(&online, &online2))
			continue;

		CHECK(cpuhp_cpuset_count(&online) > 0);
		CHECK(subset(&online, &present));
		for (int cpu = cpuhp_cpuset_next(&online, -1); cpu >= 0;
		     cpu = cpuhp_cpuset_next(&online, cpu))
			CHECK(!cpuhp_cpuset_has(&offline, (unsigned)cpu));
		/* Every possible CPU is either online or offline. */
		for (int cpu = cpuhp_cpuset_next(&possible, -1); cpu >= 0;
		     cpu = cpuhp_cpuset_next(&possible, cpu))
			CHECK(cpuhp_cpuset_has(&online, (unsigned)cpu) ||
			      cpuhp_cpuset_has(&offline, (unsigned)cpu));
		return;
	}
	CHECK(!"the online mask changed on each of 100 reads");
}

int main(void)
{
	RUN_TEST(sysfs_read_mask_reads_each_named_file);
	RUN_TEST(sysfs_read_mask_of_an_empty_line_is_the_empty_set);
	RUN_TEST(sysfs_read_mask_rejects_what_is_not_a_range_list);
	RUN_TEST(sysfs_read_mask_passes_open_and_read_errors_through);
	RUN_TEST(sysfs_read_mask_bounds_what_it_reads);
	RUN_TEST(sysfs_read_online_reads_zero_and_one);
	RUN_TEST(sysfs_read_online_rejects_other_content_and_keeps_out);
	RUN_TEST(sysfs_read_online_is_enoent_for_missing_and_unpluggable_cpus);
	RUN_TEST(sysfs_set_online_writes_the_value_and_verifies_it);
	RUN_TEST(sysfs_set_online_never_creates_a_missing_file);
	RUN_TEST(sysfs_read_smt_reads_control_and_active);
	RUN_TEST(sysfs_set_smt_writes_one_word_and_verifies_it);
	RUN_TEST(sysfs_read_siblings_parses_the_thread_list);
	RUN_TEST(sysfs_read_topology_reads_core_package_siblings_and_node);
	RUN_TEST(sysfs_set_online_returns_the_errno_of_open_and_write);
	RUN_TEST(sysfs_set_online_is_eio_when_an_accepted_write_does_not_read_back);
	RUN_TEST(sysfs_set_online_is_eio_when_the_file_reads_back_the_other_value);
	RUN_TEST(sysfs_paths_too_long_are_enametoolong);
	RUN_TEST(sysfs_real_masks_are_consistent);
	return 0;
}
