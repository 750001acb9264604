/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cpuhpd-probe: a scriptable protocol client for the daemon tests.
 *
 * It reads commands on stdin, one per line, and answers each with exactly
 * one JSON line on stdout, so a Python test drives any number of named
 * connections in lock step.  Requests are pipelined: "send" does not wait,
 * and since cpuhpd handles one connection's requests in order, a "status"
 * sent after a waiting "acquire" on the same connection proves the acquire
 * is queued.  That is how the tests order events without sleeping.
 * Framing is proto/frame.c's, the one implementation.
 *
 * Commands (NAME names a connection):
 *   connect NAME [batch]    connect and say Hello (prints the HelloReply); batch:
 *                           Hello.state_batch (state calls may come in batches)
 *   rawconnect NAME         connect only
 *   send NAME REQ...        send a request, print its id; REQ is one of
 *                           hello VERSION | acquire MS | release ID | status | watch
 *                           | acquiredelay MS DELAY_MS | hellofrom VERSION CONN
 *                           | online CPUS MS | offline CPUS MS | empty
 *                           | forceonline CPUS MS GRACE_MS | forceoffline CPUS MS GRACE_MS
 *                           | forcesmt WORD MS GRACE_MS
 *                           | identify WHO WHY | acquireas MS WHO WHY | leases
 *                           | freeze WHO WHY | thaw ID
 *                           | smt WORD MS ("-": empty) | metrics
 *                           (WHO/WHY: one word each; "-" is empty; "long" is 300 x's)
 *                           | register STATE PRIO DEADLINE_MS [nocalls] [prepare] [multi]
 *                           | remove ID [nocalls] | instance_add ID NAME [nocalls]
 *                           | instance_remove ID INST_ID [nocalls]
 *                           | answer CALL_ID ok|skipped|ERR_CODE [MESSAGE...]
 *                           (skipped: not run, an earlier call of its batch failed)
 *                           | states [LIMIT [AFTER]] | leases [LIMIT [AFTER]]
 *                           (a page of the listing: at most LIMIT rows, 0 as many as
 *                           fit; AFTER: a page's "next", in hex, as printed)
 *                           (StateCall events, which carry the register's id, are
 *                           never taken as the reply of a call: recv them)
 *   call NAME REQ...        send, then wait for the reply with that id (other
 *                           responses that arrive meanwhile are kept for recv)
 *   recv NAME               the oldest response not yet printed (waits for one)
 *   queued NAME             how many responses are kept for recv (reads nothing: after a
 *                           call on NAME, every response sent before its reply is counted)
 *   raw NAME HEX            write bytes as they are
 *   shutwr NAME             shutdown(SHUT_WR)
 *   eof NAME                read to the end: prints the responses left and how it ended
 *   close NAME              close the connection
 *   many PREFIX N MS        open N connections, Hello + acquire MS on each; wait for all
 *   closemany PREFIX K      close the first K still open of those
 *   flood PREFIX N K        open N connections with Hello, write K Status requests on
 *                           each and never read; returns once cpuhpd has read every
 *                           byte (SIOCOUTQ 0 on each: the kernel's own count)
 *   halfmany PREFIX N LEN SENT
 *                           open N connections with Hello, then on each a prefix
 *                           announcing LEN payload bytes and only SENT of them
 *   eofmany PREFIX          read each of those to its end, count the last error
 *                           codes, close them
 *   readmany PREFIX N       wait until cpuhpd has read every byte written on the
 *                           first N of those (SIOCOUTQ 0 on each)
 *   drip NAME HEX MS        write HEX a byte at a time; before each next byte wait up
 *                           to MS for the connection to become readable (an answer
 *                           or its end), and stop there
 *   pid                     this process's pid
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cpuhp.pb-c.h"
#include "frame.h"

struct queued {
	struct queued *next;
	Cpuhp__Response *resp;
};

struct conn {
	char name[64];
	int fd;
	uint64_t next_id;
	struct cpuhp__frame_decoder dec;
	struct queued *head, *tail;
	uint8_t buf[8192];
	size_t have, off;
	bool eof;
	int err; /* positive errno once reading failed */
};

static struct conn **conns;
static size_t nconns, capconns;
static const char *sock_path;

/* ---- JSON output ---- */

/* A page of a listing: the rows after it and the cursor for the next ("" if none). */
static void page_out(uint32_t more, ProtobufCBinaryData next)
{
	printf(",\"more\":%u,\"next\":\"", more);
	for (size_t i = 0; i < next.len; i++)
		printf("%02x", next.data[i]);
	putchar('"');
}

static void jstr(const char *s)
{
	putchar('"');
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch < 0x20)
			printf("\\u%04x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static const char *code_name(int code)
{
	const ProtobufCEnumValue *v =
	    protobuf_c_enum_descriptor_get_value(&cpuhp__error_code__descriptor, code);

	return v ? v->name : "?";
}

static const char *writer_name(int w)
{
	const ProtobufCEnumValue *v =
	    protobuf_c_enum_descriptor_get_value(&cpuhp__writer_state__descriptor, w);

	return v ? v->name : "?";
}

static const char *tf(bool b)
{
	return b ? "true" : "false";
}

static const char *section_name(Cpuhp__StateSection s)
{
	return s == CPUHP__STATE_SECTION__SECTION_PREPARE ? "prepare" : "online";
}

static void print_runs(Cpuhp__StateRun **r, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		jstr(r[i]->name);
		printf(",\"phase\":\"%s\",\"rollback\":%s,\"cpu\":%u,\"us\":%" PRIu64
		       ",\"ok\":%s,\"code\":\"%s\",\"pid\":%d,\"timed_out\":%s,\"client_gone\":%s,"
		       "\"comm\":",
		       r[i]->phase == CPUHP__STATE_PHASE__PHASE_TEARDOWN ? "teardown" : "startup",
		       tf(r[i]->rollback), r[i]->cpu, r[i]->micros, tf(r[i]->ok),
		       code_name(r[i]->code), r[i]->pid, tf(r[i]->timed_out),
		       tf(r[i]->client_gone));
		jstr(r[i]->comm);
		printf(",\"message\":");
		jstr(r[i]->message);
		printf(",\"instance\":");
		jstr(r[i]->instance);
		printf(",\"section\":\"%s\"}", section_name(r[i]->section));
	}
	printf("]");
}

static void print_results(Cpuhp__CpuResult **r, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"cpu\":%u,\"ok\":%s,\"changed\":%s,\"code\":\"%s\",\"message\":",
		       i ? "," : "", r[i]->cpu, r[i]->ok ? "true" : "false",
		       r[i]->changed ? "true" : "false", code_name(r[i]->code));
		jstr(r[i]->message);
		/* Only with states, so that answers without them read as before. */
		if (r[i]->failed_state[0]) {
			printf(",\"failed_state\":");
			jstr(r[i]->failed_state);
		}
		if (r[i]->n_states) {
			printf(",\"states\":");
			print_runs(r[i]->states, r[i]->n_states);
		}
		printf("}");
	}
	printf("]");
}

static void print_lease_info(const Cpuhp__LeaseInfo *li)
{
	printf("{\"lease_id\":%" PRIu64 ",\"fast\":%s,\"count\":%u,\"pid\":%u,"
	       "\"uid\":%u,\"held_ms\":%" PRIu64 ",\"connection\":%u,\"mode\":\"%s\","
	       "\"delay_ms\":%u,\"comm\":",
	       li->lease_id, li->kind == CPUHP__LEASE_KIND__LEASE_FAST ? "true" : "false",
	       li->count, li->pid, li->uid, li->held_ms, li->connection,
	       li->mode == CPUHP__LEASE_MODE__LEASE_DELAY ? "delay" : "block", li->delay_ms);
	jstr(li->comm);
	printf(",\"who\":");
	jstr(li->who);
	printf(",\"why\":");
	jstr(li->why);
	printf("}");
}

/* A forced hotplug's revoked leases, as a "revoked" member. */
static void print_revoked(Cpuhp__LeaseInfo **v, size_t n)
{
	printf(",\"revoked\":[");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		print_lease_info(v[i]);
	}
	printf("]");
}

static void print_response(const Cpuhp__Response *r)
{
	printf("{\"id\":%" PRIu64 ",", r->id);
	switch (r->body_case) {
	case CPUHP__RESPONSE__BODY_ERROR:
		printf("\"kind\":\"error\",\"code\":\"%s\",\"message\":",
		       code_name(r->error->code));
		jstr(r->error->message);
		break;
	case CPUHP__RESPONSE__BODY_HELLO:
		printf(
		    "\"kind\":\"hello\",\"version\":%u,\"max_frame\":%u,\"fast_path\":%s,"
		    "\"state_batch\":%s,\"max_delay_ms\":%u,\"connection\":%u,\"daemon_version\":",
		    r->hello->version, r->hello->max_frame, r->hello->fast_path ? "true" : "false",
		    r->hello->state_batch ? "true" : "false", r->hello->max_delay_ms,
		    r->hello->connection);
		jstr(r->hello->daemon_version);
		break;
	case CPUHP__RESPONSE__BODY_LEASE_GRANTED:
		printf("\"kind\":\"lease_granted\",\"lease_id\":%" PRIu64
		       ",\"mode\":\"%s\",\"delay_ms\":%u,\"delay_clipped\":%s",
		       r->lease_granted->lease_id,
		       r->lease_granted->mode == CPUHP__LEASE_MODE__LEASE_DELAY ? "delay" : "block",
		       r->lease_granted->delay_ms,
		       r->lease_granted->delay_clipped ? "true" : "false");
		break;
	case CPUHP__RESPONSE__BODY_LEASE_RELEASED:
		printf("\"kind\":\"lease_released\",\"lease_id\":%" PRIu64,
		       r->lease_released->lease_id);
		break;
	case CPUHP__RESPONSE__BODY_SET_ONLINE:
		printf("\"kind\":\"set_online\",\"online\":");
		jstr(r->set_online->online);
		printf(",\"results\":");
		print_results(r->set_online->results, r->set_online->n_results);
		print_revoked(r->set_online->revoked, r->set_online->n_revoked);
		break;
	case CPUHP__RESPONSE__BODY_STATUS: {
		const Cpuhp__Status *s = r->status;

		printf("\"kind\":\"status\",\"online\":");
		jstr(s->online);
		printf(",\"offline\":");
		jstr(s->offline);
		printf(",\"possible\":");
		jstr(s->possible);
		printf(",\"present\":");
		jstr(s->present);
		printf(",\"leases_held\":%u,\"writer\":\"%s\",\"pending_leases\":%u,"
		       "\"pending_hotplugs\":%u,\"connections\":%u,\"freezes\":%u,"
		       "\"bypasses\":%" PRIu64 ",\"revocations\":%" PRIu64
		       ",\"fast_leases_held\":%u,\"restart_grace_ms\":%u",
		       s->leases_held, writer_name(s->writer), s->pending_leases,
		       s->pending_hotplugs, s->connections, s->freezes, s->bypasses, s->revocations,
		       s->fast_leases_held, s->restart_grace_ms);
		break;
	}
	case CPUHP__RESPONSE__BODY_WATCH_STARTED:
		printf("\"kind\":\"watch_started\"");
		break;
	case CPUHP__RESPONSE__BODY_SMT:
		printf("\"kind\":\"smt\",\"control\":");
		jstr(r->smt->control);
		printf(",\"active\":%s,\"online\":", r->smt->active ? "true" : "false");
		jstr(r->smt->cpus ? r->smt->cpus->online : "");
		printf(",\"results\":");
		if (r->smt->cpus)
			print_results(r->smt->cpus->results, r->smt->cpus->n_results);
		else
			printf("[]");
		if (r->smt->cpus)
			print_revoked(r->smt->cpus->revoked, r->smt->cpus->n_revoked);
		break;
	case CPUHP__RESPONSE__BODY_METRICS:
		printf("\"kind\":\"metrics\",\"text\":");
		jstr(r->metrics->text);
		break;
	case CPUHP__RESPONSE__BODY_IDENTIFIED:
		printf("\"kind\":\"identified\"");
		break;
	case CPUHP__RESPONSE__BODY_LEASE_LIST: {
		const Cpuhp__LeaseList *l = r->lease_list;

		printf("\"kind\":\"lease_list\",\"leases\":[");
		for (size_t i = 0; i < l->n_leases; i++) {
			const Cpuhp__LeaseInfo *li = l->leases[i];

			printf("%s", i ? "," : "");
			print_lease_info(li);
		}
		printf("],\"hotplugs\":[");
		for (size_t i = 0; i < l->n_hotplugs; i++) {
			const Cpuhp__HotplugInfo *h = l->hotplugs[i];

			printf("%s{\"seq\":%" PRIu64 ",\"online\":%s,\"state\":\"%s\",\"pid\":%u,"
			       "\"uid\":%u,\"waited_ms\":%" PRIu64
			       ",\"timeout_ms\":%u,\"force\":%s,"
			       "\"force_grace_ms\":%u,\"cpus\":",
			       i ? "," : "", h->seq, h->online ? "true" : "false",
			       writer_name(h->state), h->pid, h->uid, h->waited_ms, h->timeout_ms,
			       h->force ? "true" : "false", h->force_grace_ms);
			jstr(h->cpus);
			printf(",\"comm\":");
			jstr(h->comm);
			printf("}");
		}
		printf("],\"freezes\":[");
		for (size_t i = 0; i < l->n_freezes; i++) {
			const Cpuhp__FreezeInfo *f = l->freezes[i];

			printf("%s{\"freeze_id\":%" PRIu64 ",\"granted\":%s,\"pid\":%u,"
			       "\"uid\":%u,\"held_ms\":%" PRIu64 ",\"connection\":%u,\"comm\":",
			       i ? "," : "", f->freeze_id, f->granted ? "true" : "false", f->pid,
			       f->uid, f->held_ms, f->connection);
			jstr(f->comm);
			printf(",\"who\":");
			jstr(f->who);
			printf(",\"why\":");
			jstr(f->why);
			printf("}");
		}
		printf("]");
		page_out(l->more, l->next);
		break;
	}
	case CPUHP__RESPONSE__BODY_FROZEN:
		printf("\"kind\":\"frozen\",\"freeze_id\":%" PRIu64, r->frozen->freeze_id);
		break;
	case CPUHP__RESPONSE__BODY_THAWED:
		printf("\"kind\":\"thawed\",\"freeze_id\":%" PRIu64, r->thawed->freeze_id);
		break;
	case CPUHP__RESPONSE__BODY_EVENT: {
		const Cpuhp__Event *e = r->event;

		printf("\"kind\":\"event\",");
		if (e->kind_case == CPUHP__EVENT__KIND_HOTPLUG_STARTED) {
			printf("\"event\":\"hotplug_started\",\"online\":%s,\"cpus\":",
			       e->hotplug_started->online ? "true" : "false");
			jstr(e->hotplug_started->cpus);
		} else if (e->kind_case == CPUHP__EVENT__KIND_HOTPLUG_FINISHED) {
			printf("\"event\":\"hotplug_finished\",\"online\":%s,\"ok\":%s,\"cpus\":",
			       e->hotplug_finished->online ? "true" : "false",
			       e->hotplug_finished->ok ? "true" : "false");
			jstr(e->hotplug_finished->cpus);
			printf(",\"results\":");
			print_results(e->hotplug_finished->results, e->hotplug_finished->n_results);
		} else if (e->kind_case == CPUHP__EVENT__KIND_ONLINE_CHANGED) {
			printf("\"event\":\"online_changed\",\"external\":%s,\"online\":",
			       e->online_changed->external ? "true" : "false");
			jstr(e->online_changed->online);
		} else if (e->kind_case == CPUHP__EVENT__KIND_PRESENT_CHANGED) {
			printf("\"event\":\"present_changed\",\"present\":");
			jstr(e->present_changed->present);
			printf(",\"added\":");
			jstr(e->present_changed->added);
			printf(",\"removed\":");
			jstr(e->present_changed->removed);
			printf(",\"online\":");
			jstr(e->present_changed->online);
		} else if (e->kind_case == CPUHP__EVENT__KIND_LEASE_REVOKED) {
			const Cpuhp__LeaseRevoked *rv = e->lease_revoked;
			static const char *const reasons[] = {"max_lease", "delay", "forced"};

			printf("\"event\":\"lease_revoked\",\"lease_id\":%" PRIu64
			       ",\"held_ms\":%" PRIu64 ",\"max_lease_ms\":%u,\"reason\":\"%s\","
			       "\"hotplug_id\":%" PRIu64
			       ",\"fast\":%s,\"count\":%u,\"delay_ms\":%u",
			       rv->lease_id, rv->held_ms, rv->max_lease_ms,
			       (unsigned)rv->reason < 3 ? reasons[rv->reason] : "?", rv->hotplug_id,
			       rv->fast ? "true" : "false", rv->count, rv->delay_ms);
		} else if (e->kind_case == CPUHP__EVENT__KIND_HOTPLUG_PENDING) {
			const Cpuhp__HotplugPending *hp = e->hotplug_pending;

			printf(
			    "\"event\":\"hotplug_pending\",\"hotplug_id\":%" PRIu64
			    ",\"online\":%s,\"timeout_ms\":%u,\"force\":%s,\"force_grace_ms\":%u,"
			    "\"cpus\":",
			    hp->hotplug_id, hp->online ? "true" : "false", hp->timeout_ms,
			    hp->force ? "true" : "false", hp->force_grace_ms);
			jstr(hp->cpus);
			printf(",\"smt\":");
			jstr(hp->smt);
		} else if (e->kind_case == CPUHP__EVENT__KIND_HOTPLUG_CANCELLED) {
			const Cpuhp__HotplugCancelled *hc = e->hotplug_cancelled;

			printf("\"event\":\"hotplug_cancelled\",\"hotplug_id\":%" PRIu64
			       ",\"online\":%s,\"code\":\"%s\",\"cpus\":",
			       hc->hotplug_id, hc->online ? "true" : "false", code_name(hc->code));
			jstr(hc->cpus);
			printf(",\"smt\":");
			jstr(hc->smt);
			printf(",\"message\":");
			jstr(hc->message);
		} else if (e->kind_case == CPUHP__EVENT__KIND_LEASE_BYPASSED) {
			printf("\"event\":\"lease_bypassed\",\"leases\":%u,\"online\":",
			       e->lease_bypassed->leases);
			jstr(e->lease_bypassed->online);
			printf(",\"was\":");
			jstr(e->lease_bypassed->was);
		} else {
			printf("\"event\":\"unknown\"");
		}
		break;
	}
	case CPUHP__RESPONSE__BODY_STATE_CALL: {
		const Cpuhp__StateCall *sc = r->state_call;

		printf("\"kind\":\"state_call\",\"state_id\":%" PRIu64
		       ",\"cpu\":%u,\"phase\":\"%s\","
		       "\"external\":%s,\"rollback\":%s,\"call_id\":%" PRIu64 ",\"batch\":%" PRIu64
		       ",\"instance_id\":%" PRIu64 ",\"section\":\"%s\"",
		       sc->state_id, sc->cpu,
		       sc->phase == CPUHP__STATE_PHASE__PHASE_TEARDOWN ? "teardown" : "startup",
		       tf(sc->external), tf(sc->rollback), sc->call_id, sc->batch, sc->instance_id,
		       section_name(sc->section));
		break;
	}
	case CPUHP__RESPONSE__BODY_STATE_REGISTERED:
		printf("\"kind\":\"state_registered\",\"state_id\":%" PRIu64 ",\"runs\":",
		       r->state_registered->state_id);
		print_runs(r->state_registered->runs, r->state_registered->n_runs);
		break;
	case CPUHP__RESPONSE__BODY_STATE_REMOVED:
		printf("\"kind\":\"state_removed\",\"state_id\":%" PRIu64 ",\"runs\":",
		       r->state_removed->state_id);
		print_runs(r->state_removed->runs, r->state_removed->n_runs);
		break;
	case CPUHP__RESPONSE__BODY_INSTANCE_ADDED:
		printf("\"kind\":\"instance_added\",\"state_id\":%" PRIu64
		       ",\"instance_id\":%" PRIu64 ",\"runs\":",
		       r->instance_added->state_id, r->instance_added->instance_id);
		print_runs(r->instance_added->runs, r->instance_added->n_runs);
		break;
	case CPUHP__RESPONSE__BODY_INSTANCE_REMOVED:
		printf("\"kind\":\"instance_removed\",\"state_id\":%" PRIu64
		       ",\"instance_id\":%" PRIu64 ",\"runs\":",
		       r->instance_removed->state_id, r->instance_removed->instance_id);
		print_runs(r->instance_removed->runs, r->instance_removed->n_runs);
		break;
	case CPUHP__RESPONSE__BODY_STATE_LIST:
		printf("\"kind\":\"state_list\",\"states\":[");
		for (size_t i = 0; i < r->state_list->n_states; i++) {
			const Cpuhp__StateInfo *si = r->state_list->states[i];

			printf("%s{\"state_id\":%" PRIu64 ",\"priority\":%d,\"deadline_ms\":%u,"
			       "\"pid\":%d,\"uid\":%u,\"name\":",
			       i ? "," : "", si->state_id, si->priority, si->deadline_ms, si->pid,
			       si->uid);
			jstr(si->name);
			printf(",\"comm\":");
			jstr(si->comm);
			printf(",\"cpus\":");
			jstr(si->cpus);
			printf(",\"section\":\"%s\",\"multi\":%s,\"instances\":%u}",
			       section_name(si->section), tf(si->multi), si->instances);
		}
		printf("]");
		page_out(r->state_list->more, r->state_list->next);
		break;
	default:
		printf("\"kind\":\"unknown\"");
		break;
	}
	printf("}");
}

static void reply_err(const char *what, int err)
{
	printf("{\"ok\":false,\"what\":");
	jstr(what);
	printf(",\"errno\":");
	jstr(strerrorname_np(err) ? strerrorname_np(err) : "?");
	printf(",\"error\":");
	jstr(strerror(err));
	printf("}\n");
}

/* ---- connections ---- */

static struct conn *find(const char *name)
{
	for (size_t i = 0; i < nconns; i++)
		if (conns[i] && !strcmp(conns[i]->name, name))
			return conns[i];
	return NULL;
}

static void drop(struct conn *c)
{
	for (size_t i = 0; i < nconns; i++)
		if (conns[i] == c)
			conns[i] = NULL;
	while (c->head) {
		struct queued *q = c->head;

		c->head = q->next;
		cpuhp__response__free_unpacked(q->resp, NULL);
		free(q);
	}
	cpuhp__frame_decoder_fini(&c->dec);
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}

static struct conn *open_conn(const char *name, int *err)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct conn *c;

	if (find(name))
		drop(find(name));
	c = calloc(1, sizeof(*c));
	if (!c) {
		*err = ENOMEM;
		return NULL;
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->next_id = 1;
	cpuhp__frame_decoder_init(&c->dec, 0);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strncpy(sa.sun_path, sock_path, sizeof(sa.sun_path) - 1);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		*err = errno;
		drop(c);
		return NULL;
	}
	if (nconns == capconns) {
		capconns = capconns ? capconns * 2 : 16;
		conns = realloc(conns, capconns * sizeof(*conns));
	}
	conns[nconns++] = c;
	return c;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Read until one more response is queued, or the stream ends.
 * Return: 0 with a response queued; else EOF as -1 or a positive errno.
 */
static int read_one(struct conn *c)
{
	for (;;) {
		if (c->off < c->have) {
			const uint8_t *payload;
			size_t plen;
			ssize_t n = cpuhp__frame_decoder_feed(&c->dec, c->buf + c->off,
			                                      c->have - c->off, &payload, &plen);
			Cpuhp__Response *resp;
			struct queued *q;

			if (n < 0)
				return (int)-n;
			c->off += (size_t)n;
			if (!payload)
				continue;
			if (cpuhp__frame_unpack_response(payload, plen, &resp))
				return EPROTO;
			q = calloc(1, sizeof(*q));
			q->resp = resp;
			if (c->tail)
				c->tail->next = q;
			else
				c->head = q;
			c->tail = q;
			return 0;
		}
		if (c->eof)
			return -1;
		if (c->err)
			return c->err;
		{
			ssize_t n = recv(c->fd, c->buf, sizeof(c->buf), 0);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				c->err = errno;
				return c->err;
			}
			if (n == 0) {
				c->eof = true;
				return -1;
			}
			c->have = (size_t)n;
			c->off = 0;
		}
	}
}

static Cpuhp__Response *pop(struct conn *c)
{
	struct queued *q = c->head;
	Cpuhp__Response *r;

	if (!q)
		return NULL;
	c->head = q->next;
	if (!c->head)
		c->tail = NULL;
	r = q->resp;
	free(q);
	return r;
}

/* Remove and return the queued response with @id, reading more as needed. */
static Cpuhp__Response *wait_id(struct conn *c, uint64_t id, int *err)
{
	for (;;) {
		struct queued **pp;

		for (pp = &c->head; *pp; pp = &(*pp)->next) {
			struct queued *q = *pp;

			/* Id 0 errors concern the connection: they answer every pending request. */
			if ((q->resp->id == id &&
			     q->resp->body_case != CPUHP__RESPONSE__BODY_STATE_CALL) ||
			    (q->resp->id == 0 &&
			     q->resp->body_case == CPUHP__RESPONSE__BODY_ERROR)) {
				Cpuhp__Response *r = q->resp;

				*pp = q->next;
				if (c->tail == q) {
					c->tail = NULL;
					for (struct queued *t = c->head; t; t = t->next)
						c->tail = t;
				}
				free(q);
				return r;
			}
		}
		*err = read_one(c);
		if (*err)
			return NULL;
	}
}

/* A WHO/WHY word of the probe's command line: "-" is empty, "long" is over the limit. */
static char *identity_word(char *w)
{
	static char longer[301];

	if (!strcmp(w, "-"))
		return (char *)"";
	if (!strcmp(w, "long")) {
		memset(longer, 'x', sizeof(longer) - 1);
		return longer;
	}
	return w;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* @hex as bytes in @buf (cut to @size). */
static ProtobufCBinaryData unhex(const char *hex, uint8_t *buf, size_t size)
{
	ProtobufCBinaryData b = {0, buf};

	while (hex[2 * b.len] && hex[2 * b.len + 1] && b.len < size) {
		buf[b.len] = (uint8_t)(hexval(hex[2 * b.len]) << 4 | hexval(hex[2 * b.len + 1]));
		b.len++;
	}
	return b;
}

/* Build and send the request in @argv; Return: its id, or 0 on error (printed). */
static uint64_t send_req(struct conn *c, int argc, char **argv)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Hello hello = CPUHP__HELLO__INIT;
	Cpuhp__LeaseAcquire acq = CPUHP__LEASE_ACQUIRE__INIT;
	Cpuhp__LeaseRelease rel = CPUHP__LEASE_RELEASE__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;
	Cpuhp__StatusRequest st = CPUHP__STATUS_REQUEST__INIT;
	Cpuhp__Watch w = CPUHP__WATCH__INIT;
	Cpuhp__Identify ident = CPUHP__IDENTIFY__INIT;
	Cpuhp__ListLeases ll = CPUHP__LIST_LEASES__INIT;
	Cpuhp__Freeze fr = CPUHP__FREEZE__INIT;
	Cpuhp__Thaw th = CPUHP__THAW__INIT;
	Cpuhp__RegisterState rs = CPUHP__REGISTER_STATE__INIT;
	Cpuhp__RemoveState rm = CPUHP__REMOVE_STATE__INIT;
	Cpuhp__AddInstance ai = CPUHP__ADD_INSTANCE__INIT;
	Cpuhp__RemoveInstance ri = CPUHP__REMOVE_INSTANCE__INIT;
	Cpuhp__StateAnswer ans = CPUHP__STATE_ANSWER__INIT;
	Cpuhp__ListStates ls = CPUHP__LIST_STATES__INIT;
	char msg[1024] = "";
	uint8_t cursor[128];
	Cpuhp__SetSmt smt = CPUHP__SET_SMT__INIT;
	Cpuhp__MetricsRequest mr = CPUHP__METRICS_REQUEST__INIT;
	const char *k = argc > 0 ? argv[0] : "";
	uint8_t *frame;
	size_t len;
	int err;

	req.id = c->next_id++;
	if (!strcmp(k, "hello") && argc >= 2) {
		hello.version = (uint32_t)strtoul(argv[1], NULL, 10);
		hello.client_name = (char *)"cpuhpd-probe";
		hello.state_batch = argc >= 3 && !strcmp(argv[2], "batch");
		req.body_case = CPUHP__REQUEST__BODY_HELLO;
		req.hello = &hello;
	} else if (!strcmp(k, "hellofrom") && argc >= 3) {
		hello.version = (uint32_t)strtoul(argv[1], NULL, 10);
		hello.client_name = (char *)"cpuhpd-probe";
		hello.notices_to = (uint32_t)strtoul(argv[2], NULL, 10);
		req.body_case = CPUHP__REQUEST__BODY_HELLO;
		req.hello = &hello;
	} else if (!strcmp(k, "acquire") && argc >= 2) {
		acq.timeout_ms = (uint32_t)strtoul(argv[1], NULL, 10);
		req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
		req.lease_acquire = &acq;
	} else if (!strcmp(k, "acquiredelay") && argc >= 3) {
		acq.timeout_ms = (uint32_t)strtoul(argv[1], NULL, 10);
		acq.mode = CPUHP__LEASE_MODE__LEASE_DELAY;
		acq.delay_ms = (uint32_t)strtoul(argv[2], NULL, 10);
		req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
		req.lease_acquire = &acq;
	} else if (!strcmp(k, "acquireas") && argc >= 4) {
		acq.timeout_ms = (uint32_t)strtoul(argv[1], NULL, 10);
		acq.who = identity_word(argv[2]);
		acq.why = identity_word(argv[3]);
		req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
		req.lease_acquire = &acq;
	} else if (!strcmp(k, "identify") && argc >= 3) {
		ident.who = identity_word(argv[1]);
		ident.why = identity_word(argv[2]);
		req.body_case = CPUHP__REQUEST__BODY_IDENTIFY;
		req.identify = &ident;
	} else if (!strcmp(k, "freeze") && argc >= 3) {
		fr.who = identity_word(argv[1]);
		fr.why = identity_word(argv[2]);
		req.body_case = CPUHP__REQUEST__BODY_FREEZE;
		req.freeze = &fr;
	} else if (!strcmp(k, "thaw") && argc >= 2) {
		th.freeze_id = strtoull(argv[1], NULL, 10);
		req.body_case = CPUHP__REQUEST__BODY_THAW;
		req.thaw = &th;
	} else if ((!strcmp(k, "smt") && argc >= 3) || (!strcmp(k, "forcesmt") && argc >= 4)) {
		smt.control = identity_word(argv[1]);
		smt.timeout_ms = (uint32_t)strtoul(argv[2], NULL, 10);
		smt.force = !strcmp(k, "forcesmt");
		smt.force_grace_ms = smt.force ? (uint32_t)strtoul(argv[3], NULL, 10) : 0;
		req.body_case = CPUHP__REQUEST__BODY_SET_SMT;
		req.set_smt = &smt;
	} else if (!strcmp(k, "metrics")) {
		req.body_case = CPUHP__REQUEST__BODY_METRICS;
		req.metrics = &mr;
	} else if (!strcmp(k, "leases")) {
		if (argc >= 2)
			ll.limit = (uint32_t)strtoul(argv[1], NULL, 10);
		if (argc >= 3)
			ll.after = unhex(argv[2], cursor, sizeof(cursor));
		req.body_case = CPUHP__REQUEST__BODY_LIST_LEASES;
		req.list_leases = &ll;
	} else if (!strcmp(k, "release") && argc >= 2) {
		rel.lease_id = strtoull(argv[1], NULL, 10);
		req.body_case = CPUHP__REQUEST__BODY_LEASE_RELEASE;
		req.lease_release = &rel;
	} else if (((!strcmp(k, "online") || !strcmp(k, "offline")) && argc >= 3) ||
	           ((!strcmp(k, "forceonline") || !strcmp(k, "forceoffline")) && argc >= 4)) {
		so.cpus = argv[1];
		so.online = !strcmp(k, "online") || !strcmp(k, "forceonline");
		so.timeout_ms = (uint32_t)strtoul(argv[2], NULL, 10);
		so.force = !strncmp(k, "force", 5);
		so.force_grace_ms = so.force ? (uint32_t)strtoul(argv[3], NULL, 10) : 0;
		req.body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
		req.set_online = &so;
	} else if (!strcmp(k, "status")) {
		req.body_case = CPUHP__REQUEST__BODY_STATUS;
		req.status = &st;
	} else if (!strcmp(k, "watch")) {
		req.body_case = CPUHP__REQUEST__BODY_WATCH;
		req.watch = &w;
	} else if (!strcmp(k, "register") && argc >= 4) {
		rs.name = argv[1];
		rs.priority = (int32_t)strtol(argv[2], NULL, 10);
		rs.deadline_ms = (uint32_t)strtoul(argv[3], NULL, 10);
		/* Then any of: nocalls, prepare, multi, section=N (a raw value). */
		for (int i = 4; i < argc; i++) {
			if (!strcmp(argv[i], "nocalls"))
				rs.nocalls = true;
			else if (!strcmp(argv[i], "prepare"))
				rs.section = CPUHP__STATE_SECTION__SECTION_PREPARE;
			else if (!strcmp(argv[i], "multi"))
				rs.multi = true;
			else if (!strncmp(argv[i], "section=", 8))
				rs.section = (Cpuhp__StateSection)strtol(argv[i] + 8, NULL, 10);
		}
		req.body_case = CPUHP__REQUEST__BODY_REGISTER_STATE;
		req.register_state = &rs;
	} else if (!strcmp(k, "remove") && argc >= 2) {
		rm.state_id = strtoull(argv[1], NULL, 10);
		rm.nocalls = argc >= 3 && !strcmp(argv[2], "nocalls");
		req.body_case = CPUHP__REQUEST__BODY_REMOVE_STATE;
		req.remove_state = &rm;
	} else if (!strcmp(k, "instance_add") && argc >= 3) {
		ai.state_id = strtoull(argv[1], NULL, 10);
		ai.name = argv[2];
		ai.nocalls = argc >= 4 && !strcmp(argv[3], "nocalls");
		req.body_case = CPUHP__REQUEST__BODY_ADD_INSTANCE;
		req.add_instance = &ai;
	} else if (!strcmp(k, "instance_remove") && argc >= 3) {
		ri.state_id = strtoull(argv[1], NULL, 10);
		ri.instance_id = strtoull(argv[2], NULL, 10);
		ri.nocalls = argc >= 4 && !strcmp(argv[3], "nocalls");
		req.body_case = CPUHP__REQUEST__BODY_REMOVE_INSTANCE;
		req.remove_instance = &ri;
	} else if (!strcmp(k, "answer") && argc >= 3) {
		const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value_by_name(
		    &cpuhp__error_code__descriptor, argv[2]);

		ans.call_id = strtoull(argv[1], NULL, 10);
		ans.ok = !strcmp(argv[2], "ok");
		ans.code = v ? (Cpuhp__ErrorCode)v->value : CPUHP__ERROR_CODE__ERR_UNKNOWN;
		ans.skipped = !strcmp(argv[2], "skipped");
		if (ans.skipped)
			ans.code = CPUHP__ERROR_CODE__ERR_ECANCELED;
		for (int i = 3; i < argc; i++)
			snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), "%s%s",
			         i > 3 ? " " : "", argv[i]);
		ans.message = msg;
		req.body_case = CPUHP__REQUEST__BODY_STATE_ANSWER;
		req.state_answer = &ans;
	} else if (!strcmp(k, "states")) {
		if (argc >= 2)
			ls.limit = (uint32_t)strtoul(argv[1], NULL, 10);
		if (argc >= 3)
			ls.after = unhex(argv[2], cursor, sizeof(cursor));
		req.body_case = CPUHP__REQUEST__BODY_LIST_STATES;
		req.list_states = &ls;
	} else if (strcmp(k, "empty")) {
		printf("{\"ok\":false,\"what\":\"bad request kind\"}\n");
		return 0;
	}
	err = cpuhp__frame_pack_request(&req, &frame, &len);
	if (err) {
		reply_err("pack", -err);
		return 0;
	}
	err = write_all(c->fd, frame, len);
	free(frame);
	/*
	 * The daemon may have answered and closed before this request (connection
	 * limit, shutdown): its id-0 error is still in our receive queue, and
	 * wait_id() takes it as the answer.
	 */
	if ((err == EPIPE || err == ECONNRESET) && read_one(c) == 0)
		return req.id;
	if (err) {
		reply_err("send", err);
		return 0;
	}
	return req.id;
}

static void print_end(int err)
{
	if (err == -1)
		printf("{\"ok\":false,\"eof\":true}\n");
	else
		reply_err("recv", err);
}

static void cmd_many(const char *prefix, unsigned n, const char *ms)
{
	char name[64];
	char *args[2] = {(char *)"hello", (char *)"1"};
	char *acq[2] = {(char *)"acquire", (char *)ms};
	unsigned granted = 0;
	int err;

	/* Connect and send everything first: the daemon sees n clients at once. */
	for (unsigned i = 0; i < n; i++) {
		struct conn *c;

		snprintf(name, sizeof(name), "%s%u", prefix, i);
		c = open_conn(name, &err);
		if (!c) {
			reply_err("connect", err);
			return;
		}
		if (!send_req(c, 2, args) || !send_req(c, 2, acq))
			return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct conn *c;
		Cpuhp__Response *r;

		snprintf(name, sizeof(name), "%s%u", prefix, i);
		c = find(name);
		for (uint64_t id = 1; id <= 2; id++) {
			r = wait_id(c, id, &err);
			if (!r) {
				print_end(err);
				return;
			}
			if (id == 2 && r->body_case == CPUHP__RESPONSE__BODY_LEASE_GRANTED)
				granted++;
			cpuhp__response__free_unpacked(r, NULL);
		}
	}
	printf("{\"ok\":true,\"granted\":%u}\n", granted);
}

static void cmd_closemany(const char *prefix, unsigned k)
{
	size_t plen = strlen(prefix);
	unsigned closed = 0;

	for (size_t i = 0; i < nconns && closed < k; i++) {
		if (conns[i] && !strncmp(conns[i]->name, prefix, plen)) {
			drop(conns[i]);
			closed++;
		}
	}
	printf("{\"ok\":true,\"closed\":%u}\n", closed);
}

/* Open @name and say Hello; Return: the connection, or NULL with the failure printed. */
static struct conn *open_hello(const char *name)
{
	char *hello[2] = {(char *)"hello", (char *)"1"};
	Cpuhp__Response *r;
	struct conn *c;
	uint64_t id;
	int err;

	c = open_conn(name, &err);
	if (!c) {
		reply_err("connect", err);
		return NULL;
	}
	id = send_req(c, 2, hello);
	if (!id)
		return NULL;
	r = wait_id(c, id, &err);
	if (!r) {
		print_end(err);
		return NULL;
	}
	cpuhp__response__free_unpacked(r, NULL);
	return c;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void cmd_flood(const char *prefix, unsigned n, unsigned k)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__StatusRequest st = CPUHP__STATUS_REQUEST__INIT;
	struct conn **cs = calloc(n, sizeof(*cs));
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	char name[64];
	uint64_t t0;
	unsigned open = 0;

	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%s%u", prefix, i);
		if (!(cs[i] = open_hello(name)))
			goto out;
	}
	/* The same K requests for every connection: ids 2..K+1, framed once. */
	req.body_case = CPUHP__REQUEST__BODY_STATUS;
	req.status = &st;
	for (unsigned j = 0; j < k; j++) {
		uint8_t *frame;
		size_t flen;

		req.id = 2 + j;
		if (cpuhp__frame_pack_request(&req, &frame, &flen)) {
			reply_err("pack", ENOMEM);
			goto out;
		}
		if (len + flen > cap) {
			cap = (len + flen) * 2;
			buf = realloc(buf, cap);
		}
		memcpy(buf + len, frame, flen);
		len += flen;
		free(frame);
	}
	for (unsigned i = 0; i < n; i++) {
		cs[i]->next_id = 2 + k;
		/* cpuhpd may close a connection before it read all: EPIPE is an answer too. */
		write_all(cs[i]->fd, buf, len);
	}
	/* Wait until cpuhpd has read (or dropped) every byte, checking each millisecond. */
	t0 = now_ms();
	for (unsigned i = 0; i < n; i++) {
		int q = 0;

		while (ioctl(cs[i]->fd, SIOCOUTQ, &q) == 0 && q > 0)
			poll(NULL, 0, 1);
	}
	for (unsigned i = 0; i < n; i++) {
		struct pollfd pf = {.fd = cs[i]->fd, .events = POLLRDHUP};

		if (poll(&pf, 1, 0) == 0 || !(pf.revents & (POLLRDHUP | POLLHUP)))
			open++;
	}
	printf("{\"ok\":true,\"connections\":%u,\"requests\":%llu,\"still_open\":%u,"
	       "\"wait_ms\":%llu}\n",
	       n, (unsigned long long)n * k, open, (unsigned long long)(now_ms() - t0));
out:
	free(buf);
	free(cs);
}

static void cmd_halfmany(const char *prefix, unsigned n, uint32_t want, size_t sent)
{
	uint8_t *b = calloc(1, 4 + sent);
	char name[64];

	b[0] = (uint8_t)(want >> 24);
	b[1] = (uint8_t)(want >> 16);
	b[2] = (uint8_t)(want >> 8);
	b[3] = (uint8_t)want;
	for (unsigned i = 0; i < n; i++) {
		struct conn *c;

		snprintf(name, sizeof(name), "%s%u", prefix, i);
		if (!(c = open_hello(name))) {
			free(b);
			return;
		}
		write_all(c->fd, b, 4 + sent);
	}
	free(b);
	printf("{\"ok\":true,\"opened\":%u}\n", n);
}

static void cmd_readmany(const char *prefix, unsigned n)
{
	char name[64];

	for (unsigned i = 0; i < n; i++) {
		struct conn *c;
		int q = 0;

		snprintf(name, sizeof(name), "%s%u", prefix, i);
		if (!(c = find(name))) {
			printf("{\"ok\":false,\"what\":\"no connection %s\"}\n", name);
			return;
		}
		while (ioctl(c->fd, SIOCOUTQ, &q) == 0 && q > 0)
			poll(NULL, 0, 1);
	}
	printf("{\"ok\":true}\n");
}

static void cmd_eofmany(const char *prefix)
{
	size_t plen = strlen(prefix);
	unsigned ends = 0, none = 0, ncodes = 0;
	const char *names[16];
	unsigned counts[16];

	for (size_t i = 0; i < nconns; i++) {
		struct conn *c = conns[i];
		const char *last = NULL;
		Cpuhp__Response *r;

		if (!c || strncmp(c->name, prefix, plen))
			continue;
		while (read_one(c) == 0)
			;
		while ((r = pop(c))) {
			if (r->body_case == CPUHP__RESPONSE__BODY_ERROR && r->id == 0)
				last = code_name(r->error->code);
			cpuhp__response__free_unpacked(r, NULL);
		}
		ends++;
		if (!last) {
			none++;
		} else {
			unsigned j;

			for (j = 0; j < ncodes && strcmp(names[j], last); j++)
				;
			if (j == ncodes && ncodes < 16) {
				names[ncodes] = last;
				counts[ncodes++] = 0;
			}
			if (j < ncodes)
				counts[j]++;
		}
		drop(c);
	}
	printf("{\"ok\":true,\"ends\":%u,\"no_error\":%u,\"codes\":{", ends, none);
	for (unsigned j = 0; j < ncodes; j++)
		printf("%s\"%s\":%u", j ? "," : "", names[j], counts[j]);
	printf("}}\n");
}

static void cmd_drip(struct conn *c, const char *hex, int ms)
{
	size_t n = strlen(hex) / 2, sent = 0;
	uint64_t first = 0;
	bool closed = false;

	for (; sent < n; sent++) {
		uint8_t byte = (uint8_t)(hexval(hex[2 * sent]) << 4 | hexval(hex[2 * sent + 1]));
		struct pollfd pf = {.fd = c->fd, .events = POLLIN | POLLRDHUP};

		if (write_all(c->fd, &byte, 1)) {
			closed = true;
			break;
		}
		if (!first)
			first = now_ms();
		if (poll(&pf, 1, ms) > 0) {
			sent++;
			closed = true;
			break;
		}
	}
	printf("{\"ok\":true,\"sent\":%zu,\"of\":%zu,\"answered\":%s,\"ms\":%llu}\n", sent, n,
	       closed ? "true" : "false", (unsigned long long)(now_ms() - first));
}

static void run(int argc, char **argv)
{
	const char *cmd = argv[0];
	struct conn *c = argc > 1 ? find(argv[1]) : NULL;
	Cpuhp__Response *r;
	uint64_t id;
	int err;

	if (!strcmp(cmd, "pid")) {
		printf("{\"ok\":true,\"pid\":%d}\n", (int)getpid());
	} else if ((!strcmp(cmd, "connect") || !strcmp(cmd, "rawconnect")) && argc >= 2) {
		char *hello[3] = {(char *)"hello", (char *)"1", (char *)"batch"};

		c = open_conn(argv[1], &err);
		if (!c) {
			reply_err("connect", err);
			return;
		}
		if (!strcmp(cmd, "rawconnect")) {
			printf("{\"ok\":true}\n");
			return;
		}
		id = send_req(c, argc >= 3 && !strcmp(argv[2], "batch") ? 3 : 2, hello);
		if (!id)
			return;
		r = wait_id(c, id, &err);
		if (!r) {
			print_end(err);
			return;
		}
		print_response(r);
		printf("\n");
		cpuhp__response__free_unpacked(r, NULL);
	} else if (!strcmp(cmd, "many") && argc >= 4) {
		cmd_many(argv[1], (unsigned)strtoul(argv[2], NULL, 10), argv[3]);
	} else if (!strcmp(cmd, "closemany") && argc >= 3) {
		cmd_closemany(argv[1], (unsigned)strtoul(argv[2], NULL, 10));
	} else if (!strcmp(cmd, "flood") && argc >= 4) {
		cmd_flood(argv[1], (unsigned)strtoul(argv[2], NULL, 10),
		          (unsigned)strtoul(argv[3], NULL, 10));
	} else if (!strcmp(cmd, "halfmany") && argc >= 5) {
		cmd_halfmany(argv[1], (unsigned)strtoul(argv[2], NULL, 10),
		             (uint32_t)strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10));
	} else if (!strcmp(cmd, "readmany") && argc >= 3) {
		cmd_readmany(argv[1], (unsigned)strtoul(argv[2], NULL, 10));
	} else if (!strcmp(cmd, "eofmany") && argc >= 2) {
		cmd_eofmany(argv[1]);
	} else if (!c) {
		printf("{\"ok\":false,\"what\":\"no such connection or command\"}\n");
	} else if (!strcmp(cmd, "send") && argc >= 3) {
		id = send_req(c, argc - 2, argv + 2);
		if (id)
			printf("{\"ok\":true,\"sent\":%" PRIu64 "}\n", id);
	} else if (!strcmp(cmd, "call") && argc >= 3) {
		id = send_req(c, argc - 2, argv + 2);
		if (!id)
			return;
		r = wait_id(c, id, &err);
		if (!r) {
			print_end(err);
			return;
		}
		print_response(r);
		printf("\n");
		cpuhp__response__free_unpacked(r, NULL);
	} else if (!strcmp(cmd, "queued")) {
		unsigned n = 0;

		for (struct queued *q = c->head; q; q = q->next)
			n++;
		printf("{\"queued\": %u}\n", n);
	} else if (!strcmp(cmd, "recv")) {
		if (!c->head && (err = read_one(c))) {
			print_end(err);
			return;
		}
		r = pop(c);
		print_response(r);
		printf("\n");
		cpuhp__response__free_unpacked(r, NULL);
	} else if (!strcmp(cmd, "raw") && argc >= 3) {
		size_t n = strlen(argv[2]) / 2;
		uint8_t *b = malloc(n + 1);

		for (size_t i = 0; i < n; i++)
			b[i] = (uint8_t)(hexval(argv[2][2 * i]) << 4 | hexval(argv[2][2 * i + 1]));
		err = write_all(c->fd, b, n);
		free(b);
		if (err)
			reply_err("send", err);
		else
			printf("{\"ok\":true,\"bytes\":%zu}\n", n);
	} else if (!strcmp(cmd, "drip") && argc >= 4) {
		cmd_drip(c, argv[2], atoi(argv[3]));
	} else if (!strcmp(cmd, "shutwr")) {
		shutdown(c->fd, SHUT_WR);
		printf("{\"ok\":true}\n");
	} else if (!strcmp(cmd, "eof")) {
		bool first = true;

		printf("{\"ok\":true,\"responses\":[");
		for (;;) {
			while ((r = pop(c))) {
				printf("%s", first ? "" : ",");
				first = false;
				print_response(r);
				cpuhp__response__free_unpacked(r, NULL);
			}
			err = read_one(c);
			if (err)
				break;
		}
		printf("],\"end\":");
		jstr(err == -1 ? "eof" : (strerrorname_np(err) ? strerrorname_np(err) : "?"));
		printf("}\n");
	} else if (!strcmp(cmd, "close")) {
		drop(c);
		printf("{\"ok\":true}\n");
	} else {
		printf("{\"ok\":false,\"what\":\"bad command\"}\n");
	}
}

int main(int argc, char **argv)
{
	char line[70000];
	struct rlimit rl;

	if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(argc == 2 ? stdout : stderr,
		        "Usage: cpuhpd-probe SOCKET\n"
		        "Scriptable cpuhpd client for the tests: commands on stdin, one JSON line\n"
		        "per command on stdout (see the comment at the top of cpuhpd-probe.c).\n");
		return argc == 2 ? 0 : 2;
	}
	sock_path = argv[1];
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char *args[16];
		int n = 0;

		for (char *tok = strtok(line, " \t\n"); tok && n < 16; tok = strtok(NULL, " \t\n"))
			args[n++] = tok;
		if (n)
			run(n, args);
		fflush(stdout);
	}
	return 0;
}
