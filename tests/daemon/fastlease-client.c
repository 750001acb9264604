/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fastlease-client: libcpuhp-client driven line by line, for the fast-lease
 * tests.  Handles are named, and so are threads, each bound to one handle
 * and running the lease calls given to it in order, so that a test holds
 * leases in several threads and processes and waits for each result
 * without sleeping.  Every command prints exactly one JSON line.
 *
 * Commands:
 *   connect H               connect handle H; says whether it has the fast path
 *                           (asked for here, as a first lease would)
 *   connectdelay H MS       the same, its leases delay leases of MS ms
 *                           (cpuhp_client_set_lease_delay() first; says the delay got)
 *   thread T H              start thread T on handle H
 *   acquire T MS            T calls cpuhp_client_lease_acquire(H, MS); prints
 *                           {"queued":true}; the result comes with "wait T"
 *   release T [ID]          T releases ID (default: its latest lease not yet
 *                           released), also queued
 *   wait T                  T's oldest result not yet printed (waits for it)
 *   status H                cpuhp_client_status(H)
 *   badframe H              write a zero-length frame on H's socket, which the
 *                           daemon answers by closing the connection (so a test
 *                           can make the daemon drop a live client)
 *   forklease H [ID]        a child of fork() takes a lease on the inherited
 *                           handle H, releases ID (the parent's) if given, and
 *                           asks for status (the parent waits for it)
 *   event H [MS]            wait up to MS ms (default 0) for H's socket to be
 *                           readable, then cpuhp_client_next_event(H, 0): its type
 *                           and what the notices say (hotplug_id, reason, fast, count)
 *   forkstay H              a child of fork() that keeps the inherited handle H
 *                           and blocks reading stdin; prints its pid
 *   close H                 cpuhp_client_close(H) (its threads must be idle)
 *   pid                     this process's pid
 *
 * Usage: fastlease-client SOCKET
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cpuhp/client.h>

#define MAX_NAMED  64
#define MAX_LEASES 256

struct handle {
	char name[32];
	struct cpuhp_client *c;
};

struct op {
	struct op *next;
	bool acquire;
	unsigned ms;
	uint64_t id; /* release: 0 means the thread's latest */
};

struct result {
	struct result *next;
	char json[512];
};

struct worker {
	char name[32];
	struct handle *h;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct op *ops, **ops_tail;
	struct result *results, **results_tail;
	uint64_t leases[MAX_LEASES]; /* the thread's own */
	unsigned nleases;
};

static const char *sock_path;
static struct handle handles[MAX_NAMED];
static struct worker workers[MAX_NAMED];
static unsigned nhandles, nworkers;

static struct handle *find_handle(const char *name)
{
	for (unsigned i = 0; i < nhandles; i++)
		if (!strcmp(handles[i].name, name))
			return &handles[i];
	return NULL;
}

static struct worker *find_worker(const char *name)
{
	for (unsigned i = 0; i < nworkers; i++)
		if (!strcmp(workers[i].name, name))
			return &workers[i];
	return NULL;
}

static void put_result(struct worker *w, struct result *r)
{
	pthread_mutex_lock(&w->lock);
	r->next = NULL;
	*w->results_tail = r;
	w->results_tail = &r->next;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static void run_op(struct worker *w, const struct op *op, struct result *r)
{
	struct cpuhp_client *c = w->h->c;
	uint64_t id = op->id;
	int ret;

	if (op->acquire) {
		ret = cpuhp_client_lease_acquire(c, op->ms, &id);
		if (ret == 0 && w->nleases < MAX_LEASES)
			w->leases[w->nleases++] = id;
		snprintf(r->json, sizeof(r->json),
		         "{\"op\":\"acquire\",\"ret\":%d,\"lease_id\":%" PRIu64
		         ",\"fast\":%s,\"message\":\"%s\"}",
		         ret, ret ? 0 : id,
		         ret == 0 && (id & CPUHP_CLIENT_FAST_LEASE) ? "true" : "false",
		         /* -ECANCELED: the handle was closed under the call, and is freed. */
		         ret && ret != -ECANCELED ? cpuhp_client_last_message(c) : "");
		return;
	}
	if (!id && w->nleases)
		id = w->leases[--w->nleases];
	ret = cpuhp_client_lease_release(c, id);
	snprintf(r->json, sizeof(r->json),
	         "{\"op\":\"release\",\"ret\":%d,\"lease_id\":%" PRIu64 ",\"message\":\"%s\"}", ret,
	         id, ret ? cpuhp_client_last_message(c) : "");
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		struct result *r;
		struct op *op;

		pthread_mutex_lock(&w->lock);
		while (!w->ops)
			pthread_cond_wait(&w->cond, &w->lock);
		op = w->ops;
		w->ops = op->next;
		if (!w->ops)
			w->ops_tail = &w->ops;
		pthread_mutex_unlock(&w->lock);
		r = calloc(1, sizeof(*r));
		if (!r)
			abort();
		run_op(w, op, r);
		free(op);
		put_result(w, r);
	}
	return NULL;
}

static void queue_op(struct worker *w, bool acquire, unsigned ms, uint64_t id)
{
	struct op *op = calloc(1, sizeof(*op));

	if (!op)
		abort();
	op->acquire = acquire;
	op->ms = ms;
	op->id = id;
	pthread_mutex_lock(&w->lock);
	*w->ops_tail = op;
	w->ops_tail = &op->next;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	printf("{\"queued\":true}\n");
}

static void wait_result(struct worker *w)
{
	struct result *r;

	pthread_mutex_lock(&w->lock);
	while (!w->results)
		pthread_cond_wait(&w->cond, &w->lock);
	r = w->results;
	w->results = r->next;
	if (!w->results)
		w->results_tail = &w->results;
	pthread_mutex_unlock(&w->lock);
	printf("%s\n", r->json);
	free(r);
}

static void print_status(struct handle *h)
{
	struct cpuhp_client_status *st = malloc(sizeof(*st));
	int ret;

	if (!st)
		abort();
	ret = cpuhp_client_status(h->c, st);
	if (ret) {
		printf("{\"ret\":%d,\"message\":\"%s\"}\n", ret, cpuhp_client_last_message(h->c));
	} else {
		printf("{\"ret\":0,\"leases_held\":%u,\"fast_leases_held\":%u,\"fast_holders\":%u,"
		       "\"fast_connections\":%u,\"fast_path\":\"%s\",\"writer\":%d,"
		       "\"pending_leases\":%u,\"pending_hotplugs\":%u}\n",
		       st->leases_held, st->fast_leases_held, st->fast_holders,
		       st->fast_connections, st->fast_path, (int)st->writer, st->pending_leases,
		       st->pending_hotplugs);
	}
	free(st);
}

struct fork_report {
	int acquire, fast, release, status, fd;
	char message[CPUHP_CLIENT_MESSAGE_MAX];
};

/* The child reports through a pipe; a hang shows as the test's timeout. */
static void fork_lease(struct handle *h, uint64_t parent_id)
{
	struct fork_report r = {.acquire = -EINVAL};
	int p[2];
	pid_t pid;

	if (pipe(p))
		abort();
	pid = fork();
	if (pid == 0) {
		struct cpuhp_client_status st;
		uint64_t id = 0;

		r.acquire = cpuhp_client_lease_acquire(h->c, 0, &id);
		r.fast = (id & CPUHP_CLIENT_FAST_LEASE) != 0;
		snprintf(r.message, sizeof(r.message), "%s", cpuhp_client_last_message(h->c));
		if (r.acquire == 0)
			r.release = cpuhp_client_lease_release(h->c, id);
		else if (parent_id)
			r.release = cpuhp_client_lease_release(h->c, parent_id);
		r.status = cpuhp_client_status(h->c, &st);
		r.fd = cpuhp_client_fd(h->c);
		/* Frees the handle's memory only: nothing of the parent's is touched. */
		cpuhp_client_close(h->c);
		_exit(write(p[1], &r, sizeof(r)) == sizeof(r) ? 0 : 1);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &r, sizeof(r)) != sizeof(r))
		r.acquire = -EPIPE;
	close(p[0]);
	waitpid(pid, NULL, 0);
	printf("{\"acquire\":%d,\"fast\":%s,\"release\":%d,\"status\":%d,\"fd\":%d,"
	       "\"message\":\"%s\"}\n",
	       r.acquire, r.fast ? "true" : "false", r.release, r.status, r.fd, r.message);
}

/*
 * Wait up to @ms for H's socket to be readable (without reading it), then
 * take one event with a timeout of 0, as an event loop would.
 */
static void next_event(struct handle *h, const char *ms)
{
	static struct cpuhp_client_event ev;
	struct pollfd p = {.fd = cpuhp_client_fd(h->c), .events = POLLIN};
	int readable = poll(&p, 1, ms ? atoi(ms) : 0);
	int ret = cpuhp_client_next_event(h->c, 0, &ev);

	if (ret)
		memset(&ev, 0, sizeof(ev));
	printf("{\"readable\":%s,\"ret\":%d,\"type\":%d,\"leases\":%u,\"hotplug_id\":%" PRIu64
	       ",\"reason\":%d,\"fast\":%s,\"count\":%u,\"delay_ms\":%u,\"force\":%s,"
	       "\"message\":\"%s\"}\n",
	       readable > 0 ? "true" : "false", ret, (int)ev.type, ev.leases, ev.hotplug_id,
	       (int)ev.revoke_reason, ev.fast ? "true" : "false", ev.count, ev.delay_ms,
	       ev.force ? "true" : "false", ret ? cpuhp_client_last_message(h->c) : "");
}

/* A child that lives on with the inherited handle until stdin has a line or ends. */
static void fork_stay(struct handle *h)
{
	pid_t pid = fork();

	if (pid == 0) {
		char c;

		(void)h;
		(void)!read(0, &c, 1);
		_exit(0);
	}
	printf("{\"child\":%d}\n", (int)pid);
}

static void command(char *line)
{
	char *cmd = strtok(line, " \n"), *a = strtok(NULL, " \n"), *b = strtok(NULL, " \n");
	struct handle *h;
	struct worker *w;

	if (!cmd) {
		printf("{\"error\":\"empty command\"}\n");
	} else if (!strcmp(cmd, "pid")) {
		printf("{\"pid\":%d}\n", (int)getpid());
	} else if ((!strcmp(cmd, "connect") || (!strcmp(cmd, "connectdelay") && b)) && a &&
	           nhandles < MAX_NAMED) {
		unsigned granted = 0;
		int ret, fast = 0;

		h = &handles[nhandles];
		snprintf(h->name, sizeof(h->name), "%s", a);
		ret = cpuhp_client_connect(sock_path, &h->c);
		if (ret == 0 && b)
			ret = cpuhp_client_set_lease_delay(h->c, (unsigned)strtoul(b, NULL, 10),
			                                   &granted);
		if (ret == 0)
			fast = cpuhp_client_fast_path(h->c);
		if (ret == 0 && fast >= 0)
			nhandles++;
		printf("{\"ret\":%d,\"fast\":%s,\"delay_ms\":%u}\n",
		       ret        ? ret
		       : fast < 0 ? fast
		                  : 0,
		       fast > 0 ? "true" : "false", granted);
	} else if (!strcmp(cmd, "thread") && a && b && (h = find_handle(b)) &&
	           nworkers < MAX_NAMED) {
		w = &workers[nworkers++];
		snprintf(w->name, sizeof(w->name), "%s", a);
		w->h = h;
		pthread_mutex_init(&w->lock, NULL);
		pthread_cond_init(&w->cond, NULL);
		w->ops_tail = &w->ops;
		w->results_tail = &w->results;
		if (pthread_create(&w->thread, NULL, worker_main, w))
			abort();
		printf("{\"ok\":true}\n");
	} else if (!strcmp(cmd, "acquire") && a && b && (w = find_worker(a))) {
		queue_op(w, true, (unsigned)strtoul(b, NULL, 10), 0);
	} else if (!strcmp(cmd, "release") && a && (w = find_worker(a))) {
		queue_op(w, false, 0, b ? strtoull(b, NULL, 10) : 0);
	} else if (!strcmp(cmd, "wait") && a && (w = find_worker(a))) {
		wait_result(w);
	} else if (!strcmp(cmd, "status") && a && (h = find_handle(a))) {
		print_status(h);
	} else if (!strcmp(cmd, "badframe") && a && (h = find_handle(a))) {
		static const char zero[4];

		printf("{\"written\":%zd}\n", write(cpuhp_client_fd(h->c), zero, sizeof(zero)));
	} else if (!strcmp(cmd, "forklease") && a && (h = find_handle(a))) {
		fork_lease(h, b ? strtoull(b, NULL, 10) : 0);
	} else if (!strcmp(cmd, "event") && a && (h = find_handle(a))) {
		next_event(h, b);
	} else if (!strcmp(cmd, "forkstay") && a && (h = find_handle(a))) {
		fork_stay(h);
	} else if (!strcmp(cmd, "close") && a && (h = find_handle(a))) {
		cpuhp_client_close(h->c);
		h->c = NULL;
		h->name[0] = '\0';
		printf("{\"ok\":true}\n");
	} else {
		printf("{\"error\":\"bad command\"}\n");
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char line[256];

	if (argc != 2 || !strcmp(argv[1], "--help")) {
		printf("Usage: fastlease-client SOCKET\n"
		       "Drive libcpuhp-client's leases from named threads, one command per line "
		       "(see the source's header).\n");
		return argc == 2 ? 0 : 2;
	}
	sock_path = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin))
		command(line);
	/* EOF: exit with whatever is held; the daemon ends it with the connections. */
	return 0;
}
