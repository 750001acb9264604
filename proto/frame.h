/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Framing of the cpuhpd protocol on buffers, with no I/O: a 4-byte
 * big-endian payload length, then one protobuf message (FRAMING.md is the
 * specification).  The encoder writes whole frames; the decoder takes bytes
 * as they arrive, split anywhere, and hands out one complete payload at a
 * time.  Used by cpuhpd, libcpuhp-client and the tests; not libcpuhp API,
 * so, as everywhere in proto/, names carry the internal prefix (cpuhp__,
 * CPUHP__): a reader tells API from implementation by name alone.
 */
#ifndef CPUHP_PROTO_FRAME_H
#define CPUHP_PROTO_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpuhp.pb-c.h"

/* Bytes of the length prefix. */
#define CPUHP__FRAME_HDR 4
/* Largest payload either side sends or accepts. */
#define CPUHP__FRAME_MAX 65536
/* The protocol version this code speaks (Hello.version). */
#define CPUHP__PROTO_VERSION 1

/**
 * cpuhp__frame_put_header() - write the length prefix of a @len-byte payload.
 * Return: 0; -EPROTO if @len is 0, -EMSGSIZE if it is over CPUHP__FRAME_MAX
 * (@hdr is then untouched).
 */
int cpuhp__frame_put_header(uint8_t hdr[CPUHP__FRAME_HDR], size_t len);

/**
 * cpuhp__frame_pack() - encode @msg as one frame in a new buffer.
 * @out, @out_len: the frame (prefix and payload), to free(); written only on
 *                 success.
 *
 * A message whose encoding is empty (every field at its default) cannot be
 * framed: Request and Response always carry a body, so it is a caller bug.
 *
 * Return: 0; -EMSGSIZE if the payload would exceed CPUHP__FRAME_MAX; -EPROTO
 * if it would be empty; -ENOMEM.
 */
int cpuhp__frame_pack(const ProtobufCMessage *msg, uint8_t **out, size_t *out_len);

static inline int cpuhp__frame_pack_request(const Cpuhp__Request *req, uint8_t **out,
                                            size_t *out_len)
{
	return cpuhp__frame_pack(&req->base, out, out_len);
}

static inline int cpuhp__frame_pack_response(const Cpuhp__Response *resp, uint8_t **out,
                                             size_t *out_len)
{
	return cpuhp__frame_pack(&resp->base, out, out_len);
}

/**
 * cpuhp__frame_unpack_request() - decode a payload handed out by the decoder.
 * @out: the message, to release with cpuhp__request__free_unpacked(@out,
 *       NULL); written only on success.
 *
 * Only the wire format is checked: a body the receiver does not know (a
 * newer peer) or none at all unpacks fine with body_case NOT_SET, and is the
 * caller's to answer.
 *
 * Return: 0; -EPROTO if @payload is not a valid Request (protobuf-c gives no
 * detail); -EMSGSIZE if @len is over CPUHP__FRAME_MAX.
 */
int cpuhp__frame_unpack_request(const uint8_t *payload, size_t len, Cpuhp__Request **out);

/** cpuhp__frame_unpack_response() - the same for a Response. */
int cpuhp__frame_unpack_response(const uint8_t *payload, size_t len, Cpuhp__Response **out);

/*
 * Incremental decoder, one per connection.  Fields are private.
 *
 * A payload that arrives whole within one cpuhp__frame_decoder_feed() call is
 * handed out in place, without a copy; the decoder buffers only payloads
 * split across calls.  It never buffers (or allocates for) more than the
 * length a valid header announced, so a peer cannot make it hold more than
 * max_payload bytes.
 */
struct cpuhp__frame_decoder {
	uint8_t hdr[CPUHP__FRAME_HDR];
	uint32_t hdr_have; /* prefix bytes seen of the current frame */
	uint32_t need;     /* payload length, once the prefix is complete */
	uint32_t have;     /* payload bytes buffered in buf */
	uint32_t max;      /* largest payload accepted */
	uint8_t *buf;
	size_t cap;
	int error; /* sticky: once a frame was bad, every feed fails */
};

/** cpuhp__frame_decoder_init() - @max_payload: 0 means CPUHP__FRAME_MAX. */
void cpuhp__frame_decoder_init(struct cpuhp__frame_decoder *d, uint32_t max_payload);
void cpuhp__frame_decoder_fini(struct cpuhp__frame_decoder *d);

/**
 * cpuhp__frame_decoder_shrink() - between frames, free the reassembly buffer
 * (a no-op in the middle of a frame), so that a peer that once split a
 * large frame holds no memory while idle.  The next split frame allocates
 * again.
 */
void cpuhp__frame_decoder_shrink(struct cpuhp__frame_decoder *d);

/**
 * cpuhp__frame_decoder_feed() - consume bytes up to the end of one frame.
 * @data, @len: bytes read from the stream.
 * @payload, @payload_len: set to the next complete payload when one ends
 *              within the bytes consumed, else *@payload is set to NULL.  The
 *              payload stays valid until the next feed or fini, and (when
 *              handed out in place) only as long as @data does.
 *
 * Call in a loop, advancing @data by the return value, until @len is used
 * up: one call completes at most one frame.
 *
 * Return: bytes consumed (> 0 unless @len is 0); -EPROTO on a zero length
 * prefix; -EMSGSIZE on a length over the maximum, detected from the prefix
 * alone; -ENOMEM.  Errors are sticky: the stream cannot be resynchronised.
 */
ssize_t cpuhp__frame_decoder_feed(struct cpuhp__frame_decoder *d, const uint8_t *data, size_t len,
                                  const uint8_t **payload, size_t *payload_len);

/**
 * cpuhp__frame_decoder_idle() - true between frames: no prefix or payload
 * byte of an unfinished frame is pending.  At end of stream, false means the
 * peer sent a truncated frame.
 */
bool cpuhp__frame_decoder_idle(const struct cpuhp__frame_decoder *d);

#endif /* CPUHP_PROTO_FRAME_H */
