/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --json output: the few value writers every command's JSON needs.  One
 * object per line (watch prints one per event), so `json.loads` of each
 * line works; the schema of each command is in cpuhpctl(8).  Strings go
 * through proto/text.c's JSON encoder: whatever bytes a client sent, the
 * output is valid UTF-8 and valid JSON, with no raw control character.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "text.h"

char *cpuhpctl_json_quote(const char *s)
{
	size_t len, n;
	char *out;

	s = s ? s : "";
	len = strlen(s);
	n = cpuhp__text_json(NULL, 0, s, len);
	out = malloc(n + 3);
	if (!out)
		return NULL;
	out[0] = '"';
	cpuhp__text_json(out + 1, n + 1, s, len);
	out[n + 1] = '"';
	out[n + 2] = '\0';
	return out;
}

void cpuhpctl_json_string(FILE *f, const char *s)
{
	char *q = cpuhpctl_json_quote(s);

	fputs(q ? q : "\"(out of memory)\"", f);
	free(q);
}

void cpuhpctl_json_cpus(FILE *f, const struct cpuhp_cpuset *set)
{
	const char *sep = "";

	fputc('[', f);
	for (int cpu = cpuhp_cpuset_next(set, -1); cpu >= 0; cpu = cpuhp_cpuset_next(set, cpu)) {
		fprintf(f, "%s%d", sep, cpu);
		sep = ",";
	}
	fputc(']', f);
}

void cpuhpctl_json_errno(FILE *f, int err)
{
	const char *name = err ? strerrorname_np(err < 0 ? -err : err) : NULL;

	if (!err)
		fputs("null", f);
	else if (name)
		cpuhpctl_json_string(f, name);
	else
		fprintf(f, "\"E%d\"", err < 0 ? -err : err);
}

const char *cpuhpctl_writer_name(enum cpuhp_client_writer_state w)
{
	switch (w) {
	case CPUHP_CLIENT_WRITER_WAITING:
		return "waiting";
	case CPUHP_CLIENT_WRITER_RUNNING:
		return "running";
	default:
		return "idle";
	}
}

void cpuhpctl_json_error(int err, const char *message)
{
	printf("{\"error\":");
	cpuhpctl_json_errno(stdout, err);
	printf(",\"message\":");
	cpuhpctl_json_string(stdout, message);
	printf("}\n");
	fflush(stdout);
}

void cpuhpctl_json_action(FILE *f, bool online, const char *smt)
{
	fprintf(f, "\"action\":\"%s\"", smt && smt[0] ? "smt" : online ? "online" : "offline");
	if (smt && smt[0]) {
		fprintf(f, ",\"control\":");
		cpuhpctl_json_string(f, smt);
	}
}

void cpuhpctl_json_notice(FILE *f, const struct cpuhp_client_event *ev)
{
	bool pending = ev->type == CPUHP_CLIENT_EVENT_HOTPLUG_PENDING;

	fprintf(f, "{\"event\":\"%s\",\"seq\":%llu,",
	        pending ? "hotplug_pending" : "hotplug_cancelled",
	        (unsigned long long)ev->hotplug_id);
	cpuhpctl_json_action(f, ev->online, ev->smt);
	fprintf(f, ",\"cpus\":");
	cpuhpctl_json_cpus(f, &ev->cpus);
	if (pending) {
		fprintf(f, ",\"timeout_ms\":%u,\"force\":%s,\"force_grace_ms\":%u}\n",
		        ev->timeout_ms, ev->force ? "true" : "false", ev->force_grace_ms);
		return;
	}
	fprintf(f, ",\"error\":");
	cpuhpctl_json_errno(f, ev->error);
	fprintf(f, ",\"message\":");
	cpuhpctl_json_string(f, ev->message);
	fprintf(f, "}\n");
}
