/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Protobuf string fields as they came on the wire.  protobuf-c hands a
 * string field over as a C string: bytes after a NUL are lost without a
 * word ("abc\0def" reads as "abc"), and it never checks UTF-8, which a
 * string field must hold.  This walks a message's encoding beside the
 * decoder and finds the first string field that breaks the rule, so that
 * cpuhpd can refuse the request naming it instead of acting on a cut name.
 *
 * Not libcpuhp API: internal names (cpuhp__), as everywhere in proto/.
 */
#ifndef CPUHP_PROTO_STRFIELDS_H
#define CPUHP_PROTO_STRFIELDS_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/**
 * cpuhp__strfields_check() - every string field of a message, nested
 * messages included, is UTF-8 without NUL (cpuhp__text_utf8_valid()).
 * @desc:       the message's descriptor (&cpuhp__request__descriptor)
 * @buf, @len:  its encoding, which protobuf-c has decoded without error
 * @why, @size: where to say which field and what is wrong, for a person:
 *              "RegisterState.name holds a NUL byte (at byte 3)"
 *
 * Fields the descriptor does not know (a newer peer's) are skipped, as the
 * decoder skips them.
 * Return: 0; -EINVAL (@why says which field); -EPROTO for an encoding the
 * walk cannot follow (nesting deeper than 16, or bytes the decoder would
 * have refused).
 */
int cpuhp__strfields_check(const ProtobufCMessageDescriptor *desc, const uint8_t *buf, size_t len,
                           char *why, size_t size);

#endif /* CPUHP_PROTO_STRFIELDS_H */
