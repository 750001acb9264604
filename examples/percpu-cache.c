/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * percpu-cache: per-CPU object caches (as tcmalloc's per-CPU slabs are)
 * kept right across CPU hotplug by one cpuhpd hotplug state in the PREPARE
 * section with one instance per cache (daemon/cpuhpd/README.md, "Hotplug
 * states"; doc/design.md, "Hotplug states: sections and instances").
 *
 * A per-CPU cache is indexed by the CPU a thread runs on, with no check on
 * the fast path: the slab of a CPU must exist before any thread can run
 * there.  A startup in the ONLINE section would come after the write that
 * brings the CPU, when threads may already run on it; in the PREPARE
 * section it comes before: the slab is sized and filled from the central
 * list while the CPU is still offline.  Its teardown in the PREPARE section
 * (the kernel's DEAD) comes after the CPU is gone, so no thread can be
 * inside that CPU's slab while it is drained back into the central list.
 * Such a teardown cannot fail (the CPU is gone already): this one never
 * does.
 *
 * One state, one connection, any number of caches: each cache is an
 * instance (--cache NAME:OBJECTS, repeatable), added after the
 * registration, which runs its startup for every CPU the state is up on.
 * Callbacks run on this program's main thread, from its poll loop, so the
 * caches need no lock here.  At the end the instances are removed (every
 * slab drained) and the program checks that every object is back in its
 * central list.
 *
 * Build: cc percpu-cache.c $(pkg-config --cflags --libs libcpuhp-client)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* signalfd */
#endif
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cpuhp/client.h>

#define MAX_CACHES 8

struct slab {
	unsigned cap;  /* objects it can hold */
	unsigned fill; /* objects it holds, taken from the central list */
};

struct cache {
	char name[32];
	unsigned objects;  /* in all */
	unsigned central;  /* in the central list */
	unsigned slab_cap; /* per CPU */
	struct slab *slab[CPUHP_CPUSET_MAX];
	struct cpuhp_client_instance *inst;
};

static struct cache caches[MAX_CACHES];
static unsigned ncaches;
/* The caches are being removed: teardowns now are the removal's, on live CPUs no thread uses. */
static bool removing;

/* PREPARE startup: @call->cpu does not run yet; give it a slab, half full. */
static int startup(struct cpuhp_client_state_call *call, void *arg)
{
	struct cache *k = call->instance;
	struct slab *sl;

	(void)arg;
	if (k->slab[call->cpu])
		return 0;
	sl = calloc(1, sizeof(*sl));
	if (!sl) {
		snprintf(call->message, sizeof(call->message),
		         "no memory for cache %s's slab of CPU %u", k->name, call->cpu);
		return -ENOMEM;
	}
	sl->cap = k->slab_cap;
	sl->fill = k->central < sl->cap / 2 ? k->central : sl->cap / 2;
	k->central -= sl->fill;
	k->slab[call->cpu] = sl;
	printf("percpu-cache: cache %s: CPU %u has a slab of %u, %u filled%s\n", k->name, call->cpu,
	       sl->cap, sl->fill,
	       call->external ? " (after the fact)" : " (before it runs anything)");
	fflush(stdout);
	return 0;
}

/* PREPARE teardown (DEAD): @call->cpu is gone; nothing can be in its slab. */
static int teardown(struct cpuhp_client_state_call *call, void *arg)
{
	struct cache *k = call->instance;
	struct slab *sl = k->slab[call->cpu];

	(void)arg;
	if (!sl)
		return 0;
	k->central += sl->fill;
	printf("percpu-cache: cache %s: drained %u object(s) of CPU %u%s\n", k->name, sl->fill,
	       call->cpu,
	       call->external ? " (after the fact)"
	       : removing     ? " (cache removed)"
	                      : " (after it died)");
	fflush(stdout);
	k->slab[call->cpu] = NULL;
	free(sl);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: percpu-cache [--socket PATH] [--name NAME] [--cache NAME:OBJECTS]...\n"
	        "Keep per-CPU object caches with a cpuhpd hotplug state in the PREPARE\n"
	        "section, one instance per cache: a CPU's slab is sized and filled before the\n"
	        "CPU runs anything, and drained after it died. Runs until end of file on\n"
	        "standard input, SIGINT or SIGTERM; then removes the caches and checks that\n"
	        "every object is back in its central list.\n"
	        "\n"
	        "  -s, --socket PATH           cpuhpd's socket (default: $%s if set, else %s)\n"
	        "  -n, --name NAME             the state's name (default percpu-cache)\n"
	        "  -c, --cache NAME:OBJECTS    a cache (repeatable, up to %d; default small:1024\n"
	        "                              and large:256); each CPU's slab holds 1/16 of it\n"
	        "  -h, --help                  this help\n",
	        CPUHP_CLIENT_SOCKET_ENV, CPUHP_CLIENT_DEFAULT_SOCKET, MAX_CACHES);
}

static int add_cache(const char *spec)
{
	const char *colon = strchr(spec, ':');
	struct cache *k = &caches[ncaches];
	unsigned long n;
	char *end;

	if (ncaches == MAX_CACHES) {
		fprintf(stderr, "percpu-cache: at most %d caches\n", MAX_CACHES);
		return -1;
	}
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(k->name)) {
		fprintf(stderr, "percpu-cache: --cache wants NAME:OBJECTS, not '%s'\n", spec);
		return -1;
	}
	errno = 0;
	n = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || n < 16 || n > 1000000) {
		fprintf(stderr, "percpu-cache: --cache %s: OBJECTS must be 16 to 1000000\n", spec);
		return -1;
	}
	memcpy(k->name, spec, (size_t)(colon - spec));
	k->objects = k->central = (unsigned)n;
	k->slab_cap = (unsigned)n / 16;
	ncaches++;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"name", required_argument, NULL, 'n'},
	    {"cache", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *path = NULL, *name = "percpu-cache";
	struct cpuhp_client_state *s;
	struct cpuhp_client *c;
	sigset_t sigs;
	int opt, err, sfd, ret = 0;
	unsigned i, lost = 0;

	while ((opt = getopt_long(argc, argv, "s:n:c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'n':
			name = optarg;
			break;
		case 'c':
			if (add_cache(optarg))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'percpu-cache --help'.\n");
			return 2;
		}
	}
	if (!ncaches && (add_cache("small:1024") || add_cache("large:256")))
		return 2;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "percpu-cache: %s\n", strerror(errno));
		return 1;
	}
	err = cpuhp_client_connect(path, &c);
	if (err) {
		fprintf(stderr,
		        "percpu-cache: cannot connect to cpuhpd at %s: %s; is it running?\n",
		        path ? path : cpuhp_client_socket_path(), strerror(-err));
		return 1;
	}
	/* A multi state has no calls of its own: those come per instance. */
	err = cpuhp_client_state_register(c, name, 0, 0,
	                                  CPUHP_CLIENT_STATE_PREPARE | CPUHP_CLIENT_STATE_MULTI,
	                                  startup, teardown, NULL, &s);
	if (err) {
		fprintf(stderr, "percpu-cache: cannot register the state %s: %s\n", name,
		        cpuhp_client_last_message(c)[0] ? cpuhp_client_last_message(c)
		                                        : strerror(-err));
		cpuhp_client_close(c);
		return 1;
	}
	for (i = 0; i < ncaches; i++) {
		/* The startups for the CPUs the state is up on run here, on this thread. */
		err = cpuhp_client_state_add_instance(s, caches[i].name, &caches[i], 0,
		                                      &caches[i].inst);
		if (err) {
			fprintf(stderr, "percpu-cache: cannot add cache %s: %s\n", caches[i].name,
			        strerror(-err));
			ret = 1;
			goto out;
		}
	}
	printf("percpu-cache: state %s registered in the PREPARE section; %u cache(s)\n", name,
	       ncaches);
	fflush(stdout);
	for (;;) {
		struct pollfd fds[3] = {{.fd = cpuhp_client_state_fd(s), .events = POLLIN},
		                        {.fd = sfd, .events = POLLIN},
		                        {.fd = STDIN_FILENO, .events = POLLIN}};
		char buf[256];

		if (poll(fds, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (fds[0].revents) {
			err = cpuhp_client_state_dispatch(s);
			if (err < 0) {
				fprintf(stderr, "percpu-cache: lost cpuhpd: %s\n", strerror(-err));
				ret = 1;
				break;
			}
		}
		if (fds[1].revents)
			break;
		if (fds[2].revents && read(STDIN_FILENO, buf, sizeof(buf)) <= 0)
			break;
	}
out:
	/* Newest cache first; each removal drains its slabs here (teardown on every CPU). */
	removing = true;
	for (i = ncaches; i-- > 0;) {
		if (!caches[i].inst)
			continue;
		err = cpuhp_client_instance_remove(caches[i].inst, ret != 0);
		if (err)
			ret = 1;
	}
	cpuhp_client_state_remove(s, ret != 0);
	cpuhp_client_close(c);
	for (i = 0; i < ncaches; i++) {
		struct cache *k = &caches[i];

		/* cpuhpd gone or a removal failed: drain what is left ourselves. */
		for (unsigned cpu = 0; cpu < CPUHP_CPUSET_MAX; cpu++) {
			struct cpuhp_client_state_call call = {
			    .cpu = cpu, .teardown = true, .instance = k};

			teardown(&call, NULL);
		}
		lost += k->objects - k->central;
		printf("percpu-cache: cache %s: %u of %u object(s) in the central list\n", k->name,
		       k->central, k->objects);
	}
	printf("percpu-cache: done; %s\n", lost ? "objects lost" : "every object is back");
	return ret || lost ? 1 : 0;
}
