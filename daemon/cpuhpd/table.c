/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The feature table (table.h): every request type with its handler, and
 * every hook list in its order.  The orders are the daemon's rules; each
 * says why.
 */
#include "cpuhpd.h"
#include "core/conn.h"
#include "core/dispatch.h"
#include "core/route.h"
#include "leases/holders.h"
#include "ops/cpus.h"
#include "ops/hello.h"
#include "ops/listing.h"
#include "ops/status.h"
#include "table.h"

/*
 * One row per request type (proto/cpuhp.proto's Request.body), indexed by
 * its body case.  Flags (dispatch.h): FIRST may open a connection;
 * STOPPING is handled while cpuhpd stops (the leases held now, the calls in
 * flight, looking), any other is cancelled or, in a restart's stop, kept
 * for the next cpuhpd; NO_REPLY is never answered; AWAITED answers a call
 * this cpuhpd waits for.
 */
static const struct cpuhpd_request_type requests[] = {
    [CPUHP__REQUEST__BODY_HELLO] = {cpuhpd_hello, CPUHPD_REQ_FIRST},
    [CPUHP__REQUEST__BODY_STATUS] = {cpuhpd_status_request, CPUHPD_REQ_STOPPING},
    [CPUHP__REQUEST__BODY_METRICS] = {cpuhpd_metrics_request, CPUHPD_REQ_STOPPING},
    [CPUHP__REQUEST__BODY_WATCH] = {cpuhpd_watch_start, 0},
    [CPUHP__REQUEST__BODY_LEASE_ACQUIRE] = {cpuhpd_lease_acquire, 0},
    [CPUHP__REQUEST__BODY_LEASE_RELEASE] = {cpuhpd_lease_release, CPUHPD_REQ_STOPPING},
    [CPUHP__REQUEST__BODY_IDENTIFY] = {cpuhpd_holders_identify, 0},
    [CPUHP__REQUEST__BODY_LIST_LEASES] = {cpuhpd_listing_request, CPUHPD_REQ_STOPPING},
    [CPUHP__REQUEST__BODY_LIST_CPUS] = {cpuhpd_cpus_request, CPUHPD_REQ_STOPPING},
    [CPUHP__REQUEST__BODY_GET_PLAN] = {cpuhpd_plan_request, CPUHPD_REQ_STOPPING},
    [CPUHP__REQUEST__BODY_FAST_PATH] = {cpuhpd_fastpath_request, 0},
    [CPUHP__REQUEST__BODY_FAST_WAKE] = {cpuhpd_fastpath_wake,
                                        CPUHPD_REQ_STOPPING | CPUHPD_REQ_NO_REPLY},
    [CPUHP__REQUEST__BODY_SET_ONLINE] = {cpuhpd_hotplug_submit, 0},
    [CPUHP__REQUEST__BODY_SET_SMT] = {cpuhpd_hotplug_submit_smt, 0},
    [CPUHP__REQUEST__BODY_FREEZE] = {cpuhpd_freeze_request, 0},
    [CPUHP__REQUEST__BODY_THAW] = {cpuhpd_freeze_thaw, CPUHPD_REQ_STOPPING},
    [CPUHP__REQUEST__BODY_REGISTER_STATE] = {cpuhpd_states_register, 0},
    [CPUHP__REQUEST__BODY_REMOVE_STATE] = {cpuhpd_states_remove, 0},
    [CPUHP__REQUEST__BODY_LIST_STATES] = {cpuhpd_states_list, 0},
    [CPUHP__REQUEST__BODY_ADD_INSTANCE] = {cpuhpd_states_add_instance, 0},
    [CPUHP__REQUEST__BODY_REMOVE_INSTANCE] = {cpuhpd_states_remove_instance, 0},
    [CPUHP__REQUEST__BODY_STATE_ANSWER] = {cpuhpd_states_answer, CPUHPD_REQ_STOPPING |
                                                                     CPUHPD_REQ_NO_REPLY |
                                                                     CPUHPD_REQ_AWAITED},
};

/*
 * A connection is gone (conn.c has taken it out of the admission counts
 * and the fd store).  Hotplugs before leases: a hotplug of this client
 * still waiting for leases is dropped rather than started for nobody once
 * its own leases go.
 */
static void (*const conn_gone_steps[])(struct cpuhpd_conn *c) = {
    cpuhpd_route_conn_gone,   cpuhpd_states_conn_gone,
    cpuhpd_hotplug_conn_gone, cpuhpd_watch_conn_gone,
    cpuhpd_freeze_conn_gone,  cpuhpd_fastpath_conn_gone,
    cpuhpd_lease_conn_gone,   NULL,
};

static void conn_gone(struct cpuhpd_conn *c)
{
	for (void (*const *step)(struct cpuhpd_conn *) = conn_gone_steps; *step; step++)
		(*step)(c);
}

static const struct cpuhpd_conn_hooks conn_hooks = {
    .request = cpuhpd_dispatch,
    .gone = conn_gone,
};

/*
 * The state text (fdstore.h).  A connection's records: its leases and
 * waiting acquires, its states, its held freezes.  The requests still to
 * answer: hotplugs first, since a pending freeze or a registration waits
 * for those queued before it.
 */
static const cpuhpd_save_conn_fn save_conn[] = {
    cpuhpd_lease_save, cpuhpd_states_save, cpuhpd_freeze_save, cpuhpd_notice_save, NULL,
};
static const cpuhpd_save_requests_fn save_requests[] = {
    cpuhpd_hotplug_save,
    cpuhpd_states_save_waiting,
    cpuhpd_freeze_save_pending,
    NULL,
};
static const cpuhpd_save_ids_fn save_ids[] = {
    cpuhpd_lease_save_ids,
    cpuhpd_states_save_ids,
    cpuhpd_freeze_save_ids,
    cpuhpd_hotplug_save_ids,
    NULL,
};
static const struct cpuhpd_store_savers savers = {
    .conn = save_conn,
    .requests = save_requests,
    .ids = save_ids,
};

/*
 * What a hotplug waits for (gate.h), in the order the gate walks them: when
 * it opens, the fast path publishes "open" first, then the socket leases
 * that waited are granted, then the registrations and removals that
 * waited start, each in arrival order.  The restart grace only holds.
 */
static const struct cpuhpd_gate_source gate_sources[] = {
    {
        .name = "fast leases",
        .holding = cpuhpd_fastpath_holding,
        .block = cpuhpd_fastpath_block,
        .writer_done = cpuhpd_fastpath_unblock,
        .unblock = cpuhpd_fastpath_unblock,
        .counting = cpuhpd_fastpath_counting,
    },
    {
        .name = "socket leases",
        .holding = cpuhpd_lease_holding,
        .unblock = cpuhpd_lease_unblock,
    },
    {
        .name = "hotplug-state registrations and removals",
        .holding = cpuhpd_states_holding,
        .unblock = cpuhpd_states_unblock,
        .awaits = cpuhpd_states_in_call,
    },
    {
        .name = "the restart grace",
        .holding = cpuhpd_grace_holding,
    },
};
static const struct cpuhpd_gate_engine gate_engine = {
    .drained = cpuhpd_hotplug_gate_drained,
    .counted = cpuhpd_hotplug_gate_counted,
};

/* The snapshot's gauges (snapshot.h); a change of any is heard by the STATUS= line. */
static const cpuhpd_gauge_fn gauges[] = {
    cpuhpd_lease_gauges,
    cpuhpd_fastpath_gauges,
    cpuhpd_hotplug_gauges,
    cpuhpd_freeze_gauges,
    cpuhpd_policy_gauges,
    cpuhpd_grace_gauges,
    NULL,
};

/*
 * Who hears of a new view (view.h), in order: the metrics count an
 * external change; watchers get OnlineChanged; lease holders hear of a
 * bypass; then states are reconciled with the files; last the plan, which
 * counts a conflict and queues what undoes it (states first: their
 * after-the-fact calls come before cpuhpd's own hotplug).
 */
static const cpuhpd_view_fn view_subscribers[] = {
    cpuhpd_metrics_view_changed, cpuhpd_watch_view_changed, cpuhpd_policy_view_changed,
    cpuhpd_states_view_changed,  cpuhpd_plan_view_changed,  NULL,
};

/*
 * A hotplug request ended, its answer not sent yet: the metrics file first
 * (a client that heard back finds it counted), then the plan looks again
 * (from the loop: the queue is still busy with this one).
 */
static void hotplug_ended(struct cpuhpd *d)
{
	cpuhpd_metrics_write(d);
	cpuhpd_plan_poke(d);
}

void cpuhpd_features_plug(struct cpuhpd *d)
{
	d->admit.states_of_uid = cpuhpd_states_of_uid;
	d->hotplug.ended = hotplug_ended;
	d->freezes.thawed = cpuhpd_plan_poke;
	cpuhpd_snapshot_plug(d, gauges, cpuhpd_statusline_changed);
	cpuhpd_view_plug(d, view_subscribers);
	cpuhpd_gate_plug(d, gate_sources, sizeof(gate_sources) / sizeof(gate_sources[0]),
	                 &gate_engine);
	d->conn_hooks = &conn_hooks;
	d->dispatch.types = requests;
	d->dispatch.ntypes = sizeof(requests) / sizeof(requests[0]);
	d->fdstore.savers = &savers;
}

void cpuhpd_features_run(struct cpuhpd *d, const cpuhpd_daemon_fn *steps)
{
	for (; *steps; steps++)
		(*steps)(d);
}

int cpuhpd_features_start(struct cpuhpd *d, const cpuhpd_start_fn *steps)
{
	int err = 0;

	for (; *steps && !err; steps++)
		err = (*steps)(d);
	return err;
}

/*
 * Start: first the fd store (LISTEN_FDS may hold a previous instance's
 * clients), then the view and the topology of the CPUs it has online
 * (before the worker, which learns it from then on), the tables, the fast path (whose shared memory
 * connections get), the worker thread and the timers; the previous
 * cpuhpd's clients are adopted then (adopt.c), and only after them the
 * restart grace starts (before anything can run a hotplug), the plan
 * queues what it needs (before the socket listens: the first leases wait
 * for it), the socket listens, the store takes what is left and uevents
 * come in.
 */
static const cpuhpd_start_fn prepare[] = {
    cpuhpd_fdstore_take,
    cpuhpd_view_start,
    cpuhpd_topology_start,
    cpuhpd_conns_init,
    cpuhpd_watch_init,
    cpuhpd_freeze_init,
    cpuhpd_admit_init,
    cpuhpd_lease_init,
    cpuhpd_policy_init,
    cpuhpd_revoke_init,
    cpuhpd_hotplug_init,
    cpuhpd_states_init,
    cpuhpd_fastpath_start,
    cpuhpd_worker_start,
    cpuhpd_metrics_start,
    cpuhpd_statusline_init,
    NULL,
};
static const cpuhpd_start_fn serve[] = {
    cpuhpd_grace_start,   cpuhpd_plan_start,   cpuhpd_server_start,
    cpuhpd_fdstore_ready, cpuhpd_uevent_start, NULL,
};

/*
 * An orderly stop: fast acquires go to the socket from now on (and get
 * ECANCELED there); nobody new comes in; then what waits is cancelled,
 * hotplugs first.
 */
static const cpuhpd_daemon_fn stop[] = {
    cpuhpd_fastpath_stop, cpuhpd_server_stop,   cpuhpd_hotplug_cancel, cpuhpd_lease_cancel_waiters,
    cpuhpd_freeze_cancel, cpuhpd_states_cancel, cpuhpd_states_stop,    NULL,
};
/*
 * A restart's stop: nothing is cancelled; only the hotplug in the worker
 * ends, and state calls get a grace before they are cut.
 */
static const cpuhpd_daemon_fn handover[] = {
    cpuhpd_fastpath_stop,
    cpuhpd_hotplug_hold,
    cpuhpd_states_stop,
    NULL,
};
/* The stop's end, the clients closed: the fast-path and worker threads are joined here. */
static const cpuhpd_daemon_fn close_steps[] = {
    cpuhpd_admit_close,  cpuhpd_fastpath_close, cpuhpd_uevent_stop,
    cpuhpd_worker_stop,  cpuhpd_lease_close,    cpuhpd_policy_close,
    cpuhpd_revoke_close, cpuhpd_hotplug_close,  cpuhpd_plan_close,
    cpuhpd_states_close, cpuhpd_metrics_stop,   cpuhpd_statusline_close,
    cpuhpd_grace_close,  cpuhpd_topology_close, NULL,
};

/*
 * A restart (adopt.c): each connection's leases first, so that whatever
 * runs after finds every lease in its way, then its fast-lease region,
 * states, freezes and watch.  Once the requests left unanswered ran again
 * (a hotplug among them blocks the gate again), states whose CPUs differ
 * from the files are reconciled (after that hotplug if it went to the
 * worker: it resumes their calls on its own CPUs first), and the acquires
 * that came back waiting are granted unless the gate is closed.
 */
static const cpuhpd_adopt_ids_fn adopt_ids[] = {
    cpuhpd_lease_adopt_ids,
    cpuhpd_states_adopt_ids,
    cpuhpd_freeze_adopt_ids,
    cpuhpd_hotplug_adopt_ids,
    NULL,
};
static const cpuhpd_adopt_conn_fn adopt_conn[] = {
    cpuhpd_lease_adopt,
    cpuhpd_fastpath_adopt_conn,
    cpuhpd_states_adopt,
    cpuhpd_freeze_adopt,
    cpuhpd_watch_adopt,
    cpuhpd_notice_adopt,
    NULL,
};
static const cpuhpd_daemon_fn replayed[] = {
    cpuhpd_hotplug_replayed,
    cpuhpd_states_adopted,
    cpuhpd_lease_adopted,
    NULL,
};

const struct cpuhpd_features cpuhpd_features = {
    .prepare = prepare,
    .serve = serve,
    .stop = stop,
    .handover = handover,
    .close = close_steps,
    .adopt_ids = adopt_ids,
    .adopt_conn = adopt_conn,
    .replayed = replayed,
};
