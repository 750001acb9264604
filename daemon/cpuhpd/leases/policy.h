/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What an administrator may limit, and what cpuhpd does when the online
 * set changes behind its back.
 *
 * --max-lease-ms: a socket lease held longer is revoked: it ends, its
 * holder gets a LeaseRevoked notice (Response id 0), the log a warning,
 * and its LeaseRelease is answered ERR_ETIME once.  A fast lease cannot be
 * taken back alone (it is a count in the client's memory), so with this
 * limit no connection is offered the fast path (fastlease.c).
 *
 * --max-leases-per-uid: a uid that is not root nor in the admin group may
 * hold or wait for at most this many leases over all its connections
 * (ERR_EDQUOT beyond); such connections are not offered the fast path,
 * whose leases cpuhpd does not see being taken (fastlease.c).
 *
 * Both 0 by default: unlimited, and the fast path as before.
 *
 * Bypass: the online set changed (a uevent's re-read) while leases were
 * held.  cpuhpd cannot have done it (its hotplugs wait for every lease),
 * so someone wrote sysfs directly: warn naming the holders, count it, send
 * each holding connection a LeaseBypassed notice, and answer the
 * LeaseRelease of each socket lease held then with ERR_ESTALE.
 *
 * Loop thread only.
 */
#ifndef CPUHPD_POLICY_H
#define CPUHPD_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "cpuhp.pb-c.h"

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_snapshot;
struct cpuhpd_view_change;

struct cpuhpd_policy {
	uv_timer_t timer; /* --max-lease-ms: due when the oldest socket lease is */
	uint64_t revocations, bypasses;
};

int cpuhpd_policy_init(struct cpuhpd *d);
void cpuhpd_policy_close(struct cpuhpd *d);

/* Before a lease is granted or queued: false if the per-uid limit refuses it (answered). */
bool cpuhpd_policy_may_lease(struct cpuhpd_conn *c, uint64_t req_id);

/* A socket lease was granted: make sure the revocation timer runs. */
void cpuhpd_policy_lease_granted(struct cpuhpd *d);

/*
 * cpuhpd_policy_revoke() - revoke socket lease @i of @c (@reason; for
 * hotplug @hotplug_id unless at --max-lease-ms): it ends, @c remembers it
 * (its release is ERR_ETIME), the log warns naming it, the revocations
 * count it, and its holder is told (LeaseRevoked, where @c's notices go).
 * The caller lets the gate look again.  Telling can close connections:
 * a caller that walks them starts again.
 */
void cpuhpd_policy_revoke(struct cpuhpd_conn *c, unsigned i, Cpuhp__RevokeReason reason,
                          uint64_t hotplug_id);

/*
 * The @n fast leases of @c, seen held since @since (uv_now(); 0: unknown)
 * and of delay @delay_ms (0: block), were revoked (fastlease.c let go of
 * the region): log, count, tell as for a socket lease.
 */
void cpuhpd_policy_revoked_fast(struct cpuhpd_conn *c, unsigned n, uint64_t since,
                                uint32_t delay_ms, Cpuhp__RevokeReason reason, uint64_t hotplug_id);

/*
 * LeaseRelease of an id @c does not hold: if it was revoked, answer
 * ERR_ETIME and forget it.  Return: whether it was answered.
 */
bool cpuhpd_policy_release_revoked(struct cpuhpd_conn *c, uint64_t req_id, uint64_t lease_id);

/* The online set went from @was to @now without cpuhpd: a bypass if leases are held. */
void cpuhpd_policy_online_changed(struct cpuhpd *d, const char *was, const char *now);
/* The view's subscriber (view.h): an external change is a bypass if leases are held. */
void cpuhpd_policy_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch);

/* The snapshot's gauges (snapshot.h): bypasses and revocations so far. */
void cpuhpd_policy_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s);

#endif /* CPUHPD_POLICY_H */
