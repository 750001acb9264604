/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl: the command-line client of cpuhpd.  main.c parses the
 * command line and holds the helpers every command shares (connecting,
 * reporting a failed call or a bad command line, choosing the exit code);
 * json.c, table.c, text.c and duration.c are the output and the option
 * values every command shares, wait.c the waits that a terminal watches
 * and Ctrl-C cancels; each other file is one or two commands.
 * All of it goes through <cpuhp/client.h>.
 */
#ifndef CPUHPCTL_CTL_H
#define CPUHPCTL_CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cpuhp/client.h>

/* Exit codes: chcpu's three, then sysexits.h's for the two conditions a script must tell apart. */
#define CPUHPCTL_EXIT_OK          0  /* every CPU done, or the command succeeded */
#define CPUHPCTL_EXIT_FAILED      1  /* nothing done: refused, every CPU failed, ... */
#define CPUHPCTL_EXIT_USAGE       2  /* bad command line */
#define CPUHPCTL_EXIT_PARTIAL     64 /* some CPUs done, some failed */
#define CPUHPCTL_EXIT_UNREACHABLE 69 /* EX_UNAVAILABLE: cannot talk to cpuhpd */
#define CPUHPCTL_EXIT_TIMEDOUT    75 /* EX_TEMPFAIL: timed out behind leases or a hotplug */
/* Ctrl-C cancelled what cpuhpctl waited for: 128 + SIGINT, as a shell says it. */
#define CPUHPCTL_EXIT_CANCELLED 130
/* hold --strict: the lease was lost (revoked, bypassed, cpuhpd gone), so CMD was ended. */
#define CPUHPCTL_EXIT_LEASE_LOST 70
/* hold --strict: SIGTERM to CMD, then SIGKILL this long after, by default. */
#define CPUHPCTL_DEFAULT_GRACE_MS 5000
/* --force's GRACE when none is given: holders get that long to let go. */
#define CPUHPCTL_DEFAULT_FORCE_MS 5000

/* Wait for leases (online/offline) or for a hotplug (hold) this long by default. */
#define CPUHPCTL_DEFAULT_TIMEOUT_MS 10000

/* The sysfs tree cpuhpctl reads itself when cpuhpd is gone mid-hotplug; "--sysfs-root". */
#define CPUHPCTL_SYSFS_ROOT_ENV "CPUHPCTL_SYSFS_ROOT"

struct cpuhpctl {
	const char *socket;     /* --socket, or NULL for $CPUHP_SOCKET or the default */
	const char *sysfs_root; /* --sysfs-root, else $CPUHPCTL_SYSFS_ROOT, else "/sys" */
	bool json;              /* --json, before the command or among its options */
};

/*
 * Connect, or say why not and what to do on stderr (and, with --json, as
 * an error object on stdout).
 * Return: 0, or the exit code to leave with.
 */
int cpuhpctl_connect(const struct cpuhpctl *ctl, struct cpuhp_client **out);

/*
 * Report a failed call (what we tried, the daemon's words, a hint) on
 * stderr; with --json also {"error": NAME, "message": TEXT} on stdout, so
 * that a script always gets one object.  Return: the exit code for @err.
 */
int cpuhpctl_fail(const struct cpuhpctl *ctl, struct cpuhp_client *c, int err, const char *what);

/*
 * A bad command line: "cpuhpctl[ CMD]: MESSAGE" on stderr, then (if @hint)
 * "Try 'cpuhpctl[ CMD] --help'."; with --json also the error object
 * {"error": "EINVAL", "message": MESSAGE} on stdout.
 * Return: CPUHPCTL_EXIT_USAGE.
 */
int cpuhpctl_usage_error(const struct cpuhpctl *ctl, const char *cmd, bool hint, const char *fmt,
                         ...) __attribute__((format(printf, 4, 5)));

/*
 * getopt_long() for cpuhpctl and its commands (@cmd: NULL, or the command's
 * name).  -J and -j (--json) are taken here, for every command: they set
 * @ctl->json and are not returned; the first call reads the whole line for
 * them, so that every usage error is an object with --json wherever it
 * stands.  A bad option is reported as cpuhpctl_usage_error() does
 * ("cpuhpctl[ CMD]: unrecognized option '--x'").  @optstring
 * starts with ":" (options and operands in any order, as getopt_long
 * programs take them) or "+:" (options end at the first operand: the
 * command, or hold's CMD).
 * Return: the option; -1 after the last; '?' once the error is printed.
 */
struct option;
int cpuhpctl_getopt(struct cpuhpctl *ctl, int argc, char **argv, const char *optstring,
                    const struct option *longopts, const char *cmd);

/*
 * Parse the options of a command that has only --json and --help (@help
 * prints its usage).  Return: -1 to go on, else the exit code.
 */
int cpuhpctl_parse_no_options(struct cpuhpctl *ctl, int argc, char **argv, void (*help)(FILE *));

/*
 * duration.c: --timeout, --grace and --deadline take a number with a unit
 * (200ms, 5s, 1.5s, 2m, 1h) or a bare number of milliseconds, from @min to
 * @max ms.  Return: 0, or CPUHPCTL_EXIT_USAGE after a usage error naming
 * @opt of command @cmd.
 */
int cpuhpctl_parse_duration(const struct cpuhpctl *ctl, const char *cmd, const char *opt,
                            const char *arg, unsigned min, unsigned max, unsigned *out);
/* @ms for people, in @buf: "950ms", "4.1s", "3m07s", "2h05m". */
#define CPUHPCTL_DURATION_MAX 24
const char *cpuhpctl_format_duration(char buf[CPUHPCTL_DURATION_MAX], uint64_t ms);

/* @set as a range list in a new string ("" for the empty set); NULL on ENOMEM. */
char *cpuhpctl_format(const struct cpuhp_cpuset *set);

/*
 * text.c: a string from a client or the daemon made safe to print (see
 * proto/text.h: control characters and invalid UTF-8 as \xHH), for
 * messages and the human tables.  The result lives until 7 more calls.
 */
const char *cpuhpctl_safe(const char *s);
/* Call first: the locale's character set says whether UTF-8 may be printed. */
void cpuhpctl_text_init(void);

/* json.c: values for --json output (schemas in cpuhpctl(8)). */
void cpuhpctl_json_string(FILE *f, const char *s); /* quoted, valid UTF-8; NULL as "" */
char *cpuhpctl_json_quote(const char *s);          /* the same, malloc()ed; NULL on ENOMEM */
void cpuhpctl_json_cpus(FILE *f, const struct cpuhp_cpuset *set); /* [0,1,5] */
void cpuhpctl_json_errno(FILE *f, int err); /* "ETIMEDOUT" (either sign), null for 0 */
const char *cpuhpctl_writer_name(enum cpuhp_client_writer_state w); /* idle/waiting/running */
/* {"error": NAME, "message": TEXT} and a newline on stdout, flushed. */
void cpuhpctl_json_error(int err, const char *message);
/* "action":"online"|"offline"|"smt" (with "control":WORD for smt): a hotplug's direction. */
void cpuhpctl_json_action(FILE *f, bool online, const char *smt);
/* A HOTPLUG_PENDING or HOTPLUG_CANCELLED event as one line of JSON (cpuhpctl(8)). */
void cpuhpctl_json_notice(FILE *f, const struct cpuhp_client_event *ev);

/*
 * table.c: a listing (leases, states, cpus) as util-linux prints one: a
 * libsmartcols table with -o/--output, --raw and --noheadings, or with
 * --json an array of one object per row, keyed by the columns' lower-case
 * names, as lscpu -J prints.
 */
#define CPUHPCTL_COL_TEXT  (1u << 0) /* in the table by default */
#define CPUHPCTL_COL_JSON  (1u << 1) /* in --json by default */
#define CPUHPCTL_COL_RIGHT (1u << 2) /* a number: right-aligned */
#define CPUHPCTL_COL_TRUNC (1u << 3) /* free text: cut to fit a terminal */
#define CPUHPCTL_COLS_MAX  32

struct cpuhpctl_column {
	const char *name; /* upper case; -o takes any case */
	const char *help; /* one line, for --help */
	unsigned flags;
};

/* What the user chose: cpuhpctl_parse_listing() fills it. */
struct cpuhpctl_listing {
	int sel[CPUHPCTL_COLS_MAX]; /* -o's columns, in order */
	size_t nsel;                /* 0: the defaults */
	bool plus;                  /* -o +LIST: the defaults, then these */
	bool raw, noheadings;
};

/*
 * Parse the options of a listing command: -o, -r, -n, -J and -h (@help
 * prints the usage, then the columns).  Return: -1 to go on, else the
 * exit code.
 */
int cpuhpctl_parse_listing(struct cpuhpctl *ctl, int argc, char **argv, void (*help)(FILE *),
                           const struct cpuhpctl_column *cols, size_t ncols,
                           struct cpuhpctl_listing *l);

struct cpuhpctl_table;
/* A table named @name ("leases": the JSON key).  NULL on ENOMEM. */
struct cpuhpctl_table *cpuhpctl_table_new(const struct cpuhpctl *ctl, const char *name,
                                          const struct cpuhpctl_column *cols, size_t ncols,
                                          const struct cpuhpctl_listing *l);
/* Start a row; then set its cells by column index (unset ones are empty, JSON null). */
int cpuhpctl_table_row(struct cpuhpctl_table *t);
void cpuhpctl_table_str(struct cpuhpctl_table *t, int col, const char *s);
void cpuhpctl_table_num(struct cpuhpctl_table *t, int col, long long v);
void cpuhpctl_table_cpus(struct cpuhpctl_table *t, int col, const struct cpuhp_cpuset *set);
void cpuhpctl_table_bool(struct cpuhpctl_table *t, int col, bool v); /* yes/no; true/false */
void cpuhpctl_table_none(struct cpuhpctl_table *t, int col);         /* "-"; null */
/* @n strings: joined by ',' in the table, an array of strings in JSON. */
void cpuhpctl_table_strs(struct cpuhpctl_table *t, int col, const char *const *v, size_t n);
/* A duration: cpuhpctl_format_duration() in the table, milliseconds in JSON. */
void cpuhpctl_table_ms(struct cpuhpctl_table *t, int col, uint64_t ms);
/*
 * Print the table on stdout; with --json, '{' and the member
 * "NAME":[{...},...], to which the caller adds its other members and the
 * closing '}'.  Nothing is printed if a cell could not be stored.
 * Return: 0; -ENOMEM, -EIO.
 */
int cpuhpctl_table_print(struct cpuhpctl_table *t);
void cpuhpctl_table_free(struct cpuhpctl_table *t);

/*
 * wait.c: a call that may wait (@call on @c: a hotplug behind leases, a
 * lease or freeze behind hotplugs) runs on a thread of its own; meanwhile,
 * on a terminal and without --json, a line says what it waits for, and
 * Ctrl-C (SIGINT) cancels it by closing @c.
 */
enum cpuhpctl_wait_kind {
	CPUHPCTL_WAIT_LEASES,   /* a hotplug of ours, behind leases and earlier hotplugs */
	CPUHPCTL_WAIT_HOTPLUGS, /* a lease or freeze of ours, behind hotplugs */
};

struct cpuhpctl_wait {
	const struct cpuhpctl *ctl;
	struct cpuhp_client *c; /* the call's handle; NULL once Ctrl-C closed it */
	int (*call)(struct cpuhp_client *c, void *arg);
	void *arg;
	const char *what; /* "offline 2-3", for the line and the messages */
	enum cpuhpctl_wait_kind kind;
	int result;     /* what @call returned; -ECANCELED after Ctrl-C */
	bool cancelled; /* Ctrl-C: @c was closed */
	/* cpuhpctl_wait_run()'s own */
	int done_pipe[2];
	struct cpuhp_client *obs; /* a second connection, to ask what is in the way */
	bool obs_failed;
	struct cpuhp_client_lease_list *list;
	bool shown;
};

/* Run @w->call.  Return: 0 (see @w->result, @w->cancelled); a -errno if it could not start. */
int cpuhpctl_wait_run(struct cpuhpctl_wait *w);
/*
 * After Ctrl-C cancelled a hotplug: wait until cpuhpd lists no request of
 * this process (one that ran goes on to its end), then read its status.
 * Return: 0; -EINTR after a second Ctrl-C; a connection -errno.
 */
int cpuhpctl_wait_settle(struct cpuhpctl_wait *w, struct cpuhp_client_status *after);
/* Free what cpuhpctl_wait_run() and _settle() kept. */
void cpuhpctl_wait_end(struct cpuhpctl_wait *w);

/* leases.c, for status too: the restart grace's line, if one runs. */
void cpuhpctl_print_grace(unsigned ms);

/* hotplug.c, shared with smt.c: one result per CPU as chcpu words it, and in JSON. */
void cpuhpctl_report_cpu(const struct cpuhp_client_cpu_result *r, bool online,
                         const struct cpuhp_client_status *st);
/* The state callbacks run for result @i, indented under its line, on stdout. */
void cpuhpctl_report_states(const struct cpuhp_client_cpu_result *r, size_t i);
void cpuhpctl_json_results(const struct cpuhp_client_cpu_result *r, size_t n);
/*
 * online, offline and smt: connect @w->c, note the online CPUs, run @w's
 * hotplug with wait.c, and after a Ctrl-C say what it changed among @set
 * (NULL: every possible CPU).  Return: -1 when the call returned
 * (@w->result), else the exit code; either way the caller ends with
 * cpuhpctl_wait_end(@w) and closes @w->c (NULL once cancelled).
 */
int cpuhpctl_hotplug_wait(struct cpuhpctl_wait *w, const struct cpuhp_cpuset *set, bool online);
/* What a forced hotplug revoked: a line each on stdout, or the JSON ,"revoked":[...]. */
void cpuhpctl_report_revoked(const struct cpuhp_client_lease_info *v, size_t n);
void cpuhpctl_json_revoked(const struct cpuhp_client_lease_info *v, size_t n);
/* --force[=GRACE] (@opt) and its optional @arg: *@grace_ms.  Return: 0 or the exit code. */
int cpuhpctl_parse_force(const struct cpuhpctl *ctl, const char *cmd, const char *opt,
                         const char *arg, unsigned *grace_ms);
/* chcpu's exit code for @r: 0 every CPU got there, 64 some did, 1 none did. */
int cpuhpctl_results_exit(const struct cpuhp_client_cpu_result *r, size_t n);
/* The status, malloc()ed, if some result needs the present mask to be worded; else NULL. */
struct cpuhp_client_status *cpuhpctl_status_if_needed(struct cpuhp_client *c,
                                                      const struct cpuhp_client_cpu_result *r,
                                                      size_t n);

/* The commands: argv[0] is the command's name.  Return: the exit code. */
int cpuhpctl_status(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_leases(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_watch(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_online(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_offline(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_hold(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_freeze(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_states(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_cpus(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_state(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_smt(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_metrics(struct cpuhpctl *ctl, int argc, char **argv);
/* wait.c: CLOCK_MONOTONIC in milliseconds. */
uint64_t cpuhpctl_now_ms(void);

int cpuhpctl_plan(struct cpuhpctl *ctl, int argc, char **argv);
int cpuhpctl_new_cpu(struct cpuhpctl *ctl, int argc, char **argv);

#endif /* CPUHPCTL_CTL_H */
