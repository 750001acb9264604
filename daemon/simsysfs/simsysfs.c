/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd-simsysfs: build a simulated CPU-hotplug sysfs tree for cpuhpd
 * --sysfs-root, mirroring this machine's CPUs (or a given CPU list).
 *
 * One tool shared by the daemon tests and the demo, and installed, so that
 * a packaged cpuhpd can be tried (or another project's CI run) without
 * root; in C so that it reads and writes CPU lists with libcpuhp's one
 * parser and formatter.  The tree:
 *
 *   DIR/devices/system/cpu/{possible,present,online,offline}   range lists
 *   DIR/devices/system/cpu/cpuN/                               each possible CPU
 *   DIR/devices/system/cpu/cpuN/online                         "0" or "1", only for
 *                                                              hotpluggable CPUs
 *   DIR/devices/system/cpu/cpuN/topology/{core_id,physical_package_id,
 *                                         thread_siblings_list}   each online CPU
 *   DIR/devices/system/cpu/cpuN/nodeM -> ../../node/nodeM      each CPU, as with NUMA
 *   DIR/devices/system/node/nodeM/                             each node
 *   DIR/devices/system/cpu/smt/{control,active}                with --smt, or where
 *                                                              the mirrored tree has it
 *
 * As the kernel, no topology/ for an offline CPU, and thread_siblings_list
 * names the online threads only.  Nothing updates the masks or topology/
 * when cpuN/online is written later: cpuhpd reads per-CPU files first (see
 * daemon/cpuhpd/sysfs/cpus.h), and a test that plays the kernel removes or
 * writes topology/ itself.  Nothing acts on a write to smt/control either:
 * cpuhpd sees each sibling into the asked state itself, and smt/active
 * stays as written here (a test writes it).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpuhp/cpuset.h>
#include <cpuhp/version.h>

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

static int write_int(const char *dir, const char *name, int v)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%d", v);
	return write_file(dir, name, buf);
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
	fprintf(f,
	        "Usage: cpuhpd-simsysfs [--from ROOT | --cpus LIST [--smt N] [--sockets N]\n"
	        "                       [--nodes N] [--offline LIST]] [--smt-control WORD] DIR\n"
	        "Create a simulated CPU-hotplug sysfs tree under DIR for cpuhpd --sysfs-root:\n"
	        "a test tool, so that cpuhpd, cpuhpctl and their clients can be tried, or\n"
	        "tested in CI, without root and without touching the real CPUs.  Writes to\n"
	        "its cpuN/online files are what cpuhpd's hotplugs change.\n"
	        "\n"
	        "  cpuhpd-simsysfs --cpus 0-3 /tmp/sim\n"
	        "  cpuhpd --socket /tmp/sim.sock --sysfs-root /tmp/sim &\n"
	        "  cpuhpctl --socket /tmp/sim.sock offline 2\n"
	        "\n"
	        "  --from ROOT         mirror the CPUs of the sysfs at ROOT (default /sys): the\n"
	        "                      same possible, present and online CPUs, an online file\n"
	        "                      for the CPUs that have one there, and smt/, each CPU's\n"
	        "                      topology/ and node link where ROOT has them\n"
	        "  --cpus LIST         invent CPUs instead: LIST possible, present and online,\n"
	        "                      each with an online file except the first, and with\n"
	        "                      topology/ and a node link\n"
	        "  --smt N             with --cpus: N hardware threads per core (1 to 8; the\n"
	        "                      number of CPUs must divide by N), numbered as x86 does:\n"
	        "                      with C cores, CPU i's siblings are i mod C, + C, + 2C...;\n"
	        "                      writes smt/control 'on' and smt/active\n"
	        "  --sockets N         with --cpus: the cores split into N packages in order\n"
	        "                      (default 1; the cores must divide by N); core_id counts\n"
	        "                      within a package\n"
	        "  --nodes N           with --cpus: the cores split into N NUMA nodes in order\n"
	        "                      (default 1; the cores must divide by N)\n"
	        "  --offline LIST      with --cpus: these CPUs start offline, with no topology/\n"
	        "                      (as the kernel shows them); not the first CPU\n"
	        "  --smt-control WORD  write WORD into smt/control instead (on, off, forceoff,\n"
	        "                      notsupported, notimplemented), creating smt/ if needed\n"
	        "  -h, --help          this help\n"
	        "  -V, --version       print the version\n"
	        "\n"
	        "Exit status: 0 done, 1 the tree could not be written or ROOT read, 2 a bad\n"
	        "command line.  See cpuhpd-simsysfs(1).\n");
}

/* smt/control and smt/active under @dir. */
static int write_smt(const char *dir, const char *control, bool active)
{
	char sub[4200];
	int err;

	snprintf(sub, sizeof(sub), "%s/smt", dir);
	if (mkdir(sub, 0755) < 0 && errno != EEXIST)
		return -errno;
	if ((err = write_file(sub, "control", control)))
		return err;
	return write_file(sub, "active", active ? "1" : "0");
}

/* cpuN/topology/thread_siblings_list under @cpudir. */
static int write_siblings(const char *cpudir, const struct cpuhp_cpuset *siblings)
{
	char sub[4300];

	snprintf(sub, sizeof(sub), "%s/topology", cpudir);
	if (mkdir(sub, 0755) < 0 && errno != EEXIST)
		return -errno;
	return write_mask(sub, "thread_siblings_list", siblings);
}

/* cpuN/nodeM under @cpudir, to DIR/devices/system/node/nodeM (made here) as the kernel links it.
 */
static int write_node_link(const char *cpudir, int node)
{
	char target[64], link[4300], nodedir[4300];
	int err;

	snprintf(target, sizeof(target), "../../node/node%d", node);
	snprintf(nodedir, sizeof(nodedir), "%s/%s", cpudir, target);
	if ((err = mkdirs(nodedir)))
		return err;
	snprintf(link, sizeof(link), "%s/node%d", cpudir, node);
	if (symlink(target, link) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* cpuN/topology/'s files under @cpudir (made here), and its node link if @t has a node. */
static int write_topology(const char *cpudir, const struct cpuhp_cpu_topology *t)
{
	char sub[4300];
	int err;

	if ((err = write_siblings(cpudir, &t->siblings)))
		return err;
	snprintf(sub, sizeof(sub), "%s/topology", cpudir);
	if ((err = write_int(sub, "core_id", t->core)) ||
	    (err = write_int(sub, "physical_package_id", t->package)))
		return err;
	return t->node >= 0 ? write_node_link(cpudir, t->node) : 0;
}

/* What --cpus, --smt, --sockets and --nodes make of the machine. */
struct shape {
	const struct cpuhp_cpuset *possible, *online;
	unsigned threads, sockets, nodes;
};

/*
 * CPU @cpu's place in @m: the CPU's index i among the possible ones gives
 * its core, i mod C of the C cores (x86's numbering), whose threads are
 * the CPUs of that core that are online; packages and nodes take the cores
 * in order.
 */
static void invent_topology(const struct shape *m, unsigned cpu, struct cpuhp_cpu_topology *t)
{
	unsigned ncpus = cpuhp_cpuset_count(m->possible), cores = ncpus / m->threads;
	unsigned idx = 0, core;
	int c;

	for (c = cpuhp_cpuset_next(m->possible, -1); c >= 0 && (unsigned)c != cpu;
	     c = cpuhp_cpuset_next(m->possible, c))
		idx++;
	core = idx % cores;
	t->core = (int)(core % (cores / m->sockets));
	t->package = (int)(core / (cores / m->sockets));
	t->node = (int)(core / (cores / m->nodes));
	cpuhp_cpuset_zero(&t->siblings);
	idx = 0;
	for (c = cpuhp_cpuset_next(m->possible, -1); c >= 0;
	     c = cpuhp_cpuset_next(m->possible, c), idx++)
		if (idx % cores == core && cpuhp_cpuset_has(m->online, (unsigned)c))
			cpuhp_cpuset_add(&t->siblings, (unsigned)c);
}

/* --sockets and --nodes' number, 1 to CPUHP_CPUSET_MAX.  Return: 0, or 2 after the message. */
static int parse_count(const char *opt, const char *arg, unsigned *out)
{
	unsigned long v = strtoul(arg, NULL, 10);

	if (!*arg || strspn(arg, "0123456789") != strlen(arg) || v < 1 || v > CPUHP_CPUSET_MAX) {
		fprintf(stderr, "cpuhpd-simsysfs: %s wants a number from 1 to %d, not '%s'\n", opt,
		        CPUHP_CPUSET_MAX, arg);
		return 2;
	}
	*out = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"from", required_argument, NULL, 'f'},
	    {"cpus", required_argument, NULL, 'c'},
	    {"smt", required_argument, NULL, 's'},
	    {"sockets", required_argument, NULL, 'S'},
	    {"nodes", required_argument, NULL, 'N'},
	    {"offline", required_argument, NULL, 'o'},
	    {"smt-control", required_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	struct cpuhp_cpuset possible, present, online, offline, start_offline;
	const char *from = NULL, *cpus = NULL, *smt_control = NULL, *offline_arg = NULL;
	char dir[4096], sub[4200], control[CPUHP_SMT_CONTROL_MAX];
	unsigned threads = 0, sockets = 0, nodes = 0, ncpus = 0, cores;
	struct shape shape;
	bool mirror_smt = false, active = false;
	int opt, cpu, err, first;

	while ((opt = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
			from = optarg;
			break;
		case 'c':
			cpus = optarg;
			break;
		case 's':
			threads = (unsigned)strtoul(optarg, NULL, 10);
			if (threads < 1 || threads > 8 ||
			    strspn(optarg, "0123456789") != strlen(optarg)) {
				fprintf(stderr,
				        "cpuhpd-simsysfs: --smt wants 1 to 8 threads per core, "
				        "not '%s'\n",
				        optarg);
				return 2;
			}
			break;
		case 'S':
			if (parse_count("--sockets", optarg, &sockets))
				return 2;
			break;
		case 'N':
			if (parse_count("--nodes", optarg, &nodes))
				return 2;
			break;
		case 'o':
			offline_arg = optarg;
			break;
		case 'C':
			smt_control = optarg;
			if (!*optarg || strlen(optarg) >= CPUHP_SMT_CONTROL_MAX ||
			    strchr(optarg, '\n')) {
				fprintf(stderr,
				        "cpuhpd-simsysfs: --smt-control: '%s' is not a word\n",
				        optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("cpuhpd-simsysfs %s\n", CPUHP_VERSION_STRING);
			return 0;
		default:
			/* getopt_long said which option. */
			fprintf(stderr, "Try 'cpuhpd-simsysfs --help'.\n");
			return 2;
		}
	}
	if (optind != argc - 1 || (from && cpus) ||
	    ((threads || sockets || nodes || offline_arg) && !cpus)) {
		fprintf(stderr, "cpuhpd-simsysfs: %s\nTry 'cpuhpd-simsysfs --help'.\n",
		        from && cpus ? "--from and --cpus exclude each other"
		        : cpus
		            ? (optind == argc ? "which DIR? the tree goes there" : "one DIR only")
		        : threads        ? "--smt needs --cpus"
		        : sockets        ? "--sockets needs --cpus"
		        : nodes          ? "--nodes needs --cpus"
		        : offline_arg    ? "--offline needs --cpus"
		        : optind == argc ? "which DIR? the tree goes there"
		                         : "one DIR only");
		return 2;
	}
	cpuhp_cpuset_zero(&start_offline);
	if (cpus) {
		err = cpuhp_cpuset_parse(cpus, &possible);
		if (err || !cpuhp_cpuset_count(&possible)) {
			fprintf(stderr,
			        "cpuhpd-simsysfs: --cpus '%s' is not a CPU list such as 0-3\n",
			        cpus);
			return 2;
		}
		present = online = possible;
		ncpus = cpuhp_cpuset_count(&possible);
		if (threads && ncpus % threads) {
			fprintf(stderr,
			        "cpuhpd-simsysfs: --smt %u: %u CPUs do not split into cores "
			        "of %u threads\n",
			        threads, ncpus, threads);
			return 2;
		}
		cores = ncpus / (threads ? threads : 1);
		if ((sockets && cores % sockets) || (nodes && cores % nodes)) {
			fprintf(stderr, "cpuhpd-simsysfs: --%s %u: %u cores do not split into %u\n",
			        sockets && cores % sockets ? "sockets" : "nodes",
			        sockets && cores % sockets ? sockets : nodes, cores,
			        sockets && cores % sockets ? sockets : nodes);
			return 2;
		}
		if (offline_arg) {
			if (cpuhp_cpuset_parse(offline_arg, &start_offline)) {
				fprintf(stderr,
				        "cpuhpd-simsysfs: --offline '%s' is not a CPU list such as "
				        "2-3\n",
				        offline_arg);
				return 2;
			}
			for (cpu = -1; (cpu = cpuhp_cpuset_next(&start_offline, cpu)) >= 0;) {
				if (!cpuhp_cpuset_has(&possible, (unsigned)cpu) ||
				    cpu == cpuhp_cpuset_next(&possible, -1)) {
					fprintf(stderr, "cpuhpd-simsysfs: --offline: CPU %d %s\n",
					        cpu,
					        cpuhp_cpuset_has(&possible, (unsigned)cpu)
					            ? "is the first, which cannot be hotplugged"
					            : "is not in --cpus");
					return 2;
				}
				cpuhp_cpuset_del(&online, (unsigned)cpu);
			}
		}
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
		mirror_smt = cpuhp_sysfs_read_smt(from, control, &active) == 0;
	}
	shape = (struct shape){
	    .possible = &possible,
	    .online = &online,
	    .threads = threads ? threads : 1,
	    .sockets = sockets ? sockets : 1,
	    .nodes = nodes ? nodes : 1,
	};
	snprintf(dir, sizeof(dir), "%s/devices/system/cpu", argv[optind]);
	err = mkdirs(dir);
	if (err)
		goto fail;
	first = cpuhp_cpuset_next(&possible, -1);
	cpuhp_cpuset_zero(&offline);
	for (cpu = first; cpu >= 0; cpu = cpuhp_cpuset_next(&possible, cpu)) {
		bool on = cpuhp_cpuset_has(&online, (unsigned)cpu), pluggable;
		struct cpuhp_cpu_topology t;

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
		if (cpus) {
			invent_topology(&shape, (unsigned)cpu, &t);
			/* The node link stays while the CPU is offline; topology/ does not. */
			if ((err = on ? write_topology(sub, &t) : write_node_link(sub, t.node)))
				goto fail;
		} else if (!cpuhp_sysfs_read_topology(from, (unsigned)cpu, &t)) {
			if ((err = write_topology(sub, &t)))
				goto fail;
		} else if (!cpuhp_sysfs_read_siblings(from, (unsigned)cpu, &t.siblings) &&
		           (err = write_siblings(sub, &t.siblings))) {
			goto fail;
		}
	}
	if (threads && (err = write_smt(dir, smt_control ? smt_control : "on", threads > 1)))
		goto fail;
	if (!threads && (mirror_smt || smt_control) &&
	    (err = write_smt(dir, smt_control ? smt_control : control, active)))
		goto fail;
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
