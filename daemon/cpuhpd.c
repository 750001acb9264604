/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd: the CPU hotplug daemon.  It owns the writer side of the hotplug
 * lock for every process on the machine: clients take reader leases over a
 * Unix socket, and the daemon takes CPUs online or offline through sysfs only
 * while no lease is held.  This file is main: options, start, run, exit.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <cpuhp/version.h>

#include "cpuhpd.h"
#include "cpuhpd_auth.h"
#include "cpuhpd_conn.h"
#include "cpuhpd_log.h"
#include "cpuhpd_notify.h"

#define DEFAULT_SOCKET "/run/cpuhpd/cpuhpd.sock"

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "Usage: cpuhpd [OPTION]...\n"
	    "Serve CPU-hotplug reader leases and apply CPU hotplug through sysfs.\n"
	    "\n"
	    "  --socket PATH          listen on PATH (default " DEFAULT_SOCKET ");\n"
	    "                         ignored under systemd socket activation (LISTEN_FDS)\n"
	    "  --socket-mode OCTAL    permissions of the socket (default 0660): who may\n"
	    "                         connect, hence take leases and read status\n"
	    "  --admin-group GROUP    members of GROUP may hotplug too (default: root only)\n"
	    "  --sysfs-root DIR       sysfs mount point (default /sys); a simulated tree needs\n"
	    "                         "
	    "DIR/devices/system/cpu/{possible,present,online,cpuN/online}\n"
	    "  --max-connections N    refuse connections beyond N with EUSERS (default 4096)\n"
	    "  --uevent-socket PATH   also accept injected uevents as datagrams on PATH\n"
	    "                         (for simulated trees; kernel format, see README)\n"
	    "  --no-netlink           do not listen to kernel uevents\n"
	    "  -v, --verbose          debug log lines\n"
	    "  -h, --help             this help\n"
	    "  -V, --version          print the version\n"
	    "\n"
	    "Limits per connection: %u leases, %u waiting requests, %u unsent replies.\n"
	    "SIGTERM or SIGINT stops it cleanly (exit 0).\n",
	    CPUHPD_CONN_MAX_LEASES, CPUHPD_CONN_MAX_PENDING, CPUHPD_CONN_MAX_QUEUED);
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

/* Return: 0 to run, 1 for a clean exit (--help), -1 for a usage error. */
static int parse_options(int argc, char **argv, struct cpuhpd_options *o)
{
	enum { O_SOCKET = 256, O_MODE, O_GROUP, O_ROOT, O_MAXCONN, O_UEVENT, O_NONETLINK };
	static const struct option longopts[] = {
	    {"socket", required_argument, NULL, O_SOCKET},
	    {"socket-mode", required_argument, NULL, O_MODE},
	    {"admin-group", required_argument, NULL, O_GROUP},
	    {"sysfs-root", required_argument, NULL, O_ROOT},
	    {"max-connections", required_argument, NULL, O_MAXCONN},
	    {"uevent-socket", required_argument, NULL, O_UEVENT},
	    {"no-netlink", no_argument, NULL, O_NONETLINK},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	unsigned long v;
	int c;

	o->socket_path = DEFAULT_SOCKET;
	o->sysfs_root = "/sys";
	o->socket_mode = 0660;
	o->max_connections = 4096;
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
		case O_GROUP:
			o->admin_group = optarg;
			if (cpuhpd_auth_group(optarg, &o->admin_gid)) {
				fprintf(stderr, "cpuhpd: --admin-group: no group '%s'\n", optarg);
				return -1;
			}
			break;
		case O_ROOT:
			o->sysfs_root = optarg;
			break;
		case O_MAXCONN:
			if (parse_uint("--max-connections", optarg, 10, 1000000, &v) || !v)
				return -1;
			o->max_connections = (unsigned)v;
			break;
		case O_UEVENT:
			o->uevent_socket = optarg;
			break;
		case O_NONETLINK:
			o->no_netlink = true;
			break;
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
	return 0;
}

/* Every client holds a socket: 1,000 clients need more than the usual soft limit of 1024. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			cpuhpd_warn("cannot raise the open-files limit: %m");
	}
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct cpuhpd *d = s->data;

	cpuhpd_info("%s received", signum == SIGTERM ? "SIGTERM" : "SIGINT");
	cpuhpd_stop(d);
}

static int start(struct cpuhpd *d)
{
	const char *which = NULL;
	char *online;
	int err;

	err = cpuhpd_cpus_read(d->opt.sysfs_root, &d->view, &which);
	if (err) {
		cpuhpd_err("cannot read %s/devices/system/cpu/%s: %s; is --sysfs-root right?",
		           d->opt.sysfs_root, which, strerror(-err));
		return err;
	}
	cpuhpd_list_init(&d->conns);
	cpuhpd_list_init(&d->watch.list);
	if ((err = cpuhpd_lease_init(d)) || (err = cpuhpd_hotplug_init(d)))
		return err;
	err = cpuhpd_worker_start(d);
	if (err) {
		cpuhpd_err("cannot start the worker thread: %s", uv_strerror(err));
		return err;
	}
	if ((err = cpuhpd_server_start(d)) || (err = cpuhpd_uevent_start(d)))
		return err;
	uv_signal_init(d->loop, &d->sigterm);
	uv_signal_init(d->loop, &d->sigint);
	d->sigterm.data = d->sigint.data = d;
	uv_signal_start(&d->sigterm, on_signal, SIGTERM);
	uv_signal_start(&d->sigint, on_signal, SIGINT);
	online = cpuhpd_cpus_to_str(&d->view.online);
	cpuhpd_info("cpuhpd %s listening on %s%s (mode %04o), sysfs %s, online CPUs %s",
	            CPUHP_VERSION_STRING, d->opt.socket_path,
	            d->server.activated ? " (socket activation)" : "", (unsigned)d->opt.socket_mode,
	            d->opt.sysfs_root, online ? online : "?");
	free(online);
	return 0;
}

int main(int argc, char **argv)
{
	static struct cpuhpd d;
	int r;

	r = parse_options(argc, argv, &d.opt);
	if (r)
		return r > 0 ? 0 : 2;
	cpuhpd_log_set_verbose(d.opt.verbose);
	/* A client that vanishes mid-reply must cost an EPIPE, not the daemon. */
	signal(SIGPIPE, SIG_IGN);
	raise_nofile();
	d.loop = uv_default_loop();
	if (start(&d)) {
		/* Nothing has been served yet: exit without an orderly stop. */
		if (d.server.open && !d.server.activated)
			cpuhpd_server_stop(&d);
		cpuhpd_worker_stop(&d);
		return 1;
	}
	cpuhpd_notify("READY=1");
	uv_run(d.loop, UV_RUN_DEFAULT);
	uv_loop_close(d.loop);
	cpuhpd_info("stopped");
	return 0;
}
