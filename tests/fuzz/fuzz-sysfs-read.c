/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: arbitrary bytes as the content of a simulated sysfs
 * mask file and of cpu0/online, read through the real readers.  A mask must
 * read as cpuhp_cpuset_parse() of the same text; an online file as 0 or 1
 * exactly when its trimmed text is "0" or "1"; set_online() must verify
 * what it wrote and say -EIO when the file does not read back as written.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpuhp/cpuset.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzzcheck.h"

/* Sizes below which the readers' bounds cannot be the reason for -EINVAL. */
#define MASK_SURELY_FITS   60000
#define ONLINE_SURELY_FITS 15

static char tree[64];

static void tree_path(char *path, size_t size, const char *rel)
{
	snprintf(path, size, "%s/devices/system/cpu/%s", tree, rel);
}

static void put_file(const char *rel, const void *data, size_t len)
{
	char path[256];
	int fd;

	tree_path(path, sizeof(path), rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

static void tree_free(void)
{
	nftw(tree, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const dirs[] = {"/devices", "/devices/system", "/devices/system/cpu",
	                                   "/devices/system/cpu/cpu0"};
	char path[256];

	(void)argc, (void)argv;
	strcpy(tree, "/tmp/cpuhp-fuzz-sysfs-XXXXXX");
	FUZZ_CHECK(mkdtemp(tree));
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", tree, dirs[i]);
		FUZZ_CHECK(mkdir(path, 0755) == 0);
	}
	atexit(tree_free);
	return 0;
}

static bool is_space(uint8_t c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* What an online file holding @data must read as: 0 (with *@on) or -EINVAL. */
static int ref_online(const uint8_t *data, size_t size, bool *on)
{
	const uint8_t *s = data, *e = data + size;

	while (s < e && is_space(*s))
		s++;
	while (e > s && is_space(e[-1]))
		e--;
	if (e - s != 1 || (*s != '0' && *s != '1'))
		return -EINVAL;
	*on = *s == '1';
	return 0;
}

static void check_mask(const uint8_t *data, size_t size)
{
	struct cpuhp_cpuset got, want, poisoned;
	int ret, want_ret;
	char *str;

	put_file("online", data, size);
	memset(&poisoned, 0x5a, sizeof(poisoned));
	got = poisoned;
	ret = cpuhp_sysfs_read_mask(tree, CPUHP_MASK_ONLINE, &got);
	FUZZ_CHECK(ret == 0 || ret == -EINVAL);
	if (ret)
		FUZZ_CHECK(memcmp(&got, &poisoned, sizeof(got)) == 0);

	if (memchr(data, '\0', size)) {
		FUZZ_CHECK(ret == -EINVAL);
		return;
	}
	if (size >= MASK_SURELY_FITS)
		return;
	str = malloc(size + 1);
	FUZZ_CHECK(str);
	memcpy(str, data, size);
	str[size] = '\0';
	want_ret = cpuhp_cpuset_parse(str, &want);
	free(str);
	FUZZ_CHECK(ret == (want_ret == -ERANGE ? -EINVAL : want_ret));
	if (!ret)
		FUZZ_CHECK(cpuhp_cpuset_equal(&got, &want));
}

static void check_online(const uint8_t *data, size_t size)
{
	bool on = false, want = false;
	int ret, want_ret;

	put_file("cpu0/online", data, size);
	ret = cpuhp_sysfs_read_online(tree, 0, &on);
	want_ret = memchr(data, '\0', size) ? -EINVAL : ref_online(data, size, &want);
	if (size < ONLINE_SURELY_FITS) {
		FUZZ_CHECK(ret == want_ret);
		if (!ret)
			FUZZ_CHECK(on == want);
	} else {
		/* Past the reader's bound the only new answer allowed is -EINVAL. */
		FUZZ_CHECK(ret == -EINVAL || (ret == want_ret && on == want));
	}

	/*
	 * A plain file takes the write at offset 0 without truncation, so it
	 * reads back as "1\n" over the first two bytes of @data.  Set online
	 * only if that still reads as 1, else -EIO: never -EINVAL, never 0.
	 */
	uint8_t after[64];
	size_t len = size < 2 ? 2 : size;
	bool readback = false;

	if (size >= sizeof(after))
		return;
	memcpy(after, data, size);
	memcpy(after, "1\n", 2);
	want_ret = memchr(after, '\0', len) ? -EINVAL : ref_online(after, len, &readback);
	ret = cpuhp_sysfs_set_online(tree, 0, true);
	if (len < ONLINE_SURELY_FITS)
		FUZZ_CHECK(ret == (want_ret == 0 && readback ? 0 : -EIO));
	else
		FUZZ_CHECK(ret == 0 || ret == -EIO);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_mask(data, size);
	check_online(data, size);
	return 0;
}
