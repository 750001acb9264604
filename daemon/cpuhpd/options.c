/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The command line of cpuhpd: --help, --version, and the options into struct cpuhpd_options. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cpuhp/socket.h>
#include <cpuhp/version.h>

#include "cpuhpd.h"
#include "base/auth.h"
#include "core/admit.h"
#include "core/conn.h"
#include "leases/delay.h"
#include "hotplug/hotplug.h"
#include "states/states.h"
#include "config.h"
#include "options.h"

/* The default once, shared with the clients and the socket unit; no client code linked. */
#define DEFAULT_SOCKET CPUHP_CLIENT_DEFAULT_SOCKET

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: cpuhpd [OPTION]...\n"
	    "Serve CPU-hotplug reader leases and apply CPU hotplug through sysfs.\n"
	    "\n"
	    "  --config FILE          read options from FILE first, one 'name = value' a\n"
	    "                         line (names as below, without the dashes; 'yes' or\n"
	    "                         'no' for those without a value); the command line\n"
	    "                         wins (default " CPUHPD_CONFIG_FILE ",\n"
	    "                         if it exists; a FILE given must exist)\n"
	    "  --socket PATH          listen on PATH (default " DEFAULT_SOCKET ");\n"
	    "                         ignored under systemd socket activation (LISTEN_FDS)\n"
	    "  --socket-group GROUP   the socket's group, when cpuhpd binds it (without\n"
	    "                         systemd; cpuhpd.socket's SocketGroup= otherwise):\n"
	    "                         its members may connect under --socket-mode 0660\n"
	    "  --socket-mode OCTAL    permissions of the socket (default 0660): who may\n"
	    "                         connect, hence take leases and read status\n"
	    "  --admin-group GROUP    members of GROUP may hotplug too (default: root only)\n"
	    "  --sysfs-root DIR       sysfs mount point (default /sys); a simulated tree needs\n"
	    "                         "
	    "DIR/devices/system/cpu/{possible,present,online,cpuN/online}\n"
	    "  --max-connections N    refuse connections beyond N with EUSERS (default %u)\n"
	    "  --reserved-connections N\n"
	    "                         the last N of those only for root and --admin-group\n"
	    "                         (default %u, at most an eighth of --max-connections)\n"
	    "  --max-connections-per-uid N\n"
	    "                         at most N connections of one uid but root (default %u)\n"
	    "  --max-buffered-bytes SIZE\n"
	    "                         bytes buffered for all clients: replies not yet taken\n"
	    "                         by their sockets, requests split across reads (default\n"
	    "                         %uM; the last eighth only for root and admins); a client\n"
	    "                         that would go over is closed.  SIZE: bytes, or with K,\n"
	    "                         M or G\n"
	    "  --max-buffered-bytes-per-uid SIZE\n"
	    "                         the same for one uid but root (default %uM)\n"
	    "  --client-timeout-ms MS close a connection whose request is still incomplete MS\n"
	    "                         after its first byte (default %u; 0: never); idle\n"
	    "                         connections, leases held or not, stay\n"
	    "  --runtime-dir DIR      where the lock file that keeps a second cpuhpd off the\n"
	    "                         same sysfs tree lives (default $RUNTIME_DIRECTORY, else\n"
	    "                         the socket's directory)\n"
	    "  --uevent-socket PATH   also accept injected uevents as datagrams on PATH\n"
	    "                         (for simulated trees; in the kernel uevent format)\n"
	    "  --no-netlink           do not listen to kernel uevents\n"
	    "  --fast-path MODE       fast leases in shared memory: auto (default: the best\n"
	    "                         this kernel offers), expedited (membarrier\n"
	    "                         GLOBAL_EXPEDITED), global (membarrier GLOBAL, ms per\n"
	    "                         hotplug), fence (clients fence), off (socket leases only)\n"
	    "  --max-lease-ms MS      revoke a lease held longer than MS ms, tell its holder\n"
	    "                         and log it; 0: no limit (default 0); no fast path\n"
	    "                         with a limit\n"
	    "  --max-delay-ms MS      the longest a delay lease holds a pending hotplug\n"
	    "                         after its notice (default %u; a longer delay asked\n"
	    "                         is cut to MS, and the reply says so); like logind's\n"
	    "                         InhibitDelayMaxSec\n"
	    "  --max-leases-per-uid N a uid neither root nor in --admin-group may hold or\n"
	    "                         wait for N leases at most, EDQUOT beyond; 0: no\n"
	    "                         limit (default 0); no fast path for such uids then\n"
	    "  --max-states-per-uid N a uid neither root nor in --admin-group may register N\n"
	    "                         hotplug states at most (each can veto or hold up\n"
	    "                         every hotplug), EDQUOT beyond; 0: none at all\n"
	    "                         (default 0: states are for root and --admin-group)\n"
	    "  --max-state-deadline-ms MS\n"
	    "                         the longest deadline per call such a uid's state may\n"
	    "                         ask (default %u; its default is this if lower)\n"
	    "  --metrics-file PATH    keep PATH up to date with cpuhpd's metrics in the\n"
	    "                         Prometheus text format (written whole, then renamed\n"
	    "                         into place: for node_exporter's textfile collector,\n"
	    "                         name it *.prom); what 'cpuhpctl metrics' prints\n"
	    "  --metrics-interval MS  rewrite --metrics-file every MS ms (default 10000; 0:\n"
	    "                         only at start, stop and after each hotplug)\n"
	    "  --fd-store-max N       keep the socket, every client connection, its fast-\n"
	    "                         lease memory and a state memfd in systemd's fd store\n"
	    "                         (at most N descriptors), so that a restart keeps every\n"
	    "                         lease (default: $FDSTORE, which systemd 254 and later\n"
	    "                         set from FileDescriptorStoreMax=; 0 there: no store)\n"
	    "  --restart-grace-ms MS  when the previous cpuhpd on this tree ended without\n"
	    "                         handing its clients over (a crash, no fd store), hold\n"
	    "                         every hotplug for MS ms so that its lease holders can\n"
	    "                         notice first (default %u; 0: none)\n"
	    "The plan (cpuhpd.conf(5); these win over the files' settings):\n"
	    "  --offline-cpus LIST    keep the CPUs of LIST offline (e.g. 2-3,6)\n"
	    "  --smt on|off           keep SMT control on or off\n"
	    "  --online-new-cpus[=yes|no]\n"
	    "                         bring CPUs that become present (hot-added) online\n"
	    "                         through cpuhpd's queue and hotplug states\n"
	    "  -v, --verbose          debug log lines\n"
	    "  -h, --help             this help\n"
	    "  -V, --version          print the version\n"
	    "\n"
	    "Limits per connection: %u leases, %u waiting requests, %u unsent replies;\n"
	    "at most %u CPUs per hotplug request.\n"
	    "SIGTERM or SIGINT stops it cleanly (exit 0).  More in daemon/README.md.\n",
	    CPUHPD_ADMIT_MAX_CONNECTIONS, CPUHPD_ADMIT_RESERVED_CONNECTIONS,
	    CPUHPD_ADMIT_MAX_CONNECTIONS_PER_UID, CPUHPD_ADMIT_MAX_BUFFERED >> 20,
	    CPUHPD_ADMIT_MAX_BUFFERED_PER_UID >> 20, CPUHPD_ADMIT_CLIENT_TIMEOUT_MS,
	    CPUHPD_MAX_DELAY_MS, CPUHPD_STATES_USER_DEADLINE_MS, CPUHPD_RESTART_GRACE_MS,
	    CPUHPD_CONN_MAX_LEASES, CPUHPD_CONN_MAX_PENDING, CPUHPD_CONN_MAX_QUEUED,
	    CPUHPD_HOTPLUG_MAX_CPUS);
}

static int parse_uint(const char *opt, const char *s, int base, unsigned long max,
                      unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, base);
	if (!*s || *end || errno || *out > max || *s == '-') {
		fprintf(stderr, "cpuhpd: %s: invalid value '%s'; try --help\n", opt, s);
		return -EINVAL;
	}
	return 0;
}

/* A group by name or number; a missing one is told how to make (sysusers). */
static int group(const char *opt, const char *name, gid_t *out)
{
	if (cpuhpd_auth_group(name, out) == 0)
		return 0;
	fprintf(stderr,
	        "cpuhpd: %s: no group '%s'. Create the groups with 'systemd-sysusers "
	        "cpuhpd.conf' (the sysusers.d file installed with cpuhpd makes cpuhp and "
	        "cpuhp-admin), or 'groupadd --system %s'\n",
	        opt, name, name);
	return -ENOENT;
}

/* A number of connections: 1 to a million (0 would refuse every client). */
static int parse_count(const char *opt, const char *s, unsigned *out)
{
	unsigned long v;

	if (parse_uint(opt, s, 10, 1000000, &v))
		return -EINVAL;
	if (!v) {
		fprintf(stderr, "cpuhpd: %s: 0 would refuse every client; give 1 or more\n", opt);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

/* A byte count: digits, then optionally K, M or G (powers of 1024); at least one frame. */
static int parse_size(const char *opt, const char *s, size_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end == 'K' || *end == 'k')
		shift = 10, end++;
	else if (*end == 'M' || *end == 'm')
		shift = 20, end++;
	else if (*end == 'G' || *end == 'g')
		shift = 30, end++;
	if (!*s || *s == '-' || *end || errno || v > (SIZE_MAX >> 1) >> shift) {
		fprintf(stderr,
		        "cpuhpd: %s: invalid size '%s' (bytes, or with K, M or G); try --help\n",
		        opt, s);
		return -EINVAL;
	}
	v <<= shift;
	if (v < CPUHP__FRAME_HDR + CPUHP__FRAME_MAX) {
		fprintf(stderr,
		        "cpuhpd: %s: %s is less than one request of the largest size (%u bytes)\n",
		        opt, s, CPUHP__FRAME_HDR + CPUHP__FRAME_MAX);
		return -EINVAL;
	}
	*out = (size_t)v;
	return 0;
}

int cpuhpd_options_parse(int argc, char **argv, struct cpuhpd_options *o)
{
	enum {
		O_SOCKET = 256,
		O_MODE,
		O_SOCKGROUP,
		O_GROUP,
		O_ROOT,
		O_MAXCONN,
		O_RUNDIR,
		O_UEVENT,
		O_NONETLINK,
		O_FAST,
		O_CONFIG,
		O_RESERVED,
		O_PERUID,
		O_BUFFERED,
		O_BUFFERED_UID,
		O_TIMEOUT,
		O_MAXLEASEMS,
		O_MAXPERUID,
		O_MAXSTATES,
		O_STATEDEADLINE,
		O_METRICS,
		O_METRICS_INTERVAL,
		O_FDSTORE,
		O_GRACE,
		O_PLAN_OFFLINE,
		O_PLAN_SMT,
		O_PLAN_NEW,
		O_MAXDELAY,
	};
	static const struct option longopts[] = {
	    {"socket", required_argument, NULL, O_SOCKET},
	    {"socket-mode", required_argument, NULL, O_MODE},
	    {"socket-group", required_argument, NULL, O_SOCKGROUP},
	    {"admin-group", required_argument, NULL, O_GROUP},
	    {"sysfs-root", required_argument, NULL, O_ROOT},
	    {"max-connections", required_argument, NULL, O_MAXCONN},
	    {"reserved-connections", required_argument, NULL, O_RESERVED},
	    {"max-connections-per-uid", required_argument, NULL, O_PERUID},
	    {"max-buffered-bytes", required_argument, NULL, O_BUFFERED},
	    {"max-buffered-bytes-per-uid", required_argument, NULL, O_BUFFERED_UID},
	    {"client-timeout-ms", required_argument, NULL, O_TIMEOUT},
	    {"runtime-dir", required_argument, NULL, O_RUNDIR},
	    {"uevent-socket", required_argument, NULL, O_UEVENT},
	    {"no-netlink", no_argument, NULL, O_NONETLINK},
	    {"fast-path", required_argument, NULL, O_FAST},
	    {"config", required_argument, NULL, O_CONFIG},
	    {"max-lease-ms", required_argument, NULL, O_MAXLEASEMS},
	    {"max-leases-per-uid", required_argument, NULL, O_MAXPERUID},
	    {"max-states-per-uid", required_argument, NULL, O_MAXSTATES},
	    {"max-state-deadline-ms", required_argument, NULL, O_STATEDEADLINE},
	    {"max-delay-ms", required_argument, NULL, O_MAXDELAY},
	    {"metrics-file", required_argument, NULL, O_METRICS},
	    {"metrics-interval", required_argument, NULL, O_METRICS_INTERVAL},
	    {"fd-store-max", required_argument, NULL, O_FDSTORE},
	    {"restart-grace-ms", required_argument, NULL, O_GRACE},
	    {"offline-cpus", required_argument, NULL, O_PLAN_OFFLINE},
	    {"smt", required_argument, NULL, O_PLAN_SMT},
	    {"online-new-cpus", optional_argument, NULL, O_PLAN_NEW},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	const char *config = NULL;
	bool only_asks = false; /* --help or --version: no config file is read */
	long reserved = -1;     /* not given: the default, within an eighth */
	unsigned long v;
	int c;

	/*
	 * A first pass finds --config only (the rest, errors included, is the
	 * second pass's); the file's options then go in front of the command
	 * line's, so that the command line overrides them.
	 */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vhV", longopts, NULL)) != -1) {
		if (c == O_CONFIG)
			config = optarg;
		only_asks |= c == 'h' || c == 'V';
	}
	opterr = 1;
	optind = 0; /* glibc: a full restart */
	/*
	 * Without --config, the default file if there is one: a deleted
	 * /etc/cpuhpd.conf means the defaults, not a service that cannot start.
	 * A file named on the command line must be there.
	 */
	if (!only_asks && cpuhpd_config_argv(config ? config : CPUHPD_CONFIG_FILE, !config,
	                                     longopts, &argc, &argv))
		return -1;
	o->config_file = config ? config : CPUHPD_CONFIG_FILE;
	o->config_missing_ok = !config;

	o->socket_path = DEFAULT_SOCKET;
	o->sysfs_root = "/sys";
	o->socket_mode = 0660;
	o->max_connections = CPUHPD_ADMIT_MAX_CONNECTIONS;
	o->max_connections_per_uid = CPUHPD_ADMIT_MAX_CONNECTIONS_PER_UID;
	o->max_buffered = CPUHPD_ADMIT_MAX_BUFFERED;
	o->max_buffered_per_uid = CPUHPD_ADMIT_MAX_BUFFERED_PER_UID;
	o->client_timeout_ms = CPUHPD_ADMIT_CLIENT_TIMEOUT_MS;
	o->fast_path = CPUHPD_FAST_AUTO;
	o->metrics_interval_ms = 10000;
	o->restart_grace_ms = CPUHPD_RESTART_GRACE_MS;
	o->max_state_deadline_ms = CPUHPD_STATES_USER_DEADLINE_MS;
	o->max_delay_ms = CPUHPD_MAX_DELAY_MS;
	while ((c = getopt_long(argc, argv, "vhV", longopts, NULL)) != -1) {
		switch (c) {
		case O_SOCKET:
			o->socket_path = optarg;
			break;
		case O_MODE:
			if (parse_uint("--socket-mode", optarg, 8, 0777, &v))
				return -1;
			o->socket_mode = (mode_t)v;
			break;
		case O_SOCKGROUP:
			o->socket_group = optarg;
			if (group("--socket-group", optarg, &o->socket_gid))
				return -1;
			break;
		case O_GROUP:
			o->admin_group = optarg;
			if (group("--admin-group", optarg, &o->admin_gid))
				return -1;
			break;
		case O_ROOT:
			o->sysfs_root = optarg;
			break;
		case O_MAXCONN:
			if (parse_count("--max-connections", optarg, &o->max_connections))
				return -1;
			break;
		case O_RESERVED:
			if (parse_uint("--reserved-connections", optarg, 10, 1000000, &v))
				return -1;
			reserved = (long)v;
			break;
		case O_PERUID:
			if (parse_count("--max-connections-per-uid", optarg,
			                &o->max_connections_per_uid))
				return -1;
			break;
		case O_BUFFERED:
			if (parse_size("--max-buffered-bytes", optarg, &o->max_buffered))
				return -1;
			break;
		case O_BUFFERED_UID:
			if (parse_size("--max-buffered-bytes-per-uid", optarg,
			               &o->max_buffered_per_uid))
				return -1;
			break;
		case O_TIMEOUT:
			if (parse_uint("--client-timeout-ms", optarg, 10, 86400000, &v))
				return -1;
			o->client_timeout_ms = (unsigned)v;
			break;
		case O_RUNDIR:
			o->runtime_dir = optarg;
			break;
		case O_UEVENT:
			o->uevent_socket = optarg;
			break;
		case O_NONETLINK:
			o->no_netlink = true;
			break;
		case O_FAST:
			if (cpuhpd_fast_mode_parse(optarg, &o->fast_path)) {
				fprintf(stderr,
				        "cpuhpd: --fast-path: '%s' is none of auto, expedited, "
				        "global, fence, off\n",
				        optarg);
				return -1;
			}
			break;
		case O_MAXLEASEMS:
			if (parse_uint("--max-lease-ms", optarg, 10, 0xffffffffUL, &v))
				return -1;
			o->max_lease_ms = (unsigned)v;
			break;
		case O_MAXPERUID:
			if (parse_uint("--max-leases-per-uid", optarg, 10, 1000000, &v))
				return -1;
			o->max_leases_per_uid = (unsigned)v;
			break;
		case O_MAXSTATES:
			if (parse_uint("--max-states-per-uid", optarg, 10, CPUHPD_STATES_MAX, &v))
				return -1;
			o->max_states_per_uid = (unsigned)v;
			break;
		case O_STATEDEADLINE:
			if (parse_uint("--max-state-deadline-ms", optarg, 10,
			               CPUHPD_STATES_MAX_DEADLINE_MS, &v))
				return -1;
			if (!v) {
				fprintf(stderr, "cpuhpd: --max-state-deadline-ms: 1 to %u, not 0\n",
				        CPUHPD_STATES_MAX_DEADLINE_MS);
				return -1;
			}
			o->max_state_deadline_ms = (unsigned)v;
			break;
		case O_MAXDELAY:
			if (parse_uint("--max-delay-ms", optarg, 10, CPUHPD_MAX_DELAY_LIMIT_MS, &v))
				return -1;
			if (!v) {
				fprintf(stderr, "cpuhpd: --max-delay-ms: at least 1 ms\n");
				return -1;
			}
			o->max_delay_ms = (unsigned)v;
			break;
		case O_CONFIG:
			break; /* read above */
		case O_METRICS:
			if (!*optarg) {
				fprintf(stderr, "cpuhpd: --metrics-file: give a path\n");
				return -1;
			}
			o->metrics_file = optarg;
			break;
		case O_METRICS_INTERVAL:
			if (parse_uint("--metrics-interval", optarg, 10, 86400000, &v))
				return -1;
			o->metrics_interval_ms = (unsigned)v;
			break;
		case O_FDSTORE:
			if (parse_uint("--fd-store-max", optarg, 10, 1000000, &v))
				return -1;
			o->fd_store_max = (unsigned)v;
			break;
		case O_GRACE:
			if (parse_uint("--restart-grace-ms", optarg, 10, 3600000, &v))
				return -1;
			o->restart_grace_ms = (unsigned)v;
			break;
		case O_PLAN_OFFLINE:
		case O_PLAN_SMT:
		case O_PLAN_NEW: {
			enum cpuhpd_plan_key k = c == O_PLAN_OFFLINE ? CPUHPD_PLAN_OFFLINE
			                         : c == O_PLAN_SMT   ? CPUHPD_PLAN_SMT
			                                             : CPUHPD_PLAN_NEW;
			const char *val = optarg ? optarg : "yes";
			char why[256];

			if (!cpuhpd_plan_value_ok(k, val, why, sizeof(why))) {
				fprintf(stderr, "cpuhpd: --%s; try --help\n", why);
				return -1;
			}
			o->plan.value[k] = val;
			break;
		}
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 1;
		case 'V':
			printf("cpuhpd %s\n", CPUHP_VERSION_STRING);
			return 1;
		default:
			fprintf(stderr, "Try 'cpuhpd --help'.\n");
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "cpuhpd: unexpected argument '%s'; try --help\n", argv[optind]);
		return -1;
	}
	if (reserved < 0) {
		o->reserved_connections = o->max_connections / 8;
		if (o->reserved_connections > CPUHPD_ADMIT_RESERVED_CONNECTIONS)
			o->reserved_connections = CPUHPD_ADMIT_RESERVED_CONNECTIONS;
	} else if ((unsigned long)reserved >= o->max_connections) {
		fprintf(stderr,
		        "cpuhpd: --reserved-connections %ld leaves no connection for other users "
		        "under --max-connections %u: make it smaller\n",
		        reserved, o->max_connections);
		return -1;
	} else {
		o->reserved_connections = (unsigned)reserved;
	}
	return 0;
}
