/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: arbitrary bytes from one client through cpuhpd's real
 * input path.  The daemon's own modules (connection, frame reassembly,
 * dispatch, leases, fast path, hotplug queue, worker thread, watch) run on a libuv loop
 * in this process, listening on a socket in a temporary directory that also
 * holds a simulated sysfs tree (made once per process).  Each input is one
 * client connection: the bytes are written in pieces whose sizes the input
 * chooses (each piece read by the daemon before the next is sent), the
 * client reads every reply as it comes, waits for the hotplugs that can
 * finish without it, shuts down its writing side, and the loop runs until
 * the daemon closed the connection and no hotplug is left.  No daemon
 * source is changed for this: main() is the only part left out (its
 * start-up is cpuhpd_start(), as in main), and the log goes to a
 * formatter that prints only with CPUHP_FUZZ_LOG=1.
 *
 * Input: byte 0 % 8 = how many of the next bytes give piece sizes (1..256,
 * cycled); the rest is the stream.  Byte 0 & 8: the client also writes into
 * its fast-path slots, as a forger would: once a FastPathGranted
 * came, before each piece it stores that piece's size byte, sign-extended
 * (0x7f: INT32_MAX), into the count (even byte) or the released word (odd)
 * of slot (byte % nslots).  A slot outside 0..16 must make the daemon close
 * the connection with EPROTO (so such a stream is not "clean" below), and
 * must never wedge a hotplug nor let one in.  Byte 0 & 16: the client is
 * no admin, under the limits an administrator sets for such a uid
 * (--max-states-per-uid 1, or 2 with byte 0 & 32, --max-state-deadline-ms
 * 50, --max-leases-per-uid 2): it never has more states or socket leases
 * than those, nor a state with a longer deadline, and gets no fast path.
 *
 * Properties, beyond what ASan/UBSan catch:
 *  - every byte the daemon sends is a frame holding a Response with a body;
 *    each Error and each failed CpuResult has a message;
 *  - a connection-level error (id 0: EPROTO, EMSGSIZE, or EDQUOT when a split
 *    request overran the small buffer budget set below) is the last thing sent;
 *  - no request is answered twice: per id, replies <= requests with that id;
 *    events carry the id of a Watch that was answered WatchStarted, or id 0 for
 *    the notices to lease holders (LeaseRevoked, LeaseBypassed); a StateCall
 *    carries the id of a RegisterState the client sent;
 *  - no request is answered never: on a stream without a framing or protocol
 *    error, each Hello, Status, Watch, LeaseRelease, FastPathRequest,
 *    Identify, ListLeases, Thaw and unknown request gets a reply (acquires, hotplugs and
 *    freezes may legitimately wait until the client leaves; FastWake is never answered);
 *  - afterwards nothing outlives the client: no connection, lease, waiting
 *    lease, queued hotplug, freeze, watcher, hotplug state or state work or
 *    fast-path region, no buffered
 *    byte, uid entry or request timeout left in admit.c, and the lease gate
 *    and the fast path are open;
 *  - the daemon's online set is what the simulated files say.
 * Between inputs the tree is reset (every CPU online) and lease ids restart,
 * so an input means the same thing whenever it runs.
 *
 * CPUHP_FUZZ_LIMITS=1 runs the daemon as an administrator who limits lease
 * holders does (--max-lease-ms 2, --max-leases-per-uid 2, no admin group),
 * with a client held to them: a uid that is not root (as root, the fuzzer
 * connects through a child that became nobody and hands the socket back,
 * so that SO_PEERCRED names nobody).  Leases are then revoked while inputs
 * run (a LeaseRevoked notice, ERR_ETIME on release), acquires past two get
 * ERR_EDQUOT, hotplugs and freezes ERR_EPERM, and the fast path is never
 * offered; the properties above hold all the same, and byte 0 & 16's
 * checks too (its state limits, else no state at all: nobody is no admin).
 */
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errmap.h"
#include "fastpath.h"
#include "frame.h"
#include "strfields.h"

#include "cpuhpd.h"
#include "core/conn.h"
#include "base/log.h"
#include "hotplug/request.h"
#include "states/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzzcheck.h"

/* CPUs 0-3 possible, 0-2 present; cpu0 has no online file (not hotpluggable). */
#define SIM_POSSIBLE "0-3"
#define SIM_PRESENT  "0-2"

static struct cpuhpd d;
static bool limited; /* byte 0 & 16: the client is no admin, under the limits */
static char tmpdir[64];
static char sock_path[96];
static bool log_on;
static bool limits; /* CPUHP_FUZZ_LIMITS=1 (see the top) */

/* ---- the log, instead of daemon/cpuhpd/base/log.c: each line formatted, printed on demand ---- */

void cpuhpd_log_set_verbose(bool v)
{
	(void)v;
}

bool cpuhpd_log_verbose(void)
{
	return true;
}

void cpuhpd_log(enum cpuhpd_log_level level, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_on)
		fprintf(stderr, "cpuhpd: %d: %s\n", (int)level, line);
}

/* ---- the simulated tree ---- */

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/%s", tmpdir, rel);
	f = fopen(path, "w");
	FUZZ_CHECK(f && fprintf(f, "%s\n", text) > 0 && fclose(f) == 0);
}

static void make_tree(void)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/devices/system/cpu", tmpdir);
	for (char *s = strchr(path + strlen(tmpdir) + 1, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = '\0';
		FUZZ_CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
		if (!s)
			break;
		*s = '/';
	}
	for (int cpu = 0; cpu < 4; cpu++) {
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d", tmpdir, cpu);
		FUZZ_CHECK(mkdir(path, 0755) == 0);
	}
	put("possible", SIM_POSSIBLE);
	put("present", SIM_PRESENT);
	put("online", SIM_PRESENT);
	put("offline", "3");
	/* SMT: cores {0,2} and {1,3}, so that SetSmt has a sibling (2) to move. */
	for (int cpu = 0; cpu < 4; cpu++) {
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology", tmpdir, cpu);
		FUZZ_CHECK(mkdir(path, 0755) == 0);
		snprintf(path, sizeof(path), "cpu%d/topology/thread_siblings_list", cpu);
		put(path, cpu % 2 ? "1,3" : "0,2");
	}
	snprintf(path, sizeof(path), "%s/devices/system/cpu/smt", tmpdir);
	FUZZ_CHECK(mkdir(path, 0755) == 0);
	put("smt/control", "on");
	put("smt/active", "1");
}

/* Put @text in @rel unless it is there already (most inputs change nothing). */
static void reset_file(const char *rel, const char *text)
{
	char path[256], have[8] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/devices/system/cpu/%s", tmpdir, rel);
	f = fopen(path, "r");
	if (f) {
		if (!fgets(have, sizeof(have), f))
			have[0] = '\0';
		fclose(f);
	}
	if (strncmp(have, text, strlen(text)) || have[strlen(text)] != '\n')
		put(rel, text);
}

/* Every hotpluggable CPU online again (cpu3 is possible but not present: it gets a file too). */
static void reset_tree(void)
{
	reset_file("cpu1/online", "1");
	reset_file("cpu2/online", "1");
	reset_file("cpu3/online", "0");
	reset_file("smt/control", "on");
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void remove_tmpdir(void)
{
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- the daemon ---- */

/*
 * The daemon as main() starts it (cpuhpd_start(), shared), less signals: the
 * fuzzer never stops the daemon.
 */
static void daemon_start(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_on = getenv("CPUHP_FUZZ_LOG") && !strcmp(getenv("CPUHP_FUZZ_LOG"), "1");
	/* tmpfs: on a disk file system each rewrite of a file can cost milliseconds. */
	snprintf(tmpdir, sizeof(tmpdir), "%s/cpuhp-fuzz-dispatch.XXXXXX",
	         access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	FUZZ_CHECK(mkdtemp(tmpdir));
	atexit(remove_tmpdir);
	make_tree();
	reset_tree();
	snprintf(sock_path, sizeof(sock_path), "%s/cpuhpd.sock", tmpdir);

	d.loop = uv_default_loop();
	d.opt.socket_path = sock_path;
	d.opt.sysfs_root = tmpdir;
	d.opt.socket_mode = 0600;
	d.opt.max_connections = 4;
	/*
	 * Admission: a budget smaller than one frame, so that a
	 * request split across pieces can overrun it (ERR_EDQUOT, closed), and a
	 * timeout no input lasts (its list is walked, its timer never fires).
	 */
	d.opt.reserved_connections = 1;
	d.opt.max_connections_per_uid = 2;
	d.opt.max_buffered = 16384;
	d.opt.max_buffered_per_uid = 8192;
	d.opt.client_timeout_ms = 60000;
	/* The peer is this process: make it an admin whoever runs the fuzzer. */
	d.opt.admin_group = "fuzz";
	d.opt.admin_gid = getgid();
	d.opt.no_netlink = true;
	/* Fast leases too, so FastPathRequest, FastWake and the gate's barrier are reached. */
	d.opt.fast_path = CPUHPD_FAST_AUTO;
	/* Delay leases revoked within an input (a longer delay asked is cut to this). */
	d.opt.max_delay_ms = 5;
	limits = getenv("CPUHP_FUZZ_LIMITS") && !strcmp(getenv("CPUHP_FUZZ_LIMITS"), "1");
	if (limits) {
		d.opt.max_lease_ms = 2;
		d.opt.max_leases_per_uid = 2;
		d.opt.admin_group = NULL;
		/* nobody's child must reach the socket. */
		d.opt.socket_mode = 0666;
		FUZZ_CHECK(chmod(tmpdir, 0755) == 0);
	}
	FUZZ_CHECK(cpuhpd_start(&d) == 0);
}

static struct cpuhpd_conn *the_conn(void)
{
	struct cpuhpd_list *n = cpuhpd_list_first(&d.conns);

	return n ? cpuhpd_container_of(n, struct cpuhpd_conn, node) : NULL;
}

/* ---- the client ---- */

struct client {
	int fd;
	uint8_t *rx; /* everything the daemon sent */
	size_t rx_len, rx_cap;
	bool eof;
	/* The fast-path region, once granted (the descriptors come with a reply). */
	struct cpuhp__fast_region *reg;
	size_t reg_size;
	unsigned nslots;
	bool forged; /* a slot was left outside 0..16 */
};

/* The region's memfd (the second descriptor of FastPathGranted), mapped like a client. */
static void take_fds(struct client *cl, struct msghdr *mh)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[2];
		struct stat st;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		FUZZ_CHECK(n == 2 && !cl->reg);
		memcpy(fds, CMSG_DATA(cm), sizeof(fds));
		FUZZ_CHECK(fstat(fds[1], &st) == 0 && st.st_size >= (off_t)(2 * CPUHP__FAST_LINE));
		cl->reg_size = (size_t)st.st_size;
		cl->reg = mmap(NULL, cl->reg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
		FUZZ_CHECK(cl->reg != MAP_FAILED);
		cl->nslots = cl->reg->head.nslots;
		FUZZ_CHECK(cl->nslots >= 1 &&
		           CPUHP__FAST_REGION_SIZE(cl->nslots) <= (uint32_t)cl->reg_size);
		close(fds[0]);
		close(fds[1]);
	}
}

/* Write a forger's value into the region (see the header); note whether a slot is now bad. */
static void forge(struct client *cl, uint8_t b)
{
	struct cpuhp__fast_slot *sl;
	int32_t v = b == 0x7f ? INT32_MAX : (int32_t)(int8_t)b, lease;

	if (!cl->reg)
		return;
	sl = &cl->reg->slot[b % cl->nslots];
	if (b & 1)
		atomic_store(&sl->released, v);
	else
		atomic_store(&sl->count, v);
	for (unsigned i = 0; i < cl->nslots; i++) {
		lease = (int32_t)((uint32_t)atomic_load(&cl->reg->slot[i].count) -
		                  (uint32_t)atomic_load(&cl->reg->slot[i].released));
		if (lease < 0 || lease > CPUHP__FAST_SLOT_MAX_LEASES)
			cl->forged = true;
	}
}

static void drain(struct client *cl)
{
	while (!cl->eof) {
		ssize_t n;

		if (cl->rx_cap - cl->rx_len < 4096) {
			cl->rx_cap = cl->rx_cap ? cl->rx_cap * 2 : 65536;
			cl->rx = realloc(cl->rx, cl->rx_cap);
			FUZZ_CHECK(cl->rx);
		}
		char ctl[CMSG_SPACE(2 * sizeof(int))];
		struct iovec iov = {.iov_base = cl->rx + cl->rx_len,
		                    .iov_len = cl->rx_cap - cl->rx_len};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		n = recvmsg(cl->fd, &mh, MSG_CMSG_CLOEXEC);
		if (n > 0) {
			take_fds(cl, &mh);
			cl->rx_len += (size_t)n;
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			/* ECONNRESET: the daemon closed with our bytes unread, after an error. */
			cl->eof = true;
		} else if (errno == EAGAIN) {
			return;
		}
	}
}

/*
 * A limited client never has more than the limits allow (byte 0 & 16, or
 * CPUHP_FUZZ_LIMITS: nobody then, whom --max-states-per-uid 0 allows none).
 */
static void check_limits(void)
{
	struct cpuhpd_list *pos;
	unsigned n = 0;

	if (!limited && !limits)
		return;
	cpuhpd_list_for_each(pos, &d.states.list)
	{
		const struct cpuhpd_state *s = cpuhpd_container_of(pos, struct cpuhpd_state, node);

		FUZZ_CHECK(s->deadline_ms <= d.opt.max_state_deadline_ms);
		n++;
	}
	FUZZ_CHECK(n <= d.opt.max_states_per_uid);
	FUZZ_CHECK(d.leases.held <= d.opt.max_leases_per_uid);
	FUZZ_CHECK(d.fast.nregions == 0);
}

/* One turn of the daemon's loop without blocking, then take what it sent. */
static void pump(struct client *cl)
{
	uv_run(d.loop, UV_RUN_NOWAIT);
	drain(cl);
	check_limits();
}

/* Return: false once the daemon closed the connection. */
static bool send_piece(struct client *cl, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(cl->fd, p, len, MSG_NOSIGNAL);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
		} else if (n < 0 && errno == EAGAIN) {
			pump(cl);
		} else if (n < 0 && errno != EINTR) {
			return false;
		}
	}
	pump(cl);
	return true;
}

/* A connected client socket, or -1. */
static int connect_here(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/*
 * Root under CPUHP_FUZZ_LIMITS: a child becomes nobody, connects (the peer
 * credentials are taken then) and hands the socket back over a socketpair.
 * The child makes system calls only: the fuzzer has threads.
 */
static int connect_as_nobody(void)
{
	char ctl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = (char[1]){0}, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	int sv[2], fd = -1, status = 0;
	pid_t pid, w;

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	pid = fork();
	FUZZ_CHECK(pid >= 0);
	if (pid == 0) {
		/* Raw system calls: glibc's set*id() would signal the parent's threads. */
		if (syscall(SYS_setgroups, 0, NULL) ||
		    syscall(SYS_setresgid, 65534, 65534, 65534) ||
		    syscall(SYS_setresuid, 65534, 65534, 65534))
			_exit(10 + errno % 100);
		if ((fd = connect_here()) < 0)
			_exit(110 + errno % 100);
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		_exit(sendmsg(sv[1], &mh, 0) == 1 ? 0 : 1);
	}
	close(sv[1]);
	while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (w != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fprintf(stderr, "the child that connects as nobody: waitpid %d (%s), status %#x\n",
		        (int)w, w < 0 ? strerror(errno) : "", status);
	FUZZ_CHECK(w == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	mh.msg_control = ctl;
	mh.msg_controllen = sizeof(ctl);
	FUZZ_CHECK(recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC) == 1);
	cm = CMSG_FIRSTHDR(&mh);
	FUZZ_CHECK(cm && cm->cmsg_type == SCM_RIGHTS);
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	close(sv[0]);
	return fd;
}

/*
 * A state call waits for our answer, which never comes: our leaving ends
 * it (a gone client counts as done), unless the hotplug's own timeout cuts
 * it within 100 ms: that cut is waited for.
 */
static bool waits_for_us(void)
{
	struct cpuhpd_list *n = cpuhpd_list_first(&d.hotplug.queue);
	const struct hotplug_req *h = n ? cpuhpd_container_of(n, struct hotplug_req, node) : NULL;
	uint64_t cut = h ? h->job.calls_deadline : 0;

	return d.states.in_flight && !(cut && cut <= uv_now(d.loop) + 100);
}

static void run_client(struct client *cl, const uint8_t *split, size_t nsplit, const uint8_t *s,
                       size_t n, bool forger)
{
	struct cpuhpd_conn *c;
	size_t pos = 0, i = 0;

	cl->fd = limits && geteuid() == 0 ? connect_as_nobody() : connect_here();
	FUZZ_CHECK(cl->fd >= 0);
	while (d.nconns == 0)
		uv_run(d.loop, UV_RUN_ONCE);
	/* What admission found (this process is an admin) is overruled before any byte. */
	if (limited)
		the_conn()->peer.admin = false;
	while (pos < n) {
		size_t piece = nsplit ? (size_t)split[i++ % nsplit] + 1 : n;

		if (piece > n - pos)
			piece = n - pos;
		if (forger && nsplit)
			forge(cl, split[(i - 1) % nsplit]);
		if (!send_piece(cl, s + pos, piece))
			break;
		pos += piece;
	}
	/*
	 * Before leaving, read every reply, and let a hotplug that needs nothing
	 * from us finish (no lease held: it is in the worker or about to be),
	 * as a client that wants the answers does.  A hotplug waiting for our
	 * leases is dropped when we leave.
	 */
	for (;;) {
		drain(cl);
		c = the_conn();
		if (!c || (!c->queued && !(d.hotplug.nqueued && d.leases.held == 0 &&
		                           cpuhpd_fastpath_held(&d) == 0 && !waits_for_us())))
			break;
		uv_run(d.loop, UV_RUN_ONCE);
	}
	shutdown(cl->fd, SHUT_WR);
	while (d.nconns || d.hotplug.nqueued) {
		uv_run(d.loop, UV_RUN_ONCE);
		drain(cl);
	}
	/*
	 * A close begun outside the loop (cpuhpd_fastpath_held() above polices
	 * the slots, and may close a forger) completes in the loop's next turn:
	 * its queued replies are uncharged then (admit.c).
	 */
	uv_run(d.loop, UV_RUN_NOWAIT);
	/* The daemon closed its end: what is left in our queue, then EOF. */
	drain(cl);
	FUZZ_CHECK(cl->eof);
	close(cl->fd);
	if (cl->reg)
		munmap(cl->reg, cl->reg_size);
}

/* ---- the reference reading of the input and the checks ---- */

struct idcount {
	uint64_t id;
	unsigned requests, must_answer, replies;
	bool watch_started;
	bool registers; /* a RegisterState: its state's calls carry this id */
};

struct reference {
	struct idcount *ids;
	size_t nids;
	bool clean;       /* no framing or protocol error anywhere in the stream */
	bool over_budget; /* the daemon closed it at the buffer budget (admit.c) */
	unsigned nrequests;
};

static struct idcount *idc(struct reference *ref, uint64_t id)
{
	for (size_t i = 0; i < ref->nids; i++)
		if (ref->ids[i].id == id)
			return &ref->ids[i];
	ref->ids = realloc(ref->ids, (ref->nids + 1) * sizeof(*ref->ids));
	FUZZ_CHECK(ref->ids);
	memset(&ref->ids[ref->nids], 0, sizeof(ref->ids[0]));
	ref->ids[ref->nids].id = id;
	return &ref->ids[ref->nids++];
}

/*
 * Read the stream as the daemon must: requests up to the first error that
 * closes, framed by the daemon's own decoder (proto/frame.c, tested apart).
 */
static void read_reference(const uint8_t *s, size_t n, struct reference *ref)
{
	struct cpuhp__frame_decoder dec;
	size_t pos = 0;
	bool hello = false;
	char why[128];

	ref->clean = false;
	cpuhp__frame_decoder_init(&dec, 0);
	while (pos < n) {
		const uint8_t *payload;
		size_t plen;
		ssize_t used = cpuhp__frame_decoder_feed(&dec, s + pos, n - pos, &payload, &plen);
		Cpuhp__Request *req;
		struct idcount *ic;
		bool closes;

		if (used < 0)
			goto out; /* a length of 0 or over the maximum */
		pos += (size_t)used;
		if (!payload)
			continue; /* the stream ends inside a frame */
		if (cpuhp__frame_unpack_request(payload, plen, &req))
			goto out;
		ref->nrequests++;
		ic = idc(ref, req->id);
		ic->requests++;
		/* Anything but a Hello first is answered with its id, then the connection closes.
		 */
		if (req->body_case != CPUHP__REQUEST__BODY_HELLO && !hello) {
			cpuhp__request__free_unpacked(req, NULL);
			goto out;
		}
		/*
		 * A string field with a NUL or bytes that are not UTF-8: refused
		 * whole (EINVAL), the connection kept; a Hello so refused is none.
		 */
		if (cpuhp__strfields_check(&cpuhp__request__descriptor, payload, plen, why,
		                           sizeof(why))) {
			if (req->body_case != CPUHP__REQUEST__BODY_STATE_ANSWER &&
			    req->body_case != CPUHP__REQUEST__BODY_FAST_WAKE)
				ic->must_answer++;
			cpuhp__request__free_unpacked(req, NULL);
			continue;
		}
		/* A Hello of an unsupported version: answered, then the connection closes. */
		closes = req->body_case == CPUHP__REQUEST__BODY_HELLO && req->hello->version < 1;
		if (closes) {
			cpuhp__request__free_unpacked(req, NULL);
			goto out;
		}
		hello = true;
		switch (req->body_case) {
		case CPUHP__REQUEST__BODY_LEASE_ACQUIRE:
		case CPUHP__REQUEST__BODY_SET_ONLINE:
		case CPUHP__REQUEST__BODY_FREEZE: /* waits for the hotplugs queued before it */
		case CPUHP__REQUEST__BODY_SET_SMT:
		/* Answered once their startup/teardown calls ran (states.c). */
		case CPUHP__REQUEST__BODY_REGISTER_STATE:
			ic->registers = true;
			break;
		case CPUHP__REQUEST__BODY_REMOVE_STATE:
		/* Answered once their calls ran, as a registration and a removal. */
		case CPUHP__REQUEST__BODY_ADD_INSTANCE:
		case CPUHP__REQUEST__BODY_REMOVE_INSTANCE:
		case CPUHP__REQUEST__BODY_STATE_ANSWER: /* never answered */
		case CPUHP__REQUEST__BODY_FAST_WAKE:    /* never answered */
			break;
		default:
			ic->must_answer++;
			break;
		}
		cpuhp__request__free_unpacked(req, NULL);
	}
	ref->clean = cpuhp__frame_decoder_idle(&dec);
out:
	cpuhp__frame_decoder_fini(&dec);
}

static void check_response(const Cpuhp__Response *r, struct reference *ref, bool last)
{
	struct idcount *ic;

	FUZZ_CHECK(r->body_case != CPUHP__RESPONSE__BODY__NOT_SET);
	if (r->body_case == CPUHP__RESPONSE__BODY_ERROR) {
		int code = r->error->code;

		FUZZ_CHECK(r->error->message && r->error->message[0]);
		if (r->id == 0 && code == CPUHP__ERROR_CODE__ERR_EDQUOT)
			ref->over_budget = true;
		if (r->id == 0 && (code == CPUHP__ERROR_CODE__ERR_EPROTO ||
		                   code == CPUHP__ERROR_CODE__ERR_EMSGSIZE ||
		                   code == CPUHP__ERROR_CODE__ERR_EDQUOT)) {
			/* It concerns the connection: nothing may follow. */
			FUZZ_CHECK(last);
			return;
		}
	}
	if (r->body_case == CPUHP__RESPONSE__BODY_SET_ONLINE) {
		for (size_t i = 0; i < r->set_online->n_results; i++) {
			const Cpuhp__CpuResult *cr = r->set_online->results[i];

			FUZZ_CHECK(cr->ok || (cr->message && cr->message[0]));
		}
	}
	/*
	 * Id 0 and a notice kind: to a lease holder (policy.c, notice.c),
	 * never an answer.  Any other event with id 0 belongs to a Watch the
	 * client sent with id 0 (ids are the client's), checked as such below.
	 */
	if (r->body_case == CPUHP__RESPONSE__BODY_EVENT && r->id == 0 &&
	    (r->event->kind_case == CPUHP__EVENT__KIND_LEASE_REVOKED ||
	     r->event->kind_case == CPUHP__EVENT__KIND_LEASE_BYPASSED ||
	     r->event->kind_case == CPUHP__EVENT__KIND_HOTPLUG_PENDING ||
	     r->event->kind_case == CPUHP__EVENT__KIND_HOTPLUG_CANCELLED))
		return;
	if (r->body_case == CPUHP__RESPONSE__BODY_SMT) {
		FUZZ_CHECK(r->smt->cpus && r->smt->control && r->smt->control[0]);
		for (size_t i = 0; i < r->smt->cpus->n_results; i++)
			FUZZ_CHECK(r->smt->cpus->results[i]->ok ||
			           (r->smt->cpus->results[i]->message &&
			            r->smt->cpus->results[i]->message[0]));
	}
	if (r->body_case == CPUHP__RESPONSE__BODY_METRICS)
		FUZZ_CHECK(r->metrics->text && !strncmp(r->metrics->text, "# HELP ", 7));
	ic = idc(ref, r->id);
	if (r->body_case == CPUHP__RESPONSE__BODY_EVENT) {
		FUZZ_CHECK(ic->watch_started);
		return;
	}
	/* A call of a state this client registered, not an answer. */
	if (r->body_case == CPUHP__RESPONSE__BODY_STATE_CALL) {
		FUZZ_CHECK(ic->registers);
		return;
	}
	if (r->body_case == CPUHP__RESPONSE__BODY_WATCH_STARTED)
		ic->watch_started = true;
	ic->replies++;
	FUZZ_CHECK(ic->replies <= ic->requests);
}

static void check_responses(const struct client *cl, struct reference *ref)
{
	struct cpuhp__frame_decoder dec;
	size_t pos = 0;
	Cpuhp__Response *pending = NULL;

	cpuhp__frame_decoder_init(&dec, 0);
	while (pos < cl->rx_len) {
		const uint8_t *payload;
		size_t plen;
		ssize_t used = cpuhp__frame_decoder_feed(&dec, cl->rx + pos, cl->rx_len - pos,
		                                         &payload, &plen);
		Cpuhp__Response *r;

		FUZZ_CHECK(used > 0);
		pos += (size_t)used;
		if (!payload)
			continue;
		FUZZ_CHECK(cpuhp__frame_unpack_response(payload, plen, &r) == 0);
		/* One behind, so that the check knows which response is the last. */
		if (pending) {
			check_response(pending, ref, false);
			cpuhp__response__free_unpacked(pending, NULL);
		}
		pending = r;
	}
	/* The daemon sends whole frames only. */
	FUZZ_CHECK(cpuhp__frame_decoder_idle(&dec));
	cpuhp__frame_decoder_fini(&dec);
	if (pending) {
		check_response(pending, ref, true);
		cpuhp__response__free_unpacked(pending, NULL);
	}
	/*
	 * Within what a non-reading client may have queued (replies plus at most
	 * three events per hotplug), every request that is answered at once was.
	 */
	if (ref->clean && !ref->over_budget && ref->nrequests * 4 <= CPUHPD_CONN_MAX_QUEUED)
		for (size_t i = 0; i < ref->nids; i++)
			FUZZ_CHECK(ref->ids[i].replies >= ref->ids[i].must_answer);
}

static void check_daemon_state(void)
{
	struct cpuhpd_cpus now;
	const char *which;

	FUZZ_CHECK(d.nconns == 0 && cpuhpd_list_empty(&d.conns));
	FUZZ_CHECK(d.leases.held == 0 && d.leases.nwaiters == 0 && !cpuhpd_gate_closed(&d));
	FUZZ_CHECK(d.hotplug.nqueued == 0 && cpuhpd_list_empty(&d.hotplug.queue));
	FUZZ_CHECK(cpuhpd_list_empty(&d.watch.list));
	FUZZ_CHECK(d.freezes.n == 0 && cpuhpd_list_empty(&d.freezes.list));
	FUZZ_CHECK(d.states.nstates == 0 && cpuhpd_list_empty(&d.states.list));
	FUZZ_CHECK(!cpuhpd_states_running(&d) && !d.states.in_flight &&
	           cpuhpd_list_empty(&d.states.waiting) && !d.states.holds);
	FUZZ_CHECK(!d.fast.blocked && d.fast.nregions == 0 && cpuhpd_list_empty(&d.fast.regions));
	FUZZ_CHECK(d.admit.buffered == 0 && cpuhpd_list_empty(&d.admit.partial));
	for (unsigned i = 0; i < CPUHPD_ADMIT_BUCKETS; i++)
		FUZZ_CHECK(cpuhpd_list_empty(&d.admit.uids[i]));
	FUZZ_CHECK(cpuhpd_cpus_read(d.opt.sysfs_root, &now, &which) == 0);
	FUZZ_CHECK(cpuhp_cpuset_equal(&now.online, &d.view.online));
	FUZZ_CHECK(cpuhp_cpuset_equal(&now.possible, &d.view.possible));
	FUZZ_CHECK(cpuhp_cpuset_equal(&now.present, &d.view.present));
}

/* The next input starts from the same daemon state, whatever this one did. */
static void reset_daemon(void)
{
	const char *which;

	reset_tree();
	FUZZ_CHECK(cpuhpd_cpus_read(d.opt.sysfs_root, &d.view, &which) == 0);
	d.leases.next_id = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool started;
	struct client cl = {.fd = -1};
	struct reference ref = {0};
	size_t nsplit;

	if (!started) {
		daemon_start();
		started = true;
	}
	if (size < 1)
		return 0;
	nsplit = data[0] % 8;
	if (nsplit > size - 1)
		nsplit = size - 1;
	limited = data[0] & 16;
	d.opt.max_states_per_uid = limited ? 1 + (data[0] >> 5 & 1) : 0;
	d.opt.max_state_deadline_ms = limited ? 50 : CPUHPD_STATES_USER_DEADLINE_MS;
	d.opt.max_leases_per_uid = limited || limits ? 2 : 0;
	read_reference(data + 1 + nsplit, size - 1 - nsplit, &ref);
	run_client(&cl, data + 1, nsplit, data + 1 + nsplit, size - 1 - nsplit, data[0] & 8);
	/* A forged slot closes the connection (EPROTO): requests after it go unanswered. */
	if (cl.forged)
		ref.clean = false;
	check_responses(&cl, &ref);
	check_daemon_state();
	reset_daemon();
	free(cl.rx);
	free(ref.ids);
	return 0;
}
