/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * rcu_sync: every transition of its state machine, nesting, and the point
 * of it all: an enter while the exit callback is pending costs no grace
 * period.  "Grace periods waited" is counted by the library (->nr_sync, one
 * per synchronize_rcu() call), and timed here for the log.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/rcu_sync.h>

#include "check.h"
#include "lockwatch.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static bool idle_in_read_section(struct cpuhp_rcu_sync *rss)
{
	bool idle;

	cpuhp_rcu_read_lock();
	idle = cpuhp_rcu_sync_is_idle(rss);
	cpuhp_rcu_read_unlock();
	return idle;
}

static struct cpuhp_rcu_sync *new_rss(void)
{
	struct cpuhp_rcu_sync *rss = NULL;

	CHECK_EQ_INT(cpuhp_rcu_sync_new(&rss), 0);
	CHECK(rss);
	return rss;
}

static void rcu_sync_starts_idle(void)
{
	struct cpuhp_rcu_sync *rss = new_rss();

	CHECK(idle_in_read_section(rss));
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_IDLE);
	cpuhp_rcu_sync_free(rss);
}

static void rcu_sync_enter_from_idle_waits_one_grace_period(void)
{
	struct cpuhp_rcu_sync *rss = new_rss();
	struct lw_rcu_holder h;

	cpuhp_rcu_sync_enter(rss); /* IDLE -> ENTER -> PASSED */
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_PASSED);
	CHECK_EQ_INT(lw_gp_syncs(rss), 1);
	CHECK(!idle_in_read_section(rss));
	/* Pin EXIT: however long we are preempted, its callback cannot run yet. */
	lw_rcu_hold(&h);
	cpuhp_rcu_sync_exit(rss); /* PASSED -> EXIT */
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_EXIT);
	CHECK(!idle_in_read_section(rss)); /* exit never flips readers back at once */
	lw_rcu_release(&h);
	lw_wait_idle(rss); /* EXIT -> IDLE from the callback */
	CHECK_EQ_INT(lw_gp_callbacks(rss), 1);
	CHECK(idle_in_read_section(rss));
	cpuhp_rcu_sync_free(rss);
}

static void rcu_sync_nested_enters_need_as_many_exits(void)
{
	struct cpuhp_rcu_sync *rss = new_rss();
	struct lw_rcu_holder h;

	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_sync_enter(rss); /* PASSED: counted, no second period */
	cpuhp_rcu_sync_enter(rss);
	CHECK_EQ_INT(lw_gp_count(rss), 3);
	CHECK_EQ_INT(lw_gp_syncs(rss), 1);
	cpuhp_rcu_sync_exit(rss);
	cpuhp_rcu_sync_exit(rss);
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_PASSED); /* still entered once */
	CHECK(!idle_in_read_section(rss));
	lw_rcu_hold(&h); /* pins EXIT below, however long we are preempted */
	cpuhp_rcu_sync_exit(rss);
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_EXIT);
	lw_rcu_release(&h);
	lw_wait_idle(rss);
	CHECK_EQ_INT(lw_gp_callbacks(rss), 1);
	cpuhp_rcu_sync_free(rss);
}

static void rcu_sync_enter_while_exit_pending_skips_grace_period(void)
{
	struct cpuhp_rcu_sync *rss = new_rss();
	struct lw_rcu_holder h;
	double t0, t_first, t_second;

	t0 = now_us();
	cpuhp_rcu_sync_enter(rss);
	t_first = now_us() - t0;
	lw_rcu_hold(&h);
	cpuhp_rcu_sync_exit(rss); /* PASSED -> EXIT: callback queued, held off */
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_EXIT);
	/* A grace period now would wait for the holder: this would hang. */
	t0 = now_us();
	cpuhp_rcu_sync_enter(rss);
	t_second = now_us() - t0;
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_EXIT);
	CHECK_EQ_INT(lw_gp_syncs(rss), 1);
	CHECK(!idle_in_read_section(rss));
	printf("  enter from idle %.1f us, enter with exit pending %.1f us, grace periods 1\n",
	       t_first, t_second);
	lw_rcu_release(&h);
	/* The callback finds an enter: EXIT -> PASSED, not IDLE. */
	WAIT_FOR(lw_gp_callbacks(rss) == 1);
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_PASSED);
	CHECK(!idle_in_read_section(rss));
	cpuhp_rcu_sync_exit(rss);
	lw_wait_idle(rss);
	CHECK_EQ_INT(lw_gp_syncs(rss), 1);
	CHECK_EQ_INT(lw_gp_callbacks(rss), 2);
	cpuhp_rcu_sync_free(rss);
}

/* A new object taken to REPLAY, its callback held off by @h. */
static struct cpuhp_rcu_sync *new_rss_in_replay(struct lw_rcu_holder *h)
{
	struct cpuhp_rcu_sync *rss = new_rss();

	cpuhp_rcu_sync_enter(rss);
	lw_rcu_hold(h);
	cpuhp_rcu_sync_exit(rss); /* PASSED -> EXIT */
	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_sync_exit(rss); /* EXIT -> REPLAY */
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_REPLAY);
	return rss;
}

static void rcu_sync_exit_during_pending_exit_replays_one_period(void)
{
	struct lw_rcu_holder h;
	struct cpuhp_rcu_sync *rss = new_rss_in_replay(&h);

	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_sync_exit(rss); /* REPLAY stays REPLAY */
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_REPLAY);
	lw_rcu_release(&h);
	lw_wait_idle(rss); /* REPLAY -> EXIT (requeued) -> IDLE */
	CHECK_EQ_INT(lw_gp_callbacks(rss), 2);
	CHECK_EQ_INT(lw_gp_syncs(rss), 1);
	cpuhp_rcu_sync_free(rss);
}

/* REPLAY -> PASSED: the callback that finds REPLAY and an enter inside. */
static void rcu_sync_enter_during_replay_passes_at_the_callback(void)
{
	struct lw_rcu_holder h;
	struct cpuhp_rcu_sync *rss = new_rss_in_replay(&h);

	cpuhp_rcu_sync_enter(rss); /* REPLAY stays, counted: no grace period */
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_REPLAY);
	CHECK_EQ_INT(lw_gp_count(rss), 1);
	lw_rcu_release(&h);
	WAIT_FOR(lw_gp_callbacks(rss) == 1);
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_PASSED);
	CHECK(!idle_in_read_section(rss));
	cpuhp_rcu_sync_exit(rss); /* PASSED -> EXIT, a new callback */
	lw_wait_idle(rss);
	CHECK_EQ_INT(lw_gp_callbacks(rss), 2);
	CHECK_EQ_INT(lw_gp_syncs(rss), 1);
	cpuhp_rcu_sync_free(rss);
}

struct enter_arg {
	struct cpuhp_rcu_sync *rss;
	sem_t done;
};

static void *enter_thread(void *p)
{
	struct enter_arg *a = p;

	cpuhp_rcu_sync_enter(a->rss);
	sem_post(&a->done);
	return NULL;
}

static void rcu_sync_concurrent_enters_share_one_grace_period(void)
{
	struct cpuhp_rcu_sync *rss = new_rss();
	struct enter_arg a = {.rss = rss};
	pthread_t t1, t2;

	sem_init(&a.done, 0, 0);
	/* A reader inside its section holds the first enter in ENTER. */
	cpuhp_rcu_read_lock();
	pthread_create(&t1, NULL, enter_thread, &a);
	WAIT_FOR(lw_gp_state(rss) == CPUHP__GP_ENTER);
	pthread_create(&t2, NULL, enter_thread, &a);
	WAIT_FOR(lw_gp_count(rss) == 2);
	CHECK_EQ_INT(sem_trywait(&a.done), -1); /* both still wait for the period */
	cpuhp_rcu_read_unlock();
	sem_wait(&a.done);
	sem_wait(&a.done);
	CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_PASSED);
	CHECK_EQ_INT(lw_gp_syncs(rss), 1);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	cpuhp_rcu_sync_exit(rss);
	cpuhp_rcu_sync_exit(rss);
	cpuhp_rcu_sync_free(rss);
}

static void *free_thread(void *p)
{
	cpuhp_rcu_sync_free(p);
	return NULL;
}

static void rcu_sync_free_waits_for_pending_callback(void)
{
	/* Under ASan a callback touching freed memory would be reported. */
	for (int i = 0; i < 2; i++) {
		struct cpuhp_rcu_sync *rss = new_rss();
		struct lw_rcu_holder h;
		pthread_t t;

		cpuhp_rcu_sync_enter(rss);
		lw_rcu_hold(&h);
		cpuhp_rcu_sync_exit(rss);
		if (i == 1) { /* REPLAY pending: free turns it into EXIT */
			cpuhp_rcu_sync_enter(rss);
			cpuhp_rcu_sync_exit(rss);
			CHECK_EQ_INT(lw_gp_state(rss), CPUHP__GP_REPLAY);
		}
		/* The callback cannot run before the holder leaves: free must wait. */
		pthread_create(&t, NULL, free_thread, rss);
		if (i == 1)
			WAIT_FOR(lw_gp_state(rss) == CPUHP__GP_EXIT);
		lw_rcu_release(&h);
		pthread_join(t, NULL);
	}
}

/*
 * The last exit's call_rcu() waits ~1 ms in defer.c for a timer thread that
 * a fork child does not have: the child makes the call itself, and both
 * sides go idle.  Forking takes far less than the 1 ms, but the timer may
 * still win: then the child saw nothing to hand over (exit 3) and we retry.
 */
CHECK_TSAN_SKIPS static void rcu_sync_exit_queued_at_fork_goes_idle_in_parent_and_child(void)
{
	for (int attempt = 0;; attempt++) {
		struct cpuhp_rcu_sync *rss = new_rss();
		int status;
		pid_t pid;

		CHECK(attempt < 100);
		cpuhp_rcu_sync_enter(rss);
		cpuhp_rcu_sync_exit(rss);
		pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			bool handed = cpuhp__defer_child_handovers == 1;

			lw_wait_idle(rss);
			cpuhp_rcu_sync_free(rss);
			_exit(handed ? 0 : 3);
		}
		CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
		CHECK(WIFEXITED(status));
		lw_wait_idle(rss);
		CHECK_EQ_INT(lw_gp_callbacks(rss), 1);
		cpuhp_rcu_sync_free(rss);
		if (WEXITSTATUS(status) == 0) {
			printf("  handed over by the child on attempt %d\n", attempt + 1);
			return;
		}
		CHECK_EQ_INT(WEXITSTATUS(status), 3);
	}
}

/*
 * Where the timer thread cannot start (here: no descriptor left for its
 * timerfd), an exit waits its grace period itself: idle when it returns.
 * In a fork child, whose timer thread is not started yet.
 */
CHECK_TSAN_SKIPS static void
rcu_sync_exit_without_a_timer_thread_waits_its_grace_period_itself(void)
{
	int status;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		struct cpuhp_rcu_sync *rss = new_rss();
		int lowest = dup(0);
		struct rlimit none_left = {(rlim_t)lowest, (rlim_t)lowest};

		close(lowest);
		if (setrlimit(RLIMIT_NOFILE, &none_left) || dup(0) != -1)
			_exit(2);
		cpuhp_rcu_sync_enter(rss);
		cpuhp_rcu_sync_exit(rss);
		if (!cpuhp_rcu_sync_is_idle(rss) || lw_gp_callbacks(rss) != 1)
			_exit(4);
		cpuhp_rcu_sync_free(rss);
		_exit(cpuhp__defer_child_handovers == 0 ? 0 : 3);
	}
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

/*
 * A program that closes every descriptor (as daemons do) takes the timer
 * thread's timerfd away, and the number may come back as another file:
 * exits must still reach IDLE: what was queued goes to liburcu's
 * call_rcu(), and later exits wait their grace period themselves.
 */
CHECK_TSAN_SKIPS static void rcu_sync_goes_idle_after_its_timerfd_is_closed_or_reused(void)
{
	struct cpuhp_rcu_sync *rss = new_rss();

	cpuhp_rcu_sync_enter(rss); /* starts the timer thread if no test did */
	cpuhp_rcu_sync_exit(rss);
	lw_wait_idle(rss);
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	CHECK_EQ_INT(open("/dev/null", O_RDONLY | O_CLOEXEC), 3); /* reuse a number */
	for (int i = 0; i < 3; i++) {
		cpuhp_rcu_sync_enter(rss);
		cpuhp_rcu_sync_exit(rss);
		lw_wait_idle(rss); /* hangs (meson's timeout) if the exit was lost */
	}
	CHECK_EQ_INT(lw_gp_callbacks(rss), 4);
	close(3);
	cpuhp_rcu_sync_free(rss);
}

/*
 * A standalone rcu_sync in a fork child (the rwsem's rule, rcu_sync.h): a
 * child is never caught with the object's mutex held by a thread it does
 * not have, never waits for that thread's grace period, and may free an
 * object whose count still holds that thread's enter.  Each child runs
 * under alarm(): a hang is a failure reported as SIGALRM, not a timeout.
 */
static void child_uses_and_frees(struct cpuhp_rcu_sync *rss, int count_at_fork)
{
	alarm(30);
	if (count_at_fork >= 0 && lw_gp_count(rss) != count_at_fork)
		_exit(4);
	if (lw_gp_state(rss) == CPUHP__GP_ENTER)
		_exit(5); /* nobody would end it */
	cpuhp_rcu_sync_enter(rss);
	if (idle_in_read_section(rss))
		_exit(6);
	cpuhp_rcu_sync_exit(rss);
	cpuhp_rcu_sync_free(rss); /* forgives the enters of threads that are gone */
	_exit(0);
}

static void check_child(pid_t pid)
{
	int status;

	CHECK(pid >= 0);
	CHECK_EQ_INT(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		CHECK_FAIL_("fork child killed by signal %d (%s)", WTERMSIG(status),
		            WTERMSIG(status) == SIGALRM ? "hung" : "aborted");
	CHECK(WIFEXITED(status));
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

static void *enter_exit_once(void *p)
{
	cpuhp_rcu_sync_enter(p);
	cpuhp_rcu_sync_exit(p);
	return NULL;
}

/*
 * A fork while another thread of the library waits in synchronize_rcu():
 * liburcu holds its grace-period mutex (and, while it scans, its registry
 * mutex) for that wait, and a child that inherited them held would hang in
 * its first grace period or liburcu registration.  So fork() waits for the
 * grace period to end.  Here it cannot end before the holder's section
 * does, which another thread ends only once the fork has begun: fork()
 * must not return before that.  (The release waits 20 ms after the fork
 * began, so that a fork that does not wait has returned long before: the
 * margin makes the test fail without the exclusion; with it, nothing
 * depends on the margin.)  The child then registers a thread of its own
 * with liburcu and waits a grace period.
 */
static struct {
	atomic_bool armed;
	sem_t began;
} fork_watch;

static void fork_watch_prepare(void)
{
	/* The test's handler runs before the library's (registered earlier). */
	if (atomic_exchange(&fork_watch.armed, false))
		sem_post(&fork_watch.began);
}

struct late_release {
	struct lw_rcu_holder *h;
	atomic_bool released;
};

static void *release_after_fork_began(void *p)
{
	struct late_release *l = p;
	struct timespec margin = {0, 20 * 1000 * 1000};

	sem_wait(&fork_watch.began);
	nanosleep(&margin, NULL);
	atomic_store(&l->released, true);
	lw_rcu_release(l->h);
	return NULL;
}

/* In a fork child: a thread that never used the library registers and waits a grace period. */
static void *child_grace_period(void *p)
{
	struct cpuhp_rcu_sync *own = new_rss();

	(void)p;
	cpuhp_rcu_sync_enter(own); /* registers with liburcu, synchronize_rcu() */
	cpuhp_rcu_sync_exit(own);
	cpuhp_rcu_sync_free(own);
	return NULL;
}

/* Then, with @inherited, use and free the object the parent was entering. */
static void child_registers_and_waits_a_grace_period(struct cpuhp_rcu_sync *inherited)
{
	pthread_t t;

	alarm(30); /* a hang is a failure (SIGALRM), not meson's timeout */
	if (pthread_create(&t, NULL, child_grace_period, NULL) || pthread_join(t, NULL))
		_exit(7);
	if (inherited)
		child_uses_and_frees(inherited, -1);
	_exit(0);
}

CHECK_TSAN_SKIPS static void rcu_sync_fork_waits_for_a_grace_period_in_progress(void)
{
	struct cpuhp_rcu_sync *rss = new_rss();
	struct lw_rcu_holder h;
	struct late_release l = {.h = &h};
	pthread_t t, r;
	pid_t pid;

	atomic_init(&l.released, false);
	sem_init(&fork_watch.began, 0, 0);
	CHECK_EQ_INT(pthread_atfork(fork_watch_prepare, NULL, NULL), 0);
	lw_rcu_hold(&h); /* the enter's synchronize_rcu() cannot return */
	pthread_create(&t, NULL, enter_exit_once, rss);
	WAIT_FOR(lw_gp_state(rss) == CPUHP__GP_ENTER);
	pthread_create(&r, NULL, release_after_fork_began, &l);
	atomic_store(&fork_watch.armed, true);
	pid = fork();
	if (pid == 0)
		child_registers_and_waits_a_grace_period(rss);
	CHECK(atomic_load(&l.released)); /* fork() returned only after the grace period */
	check_child(pid);
	pthread_join(r, NULL);
	pthread_join(t, NULL);
	lw_wait_idle(rss);
	cpuhp_rcu_sync_free(rss);
}

/*
 * The same, by chance: one thread enters and exits standalone objects in
 * turn (each idle again when its turn comes, so each enter waits a grace
 * period), another holds read-side sections that make each period long,
 * and a third forks over and over; each child registers and waits a grace
 * period of its own.  Without the exclusion most children hang.
 */
#define GP_LOOP_OBJECTS 32

struct gp_looper {
	struct cpuhp_rcu_sync *rss[GP_LOOP_OBJECTS];
	atomic_bool stop;
	atomic_ulong rounds;
};

static void *enter_exit_round_robin(void *p)
{
	struct gp_looper *l = p;

	for (unsigned i = 0; !atomic_load(&l->stop); i = (i + 1) % GP_LOOP_OBJECTS) {
		cpuhp_rcu_sync_enter(l->rss[i]);
		cpuhp_rcu_sync_exit(l->rss[i]);
		atomic_fetch_add(&l->rounds, 1);
	}
	return NULL;
}

static void *long_read_sections(void *p)
{
	struct gp_looper *l = p;
	struct timespec inside = {0, 100 * 1000};

	while (!atomic_load(&l->stop)) {
		cpuhp_rcu_read_lock();
		nanosleep(&inside, NULL);
		cpuhp_rcu_read_unlock();
	}
	return NULL;
}

static void *fork_children(void *p)
{
	struct gp_looper *l = p;

	for (int i = 0; i < 200; i++) {
		unsigned long before = atomic_load(&l->rounds);
		pid_t pid;

		WAIT_FOR(atomic_load(&l->rounds) != before);
		pid = fork();
		if (pid == 0)
			child_registers_and_waits_a_grace_period(NULL);
		check_child(pid);
	}
	return NULL;
}

CHECK_TSAN_SKIPS static void rcu_sync_fork_children_wait_grace_periods_while_others_do(void)
{
	struct gp_looper l;
	pthread_t looper, reader, forker;

	for (int i = 0; i < GP_LOOP_OBJECTS; i++)
		l.rss[i] = new_rss();
	atomic_init(&l.stop, false);
	atomic_init(&l.rounds, 0);
	pthread_create(&looper, NULL, enter_exit_round_robin, &l);
	pthread_create(&reader, NULL, long_read_sections, &l);
	/* A thread that never used the library: each child registers it. */
	pthread_create(&forker, NULL, fork_children, &l);
	pthread_join(forker, NULL);
	atomic_store(&l.stop, true);
	pthread_join(looper, NULL);
	pthread_join(reader, NULL);
	for (int i = 0; i < GP_LOOP_OBJECTS; i++)
		cpuhp_rcu_sync_free(l.rss[i]);
}

struct looper {
	struct cpuhp_rcu_sync *rss;
	atomic_bool stop;
	atomic_ulong rounds;
};

static void *enter_exit_loop(void *p)
{
	struct looper *l = p;

	while (!atomic_load(&l->stop)) {
		cpuhp_rcu_sync_enter(l->rss);
		cpuhp_rcu_sync_exit(l->rss);
		atomic_fetch_add(&l->rounds, 1);
	}
	return NULL;
}

CHECK_TSAN_SKIPS static void rcu_sync_fork_while_another_thread_loops_enter_exit(void)
{
	struct looper l = {.rss = new_rss()};
	pthread_t t;

	atomic_init(&l.stop, false);
	atomic_init(&l.rounds, 0);
	pthread_create(&t, NULL, enter_exit_loop, &l);
	for (int i = 0; i < 60; i++) {
		unsigned long before = atomic_load(&l.rounds);

		/* Fork between rounds of the loop, not all before it starts. */
		WAIT_FOR(atomic_load(&l.rounds) != before);
		pid_t pid = fork();

		if (pid == 0)
			child_uses_and_frees(l.rss, -1);
		check_child(pid);
	}
	atomic_store(&l.stop, true);
	pthread_join(t, NULL);
	lw_wait_idle(l.rss);
	cpuhp_rcu_sync_free(l.rss);
}

int main(void)
{
	RUN_TEST(rcu_sync_starts_idle);
	RUN_TEST(rcu_sync_enter_from_idle_waits_one_grace_period);
	RUN_TEST(rcu_sync_nested_enters_need_as_many_exits);
	RUN_TEST(rcu_sync_enter_while_exit_pending_skips_grace_period);
	RUN_TEST(rcu_sync_exit_during_pending_exit_replays_one_period);
	RUN_TEST(rcu_sync_enter_during_replay_passes_at_the_callback);
	RUN_TEST(rcu_sync_concurrent_enters_share_one_grace_period);
	RUN_TEST(rcu_sync_free_waits_for_pending_callback);
#ifdef CHECK_UNDER_TSAN
	printf(
	    "# SKIP rcu_sync_exit_queued_at_fork_goes_idle_in_parent_and_child, "
	    "rcu_sync_exit_without_a_timer_thread_waits_its_grace_period_itself, "
	    "rcu_sync_fork_waits_for_a_grace_period_in_progress, "
	    "rcu_sync_fork_while_another_thread_loops_enter_exit, "
	    "rcu_sync_fork_children_wait_grace_periods_while_others_do: ThreadSanitizer does not "
	    "support threads started after a multi-threaded fork (the gcc and ASan builds run "
	    "them)\n");
#else
	RUN_TEST(rcu_sync_exit_queued_at_fork_goes_idle_in_parent_and_child);
	RUN_TEST(rcu_sync_exit_without_a_timer_thread_waits_its_grace_period_itself);
	RUN_TEST(rcu_sync_fork_waits_for_a_grace_period_in_progress);
	RUN_TEST(rcu_sync_fork_while_another_thread_loops_enter_exit);
	RUN_TEST(rcu_sync_fork_children_wait_grace_periods_while_others_do);
#endif
#ifdef CHECK_UNDER_TSAN
	printf("# SKIP rcu_sync_goes_idle_after_its_timerfd_is_closed_or_reused: it closes a "
	       "descriptor the timer thread reads, the misuse it simulates, which ThreadSanitizer "
	       "reports as a race\n");
#else
	RUN_TEST(rcu_sync_goes_idle_after_its_timerfd_is_closed_or_reused); /* last: closes fds */
#endif
	return 0;
}
