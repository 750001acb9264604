/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one table between errno values and Cpuhp__ErrorCode (see errmap.h). */
#include <errno.h>
#include <stddef.h>

#include "errmap.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

struct errmap_entry {
	Cpuhp__ErrorCode code;
	int err;
	const char *text;
};

/* One row per code; tests/unit/test-errmap.c proves every row round-trips. */
static const struct errmap_entry errmap[] = {
    {CPUHP__ERROR_CODE__ERR_EPERM, EPERM, "operation not permitted"},
    {CPUHP__ERROR_CODE__ERR_ENOENT, ENOENT, "no such CPU or file"},
    {CPUHP__ERROR_CODE__ERR_EIO, EIO, "input/output error"},
    {CPUHP__ERROR_CODE__ERR_ENOMEM, ENOMEM, "out of memory"},
    {CPUHP__ERROR_CODE__ERR_EACCES, EACCES, "permission denied"},
    {CPUHP__ERROR_CODE__ERR_EBUSY, EBUSY, "busy"},
    {CPUHP__ERROR_CODE__ERR_EINVAL, EINVAL, "invalid argument"},
    {CPUHP__ERROR_CODE__ERR_ENOSPC, ENOSPC, "no space left"},
    {CPUHP__ERROR_CODE__ERR_ERANGE, ERANGE, "CPU number out of range"},
    {CPUHP__ERROR_CODE__ERR_EAGAIN, EAGAIN, "would have to wait: a hotplug is in the way"},
    {CPUHP__ERROR_CODE__ERR_ETIMEDOUT, ETIMEDOUT, "timed out"},
    {CPUHP__ERROR_CODE__ERR_EOPNOTSUPP, EOPNOTSUPP, "not supported"},
    {CPUHP__ERROR_CODE__ERR_EPROTO, EPROTO, "malformed frame or message"},
    {CPUHP__ERROR_CODE__ERR_EMSGSIZE, EMSGSIZE, "frame over the size limit"},
    {CPUHP__ERROR_CODE__ERR_ECONNRESET, ECONNRESET, "connection reset"},
    /* cpuhpd's stop and a kernel that canceled a CPU's hotplug: both say which in their message. */
    {CPUHP__ERROR_CODE__ERR_ECANCELED, ECANCELED, "canceled"},
    {CPUHP__ERROR_CODE__ERR_EALREADY, EALREADY, "already in progress on this connection"},
    {CPUHP__ERROR_CODE__ERR_EUSERS, EUSERS, "too many connections to the daemon"},
    {CPUHP__ERROR_CODE__ERR_EDQUOT, EDQUOT, "per-connection limit reached"},
    {CPUHP__ERROR_CODE__ERR_ESRCH, ESRCH, "no such lease on this connection"},
    {CPUHP__ERROR_CODE__ERR_EPROTONOSUPPORT, EPROTONOSUPPORT, "protocol version not supported"},
    {CPUHP__ERROR_CODE__ERR_ETIME, ETIME, "lease revoked: held past cpuhpd's --max-lease-ms"},
    {CPUHP__ERROR_CODE__ERR_ESTALE, ESTALE, "CPUs changed behind cpuhpd while the lease was held"},
    {CPUHP__ERROR_CODE__ERR_EDEADLK, EDEADLK,
     "would deadlock: a lease asked inside a state callback"},
    {CPUHP__ERROR_CODE__ERR_EEXIST, EEXIST, "a state of that name exists"},
    {CPUHP__ERROR_CODE__ERR_ENODEV, ENODEV, "no such device: this machine has no SMT control"},
};

Cpuhp__ErrorCode cpuhp__errmap_to_wire(int err)
{
	size_t i;

	if (err < 0)
		err = -err;
	for (i = 0; i < ARRAY_SIZE(errmap); i++)
		if (errmap[i].err == err)
			return errmap[i].code;
	return CPUHP__ERROR_CODE__ERR_UNKNOWN;
}

static const struct errmap_entry *find_code(int code)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(errmap); i++)
		if ((int)errmap[i].code == code)
			return &errmap[i];
	return NULL;
}

int cpuhp__errmap_from_wire(int code)
{
	const struct errmap_entry *e = find_code(code);

	return e ? -e->err : -EIO;
}

const char *cpuhp__errmap_describe(int code)
{
	const struct errmap_entry *e = find_code(code);

	return e ? e->text : "unknown error";
}
