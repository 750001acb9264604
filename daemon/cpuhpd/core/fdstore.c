/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The fd store and the state memfd; see fdstore.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpuhpd.h"
#include "base/log.h"
#include "base/notify.h"
#include "conn.h"
#include "fdstore.h"

#define SD_LISTEN_FDS_START 3

static void conn_gone_record(struct cpuhpd_conn *c);
static void flush(struct cpuhpd *d);

/* A count from the environment: digits only, else 0. */
static unsigned env_count(const char *name)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoul(s, &end, 10);
	return *end || errno || v > 1000000 ? 0 : (unsigned)v;
}

/* Read the whole of memfd @fd. Return: a malloc()ed copy and its length, or NULL. */
static char *read_all(int fd, size_t *len)
{
	struct stat st;
	char *buf;
	size_t have = 0;

	if (fstat(fd, &st) < 0 || st.st_size < 0 ||
	    (uint64_t)st.st_size > CPUHPD_JOURNAL_MAX_BYTES) {
		errno = EFBIG;
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return NULL;
	while (have < (size_t)st.st_size) {
		ssize_t n = pread(fd, buf + have, (size_t)st.st_size - have, (off_t)have);

		if (n <= 0) {
			free(buf);
			return NULL;
		}
		have += (size_t)n;
	}
	buf[have] = '\0';
	*len = have;
	return buf;
}

static void parse_state(struct cpuhpd *d, int fd)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	char why[200];
	size_t len = 0;
	char *text = read_all(fd, &len);
	int err;

	if (!text) {
		cpuhpd_warn("restart: cannot read the stored state: %m; adopting no client");
		return;
	}
	err = cpuhpd_journal_read(text, len, &s->saved, &s->prev, why, sizeof(why));
	free(text);
	if (err) {
		cpuhpd_warn("restart: the stored state is unusable (%s); adopting no client", why);
		return;
	}
	s->have_saved = true;
}

int cpuhpd_fdstore_take(struct cpuhpd *d)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	const char *pid = getenv("LISTEN_PID"), *names = getenv("LISTEN_FDNAMES");
	unsigned n = env_count("LISTEN_FDS");
	const char *p = names;
	int state = -1;

	s->state_fd = -1;
	cpuhpd_list_init(&s->dirty);
	s->max = d->opt.fd_store_max ? d->opt.fd_store_max : env_count("FDSTORE");
	s->on = s->max > 0 && getenv("NOTIFY_SOCKET") && *getenv("NOTIFY_SOCKET");
	if (!pid || strtol(pid, NULL, 10) != (long)getpid())
		n = 0;
	/* Children (none today) must not think the descriptors are theirs. */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (!n)
		return 0;
	s->taken = calloc(n, sizeof(*s->taken));
	if (!s->taken)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct cpuhpd_fdstore_taken *t = &s->taken[i];
		size_t len = p ? strcspn(p, ":") : 0;

		t->fd = SD_LISTEN_FDS_START + (int)i;
		fcntl(t->fd, F_SETFD, FD_CLOEXEC);
		if (len >= sizeof(t->name))
			len = sizeof(t->name) - 1;
		if (p)
			memcpy(t->name, p, len);
		if (p)
			p = p[strcspn(p, ":")] ? p + strcspn(p, ":") + 1 : NULL;
		if (!strcmp(t->name, "state"))
			state = t->fd;
	}
	s->ntaken = n;
	if (state >= 0)
		parse_state(d, state);
	return 0;
}

int cpuhpd_fdstore_claim(struct cpuhpd *d, const char *name)
{
	struct cpuhpd_fdstore *s = &d->fdstore;

	for (unsigned i = 0; i < s->ntaken; i++) {
		if (s->taken[i].fd >= 0 && !strcmp(s->taken[i].name, name)) {
			int fd = s->taken[i].fd;

			s->taken[i].fd = -1;
			return fd;
		}
	}
	return -1;
}

/* A socket unit's descriptor: named for the unit (or unnamed), not one of ours. */
static bool ours(const char *name)
{
	return !strcmp(name, "state") || !strcmp(name, "listen") || !strncmp(name, "conn-", 5) ||
	       !strncmp(name, "region-", 7);
}

int cpuhpd_fdstore_listen_fd(struct cpuhpd *d)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	int fd = cpuhpd_fdstore_claim(d, "listen");

	if (fd >= 0)
		return fd;
	for (unsigned i = 0; i < s->ntaken; i++) {
		if (s->taken[i].fd >= 0 && !ours(s->taken[i].name)) {
			fd = s->taken[i].fd;
			s->taken[i].fd = -1;
			return fd;
		}
	}
	return -1;
}

/* Send FDSTORE=1 for @fd as @name; Return: whether it is in the store now. */
static bool store(struct cpuhpd *d, int fd, const char *name)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	char msg[64];
	int err;

	if (!s->on || fd < 0)
		return false;
	if (s->stored >= s->max) {
		cpuhpd_warn("fd store full (%u descriptors, --fd-store-max / "
		            "FileDescriptorStoreMax=): %s is not kept across a restart",
		            s->max, name);
		return false;
	}
	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s", name);
	err = cpuhpd_notify_fds(msg, &fd, 1);
	if (err) {
		cpuhpd_warn("cannot put %s in the fd store: %s; restarts will drop leases", name,
		            strerror(-err));
		s->on = false;
		return false;
	}
	s->stored++;
	return true;
}

static void unstore(struct cpuhpd *d, const char *name)
{
	char msg[64];

	snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
	if (d->fdstore.on && !cpuhpd_notify_fds(msg, NULL, 0) && d->fdstore.stored)
		d->fdstore.stored--;
}

/*
 * Two descriptors a client (its socket, its fast-lease region), the state
 * memfd and a socket we bound: a store smaller than that for
 * --max-connections keeps what fits, and says so now rather than at the
 * restart.
 */
static void check_size(struct cpuhpd *d)
{
	const struct cpuhpd_fdstore *s = &d->fdstore;
	uint64_t fixed = 1 + !d->server.activated,
	         need = 2 * (uint64_t)d->opt.max_connections + fixed;

	if (s->max >= need)
		return;
	cpuhpd_warn("the fd store keeps %u descriptors, but --max-connections %u needs %" PRIu64
	            " (2 a client and %" PRIu64 "): past %" PRIu64 " clients a new one gets no "
	            "fast path, and past %" PRIu64 " a restart ends it (it sees EOF); raise "
	            "FileDescriptorStoreMax= and FDSTORE= (or --fd-store-max) to %" PRIu64,
	            s->max, d->opt.max_connections, need, fixed,
	            s->max > fixed ? (s->max - fixed) / 2 : 0, s->max > fixed ? s->max - fixed : 0,
	            need);
}

int cpuhpd_fdstore_ready(struct cpuhpd *d)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	int state = cpuhpd_fdstore_claim(d, "state");
	uv_os_fd_t listen_fd = -1;
	bool had_text;

	for (unsigned i = 0; i < s->ntaken; i++) {
		struct cpuhpd_fdstore_taken *t = &s->taken[i];

		/* Claimed: it stays in the store, ours now. */
		if (t->fd < 0) {
			s->stored += ours(t->name) && strcmp(t->name, "state");
			continue;
		}
		if (ours(t->name)) {
			cpuhpd_info("restart: %s has no client any more; closed", t->name);
			unstore(d, t->name);
		}
		close(t->fd);
		t->fd = -1;
	}
	free(s->taken);
	s->taken = NULL;
	s->ntaken = 0;
	had_text = s->have_saved && state >= 0;
	if (s->have_saved)
		cpuhpd_statetext_free(&s->saved);
	s->have_saved = false;
	s->stored += state >= 0;
	if (!s->on) {
		if (state >= 0)
			close(state);
		return 0;
	}
	if (state < 0) {
		state = memfd_create("cpuhpd-state", MFD_CLOEXEC);
		if (state < 0) {
			cpuhpd_warn("cannot create the state memfd: %m; restarts will drop leases");
			s->on = false;
			return 0;
		}
		if (!store(d, state, "state")) {
			close(state);
			return 0;
		}
	}
	s->state_fd = state;
	/* The records read (the last cpuhpd's): ours go where they overlap nothing of them. */
	s->slot = 1; /* the first base names slot 0 */
	s->live_off = s->end = CPUHPD_JOURNAL_DATA;
	if (had_text) {
		s->gen = s->prev.gen;
		s->slot = s->prev.gen ? s->prev.slot : 1;
		s->live_off = s->prev.off;
		s->end = s->prev.end > CPUHPD_JOURNAL_DATA ? s->prev.end : CPUHPD_JOURNAL_DATA;
	} else if (ftruncate(state, 0) < 0) {
		cpuhpd_warn("cannot empty the state memfd: %m");
	}
	/* A socket unit keeps its own socket; one we bound goes into the store. */
	if (!d->server.activated && !uv_fileno((uv_handle_t *)&d->server.pipe, &listen_fd))
		store(d, listen_fd, "listen");
	cpuhpd_info("fd store on (at most %u descriptors): a restart keeps every lease", s->max);
	check_size(d);
	s->broken = true; /* the first change... is now: the whole text */
	flush(d);
	return 0;
}

void cpuhpd_fdstore_conn_new(struct cpuhpd_conn *c)
{
	char name[32];
	uv_os_fd_t fd;

	if (!c->d->fdstore.on || uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0)
		return;
	snprintf(name, sizeof(name), "conn-%u", c->id);
	c->stored = store(c->d, fd, name);
}

bool cpuhpd_fdstore_has_room(const struct cpuhpd_conn *c)
{
	const struct cpuhpd_fdstore *s = &c->d->fdstore;

	return !s->on || !c->stored || s->stored < s->max;
}

void cpuhpd_fdstore_region_new(struct cpuhpd_conn *c, int fd, unsigned nslots)
{
	char name[32];

	snprintf(name, sizeof(name), "region-%u", c->id);
	if (c->stored)
		c->region_stored = store(c->d, fd, name);
	c->region_slots = nslots;
}

void cpuhpd_fdstore_region_kept(struct cpuhpd_conn *c, unsigned nslots)
{
	c->region_stored = true;
	c->region_slots = nslots;
}

void cpuhpd_fdstore_region_gone(struct cpuhpd_conn *c)
{
	char name[32];

	if (!c->region_stored)
		return;
	c->region_stored = false;
	c->region_slots = 0;
	snprintf(name, sizeof(name), "region-%u", c->id);
	unstore(c->d, name);
}

void cpuhpd_fdstore_conn_gone(struct cpuhpd_conn *c)
{
	char name[32];

	cpuhpd_fdstore_region_gone(c);
	if (!c->stored)
		return;
	c->stored = false;
	snprintf(name, sizeof(name), "conn-%u", c->id);
	unstore(c->d, name);
	conn_gone_record(c);
}

bool cpuhpd_fdstore_keeps(const struct cpuhpd *d)
{
	return d->fdstore.on && d->fdstore.state_fd >= 0;
}

/* --------------------------------------------------------- the state text */

/*
 * The journal (journal.h).  A change appends one record with what changed:
 * the daemon line if an id moved, the connections queued in ->dirty (each
 * one's lines made anew), those gone, the requests if ->reqs_dirty.  So a
 * change costs what changed.  Once the records since the base outweigh it
 * (and at least COMPACT_MIN), a new base is written whole: amortised, a
 * change still costs what changed.  Half-read frames go only into the last
 * base of a restart's stop: a SIGKILL loses them anyway (README.md).
 */
#define COMPACT_MIN (64u << 10)
/* A build buffer larger than this is given back after a base is written. */
#define BODY_KEEP (256u << 10)

static int put(struct cpuhpd_fdstore *s, const char *p, size_t len)
{
	return cpuhpd_buf_put(&s->body, p, len);
}

/* Run @fn writing into a memory stream, then append what it wrote. */
static int put_stream(struct cpuhpd *d, void (*fn)(struct cpuhpd *d, const void *arg, FILE *f),
                      const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	fn(d, arg, f);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	err = put(&d->fdstore, buf, len);
	free(buf);
	return err;
}

/* A connection's lines: its "conn" line and every feature's records. */
static void conn_lines(struct cpuhpd *d, const void *arg, FILE *f)
{
	const struct cpuhpd_conn *c = arg;

	fprintf(f, "conn %u %d %u %u %d %d", c->id, (int)c->peer.pid, (unsigned)c->peer.uid,
	        (unsigned)c->peer.gid, c->peer.admin, c->hello);
	cpuhpd_statetext_str(f, c->peer.comm);
	cpuhpd_statetext_str(f, c->who);
	cpuhpd_statetext_str(f, c->why);
	fprintf(f, " %u %" PRIu64 "\n", c->region_stored ? c->region_slots : 0,
	        c->watching ? c->watch_id : 0);
	for (const cpuhpd_save_conn_fn *save = d->fdstore.savers->conn; *save; save++)
		(*save)(c, f);
}

void cpuhpd_fdstore_put_request(FILE *f, unsigned conn_id, const Cpuhp__Request *rq, bool running)
{
	uint8_t *frame;
	size_t len;

	if (cpuhp__frame_pack_request(rq, &frame, &len))
		return; /* out of memory: the text misses it, and the daemon says so at the write */
	fprintf(f, "%s %u", running ? "run" : "req", conn_id);
	cpuhpd_statetext_bytes(f, frame + CPUHP__FRAME_HDR, len - CPUHP__FRAME_HDR);
	fputc('\n', f);
	free(frame);
}

/* Requests read during a restart's stop, and at its end a frame's start: the next daemon's. */
static void conn_pending(FILE *f, const struct cpuhpd_conn *c, bool partial)
{
	for (unsigned i = 0; i < c->ndeferred; i++) {
		fprintf(f, "req %u", c->id);
		cpuhpd_statetext_bytes(f, c->deferred[i].data, c->deferred[i].len);
		fputc('\n', f);
	}
	if (!partial || cpuhp__frame_decoder_idle(&c->dec))
		return;
	/* The prefix as read so far, then the payload bytes buffered. */
	fprintf(f, "partial %u ", c->id);
	cpuhpd_statetext_hex(f, c->dec.hdr, c->dec.hdr_have);
	cpuhpd_statetext_hex(f, c->dec.buf, c->dec.have);
	fputc('\n', f);
}

/* The "reqs" section: every request still to answer, in order; @arg: with partial frames. */
static void reqs_lines(struct cpuhpd *d, const void *arg, FILE *f)
{
	bool partial = arg != NULL;
	struct cpuhpd_list *pos;

	fputs("reqs\n", f);
	for (const cpuhpd_save_requests_fn *save = d->fdstore.savers->requests; *save; save++)
		(*save)(d, f);
	/* Only a restart's stop defers requests or keeps frames half read. */
	if (!d->handover)
		return;
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (c->stored && !c->closing)
			conn_pending(f, c, partial);
	}
}

/* The daemon line, if it says something new (or @always). */
static int put_daemon(struct cpuhpd *d, bool always)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	struct cpuhpd_saved ids = {.next_conn_id = d->next_conn_id};
	char line[sizeof(s->daemon_line)];
	int n;

	for (const cpuhpd_save_ids_fn *save = s->savers->ids; *save; save++)
		(*save)(d, &ids);
	n = snprintf(line, sizeof(line),
	             "daemon %d %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
	             (int)getpid(), ids.next_conn_id, ids.next_lease_id, ids.next_state_id,
	             ids.next_freeze_id, ids.next_call_id, ids.next_hotplug_seq);
	if (!always && !strcmp(line, s->daemon_line))
		return 0;
	memcpy(s->daemon_line, line, (size_t)n + 1);
	return put(s, line, (size_t)n);
}

static void dequeue(struct cpuhpd_conn *c)
{
	if (!c->st_queued)
		return;
	c->st_queued = false;
	cpuhpd_list_del(&c->st_node);
}

/* @len bytes at @off of the memfd, whole.  Return: 0, or -errno. */
static int write_at(int fd, const struct iovec *iov0, int n, uint64_t off)
{
	struct iovec iov[2];
	size_t done = 0, total = 0;

	memcpy(iov, iov0, (size_t)n * sizeof(*iov));
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	while (done < total) {
		ssize_t w = pwritev(fd, iov, n, (off_t)(off + done));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (size_t)w;
		/* Move the vectors past what went out. */
		for (int i = 0; i < n && w > 0; i++) {
			size_t k = (size_t)w < iov[i].iov_len ? (size_t)w : iov[i].iov_len;

			iov[i].iov_base = (char *)iov[i].iov_base + k;
			iov[i].iov_len -= k;
			w -= (ssize_t)k;
		}
	}
	return 0;
}

/* The body built, as one record of generation @gen at @off.  Return: its bytes, or -errno. */
static int64_t write_record(struct cpuhpd_fdstore *s, uint64_t gen, uint64_t off)
{
	char hdr[CPUHPD_JOURNAL_REC_HEADER_MAX];
	int n = cpuhpd_journal_rec_header(hdr, gen, s->body.p, s->body.len);
	struct iovec iov[2] = {{hdr, (size_t)n}, {s->body.p, s->body.len}};
	int err = write_at(s->state_fd, iov, 2, off);

	return err ? err : (int64_t)n + (int64_t)s->body.len;
}

/*
 * A new base, every connection's lines made anew (@final: a restart's
 * stop, with the frames half read), then the other slot names it: see
 * journal.h.  Return: 0 or -errno.
 */
static int compact(struct cpuhpd *d, bool final)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	struct cpuhpd_list *pos;
	char slot[CPUHPD_JOURNAL_SLOT];
	uint64_t gen = s->gen + 1, off;
	int64_t len;
	int err;

	s->body.len = 0;
	err = put_daemon(d, true);
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (!err && c->stored && !c->closing)
			err = put_stream(d, conn_lines, c);
	}
	if (!err)
		err = put_stream(d, reqs_lines, final ? d : NULL);
	if (err)
		return err;
	/* Where it overlaps nothing the valid slot names. */
	off = CPUHPD_JOURNAL_DATA + s->body.len + CPUHPD_JOURNAL_REC_HEADER_MAX <= s->live_off
	          ? CPUHPD_JOURNAL_DATA
	          : s->end;
	len = write_record(s, gen, off);
	if (len < 0)
		return (int)len;
	cpuhpd_journal_slot(slot, gen, off);
	err = write_at(s->state_fd, &(struct iovec){slot, sizeof(slot)}, 1,
	               (uint64_t)!s->slot * CPUHPD_JOURNAL_SLOT);
	if (err)
		return err;
	s->slot = !s->slot;
	s->gen = gen;
	s->live_off = off;
	s->end = off + (uint64_t)len;
	s->base_len = (uint64_t)len;
	s->since_base = 0;
	/* The old records are nobody's now: give their memory back. */
	if (off == CPUHPD_JOURNAL_DATA) {
		if (ftruncate(s->state_fd, (off_t)s->end) < 0)
			cpuhpd_warn("cannot cut the restart state: %m");
	} else {
		fallocate(s->state_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		          CPUHPD_JOURNAL_DATA, (off_t)(off - CPUHPD_JOURNAL_DATA));
	}
	while (!cpuhpd_list_empty(&s->dirty))
		dequeue(
		    cpuhpd_container_of(cpuhpd_list_first(&s->dirty), struct cpuhpd_conn, st_node));
	s->ngone = 0;
	s->reqs_dirty = false;
	s->broken = false;
	if (s->body.cap > BODY_KEEP)
		cpuhpd_buf_free(&s->body);
	return 0;
}

/* What changed since the last record, as one record (or a new base). */
static void flush(struct cpuhpd *d)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	int64_t len = 0;
	int err;

	if (s->state_fd < 0 || s->writing_off)
		return;
	if (s->broken) {
		err = compact(d, false);
		goto out;
	}
	s->body.len = 0;
	err = put_daemon(d, false);
	for (unsigned i = 0; i < s->ngone && !err; i++) {
		char line[32];
		int n = snprintf(line, sizeof(line), "gone %u\n", s->gone[i]);

		err = put(s, line, (size_t)n);
	}
	while (!err && !cpuhpd_list_empty(&s->dirty)) {
		struct cpuhpd_conn *c =
		    cpuhpd_container_of(cpuhpd_list_first(&s->dirty), struct cpuhpd_conn, st_node);

		dequeue(c);
		err = put_stream(d, conn_lines, c);
	}
	if (!err && s->reqs_dirty)
		err = put_stream(d, reqs_lines, NULL);
	if (err || !s->body.len)
		goto out;
	s->ngone = 0;
	s->reqs_dirty = false;
	if (s->since_base + s->body.len > (s->base_len > COMPACT_MIN ? s->base_len : COMPACT_MIN)) {
		err = compact(d, false);
		goto out;
	}
	len = write_record(s, s->gen, s->end);
	if (len < 0) {
		err = (int)len;
		goto out;
	}
	s->end += (uint64_t)len;
	s->since_base += (uint64_t)len;
out:
	if (err) {
		/* Whatever was not written is in no record: the next change writes all anew. */
		s->broken = true;
		cpuhpd_err("cannot write the restart state (%s): a restart now would drop leases",
		           strerror(-err));
	}
}

void cpuhpd_fdstore_changed(struct cpuhpd *d)
{
	d->fdstore.reqs_dirty = true;
	flush(d);
}

void cpuhpd_fdstore_conn_stale(struct cpuhpd_conn *c)
{
	struct cpuhpd_fdstore *s = &c->d->fdstore;

	if (!c->stored || c->closing || c->st_queued)
		return;
	c->st_queued = true;
	cpuhpd_list_add_tail(&s->dirty, &c->st_node);
}

void cpuhpd_fdstore_conn_changed(struct cpuhpd_conn *c)
{
	if (!c->stored || c->closing)
		return;
	cpuhpd_fdstore_conn_stale(c);
	flush(c->d);
}

void cpuhpd_fdstore_finish(struct cpuhpd *d)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	int err;

	if (s->state_fd < 0 || s->writing_off)
		return;
	err = compact(d, true);
	if (err)
		cpuhpd_err("cannot write the restart state (%s): the next cpuhpd will adopt "
		           "what it said last",
		           strerror(-err));
	s->writing_off = true;
}

/* @c closes: "gone", unless its lines were never written. */
static void conn_gone_record(struct cpuhpd_conn *c)
{
	struct cpuhpd_fdstore *s = &c->d->fdstore;
	unsigned *g;

	dequeue(c);
	if (s->state_fd < 0)
		return;
	if (s->ngone == s->gone_cap) {
		unsigned cap = s->gone_cap ? 2 * s->gone_cap : 16;

		g = realloc(s->gone, cap * sizeof(*g));
		if (!g) {
			s->broken = true;
			return;
		}
		s->gone = g;
		s->gone_cap = cap;
	}
	s->gone[s->ngone++] = c->id;
	flush(c->d);
}
