/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Calls that may wait: a hotplug behind leases (online, offline, smt), a
 * lease or a freeze behind hotplugs (hold, freeze).  The call runs on a
 * thread of its own, so that the main thread stays free to say what it
 * waits for and to hear Ctrl-C:
 *
 * - On a terminal (stderr), and not with --json, after a second of waiting
 *   one line, rewritten in place, names what is in the way, from a
 *   ListLeases on a second connection: "waiting for 2 leases: pid 4457 (A)
 *   'sizing pools', ...".  It is erased before anything else is printed.
 * - SIGINT closes the call's handle: cpuhpd drops a request that is not
 *   running yet, and one that runs goes on to its end (conn_gone in the
 *   daemon).  cpuhpctl_wait_settle() then waits until the daemon lists no
 *   request of ours, so that what the caller reports is what is true.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"

/* The line shows after this long, and what is in the way is asked this often. */
#define SHOW_AFTER_MS 1000
#define TICK_MS       200
#define REFRESH_MS    500
/* While settling after Ctrl-C: how often the daemon is asked whether our request is gone. */
#define SETTLE_POLL_MS 50

static int sigint_pipe[2] = {-1, -1};

static void on_sigint(int sig)
{
	int saved = errno;
	char b = (char)sig;

	if (write(sigint_pipe[1], &b, 1) < 0) {
		/* Full: a Ctrl-C is noted already. */
	}
	errno = saved;
}

uint64_t cpuhpctl_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *worker(void *arg)
{
	struct cpuhpctl_wait *w = arg;
	char b = 0;

	w->result = w->call(w->c, w->arg);
	/* Then the main thread joins: the join orders the result before its read. */
	if (write(w->done_pipe[1], &b, 1) < 0) {
		/* Cannot fail: an empty pipe, one byte. */
	}
	return NULL;
}

/* --- the line ------------------------------------------------------------------- */

/* Columns of @s: one per character (UTF-8 lead byte), what escaping left being that simple. */
static size_t columns(const char *s)
{
	size_t cols = 0;

	for (; *s; s++)
		cols += ((unsigned char)*s & 0xc0) != 0x80;
	return cols;
}

/* The bytes of @s's first @cols characters. */
static size_t prefix_bytes(const char *s, size_t cols)
{
	size_t i = 0;

	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && cols-- == 0)
			break;
	return i;
}

/*
 * Show @head then @tail on stderr in place of what was there, as one line
 * shorter than the terminal (a wrapped line would not go back with \r):
 * what does not fit is cut from the end of @head, which names the
 * holders; @tail, the time and the Ctrl-C hint, stays.
 */
static void line_show(const char *head, const char *tail)
{
	size_t width = 80, room, need = columns(head) + columns(tail);
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		width = ws.ws_col;
	room = width - 1 > columns(tail) + 3 ? width - 1 - columns(tail) - 3 : 0;
	if (need < width)
		fprintf(stderr, "\r%s%s\033[K", head, tail);
	else
		fprintf(stderr, "\r%.*s...%s\033[K", (int)prefix_bytes(head, room), head, tail);
	fflush(stderr);
}

static void line_erase(bool *shown)
{
	if (*shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		*shown = false;
	}
}

/* "pid 4457 (A) 'sizing pools'" for a lease row, "3 leases of pid ..." for several. */
static void put_holder(FILE *f, const struct cpuhp_client_lease_info *li)
{
	if (li->count > 1)
		fprintf(f, "%u of ", li->count);
	fprintf(f, "pid %u (%s)", li->pid, cpuhpctl_safe(li->who[0] ? li->who : li->comm));
	if (li->why[0])
		fprintf(f, " '%s'", cpuhpctl_safe(li->why));
}

static void put_hotplug(FILE *f, const struct cpuhp_client_hotplug_info *h)
{
	char *cpus = cpuhpctl_format(&h->cpus);

	fprintf(f, "%s %s by pid %u (%s), %s", h->online ? "online" : "offline", cpus ? cpus : "?",
	        h->pid, cpuhpctl_safe(h->comm),
	        h->state == CPUHP_CLIENT_WRITER_RUNNING   ? "running"
	        : h->state == CPUHP_CLIENT_WRITER_WAITING ? "waiting for leases"
	                                                  : "queued");
	free(cpus);
}

/* What a hotplug of ours waits for. */
static void describe_hotplug(FILE *f, const struct cpuhp_client_lease_list *l)
{
	unsigned me = (unsigned)getpid(), n = 0;
	const struct cpuhp_client_hotplug_info *mine = NULL;
	size_t ahead = 0;

	for (size_t i = 0; i < l->n_hotplugs && !mine; i++)
		if (l->hotplugs[i].pid == me)
			mine = &l->hotplugs[i];
		else
			ahead++;
	if (!mine) {
		fprintf(f, "waiting for cpuhpd");
		return;
	}
	if (mine->state == CPUHP_CLIENT_WRITER_RUNNING) {
		fprintf(f, "running (state callbacks may take a while)");
		return;
	}
	if (mine->state == CPUHP_CLIENT_WRITER_IDLE) {
		fprintf(f, "queued behind %zu hotplug%s: ", ahead, ahead == 1 ? "" : "s");
		put_hotplug(f, &l->hotplugs[0]);
		return;
	}
	for (size_t i = 0; i < l->n_leases; i++)
		n += l->leases[i].count;
	fprintf(f, "waiting for %u lease%s", n, n == 1 ? "" : "s");
	for (size_t i = 0; i < l->n_leases; i++) {
		fputs(i ? ", " : ": ", f);
		put_holder(f, &l->leases[i]);
	}
}

/* What a lease or freeze of ours waits for: the hotplugs queued. */
static void describe_hotplugs(FILE *f, const struct cpuhp_client_lease_list *l)
{
	fprintf(f, "waiting for %zu hotplug%s", l->n_hotplugs, l->n_hotplugs == 1 ? "" : "s");
	for (size_t i = 0; i < l->n_hotplugs; i++) {
		fputs(i ? ", " : ": ", f);
		put_hotplug(f, &l->hotplugs[i]);
	}
}

/* The second connection, for ListLeases and Status; NULL if cpuhpd cannot be reached. */
static struct cpuhp_client *observer(struct cpuhpctl_wait *w)
{
	if (!w->obs && !w->obs_failed)
		w->obs_failed = cpuhp_client_connect(w->ctl->socket, &w->obs) < 0;
	return w->obs;
}

static void draw(struct cpuhpctl_wait *w, uint64_t waited_ms)
{
	char t[CPUHPCTL_DURATION_MAX], tail[64], *head = NULL;
	size_t len;
	FILE *f = open_memstream(&head, &len);

	if (!f)
		return;
	fprintf(f, "cpuhpctl %s: ", cpuhpctl_safe(w->what));
	if (!w->list)
		fprintf(f, "waiting");
	else if (w->kind == CPUHPCTL_WAIT_LEASES)
		describe_hotplug(f, w->list);
	else
		describe_hotplugs(f, w->list);
	if (!fclose(f)) {
		snprintf(tail, sizeof(tail), "; %s, Ctrl-C cancels",
		         cpuhpctl_format_duration(t, waited_ms));
		line_show(head, tail);
		w->shown = true;
	}
	free(head);
}

static void refresh(struct cpuhpctl_wait *w)
{
	struct cpuhp_client_lease_list *l;
	struct cpuhp_client *obs = observer(w);

	if (obs && cpuhp_client_list_leases(obs, &l) == 0) {
		cpuhp_client_lease_list_free(w->list);
		w->list = l;
	}
}

/* --- waiting -------------------------------------------------------------------- */

static int sigint_catch(struct sigaction *old)
{
	struct sigaction sa = {.sa_handler = on_sigint};
	char b;

	if (sigint_pipe[0] < 0 && pipe2(sigint_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	/* A Ctrl-C that came with the end of an earlier wait cancels nothing now. */
	while (read(sigint_pipe[0], &b, 1) == 1)
		;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGINT, &sa, old) < 0 ? -errno : 0;
}

int cpuhpctl_wait_run(struct cpuhpctl_wait *w)
{
	bool progress = isatty(STDERR_FILENO) && !w->ctl->json;
	uint64_t start = cpuhpctl_now_ms(), last_list = 0;
	struct sigaction old_int;
	sigset_t block, old_mask;
	pthread_t thread;
	int err;

	w->cancelled = false;
	if (pipe2(w->done_pipe, O_CLOEXEC) < 0)
		return -errno;
	if ((err = sigint_catch(&old_int)) < 0)
		goto out_pipe;
	/* The worker never takes SIGINT: its handler's write wakes this thread's poll. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	pthread_sigmask(SIG_BLOCK, &block, &old_mask);
	err = -pthread_create(&thread, NULL, worker, w);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	if (err)
		goto out_sig;
	for (;;) {
		struct pollfd p[2] = {{.fd = w->done_pipe[0], .events = POLLIN},
		                      {.fd = sigint_pipe[0], .events = POLLIN}};
		uint64_t now = cpuhpctl_now_ms();
		int n = poll(p, 2, progress ? TICK_MS : -1);

		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && p[0].revents)
			break;
		if (n > 0 && p[1].revents) {
			char b;

			while (read(sigint_pipe[0], &b, 1) == 1)
				;
			/* Wakes the worker with -ECANCELED; cpuhpd sees the connection end. */
			cpuhp_client_close(w->c);
			w->c = NULL;
			w->cancelled = true;
			break;
		}
		if (!progress || now - start < SHOW_AFTER_MS)
			continue;
		if (now - last_list >= REFRESH_MS) {
			refresh(w);
			last_list = cpuhpctl_now_ms();
		}
		draw(w, cpuhpctl_now_ms() - start);
	}
	pthread_join(thread, NULL);
	line_erase(&w->shown);
	err = 0;
out_sig:
	sigaction(SIGINT, &old_int, NULL);
out_pipe:
	close(w->done_pipe[0]);
	close(w->done_pipe[1]);
	return err;
}

int cpuhpctl_wait_settle(struct cpuhpctl_wait *w, struct cpuhp_client_status *after)
{
	unsigned me = (unsigned)getpid();
	struct sigaction old_int;
	bool told = false;
	int err = -EIO;

	if (!observer(w))
		return -ECONNREFUSED;
	if (sigint_catch(&old_int) < 0)
		return -EIO;
	for (;;) {
		struct pollfd p = {.fd = sigint_pipe[0], .events = POLLIN};
		struct cpuhp_client_lease_list *l;
		bool ours = false, running = false;

		if ((err = cpuhp_client_list_leases(w->obs, &l)) < 0)
			break;
		for (size_t i = 0; i < l->n_hotplugs; i++) {
			ours |= l->hotplugs[i].pid == me;
			running |= l->hotplugs[i].pid == me &&
			           l->hotplugs[i].state == CPUHP_CLIENT_WRITER_RUNNING;
		}
		cpuhp_client_lease_list_free(l);
		if (!ours) {
			err = cpuhp_client_status(w->obs, after);
			break;
		}
		/* Still waiting: cpuhpd has not read the end of our connection yet. */
		if (!told && running)
			fprintf(stderr,
			        "cpuhpctl %s: cancelling: the hotplug had started and runs to its "
			        "end; waiting for it (Ctrl-C again: stop waiting)\n",
			        cpuhpctl_safe(w->what));
		told |= running;
		/* Nothing tells when a running hotplug ends but asking again. */
		if (poll(&p, 1, SETTLE_POLL_MS) > 0) {
			err = -EINTR;
			break;
		}
	}
	sigaction(SIGINT, &old_int, NULL);
	return err;
}

void cpuhpctl_wait_end(struct cpuhpctl_wait *w)
{
	cpuhp_client_lease_list_free(w->list);
	w->list = NULL;
	cpuhp_client_close(w->obs);
	w->obs = NULL;
}
