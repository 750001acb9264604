/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl hold and freeze: run a command while holding a reader lease, or
 * a hotplug freeze, like systemd-inhibit.  Either is taken before the
 * command starts and lives as long as this process's connection, so it ends
 * when the command ends, or when cpuhpctl itself dies.  In that last case
 * the command must not run on unprotected: it gets SIGTERM
 * (PR_SET_PDEATHSIG) as cpuhpctl dies, even by SIGKILL.
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "text.h"

#include "ctl.h"

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: cpuhpctl hold [--timeout T] [--who NAME] [--why TEXT] [--strict]\n"
	        "                     [--grace T] [--delay T] [--on-pending HOOK]\n"
	        "                     [--] CMD [ARGS...]\n"
	        "\n"
	        "Take a reader lease from cpuhpd, run CMD, and release the lease when it\n"
	        "exits: while CMD runs, the set of online CPUs does not change.  Exits with\n"
	        "CMD's status (128+N if signal N killed it; 127 if CMD was not found, 126\n"
	        "if it could not be run), or with %d/%d/%d if the lease was not granted.\n"
	        "If cpuhpctl itself dies (even by SIGKILL), the lease ends and CMD gets\n"
	        "SIGTERM.  If the lease stops holding while CMD runs (cpuhpd revoked it,\n"
	        "CPUs changed behind cpuhpd's back, or cpuhpd went away), a warning says so\n"
	        "and CMD runs on; with --strict, CMD is ended instead and hold exits %d.\n"
	        "\n"
	        "  -t, --timeout T   wait at most T (500ms, 5s, 2m; a bare number is ms)\n"
	        "                    for a hotplug in progress to end (default %us; 0:\n"
	        "                    fail at once, exit %d, if one is in progress)\n"
	        "  -w, --who NAME    who holds the lease, for 'cpuhpctl leases' and for\n"
	        "                    the message of a hotplug that times out behind it\n"
	        "                    (default: CMD's name)\n"
	        "  -y, --why TEXT    what the lease protects, likewise\n"
	        "  -S, --strict      when the lease is lost, send CMD SIGTERM, then SIGKILL\n"
	        "                    after the grace period if it still runs; exit %d\n"
	        "  -g, --grace T     the grace period of --strict (default %us)\n"
	        "  -D, --delay T     a delay lease: a hotplug that becomes pending waits for\n"
	        "                    it at most T after its notice, then revokes it (at most\n"
	        "                    cpuhpd's --max-delay-ms; a longer T is cut, and said)\n"
	        "  -P, --on-pending HOOK\n"
	        "                    when a hotplug becomes pending (the notice, printed on\n"
	        "                    stderr), run HOOK with sh -c, not waited for; it gets\n"
	        "                    CPUHP_CPUS (the CPUs, e.g. 2-3), CPUHP_ACTION (online,\n"
	        "                    offline, smt), CPUHP_HOTPLUG (its number) and\n"
	        "                    CPUHP_HOLD_PID (CMD's pid), e.g. to make CMD finish\n"
	        "                    early so that the hotplug goes on\n"
	        "\n"
	        "Options end at CMD: what follows is CMD's.  No --json: CMD's output is\n"
	        "the output.\n",
	        CPUHPCTL_EXIT_UNREACHABLE, CPUHPCTL_EXIT_TIMEDOUT, CPUHPCTL_EXIT_FAILED,
	        CPUHPCTL_EXIT_LEASE_LOST, CPUHPCTL_DEFAULT_TIMEOUT_MS / 1000,
	        CPUHPCTL_EXIT_TIMEDOUT, CPUHPCTL_EXIT_LEASE_LOST, CPUHPCTL_DEFAULT_GRACE_MS / 1000);
}

static volatile sig_atomic_t child_pid;

/* Termination requests for cpuhpctl go to CMD; we keep the lease until it exits. */
static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static void set_parent_signals(void)
{
	struct sigaction sa = {.sa_handler = forward_signal};
	struct sigaction ign = {.sa_handler = SIG_IGN};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* The terminal sends these to CMD too (same process group), as system() does. */
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGQUIT, &ign, NULL);
}

/*
 * Fork and exec @cmd.  The termination signals stay blocked from before the
 * fork until the parent's handlers are in place, so none can kill
 * cpuhpctl (and end the lease) or go unforwarded in between; the child gets
 * the dispositions and mask cpuhpctl started with.
 */
static pid_t spawn(const char *name, char **cmd)
{
	pid_t parent = getpid(), pid;
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGQUIT);
	sigprocmask(SIG_BLOCK, &block, &old);
	pid = fork();
	if (pid == 0) {
		/*
		 * The lease dies with cpuhpctl's connection, so CMD must hear of
		 * cpuhpctl's death: SIGTERM, kept across execve() (the kernel
		 * drops it for a set-user-ID or file-capability CMD).  A parent
		 * that died before prctl() took effect shows in getppid(): then
		 * the lease is gone already and CMD does not start.
		 */
		int pdeath = prctl(PR_SET_PDEATHSIG, SIGTERM), err;

		sigprocmask(SIG_SETMASK, &old, NULL);
		if (pdeath < 0) {
			fprintf(stderr, "cpuhpctl %s: PR_SET_PDEATHSIG: %s\n", name,
			        strerror(errno));
			_exit(126);
		}
		if (getppid() != parent) {
			fprintf(stderr,
			        "cpuhpctl %s: cpuhpctl died before %s started, and its "
			        "%s with it: not running it\n",
			        name, cpuhpctl_safe(cmd[0]),
			        !strcmp(name, "hold") ? "lease" : "freeze");
			_exit(128 + SIGTERM);
		}
		/* The client's socket is close-on-exec: CMD cannot end the lease early. */
		execvp(cmd[0], cmd);
		err = errno;
		fprintf(stderr, "cpuhpctl %s: cannot run %s: %s\n", name, cpuhpctl_safe(cmd[0]),
		        strerror(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	if (pid > 0) {
		child_pid = pid;
		set_parent_signals();
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return pid;
}

/* What the connection said: nothing, or that the lease (or freeze) no longer holds. */
enum notice {
	NOTICE_NONE,
	NOTICE_BROKEN, /* revoked, or CPUs changed behind cpuhpd's back */
	NOTICE_GONE,   /* the connection ended, and what it held with it */
};

/* What the notices need: who we are, the --on-pending hook, CMD. */
struct notices {
	const char *name;  /* "hold" or "freeze" */
	const char *hook;  /* --on-pending; NULL: none */
	pid_t cmd;         /* CMD's pid, for the hook */
	pid_t hook_pid;    /* the last hook started, until reaped */
	unsigned delay_ms; /* --delay as granted; 0: a block lease */
};

/* Run the --on-pending hook for @ev, not waited for (one at a time: a running one is reaped). */
static void run_hook(struct notices *n, const struct cpuhp_client_event *ev)
{
	char *cpus = cpuhpctl_format(&ev->cpus), id[24], cmd[24];
	pid_t pid;

	if (n->hook_pid > 0 && waitpid(n->hook_pid, NULL, WNOHANG) == n->hook_pid)
		n->hook_pid = 0;
	snprintf(id, sizeof(id), "%llu", (unsigned long long)ev->hotplug_id);
	snprintf(cmd, sizeof(cmd), "%d", (int)n->cmd);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		setenv("CPUHP_CPUS", cpus ? cpus : "", 1);
		setenv("CPUHP_ACTION", ev->smt[0] ? "smt" : ev->online ? "online" : "offline", 1);
		setenv("CPUHP_HOTPLUG", id, 1);
		setenv("CPUHP_HOLD_PID", cmd, 1);
		execl("/bin/sh", "sh", "-c", n->hook, (char *)NULL);
		fprintf(stderr, "cpuhpctl %s: cannot run the --on-pending hook: %s\n", n->name,
		        strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		fprintf(stderr, "cpuhpctl %s: fork for --on-pending: %s\n", n->name,
		        strerror(errno));
	else if (n->hook_pid <= 0)
		n->hook_pid = pid;
	else
		waitpid(pid, NULL, 0); /* one at a time: this one reaped here, the first later */
	free(cpus);
}

/* A hotplug's notices, on stderr (and the hook). */
static void tell_hotplug(struct notices *n, const struct cpuhp_client_event *ev)
{
	char *cpus = cpuhpctl_format(&ev->cpus), t[CPUHPCTL_DURATION_MAX];
	const char *what = ev->smt[0] ? "smt" : ev->online ? "online" : "offline";
	const char *which = ev->smt[0] ? cpuhpctl_safe(ev->smt) : cpus ? cpus : "?";

	if (ev->type == CPUHP_CLIENT_EVENT_HOTPLUG_CANCELLED) {
		fprintf(stderr, "cpuhpctl %s: hotplug #%llu (%s %s) is cancelled: %s\n", n->name,
		        (unsigned long long)ev->hotplug_id, what, which,
		        cpuhpctl_safe(ev->message));
	} else {
		fprintf(stderr,
		        "cpuhpctl %s: hotplug #%llu (%s %s) is pending: it waits for this %s, %s "
		        "%s%s\n",
		        n->name, (unsigned long long)ev->hotplug_id, what, which,
		        !strcmp(n->name, "hold") ? "lease" : "freeze",
		        ev->force || n->delay_ms ? "which is revoked in" : "up to its timeout in",
		        cpuhpctl_format_duration(
		            t, ev->force && (!n->delay_ms || ev->force_grace_ms < n->delay_ms)
		                   ? ev->force_grace_ms
		               : n->delay_ms ? n->delay_ms
		                             : ev->timeout_ms),
		        ev->force ? " (forced)" : "");
		if (n->hook)
			run_hook(n, ev);
	}
	free(cpus);
}

/*
 * The connection is readable: cpuhpd's notices (a hotplug pending or
 * cancelled, a lease revoked, CPUs changed behind its back, the connection
 * gone with the lease) are told on stderr.  Return: the worst of them.
 */
static enum notice read_notices(struct cpuhp_client *c, struct notices *n)
{
	static struct cpuhp_client_event ev; /* over 3 KiB of masks; one thread */
	enum notice worst = NOTICE_NONE;
	const char *name = n->name;
	int err;

	while ((err = cpuhp_client_next_event(c, 0, &ev)) == 0) {
		char *cpus = cpuhpctl_format(&ev.online_cpus);

		if (ev.type == CPUHP_CLIENT_EVENT_HOTPLUG_PENDING ||
		    ev.type == CPUHP_CLIENT_EVENT_HOTPLUG_CANCELLED)
			tell_hotplug(n, &ev);
		else if (ev.type == CPUHP_CLIENT_EVENT_LEASE_REVOKED &&
		         ev.revoke_reason == CPUHP_CLIENT_REVOKED_MAX_LEASE)
			fprintf(stderr,
			        "cpuhpctl %s: cpuhpd revoked the lease after %llu ms (its "
			        "--max-lease-ms is %u): CPUs may change while the command runs\n",
			        name, (unsigned long long)ev.held_ms, ev.max_lease_ms);
		else if (ev.type == CPUHP_CLIENT_EVENT_LEASE_REVOKED)
			fprintf(
			    stderr,
			    "cpuhpctl %s: cpuhpd revoked the lease after %llu ms for hotplug #%llu "
			    "(%s): CPUs may change while the command runs\n",
			    name, (unsigned long long)ev.held_ms, (unsigned long long)ev.hotplug_id,
			    ev.revoke_reason == CPUHP_CLIENT_REVOKED_DELAY
			        ? "the lease's delay after its notice is over"
			        : "a forced hotplug, whose grace is over");
		else if (ev.type == CPUHP_CLIENT_EVENT_LEASE_BYPASSED)
			fprintf(stderr,
			        "cpuhpctl %s: warning: the online CPUs changed behind cpuhpd's "
			        "back while the lease was held (online now %s): what the "
			        "command relies on may be stale\n",
			        name, cpus && cpus[0] ? cpus : "?");
		if (ev.type == CPUHP_CLIENT_EVENT_LEASE_REVOKED ||
		    ev.type == CPUHP_CLIENT_EVENT_LEASE_BYPASSED)
			worst = worst > NOTICE_BROKEN ? worst : NOTICE_BROKEN;
		free(cpus);
	}
	if (err == -EAGAIN)
		return worst;
	/* The LEASES_LOST notice came above, or nothing was held: the same news. */
	fprintf(stderr,
	        "cpuhpctl %s: lost the connection to cpuhpd: the %s is no longer held, and "
	        "CPUs may change while the command runs\n",
	        name, !strcmp(name, "hold") ? "lease" : "freeze");
	return NOTICE_GONE;
}

/* hold --strict: what to do to CMD when its lease no longer holds. */
struct strict {
	bool on;
	unsigned grace_ms;
	bool lost;               /* the lease stopped holding: CMD was sent SIGTERM */
	bool killed;             /* and SIGKILL after the grace */
	struct timespec kill_at; /* when the grace ends */
};

static int ms_until(const struct timespec *t)
{
	struct timespec now;
	long long ms;

	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (long long)(t->tv_sec - now.tv_sec) * 1000 + (t->tv_nsec - now.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

static void end_cmd(struct strict *st, pid_t pid, const char *name)
{
	if (!st->on || st->lost)
		return;
	fprintf(stderr,
	        "cpuhpctl %s: --strict: ending the command (SIGTERM, then SIGKILL after %u ms)\n",
	        name, st->grace_ms);
	kill(pid, SIGTERM);
	st->lost = true;
	clock_gettime(CLOCK_MONOTONIC, &st->kill_at);
	st->kill_at.tv_sec += st->grace_ms / 1000;
	st->kill_at.tv_nsec += (long)(st->grace_ms % 1000) * 1000000;
	if (st->kill_at.tv_nsec >= 1000000000) {
		st->kill_at.tv_sec++;
		st->kill_at.tv_nsec -= 1000000000;
	}
}

/*
 * Wait for CMD, and meanwhile watch the connection: if cpuhpd goes away the
 * lease is gone, which CMD's user must hear about, and so must a lease
 * revoked or bypassed; with --strict, CMD is ended then.  Needs pidfd_open
 * (Linux 5.3); without it just wait.
 */
static int wait_child(struct cpuhp_client *c, pid_t pid, struct notices *nt, struct strict *st)
{
	const char *name = nt->name;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	bool watching = true;
	int status;

	while (pidfd >= 0) {
		struct pollfd p[2] = {{.fd = pidfd, .events = POLLIN},
		                      {.fd = cpuhp_client_fd(c), .events = POLLIN}};
		bool grace = st->lost && !st->killed;
		int n = poll(p, watching ? 2 : 1, grace ? ms_until(&st->kill_at) : -1);
		enum notice what;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0) {
			/* The grace is over and CMD still runs. */
			kill(pid, SIGKILL);
			st->killed = true;
			continue;
		}
		if (p[0].revents)
			break;
		if (!watching || !p[1].revents)
			continue;
		what = read_notices(c, nt);
		if (what != NOTICE_NONE)
			end_cmd(st, pid, name);
		if (what == NOTICE_GONE)
			watching = false;
	}
	if (pidfd >= 0)
		close(pidfd);
	/* A notice that came with CMD's exit is still news for its user (and ends no one). */
	if (watching && read_notices(c, nt) != NOTICE_NONE && st->on)
		st->lost = true;
	if (nt->hook_pid > 0)
		waitpid(nt->hook_pid, NULL, 0);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return CPUHPCTL_EXIT_FAILED;
	if (st->lost)
		return CPUHPCTL_EXIT_LEASE_LOST;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* What hold and freeze take from the command line. */
struct run_args {
	unsigned timeout_ms;
	const char *who, *why;
	char **cmd;
	bool strict;       /* hold only */
	unsigned grace_ms; /* hold only */
	bool delay;        /* hold only: --delay, of delay_ms */
	unsigned delay_ms;
	const char *hook; /* hold only: --on-pending */
};

/* Return: -1 to go on, else the exit code (after --help or an error, printed). */
static int parse_run_args(struct cpuhpctl *ctl, int argc, char **argv, const char *name,
                          void (*help)(FILE *), struct run_args *a)
{
	static const struct option hold_opts[] = {
	    {"timeout", required_argument, NULL, 't'},
	    {"strict", no_argument, NULL, 'S'},
	    {"grace", required_argument, NULL, 'g'},
	    {"delay", required_argument, NULL, 'D'},
	    {"on-pending", required_argument, NULL, 'P'},
	    {"who", required_argument, NULL, 'w'},
	    {"why", required_argument, NULL, 'y'},
	    {"json", no_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	/*
	 * freeze has no --timeout (it waits only for the hotplugs queued before
	 * it), nor --strict, --delay, --on-pending.
	 */
	const struct option *freeze_opts = hold_opts + 5;
	bool hold = !strcmp(name, "hold");
	int opt, ret;

	/* '+': options end at CMD, whose own options they are. */
	while ((opt = cpuhpctl_getopt(ctl, argc, argv, hold ? "+:t:Sg:D:P:w:y:Jjh" : "+:w:y:Jjh",
	                              hold ? hold_opts : freeze_opts, name)) != -1) {
		if (opt == 't' || opt == 'g' || opt == 'D') {
			if ((ret = cpuhpctl_parse_duration(ctl, name,
			                                   opt == 't'   ? "--timeout"
			                                   : opt == 'g' ? "--grace"
			                                                : "--delay",
			                                   optarg, opt == 'D' ? 1 : 0, UINT32_MAX,
			                                   opt == 't'   ? &a->timeout_ms
			                                   : opt == 'g' ? &a->grace_ms
			                                                : &a->delay_ms)))
				return ret;
			a->delay |= opt == 'D';
			continue;
		}
		if (opt == 'P') {
			a->hook = optarg;
			continue;
		}
		if (opt == 'S') {
			a->strict = true;
			continue;
		}
		if (opt == 'w' || opt == 'y') {
			if (strlen(optarg) > CPUHP_CLIENT_IDENTITY_MAX)
				return cpuhpctl_usage_error(
				    ctl, name, false, "--%s is limited to %d bytes",
				    opt == 'w' ? "who" : "why", CPUHP_CLIENT_IDENTITY_MAX);
			*(opt == 'w' ? &a->who : &a->why) = optarg;
			continue;
		}
		if (opt == 'h')
			help(stdout);
		return opt == 'h' ? CPUHPCTL_EXIT_OK : CPUHPCTL_EXIT_USAGE;
	}
	if (ctl->json)
		return cpuhpctl_usage_error(
		    ctl, name, false,
		    "--json: %s prints nothing of its own; CMD's output is "
		    "the output ('cpuhpctl --json leases' lists what is held)",
		    name);
	if (optind >= argc)
		return cpuhpctl_usage_error(ctl, name, true,
		                            "which command? e.g. cpuhpctl %s -- ./job args", name);
	a->cmd = argv + optind;
	if (!a->who) {
		static char shown[CPUHP_CLIENT_IDENTITY_MAX + 1];
		const char *slash = strrchr(a->cmd[0], '/');

		a->who = slash ? slash + 1 : a->cmd[0];
		/* A file name may hold any bytes; who is UTF-8 (cpuhpd refuses other bytes). */
		if (!cpuhp__text_utf8_valid(a->who, strlen(a->who))) {
			cpuhp__text_escape(shown, sizeof(shown), a->who, strlen(a->who), 0);
			a->who = shown;
		}
	}
	return -1;
}

/* Run @cmd while @c holds what we took on it.  Return: the exit code. */
static int run_cmd(struct cpuhp_client *c, struct notices *nt, char **cmd, struct strict *st)
{
	pid_t pid;

	fflush(NULL); /* nothing buffered may be written twice after fork */
	pid = spawn(nt->name, cmd);
	if (pid < 0) {
		fprintf(stderr, "cpuhpctl %s: fork: %s\n", nt->name, strerror(errno));
		return CPUHPCTL_EXIT_FAILED;
	}
	nt->cmd = pid;
	return wait_child(c, pid, nt, st);
}

/* The lease or the freeze, taken by wait.c's thread. */
struct take_call {
	const struct run_args *a;
	uint64_t id;
};

static int call_lease(struct cpuhp_client *c, void *arg)
{
	struct take_call *t = arg;

	return cpuhp_client_lease_acquire(c, t->a->timeout_ms, &t->id);
}

static int call_freeze(struct cpuhp_client *c, void *arg)
{
	struct take_call *t = arg;

	return cpuhp_client_freeze(c, t->a->who, t->a->why, &t->id);
}

/*
 * Take the lease or the freeze (@call), saying what it waits for and
 * hearing Ctrl-C as wait.c does.  Return: -1 when taken (@w->c holds it),
 * else the exit code, the handle closed.
 */
static int take(const struct cpuhpctl *ctl, struct cpuhpctl_wait *w, const char *name)
{
	int err = cpuhpctl_wait_run(w), ret;

	cpuhpctl_wait_end(w);
	if (err < 0 || w->cancelled) {
		if (err < 0)
			fprintf(stderr, "cpuhpctl %s: cannot wait: %s\n", name, strerror(-err));
		else
			fprintf(stderr,
			        "cpuhpctl %s: cancelled: no %s is held and CMD was not run\n", name,
			        !strcmp(name, "hold") ? "lease" : "freeze");
		cpuhp_client_close(w->c);
		return err < 0 ? CPUHPCTL_EXIT_FAILED : CPUHPCTL_EXIT_CANCELLED;
	}
	if (w->result < 0) {
		ret = cpuhpctl_fail(ctl, w->c, w->result,
		                    !strcmp(name, "hold") ? "hold: lease" : name);
		cpuhp_client_close(w->c);
		return ret;
	}
	return -1;
}

int cpuhpctl_hold(struct cpuhpctl *ctl, int argc, char **argv)
{
	struct run_args a = {.timeout_ms = CPUHPCTL_DEFAULT_TIMEOUT_MS,
	                     .grace_ms = CPUHPCTL_DEFAULT_GRACE_MS};
	struct take_call t = {.a = &a};
	struct cpuhpctl_wait w = {.ctl = ctl,
	                          .call = call_lease,
	                          .arg = &t,
	                          .what = "hold",
	                          .kind = CPUHPCTL_WAIT_HOTPLUGS};
	struct strict st = {0};
	struct notices nt = {.name = "hold"};
	unsigned granted;
	int ret, err;

	ret = parse_run_args(ctl, argc, argv, "hold", usage, &a);
	if (ret >= 0)
		return ret;
	ret = cpuhpctl_connect(ctl, &w.c);
	if (ret)
		return ret;
	if (a.delay) {
		char asked[CPUHPCTL_DURATION_MAX], got[CPUHPCTL_DURATION_MAX];

		err = cpuhp_client_set_lease_delay(w.c, a.delay_ms, &granted);
		if (err < 0) {
			ret = cpuhpctl_fail(ctl, w.c, err, "hold: --delay");
			cpuhp_client_close(w.c);
			return ret;
		}
		if (granted < a.delay_ms)
			fprintf(stderr,
			        "cpuhpctl hold: --delay %s is over cpuhpd's --max-delay-ms: the "
			        "lease's delay is %s\n",
			        cpuhpctl_format_duration(asked, a.delay_ms),
			        cpuhpctl_format_duration(got, granted));
		nt.delay_ms = granted;
	}
	nt.hook = a.hook;
	/* The connection's name, so that the lease stays a fast one where it can. */
	err = cpuhp_client_set_identity(w.c, a.who, a.why);
	if (err < 0 && err != -EOPNOTSUPP) { /* an older cpuhpd: unnamed, but held */
		ret = cpuhpctl_fail(ctl, w.c, err, "hold: lease");
		cpuhp_client_close(w.c);
		return ret;
	}
	ret = take(ctl, &w, "hold");
	if (ret >= 0)
		return ret;
	st.on = a.strict;
	st.grace_ms = a.grace_ms;
	ret = run_cmd(w.c, &nt, a.cmd, &st);
	/* Release explicitly when we can; closing would end it all the same. */
	cpuhp_client_lease_release(w.c, t.id);
	cpuhp_client_close(w.c);
	return ret;
}

static void freeze_usage(FILE *f)
{
	fprintf(f,
	        "Usage: cpuhpctl freeze [--who NAME] [--why TEXT] [--] CMD [ARGS...]\n"
	        "\n"
	        "Freeze CPU hotplug, run CMD, and thaw when it exits, as the kernel's\n"
	        "cpu_hotplug_disable() does: while any freeze is held, every new online or\n"
	        "offline request fails at once (EBUSY, exit %d) with a message naming the\n"
	        "holder, and leases are still granted.  For a benchmark run or a\n"
	        "latency-critical window.  Hotplugs queued before the freeze run first:\n"
	        "CMD starts once none is queued or running.  Needs root or cpuhpd's admin\n"
	        "group.  Exits with CMD's status (as hold does), or with %d/%d if the\n"
	        "freeze was not granted.  If cpuhpctl dies (even by SIGKILL), the freeze\n"
	        "ends and CMD gets SIGTERM.\n"
	        "\n"
	        "  -w, --who NAME  who holds the freeze, for 'cpuhpctl leases' and for the\n"
	        "                  message of the hotplugs it refuses (default: CMD's name)\n"
	        "  -y, --why TEXT  what the freeze protects, likewise\n"
	        "\n"
	        "Options end at CMD: what follows is CMD's.  No --json: CMD's output is\n"
	        "the output.\n",
	        CPUHPCTL_EXIT_FAILED, CPUHPCTL_EXIT_UNREACHABLE, CPUHPCTL_EXIT_FAILED);
}

int cpuhpctl_freeze(struct cpuhpctl *ctl, int argc, char **argv)
{
	struct run_args a = {0};
	struct take_call t = {.a = &a};
	struct cpuhpctl_wait w = {.ctl = ctl,
	                          .call = call_freeze,
	                          .arg = &t,
	                          .what = "freeze",
	                          .kind = CPUHPCTL_WAIT_HOTPLUGS};
	int ret;

	ret = parse_run_args(ctl, argc, argv, "freeze", freeze_usage, &a);
	if (ret >= 0)
		return ret;
	ret = cpuhpctl_connect(ctl, &w.c);
	if (ret)
		return ret;
	ret = take(ctl, &w, "freeze");
	if (ret >= 0)
		return ret;
	ret = run_cmd(w.c, &(struct notices){.name = "freeze"}, a.cmd, &(struct strict){0});
	cpuhp_client_thaw(w.c, t.id);
	cpuhp_client_close(w.c);
	return ret;
}
