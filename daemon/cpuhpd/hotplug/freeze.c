/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hotplug freezes; the states are described in freeze.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "core/admit.h"
#include "core/conn.h"
#include "core/fdstore.h"
#include "freeze.h"

struct freeze {
	struct cpuhpd_list node; /* in freezes.list */
	struct cpuhpd_conn *conn;
	uint64_t id;
	uint64_t req_id; /* answered with Frozen when granted */
	uint64_t since;  /* uv_now() of the request */
	bool granted;
	char *who, *why; /* NULL: the connection's */
};

int cpuhpd_freeze_init(struct cpuhpd *d)
{
	cpuhpd_list_init(&d->freezes.list);
	d->freezes.n = 0;
	d->freezes.next_id = 1;
	return 0;
}

static const char *who_of(const struct freeze *f)
{
	if (f->who)
		return f->who;
	return f->conn->who ? f->conn->who : f->conn->peer.comm;
}

static const char *why_of(const struct freeze *f)
{
	if (f->why)
		return f->why;
	return f->conn->why ? f->conn->why : "";
}

static void drop(struct cpuhpd *d, struct freeze *f)
{
	struct cpuhpd_conn *c = f->conn;
	bool granted = f->granted;

	if (!f->granted)
		f->conn->npending--;
	cpuhpd_list_del(&f->node);
	d->freezes.n--;
	free(f->who);
	free(f->why);
	free(f);
	cpuhpd_admit_dropped(d);
	if (granted)
		cpuhpd_fdstore_conn_changed(c);
	else
		cpuhpd_fdstore_changed(d);
	if (!d->freezes.n && d->freezes.thawed)
		d->freezes.thawed(d);
}

static void grant(struct cpuhpd *d, struct freeze *f)
{
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Frozen fr = CPUHP__FROZEN__INIT;

	f->granted = true;
	cpuhpd_fdstore_conn_changed(f->conn); /* before the client hears of it */
	cpuhpd_info("hotplug frozen by client %u (pid %d, %s) '%s' (freeze %" PRIu64 ")",
	            f->conn->id, (int)f->conn->peer.pid, who_of(f), why_of(f), f->id);
	fr.freeze_id = f->id;
	r.id = f->req_id;
	r.body_case = CPUHP__RESPONSE__BODY_FROZEN;
	r.frozen = &fr;
	cpuhpd_conn_send(f->conn, &r);
}

void cpuhpd_freeze_request(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	const Cpuhp__Freeze *fq = req->freeze;
	uint64_t req_id = req->id;
	struct cpuhpd *d = c->d;
	struct freeze *f;

	if (!c->peer.admin) {
		cpuhpd_conn_send_error(c, req_id, EPERM,
		                       "not allowed: a hotplug freeze is for root and cpuhpd's "
		                       "admin group (--admin-group); uid %u is neither",
		                       (unsigned)c->peer.uid);
		return;
	}
	if (!cpuhpd_conn_may_wait(c, req_id))
		return;
	f = calloc(1, sizeof(*f));
	if (!f) {
		cpuhpd_conn_send_error(c, req_id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	f->conn = c;
	f->id = d->freezes.next_id++;
	f->req_id = req_id;
	f->since = uv_now(d->loop);
	f->who = cpuhpd_identity_dup(fq->who);
	f->why = cpuhpd_identity_dup(fq->why);
	cpuhpd_list_add_tail(&d->freezes.list, &f->node);
	d->freezes.n++;
	/* From here on every new hotplug is refused; those queued before run first. */
	if (d->hotplug.nqueued == 0) {
		grant(d, f);
		return;
	}
	/* A pending freeze is a request waiting, counted against the connection's limit. */
	c->npending++;
	cpuhpd_fdstore_changed(d);
	cpuhpd_info("freeze %" PRIu64 " by pid %d waits for %u queued hotplug(s)", f->id,
	            (int)c->peer.pid, d->hotplug.nqueued);
}

static struct freeze *find(struct cpuhpd_conn *c, uint64_t id)
{
	struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &c->d->freezes.list)
	{
		struct freeze *f = cpuhpd_container_of(pos, struct freeze, node);

		if (f->id == id && f->conn == c && f->granted)
			return f;
	}
	return NULL;
}

void cpuhpd_freeze_thaw(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	uint64_t req_id = req->id, freeze_id = req->thaw->freeze_id;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Thawed th = CPUHP__THAWED__INIT;
	struct freeze *f = find(c, freeze_id);

	if (!f) {
		cpuhpd_conn_send_error(c, req_id, ESRCH,
		                       "no freeze %" PRIu64 " held on this connection (a freeze "
		                       "belongs to the connection that took it)",
		                       freeze_id);
		return;
	}
	cpuhpd_info("hotplug freeze %" PRIu64 " ended by pid %d", f->id, (int)c->peer.pid);
	drop(c->d, f);
	th.freeze_id = freeze_id;
	r.id = req_id;
	r.body_case = CPUHP__RESPONSE__BODY_THAWED;
	r.thawed = &th;
	cpuhpd_conn_send(c, &r);
}

void cpuhpd_freeze_queue_empty(struct cpuhpd *d)
{
	struct cpuhpd_list *pos, *tmp;

	/* Granting can close a connection, which drops its freezes: walk safely, and again. */
again:
	cpuhpd_list_for_each_safe(pos, tmp, &d->freezes.list)
	{
		struct freeze *f = cpuhpd_container_of(pos, struct freeze, node);

		if (!f->granted) {
			f->conn->npending--;
			grant(d, f);
			goto again;
		}
	}
}

bool cpuhpd_freeze_active(struct cpuhpd *d, char *buf, size_t size)
{
	struct cpuhpd_list *n = cpuhpd_list_first(&d->freezes.list);
	const struct freeze *f;
	uint64_t ms;

	if (!n)
		return false;
	f = cpuhpd_container_of(n, struct freeze, node);
	ms = uv_now(d->loop) - f->since;
	snprintf(buf, size, "pid %d (%s)%s%s%s, frozen %" PRIu64 ".%" PRIu64 " s%s",
	         (int)f->conn->peer.pid, who_of(f), why_of(f)[0] ? " '" : "", why_of(f),
	         why_of(f)[0] ? "'" : "", ms / 1000, ms % 1000 / 100,
	         d->freezes.n > 1 ? ", and others" : "");
	return true;
}

void cpuhpd_freeze_conn_gone(struct cpuhpd_conn *c)
{
	struct cpuhpd_list *pos, *tmp;

	cpuhpd_list_for_each_safe(pos, tmp, &c->d->freezes.list)
	{
		struct freeze *f = cpuhpd_container_of(pos, struct freeze, node);

		if (f->conn == c) {
			cpuhpd_info("hotplug freeze %" PRIu64 " ended with its client (pid %d)",
			            f->id, (int)c->peer.pid);
			drop(c->d, f);
		}
	}
}

void cpuhpd_freeze_cancel(struct cpuhpd *d)
{
	struct cpuhpd_list *pos, *tmp;

again:
	cpuhpd_list_for_each_safe(pos, tmp, &d->freezes.list)
	{
		struct freeze *f = cpuhpd_container_of(pos, struct freeze, node);
		struct cpuhpd_conn *c = f->conn;
		uint64_t req_id = f->req_id;

		if (f->granted)
			continue;
		drop(d, f);
		cpuhpd_conn_send_error(c, req_id, ECANCELED, "cpuhpd is shutting down");
		goto again;
	}
}

int cpuhpd_freeze_list(struct cpuhpd *d, Cpuhp__LeaseList *out)
{
	struct cpuhpd_list *pos;
	uint64_t now = uv_now(d->loop);

	out->n_freezes = 0;
	out->freezes = calloc(d->freezes.n + 1, sizeof(*out->freezes));
	if (!out->freezes)
		return -ENOMEM;
	cpuhpd_list_for_each(pos, &d->freezes.list)
	{
		const struct freeze *f = cpuhpd_container_of(pos, struct freeze, node);
		Cpuhp__FreezeInfo *fi = calloc(1, sizeof(*fi));

		if (!fi)
			return -ENOMEM;
		cpuhp__freeze_info__init(fi);
		out->freezes[out->n_freezes++] = fi;
		fi->freeze_id = f->id;
		fi->granted = f->granted;
		fi->pid = (uint32_t)f->conn->peer.pid;
		fi->uid = (uint32_t)f->conn->peer.uid;
		fi->comm = (char *)f->conn->peer.comm;
		fi->who = (char *)(f->who ? f->who : f->conn->who ? f->conn->who : "");
		fi->why = (char *)why_of(f);
		fi->held_ms = now - f->since;
		fi->connection = f->conn->id;
	}
	return 0;
}

/* A pending freeze as the request its client sent: the next cpuhpd asks it again. */
static void save_pending(FILE *out, const struct freeze *f)
{
	Cpuhp__Request rq = CPUHP__REQUEST__INIT;
	Cpuhp__Freeze fq = CPUHP__FREEZE__INIT;

	fq.who = f->who ? f->who : (char *)"";
	fq.why = f->why ? f->why : (char *)"";
	rq.id = f->req_id;
	rq.body_case = CPUHP__REQUEST__BODY_FREEZE;
	rq.freeze = &fq;
	cpuhpd_fdstore_put_request(out, f->conn->id, &rq, false);
}

void cpuhpd_freeze_save(const struct cpuhpd_conn *c, FILE *out)
{
	const struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &c->d->freezes.list)
	{
		const struct freeze *f = cpuhpd_container_of(pos, struct freeze, node);

		if (f->conn != c || !f->granted)
			continue;
		fprintf(out, "freeze %u %" PRIu64 " %" PRIu64 " %" PRIu64 " 1", c->id, f->id,
		        f->req_id, f->since);
		cpuhpd_statetext_str(out, f->who);
		cpuhpd_statetext_str(out, f->why);
		fputc('\n', out);
	}
}

void cpuhpd_freeze_save_pending(struct cpuhpd *d, FILE *out)
{
	const struct cpuhpd_list *pos;

	cpuhpd_list_for_each(pos, &d->freezes.list)
	{
		const struct freeze *f = cpuhpd_container_of(pos, struct freeze, node);

		if (!f->granted && f->conn->stored && !f->conn->closing)
			save_pending(out, f);
	}
}

int cpuhpd_freeze_adopt(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc)
{
	struct cpuhpd *d = c->d;

	for (unsigned i = 0; i < sc->nfreezes; i++) {
		const struct cpuhpd_saved_freeze *sf = &sc->freezes[i];
		struct freeze *f;

		if (!sf->granted)
			return -EINVAL; /* written as requests, never as lines */
		f = calloc(1, sizeof(*f));
		if (!f)
			return -ENOMEM;
		f->conn = c;
		f->id = sf->id;
		f->req_id = sf->req_id;
		f->since = sf->since;
		f->granted = true;
		f->who = cpuhpd_identity_dup(sf->who);
		f->why = cpuhpd_identity_dup(sf->why);
		cpuhpd_list_add_tail(&d->freezes.list, &f->node);
		d->freezes.n++;
		if (f->id >= d->freezes.next_id)
			d->freezes.next_id = f->id + 1;
		cpuhpd_info("restart: hotplug freeze %" PRIu64 " of client %u (pid %d) kept", f->id,
		            c->id, (int)c->peer.pid);
	}
	return 0;
}

void cpuhpd_freeze_save_ids(const struct cpuhpd *d, struct cpuhpd_saved *ids)
{
	ids->next_freeze_id = d->freezes.next_id;
}

void cpuhpd_freeze_adopt_ids(struct cpuhpd *d, const struct cpuhpd_saved *s)
{
	if (s->next_freeze_id > d->freezes.next_id)
		d->freezes.next_id = s->next_freeze_id;
}

void cpuhpd_freeze_gauges(const struct cpuhpd *d, struct cpuhpd_snapshot *s)
{
	s->freezes = d->freezes.n;
}
