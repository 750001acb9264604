/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Debug mode (-Ddebug_checks=true): every misuse the library reports.
 *
 * Each case provokes one misuse in a forked child (whose stderr goes to a
 * pipe) and checks that the child died by SIGABRT after writing the
 * library's report, "libcpuhp: BUG: lock '<name>': <message> (file:line
 * func)", naming the lock.  Next to them, legitimate uses that look alike
 * (release on another thread, nested cpuhp_get_online_cpus() while a
 * writer waits) must run clean: exit 0, nothing on stderr.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cpuhp/hotplug.h>
#include <cpuhp/rcu_sync.h>
#include <cpuhp/rwsem.h>

#include "check.h"
#include "lockwatch.h"

/* ------------------------------------------------------------ the harness */

struct outcome {
	int status;
	char err[4096]; /* the child's stderr */
};

/*
 * Run @provoke in a child with stderr captured.  A child that returns
 * exits 0; one that hangs is ended by the alarm (SIGALRM), so a missing
 * check fails with a message instead of a test timeout.
 */
static void run_child(void (*provoke)(void), struct outcome *o)
{
	size_t n = 0;
	int fds[2];
	pid_t pid;

	CHECK_EQ_INT(pipe(fds), 0);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		const struct rlimit no_core = {0, 0};

		setrlimit(RLIMIT_CORE, &no_core); /* aborts are the point here */
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		close(fds[1]);
		alarm(60);
		provoke();
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r = read(fds[0], o->err + n, sizeof(o->err) - 1 - n);

		if (r > 0 && (n += (size_t)r) < sizeof(o->err) - 1)
			continue;
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	o->err[n] = '\0';
	close(fds[0]);
	CHECK_EQ_INT(waitpid(pid, &o->status, 0), pid);
}

static void describe(const struct outcome *o, char *buf, size_t len)
{
	if (WIFEXITED(o->status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(o->status));
	else if (WIFSIGNALED(o->status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(o->status),
		         strsignal(WTERMSIG(o->status)));
	else
		snprintf(buf, len, "status 0x%x", o->status);
}

/*
 * @provoke must abort with the report for @lock and @message: the whole
 * "libcpuhp: BUG: lock '<lock>': <message>" prefix, then " (" and a call
 * site with a line number.
 */
static void expect_bug(void (*provoke)(void), const char *lock, const char *message)
{
	struct outcome o;
	char want[1024], how[128];
	const char *at, *site;

	run_child(provoke, &o);
	describe(&o, how, sizeof(how));
	printf("  child %s; stderr: %s%s", how, o.err,
	       *o.err && o.err[strlen(o.err) - 1] == '\n' ? "" : "\n");
	if (!WIFSIGNALED(o.status) || WTERMSIG(o.status) != SIGABRT)
		CHECK_FAIL_("the misuse was not reported: the child %s, expected SIGABRT", how);
	snprintf(want, sizeof(want), "libcpuhp: BUG: lock '%s': %s", lock, message);
	at = strstr(o.err, want);
	if (!at)
		CHECK_FAIL_("stderr lacks \"%s\"", want);
	site = at + strlen(want);
	/* The message may go on (a count, advice); the call site ends the line. */
	site = strstr(site, " (");
	CHECK(site && strstr(site, ".c:") && strchr(site, '\n'));
}

/* @use is legitimate: the child must exit 0 with nothing on stderr. */
static void expect_clean(void (*use)(void))
{
	struct outcome o;
	char how[128];

	run_child(use, &o);
	describe(&o, how, sizeof(how));
	printf("  child %s; stderr: \"%s\"\n", how, o.err);
	if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) != 0)
		CHECK_FAIL_("a legitimate use was reported: the child %s: %s", how, o.err);
	CHECK_EQ_STR(o.err, "");
}

static struct cpuhp_rwsem *new_sem(void)
{
	struct cpuhp_rwsem *sem = NULL;

	CHECK_EQ_INT(cpuhp_rwsem_new(&sem), 0);
	return sem;
}

/* Run @fn on a new thread and wait for it to end (its exit checks run). */
static void on_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;

	CHECK_EQ_INT(pthread_create(&t, NULL, fn, arg), 0);
	CHECK_EQ_INT(pthread_join(t, NULL), 0);
}

/* ------------------------------------------------- misuse of cpuhp_rwsem */

static void provoke_more_read_unlocks_than_locks(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_read_unlock(sem);
}

static void debug_reports_more_read_unlocks_than_locks(void)
{
	expect_bug(provoke_more_read_unlocks_than_locks, "cpuhp_rwsem",
	           "read unlock without a read lock (more unlocks than locks)");
}

static void provoke_named_lock_misuse(void)
{
	struct cpuhp_rwsem *sem = NULL;

	CHECK_EQ_INT(cpuhp_rwsem_new_named(&sem, "routing_table_lock"), 0);
	cpuhp_rwsem_read_unlock(sem);
}

/* A lock made with a name is reported by it. */
static void debug_reports_a_named_lock_by_its_name(void)
{
	expect_bug(provoke_named_lock_misuse, "routing_table_lock",
	           "read unlock without a read lock (more unlocks than locks)");
}

static void provoke_write_unlock_of_unlocked(void)
{
	cpuhp_rwsem_write_unlock(new_sem());
}

static void debug_reports_write_unlock_of_unlocked_lock(void)
{
	expect_bug(provoke_write_unlock_of_unlocked, "cpuhp_rwsem",
	           "write unlock by a thread that does not hold the write lock");
}

static void *write_unlock_thread(void *sem)
{
	cpuhp_rwsem_write_unlock(sem);
	return NULL;
}

static void provoke_write_unlock_by_other_thread(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	cpuhp_rwsem_write_lock(sem);
	on_thread(write_unlock_thread, sem);
}

static void debug_reports_write_unlock_by_thread_not_holding_it(void)
{
	expect_bug(provoke_write_unlock_by_other_thread, "cpuhp_rwsem",
	           "write unlock by a thread that does not hold the write lock");
}

static void *write_lock_and_exit(void *sem)
{
	cpuhp_rwsem_write_lock(sem);
	return NULL;
}

static void provoke_exit_holding_write_lock(void)
{
	on_thread(write_lock_and_exit, new_sem());
}

static void debug_reports_thread_exit_holding_write_lock(void)
{
	expect_bug(provoke_exit_holding_write_lock, "cpuhp_rwsem",
	           "thread exits holding the write lock");
}

static void *read_lock_and_exit(void *sem)
{
	cpuhp_rwsem_read_lock(sem);
	return NULL;
}

static void provoke_exit_inside_read_section(void)
{
	on_thread(read_lock_and_exit, new_sem());
}

static void debug_reports_thread_exit_inside_read_section(void)
{
	expect_bug(provoke_exit_inside_read_section, "cpuhp_rwsem",
	           "thread exits inside a read-side critical section (1 read lock(s) taken and "
	           "not released)");
}

static void provoke_free_while_read_locked(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_free(sem);
}

static void debug_reports_free_while_read_locked(void)
{
	expect_bug(provoke_free_while_read_locked, "cpuhp_rwsem",
	           "freed while 1 read lock(s) are held");
}

static void provoke_free_while_write_locked(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	cpuhp_rwsem_write_lock(sem);
	cpuhp_rwsem_free(sem);
}

static void debug_reports_free_while_write_locked(void)
{
	expect_bug(provoke_free_while_write_locked, "cpuhp_rwsem",
	           "freed while a writer holds or waits for it");
}

static void *writer_thread(void *sem)
{
	cpuhp_rwsem_write_lock(sem);
	cpuhp_rwsem_write_unlock(sem);
	return NULL;
}

static void provoke_recursive_read_lock_while_writer_waits(void)
{
	struct cpuhp_rwsem *sem = new_sem();
	pthread_t w;

	cpuhp_rwsem_read_lock(sem);
	CHECK_EQ_INT(pthread_create(&w, NULL, writer_thread, sem), 0);
	WAIT_FOR(lw_writer_draining(sem)); /* it waits for our read lock */
	cpuhp_rwsem_read_lock(sem);        /* would wait for the writer: deadlock */
}

static void debug_reports_recursive_read_lock_while_writer_waits(void)
{
	expect_bug(provoke_recursive_read_lock_while_writer_waits, "cpuhp_rwsem",
	           "recursive read lock while a writer waits: the writer waits for this "
	           "thread's outer read lock, this thread waits for the writer (deadlock)");
}

/* -------------------------------------------------- misuse of the hotplug lock */

static void provoke_put_without_get(void)
{
	cpuhp_put_online_cpus();
}

static void debug_reports_put_online_cpus_without_get(void)
{
	expect_bug(provoke_put_without_get, "cpuhp_hotplug_lock",
	           "cpuhp_put_online_cpus() without cpuhp_get_online_cpus() on this thread");
}

static void provoke_put_more_than_get(void)
{
	cpuhp_get_online_cpus();
	cpuhp_put_online_cpus();
	cpuhp_put_online_cpus();
}

static void debug_reports_more_puts_than_gets(void)
{
	expect_bug(provoke_put_more_than_get, "cpuhp_hotplug_lock",
	           "cpuhp_put_online_cpus() without cpuhp_get_online_cpus() on this thread");
}

static void provoke_begin_holding_get(void)
{
	cpuhp_get_online_cpus();
	cpuhp_hotplug_begin();
}

static void debug_reports_hotplug_begin_while_holding_get(void)
{
	expect_bug(provoke_begin_holding_get, "cpuhp_hotplug_lock",
	           "hotplug begin while this thread holds cpuhp_get_online_cpus(): it would "
	           "wait for itself");
}

static void provoke_begin_timeout_holding_get(void)
{
	cpuhp_get_online_cpus();
	cpuhp_hotplug_begin_timeout(1000);
}

static void debug_reports_hotplug_begin_timeout_while_holding_get(void)
{
	expect_bug(provoke_begin_timeout_holding_get, "cpuhp_hotplug_lock",
	           "hotplug begin while this thread holds cpuhp_get_online_cpus(): it would "
	           "wait for itself");
}

static void provoke_done_without_begin(void)
{
	cpuhp_hotplug_done();
}

static void debug_reports_hotplug_done_without_begin(void)
{
	expect_bug(provoke_done_without_begin, "cpuhp_hotplug_lock",
	           "write unlock by a thread that does not hold the write lock");
}

static void *get_and_exit(void *unused)
{
	cpuhp_get_online_cpus();
	return unused;
}

static void provoke_exit_holding_get(void)
{
	on_thread(get_and_exit, NULL);
}

static void debug_reports_thread_exit_holding_get_online_cpus(void)
{
	expect_bug(provoke_exit_holding_get, "cpuhp_hotplug_lock",
	           "thread exits holding cpuhp_get_online_cpus() 1 time(s)");
}

static void *begin_and_exit(void *unused)
{
	cpuhp_hotplug_begin();
	return unused;
}

static void provoke_exit_holding_hotplug_begin(void)
{
	on_thread(begin_and_exit, NULL);
}

static void debug_reports_thread_exit_inside_hotplug_begin(void)
{
	expect_bug(provoke_exit_holding_hotplug_begin, "cpuhp_hotplug_lock",
	           "thread exits holding the write lock");
}

/* ---------------------------------------------------- misuse of rcu_sync */

static void provoke_rcu_sync_exit_without_enter(void)
{
	struct cpuhp_rcu_sync *rss = NULL;

	CHECK_EQ_INT(cpuhp_rcu_sync_new(&rss), 0);
	cpuhp_rcu_sync_exit(rss);
}

static void debug_reports_rcu_sync_exit_without_enter(void)
{
	expect_bug(provoke_rcu_sync_exit_without_enter, "rcu_sync", "exit without enter (count 0)");
}

static void provoke_rcu_sync_free_while_entered(void)
{
	struct cpuhp_rcu_sync *rss = NULL;

	CHECK_EQ_INT(cpuhp_rcu_sync_new(&rss), 0);
	cpuhp_rcu_sync_enter(rss);
	cpuhp_rcu_sync_free(rss);
}

static void debug_reports_rcu_sync_free_while_entered(void)
{
	expect_bug(provoke_rcu_sync_free_while_entered, "rcu_sync",
	           "freed with 1 enter(s) not exited");
}

/* --------------------------------------------------- legitimate look-alikes */

static void *read_lock_disown_and_exit(void *sem)
{
	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_disown(sem);
	return NULL;
}

static void *read_unlock_thread(void *sem)
{
	cpuhp_rwsem_read_unlock(sem);
	return NULL;
}

static void use_release_on_another_thread(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	/* Another reader holds on, so the summed count alone would not do. */
	cpuhp_rwsem_read_lock(sem);
	on_thread(read_lock_disown_and_exit, sem); /* exits owning nothing */
	on_thread(read_unlock_thread, sem);        /* a thread that never locked it */
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_write_lock(sem);
	cpuhp_rwsem_write_unlock(sem);
	cpuhp_rwsem_free(sem);
}

static void debug_accepts_release_on_another_thread(void)
{
	expect_clean(use_release_on_another_thread);
}

static void *hotplug_writer(void *unused)
{
	cpuhp_hotplug_begin();
	cpuhp_hotplug_done();
	return unused;
}

static void use_nested_get_while_writer_waits(void)
{
	pthread_t w;

	cpuhp_get_online_cpus();
	CHECK_EQ_INT(pthread_create(&w, NULL, hotplug_writer, NULL), 0);
	WAIT_FOR(lw_writer_draining(cpuhp_hotplug_lock()));
	cpuhp_get_online_cpus(); /* nested: no wait, so no report */
	cpuhp_put_online_cpus();
	cpuhp_put_online_cpus();
	CHECK_EQ_INT(pthread_join(w, NULL), 0);
}

static void debug_accepts_nested_get_online_cpus_while_writer_waits(void)
{
	expect_clean(use_nested_get_while_writer_waits);
}

static void use_nested_read_lock_without_writer(void)
{
	struct cpuhp_rwsem *sem = new_sem();

	cpuhp_rwsem_read_lock(sem);
	cpuhp_rwsem_read_lock(sem); /* no writer waits: not a deadlock */
	cpuhp_rwsem_read_unlock(sem);
	cpuhp_rwsem_read_unlock(sem);
	on_thread(writer_thread, sem); /* locks, unlocks and exits cleanly */
	cpuhp_rwsem_free(sem);
}

static void debug_accepts_nested_read_lock_without_writer(void)
{
	expect_clean(use_nested_read_lock_without_writer);
}

int main(void)
{
	RUN_TEST(debug_reports_more_read_unlocks_than_locks);
	RUN_TEST(debug_reports_a_named_lock_by_its_name);
	RUN_TEST(debug_reports_write_unlock_of_unlocked_lock);
	RUN_TEST(debug_reports_write_unlock_by_thread_not_holding_it);
	RUN_TEST(debug_reports_thread_exit_holding_write_lock);
	RUN_TEST(debug_reports_thread_exit_inside_read_section);
	RUN_TEST(debug_reports_free_while_read_locked);
	RUN_TEST(debug_reports_free_while_write_locked);
	RUN_TEST(debug_reports_recursive_read_lock_while_writer_waits);
	RUN_TEST(debug_reports_put_online_cpus_without_get);
	RUN_TEST(debug_reports_more_puts_than_gets);
	RUN_TEST(debug_reports_hotplug_begin_while_holding_get);
	RUN_TEST(debug_reports_hotplug_begin_timeout_while_holding_get);
	RUN_TEST(debug_reports_hotplug_done_without_begin);
	RUN_TEST(debug_reports_thread_exit_holding_get_online_cpus);
	RUN_TEST(debug_reports_thread_exit_inside_hotplug_begin);
	RUN_TEST(debug_reports_rcu_sync_exit_without_enter);
	RUN_TEST(debug_reports_rcu_sync_free_while_entered);
	RUN_TEST(debug_accepts_release_on_another_thread);
	RUN_TEST(debug_accepts_nested_get_online_cpus_while_writer_waits);
	RUN_TEST(debug_accepts_nested_read_lock_without_writer);
	return 0;
}
