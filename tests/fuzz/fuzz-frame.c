/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target: the frame decoder and Request/Response unpacking on
 * arbitrary bytes, as cpuhpd and the client see them from a peer.
 *
 * Properties: the decoder, fed in pieces whose sizes the input chooses,
 * hands out exactly the payloads (and stops at exactly the error) that a
 * plain reading of the stream gives; it never buffers a payload over the
 * limit; a payload that unpacks re-packs into a frame that unpacks to the
 * same encoding.  The sanitizers catch the rest (protobuf-c included).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errmap.h"
#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#include "fuzzcheck.h"

/* A small limit too, so the oversize path is reachable with small inputs. */
#define SMALL_MAX 64

/*
 * The reference: walk the stream frame by frame.  Return the number of
 * complete payloads, their offsets and lengths in @off/@len (room for
 * @cap), and in *@err the error the stream ends with (0: none).
 */
static size_t ref_frames(const uint8_t *s, size_t n, uint32_t max, size_t *off, size_t *len,
                         size_t cap, int *err)
{
	size_t pos = 0, k = 0;

	*err = 0;
	while (n - pos >= CPUHP__FRAME_HDR && k < cap) {
		uint32_t l = (uint32_t)s[pos] << 24 | (uint32_t)s[pos + 1] << 16 |
		             (uint32_t)s[pos + 2] << 8 | s[pos + 3];

		if (l == 0 || l > max) {
			*err = l == 0 ? -EPROTO : -EMSGSIZE;
			return k;
		}
		if (n - pos - CPUHP__FRAME_HDR < l)
			break;
		off[k] = pos + CPUHP__FRAME_HDR;
		len[k] = l;
		k++;
		pos += CPUHP__FRAME_HDR + l;
	}
	return k;
}

/*
 * A Request that unpacked re-packs into a frame; when that frame unpacks
 * too, packing it again gives the same bytes.  (It need not unpack:
 * protobuf-c keeps unknown fields as read, even under a tag it refuses once
 * re-encoded minimally, such as "80 00", field 0.  cpuhpd never re-sends
 * what it received.)
 */
static void check_request_round_trip(const Cpuhp__Request *req)
{
	uint8_t *frame, *frame2;
	size_t flen, flen2;
	Cpuhp__Request *again;
	int ret = cpuhp__frame_pack_request(req, &frame, &flen);

	/* An encoding of only default fields is empty, and cannot be framed. */
	FUZZ_CHECK(ret == 0 || ret == -EPROTO || ret == -EMSGSIZE);
	if (ret < 0)
		return;
	if (cpuhp__frame_unpack_request(frame + CPUHP__FRAME_HDR, flen - CPUHP__FRAME_HDR,
	                                &again) == 0) {
		FUZZ_CHECK(cpuhp__frame_pack_request(again, &frame2, &flen2) == 0);
		FUZZ_CHECK(flen == flen2 && !memcmp(frame, frame2, flen));
		free(frame2);
		cpuhp__request__free_unpacked(again, NULL);
	}
	free(frame);
}

/* Unpack as both message kinds, as the daemon and the client would. */
static void check_payload(const uint8_t *p, size_t n)
{
	Cpuhp__Request *req;
	Cpuhp__Response *resp;

	if (cpuhp__frame_unpack_request(p, n, &req) == 0) {
		check_request_round_trip(req);
		cpuhp__request__free_unpacked(req, NULL);
	}
	if (cpuhp__frame_unpack_response(p, n, &resp) == 0) {
		if (resp->body_case == CPUHP__RESPONSE__BODY_ERROR)
			FUZZ_CHECK(cpuhp__errmap_from_wire(resp->error->code) < 0 &&
			           cpuhp__errmap_describe(resp->error->code));
		cpuhp__response__free_unpacked(resp, NULL);
	}
}

static void run_decoder(const uint8_t *split, size_t nsplit, const uint8_t *s, size_t n,
                        uint32_t max)
{
	enum { CAP = 256 };
	size_t off[CAP], len[CAP], k, got = 0, pos = 0, i = 0;
	struct cpuhp__frame_decoder d;
	int err, final = 0;

	k = ref_frames(s, n, max, off, len, CAP, &err);
	cpuhp__frame_decoder_init(&d, max);
	while (pos < n && got < CAP) {
		/* Piece sizes 1..256 from the input's first bytes, cycled. */
		size_t piece = nsplit ? (size_t)split[i++ % nsplit] + 1 : n;
		const uint8_t *payload;
		size_t plen;
		ssize_t used;

		if (piece > n - pos)
			piece = n - pos;
		while (piece) {
			used = cpuhp__frame_decoder_feed(&d, s + pos, piece, &payload, &plen);
			if (used < 0) {
				final = (int)used;
				goto done;
			}
			FUZZ_CHECK(used > 0 && (size_t)used <= piece);
			FUZZ_CHECK(d.cap <= max);
			pos += (size_t)used;
			piece -= (size_t)used;
			if (payload) {
				FUZZ_CHECK(got < k);
				FUZZ_CHECK(plen == len[got] &&
				           !memcmp(payload, s + off[got], plen));
				check_payload(payload, plen);
				got++;
				if (got == CAP)
					goto done;
			}
		}
	}
done:
	FUZZ_CHECK(got == k);
	if (got < CAP)
		FUZZ_CHECK(final == err);
	cpuhp__frame_decoder_fini(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t nsplit;

	if (size < 1)
		return 0;
	/* Byte 0: how many of the next bytes choose piece sizes; the rest is the stream. */
	nsplit = data[0] % 8;
	if (nsplit > size - 1)
		nsplit = size - 1;
	run_decoder(data + 1, nsplit, data + 1 + nsplit, size - 1 - nsplit, CPUHP__FRAME_MAX);
	run_decoder(data + 1, nsplit, data + 1 + nsplit, size - 1 - nsplit, SMALL_MAX);
	/* The bytes as one payload, without framing. */
	check_payload(data, size > CPUHP__FRAME_MAX ? CPUHP__FRAME_MAX : size);
	return 0;
}
