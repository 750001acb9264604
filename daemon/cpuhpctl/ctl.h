/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl: the command-line client of cpuhpd.  main.c parses the
 * command line and holds the helpers every command shares (connecting,
 * reporting a failed call, choosing the exit code); each other file is
 * one or two commands.  All of it goes through <cpuhp/client.h>.
 */
#ifndef CPUHPCTL_CTL_H
#define CPUHPCTL_CTL_H

#include <stdbool.h>
#include <stdio.h>

#include <cpuhp/client.h>

/* Exit codes: chcpu's three, then sysexits.h's for the two conditions a script must tell apart. */
#define CPUHPCTL_EXIT_OK          0  /* every CPU done, or the command succeeded */
#define CPUHPCTL_EXIT_FAILED      1  /* nothing done: refused, every CPU failed, ... */
#define CPUHPCTL_EXIT_USAGE       2  /* bad command line */
#define CPUHPCTL_EXIT_PARTIAL     64 /* some CPUs done, some failed */
#define CPUHPCTL_EXIT_UNREACHABLE 69 /* EX_UNAVAILABLE: cannot talk to cpuhpd */
#define CPUHPCTL_EXIT_TIMEDOUT    75 /* EX_TEMPFAIL: timed out behind leases or a hotplug */
/* hold --strict: the lease was lost (revoked, bypassed, cpuhpd gone), so CMD was ended. */
#define CPUHPCTL_EXIT_LEASE_LOST 70
/* hold --strict: SIGTERM to CMD, then SIGKILL this long after, by default. */
#define CPUHPCTL_DEFAULT_GRACE_MS 5000

/* Wait for leases (online/offline) or for a hotplug (hold) this long by default. */
#define CPUHPCTL_DEFAULT_TIMEOUT_MS 10000

/* The sysfs tree cpuhpctl reads itself when cpuhpd is gone mid-hotplug; "--sysfs-root". */
#define CPUHPCTL_SYSFS_ROOT_ENV "CPUHPCTL_SYSFS_ROOT"

struct cpuhpctl {
	const char *socket;     /* --socket, or NULL for $CPUHP_SOCKET or the default */
	const char *sysfs_root; /* --sysfs-root, else $CPUHPCTL_SYSFS_ROOT, else "/sys" */
	bool json;              /* --json before the command (each command takes it too) */
};

/*
 * Connect, or say why not and what to do on stderr.
 * Return: 0, or the exit code to leave with.
 */
int cpuhpctl_connect(const struct cpuhpctl *ctl, struct cpuhp_client **out);

/*
 * Report a failed call (what we tried, the daemon's words, a hint) on
 * stderr.  Return: the exit code for @err.
 */
int cpuhpctl_fail(struct cpuhp_client *c, int err, const char *what);

/*
 * getopt_long() for cpuhpctl and its commands (@cmd: NULL, or the command's
 * name): a bad option is reported as "cpuhpctl[ CMD]: unrecognized option
 * '--x'" and a one-line hint to --help, instead of getopt's message under
 * argv[0] (a path for the program).  @optstring must start with "+:".
 * Return: the option; -1 after the last; '?' once the error is printed.
 */
struct option;
int cpuhpctl_getopt(int argc, char **argv, const char *optstring, const struct option *longopts,
                    const char *cmd);

/*
 * Parse the options of a command that has only --json and --help (@help
 * prints its usage).  Return: -1 to go on, else the exit code.
 */
int cpuhpctl_parse_no_options(int argc, char **argv, void (*help)(FILE *), bool *json);

/* Parse --timeout's argument.  Return: 0, or -EINVAL with a message printed. */
int cpuhpctl_parse_timeout(const char *arg, unsigned *out);
/* Likewise for option @opt's milliseconds. */
int cpuhpctl_parse_ms(const char *opt, const char *arg, unsigned *out);

/* @set as a range list in a new string ("" for the empty set); NULL on ENOMEM. */
char *cpuhpctl_format(const struct cpuhp_cpuset *set);

/* json.c: values for --json output (schemas in cpuhpctl(8)). */
void cpuhpctl_json_string(FILE *f, const char *s); /* quoted and escaped; NULL as "" */
void cpuhpctl_json_cpus(FILE *f, const struct cpuhp_cpuset *set); /* [0,1,5] */
void cpuhpctl_json_errno(FILE *f, int err); /* "ETIMEDOUT" (either sign), null for 0 */
const char *cpuhpctl_writer_name(enum cpuhp_client_writer_state w); /* idle/waiting/running */
/*
 * cpuhpctl_fail() for --json: also prints {"error": NAME, "message": TEXT}
 * on stdout, so a script always gets one object.  Return: the exit code.
 */
int cpuhpctl_json_fail(struct cpuhp_client *c, int err, const char *what);

/* hotplug.c, shared with smt.c: one result per CPU as chcpu words it, and in JSON. */
void cpuhpctl_report_cpu(const struct cpuhp_client_cpu_result *r, bool online,
                         const struct cpuhp_client_status *st);
void cpuhpctl_json_results(const struct cpuhp_client_cpu_result *r, size_t n);
/* chcpu's exit code for @r: 0 every CPU got there, 64 some did, 1 none did. */
int cpuhpctl_results_exit(const struct cpuhp_client_cpu_result *r, size_t n);
/* The status, malloc()ed, if some result needs the present mask to be worded; else NULL. */
struct cpuhp_client_status *cpuhpctl_status_if_needed(struct cpuhp_client *c,
                                                      const struct cpuhp_client_cpu_result *r,
                                                      size_t n);

/* The commands: argv[0] is the command's name.  Return: the exit code. */
int cpuhpctl_status(const struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_leases(const struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_watch(const struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_set_online(const struct cpuhpctl *ctl, int argc, char **argv, bool online);
int cpuhpctl_hold(const struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_freeze(const struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_states(const struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_state(const struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_smt(const struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_metrics(const struct cpuhpctl *ctl, int argc, char **argv);

#endif /* CPUHPCTL_CTL_H */
