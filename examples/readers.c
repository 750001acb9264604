/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * readers: the in-process hotplug lock at work.
 *
 * Reader threads walk a set of "online" CPUs over and over, each walk inside
 * cpuhp_get_online_cpus()/cpuhp_put_online_cpus().  A writer thread takes
 * a simulated CPU offline and back, changing that set only between
 * cpuhp_hotplug_begin() and cpuhp_hotplug_done().  The set lives in plain
 * memory: no atomics, no mutex; the hotplug lock alone keeps every walk from
 * seeing it change half-way.  Each reader checks that, and the program
 * prints a short timeline and fails if any walk saw a change.
 *
 * The writer waits (on a condition variable, outside the hotplug section)
 * until every reader has walked the new set before it flips the CPU again,
 * so each reader reports each state once and the timeline is the same on
 * every run, apart from the times and how the threads interleave.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuhp/cpuhp.h>

#define MAX_READERS 16

/* Written only inside a hotplug section, read only inside online_cpus sections. */
static struct cpuhp_cpuset online;
static unsigned generation; /* odd while the writer is changing @online */

/* Progress; protected by @lock, signalled on @progress. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t progress = PTHREAD_COND_INITIALIZER;
static unsigned walked[MAX_READERS]; /* the last generation each reader walked; */
#define NOT_YET (~0u)                /* NOT_YET before its first walk */
static bool stop;                    /* also read without @lock by the readers' loops */

static struct timespec t0;

struct reader {
	pthread_t thread;
	unsigned id;
	unsigned long walks;
	unsigned long torn; /* walks that saw the set change under them */
};

/* A timeline line; call with @lock held so that lines do not mix. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	struct timespec now;
	va_list ap;

	clock_gettime(CLOCK_MONOTONIC, &now);
	printf("[%8.3f ms] ",
	       (double)(now.tv_sec - t0.tv_sec) * 1e3 + (double)(now.tv_nsec - t0.tv_nsec) / 1e6);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	char list[CPUHP_CPUSET_LIST_MAX];
	unsigned last = NOT_YET; /* the generation last reported */

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned gen, n = 0;
		bool torn;

		cpuhp_get_online_cpus();
		gen = generation;
		for (int cpu = cpuhp_cpuset_next(&online, -1); cpu >= 0;
		     cpu = cpuhp_cpuset_next(&online, cpu))
			n++;
		if (gen != last)
			cpuhp_cpuset_format(&online, list, sizeof(list));
		/* With the lock broken, a writer could be half-way (odd), or finish meanwhile. */
		torn = (gen & 1) || generation != gen || cpuhp_cpuset_count(&online) != n;
		cpuhp_put_online_cpus();

		r->walks++;
		r->torn += torn;
		if (gen != last || torn) {
			last = gen;
			pthread_mutex_lock(&lock);
			walked[r->id] = gen;
			say("reader %u: walked online CPUs %s (%u CPUs)%s", r->id, list, n,
			    torn ? "  <-- CHANGED DURING THE WALK" : "");
			pthread_cond_broadcast(&progress);
			pthread_mutex_unlock(&lock);
		}
	}
	return NULL;
}

static void wait_all_walked(unsigned nreaders, unsigned gen)
{
	pthread_mutex_lock(&lock);
	for (;;) {
		unsigned done = 0;

		for (unsigned i = 0; i < nreaders; i++)
			done += walked[i] == gen;
		if (done == nreaders)
			break;
		pthread_cond_wait(&progress, &lock);
	}
	pthread_mutex_unlock(&lock);
}

static void writer_run(unsigned nreaders, unsigned flips, unsigned cpu)
{
	char list[CPUHP_CPUSET_LIST_MAX];

	wait_all_walked(nreaders, 0);
	for (unsigned i = 0; i < flips; i++) {
		struct timespec a, b;
		bool going_offline = cpuhp_cpuset_has(&online, cpu);

		clock_gettime(CLOCK_MONOTONIC, &a);
		cpuhp_hotplug_begin();
		clock_gettime(CLOCK_MONOTONIC, &b);
		generation++;
		if (going_offline)
			cpuhp_cpuset_del(&online, cpu);
		else
			cpuhp_cpuset_add(&online, cpu);
		cpuhp_cpuset_format(&online, list, sizeof(list));
		generation++;
		pthread_mutex_lock(&lock);
		say("writer:   cpuhp_hotplug_begin() took %.1f us (readers inside finished first); "
		    "CPU %u %s, online CPUs now %s",
		    (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3,
		    cpu, going_offline ? "offline" : "online", list);
		pthread_mutex_unlock(&lock);
		cpuhp_hotplug_done();
		wait_all_walked(nreaders, generation);
	}
	__atomic_store_n(&stop, true, __ATOMIC_RELAXED);
}

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: readers [--cpus LIST] [--readers N] [--flips N]\n"
	        "Reader threads walk a simulated set of online CPUs under\n"
	        "cpuhp_get_online_cpus() while a writer thread takes the highest CPU offline\n"
	        "and back under cpuhp_hotplug_begin()/cpuhp_hotplug_done(); prints a\n"
	        "timeline.  Exits 1 if any walk saw the set change under it.\n"
	        "\n"
	        "  --cpus LIST    the simulated online CPUs, a range list (default 0-3)\n"
	        "  --readers N    reader threads, 1 to %d (default 2)\n"
	        "  --flips N      how many times the writer flips the CPU (default 2:\n"
	        "                 offline, then online again)\n"
	        "  -h, --help     this help\n",
	        MAX_READERS);
}

static int parse_count(const char *opt, const char *arg, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > hi) {
		fprintf(stderr, "readers: %s wants a number from %u to %u, not '%s'\n", opt, lo, hi,
		        arg);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"cpus", required_argument, NULL, 'c'},
	    {"readers", required_argument, NULL, 'r'},
	    {"flips", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *cpus = "0-3";
	unsigned nreaders = 2, flips = 2, cpu = 0;
	struct reader readers[MAX_READERS];
	unsigned long torn = 0;
	char list[CPUHP_CPUSET_LIST_MAX];
	int c, err;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			cpus = optarg;
			break;
		case 'r':
			if (parse_count("--readers", optarg, 1, MAX_READERS, &nreaders))
				return 2;
			break;
		case 'f':
			if (parse_count("--flips", optarg, 0, 1000, &flips))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	err = cpuhp_cpuset_parse(cpus, &online);
	if (err || cpuhp_cpuset_count(&online) < 2) {
		fprintf(stderr,
		        "readers: --cpus wants a range list of at least two CPUs below %d, such as "
		        "0-3; not '%s'\n",
		        CPUHP_CPUSET_MAX, cpus);
		return 2;
	}
	/* The highest CPU plays the hotplugged one (CPU 0 usually cannot go). */
	for (int n = cpuhp_cpuset_next(&online, -1); n >= 0; n = cpuhp_cpuset_next(&online, n))
		cpu = (unsigned)n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cpuhp_cpuset_format(&online, list, sizeof(list));
	pthread_mutex_lock(&lock);
	say("start:    %u readers, online CPUs %s; CPU %u will be flipped %u times", nreaders, list,
	    cpu, flips);
	pthread_mutex_unlock(&lock);

	for (unsigned i = 0; i < nreaders; i++)
		walked[i] = NOT_YET;
	for (unsigned i = 0; i < nreaders; i++) {
		readers[i] = (struct reader){.id = i};
		err = pthread_create(&readers[i].thread, NULL, reader_main, &readers[i]);
		if (err) {
			fprintf(stderr, "readers: cannot start a thread: %s\n", strerror(err));
			return 1;
		}
	}
	writer_run(nreaders, flips, cpu);
	for (unsigned i = 0; i < nreaders; i++) {
		pthread_join(readers[i].thread, NULL);
		torn += readers[i].torn;
	}

	pthread_mutex_lock(&lock);
	for (unsigned i = 0; i < nreaders; i++)
		say("done:     reader %u walked %lu times, %lu saw the set change mid-walk", i,
		    readers[i].walks, readers[i].torn);
	pthread_mutex_unlock(&lock);
	if (torn) {
		fprintf(stderr,
		        "readers: %lu walks saw the set change under them: the hotplug lock "
		        "did not keep the writer out\n",
		        torn);
		return 1;
	}
	return 0;
}
