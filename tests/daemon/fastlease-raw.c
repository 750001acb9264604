/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fastlease-raw: one connection to cpuhpd on the raw protocol, which takes
 * the fast path's memfds itself and does with them what a malicious client
 * could: try to write the header, resize or reseal its region, write any
 * count into its own slots, stay silent.  Commands on stdin, one JSON line
 * out for each.  Framing is proto/frame.c's.
 *
 * Commands:
 *   hello                  Hello; prints HelloReply's fast_path
 *   fastpath SLOTS         FastPathRequest; maps what comes (header read-only)
 *   hdrwrite               every way to write the header: mmap writable, mprotect,
 *                          pwrite, reopen through /proc; prints each errno (0: it worked)
 *   resize                 ftruncate and F_ADD_SEALS on the region and the header
 *   set SLOT VALUE         store VALUE into a slot's count
 *   setrel SLOT VALUE      store VALUE into a slot's released word
 *   closed                 read until the daemon closes the connection; prints the
 *                          last id-0 error's code and message and the region's live word
 *   state                  the header's state and open words, the region's live word
 *   wake                   send FastWake (unanswered)
 *   acquire MS             a socket LeaseAcquire; prints the reply
 *   status                 a Status; prints its lease fields
 *
 * Usage: fastlease-raw SOCKET
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cpuhp.pb-c.h"
#include "fastpath.h"
#include "frame.h"

static int sock = -1, fds[2] = {-1, -1}, nfds;
static uint64_t next_id = 1;
static struct cpuhp__frame_decoder dec;
static uint8_t buf[70000];
static size_t have, off;
static const struct cpuhp__fast_header *hdr;
static struct cpuhp__fast_region *reg;
static size_t reg_size;

static void die(const char *what)
{
	printf("{\"fatal\":\"%s: %s\"}\n", what, strerror(errno));
	exit(1);
}

/* Return: false if cpuhpd has closed the connection already (it may, on its own timer). */
static bool try_send_req(Cpuhp__Request *req, uint64_t id)
{
	uint8_t *frame;
	size_t len;
	ssize_t n;

	req->id = id;
	if (cpuhp__frame_pack_request(req, &frame, &len) < 0)
		die("pack");
	n = send(sock, frame, len, MSG_NOSIGNAL);
	free(frame);
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
		return false;
	if (n != (ssize_t)len)
		die("send");
	return true;
}

static void send_req(Cpuhp__Request *req, uint64_t id)
{
	if (!try_send_req(req, id))
		die("send");
}

/* The next response; keeps descriptors that come with it. */
static Cpuhp__Response *recv_resp(void)
{
	for (;;) {
		char ctl[CMSG_SPACE(sizeof(int) * 4)];
		struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
		struct cmsghdr *cm;
		Cpuhp__Response *resp;
		const uint8_t *payload;
		size_t plen;
		ssize_t n;

		while (off < have) {
			n = cpuhp__frame_decoder_feed(&dec, buf + off, have - off, &payload, &plen);
			if (n < 0)
				die("bad frame from cpuhpd");
			off += (size_t)n;
			if (payload) {
				if (cpuhp__frame_unpack_response(payload, plen, &resp) < 0)
					die("bad response");
				return resp;
			}
		}
		mh.msg_control = ctl;
		mh.msg_controllen = sizeof(ctl);
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (n <= 0)
			return NULL;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < k && nfds < 2; i++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
		}
		have = (size_t)n;
		off = 0;
	}
}

static Cpuhp__Response *call(Cpuhp__Request *req)
{
	uint64_t id = next_id++;
	Cpuhp__Response *resp;

	send_req(req, id);
	resp = recv_resp();
	if (!resp) {
		printf("{\"closed\":true}\n");
		exit(0);
	}
	return resp;
}

static void print_error(const Cpuhp__Response *r)
{
	const ProtobufCEnumValue *v =
	    protobuf_c_enum_descriptor_get_value(&cpuhp__error_code__descriptor, r->error->code);

	printf("{\"kind\":\"error\",\"code\":\"%s\"}\n", v ? v->name : "?");
}

static void cmd_hello(void)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Hello h = CPUHP__HELLO__INIT;
	Cpuhp__Response *r;

	h.version = CPUHP__PROTO_VERSION;
	h.client_name = "fastlease-raw";
	req.body_case = CPUHP__REQUEST__BODY_HELLO;
	req.hello = &h;
	r = call(&req);
	if (r->body_case == CPUHP__RESPONSE__BODY_HELLO)
		printf("{\"kind\":\"hello\",\"fast_path\":%s}\n",
		       r->hello->fast_path ? "true" : "false");
	else
		print_error(r);
	cpuhp__response__free_unpacked(r, NULL);
}

static void cmd_fastpath(unsigned slots)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__FastPathRequest fr = CPUHP__FAST_PATH_REQUEST__INIT;
	Cpuhp__Response *r;
	const Cpuhp__FastPathGranted *g;

	fr.slots = slots;
	req.body_case = CPUHP__REQUEST__BODY_FAST_PATH;
	req.fast_path = &fr;
	r = call(&req);
	if (r->body_case != CPUHP__RESPONSE__BODY_FAST_PATH_GRANTED) {
		print_error(r);
		cpuhp__response__free_unpacked(r, NULL);
		return;
	}
	g = r->fast_path_granted;
	if (nfds == 2 && !hdr) {
		hdr = mmap(NULL, CPUHP__FAST_HEADER_SIZE, PROT_READ, MAP_SHARED, fds[0], 0);
		reg_size = g->region_size;
		reg = mmap(NULL, reg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[1], 0);
		if (hdr == MAP_FAILED || reg == MAP_FAILED)
			die("mmap");
	}
	printf("{\"kind\":\"granted\",\"nfds\":%d,\"nslots\":%u,\"barrier\":%d,\"layout\":%u,"
	       "\"region_size\":%u}\n",
	       nfds, g->nslots, (int)g->barrier, g->layout, g->region_size);
	cpuhp__response__free_unpacked(r, NULL);
}

static int err_of(int ret)
{
	return ret < 0 ? errno : 0;
}

static void cmd_hdrwrite(void)
{
	char path[64];
	void *p;
	int e_mmap, e_mprotect, e_pwrite, e_reopen, fd;
	uint32_t v = 1;

	p = mmap(NULL, CPUHP__FAST_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
	e_mmap = p == MAP_FAILED ? errno : 0;
	if (p != MAP_FAILED)
		munmap(p, CPUHP__FAST_HEADER_SIZE);
	e_mprotect = err_of(mprotect((void *)hdr, CPUHP__FAST_HEADER_SIZE, PROT_READ | PROT_WRITE));
	e_pwrite = err_of((int)pwrite(fds[0], &v, sizeof(v), 128));
	/* A new open file description of the same memfd, read-write. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	fd = open(path, O_RDWR);
	if (fd < 0) {
		e_reopen = errno;
	} else {
		p = mmap(NULL, CPUHP__FAST_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		e_reopen = p == MAP_FAILED ? errno : 0;
		if (p != MAP_FAILED)
			munmap(p, CPUHP__FAST_HEADER_SIZE);
		close(fd);
	}
	printf("{\"mmap\":%d,\"mprotect\":%d,\"pwrite\":%d,\"reopen\":%d}\n", e_mmap, e_mprotect,
	       e_pwrite, e_reopen);
}

static void cmd_resize(void)
{
	int shrink = err_of(ftruncate(fds[1], 0));
	int grow = err_of(ftruncate(fds[1], (off_t)reg_size * 2));
	int seal = err_of(fcntl(fds[1], F_ADD_SEALS, F_SEAL_WRITE));
	int hdr_shrink = err_of(ftruncate(fds[0], 0));

	printf("{\"shrink\":%d,\"grow\":%d,\"seal\":%d,\"header_shrink\":%d}\n", shrink, grow, seal,
	       hdr_shrink);
}

static void cmd_state(void)
{
	printf("{\"state\":%" PRIu32 ",\"open\":%" PRIu32 ",\"live\":%" PRIu32 "}\n",
	       atomic_load(&hdr->state), hdr->open, atomic_load(&reg->head.live));
}

static void cmd_acquire(unsigned ms)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__LeaseAcquire a = CPUHP__LEASE_ACQUIRE__INIT;
	Cpuhp__Response *r;

	a.timeout_ms = ms;
	req.body_case = CPUHP__REQUEST__BODY_LEASE_ACQUIRE;
	req.lease_acquire = &a;
	r = call(&req);
	if (r->body_case == CPUHP__RESPONSE__BODY_LEASE_GRANTED)
		printf("{\"kind\":\"lease_granted\",\"lease_id\":%" PRIu64 "}\n",
		       r->lease_granted->lease_id);
	else
		print_error(r);
	cpuhp__response__free_unpacked(r, NULL);
}

static void cmd_status(void)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__StatusRequest sr = CPUHP__STATUS_REQUEST__INIT;
	Cpuhp__Response *r;

	req.body_case = CPUHP__REQUEST__BODY_STATUS;
	req.status = &sr;
	r = call(&req);
	printf("{\"leases_held\":%u,\"fast_leases_held\":%u,\"fast_holders\":%u,"
	       "\"fast_connections\":%u}\n",
	       r->status->leases_held, r->status->fast_leases_held, r->status->fast_holders,
	       r->status->fast_connections);
	cpuhp__response__free_unpacked(r, NULL);
}

/* Replies until EOF: what the daemon said last about the connection. */
static void cmd_closed(void)
{
	char code[64] = "", msg[512] = "";
	Cpuhp__Response *r;

	while ((r = recv_resp())) {
		if (r->body_case == CPUHP__RESPONSE__BODY_ERROR && r->id == 0) {
			const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
			    &cpuhp__error_code__descriptor, r->error->code);

			snprintf(code, sizeof(code), "%s", v ? v->name : "?");
			snprintf(msg, sizeof(msg), "%s",
			         r->error->message ? r->error->message : "");
		}
		cpuhp__response__free_unpacked(r, NULL);
	}
	printf("{\"eof\":true,\"code\":\"%s\",\"message\":\"%s\",\"live\":%u}\n", code, msg,
	       reg ? (unsigned)atomic_load(&reg->head.live) : 0u);
}

static void cmd_wake(void)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__FastWake w = CPUHP__FAST_WAKE__INIT;

	req.body_case = CPUHP__REQUEST__BODY_FAST_WAKE;
	req.fast_wake = &w;
	/* The wake only hurries cpuhpd, which may have seen the slot and closed: "closed" tells. */
	printf("{\"sent\":%s}\n", try_send_req(&req, 0) ? "true" : "false");
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char line[256];

	if (argc != 2 || !strcmp(argv[1], "--help")) {
		printf("Usage: fastlease-raw SOCKET\n"
		       "One raw connection that abuses the fast path's memory on command (see the "
		       "source's header).\n");
		return argc == 2 ? 0 : 2;
	}
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[1]);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	cpuhp__frame_decoder_init(&dec, CPUHP__FRAME_MAX);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		char *cmd = strtok(line, " \n"), *a = strtok(NULL, " \n"), *b = strtok(NULL, " \n");
		bool mapped = hdr != NULL;

		if (!cmd)
			printf("{\"error\":\"empty\"}\n");
		else if (!strcmp(cmd, "hello"))
			cmd_hello();
		else if (!strcmp(cmd, "fastpath") && a)
			cmd_fastpath((unsigned)strtoul(a, NULL, 10));
		else if (!strcmp(cmd, "hdrwrite") && mapped)
			cmd_hdrwrite();
		else if (!strcmp(cmd, "resize") && mapped)
			cmd_resize();
		else if (!strcmp(cmd, "set") && a && b && mapped) {
			atomic_store(&reg->slot[strtoul(a, NULL, 10)].count, (int32_t)atol(b));
			printf("{\"ok\":true}\n");
		} else if (!strcmp(cmd, "setrel") && a && b && mapped) {
			atomic_store(&reg->slot[strtoul(a, NULL, 10)].released, (int32_t)atol(b));
			printf("{\"ok\":true}\n");
		} else if (!strcmp(cmd, "closed"))
			cmd_closed();
		else if (!strcmp(cmd, "state") && mapped)
			cmd_state();
		else if (!strcmp(cmd, "wake"))
			cmd_wake();
		else if (!strcmp(cmd, "acquire") && a)
			cmd_acquire((unsigned)strtoul(a, NULL, 10));
		else if (!strcmp(cmd, "status"))
			cmd_status();
		else
			printf("{\"error\":\"bad command\"}\n");
		fflush(stdout);
	}
	return 0;
}
