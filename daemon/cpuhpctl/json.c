/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --json output: the few value writers every command's JSON needs.  One
 * object per line (watch prints one per event), so `json.loads` of each
 * line works; the schema of each command is in cpuhpctl(8).
 */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

void cpuhpctl_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			/* Other control bytes escaped; bytes >= 0x80 pass (the text is UTF-8 or
			 * opaque). */
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
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

int cpuhpctl_json_fail(struct cpuhp_client *c, int err, const char *what)
{
	const char *msg = c ? cpuhp_client_last_message(c) : "";

	printf("{\"error\":");
	cpuhpctl_json_errno(stdout, err);
	printf(",\"message\":");
	cpuhpctl_json_string(stdout, msg[0] ? msg : strerror(-err));
	printf("}\n");
	fflush(stdout);
	/* The same exit code, and the same words for a human on stderr. */
	return cpuhpctl_fail(c, err, what);
}
