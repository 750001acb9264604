/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl: ask cpuhpd for status, CPU hotplug and reader leases from the
 * shell.  This file is main() and the helpers the commands share; see
 * ctl.h for the exit codes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpuhp/cpuset.h>
#include <cpuhp/version.h>

#include "ctl.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: cpuhpctl [--socket PATH] COMMAND [ARGS...]\n"
	        "\n"
	        "Talk to cpuhpd, the daemon that owns CPU hotplug and hands out reader\n"
	        "leases: while any lease is held, the set of online CPUs does not change.\n"
	        "\n"
	        "Commands:\n"
	        "  status                        CPU masks, leases, the writer's state\n"
	        "  leases                        who holds leases, and the hotplugs waiting\n"
	        "  online [--timeout MS] LIST    bring the CPUs in LIST (e.g. 2-3,5) online\n"
	        "  offline [--timeout MS] LIST   take them offline\n"
	        "  watch [--count N]             print hotplug events as they happen\n"
	        "  hold [--timeout MS] [--who NAME] [--why TEXT] -- CMD [ARGS...]\n"
	        "                                run CMD while holding a lease\n"
	        "  freeze [--who NAME] [--why TEXT] -- CMD [ARGS...]\n"
	        "                                run CMD with hotplug frozen: online and\n"
	        "                                offline fail at once meanwhile\n"
	        "  states                        the hotplug states registered, in order\n"
	        "  state NAME [--priority N] [--deadline MS] [--nocalls]\n"
	        "        [--teardown CMD] [--startup CMD]\n"
	        "                                a hotplug state whose callbacks run CMD\n"
	        "  smt [--timeout MS] [--force] on|off|forceoff\n"
	        "                                SMT control, as one hotplug\n"
	        "  metrics                       cpuhpd's metrics, Prometheus text format\n"
	        "Run 'cpuhpctl COMMAND --help' for more on each.\n"
	        "\n"
	        "Options:\n"
	        "  -s, --socket PATH  cpuhpd's socket (default: $%s, else %s)\n"
	        "  --sysfs-root PATH  the sysfs tree cpuhpd serves, read by cpuhpctl to say\n"
	        "                     what changed if cpuhpd dies in a hotplug (default:\n"
	        "                     $%s, else /sys)\n"
	        "  -j, --json         print JSON (status, leases, states, online, offline, smt, "
	        "watch;\n"
	        "                     the schemas are in cpuhpctl(8))\n"
	        "  -h, --help         this text\n"
	        "  -V, --version      print the version\n"
	        "\n"
	        "Exit status:\n"
	        "  %d   done\n"
	        "  %d   failed (nothing done)\n"
	        "  %d   bad command line\n"
	        "  %d  partly done: some CPUs changed, some failed\n"
	        "  %d  cpuhpd unreachable (not running, socket permissions, version)\n"
	        "  %d  timed out: leases still held, or a hotplug in the way; nothing changed\n"
	        "  hold: CMD's exit status, 128+N if a signal N killed it, 126/127 if it\n"
	        "        could not be run\n",
	        CPUHP_CLIENT_SOCKET_ENV, CPUHP_CLIENT_DEFAULT_SOCKET, CPUHPCTL_SYSFS_ROOT_ENV,
	        CPUHPCTL_EXIT_OK, CPUHPCTL_EXIT_FAILED, CPUHPCTL_EXIT_USAGE, CPUHPCTL_EXIT_PARTIAL,
	        CPUHPCTL_EXIT_UNREACHABLE, CPUHPCTL_EXIT_TIMEDOUT);
}

/* The socket connect() will use, for messages. */
static const char *socket_path(const struct cpuhpctl *ctl)
{
	return ctl->socket ? ctl->socket : cpuhp_client_socket_path();
}

int cpuhpctl_connect(const struct cpuhpctl *ctl, struct cpuhp_client **out)
{
	const char *path = socket_path(ctl);
	int err = cpuhp_client_connect(path, out);

	if (err == 0)
		return 0;
	fprintf(stderr, "cpuhpctl: cannot connect to cpuhpd at %s: %s\n", path, strerror(-err));
	switch (err) {
	case -ENOENT:
	case -ECONNREFUSED:
		fprintf(stderr,
		        "cpuhpctl: is cpuhpd running? Choose another socket with "
		        "--socket PATH or $%s.\n",
		        CPUHP_CLIENT_SOCKET_ENV);
		break;
	case -EACCES:
		fprintf(stderr, "cpuhpctl: the socket's permissions keep you out: run as root or "
		                "join the socket's group.\n");
		break;
	case -EPROTONOSUPPORT:
		fprintf(stderr, "cpuhpctl: cpuhpd speaks another protocol version; use the "
		                "cpuhpctl that came with it.\n");
		break;
	case -EUSERS:
		fprintf(stderr, "cpuhpctl: cpuhpd has too many connections; try again later.\n");
		break;
	case -EPERM:
		fprintf(stderr,
		        "cpuhpctl: the process serving %s is neither root nor you, so it is not "
		        "trusted (see who owns it: ls -l %s); set $%s=UID to trust that uid.\n",
		        path, path, CPUHP_CLIENT_DAEMON_UID_ENV);
		break;
	}
	return CPUHPCTL_EXIT_UNREACHABLE;
}

int cpuhpctl_fail(struct cpuhp_client *c, int err, const char *what)
{
	const char *msg = c ? cpuhp_client_last_message(c) : "";

	fprintf(stderr, "cpuhpctl: %s: %s\n", what, msg[0] ? msg : strerror(-err));
	switch (err) {
	case -ETIMEDOUT:
	case -EAGAIN:
		fprintf(stderr, "cpuhpctl: try a longer --timeout; 'cpuhpctl leases' shows who "
		                "holds leases and which hotplugs are pending.\n");
		return CPUHPCTL_EXIT_TIMEDOUT;
	case -EPERM:
	case -EACCES:
		fprintf(stderr, "cpuhpctl: hotplug needs root or membership in cpuhpd's admin "
		                "group (cpuhpd --admin-group).\n");
		return CPUHPCTL_EXIT_FAILED;
	case -ECONNRESET:
	case -EPIPE:
	case -ECANCELED:
		fprintf(stderr, "cpuhpctl: lost the connection to cpuhpd.\n");
		return CPUHPCTL_EXIT_UNREACHABLE;
	default:
		return CPUHPCTL_EXIT_FAILED;
	}
}

/* Whether @arg is "--NAME=..." for a NAME of @longopts that takes no argument. */
static bool takes_no_value(const char *arg, const struct option *longopts)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg - 2) : 0;

	for (; eq && longopts->name; longopts++)
		if (longopts->has_arg == no_argument && strlen(longopts->name) == len &&
		    !strncmp(arg + 2, longopts->name, len))
			return true;
	return false;
}

int cpuhpctl_getopt(int argc, char **argv, const char *optstring, const struct option *longopts,
                    const char *cmd)
{
	const char *arg, *sep = cmd ? " " : "";
	bool long_word;
	int opt;

	opterr = 0;
	opt = getopt_long(argc, argv, optstring, longopts, NULL);
	if (opt != '?' && opt != ':')
		return opt;
	/*
	 * A long option, or an option whose argument is missing, moved optind
	 * past its word; a bad short one inside a cluster ("-qt") did not, so
	 * only optopt names it.  glibc sets optopt to 0 for an unknown long
	 * option, to the option's letter otherwise.
	 */
	arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
	long_word = !strncmp(arg, "--", 2);
	cmd = cmd ? cmd : "";
	if (opt == ':' && long_word)
		fprintf(stderr, "cpuhpctl%s%s: option '%s' needs an argument\n", sep, cmd, arg);
	else if (opt == ':')
		fprintf(stderr, "cpuhpctl%s%s: option -%c needs an argument\n", sep, cmd, optopt);
	else if (!optopt)
		fprintf(stderr, "cpuhpctl%s%s: unrecognized option '%s'\n", sep, cmd, arg);
	else if (long_word && takes_no_value(arg, longopts))
		fprintf(stderr, "cpuhpctl%s%s: option '%.*s' takes no value\n", sep, cmd,
		        (int)(strchr(arg, '=') - arg), arg);
	else
		fprintf(stderr, "cpuhpctl%s%s: invalid option -- '%c'\n", sep, cmd, optopt);
	fprintf(stderr, "Try 'cpuhpctl%s%s --help'.\n", sep, cmd);
	return '?';
}

int cpuhpctl_parse_ms(const char *opt, const char *arg, unsigned *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > 0xffffffffUL) {
		fprintf(stderr, "cpuhpctl: %s wants milliseconds, 0 to %lu, not '%s'\n", opt,
		        0xffffffffUL, arg);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

int cpuhpctl_parse_timeout(const char *arg, unsigned *out)
{
	return cpuhpctl_parse_ms("--timeout", arg, out);
}

char *cpuhpctl_format(const struct cpuhp_cpuset *set)
{
	size_t len = 64;

	for (;;) {
		char *buf = malloc(len);

		if (!buf)
			return NULL;
		if (cpuhp_cpuset_format(set, buf, len) >= 0)
			return buf;
		free(buf);
		len *= 4;
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'}, {"sysfs-root", required_argument, NULL, 'r'},
	    {"json", no_argument, NULL, 'j'},         {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},      {0},
	};
	struct cpuhpctl ctl = {.sysfs_root = getenv(CPUHPCTL_SYSFS_ROOT_ENV)};
	const char *cmd;
	int opt;

	/* '+': options after the command belong to the command. */
	while ((opt = cpuhpctl_getopt(argc, argv, "+:s:jhV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			ctl.socket = optarg;
			break;
		case 'r':
			ctl.sysfs_root = optarg;
			break;
		case 'j':
			ctl.json = true;
			break;
		case 'h':
			usage(stdout);
			return CPUHPCTL_EXIT_OK;
		case 'V':
			printf("cpuhpctl %s\n", CPUHP_VERSION_STRING);
			return CPUHPCTL_EXIT_OK;
		default:
			return CPUHPCTL_EXIT_USAGE;
		}
	}
	if (!ctl.sysfs_root || !ctl.sysfs_root[0])
		ctl.sysfs_root = "/sys";
	if (optind >= argc) {
		fprintf(stderr, "cpuhpctl: which command? (status, leases, states, state, online, "
		                "offline, smt, watch, hold, freeze, metrics)\n"
		                "Try 'cpuhpctl --help'.\n");
		return CPUHPCTL_EXIT_USAGE;
	}
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0; /* glibc: restart getopt for the command's options */

	if (!strcmp(cmd, "status"))
		return cpuhpctl_status(&ctl, argc, argv);
	if (!strcmp(cmd, "leases"))
		return cpuhpctl_leases(&ctl, argc, argv);
	if (!strcmp(cmd, "online"))
		return cpuhpctl_set_online(&ctl, argc, argv, true);
	if (!strcmp(cmd, "offline"))
		return cpuhpctl_set_online(&ctl, argc, argv, false);
	if (!strcmp(cmd, "watch"))
		return cpuhpctl_watch(&ctl, argc, argv);
	if (!strcmp(cmd, "hold"))
		return cpuhpctl_hold(&ctl, argc, argv);
	if (!strcmp(cmd, "freeze"))
		return cpuhpctl_freeze(&ctl, argc, argv);
	if (!strcmp(cmd, "states"))
		return cpuhpctl_states(&ctl, argc, argv);
	if (!strcmp(cmd, "state"))
		return cpuhpctl_state(&ctl, argc, argv);
	if (!strcmp(cmd, "smt"))
		return cpuhpctl_smt(&ctl, argc, argv);
	if (!strcmp(cmd, "metrics"))
		return cpuhpctl_metrics(&ctl, argc, argv);
	if (!strcmp(cmd, "help")) {
		usage(stdout);
		return CPUHPCTL_EXIT_OK;
	}
	fprintf(stderr, "cpuhpctl: unknown command '%s'\nTry 'cpuhpctl --help'.\n", cmd);
	return CPUHPCTL_EXIT_USAGE;
}
