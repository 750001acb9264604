/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl: ask cpuhpd for status, CPU hotplug and reader leases from the
 * shell.  This file is main() and the helpers the commands share; see
 * ctl.h for the exit codes.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cpuhp/cpuset.h>
#include <cpuhp/version.h>

#include "ctl.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: cpuhpctl [--socket PATH] [--json] COMMAND [ARGS...]\n"
	        "\n"
	        "Talk to cpuhpd, the daemon that owns CPU hotplug and hands out reader\n"
	        "leases: while any lease is held, the set of online CPUs does not change.\n"
	        "\n"
	        "Commands:\n"
	        "  status                        CPU masks, leases, the writer's state\n"
	        "  leases [-o COLS] [-r] [-n]    who holds leases, and the hotplugs waiting\n"
	        "  cpus [-o COLS] [-r] [-n]      each CPU: topology (offline ones' as last\n"
	        "                                seen), states, hotplugs\n"
	        "  online [--timeout T] [--persist] LIST\n"
	        "                                bring the CPUs in LIST (e.g. 2-3,5) online\n"
	        "  offline [--timeout T] [--persist] LIST\n"
	        "                                take them offline (--persist: and keep them\n"
	        "                                so, in cpuhpd's plan)\n"
	        "  watch [--count N]             print hotplug events as they happen\n"
	        "  hold [--timeout T] [--who NAME] [--why TEXT] -- CMD [ARGS...]\n"
	        "                                run CMD while holding a lease\n"
	        "  freeze [--who NAME] [--why TEXT] -- CMD [ARGS...]\n"
	        "                                run CMD with hotplug frozen: online and\n"
	        "                                offline fail at once meanwhile\n"
	        "  states [-o COLS] [-r] [-n]    the hotplug states registered, in order\n"
	        "  state NAME [--priority N] [--deadline T] [--nocalls]\n"
	        "        [--teardown CMD] [--startup CMD]\n"
	        "                                a hotplug state whose callbacks run CMD\n"
	        "  smt [--timeout T] [--force] [--persist] on|off|forceoff\n"
	        "                                SMT control, as one hotplug\n"
	        "  plan                          cpuhpd's plan (cpuhpd.conf(5)): where each\n"
	        "                                setting came from, where the CPUs differ\n"
	        "  new-cpu [--timeout T] CPU     wait until cpuhpd dealt with a hot-added CPU\n"
	        "                                (for its udev rule)\n"
	        "  metrics                       cpuhpd's metrics, Prometheus text format\n"
	        "Run 'cpuhpctl COMMAND --help' for more on each.  Options may come before\n"
	        "or after the operands; a time T is 200ms, 5s, 1.5s, 2m, or a number of ms.\n"
	        "\n"
	        "Options:\n"
	        "  -s, --socket PATH  cpuhpd's socket (default: $%s, else %s)\n"
	        "  --sysfs-root PATH  the sysfs tree cpuhpd serves, read by cpuhpctl to say\n"
	        "                     what changed if cpuhpd dies in a hotplug (default:\n"
	        "                     $%s, else /sys)\n"
	        "  -J, --json         print JSON (every command but hold, freeze, state and\n"
	        "                     metrics; the schemas are in cpuhpctl(8)); -j too\n"
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
	        "  %d Ctrl-C while waiting: cancelled, nothing changed (it says so)\n"
	        "  hold: CMD's exit status, 128+N if a signal N killed it, 126/127 if it\n"
	        "        could not be run\n",
	        CPUHP_CLIENT_SOCKET_ENV, CPUHP_CLIENT_DEFAULT_SOCKET, CPUHPCTL_SYSFS_ROOT_ENV,
	        CPUHPCTL_EXIT_OK, CPUHPCTL_EXIT_FAILED, CPUHPCTL_EXIT_USAGE, CPUHPCTL_EXIT_PARTIAL,
	        CPUHPCTL_EXIT_UNREACHABLE, CPUHPCTL_EXIT_TIMEDOUT, CPUHPCTL_EXIT_CANCELLED);
}

/* The socket connect() will use, for messages. */
static const char *socket_path(const struct cpuhpctl *ctl)
{
	return ctl->socket ? ctl->socket : cpuhp_client_socket_path();
}

/* The group of the socket at @path, which a user kept out should join; NULL if unknown. */
static const char *socket_group(const char *path)
{
	struct stat st;
	struct group *g;

	return stat(path, &st) == 0 && (g = getgrgid(st.st_gid)) ? g->gr_name : NULL;
}

int cpuhpctl_connect(const struct cpuhpctl *ctl, struct cpuhp_client **out)
{
	const char *path = socket_path(ctl);
	int err = cpuhp_client_connect(path, out);
	char msg[512];

	if (err == 0)
		return 0;
	snprintf(msg, sizeof(msg), "cannot connect to cpuhpd at %s: %s", path, strerror(-err));
	if (ctl->json)
		cpuhpctl_json_error(err, msg);
	fprintf(stderr, "cpuhpctl: %s\n", cpuhpctl_safe(msg));
	switch (err) {
	case -ENOENT:
	case -ECONNREFUSED:
		fprintf(stderr,
		        "cpuhpctl: is cpuhpd running? Choose another socket with "
		        "--socket PATH or $%s.\n",
		        CPUHP_CLIENT_SOCKET_ENV);
		break;
	case -EACCES:
		if (socket_group(path))
			fprintf(stderr,
			        "cpuhpctl: the socket's permissions keep you out: run as root or "
			        "join its group '%s' (then log in again).\n",
			        socket_group(path));
		else
			fprintf(stderr, "cpuhpctl: the socket's permissions keep you out: run as "
			                "root or join the socket's group.\n");
		break;
	case -EPROTONOSUPPORT:
		fprintf(stderr, "cpuhpctl: cpuhpd speaks another protocol version; use the "
		                "cpuhpctl that came with it.\n");
		break;
	case -EUSERS:
		fprintf(stderr, "cpuhpctl: cpuhpd has too many connections; try again later.\n");
		break;
	case -EPERM:
		path = cpuhpctl_safe(path);
		fprintf(stderr,
		        "cpuhpctl: the process serving %s is neither root nor you, so it is not "
		        "trusted (see who owns it: ls -l %s); set $%s=UID to trust that uid.\n",
		        path, path, CPUHP_CLIENT_DAEMON_UID_ENV);
		break;
	}
	return CPUHPCTL_EXIT_UNREACHABLE;
}

int cpuhpctl_fail(const struct cpuhpctl *ctl, struct cpuhp_client *c, int err, const char *what)
{
	const char *msg = c ? cpuhp_client_last_message(c) : "";

	msg = msg[0] ? msg : strerror(-err);
	if (ctl->json)
		cpuhpctl_json_error(err, msg);
	/* The daemon's words quote clients' names: shown safe. */
	fprintf(stderr, "cpuhpctl: %s: %s\n", cpuhpctl_safe(what), cpuhpctl_safe(msg));
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

int cpuhpctl_usage_error(const struct cpuhpctl *ctl, const char *cmd, bool hint, const char *fmt,
                         ...)
{
	const char *sep = cmd ? " " : "";
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cmd = cmd ? cmd : "";
	if (ctl->json)
		cpuhpctl_json_error(-EINVAL, msg);
	/* The words may quote the command line: shown safe, as everything else. */
	fprintf(stderr, "cpuhpctl%s%s: %s\n", sep, cpuhpctl_safe(cmd), cpuhpctl_safe(msg));
	if (hint)
		fprintf(stderr, "Try 'cpuhpctl%s%s --help'.\n", sep, cpuhpctl_safe(cmd));
	return CPUHPCTL_EXIT_USAGE;
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

/*
 * Read the whole command line once for a --json before parsing it, so that
 * an error on the way (a bad option, a bad value) comes as the object a
 * script waits for even when --json follows it.
 */
static void scan_for_json(struct cpuhpctl *ctl, int argc, char **argv, const char *optstring,
                          const struct option *longopts)
{
	static char **scanned;
	int opt;

	if (argv == scanned)
		return;
	scanned = argv;
	while ((opt = getopt_long(argc, argv, optstring, longopts, NULL)) != -1)
		if (opt == 'J' || opt == 'j')
			ctl->json = true;
	optind = 0; /* glibc: start again; a permuted argv parses the same */
}

int cpuhpctl_getopt(struct cpuhpctl *ctl, int argc, char **argv, const char *optstring,
                    const struct option *longopts, const char *cmd)
{
	const char *arg;
	char msg[512];
	bool long_word;
	int opt;

	opterr = 0;
	scan_for_json(ctl, argc, argv, optstring, longopts);
	for (;;) {
		opt = getopt_long(argc, argv, optstring, longopts, NULL);
		if (opt != 'J' && opt != 'j')
			break;
		ctl->json = true;
	}
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
	if (opt == ':' && long_word)
		snprintf(msg, sizeof(msg), "option '%s' needs an argument", arg);
	else if (opt == ':')
		snprintf(msg, sizeof(msg), "option -%c needs an argument", optopt);
	else if (!optopt)
		snprintf(msg, sizeof(msg), "unrecognized option '%s'", arg);
	else if (long_word && takes_no_value(arg, longopts))
		snprintf(msg, sizeof(msg), "option '%.*s' takes no value",
		         (int)(strchr(arg, '=') - arg), arg);
	else
		snprintf(msg, sizeof(msg), "invalid option -- '%c'", optopt);
	cpuhpctl_usage_error(ctl, cmd, true, "%s", msg);
	return '?';
}

int cpuhpctl_parse_no_options(struct cpuhpctl *ctl, int argc, char **argv, void (*help)(FILE *))
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'J'}, {"help", no_argument, NULL, 'h'}, {0}};
	int opt;

	while ((opt = cpuhpctl_getopt(ctl, argc, argv, ":Jjh", opts, argv[0])) != -1) {
		if (opt == 'h')
			help(stdout);
		return opt == 'h' ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_USAGE;
	}
	if (optind < argc)
		return cpuhpctl_usage_error(ctl, argv[0], true, "unexpected argument '%s'",
		                            argv[optind]);
	return -1;
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
	    {"json", no_argument, NULL, 'J'},         {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},      {0},
	};
	static const struct {
		const char *name;
		int (*run)(struct cpuhpctl *ctl, int argc, char **argv);
	} commands[] = {
	    {"status", cpuhpctl_status},   {"leases", cpuhpctl_leases},
	    {"cpus", cpuhpctl_cpus},       {"states", cpuhpctl_states},
	    {"state", cpuhpctl_state},     {"online", cpuhpctl_online},
	    {"offline", cpuhpctl_offline}, {"smt", cpuhpctl_smt},
	    {"watch", cpuhpctl_watch},     {"hold", cpuhpctl_hold},
	    {"freeze", cpuhpctl_freeze},   {"metrics", cpuhpctl_metrics},
	    {"plan", cpuhpctl_plan},       {"new-cpu", cpuhpctl_new_cpu},
	};
	struct cpuhpctl ctl = {.sysfs_root = getenv(CPUHPCTL_SYSFS_ROOT_ENV)};
	const char *cmd;
	int opt;

	cpuhpctl_text_init();
	/* '+': options after the command belong to the command. */
	while ((opt = cpuhpctl_getopt(&ctl, argc, argv, "+:s:JjhV", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			ctl.socket = optarg;
			break;
		case 'r':
			ctl.sysfs_root = optarg;
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
	if (optind >= argc)
		return cpuhpctl_usage_error(
		    &ctl, NULL, true,
		    "which command? (status, leases, cpus, states, state, online, "
		    "offline, smt, watch, hold, freeze, metrics)");
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0; /* glibc: restart getopt for the command's options */

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].run(&ctl, argc, argv);
	if (!strcmp(cmd, "help")) {
		usage(stdout);
		return CPUHPCTL_EXIT_OK;
	}
	return cpuhpctl_usage_error(&ctl, NULL, true, "unknown command '%s'", cmd);
}
