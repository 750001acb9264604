/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seccomp-exec LIST PROGRAM [ARGS...]: run PROGRAM under a seccomp filter
 * that allows the system calls named in the file LIST (one a line) and
 * kills the process (SIGSYS) on any other, and on any call of another
 * architecture: what systemd builds from SystemCallFilter= and
 * SystemCallArchitectures=native, for tests/install/test_hardening.py,
 * which writes LIST from cpuhpd.service.  Names this architecture does
 * not have are skipped, as systemd does.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int allow_from(scmp_filter_ctx ctx, const char *path)
{
	char line[128];
	FILE *f = fopen(path, "re");
	int n = 0;

	if (!f) {
		fprintf(stderr, "seccomp-exec: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		int nr, err;

		line[strcspn(line, " \t\r\n")] = '\0';
		if (!line[0])
			continue;
		nr = seccomp_syscall_resolve_name(line);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a call of this architecture */
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
		if (err) {
			fprintf(stderr, "seccomp-exec: cannot allow %s: %s\n", line,
			        strerror(-err));
			fclose(f);
			return -1;
		}
		n++;
	}
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	scmp_filter_ctx ctx;
	int n, err;

	if (argc < 3 || !strcmp(argv[1], "--help")) {
		fprintf(argc < 3 ? stderr : stdout,
		        "Usage: seccomp-exec LIST PROGRAM [ARGS...]\n"
		        "Run PROGRAM allowing only the system calls named in LIST (one a line);\n"
		        "any other kills it with SIGSYS.\n");
		return argc < 3 ? 2 : 0;
	}
	/* The context's only architecture is the native one: others get KILL_PROCESS too. */
	ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!ctx) {
		fprintf(stderr, "seccomp-exec: seccomp_init failed\n");
		return 1;
	}
	n = allow_from(ctx, argv[1]);
	if (n <= 0) {
		if (n == 0)
			fprintf(stderr, "seccomp-exec: %s names no system call\n", argv[1]);
		return 1;
	}
	err = seccomp_load(ctx); /* sets no_new_privs first, as NoNewPrivileges= would */
	seccomp_release(ctx);
	if (err) {
		fprintf(stderr, "seccomp-exec: cannot load the filter: %s\n", strerror(-err));
		return 1;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "seccomp-exec: cannot run %s: %s\n", argv[2], strerror(errno));
	return 127;
}
