/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One hotplug request (SetOnline or SetSmt), private to hotplug/: its
 * place in the queue (queue.c), how it ends (replies.c).  The states it
 * goes through are in hotplug.h.  Loop thread only.
 */
#ifndef CPUHPD_HOTPLUG_REQUEST_H
#define CPUHPD_HOTPLUG_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "base/list.h"
#include "core/conn.h"
#include "core/counters.h"
#include "sysfs/worker.h"

enum hp_state {
	HP_QUEUED,
	HP_WAIT_LEASES,
	HP_WORKER,
	HP_RUNNING,
};

struct hotplug_req {
	struct cpuhpd *d;
	struct cpuhpd_list node;  /* in hotplug.queue */
	struct cpuhpd_conn *conn; /* NULL once the client is gone: the answer is dropped */
	uint64_t req_id;
	uint64_t seq;
	enum hp_state state;
	bool started;      /* HotplugStarted was broadcast: HotplugFinished must follow */
	uint64_t deadline; /* uv_now() milliseconds */
	uint32_t timeout_ms;
	char *cpus_str; /* the CPU list, canonical; SMT: "" until the worker found the siblings */
	enum cpuhpd_hp_kind kind;
	char desc[64];       /* "CPUs 2-3 offline", "SMT off": for log lines */
	uint64_t arrived_ns; /* uv_hrtime(), for the duration histogram */
	struct cpuhpd_job job;
	/* Who asked, kept for listings after the client is gone. */
	struct cpuhpd_peer peer;
	uint64_t arrived; /* uv_now() */
	/*
	 * cpuhpd's own (->conn NULL from the start): why, for listings and log
	 * lines ("plan", "new CPU"), and who hears how it ended: @err 0 when
	 * it ran (the job's results say how each CPU went), else why not (a
	 * positive errno).
	 */
	const char *own;
	void (*own_done)(struct cpuhpd *d, const struct hotplug_req *h, int err);
	/*
	 * notice.c: HotplugPending went out at ->noticed_at (uv_now(); kept
	 * across a restart, so delays and the grace count from the first
	 * notice); HotplugCancelled too once it ended without running.
	 */
	bool noticed, cancel_told;
	bool resumed; /* announced by the previous cpuhpd already: watchers were told */
	uint64_t noticed_at;
	/* SetOnline.force: once the grace after the notice is over, every lease is revoked. */
	bool force, forced;
	uint32_t force_grace_ms;
	Cpuhp__LeaseInfo **revoked; /* what that revoked, for the reply (revoke.h) */
	size_t nrevoked;
	/* queue.c: notices or revocations going out; destroyed (->gone) once they are done. */
	unsigned pinned;
	bool gone;
};

/* queue.c.  Whether @c may hotplug now; if not, it has been told why. */
bool cpuhpd_hotplug_allowed(struct cpuhpd_conn *c, uint64_t req_id);
/* Queue a checked request: @h's kind, desc, cpus_str and job "in" fields are filled. */
void cpuhpd_hotplug_enqueue(struct cpuhpd_conn *c, uint64_t req_id, struct hotplug_req *h,
                            uint32_t timeout_ms);
/*
 * Queue cpuhpd's own request @h (->own and ->own_done set), as a client's
 * would be, in cpuhpd's name.  Return: 0; -EBUSY while a freeze is held or
 * pending (@h is not queued; the caller still owns it), -ECANCELED while
 * cpuhpd stops.
 */
int cpuhpd_hotplug_enqueue_own(struct cpuhpd *d, struct hotplug_req *h, uint32_t timeout_ms);

/* A request of @set toward @online (NULL when out of memory), for either of the two above. */
struct hotplug_req *cpuhpd_hotplug_new_cpus(const struct cpuhp_cpuset *set, bool online);
/* smt.c: a request of SMT control @word ("on", "off", "forceoff"); NULL when out of memory. */
struct hotplug_req *cpuhpd_hotplug_new_smt(const char *word);
/* Free a request that was never queued. */
void cpuhpd_hotplug_free(struct hotplug_req *h);

/* Whether a queued request will take @cpu toward @online / write SMT control @word. */
bool cpuhpd_hotplug_queued_toward(const struct cpuhpd *d, unsigned cpu, bool online);
bool cpuhpd_hotplug_queued_smt(const struct cpuhpd *d, const char *word);

/*
 * notice.c.  @h waits now: HotplugPending to every watcher and every lease
 * holder that does not watch (through route.h), once per connection.
 */
void cpuhpd_notice_pending(struct cpuhpd *d, struct hotplug_req *h);
/* @h ended without running (@err, @msg): HotplugCancelled to those told of it. */
void cpuhpd_notice_cancelled(struct cpuhpd *d, struct hotplug_req *h, int err, const char *msg);

/*
 * replies.c.  Count how @h ended, and tell the hook that writes
 * --metrics-file: before the answer goes out, so that a client that heard
 * back finds its hotplug counted there.
 */
void cpuhpd_hotplug_count(struct cpuhpd *d, const struct hotplug_req *h,
                          enum cpuhpd_hp_result result);
/* Log @h's error, and answer it to @c (NULL: its client is gone). */
void cpuhpd_hotplug_reply_error(struct hotplug_req *h, struct cpuhpd_conn *c, int err,
                                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The worker is done with @h: count, log, answer @c (or nobody) and tell the watchers. */
void cpuhpd_hotplug_reply(struct cpuhpd *d, struct hotplug_req *h, struct cpuhpd_conn *c);
/* Why smt/control's word @now refuses a change (@err from cpuhpd_cpus_smt_changeable()). */
const char *cpuhpd_hotplug_smt_refusal(int err, const char *now);

#endif /* CPUHPD_HOTPLUG_REQUEST_H */
