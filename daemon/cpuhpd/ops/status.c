/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Status; see status.h. */
#include <errno.h>
#include <stdlib.h>

#include <cpuhp/version.h>

#include "cpuhpd.h"
#include "core/conn.h"
#include "status.h"

void cpuhpd_status_request(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	struct cpuhpd *d = c->d;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Status st = CPUHP__STATUS__INIT;
	struct cpuhpd_snapshot snap;
	struct cpuhp_cpuset offline;
	char *s[4];

	cpuhpd_cpus_offline(&d->view, &offline);
	s[0] = cpuhpd_cpus_to_str(&d->view.online);
	s[1] = cpuhpd_cpus_to_str(&offline);
	s[2] = cpuhpd_cpus_to_str(&d->view.possible);
	s[3] = cpuhpd_cpus_to_str(&d->view.present);
	if (!s[0] || !s[1] || !s[2] || !s[3]) {
		cpuhpd_conn_send_error(c, req->id, ENOMEM, "cpuhpd is out of memory");
		goto out;
	}
	st.online = s[0];
	st.offline = s[1];
	st.possible = s[2];
	st.present = s[3];
	cpuhpd_fastpath_police(d); /* a forged count shows capped, and its connection closes */
	cpuhpd_fastpath_look(d);
	cpuhpd_snapshot_take(d, &snap);
	st.leases_held = snap.leases_held + snap.fast_held;
	st.fast_leases_held = snap.fast_held;
	st.fast_holders = snap.fast_holders;
	st.fast_connections = snap.fast_connections;
	st.fast_path = (char *)snap.fast_path;
	st.writer = snap.writer;
	st.pending_leases = snap.leases_waiting;
	st.pending_hotplugs = snap.hotplugs_queued;
	st.connections = snap.connections;
	st.freezes = snap.freezes;
	st.bypasses = snap.bypasses;
	st.revocations = snap.revocations;
	st.daemon_version = (char *)CPUHP_VERSION_STRING;
	st.smt_control = d->view.smt_control;
	st.smt_active = d->view.smt_active;
	st.restart_grace_ms = (uint32_t)snap.grace_ms;
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_STATUS;
	r.status = &st;
	cpuhpd_conn_send(c, &r);
out:
	for (int i = 0; i < 4; i++)
		free(s[i]);
}
