/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Leases revoked for a pending hotplug, once its notice went out
 * (hotplug/notice.c): a delay lease (LeaseAcquire.mode LEASE_DELAY, or a
 * fast-lease region asked that way) still held its delay after the
 * notice; every lease still held when a forced hotplug's grace ends.
 * Block leases are never revoked here: they hold the hotplug up to its
 * own timeout.  Each revocation goes through policy.c (the log line, the
 * count, the holder's LeaseRevoked, the release's ERR_ETIME) and lets the
 * gate look again.
 *
 * One timer, due at the earliest delay still running.  Loop thread only.
 */
#ifndef CPUHPD_REVOKE_H
#define CPUHPD_REVOKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "cpuhp.pb-c.h"

struct cpuhpd;

struct cpuhpd_revoke {
	uv_timer_t timer;
	uint64_t seq;        /* the pending hotplug whose notice went out; 0: none */
	uint64_t noticed_at; /* uv_now() of that notice */
};

int cpuhpd_revoke_init(struct cpuhpd *d);
void cpuhpd_revoke_close(struct cpuhpd *d);

/*
 * Hotplug @seq's notice went out at @noticed_at (uv_now(); earlier than
 * now after a restart): each delay lease held is revoked when its delay
 * since then is over, unless the hotplug stops waiting first.
 */
void cpuhpd_revoke_pending(struct cpuhpd *d, uint64_t seq, uint64_t noticed_at);

/* The pending hotplug stopped waiting (it runs, or ended): nothing more is revoked for it. */
void cpuhpd_revoke_over(struct cpuhpd *d);

/*
 * cpuhpd_revoke_all() - forced hotplug @seq's grace is over: revoke every
 * lease it still waits for, socket and fast, now.  @out gets what was
 * revoked: a malloc()ed array (NULL if empty) of malloc()ed LeaseInfo,
 * their strings malloc()ed too (cpuhpd_revoke_list_free()); out of
 * memory, the list leaves some out (logged), never a revocation.
 * Return: the rows in @out (a socket lease, or one connection's fast leases).
 */
size_t cpuhpd_revoke_all(struct cpuhpd *d, uint64_t seq, Cpuhp__LeaseInfo ***out);
void cpuhpd_revoke_list_free(Cpuhp__LeaseInfo **list, size_t n);

#endif /* CPUHPD_REVOKE_H */
