/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The declared plan (cpuhpd.conf(5)): what the configuration files say
 * the CPUs should be, and where each setting came from.  Three keys:
 *
 *   offline-cpus = LIST      CPUs kept offline (libcpuhp's CPU lists; empty: none)
 *   smt = on|off             the SMT control kept (empty: not kept)
 *   online-new-cpus = yes|no CPUs that become present are brought online
 *
 * They are read from the main file and its drop-ins (base/conffile.h), a
 * later line winning over an earlier one, then from the command line
 * (--offline-cpus, --smt, --online-new-cpus), which wins over every file.
 * Drop-ins hold nothing but these keys.  A file with a line that does not
 * parse is left out whole (the others still count): loading names it and
 * the line, and the caller decides (plan.c: at start the rest applies, at a
 * reload the plan in force stays).
 *
 * This file only reads and writes files; plan.c keeps the plan in force,
 * planreq.c answers clients.  Loop thread (and conf, before it runs).
 */
#ifndef CPUHPD_PLANDECL_H
#define CPUHPD_PLANDECL_H

#include <stdbool.h>
#include <stddef.h>

#include <cpuhp/cpuset.h>

enum cpuhpd_plan_key {
	CPUHPD_PLAN_OFFLINE, /* offline-cpus */
	CPUHPD_PLAN_SMT,     /* smt */
	CPUHPD_PLAN_NEW,     /* online-new-cpus */
	CPUHPD_PLAN_NKEYS,
};

enum cpuhpd_plan_smt {
	CPUHPD_PLAN_SMT_ANY, /* not kept */
	CPUHPD_PLAN_SMT_ON,
	CPUHPD_PLAN_SMT_OFF,
};

/* The drop-in that `cpuhpctl ... --persist` (SetOnline.persist) writes, in the main file's .d/ */
#define CPUHPD_PLAN_PERSIST_NAME "50-cpuhpctl.conf"

/* One key as in force: its value and where it came from (each malloc()ed). */
struct cpuhpd_plan_setting {
	bool set;
	char *value;      /* canonical: offline-cpus as a range list, smt "on"/"off", "yes"/"no" */
	char *source;     /* "FILE:LINE", or "command line" */
	char *overridden; /* what it won over, "FILE:LINE (VALUE), ...", oldest first; or NULL */
};

struct cpuhpd_plan_decl {
	struct cpuhp_cpuset offline;
	enum cpuhpd_plan_smt smt;
	bool online_new;
	struct cpuhpd_plan_setting setting[CPUHPD_PLAN_NKEYS];
	char *files;  /* the files read, in order, ", "-separated; NULL: none */
	char *errors; /* "FILE:LINE: what is wrong" of each file left out, "; "-separated; NULL:
	                 none */
	unsigned nerrors;
};

/* The command line's plan settings (options.c), which win over the files; NULL: not given. */
struct cpuhpd_plan_cmdline {
	const char *value[CPUHPD_PLAN_NKEYS];
};

/* A key's name in the files ("offline-cpus"...). */
extern const char *const cpuhpd_plan_key_names[CPUHPD_PLAN_NKEYS];

/* The key @name names, or -1: not a plan key. */
int cpuhpd_plan_key(const char *name);

/*
 * Whether @value is a good value of @key; if not, @err says why (without
 * file and line).  options.c checks the command line's with it.
 */
bool cpuhpd_plan_value_ok(enum cpuhpd_plan_key key, const char *value, char *err, size_t errsize);

/**
 * cpuhpd_plan_load() - read the plan of @conf (and "@conf.d/") and @cl.
 * @missing_ok: @conf may be missing (the default file), else it is an error
 * @out:        filled whole; cpuhpd_plan_decl_free() it even on failure
 *
 * Overrides (a later line setting a key set before) are logged at info
 * level; the files left out are in @out->errors and logged as errors.
 * Return: 0; -ENOMEM.  A file left out is not a failure (->nerrors).
 */
int cpuhpd_plan_load(const char *conf, bool missing_ok, const struct cpuhpd_plan_cmdline *cl,
                     struct cpuhpd_plan_decl *out);

void cpuhpd_plan_decl_free(struct cpuhpd_plan_decl *p);

/**
 * cpuhpd_plan_persist() - set @key to @value in the drop-in
 * "@conf.d/" CPUHPD_PLAN_PERSIST_NAME, keeping its other keys: the whole
 * file is written anew to a temporary file beside it (".NAME.XXXXXX"),
 * fsync()ed, renamed over the old one, and the directory fsync()ed, so that
 * a crash leaves the old file or the new one, never a part (and the
 * temporary file is never read: base/conffile.h).  The directory is made
 * (0755) if missing.  @p's setting of @key then says the drop-in's line.
 * @who:  a comment line saying who asked, written above the key
 *
 * Context: loop thread; blocks on the file system (two fsyncs).
 * Return: 0; -errno, @err saying what failed (the file is as before).
 */
int cpuhpd_plan_persist(const char *conf, struct cpuhpd_plan_decl *p, enum cpuhpd_plan_key key,
                        const char *value, const char *who, char *err, size_t errsize);

/*
 * Whether a setting of @key in the persist drop-in would count: NULL if so,
 * else the source that wins over it (a later drop-in's "FILE:LINE", or
 * "command line").
 */
const char *cpuhpd_plan_persist_blocked(const char *conf, const struct cpuhpd_plan_decl *p,
                                        enum cpuhpd_plan_key key);

#endif /* CPUHPD_PLANDECL_H */
