/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * seed-dispatch DIR: write the seed inputs of fuzz-dispatch into DIR, made
 * with the generated protobuf code and proto/frame.c so that they are the
 * frames a real client sends.  Each seed is byte 0 (how many piece-size
 * bytes follow, see fuzz-dispatch.c), those bytes, then the stream.
 * The checked-in corpus/dispatch/ came from here; rerun it after a protocol
 * change: build-asan/tests/fuzz/seed-dispatch tests/fuzz/corpus/dispatch
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

struct seed {
	uint8_t buf[65536];
	size_t len;
	uint64_t next_id;
};

static void fail(const char *what, int err)
{
	fprintf(stderr, "seed-dispatch: %s: %s\n", what, strerror(err));
	exit(1);
}

static void raw(struct seed *s, const void *p, size_t n)
{
	if (!n)
		return;
	if (n > sizeof(s->buf) - s->len)
		fail("seed too large", EMSGSIZE);
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static void begin(struct seed *s, const uint8_t *pieces, uint8_t npieces)
{
	s->len = 0;
	s->next_id = 1;
	raw(s, &npieces, 1);
	raw(s, pieces, npieces);
}

static void request_id(struct seed *s, Cpuhp__Request *req, uint64_t id)
{
	uint8_t *frame;
	size_t len;
	int err;

	req->id = id;
	err = cpuhp__frame_pack_request(req, &frame, &len);
	if (err)
		fail("pack", -err);
	raw(s, frame, len);
	free(frame);
}

static void request(struct seed *s, Cpuhp__Request *req)
{
	request_id(s, req, s->next_id++);
}

static void hello(struct seed *s, uint32_t version)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__Hello h = CPUHP__HELLO__INIT;

	h.version = version;
	h.client_name = (char *)"seed";
	r.body_case = CPUHP__REQUEST__BODY_HELLO;
	r.hello = &h;
	request(s, &r);
}

/* A Hello that says the client runs batches of state calls. */
static void hello_batch(struct seed *s)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__Hello h = CPUHP__HELLO__INIT;

	h.version = 1;
	h.client_name = (char *)"seed";
	h.state_batch = true;
	r.body_case = CPUHP__REQUEST__BODY_HELLO;
	r.hello = &h;
	request(s, &r);
}

static void acquire(struct seed *s, uint32_t timeout_ms)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire a = CPUHP__LEASE_ACQUIRE__INIT;

	a.timeout_ms = timeout_ms;
	r.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	r.lease_acquire = &a;
	request(s, &r);
}

static void release(struct seed *s, uint64_t lease_id)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseRelease l = CPUHP__LEASE_RELEASE__INIT;

	l.lease_id = lease_id;
	r.body_case = CPUHP__REQUEST__BODY_LEASE_RELEASE;
	r.lease_release = &l;
	request(s, &r);
}

static void set_online(struct seed *s, const char *cpus, bool online, uint32_t timeout_ms)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;

	so.cpus = (char *)cpus;
	so.online = online;
	so.timeout_ms = timeout_ms;
	r.body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
	r.set_online = &so;
	request(s, &r);
}

static void status(struct seed *s)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__StatusRequest st = CPUHP__STATUS_REQUEST__INIT;

	r.body_case = CPUHP__REQUEST__BODY_STATUS;
	r.status = &st;
	request(s, &r);
}

static void watch(struct seed *s)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__Watch w = CPUHP__WATCH__INIT;

	r.body_case = CPUHP__REQUEST__BODY_WATCH;
	r.watch = &w;
	request(s, &r);
}

static void fast_path(struct seed *s, uint32_t slots)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__FastPathRequest f = CPUHP__FAST_PATH_REQUEST__INIT;

	f.slots = slots;
	r.body_case = CPUHP__REQUEST__BODY_FAST_PATH;
	r.fast_path = &f;
	request(s, &r);
}

/* FastWake goes with id 0 and is never answered. */
static void fast_wake(struct seed *s)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__FastWake w = CPUHP__FAST_WAKE__INIT;

	r.body_case = CPUHP__REQUEST__BODY_FAST_WAKE;
	r.fast_wake = &w;
	request_id(s, &r, 0);
}

static void acquire_as(struct seed *s, uint32_t timeout_ms, const char *who, const char *why)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire a = CPUHP__LEASE_ACQUIRE__INIT;

	a.timeout_ms = timeout_ms;
	a.who = (char *)who;
	a.why = (char *)why;
	r.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	r.lease_acquire = &a;
	request(s, &r);
}

static void identify(struct seed *s, const char *who, const char *why)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__Identify i = CPUHP__IDENTIFY__INIT;

	i.who = (char *)who;
	i.why = (char *)why;
	r.body_case = CPUHP__REQUEST__BODY_IDENTIFY;
	r.identify = &i;
	request(s, &r);
}

static void list_leases(struct seed *s)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__ListLeases l = CPUHP__LIST_LEASES__INIT;

	r.body_case = CPUHP__REQUEST__BODY_LIST_LEASES;
	r.list_leases = &l;
	request(s, &r);
}

static void list_cpus(struct seed *s, uint32_t from)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__ListCpus l = CPUHP__LIST_CPUS__INIT;

	l.from_cpu = from;
	r.body_case = CPUHP__REQUEST__BODY_LIST_CPUS;
	r.list_cpus = &l;
	request(s, &r);
}

static void freeze(struct seed *s, const char *who, const char *why)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__Freeze f = CPUHP__FREEZE__INIT;

	f.who = (char *)who;
	f.why = (char *)why;
	r.body_case = CPUHP__REQUEST__BODY_FREEZE;
	r.freeze = &f;
	request(s, &r);
}

static void thaw(struct seed *s, uint64_t freeze_id)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__Thaw t = CPUHP__THAW__INIT;

	t.freeze_id = freeze_id;
	r.body_case = CPUHP__REQUEST__BODY_THAW;
	r.thaw = &t;
	request(s, &r);
}

/* A request with an id and no body: what a newer client's unknown request looks like. */
static void set_smt(struct seed *s, const char *control, uint32_t timeout_ms)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__SetSmt ss = CPUHP__SET_SMT__INIT;

	ss.control = (char *)control;
	ss.timeout_ms = timeout_ms;
	r.body_case = CPUHP__REQUEST__BODY_SET_SMT;
	r.set_smt = &ss;
	request(s, &r);
}

static void metrics(struct seed *s)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__MetricsRequest m = CPUHP__METRICS_REQUEST__INIT;

	r.body_case = CPUHP__REQUEST__BODY_METRICS;
	r.metrics = &m;
	request(s, &r);
}

static void register_state(struct seed *s, const char *name, uint32_t deadline_ms, bool nocalls)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__RegisterState rs = CPUHP__REGISTER_STATE__INIT;

	rs.name = (char *)name;
	rs.deadline_ms = deadline_ms;
	rs.nocalls = nocalls;
	req.body_case = CPUHP__REQUEST__BODY_REGISTER_STATE;
	req.register_state = &rs;
	request(s, &req);
}

/* A state in @section, multi-instance or not. */
static void register_state_as(struct seed *s, const char *name, uint32_t deadline_ms, bool nocalls,
                              Cpuhp__StateSection section, bool multi)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__RegisterState rs = CPUHP__REGISTER_STATE__INIT;

	rs.name = (char *)name;
	rs.deadline_ms = deadline_ms;
	rs.nocalls = nocalls;
	rs.section = section;
	rs.multi = multi;
	req.body_case = CPUHP__REQUEST__BODY_REGISTER_STATE;
	req.register_state = &rs;
	request(s, &req);
}

static void add_instance(struct seed *s, uint64_t state_id, const char *name, bool nocalls)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__AddInstance ai = CPUHP__ADD_INSTANCE__INIT;

	ai.state_id = state_id;
	ai.name = (char *)name;
	ai.nocalls = nocalls;
	req.body_case = CPUHP__REQUEST__BODY_ADD_INSTANCE;
	req.add_instance = &ai;
	request(s, &req);
}

static void remove_instance(struct seed *s, uint64_t state_id, uint64_t id, bool nocalls)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__RemoveInstance ri = CPUHP__REMOVE_INSTANCE__INIT;

	ri.state_id = state_id;
	ri.instance_id = id;
	ri.nocalls = nocalls;
	req.body_case = CPUHP__REQUEST__BODY_REMOVE_INSTANCE;
	req.remove_instance = &ri;
	request(s, &req);
}

static void list_states(struct seed *s)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListStates ls = CPUHP__LIST_STATES__INIT;

	req.body_case = CPUHP__REQUEST__BODY_LIST_STATES;
	req.list_states = &ls;
	request(s, &req);
}

/* Getting ready for a hotplug: a delay lease, a forced hotplug, notices to another connection. */
static void acquire_delay(struct seed *s, uint32_t timeout_ms, uint32_t delay_ms)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire a = CPUHP__LEASE_ACQUIRE__INIT;

	a.timeout_ms = timeout_ms;
	a.mode = CPUHP__LEASE_MODE__LEASE_DELAY;
	a.delay_ms = delay_ms;
	r.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	r.lease_acquire = &a;
	request(s, &r);
}

static void set_online_forced(struct seed *s, const char *cpus, bool online, uint32_t timeout_ms,
                              uint32_t grace_ms)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__SetOnline so = CPUHP__SET_ONLINE__INIT;

	so.cpus = (char *)cpus;
	so.online = online;
	so.timeout_ms = timeout_ms;
	so.force = true;
	so.force_grace_ms = grace_ms;
	r.body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
	r.set_online = &so;
	request(s, &r);
}

static void fast_path_delay(struct seed *s, uint32_t slots, uint32_t delay_ms)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__FastPathRequest f = CPUHP__FAST_PATH_REQUEST__INIT;

	f.slots = slots;
	f.mode = CPUHP__LEASE_MODE__LEASE_DELAY;
	f.delay_ms = delay_ms;
	r.body_case = CPUHP__REQUEST__BODY_FAST_PATH;
	r.fast_path = &f;
	request(s, &r);
}

static void hello_beside(struct seed *s, uint32_t notices_to)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;
	Cpuhp__Hello h = CPUHP__HELLO__INIT;

	h.version = 1;
	h.client_name = (char *)"seed";
	h.notices_to = notices_to;
	r.body_case = CPUHP__REQUEST__BODY_HELLO;
	r.hello = &h;
	request(s, &r);
}

static void empty(struct seed *s)
{
	Cpuhp__Request r = CPUHP__REQUEST__INIT;

	request(s, &r);
}

static void save(const char *dir, const char *name, const struct seed *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->buf, 1, s->len, f) != s->len || fclose(f))
		fail(path, errno);
}

int main(int argc, char **argv)
{
	static const uint8_t small_pieces[] = {0, 2, 6}; /* 1, 3 and 7 bytes, cycled */
	static struct seed s;
	const char *dir;

	if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fprintf(
		    argc == 2 ? stdout : stderr,
		    "Usage: seed-dispatch DIR\n"
		    "Write the seed corpus of fuzz-dispatch (valid client streams) into DIR.\n");
		return argc == 2 ? 0 : 2;
	}
	dir = argv[1];

	begin(&s, NULL, 0);
	hello(&s, 1);
	status(&s);
	save(dir, "hello-status", &s);

	begin(&s, small_pieces, sizeof(small_pieces));
	hello(&s, 1);
	status(&s);
	save(dir, "hello-status-in-small-pieces", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	acquire(&s, 0);
	release(&s, 1); /* lease ids restart at 1 for every input */
	release(&s, 1);
	status(&s);
	save(dir, "lease-acquire-release-twice", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	watch(&s);
	set_online(&s, "1", false, 0);
	set_online(&s, "1-2", true, 1000);
	status(&s);
	save(dir, "watch-offline-online", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	acquire(&s, 0);
	set_online(&s, "2", false, 60000); /* waits for our own lease until we leave */
	acquire(&s, 60000);                /* waits behind that hotplug */
	acquire(&s, 0);                    /* EAGAIN */
	status(&s);
	save(dir, "lease-then-hotplug-waits", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	acquire(&s, 0);
	set_online(&s, "1", false, 0); /* a lease is held: EAGAIN */
	release(&s, 1);
	set_online(&s, "0", false, 0);     /* not hotpluggable */
	set_online(&s, "3", true, 0);      /* not present */
	set_online(&s, "0-4095", true, 0); /* too many CPUs */
	set_online(&s, "2-1", true, 0);    /* not a list */
	set_online(&s, "", true, 0);       /* no CPU */
	save(dir, "hotplug-errors", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	watch(&s);
	watch(&s);
	release(&s, 77);
	empty(&s);
	hello(&s, 2);
	save(dir, "watch-twice-unknown-lease-empty-request", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	for (int i = 0; i < 66; i++)
		acquire(&s, 0);
	save(dir, "lease-quota", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	fast_path(&s, 4);
	fast_wake(&s);
	acquire(&s, 0);
	set_online(&s, "1", false, 1000); /* blocks the fast path, waits for our lease */
	release(&s, 1);
	fast_path(&s, 4); /* a second one: refused */
	status(&s);
	save(dir, "fast-path-then-hotplug", &s);

	/*
	 * A forger (byte 0 & 8): the first piece is Hello + FastPathRequest,
	 * then slot 2's count becomes -2 (piece byte 0xfe) before a hotplug
	 * sums it: the daemon closes the connection.
	 */
	{
		uint8_t pieces[2] = {0, 0xfe};
		size_t mark;

		begin(&s, pieces, 2);
		s.buf[0] |= 8;
		mark = s.len;
		hello(&s, 1);
		fast_path(&s, 4);
		s.buf[1] = (uint8_t)(s.len - mark - 1);
		set_online(&s, "1", false, 1000);
		status(&s);
		save(dir, "forged-slot", &s);
	}

	/* Who holds what: names on the connection and on a lease, listed. */
	begin(&s, NULL, 0);
	hello(&s, 1);
	identify(&s, "pools", "sizing worker pools");
	acquire(&s, 0);
	acquire_as(&s, 0, "job", "its own");
	set_online(&s, "1", false, 1000); /* waits for our leases, names them in the log */
	list_leases(&s);
	identify(&s, "", "");
	release(&s, 1);
	list_leases(&s);
	save(dir, "identify-and-list-leases", &s);

	/* The CPUs as rows: from the start, from the middle, past the end, a hotplug queued. */
	begin(&s, NULL, 0);
	hello(&s, 1);
	list_cpus(&s, 0);
	list_cpus(&s, 1);
	list_cpus(&s, 8191);
	list_cpus(&s, 4294967295u);
	acquire(&s, 0);
	set_online(&s, "1", false, 1000); /* waits for our lease: listed on CPU 1 */
	list_cpus(&s, 0);
	release(&s, 1);
	list_cpus(&s, 0);
	save(dir, "list-cpus", &s);

	/*
	 * A hotplug freeze: one behind a queued hotplug, one at once;
	 * a hotplug refused while frozen, a listing, thaws good and bad.
	 */
	begin(&s, NULL, 0);
	hello(&s, 1);
	set_online(&s, "1", false, 1000);
	freeze(&s, "bench", "latency window");
	freeze(&s, "", "");
	set_online(&s, "1", true, 1000); /* EBUSY: frozen */
	acquire(&s, 0);                  /* leases stay grantable */
	list_leases(&s);
	status(&s);
	thaw(&s, 1);
	thaw(&s, 1); /* ESRCH */
	thaw(&s, 99);
	set_online(&s, "1", true, 1000); /* still frozen by freeze 2 */
	save(dir, "freeze-and-thaw", &s);

	/* SMT control and metrics: behind a lease, a bad word, then the counts. */
	begin(&s, NULL, 0);
	hello(&s, 1);
	acquire(&s, 0);
	set_smt(&s, "off", 0); /* a "try" behind our own lease: EAGAIN */
	set_smt(&s, "sideways", 1000);
	release(&s, 1);
	set_smt(&s, "off", 1000);
	set_smt(&s, "on", 1000);
	metrics(&s);
	save(dir, "smt-and-metrics", &s);

	/*
	 * Hotplug states of a uid that is no admin (byte 0 & 16, & 32: 2 states
	 * allowed): the default deadline capped, one over the cap refused, the
	 * third state refused, no hotplug, the third lease refused.
	 */
	begin(&s, NULL, 0);
	s.buf[0] |= 16 | 32;
	hello(&s, 1);
	register_state(&s, "a", 0, true);
	register_state(&s, "b", 51, true); /* EPERM: over --max-state-deadline-ms */
	register_state(&s, "c", 50, true);
	register_state(&s, "d", 0, true); /* EDQUOT: over --max-states-per-uid */
	set_online(&s, "1", false, 1000); /* EPERM: no admin */
	acquire(&s, 0);
	acquire(&s, 0);
	acquire(&s, 0); /* EDQUOT: over --max-leases-per-uid */
	list_states(&s);
	save(dir, "states-of-a-limited-uid", &s);

	/*
	 * An admin's state whose calls are never answered: its registration's
	 * startups wait; then, as nocalls, an offline whose timeout cuts the
	 * teardown (rolled back, its startup sent, not awaited).
	 */
	begin(&s, NULL, 0);
	hello(&s, 1);
	register_state(&s, "quiet", 600000, true);
	set_online(&s, "1", false, 50);
	list_states(&s);
	register_state(&s, "calls", 100, false);
	save(dir, "state-call-cut-at-the-hotplug-timeout", &s);

	/*
	 * Three states of a client that runs batches: an offline's teardowns go
	 * in one write; none is answered, so the 50 ms timeout cuts the first
	 * and every one sent is undone.
	 */
	begin(&s, NULL, 0);
	hello_batch(&s);
	register_state(&s, "b1", 600000, true);
	register_state(&s, "b2", 600000, true);
	register_state(&s, "b3", 600000, true);
	set_online(&s, "1", false, 50);
	register_state(&s, "b4", 100, false); /* its startups, batched */
	save(dir, "state-batch-cut-at-the-hotplug-timeout", &s);

	/*
	 * PREPARE states and instances: a multi state in the PREPARE
	 * section (state 1) with an instance (2) and a taken name; a plain
	 * state that gets no instance; an offline whose DEAD teardown is cut at
	 * the timeout (never rolled back); an instance whose startups miss
	 * their 100 ms deadline; a removal, one of an unknown instance, and a
	 * section that does not exist.
	 */
	begin(&s, NULL, 0);
	hello(&s, 1);
	register_state_as(&s, "caches", 100, true, CPUHP__STATE_SECTION__SECTION_PREPARE, true);
	add_instance(&s, 1, "a", true);
	add_instance(&s, 1, "a", true); /* EEXIST */
	register_state_as(&s, "plain", 100, true, CPUHP__STATE_SECTION__SECTION_ONLINE, false);
	add_instance(&s, 3, "x", true); /* EINVAL: not multi */
	set_online(&s, "1", false, 50);
	add_instance(&s, 1, "b", false);
	remove_instance(&s, 1, 2, false);
	remove_instance(&s, 1, 99, true); /* ENOENT */
	register_state_as(&s, "odd", 100, true, (Cpuhp__StateSection)7, false);
	list_states(&s);
	save(dir, "instances-of-a-prepare-state", &s);

	/*
	 * Getting ready: notices to a connection that is not there,
	 * delay leases (one over the cap), a hotplug that waits for them and
	 * times out, a forced one that revokes them, the listing with modes.
	 */
	begin(&s, NULL, 0);
	hello_beside(&s, 7);
	acquire_delay(&s, 0, 50);
	acquire_delay(&s, 0, 4000000000u);
	acquire(&s, 0);
	list_leases(&s);
	set_online(&s, "1", false, 20); /* pending: our own leases; times out */
	set_online_forced(&s, "1", false, 1000, 10);
	release(&s, 1); /* revoked: ETIME */
	release(&s, 3);
	status(&s);
	save(dir, "delay-leases-and-forced-hotplug", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	fast_path_delay(&s, 4, 30);
	acquire_delay(&s, 60000, 0);
	set_online_forced(&s, "2", false, 1000, 0);
	fast_path_delay(&s, 4, 30); /* the first was revoked? granted anew, else refused */
	status(&s);
	save(dir, "fast-delay-then-forced", &s);

	begin(&s, NULL, 0);
	status(&s);
	save(dir, "status-before-hello", &s);

	begin(&s, NULL, 0);
	hello(&s, 0);
	save(dir, "hello-version-0", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	raw(&s, "\x00\x00\x00\x03\xff\xff\xff", 7);
	status(&s);
	save(dir, "payload-not-a-request", &s);

	begin(&s, NULL, 0);
	hello(&s, 1);
	raw(&s, "\x00\x00\x00\x10\x08\x01", 6);
	save(dir, "truncated-frame", &s);
	return 0;
}
