/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpctl states and state: list the hotplug states registered with
 * cpuhpd, and the shell hook, a state whose callbacks run commands
 * (daemon/cpuhpd/README.md, "Hotplug states", has the rules).
 *
 * The hook runs its callbacks on its main thread, from its own poll loop
 * (cpuhp_client_state_fd/dispatch), so that a SIGINT or SIGTERM, which
 * ends the hook by removing the state, is seen between calls and never
 * inside one: removal then runs the teardowns, as an operator expects.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

extern char **environ;

static void states_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl states [--output COLS] [--raw] [--noheadings] [--json]\n"
	           "\n"
	           "List the hotplug states registered with cpuhpd, in startup order (lowest\n"
	           "priority first; teardown runs the other way): id, name, priority, the\n"
	           "deadline of each call, the owner's pid and command, and the CPUs the\n"
	           "state was started on.\n"
	           "\n"
	           "  -o, --output COLS  the columns, e.g. NAME,CPUS; +COLS adds to the\n"
	           "                     default ones\n"
	           "  -r, --raw          unaligned, blanks and control characters as \\xHH\n"
	           "  -n, --noheadings   no header line\n"
	           "  -J, --json         one JSON object: the states as rows keyed by the\n"
	           "                     columns' names (schema in cpuhpctl(8))\n");
}

static void state_usage(FILE *f)
{
	fprintf(f, "Usage: cpuhpctl state NAME [--priority N] [--deadline T] [--nocalls]\n"
	           "                      [--section prepare|online]\n"
	           "                      [--teardown CMD] [--startup CMD]\n"
	           "\n"
	           "Register the hotplug state NAME and keep it until SIGINT or SIGTERM: before\n"
	           "a CPU goes offline cpuhpd waits for the teardown command, after one came\n"
	           "online for the startup command. Each runs as 'sh -c CMD sh CPU', with\n"
	           "CPUHP_CPU, CPUHP_PHASE (startup or teardown), CPUHP_STATE, CPUHP_SECTION,\n"
	           "CPUHP_EXTERNAL and CPUHP_ROLLBACK (1 or 0) in its environment. Exit status 0\n"
	           "is success; anything else fails the call, and cpuhpd rolls the hotplug\n"
	           "back; so does a command still running at the deadline (killed at 1.5 times\n"
	           "the deadline).\n"
	           "On registration the startup command runs for every online CPU (unless\n"
	           "--nocalls); on SIGINT or SIGTERM the teardown command runs for each of them\n"
	           "and the state is removed.\n"
	           "\n"
	           "  -p, --priority N   teardown runs from the highest priority down, startup\n"
	           "                     from the lowest up (default 0)\n"
	           "  -d, --deadline T   per call, 1ms to 10m (default 5s; a bare number is ms)\n"
	           "  -N, --nocalls      no calls at registration and removal\n"
	           "      --section S    online (default): startup after the CPU came, teardown\n"
	           "                     before it goes; prepare: startup before the CPU runs\n"
	           "                     anything, teardown after it is dead (its failure is\n"
	           "                     logged, nothing is rolled back)\n"
	           "  -T, --teardown CMD the command run before a CPU goes offline\n"
	           "  -u, --startup CMD  the command run after a CPU came online\n"
	           "\n"
	           "Prints one line per call: phase, CPU, outcome and how long it took.\n"
	           "Exit status: 0 after a signal removed the state; 1 if registration\n"
	           "failed (the name is taken, a startup failed); 69 if cpuhpd went away.\n");
}

/* --- cpuhpctl states --------------------------------------------------------- */

enum {
	COL_ID,
	COL_NAME,
	COL_PRIORITY,
	COL_DEADLINE,
	COL_DEADLINE_MS,
	COL_PID,
	COL_UID,
	COL_COMM,
	COL_CPUS,
	COL_SECTION,
	COL_INSTANCES,
	NCOLS
};

#define T CPUHPCTL_COL_TEXT
#define J CPUHPCTL_COL_JSON
#define R CPUHPCTL_COL_RIGHT
static const struct cpuhpctl_column columns[NCOLS] = {
    [COL_ID] = {"ID", "the state's id", T | J | R},
    [COL_NAME] = {"NAME", "its name, as its owner registered it", T | J},
    [COL_PRIORITY] = {"PRIORITY", "teardown runs from the highest down, startup up", T | J | R},
    [COL_DEADLINE] = {"DEADLINE", "how long cpuhpd waits for each call (JSON: milliseconds)",
                      T | R},
    [COL_DEADLINE_MS] = {"DEADLINE_MS", "the deadline in milliseconds", J | R},
    [COL_PID] = {"PID", "the owner's process id", T | J | R},
    [COL_UID] = {"UID", "the owner's user id", J | R},
    [COL_COMM] = {"COMM", "the owner's command (its /proc/PID/comm)", T | J},
    [COL_CPUS] = {"CPUS", "the CPUs the state was started on (JSON: an array)", T | J},
    [COL_SECTION] = {"SECTION", "prepare or online: where its calls go around the write", J},
    [COL_INSTANCES] = {"INSTANCES", "a multi state's instances (else -; JSON: null)", J | R},
};
#undef T
#undef J
#undef R

int cpuhpctl_states(struct cpuhpctl *ctl, int argc, char **argv)
{
	struct cpuhp_client_state_info *s;
	struct cpuhpctl_listing opts;
	struct cpuhpctl_table *t;
	struct cpuhp_client *c;
	size_t n;
	int ret, err;

	ret = cpuhpctl_parse_listing(ctl, argc, argv, states_usage, columns, NCOLS, &opts);
	if (ret >= 0)
		return ret;
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	err = cpuhp_client_list_states(c, &s, &n);
	if (err < 0) {
		ret = cpuhpctl_fail(ctl, c, err, "states");
		cpuhp_client_close(c);
		return ret;
	}
	cpuhp_client_close(c);
	t = cpuhpctl_table_new(ctl, "states", columns, NCOLS, &opts);
	for (size_t i = 0; t && i < n; i++) {
		if (cpuhpctl_table_row(t) < 0)
			break;
		cpuhpctl_table_num(t, COL_ID, (long long)s[i].id);
		cpuhpctl_table_str(t, COL_NAME, s[i].name);
		cpuhpctl_table_num(t, COL_PRIORITY, s[i].priority);
		cpuhpctl_table_ms(t, COL_DEADLINE, s[i].deadline_ms);
		cpuhpctl_table_num(t, COL_DEADLINE_MS, s[i].deadline_ms);
		cpuhpctl_table_num(t, COL_PID, s[i].pid);
		cpuhpctl_table_num(t, COL_UID, s[i].uid);
		cpuhpctl_table_str(t, COL_COMM, s[i].comm);
		cpuhpctl_table_cpus(t, COL_CPUS, &s[i].cpus);
		cpuhpctl_table_str(t, COL_SECTION, s[i].prepare ? "prepare" : "online");
		if (s[i].multi)
			cpuhpctl_table_num(t, COL_INSTANCES, s[i].instances);
	}
	if (!t || cpuhpctl_table_print(t) < 0) {
		fprintf(stderr, "cpuhpctl states: out of memory\n");
		ret = CPUHPCTL_EXIT_FAILED;
	} else if (ctl->json) {
		printf("}\n");
	} else if (!opts.raw && !opts.noheadings) {
		printf("\n%zu state(s) registered.\n", n);
	}
	cpuhpctl_table_free(t);
	free(s);
	return fflush(stdout) ? CPUHPCTL_EXIT_FAILED : ret;
}

/* --- cpuhpctl state: the shell hook ------------------------------------------ */

struct hook {
	const char *name;
	const char *startup, *teardown; /* NULL: that call succeeds at once */
	unsigned deadline_ms;
};

static volatile sig_atomic_t hook_signal;
static int hook_pipe[2] = {-1, -1};

/* Async-signal-safe: note the signal and wake the poll loop. */
static void hook_on_signal(int sig)
{
	int saved = errno;
	char b = 0;

	hook_signal = sig;
	if (write(hook_pipe[1], &b, 1) < 0) {
		/* The pipe is full: the loop is woken already. */
	}
	errno = saved;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Wait for @pid at most @ms; then kill it (its process group) and reap it.
 * Return: its wait status, or -ETIMEDOUT once killed and reaped.
 */
static int wait_child(pid_t pid, unsigned ms)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	int status, timed_out = 0;

	if (pidfd >= 0) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		uint64_t end = now_us() + (uint64_t)ms * 1000;

		for (;;) {
			uint64_t t = now_us();
			int r;

			if (t >= end) {
				timed_out = 1;
				break;
			}
			r = poll(&p, 1, (int)((end - t + 999) / 1000));
			if (r > 0)
				break;
			if (r < 0 && errno != EINTR)
				break;
		}
		close(pidfd);
	}
	if (timed_out) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -ECHILD;
	return timed_out ? -ETIMEDOUT : status;
}

/* The hook's variables, set for each call; anything else of ours is passed on. */
static const char *const hook_vars[] = {"CPUHP_CPU=",      "CPUHP_PHASE=",    "CPUHP_STATE=",
                                        "CPUHP_EXTERNAL=", "CPUHP_ROLLBACK=", "CPUHP_SECTION="};
#define HOOK_NVARS (sizeof(hook_vars) / sizeof(hook_vars[0]))

static bool is_hook_var(const char *entry)
{
	for (size_t i = 0; i < HOOK_NVARS; i++)
		if (!strncmp(entry, hook_vars[i], strlen(hook_vars[i])))
			return true;
	return false;
}

/*
 * Start `sh -c @cmd sh CPU` for @call: posix_spawn() (a vfork, not a copy of
 * our memory), in a process group of its own so that a deadline kills what
 * it started too, with the signals we catch or ignore back at their
 * defaults and none blocked.  Return: 0 with *@pid, or a positive errno.
 */
static int spawn_hook(const struct hook *h, const char *cmd,
                      const struct cpuhp_client_state_call *call, const char *cpu, pid_t *pid)
{
	char vals[HOOK_NVARS][96], **env;
	char *argv[] = {"sh", "-c", (char *)cmd, "sh", (char *)cpu, NULL};
	const char *v[HOOK_NVARS] = {cpu,
	                             call->teardown ? "teardown" : "startup",
	                             h->name,
	                             call->external ? "1" : "0",
	                             call->rollback ? "1" : "0",
	                             call->prepare ? "prepare" : "online"};
	posix_spawnattr_t attr;
	sigset_t none, dfl;
	size_t n = 0, k = 0;
	int err;

	while (environ[n])
		n++;
	env = calloc(n + HOOK_NVARS + 1, sizeof(*env));
	if (!env)
		return ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!is_hook_var(environ[i]))
			env[k++] = environ[i];
	for (size_t i = 0; i < HOOK_NVARS; i++) {
		snprintf(vals[i], sizeof(vals[i]), "%s%s", hook_vars[i], v[i]);
		env[k++] = vals[i];
	}
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	sigaddset(&dfl, SIGPIPE);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF |
	                                    POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigdefault(&attr, &dfl);
	posix_spawnattr_setsigmask(&attr, &none);
	/* The hook's pipe and sockets are close-on-exec: sh gets none of them. */
	err = posix_spawn(pid, "/bin/sh", NULL, &attr, argv, env);
	posix_spawnattr_destroy(&attr);
	free(env);
	return err;
}

/* Run @cmd for @call.  Return: 0 on exit status 0, else a negative errno with call->message. */
static int run_hook(const struct hook *h, const char *cmd, struct cpuhp_client_state_call *call)
{
	const char *phase = call->teardown ? "teardown" : "startup";
	char cpu[16];
	uint64_t t0 = now_us();
	pid_t pid;
	int st, ret = 0;

	if (!cmd) {
		printf("%s CPU %u: no command, ok\n", phase, call->cpu);
		fflush(stdout);
		return 0;
	}
	snprintf(cpu, sizeof(cpu), "%u", call->cpu);
	fflush(stdout);
	st = spawn_hook(h, cmd, call, cpu, &pid);
	if (st) {
		snprintf(call->message, sizeof(call->message),
		         "cpuhpctl state %s: cannot run /bin/sh: %s", h->name, strerror(st));
		return -st;
	}
	/*
	 * cpuhpd gives up at the deadline D and sends this state's rollback,
	 * which queues behind this call and has its own deadline, ending near
	 * 2D.  The kill comes halfway between: late enough that cpuhpd has
	 * given up (it sees a late end, never a refusal in time), early enough
	 * that the rollback runs with half a deadline to spare (a kill at 2D
	 * would race the rollback's own deadline).
	 */
	st = wait_child(pid, h->deadline_ms + h->deadline_ms / 2);
	if (st == -ETIMEDOUT) {
		snprintf(call->message, sizeof(call->message),
		         "%s command still running at 1.5 times the deadline of %u ms: killed",
		         phase, h->deadline_ms);
		ret = -ETIMEDOUT;
	} else if (st < 0) {
		snprintf(call->message, sizeof(call->message), "%s command: cannot wait for it",
		         phase);
		ret = st;
	} else if (WIFSIGNALED(st)) {
		snprintf(call->message, sizeof(call->message), "%s command killed by signal %d",
		         phase, WTERMSIG(st));
		ret = -EINTR;
	} else if (WEXITSTATUS(st) != 0) {
		snprintf(call->message, sizeof(call->message), "%s command exited with status %d",
		         phase, WEXITSTATUS(st));
		ret = -EIO;
	}
	printf("%s%s CPU %u%s: %s (%.1f ms)\n", call->rollback ? "rollback " : "", phase, call->cpu,
	       call->external ? " (external)" : "", ret ? call->message : "ok",
	       (double)(now_us() - t0) / 1000);
	fflush(stdout);
	return ret;
}

static int hook_startup(struct cpuhp_client_state_call *call, void *arg)
{
	const struct hook *h = arg;

	return run_hook(h, h->startup, call);
}

static int hook_teardown(struct cpuhp_client_state_call *call, void *arg)
{
	const struct hook *h = arg;

	return run_hook(h, h->teardown, call);
}

/* --priority's number.  Return: 0, or the exit code after a usage error. */
static int parse_priority(const struct cpuhpctl *ctl, const char *arg, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(arg, &end, 10);
	if (errno || end == arg || *end || *out < INT32_MIN || *out > INT32_MAX)
		return cpuhpctl_usage_error(ctl, "state", true,
		                            "--priority must be a whole number from %ld to %ld, "
		                            "not '%s'",
		                            (long)INT32_MIN, (long)INT32_MAX, arg);
	return 0;
}

int cpuhpctl_state(struct cpuhpctl *ctl, int argc, char **argv)
{
	/* -t and -n, this command's letters before -t meant --timeout everywhere, still work. */
	static const struct option opts[] = {{"priority", required_argument, NULL, 'p'},
	                                     {"deadline", required_argument, NULL, 'd'},
	                                     {"nocalls", no_argument, NULL, 'N'},
	                                     {"teardown", required_argument, NULL, 'T'},
	                                     {"startup", required_argument, NULL, 'u'},
	                                     {"json", no_argument, NULL, 'J'},
	                                     {"section", required_argument, NULL, 'S'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {0}};
	struct hook h = {.deadline_ms = 5000};
	struct cpuhp_client_state *s = NULL;
	struct sigaction sa = {.sa_handler = hook_on_signal};
	struct cpuhp_client *c;
	unsigned flags = 0;
	long prio = 0;
	int opt, ret, err;

	while ((opt = cpuhpctl_getopt(ctl, argc, argv, ":p:d:NnT:t:u:Jjh", opts, argv[0])) != -1) {
		switch (opt) {
		case 'p':
			if ((ret = parse_priority(ctl, optarg, &prio)))
				return ret;
			break;
		case 'd':
			if ((ret = cpuhpctl_parse_duration(ctl, "state", "--deadline", optarg, 1,
			                                   600000, &h.deadline_ms)))
				return ret;
			break;
		case 'N':
		case 'n':
			flags |= CPUHP_CLIENT_STATE_NOCALLS;
			break;
		case 'T':
		case 't':
			h.teardown = optarg;
			break;
		case 'u':
			h.startup = optarg;
			break;
		case 'S':
			if (!strcmp(optarg, "prepare"))
				flags |= CPUHP_CLIENT_STATE_PREPARE;
			else if (!strcmp(optarg, "online"))
				flags &= ~CPUHP_CLIENT_STATE_PREPARE;
			else
				return cpuhpctl_usage_error(
				    ctl, "state", true, "--section is prepare or online, not '%s'",
				    optarg);
			break;
		case 'h':
			state_usage(stdout);
			return CPUHPCTL_EXIT_OK;
		default:
			return CPUHPCTL_EXIT_USAGE;
		}
	}
	if (ctl->json)
		return cpuhpctl_usage_error(ctl, "state", false,
		                            "--json: state prints one line per call as it runs; "
		                            "'cpuhpctl --json states' lists the states");
	if (optind >= argc)
		return cpuhpctl_usage_error(ctl, "state", true, "which state? Give it a NAME");
	if (argc - optind > 1)
		return cpuhpctl_usage_error(ctl, "state", true,
		                            "one NAME only, not '%s'; quote the commands of "
		                            "--teardown and --startup",
		                            argv[optind + 1]);
	h.name = argv[optind];
	if (!h.teardown && !h.startup)
		return cpuhpctl_usage_error(ctl, "state", true,
		                            "give --teardown CMD, --startup CMD or both");
	if (pipe2(hook_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		fprintf(stderr, "cpuhpctl state: pipe: %s\n", strerror(errno));
		return CPUHPCTL_EXIT_FAILED;
	}
	/* Before registering: a signal during the startups removes the state after them. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	ret = cpuhpctl_connect(ctl, &c);
	if (ret)
		return ret;
	err = cpuhp_client_state_register(c, h.name, (int)prio, h.deadline_ms, flags, hook_startup,
	                                  hook_teardown, &h, &s);
	if (err < 0) {
		char what[128];

		snprintf(what, sizeof(what), "state %s", h.name);
		ret = cpuhpctl_fail(ctl, c, err, what);
		cpuhp_client_close(c);
		return ret;
	}
	printf("state %s registered (id %" PRIu64 "); SIGINT or SIGTERM removes it\n",
	       cpuhpctl_safe(h.name), cpuhp_client_state_id(s));
	fflush(stdout);
	while (!hook_signal) {
		struct pollfd p[2] = {{.fd = cpuhp_client_state_fd(s), .events = POLLIN},
		                      {.fd = hook_pipe[0], .events = POLLIN}};

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "cpuhpctl state: poll: %s\n", strerror(errno));
			ret = CPUHPCTL_EXIT_FAILED;
			break;
		}
		if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		err = cpuhp_client_state_dispatch(s);
		if (err < 0) {
			fprintf(stderr,
			        "cpuhpctl state: lost cpuhpd (%s); the state %s is gone with it\n",
			        strerror(-err), cpuhpctl_safe(h.name));
			cpuhp_client_state_remove(s, true);
			cpuhp_client_close(c);
			return CPUHPCTL_EXIT_UNREACHABLE;
		}
	}
	err = cpuhp_client_state_remove(s, (flags & CPUHP_CLIENT_STATE_NOCALLS) != 0);
	if (err < 0)
		fprintf(stderr, "cpuhpctl state: removing %s: %s\n", cpuhpctl_safe(h.name),
		        strerror(-err));
	else
		printf("state %s removed\n", cpuhpctl_safe(h.name));
	cpuhp_client_close(c);
	return ret ? ret : err < 0 ? CPUHPCTL_EXIT_FAILED : CPUHPCTL_EXIT_OK;
}
