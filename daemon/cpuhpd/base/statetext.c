/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state text: its format is in statetext.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "statetext.h"

#define MAX_FIELDS 16

uint64_t cpuhpd_statetext_hash(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i = 0;

	/* FNV-1a over 8-byte words (then the tail bytewise): a rewrite must stay cheap. */
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h ^= w;
		h *= 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < len; i++) {
		h ^= (uint8_t)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void cpuhpd_statetext_hex(FILE *f, const void *p, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	const uint8_t *b = p;
	char buf[512];

	/* A chunk at a time: a byte's fprintf() would cost a state text write most of its time. */
	while (len) {
		size_t n = len < sizeof(buf) / 2 ? len : sizeof(buf) / 2;

		for (size_t i = 0; i < n; i++) {
			buf[2 * i] = digits[b[i] >> 4];
			buf[2 * i + 1] = digits[b[i] & 15];
		}
		fwrite(buf, 1, 2 * n, f);
		b += n;
		len -= n;
	}
}

void cpuhpd_statetext_bytes(FILE *f, const void *p, size_t len)
{
	if (!len) {
		fputs(" -", f);
		return;
	}
	fputc(' ', f);
	cpuhpd_statetext_hex(f, p, len);
}

void cpuhpd_statetext_str(FILE *f, const char *s)
{
	cpuhpd_statetext_bytes(f, s, s ? strlen(s) : 0);
}

int cpuhpd_statetext_header(char *buf, size_t size, const char *body, size_t body_len)
{
	return snprintf(buf, size, "cpuhpd-state %d %zu %016" PRIx64 "\n", CPUHPD_STATETEXT_VERSION,
	                body_len, cpuhpd_statetext_hash(body, body_len));
}

char *cpuhpd_statetext_seal(const char *body, size_t body_len, size_t *len)
{
	char first[CPUHPD_STATETEXT_HEADER_MAX];
	int n = cpuhpd_statetext_header(first, sizeof(first), body, body_len);
	char *t = malloc((size_t)n + body_len + 1);

	if (!t)
		return NULL;
	memcpy(t, first, (size_t)n);
	memcpy(t + n, body, body_len);
	t[(size_t)n + body_len] = '\0';
	*len = (size_t)n + body_len;
	return t;
}

/* ---------------------------------------------------------------- parsing */

struct parser {
	struct cpuhpd_saved *out;
	char *fields[MAX_FIELDS];
	unsigned nfields;
	unsigned line;
	char *why;
	size_t whylen;
	int err; /* -ENOMEM wins over -EINVAL */
};

__attribute__((format(printf, 2, 3))) static int bad(struct parser *p, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (p->why)
		snprintf(p->why, p->whylen, "line %u: %s", p->line, msg);
	if (!p->err)
		p->err = -EINVAL;
	return p->err;
}

static int nomem(struct parser *p)
{
	p->err = -ENOMEM;
	if (p->why)
		snprintf(p->why, p->whylen, "out of memory");
	return p->err;
}

/* Decimal digits only, within @max. */
static int num(struct parser *p, unsigned i, uint64_t max, uint64_t *v)
{
	const char *s = p->fields[i];
	uint64_t x = 0;

	if (!*s)
		return bad(p, "field %u is empty", i);
	for (; *s; s++) {
		unsigned dgt;

		if (*s < '0' || *s > '9')
			return bad(p, "field %u is not a number", i);
		dgt = (unsigned)(*s - '0');
		if (x > (UINT64_MAX - dgt) / 10)
			return bad(p, "field %u is too large", i);
		x = x * 10 + dgt;
	}
	if (x > max)
		return bad(p, "field %u is over %" PRIu64, i, max);
	*v = x;
	return 0;
}

/* An optional '-' and decimal digits, within int32_t. */
static int snum(struct parser *p, unsigned i, int32_t *v)
{
	bool neg = p->fields[i][0] == '-' && p->fields[i][1];
	uint64_t x;
	int err;

	if (neg)
		p->fields[i]++;
	err = num(p, i, neg ? (uint64_t)INT32_MAX + 1 : INT32_MAX, &x);
	if (neg)
		p->fields[i]--;
	if (err)
		return err;
	*v = neg ? (int32_t)(-(int64_t)x) : (int32_t)x;
	return 0;
}

static int flag(struct parser *p, unsigned i, bool *v)
{
	uint64_t x;

	*v = false;
	if (num(p, i, 1, &x))
		return p->err;
	*v = x;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Hex of up to @max bytes, or "-" (none: *@data NULL, *@len 0). */
static int blob(struct parser *p, unsigned i, size_t max, uint8_t **data, size_t *len)
{
	const char *s = p->fields[i];
	size_t n = strlen(s);
	uint8_t *b;

	*data = NULL;
	*len = 0;
	if (!strcmp(s, "-"))
		return 0;
	if (n % 2 || n / 2 > max)
		return bad(p, "field %u is not hex of at most %zu bytes", i, max);
	b = malloc(n / 2 + 1);
	if (!b)
		return nomem(p);
	for (size_t k = 0; k < n / 2; k++) {
		int hi = hexval(s[2 * k]), lo = hexval(s[2 * k + 1]);

		if (hi < 0 || lo < 0) {
			free(b);
			return bad(p, "field %u is not lower-case hex", i);
		}
		b[k] = (uint8_t)(hi << 4 | lo);
	}
	b[n / 2] = 0;
	*data = b;
	*len = n / 2;
	return 0;
}

/* A string: hex without NUL bytes, or "-" (NULL). */
static int str(struct parser *p, unsigned i, char **v)
{
	uint8_t *b;
	size_t n;

	if (blob(p, i, CPUHPD_STATETEXT_MAX_STRING, &b, &n))
		return p->err;
	if (b && memchr(b, 0, n)) {
		free(b);
		return bad(p, "field %u holds a NUL byte", i);
	}
	*v = (char *)b;
	return 0;
}

/* Grow @arr (of @n elements of @size) by one zeroed element; Return: it, or NULL. */
static void *push(struct parser *p, void **arr, unsigned *n, size_t size)
{
	char *a;

	if (*n >= CPUHPD_STATETEXT_MAX_CONNS) {
		bad(p, "too many records");
		return NULL;
	}
	a = realloc(*arr, (*n + 1) * size);
	if (!a) {
		nomem(p);
		return NULL;
	}
	*arr = a;
	memset(a + *n * size, 0, size);
	return a + (*n)++ * size;
}

static int want(struct parser *p, unsigned n)
{
	if (p->nfields != n)
		return bad(p, "'%s' has %u fields, not %u", p->fields[0], p->nfields, n);
	return 0;
}

/* @n fields, or @n + 1 with a last one that a newer writer added. */
static int want_or_one_more(struct parser *p, unsigned n)
{
	if (p->nfields != n && p->nfields != n + 1)
		return bad(p, "'%s' has %u fields, not %u or %u", p->fields[0], p->nfields, n,
		           n + 1);
	return 0;
}

/* A delay lease's delay, the optional field @i: 0 when absent. */
static int delay_field(struct parser *p, unsigned i, uint32_t *v)
{
	uint64_t x = 0;

	if (p->nfields > i && num(p, i, UINT32_MAX, &x))
		return p->err;
	*v = (uint32_t)x;
	return 0;
}

/* The conn line a record names: it must exist already. */
static struct cpuhpd_saved_conn *owner(struct parser *p)
{
	uint64_t id;
	struct cpuhpd_saved_conn *c;

	if (num(p, 1, UINT32_MAX, &id))
		return NULL;
	c = cpuhpd_statetext_conn(p->out, (unsigned)id);
	if (!c)
		bad(p, "names conn %" PRIu64 ", which no earlier line gave", id);
	return c;
}

static int daemon_line(struct parser *p)
{
	struct cpuhpd_saved *s = p->out;
	uint64_t v[5];

	if (want_or_one_more(p, 7) || snum(p, 1, &s->pid) || num(p, 2, UINT32_MAX, &v[0]) ||
	    num(p, 3, UINT64_MAX, &v[1]) || num(p, 4, UINT64_MAX, &v[2]) ||
	    num(p, 5, UINT64_MAX, &v[3]) || num(p, 6, UINT64_MAX, &v[4]) ||
	    (p->nfields > 7 && num(p, 7, UINT64_MAX, &s->next_hotplug_seq)))
		return p->err;
	s->next_call_id = v[4];
	s->next_conn_id = (unsigned)v[0];
	s->next_lease_id = v[1];
	s->next_state_id = v[2];
	s->next_freeze_id = v[3];
	return 0;
}

static int conn_line(struct parser *p)
{
	struct cpuhpd_saved *s = p->out;
	struct cpuhpd_saved_conn *c;
	uint64_t id, uid, gid, slots, watch;
	int32_t pid;
	bool admin, hello;

	if (want(p, 12) || num(p, 1, UINT32_MAX, &id) || snum(p, 2, &pid) ||
	    num(p, 3, UINT32_MAX, &uid) || num(p, 4, UINT32_MAX, &gid) || flag(p, 5, &admin) ||
	    flag(p, 6, &hello) || num(p, 10, 65536, &slots) || num(p, 11, UINT64_MAX, &watch))
		return p->err;
	/* Ascending, as the daemon's list is: lookups can bisect. */
	if (s->nconns && id <= s->conns[s->nconns - 1].id)
		return bad(p, "conn %" PRIu64 " after conn %u: ids must ascend", id,
		           s->conns[s->nconns - 1].id);
	c = push(p, (void **)&s->conns, &s->nconns, sizeof(*c));
	if (!c)
		return p->err;
	c->id = (unsigned)id;
	c->pid = pid;
	c->uid = (uint32_t)uid;
	c->gid = (uint32_t)gid;
	c->admin = admin;
	c->hello = hello;
	c->fast_slots = (unsigned)slots;
	c->watch_id = watch;
	return str(p, 7, &c->comm) || str(p, 8, &c->who) || str(p, 9, &c->why) ? p->err : 0;
}

static int lease_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	struct cpuhpd_saved_lease *l;
	uint64_t id, since;
	bool bypassed;
	uint32_t delay = 0;

	if (!c || want_or_one_more(p, 7) || num(p, 2, UINT64_MAX, &id) ||
	    num(p, 3, UINT64_MAX, &since) || flag(p, 4, &bypassed) || delay_field(p, 7, &delay))
		return p->err;
	if (!id)
		return bad(p, "lease id 0");
	for (unsigned i = 0; i < c->nleases; i++)
		if (c->leases[i].id == id)
			return bad(p, "lease %" PRIu64 " twice", id);
	l = push(p, (void **)&c->leases, &c->nleases, sizeof(*l));
	if (!l)
		return p->err;
	l->id = id;
	l->since = since;
	l->bypassed = bypassed;
	l->delay_ms = delay;
	return str(p, 5, &l->who) || str(p, 6, &l->why) ? p->err : 0;
}

static int wait_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	struct cpuhpd_saved_wait *w;
	uint64_t req, deadline, timeout;
	uint32_t delay = 0;

	if (!c || want_or_one_more(p, 7) || num(p, 2, UINT64_MAX, &req) ||
	    num(p, 3, UINT64_MAX, &deadline) || num(p, 4, UINT32_MAX, &timeout) ||
	    delay_field(p, 7, &delay))
		return p->err;
	w = push(p, (void **)&c->waits, &c->nwaits, sizeof(*w));
	if (!w)
		return p->err;
	w->req_id = req;
	w->deadline = deadline;
	w->timeout_ms = (uint32_t)timeout;
	w->delay_ms = delay;
	return str(p, 5, &w->who) || str(p, 6, &w->why) ? p->err : 0;
}

static int state_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	struct cpuhpd_saved_state *st;
	uint64_t id, req, deadline, kind = 0;
	int32_t prio;

	if (!c || want_or_one_more(p, 8) || num(p, 2, UINT64_MAX, &id) ||
	    num(p, 3, UINT64_MAX, &req) || snum(p, 4, &prio) || num(p, 5, UINT32_MAX, &deadline) ||
	    (p->nfields == 9 && num(p, 8, CPUHPD_SAVED_PREPARE | CPUHPD_SAVED_MULTI, &kind)))
		return p->err;
	st = push(p, (void **)&c->states, &c->nstates, sizeof(*st));
	if (!st)
		return p->err;
	st->kind = (unsigned)kind;
	st->id = id;
	st->reg_req_id = req;
	st->priority = prio;
	st->deadline_ms = (uint32_t)deadline;
	if (str(p, 6, &st->name) || str(p, 7, &st->cpus))
		return p->err;
	if (!st->name)
		return bad(p, "a state without a name");
	return 0;
}

static int inst_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	struct cpuhpd_saved_state *st;
	uint64_t parent, id;
	unsigned i;

	if (!c || want(p, 6) || num(p, 2, UINT64_MAX, &parent) || num(p, 3, UINT64_MAX, &id))
		return p->err;
	for (i = 0; i < c->nstates; i++)
		if (!c->states[i].parent && c->states[i].id == parent &&
		    (c->states[i].kind & CPUHPD_SAVED_MULTI))
			break;
	if (i == c->nstates)
		return bad(p,
		           "an instance of state %" PRIu64
		           ", which no earlier line of its conn gave as multi",
		           parent);
	st = push(p, (void **)&c->states, &c->nstates, sizeof(*st));
	if (!st)
		return p->err;
	st->parent = parent;
	st->id = id;
	if (str(p, 4, &st->name) || str(p, 5, &st->cpus))
		return p->err;
	if (!st->name)
		return bad(p, "an instance without a name");
	return 0;
}

static int call_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	uint64_t id, cpu;
	unsigned *u;

	if (!c || want(p, 4) || num(p, 2, UINT64_MAX, &id) || num(p, 3, 65535, &cpu))
		return p->err;
	for (unsigned i = 0; i < c->nstates; i++) {
		struct cpuhpd_saved_state *st = &c->states[i];

		if (st->id != id)
			continue;
		/* In ascending order: a CPU named twice, or out of order, is no daemon's text. */
		if (st->nunsure && cpu <= st->unsure[st->nunsure - 1])
			return bad(p,
			           "the calls of state %" PRIu64 " name CPU %" PRIu64
			           " out of ascending order",
			           id, cpu);
		u = push(p, (void **)&st->unsure, &st->nunsure, sizeof(*u));
		if (!u)
			return p->err;
		*u = (unsigned)cpu;
		return 0;
	}
	return bad(p, "a call of state %" PRIu64 ", which no earlier line of its conn gave", id);
}

static int freeze_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	struct cpuhpd_saved_freeze *f;
	uint64_t id, req, since;
	bool granted;

	if (!c || want(p, 8) || num(p, 2, UINT64_MAX, &id) || num(p, 3, UINT64_MAX, &req) ||
	    num(p, 4, UINT64_MAX, &since) || flag(p, 5, &granted))
		return p->err;
	f = push(p, (void **)&c->freezes, &c->nfreezes, sizeof(*f));
	if (!f)
		return p->err;
	f->id = id;
	f->req_id = req;
	f->since = since;
	f->granted = granted;
	return str(p, 6, &f->who) || str(p, 7, &f->why) ? p->err : 0;
}

static int batch_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);

	if (!c || want(p, 2))
		return p->err;
	if (c->state_batch)
		return bad(p, "a second batch line for conn %u", c->id);
	c->state_batch = true;
	return 0;
}

static int ready_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	uint64_t to, told, delay;

	if (!c || want(p, 5) || num(p, 2, UINT32_MAX, &to) || num(p, 3, UINT64_MAX, &told) ||
	    num(p, 4, UINT32_MAX, &delay))
		return p->err;
	c->notices_to = (unsigned)to;
	c->told_seq = told;
	c->fast_delay_ms = (uint32_t)delay;
	return 0;
}

static int hotplug_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	struct cpuhpd_saved_hotplug *h;
	uint64_t req, seq, at;

	if (!c || want(p, 5) || num(p, 2, UINT64_MAX, &req) || num(p, 3, UINT64_MAX, &seq) ||
	    num(p, 4, UINT64_MAX, &at))
		return p->err;
	h = push(p, (void **)&p->out->hotplugs, &p->out->nhotplugs, sizeof(*h));
	if (!h)
		return p->err;
	h->conn = c->id;
	h->req_id = req;
	h->seq = seq;
	h->noticed_at = at;
	return 0;
}

static int req_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);
	struct cpuhpd_saved_req *r;

	if (!c || want(p, 3))
		return p->err;
	r = push(p, (void **)&p->out->reqs, &p->out->nreqs, sizeof(*r));
	if (!r)
		return p->err;
	r->conn = c->id;
	r->running = !strcmp(p->fields[0], "run");
	if (blob(p, 2, CPUHPD_STATETEXT_MAX_BLOB, &r->req.data, &r->req.len))
		return p->err;
	if (!r->req.len)
		return bad(p, "an empty request");
	return 0;
}

static int partial_line(struct parser *p)
{
	struct cpuhpd_saved_conn *c = owner(p);

	if (!c || want(p, 3))
		return p->err;
	if (c->partial.len)
		return bad(p, "a second partial frame for one conn");
	return blob(p, 2, CPUHPD_STATETEXT_MAX_BLOB, &c->partial.data, &c->partial.len);
}

static int split(struct parser *p, char *line)
{
	char *save = NULL, *tok;

	p->nfields = 0;
	for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (p->nfields == MAX_FIELDS)
			return bad(p, "too many fields");
		p->fields[p->nfields++] = tok;
	}
	if (!p->nfields)
		return bad(p, "an empty line");
	return 0;
}

static int parse_body(struct parser *p, char *body)
{
	static const struct {
		const char *word;
		int (*fn)(struct parser *);
	} kinds[] = {
	    {"daemon", daemon_line}, {"conn", conn_line},       {"lease", lease_line},
	    {"wait", wait_line},     {"state", state_line},     {"inst", inst_line},
	    {"freeze", freeze_line}, {"call", call_line},       {"req", req_line},
	    {"run", req_line},       {"partial", partial_line}, {"ready", ready_line},
	    {"batch", batch_line},   {"hotplug", hotplug_line},
	};
	bool seen_daemon = false, ended = false;
	char *line = body, *nl;

	for (p->line = 2; *line; line = nl + 1, p->line++) {
		unsigned k;

		nl = strchr(line, '\n');
		if (!nl)
			return bad(p, "the last line has no newline");
		if (ended)
			return bad(p, "text after 'end'");
		*nl = '\0';
		if (split(p, line))
			return p->err;
		if (!strcmp(p->fields[0], "end")) {
			if (want(p, 1))
				return p->err;
			ended = true;
			continue;
		}
		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			if (!strcmp(p->fields[0], kinds[k].word))
				break;
		if (k == sizeof(kinds) / sizeof(kinds[0]))
			return bad(p, "unknown record '%.20s'", p->fields[0]);
		if ((k == 0) == seen_daemon)
			return bad(p, k == 0 ? "a second 'daemon' line" : "no 'daemon' line first");
		seen_daemon = true;
		if (kinds[k].fn(p))
			return p->err;
	}
	if (!ended)
		return bad(p, "no 'end' line: the text is cut");
	return 0;
}

int cpuhpd_statetext_parse(const char *text, size_t len, struct cpuhpd_saved *out, char *why,
                           size_t whylen)
{
	struct parser p = {.out = out, .why = why, .whylen = whylen, .line = 1};
	unsigned version;
	size_t body_len;
	uint64_t hash;
	const char *nl;
	int n = 0;

	memset(out, 0, sizeof(*out));
	if (why && whylen)
		why[0] = '\0';
	if (len > CPUHPD_STATETEXT_MAX_BYTES)
		return bad(&p, "%zu bytes, over the limit", len);
	nl = memchr(text, '\n', len);
	if (!nl || nl - text > 64)
		return bad(&p, "no first line");
	{
		char first[80];

		memcpy(first, text, (size_t)(nl - text));
		first[nl - text] = '\0';
		if (sscanf(first, "cpuhpd-state %u %zu %16" SCNx64 "%n", &version, &body_len, &hash,
		           &n) != 3 ||
		    (size_t)n != (size_t)(nl - text))
			return bad(&p, "not a cpuhpd state text");
	}
	if (version != CPUHPD_STATETEXT_VERSION)
		return bad(&p, "version %u; this cpuhpd reads version %d", version,
		           CPUHPD_STATETEXT_VERSION);
	if (body_len != len - (size_t)(nl + 1 - text))
		return bad(&p, "the body has %zu bytes, not the %zu announced (written in part)",
		           len - (size_t)(nl + 1 - text), body_len);
	if (cpuhpd_statetext_hash(nl + 1, body_len) != hash)
		return bad(&p, "the hash does not match (written in part)");
	return cpuhpd_statetext_parse_body(nl + 1, body_len, out, why, whylen);
}

int cpuhpd_statetext_parse_body(const char *text, size_t len, struct cpuhpd_saved *out, char *why,
                                size_t whylen)
{
	struct parser p = {.out = out, .why = why, .whylen = whylen, .line = 1};
	char *body;

	memset(out, 0, sizeof(*out));
	if (why && whylen)
		why[0] = '\0';
	if (len > CPUHPD_STATETEXT_MAX_BYTES)
		return bad(&p, "%zu bytes, over the limit", len);
	if (memchr(text, '\0', len))
		return bad(&p, "a NUL byte in the text");
	body = malloc(len + 1);
	if (!body)
		return nomem(&p);
	memcpy(body, text, len);
	body[len] = '\0';
	parse_body(&p, body);
	free(body);
	if (p.err)
		cpuhpd_statetext_free(out);
	return p.err;
}

struct cpuhpd_saved_conn *cpuhpd_statetext_conn(struct cpuhpd_saved *s, unsigned id)
{
	unsigned lo = 0, hi = s->nconns;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (s->conns[mid].id == id)
			return &s->conns[mid];
		if (s->conns[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

void cpuhpd_statetext_free(struct cpuhpd_saved *s)
{
	for (unsigned i = 0; i < s->nconns; i++) {
		struct cpuhpd_saved_conn *c = &s->conns[i];

		free(c->comm);
		free(c->who);
		free(c->why);
		for (unsigned k = 0; k < c->nleases; k++) {
			free(c->leases[k].who);
			free(c->leases[k].why);
		}
		for (unsigned k = 0; k < c->nwaits; k++) {
			free(c->waits[k].who);
			free(c->waits[k].why);
		}
		for (unsigned k = 0; k < c->nstates; k++) {
			free(c->states[k].name);
			free(c->states[k].cpus);
			free(c->states[k].unsure);
		}
		for (unsigned k = 0; k < c->nfreezes; k++) {
			free(c->freezes[k].who);
			free(c->freezes[k].why);
		}
		free(c->partial.data);
		free(c->leases);
		free(c->waits);
		free(c->states);
		free(c->freezes);
	}
	for (unsigned i = 0; i < s->nreqs; i++)
		free(s->reqs[i].req.data);
	free(s->reqs);
	free(s->hotplugs);
	free(s->conns);
	memset(s, 0, sizeof(*s));
}
