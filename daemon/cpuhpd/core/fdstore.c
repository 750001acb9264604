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
	    (uint64_t)st.st_size > CPUHPD_STATETEXT_MAX_BYTES)
		return NULL;
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
	err = cpuhpd_statetext_parse(text, len, &s->saved, why, sizeof(why));
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

int cpuhpd_fdstore_ready(struct cpuhpd *d)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	int state = cpuhpd_fdstore_claim(d, "state");
	uv_os_fd_t listen_fd = -1;

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
	/* A socket unit keeps its own socket; one we bound goes into the store. */
	if (!d->server.activated && !uv_fileno((uv_handle_t *)&d->server.pipe, &listen_fd))
		store(d, listen_fd, "listen");
	cpuhpd_info("fd store on (at most %u descriptors): a restart keeps every lease", s->max);
	cpuhpd_fdstore_changed(d);
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
	cpuhpd_fdstore_changed(c->d);
}

bool cpuhpd_fdstore_keeps(const struct cpuhpd *d)
{
	return d->fdstore.on && d->fdstore.state_fd >= 0;
}

/* --------------------------------------------------------- the state text */

/*
 * The text is rebuilt on every change, but a connection's lines only when
 * they changed (->st_dirty): each connection keeps its part, its "conn"
 * line and its records, ready to copy.  What belongs to no one connection
 * (the requests still to answer, in their order) is small and made anew.
 */
static char *conn_chunk(const struct cpuhpd_conn *c, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	fprintf(f, "conn %u %d %u %u %d %d", c->id, (int)c->peer.pid, (unsigned)c->peer.uid,
	        (unsigned)c->peer.gid, c->peer.admin, c->hello);
	cpuhpd_statetext_str(f, c->peer.comm);
	cpuhpd_statetext_str(f, c->who);
	cpuhpd_statetext_str(f, c->why);
	fprintf(f, " %u %" PRIu64 "\n", c->region_stored ? c->region_slots : 0,
	        c->watching ? c->watch_id : 0);
	for (const cpuhpd_save_conn_fn *save = c->d->fdstore.savers->conn; *save; save++)
		(*save)(c, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

void cpuhpd_fdstore_put_request(FILE *f, unsigned conn_id, const Cpuhp__Request *rq)
{
	uint8_t *frame;
	size_t len;

	if (cpuhp__frame_pack_request(rq, &frame, &len))
		return; /* out of memory: the text misses it, and the daemon says so at the write */
	fprintf(f, "req %u", conn_id);
	cpuhpd_statetext_bytes(f, frame + CPUHP__FRAME_HDR, len - CPUHP__FRAME_HDR);
	fputc('\n', f);
	free(frame);
}

/* Requests read during a restart's stop, and a frame's start: the next daemon's first. */
static void conn_pending(FILE *f, const struct cpuhpd_conn *c)
{
	uint8_t part[CPUHP__FRAME_HDR];

	for (unsigned i = 0; i < c->ndeferred; i++) {
		fprintf(f, "req %u", c->id);
		cpuhpd_statetext_bytes(f, c->deferred[i].data, c->deferred[i].len);
		fputc('\n', f);
	}
	if (cpuhp__frame_decoder_idle(&c->dec))
		return;
	/* The prefix as read so far, then the payload bytes buffered. */
	fprintf(f, "partial %u ", c->id);
	memcpy(part, c->dec.hdr, sizeof(part));
	for (uint32_t i = 0; i < c->dec.hdr_have; i++)
		fprintf(f, "%02x", part[i]);
	for (uint32_t i = 0; i < c->dec.have; i++)
		fprintf(f, "%02x", c->dec.buf[i]);
	fputc('\n', f);
}

/* The daemon line and the requests in their order: every connection's, at the end. */
static char *tail_text(struct cpuhpd *d, size_t *len)
{
	struct cpuhpd_list *pos;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		return NULL;
	for (const cpuhpd_save_requests_fn *save = d->fdstore.savers->requests; *save; save++)
		(*save)(d, f);
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (c->stored && !c->closing &&
		    (c->ndeferred || !cpuhp__frame_decoder_idle(&c->dec)))
			conn_pending(f, c);
	}
	fputs("end\n", f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Append @len bytes to the body being built; Return: 0 or -ENOMEM. */
static int put(struct cpuhpd_fdstore *s, const char *p, size_t len)
{
	if (s->body_len + len > s->body_cap) {
		size_t cap = s->body_cap ? s->body_cap : 4096;
		char *b;

		while (cap < s->body_len + len)
			cap *= 2;
		b = realloc(s->body, cap);
		if (!b)
			return -ENOMEM;
		s->body = b;
		s->body_cap = cap;
	}
	memcpy(s->body + s->body_len, p, len);
	s->body_len += len;
	return 0;
}

static int build(struct cpuhpd *d)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	struct cpuhpd_saved ids = {.next_conn_id = d->next_conn_id};
	struct cpuhpd_list *pos;
	char line[192], *tail;
	size_t tail_len;
	int n, err;

	for (const cpuhpd_save_ids_fn *save = s->savers->ids; *save; save++)
		(*save)(d, &ids);
	s->body_len = 0;
	n = snprintf(line, sizeof(line),
	             "daemon %d %u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
	             (int)getpid(), ids.next_conn_id, ids.next_lease_id, ids.next_state_id,
	             ids.next_freeze_id, ids.next_call_id, ids.next_hotplug_seq);
	err = put(s, line, (size_t)n);
	cpuhpd_list_for_each(pos, &d->conns)
	{
		struct cpuhpd_conn *c = cpuhpd_container_of(pos, struct cpuhpd_conn, node);

		if (err)
			return err;
		if (!c->stored || c->closing)
			continue;
		if (c->st_dirty || !c->st_chunk) {
			size_t len;
			char *chunk = conn_chunk(c, &len);

			if (!chunk)
				return -ENOMEM;
			free(c->st_chunk);
			c->st_chunk = chunk;
			c->st_len = len;
			c->st_dirty = false;
		}
		err = put(s, c->st_chunk, c->st_len);
	}
	tail = tail_text(d, &tail_len);
	if (!tail)
		return -ENOMEM;
	if (!err)
		err = put(s, tail, tail_len);
	free(tail);
	return err;
}

void cpuhpd_fdstore_changed(struct cpuhpd *d)
{
	struct cpuhpd_fdstore *s = &d->fdstore;
	char first[CPUHPD_STATETEXT_HEADER_MAX];
	struct iovec iov[2];
	size_t len, off = 0;
	int n;

	if (s->state_fd < 0 || s->writing_off)
		return;
	if (build(d)) {
		cpuhpd_err("out of memory writing the restart state: a restart now would drop "
		           "leases");
		return;
	}
	n = cpuhpd_statetext_header(first, sizeof(first), s->body, s->body_len);
	len = (size_t)n + s->body_len;
	/*
	 * Written over the old text, then cut to length: a kill in between
	 * leaves a length or hash that does not match, and the next daemon
	 * refuses the text instead of misreading it (statetext.h).
	 */
	while (off < len) {
		ssize_t w;
		int k = 0;

		if (off < (size_t)n)
			iov[k++] = (struct iovec){first + off, (size_t)n - off};
		iov[k++] = (struct iovec){s->body + (off > (size_t)n ? off - (size_t)n : 0),
		                          s->body_len - (off > (size_t)n ? off - (size_t)n : 0)};
		w = pwritev(s->state_fd, iov, k, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			cpuhpd_err("cannot write the restart state: %m");
			break;
		}
		off += (size_t)w;
	}
	if (off == len && ftruncate(s->state_fd, (off_t)len) < 0)
		cpuhpd_err("cannot cut the restart state: %m");
}

void cpuhpd_fdstore_conn_stale(struct cpuhpd_conn *c)
{
	c->st_dirty = true;
}

void cpuhpd_fdstore_conn_changed(struct cpuhpd_conn *c)
{
	c->st_dirty = true;
	if (c->stored && !c->closing)
		cpuhpd_fdstore_changed(c->d);
}
