/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cpuhpctl watch: print the daemon's events as they happen, one line each. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static void watch_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl watch [--count N] [--json]\n"
	           "\n"
	           "Print one line per event: a hotplug pending (the next to run, waiting\n"
	           "for leases), cancelled (it ended without running), started or finished,\n"
	           "the online set changed (\"external\" when done behind cpuhpd's back, e.g.\n"
	           "by chcpu), the present set changed (a CPU hot-added or removed).\n"
	           "The first line says the subscription is active.\n"
	           "\n"
	           "  -c, --count N  exit 0 after N events (default: run until killed)\n"
	           "  -J, --json     one JSON object per line, flushed per event (schema in\n"
	           "                 cpuhpctl(8)); the first is {\"event\":\"watching\"}\n");
}

/* "present changed: 0-4 (added 4; online 0-3)". */
static void print_present(const struct cpuhp_client_event *ev)
{
	char *present = cpuhpctl_format(&ev->present_cpus), *added = cpuhpctl_format(&ev->added);
	char *removed = cpuhpctl_format(&ev->removed), *online = cpuhpctl_format(&ev->online_cpus);

	if (present && added && removed && online)
		printf("present changed: %s (%s%s%s%s%s%sonline %s)\n",
		       present[0] ? present : "(none)", added[0] ? "added " : "", added,
		       added[0] ? "; " : "", removed[0] ? "removed " : "",
		       removed[0] ? removed : "", removed[0] ? "; " : "",
		       online[0] ? online : "(none)");
	else
		printf("event (out of memory formatting it)\n");
	free(present);
	free(added);
	free(removed);
	free(online);
}

static void print_event(const struct cpuhp_client_event *ev)
{
	char *cpus = cpuhpctl_format(&ev->cpus);
	char *other = cpuhpctl_format(
	    ev->type == CPUHP_CLIENT_EVENT_ONLINE_CHANGED ? &ev->online_cpus : &ev->failed);
	const char *dir = ev->online ? "online" : "offline";

	if (!cpus || !other) {
		printf("event (out of memory formatting it)\n");
	} else if (ev->type == CPUHP_CLIENT_EVENT_HOTPLUG_STARTED) {
		printf("hotplug started: %s %s\n", dir, cpus);
	} else if (ev->type == CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED) {
		if (ev->ok)
			printf("hotplug finished: %s %s: ok\n", dir, cpus);
		else
			printf("hotplug finished: %s %s: failed for %s\n", dir, cpus,
			       other[0] ? other : "(none)");
	} else if (ev->type == CPUHP_CLIENT_EVENT_ONLINE_CHANGED) {
		printf("online changed: %s%s\n", other[0] ? other : "(none)",
		       ev->external ? " (external)" : "");
	} else if (ev->type == CPUHP_CLIENT_EVENT_PRESENT_CHANGED) {
		print_present(ev);
	} else if (ev->type == CPUHP_CLIENT_EVENT_LOST) {
		printf("events lost: %u (run 'cpuhpctl status' for the current state)\n", ev->lost);
	} else if (ev->type == CPUHP_CLIENT_EVENT_HOTPLUG_PENDING) {
		char t[CPUHPCTL_DURATION_MAX], g[CPUHPCTL_DURATION_MAX];

		printf("hotplug pending: #%llu %s%s %s, gives up in %s%s%s\n",
		       (unsigned long long)ev->hotplug_id, ev->smt[0] ? "smt " : "",
		       ev->smt[0] ? cpuhpctl_safe(ev->smt) : dir, ev->smt[0] ? "" : cpus,
		       cpuhpctl_format_duration(t, ev->timeout_ms),
		       ev->force ? ", forced: leases still held are revoked in " : "",
		       ev->force ? cpuhpctl_format_duration(g, ev->force_grace_ms) : "");
	} else if (ev->type == CPUHP_CLIENT_EVENT_HOTPLUG_CANCELLED) {
		printf("hotplug cancelled: #%llu %s%s %s: %s\n", (unsigned long long)ev->hotplug_id,
		       ev->smt[0] ? "smt " : "", ev->smt[0] ? cpuhpctl_safe(ev->smt) : dir,
		       ev->smt[0] ? "" : cpus, cpuhpctl_safe(ev->message));
	}
	free(cpus);
	free(other);
}

static void print_event_json(const struct cpuhp_client_event *ev)
{
	switch (ev->type) {
	case CPUHP_CLIENT_EVENT_HOTPLUG_STARTED:
	case CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED:
		printf("{\"event\":\"%s\",\"action\":\"%s\",\"cpus\":",
		       ev->type == CPUHP_CLIENT_EVENT_HOTPLUG_STARTED ? "hotplug_started"
		                                                      : "hotplug_finished",
		       ev->online ? "online" : "offline");
		cpuhpctl_json_cpus(stdout, &ev->cpus);
		if (ev->type == CPUHP_CLIENT_EVENT_HOTPLUG_FINISHED) {
			printf(",\"ok\":%s,\"failed\":", ev->ok ? "true" : "false");
			cpuhpctl_json_cpus(stdout, &ev->failed);
		}
		printf("}\n");
		break;
	case CPUHP_CLIENT_EVENT_ONLINE_CHANGED:
		printf("{\"event\":\"online_changed\",\"online\":");
		cpuhpctl_json_cpus(stdout, &ev->online_cpus);
		printf(",\"external\":%s}\n", ev->external ? "true" : "false");
		break;
	case CPUHP_CLIENT_EVENT_PRESENT_CHANGED:
		printf("{\"event\":\"present_changed\",\"present\":");
		cpuhpctl_json_cpus(stdout, &ev->present_cpus);
		printf(",\"added\":");
		cpuhpctl_json_cpus(stdout, &ev->added);
		printf(",\"removed\":");
		cpuhpctl_json_cpus(stdout, &ev->removed);
		printf(",\"online\":");
		cpuhpctl_json_cpus(stdout, &ev->online_cpus);
		printf("}\n");
		break;
	case CPUHP_CLIENT_EVENT_LOST:
		printf("{\"event\":\"lost\",\"lost\":%u}\n", ev->lost);
		break;
	case CPUHP_CLIENT_EVENT_HOTPLUG_PENDING:
	case CPUHP_CLIENT_EVENT_HOTPLUG_CANCELLED:
		cpuhpctl_json_notice(stdout, ev);
		break;
	case CPUHP_CLIENT_EVENT_LEASE_REVOKED:
	case CPUHP_CLIENT_EVENT_LEASE_BYPASSED:
	case CPUHP_CLIENT_EVENT_LEASES_LOST:
		break; /* notices to lease holders: watch holds none */
	}
	fflush(stdout);
}

/* --count's N.  Return: 0, or the exit code after a usage error. */
static int parse_count(const struct cpuhpctl *ctl, const char *arg, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || *out == 0)
		return cpuhpctl_usage_error(ctl, "watch", true,
		                            "--count wants a positive number, not '%s'", arg);
	return 0;
}

int cpuhpctl_watch(struct cpuhpctl *ctl, int argc, char **argv)
{
	/* -n, this command's letter for --count before -n meant --noheadings, still works. */
	static const struct option opts[] = {
	    {"count", required_argument, NULL, 'c'},
	    {"json", no_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	struct cpuhp_client_event *ev;
	struct cpuhp_client *c;
	unsigned long count = 0, seen = 0;
	int opt, ret, err;

	while ((opt = cpuhpctl_getopt(ctl, argc, argv, ":c:n:Jjh", opts, "watch")) != -1) {
		if ((opt == 'c' || opt == 'n') && !(ret = parse_count(ctl, optarg, &count)))
			continue;
		if (opt == 'h')
			watch_usage(stdout);
		return opt == 'h' ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_USAGE;
	}
	if (optind < argc)
		return cpuhpctl_usage_error(ctl, "watch", true, "unexpected argument '%s'",
		                            argv[optind]);
	ev = malloc(sizeof(*ev));
	if (!ev) {
		fprintf(stderr, "cpuhpctl: out of memory\n");
		return CPUHPCTL_EXIT_FAILED;
	}
	ret = cpuhpctl_connect(ctl, &c);
	if (ret) {
		free(ev);
		return ret;
	}
	/* Line by line, so a pipe reader sees each event when it happens. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	err = cpuhp_client_watch(c);
	if (err < 0) {
		ret = cpuhpctl_fail(ctl, c, err, "watch");
		goto out;
	}
	printf(ctl->json ? "{\"event\":\"watching\"}\n" : "watching cpuhpd events\n");
	fflush(stdout);
	while (!count || seen < count) {
		err = cpuhp_client_next_event(c, -1, ev);
		if (err < 0) {
			ret = cpuhpctl_fail(ctl, c, err, "watch");
			goto out;
		}
		if (ctl->json)
			print_event_json(ev);
		else
			print_event(ev);
		seen++;
	}
	ret = CPUHPCTL_EXIT_OK;
out:
	cpuhp_client_close(c);
	free(ev);
	return ret;
}
