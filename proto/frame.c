/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Length-prefixed frames on buffers (see frame.h and FRAMING.md).  The
 * decoder validates a length from the prefix alone, so an oversized or zero
 * frame is refused before a byte of its payload is stored.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

static int check_len(size_t len, size_t max)
{
	if (len == 0)
		return -EPROTO;
	if (len > max)
		return -EMSGSIZE;
	return 0;
}

int cpuhp__frame_put_header(uint8_t hdr[CPUHP__FRAME_HDR], size_t len)
{
	int ret = check_len(len, CPUHP__FRAME_MAX);

	if (ret < 0)
		return ret;
	hdr[0] = (uint8_t)(len >> 24);
	hdr[1] = (uint8_t)(len >> 16);
	hdr[2] = (uint8_t)(len >> 8);
	hdr[3] = (uint8_t)len;
	return 0;
}

static uint32_t get_header(const uint8_t hdr[CPUHP__FRAME_HDR])
{
	return (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
}

int cpuhp__frame_pack(const ProtobufCMessage *msg, uint8_t **out, size_t *out_len)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;
	int ret;

	ret = check_len(len, CPUHP__FRAME_MAX);
	if (ret < 0)
		return ret;
	buf = malloc(CPUHP__FRAME_HDR + len);
	if (!buf)
		return -ENOMEM;
	cpuhp__frame_put_header(buf, len);
	protobuf_c_message_pack(msg, buf + CPUHP__FRAME_HDR);
	*out = buf;
	*out_len = CPUHP__FRAME_HDR + len;
	return 0;
}

int cpuhp__frame_unpack_request(const uint8_t *payload, size_t len, Cpuhp__Request **out)
{
	Cpuhp__Request *req;

	if (len > CPUHP__FRAME_MAX)
		return -EMSGSIZE;
	req = cpuhp__request__unpack(NULL, len, payload);
	if (!req)
		return -EPROTO;
	*out = req;
	return 0;
}

int cpuhp__frame_unpack_response(const uint8_t *payload, size_t len, Cpuhp__Response **out)
{
	Cpuhp__Response *resp;

	if (len > CPUHP__FRAME_MAX)
		return -EMSGSIZE;
	resp = cpuhp__response__unpack(NULL, len, payload);
	if (!resp)
		return -EPROTO;
	*out = resp;
	return 0;
}

void cpuhp__frame_decoder_init(struct cpuhp__frame_decoder *d, uint32_t max_payload)
{
	memset(d, 0, sizeof(*d));
	d->max = max_payload ? max_payload : CPUHP__FRAME_MAX;
}

void cpuhp__frame_decoder_fini(struct cpuhp__frame_decoder *d)
{
	free(d->buf);
	d->buf = NULL;
	d->cap = 0;
}

void cpuhp__frame_decoder_shrink(struct cpuhp__frame_decoder *d)
{
	if (d->hdr_have == 0)
		cpuhp__frame_decoder_fini(d);
}

bool cpuhp__frame_decoder_idle(const struct cpuhp__frame_decoder *d)
{
	return d->hdr_have == 0;
}

static void next_frame(struct cpuhp__frame_decoder *d)
{
	d->hdr_have = 0;
	d->need = 0;
	d->have = 0;
}

/* Consume what is left of the prefix; on completion validate the length. */
static ssize_t take_header(struct cpuhp__frame_decoder *d, const uint8_t *data, size_t len)
{
	size_t n = CPUHP__FRAME_HDR - d->hdr_have;
	uint32_t need;

	if (n > len)
		n = len;
	memcpy(d->hdr + d->hdr_have, data, n);
	d->hdr_have += n;
	if (d->hdr_have < CPUHP__FRAME_HDR)
		return n;
	need = get_header(d->hdr);
	d->error = check_len(need, d->max);
	if (d->error)
		return d->error;
	d->need = need;
	return n;
}

ssize_t cpuhp__frame_decoder_feed(struct cpuhp__frame_decoder *d, const uint8_t *data, size_t len,
                                  const uint8_t **payload, size_t *payload_len)
{
	size_t used = 0, n;

	*payload = NULL;
	*payload_len = 0;
	if (d->error)
		return d->error;
	if (d->hdr_have < CPUHP__FRAME_HDR) {
		ssize_t ret = take_header(d, data, len);

		if (ret < 0 || d->hdr_have < CPUHP__FRAME_HDR)
			return ret;
		used = ret;
	}

	/* The common case: the whole payload is in this read, hand it out in place. */
	if (d->have == 0 && len - used >= d->need) {
		*payload = data + used;
		*payload_len = d->need;
		used += d->need;
		next_frame(d);
		return used;
	}

	n = d->need - d->have;
	if (n > len - used)
		n = len - used;
	if (n == 0)
		return used;
	if (d->cap < d->need) {
		uint8_t *buf = realloc(d->buf, d->need);

		if (!buf)
			return d->error = -ENOMEM;
		d->buf = buf;
		d->cap = d->need;
	}
	memcpy(d->buf + d->have, data + used, n);
	d->have += n;
	used += n;
	if (d->have == d->need) {
		*payload = d->buf;
		*payload_len = d->need;
		next_frame(d);
	}
	return used;
}
