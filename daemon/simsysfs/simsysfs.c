/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd-simsysfs: build a simulated CPU-hotplug sysfs tree for cpuhpd
 * --sysfs-root, mirroring this machine's CPUs (or a given CPU list).
 *
 * One tool shared by the daemon tests and the demo, in C so that it reads
 * and writes CPU lists with libcpuhp's one parser and formatter.  The tree:
 *
 *   DIR/devices/system/cpu/{possible,present,online,offline}   range lists
 *   DIR/devices/system/cpu/cpuN/                               each possible CPU
 *   DIR/devices/system/cpu/cpuN/online                         "0" or "1", only for
 *                                                              hotpluggable CPUs
 *
 * Nothing updates the masks when cpuN/online is written later: cpuhpd reads
 * per-CPU files first (see daemon/cpuhpd/cpus.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cpuhp/cpuset.h>

static int mkdirs(const char *path)
{
	char buf[4096], *s;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (s = strchr(buf + 1, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		if (!s)
			return 0;
		*s = '/';
	}
}

static int write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	if (fprintf(f, "%s\n", text) < 0)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static int write_mask(const char *dir, const char *name, const struct cpuhp_cpuset *set)
{
	char buf[32768];

	if (cpuhp_cpuset_format(set, buf, sizeof(buf)) < 0)
		return -ENOSPC;
	return write_file(dir, name, buf);
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpd-simsysfs [--from ROOT | --cpus LIST] DIR\n"
	           "Create a simulated CPU-hotplug sysfs tree under DIR for cpuhpd --sysfs-root.\n"
	           "\n"
	           "  --from ROOT   mirror the CPUs of the sysfs at ROOT (default /sys): the same\n"
	           "                possible, present and online CPUs, and an online file for the\n"
	           "                CPUs that have one there\n"
	           "  --cpus LIST   invent CPUs instead: LIST possible, present and online, each\n"
	           "                with an online file except the first\n"
	           "  -h, --help    this help\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"from", required_argument, NULL, 'f'},
	    {"cpus", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct cpuhp_cpuset possible, present, online, offline;
	const char *from = NULL, *cpus = NULL;
	char dir[4096], sub[4200];
	int opt, cpu, err, first;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			from = optarg;
			break;
		case 'c':
			cpus = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1 || (from && cpus)) {
		usage(stderr);
		return 2;
	}
	if (cpus) {
		err = cpuhp_cpuset_parse(cpus, &possible);
		if (err || !cpuhp_cpuset_count(&possible)) {
			fprintf(stderr,
			        "cpuhpd-simsysfs: --cpus '%s' is not a CPU list such as 0-3\n",
			        cpus);
			return 2;
		}
		present = online = possible;
	} else {
		if (!from)
			from = "/sys";
		err = cpuhp_sysfs_read_mask(from, CPUHP_MASK_POSSIBLE, &possible);
		if (!err)
			err = cpuhp_sysfs_read_mask(from, CPUHP_MASK_PRESENT, &present);
		if (!err)
			err = cpuhp_sysfs_read_mask(from, CPUHP_MASK_ONLINE, &online);
		if (err) {
			fprintf(stderr, "cpuhpd-simsysfs: cannot read the CPU masks under %s: %s\n",
			        from, strerror(-err));
			return 1;
		}
	}
	snprintf(dir, sizeof(dir), "%s/devices/system/cpu", argv[optind]);
	err = mkdirs(dir);
	if (err)
		goto fail;
	first = cpuhp_cpuset_next(&possible, -1);
	cpuhp_cpuset_zero(&offline);
	for (cpu = first; cpu >= 0; cpu = cpuhp_cpuset_next(&possible, cpu)) {
		bool on = cpuhp_cpuset_has(&online, (unsigned)cpu), pluggable;

		if (!on)
			cpuhp_cpuset_add(&offline, (unsigned)cpu);
		snprintf(sub, sizeof(sub), "%s/cpu%d", dir, cpu);
		if (mkdir(sub, 0755) < 0 && errno != EEXIST) {
			err = -errno;
			goto fail;
		}
		if (cpus) {
			pluggable = cpu != first;
		} else {
			bool real_on;

			pluggable = cpuhp_sysfs_read_online(from, (unsigned)cpu, &real_on) == 0;
			if (pluggable)
				on = real_on;
		}
		if (pluggable && (err = write_file(sub, "online", on ? "1" : "0")))
			goto fail;
	}
	if ((err = write_mask(dir, "possible", &possible)) ||
	    (err = write_mask(dir, "present", &present)) ||
	    (err = write_mask(dir, "online", &online)) ||
	    (err = write_mask(dir, "offline", &offline)))
		goto fail;
	return 0;

fail:
	fprintf(stderr, "cpuhpd-simsysfs: cannot create the tree under %s: %s\n", argv[optind],
	        strerror(-err));
	return 1;
}
