/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proto/frame.c: frames round-trip through pack, the decoder and unpack;
 * the decoder reassembles frames split at any byte; bad lengths are refused
 * from the prefix alone, before anything is buffered; garbage payloads give
 * -EPROTO.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

#include "check.h"

/* A SetOnline request with id @id, naming @cpus. */
static void make_set_online(Cpuhp__Request *req, Cpuhp__SetOnline *so, uint64_t id, char *cpus)
{
	cpuhp__request__init(req);
	cpuhp__set_online__init(so);
	so->cpus = cpus;
	so->online = true;
	so->timeout_ms = 1500;
	req->id = id;
	req->body_case = CPUHP__REQUEST__BODY_SET_ONLINE;
	req->set_online = so;
}

static void pack_set_online(uint64_t id, char *cpus, uint8_t **frame, size_t *len)
{
	Cpuhp__Request req;
	Cpuhp__SetOnline so;

	make_set_online(&req, &so, id, cpus);
	CHECK_EQ_INT(cpuhp__frame_pack_request(&req, frame, len), 0);
}

static void check_set_online(const uint8_t *payload, size_t len, uint64_t id, const char *cpus)
{
	Cpuhp__Request *req = NULL;

	CHECK(payload != NULL);
	CHECK_EQ_INT(cpuhp__frame_unpack_request(payload, len, &req), 0);
	CHECK_EQ_INT(req->id, id);
	CHECK_EQ_INT(req->body_case, CPUHP__REQUEST__BODY_SET_ONLINE);
	CHECK_EQ_STR(req->set_online->cpus, cpus);
	CHECK_EQ_INT(req->set_online->online, 1);
	CHECK_EQ_INT(req->set_online->timeout_ms, 1500);
	cpuhp__request__free_unpacked(req, NULL);
}

static void frame_pack_writes_big_endian_length_then_payload(void)
{
	uint8_t *frame;
	size_t len, n;

	pack_set_online(7, "2-3,5", &frame, &len);
	CHECK(len > CPUHP__FRAME_HDR);
	n = len - CPUHP__FRAME_HDR;
	CHECK_EQ_INT(frame[0], (n >> 24) & 0xff);
	CHECK_EQ_INT(frame[1], (n >> 16) & 0xff);
	CHECK_EQ_INT(frame[2], (n >> 8) & 0xff);
	CHECK_EQ_INT(frame[3], n & 0xff);
	check_set_online(frame + CPUHP__FRAME_HDR, n, 7, "2-3,5");
	free(frame);
}

static void frame_whole_frame_is_handed_out_in_place(void)
{
	struct cpuhp__frame_decoder d;
	const uint8_t *payload;
	size_t plen;
	uint8_t *frame;
	size_t len;

	pack_set_online(1, "0", &frame, &len);
	cpuhp__frame_decoder_init(&d, 0);
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, frame, len, &payload, &plen), len);
	CHECK(payload == frame + CPUHP__FRAME_HDR);
	CHECK_EQ_INT(plen, len - CPUHP__FRAME_HDR);
	CHECK(cpuhp__frame_decoder_idle(&d));
	CHECK(d.buf == NULL); /* nothing was copied */
	check_set_online(payload, plen, 1, "0");
	cpuhp__frame_decoder_fini(&d);
	free(frame);
}

/* Three frames back to back, as one stream. */
struct stream {
	uint8_t *bytes;
	size_t len;
	char cpus[3][32];
};

static void make_stream(struct stream *s)
{
	size_t i;

	s->bytes = NULL;
	s->len = 0;
	for (i = 0; i < 3; i++) {
		uint8_t *frame;
		size_t len;

		snprintf(s->cpus[i], sizeof(s->cpus[i]), "%zu-%zu,%zu", i, i + 1, 100 * i + 7);
		pack_set_online(i + 1, s->cpus[i], &frame, &len);
		s->bytes = realloc(s->bytes, s->len + len);
		CHECK(s->bytes != NULL);
		memcpy(s->bytes + s->len, frame, len);
		s->len += len;
		free(frame);
	}
}

/*
 * Feed @s in pieces: the first @split bytes, then @step bytes at a time.
 * Every frame must come out once, in order, intact.
 */
static void feed_stream(const struct stream *s, size_t split, size_t step)
{
	struct cpuhp__frame_decoder d;
	size_t off = 0, seen = 0;

	cpuhp__frame_decoder_init(&d, 0);
	while (off < s->len) {
		size_t chunk = off == 0 && split ? split : step;
		size_t left;
		const uint8_t *p;

		if (chunk > s->len - off)
			chunk = s->len - off;
		/* A copy, so an in-place payload cannot outlive its bytes unnoticed (ASan). */
		uint8_t *piece = malloc(chunk);
		CHECK(piece != NULL);
		memcpy(piece, s->bytes + off, chunk);
		p = piece;
		left = chunk;
		while (left) {
			const uint8_t *payload;
			size_t plen;
			ssize_t n = cpuhp__frame_decoder_feed(&d, p, left, &payload, &plen);

			CHECK(n > 0 && (size_t)n <= left);
			p += n;
			left -= n;
			if (payload) {
				CHECK(seen < 3);
				check_set_online(payload, plen, seen + 1, s->cpus[seen]);
				seen++;
			}
		}
		free(piece);
		off += chunk;
	}
	CHECK_EQ_INT(seen, 3);
	CHECK(cpuhp__frame_decoder_idle(&d));
	cpuhp__frame_decoder_fini(&d);
}

static void frame_decoder_reassembles_byte_by_byte(void)
{
	struct stream s;

	make_stream(&s);
	feed_stream(&s, 0, 1);
	free(s.bytes);
}

static void frame_decoder_reassembles_at_every_split_point(void)
{
	struct stream s;
	size_t split;

	make_stream(&s);
	for (split = 1; split < s.len; split++)
		feed_stream(&s, split, s.len);
	for (split = 2; split < 16; split++)
		feed_stream(&s, 0, split);
	free(s.bytes);
}

static void frame_decoder_refuses_oversize_from_the_prefix_alone(void)
{
	struct cpuhp__frame_decoder d;
	const uint8_t *payload;
	size_t plen;
	uint8_t bytes[CPUHP__FRAME_HDR + 8] = {0x00, 0x01, 0x00, 0x01}; /* 65537 */

	cpuhp__frame_decoder_init(&d, 0);
	/* Three prefix bytes are not enough to judge. */
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, bytes, 3, &payload, &plen), 3);
	CHECK(!cpuhp__frame_decoder_idle(&d));
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, bytes + 3, sizeof(bytes) - 3, &payload, &plen),
	             -EMSGSIZE);
	CHECK(payload == NULL);
	CHECK(d.buf == NULL && d.cap == 0); /* refused before buffering a byte */
	/* Sticky: the stream cannot be resynchronised. */
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, bytes, sizeof(bytes), &payload, &plen),
	             -EMSGSIZE);
	cpuhp__frame_decoder_fini(&d);

	/* A smaller limit is honoured the same way. */
	bytes[0] = bytes[1] = bytes[2] = 0;
	bytes[3] = 9;
	cpuhp__frame_decoder_init(&d, 8);
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, bytes, sizeof(bytes), &payload, &plen),
	             -EMSGSIZE);
	CHECK(d.buf == NULL);
	cpuhp__frame_decoder_fini(&d);
}

static void frame_decoder_accepts_exactly_the_maximum(void)
{
	struct cpuhp__frame_decoder d;
	const uint8_t *payload;
	size_t plen, off;
	uint8_t *bytes = malloc(CPUHP__FRAME_HDR + CPUHP__FRAME_MAX);

	CHECK(bytes != NULL);
	CHECK_EQ_INT(cpuhp__frame_put_header(bytes, CPUHP__FRAME_MAX), 0);
	for (off = 0; off < CPUHP__FRAME_MAX; off++)
		bytes[CPUHP__FRAME_HDR + off] = (uint8_t)(off * 31);
	cpuhp__frame_decoder_init(&d, 0);
	/* Split, so the payload is buffered rather than handed out in place. */
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, bytes, 1000, &payload, &plen), 1000);
	CHECK(payload == NULL);
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, bytes + 1000,
	                                       CPUHP__FRAME_HDR + CPUHP__FRAME_MAX - 1000, &payload,
	                                       &plen),
	             CPUHP__FRAME_HDR + CPUHP__FRAME_MAX - 1000);
	CHECK(payload != NULL);
	CHECK_EQ_INT(plen, CPUHP__FRAME_MAX);
	CHECK(memcmp(payload, bytes + CPUHP__FRAME_HDR, CPUHP__FRAME_MAX) == 0);
	cpuhp__frame_decoder_fini(&d);
	free(bytes);
}

static void frame_decoder_refuses_zero_length(void)
{
	struct cpuhp__frame_decoder d;
	const uint8_t *payload;
	size_t plen;
	const uint8_t zero[CPUHP__FRAME_HDR + 2] = {0, 0, 0, 0, 0x08, 0x01};

	cpuhp__frame_decoder_init(&d, 0);
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, zero, sizeof(zero), &payload, &plen), -EPROTO);
	CHECK(payload == NULL);
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, zero + 4, 2, &payload, &plen), -EPROTO);
	cpuhp__frame_decoder_fini(&d);
}

static void frame_decoder_not_idle_inside_a_truncated_frame(void)
{
	struct cpuhp__frame_decoder d;
	const uint8_t *payload;
	size_t plen;
	uint8_t *frame;
	size_t len;

	pack_set_online(3, "1", &frame, &len);
	cpuhp__frame_decoder_init(&d, 0);
	CHECK(cpuhp__frame_decoder_idle(&d));
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, frame, len - 1, &payload, &plen), len - 1);
	CHECK(payload == NULL);
	CHECK(!cpuhp__frame_decoder_idle(&d));
	CHECK_EQ_INT(cpuhp__frame_decoder_feed(&d, frame + len - 1, 1, &payload, &plen), 1);
	check_set_online(payload, plen, 3, "1");
	CHECK(cpuhp__frame_decoder_idle(&d));
	cpuhp__frame_decoder_fini(&d);
	free(frame);
}

static void frame_put_header_refuses_zero_and_oversize(void)
{
	uint8_t hdr[CPUHP__FRAME_HDR] = {0xaa, 0xaa, 0xaa, 0xaa};

	CHECK_EQ_INT(cpuhp__frame_put_header(hdr, 0), -EPROTO);
	CHECK_EQ_INT(cpuhp__frame_put_header(hdr, CPUHP__FRAME_MAX + 1), -EMSGSIZE);
	CHECK_EQ_INT(hdr[0], 0xaa); /* untouched on failure */
	CHECK_EQ_INT(cpuhp__frame_put_header(hdr, 0xfe03), 0);
	CHECK(hdr[0] == 0 && hdr[1] == 0 && hdr[2] == 0xfe && hdr[3] == 3);
	CHECK_EQ_INT(cpuhp__frame_put_header(hdr, CPUHP__FRAME_MAX), 0);
	CHECK(hdr[0] == 0 && hdr[1] == 1 && hdr[2] == 0 && hdr[3] == 0);
}

static void frame_pack_refuses_oversize_and_empty_messages(void)
{
	Cpuhp__Request req;
	Cpuhp__SetOnline so;
	uint8_t *frame = (uint8_t *)"untouched";
	size_t len = 12345;
	char *big = malloc(CPUHP__FRAME_MAX + 1);

	CHECK(big != NULL);
	memset(big, '1', CPUHP__FRAME_MAX);
	big[CPUHP__FRAME_MAX] = '\0';
	make_set_online(&req, &so, 1, big);
	CHECK_EQ_INT(cpuhp__frame_pack_request(&req, &frame, &len), -EMSGSIZE);
	CHECK_EQ_STR((char *)frame, "untouched");
	CHECK_EQ_INT(len, 12345);

	/* Every field at its default encodes to nothing: not a frame. */
	cpuhp__request__init(&req);
	CHECK_EQ_INT(cpuhp__frame_pack_request(&req, &frame, &len), -EPROTO);
	free(big);
}

static void frame_unpack_garbage_is_eproto(void)
{
	/* Field 1 as a length-delimited field whose length runs past the end. */
	static const uint8_t overrun[] = {0x0a, 0x40, 0x01};
	/* A varint that never ends. */
	static const uint8_t endless[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff,
	                                  0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	/* The body's SetOnline with a cpus string that is cut short. */
	static const uint8_t cut[] = {0x2a, 0x05, 0x0a, 0x09, 0x31};
	Cpuhp__Request *req = (Cpuhp__Request *)1;
	Cpuhp__Response *resp = (Cpuhp__Response *)1;

	CHECK_EQ_INT(cpuhp__frame_unpack_request(overrun, sizeof(overrun), &req), -EPROTO);
	CHECK_EQ_INT(cpuhp__frame_unpack_request(endless, sizeof(endless), &req), -EPROTO);
	CHECK_EQ_INT(cpuhp__frame_unpack_request(cut, sizeof(cut), &req), -EPROTO);
	CHECK_EQ_INT(cpuhp__frame_unpack_response(overrun, sizeof(overrun), &resp), -EPROTO);
	CHECK(req == (Cpuhp__Request *)1 && resp == (Cpuhp__Response *)1);
}

static void frame_response_round_trips_with_repeated_results(void)
{
	Cpuhp__Response resp = CPUHP__RESPONSE__INIT, *out = NULL;
	Cpuhp__SetOnlineReply reply = CPUHP__SET_ONLINE_REPLY__INIT;
	Cpuhp__CpuResult r[2] = {CPUHP__CPU_RESULT__INIT, CPUHP__CPU_RESULT__INIT};
	Cpuhp__CpuResult *rp[2] = {&r[0], &r[1]};
	uint8_t *frame;
	size_t len;

	r[0].cpu = 2;
	r[0].ok = true;
	r[0].changed = true;
	r[1].cpu = 3;
	r[1].code = CPUHP__ERROR_CODE__ERR_EBUSY;
	r[1].message = "cpu3: device busy";
	reply.n_results = 2;
	reply.results = rp;
	reply.online = "0-2";
	resp.id = UINT64_MAX;
	resp.body_case = CPUHP__RESPONSE__BODY_SET_ONLINE;
	resp.set_online = &reply;
	CHECK_EQ_INT(cpuhp__frame_pack_response(&resp, &frame, &len), 0);
	CHECK_EQ_INT(
	    cpuhp__frame_unpack_response(frame + CPUHP__FRAME_HDR, len - CPUHP__FRAME_HDR, &out),
	    0);
	CHECK(out->id == UINT64_MAX);
	CHECK_EQ_INT(out->body_case, CPUHP__RESPONSE__BODY_SET_ONLINE);
	CHECK_EQ_INT(out->set_online->n_results, 2);
	CHECK_EQ_INT(out->set_online->results[0]->cpu, 2);
	CHECK(out->set_online->results[0]->ok && out->set_online->results[0]->changed);
	CHECK_EQ_INT(out->set_online->results[1]->code, CPUHP__ERROR_CODE__ERR_EBUSY);
	CHECK(!out->set_online->results[1]->ok);
	CHECK_EQ_STR(out->set_online->results[1]->message, "cpu3: device busy");
	CHECK_EQ_STR(out->set_online->online, "0-2");
	cpuhp__response__free_unpacked(out, NULL);
	free(frame);
}

int main(void)
{
	RUN_TEST(frame_pack_writes_big_endian_length_then_payload);
	RUN_TEST(frame_whole_frame_is_handed_out_in_place);
	RUN_TEST(frame_decoder_reassembles_byte_by_byte);
	RUN_TEST(frame_decoder_reassembles_at_every_split_point);
	RUN_TEST(frame_decoder_refuses_oversize_from_the_prefix_alone);
	RUN_TEST(frame_decoder_accepts_exactly_the_maximum);
	RUN_TEST(frame_decoder_refuses_zero_length);
	RUN_TEST(frame_decoder_not_idle_inside_a_truncated_frame);
	RUN_TEST(frame_put_header_refuses_zero_and_oversize);
	RUN_TEST(frame_pack_refuses_oversize_and_empty_messages);
	RUN_TEST(frame_unpack_garbage_is_eproto);
	RUN_TEST(frame_response_round_trips_with_repeated_results);
	return 0;
}
