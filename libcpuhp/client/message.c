/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a failed call says: the handle's message (cpuhp_client_last_message()),
 * the daemon's Error as -errno with its words, the one wording of a daemon
 * too old for a request, and a CPU list in a reply that does not parse.
 * Error codes map to errno values in proto/'s errmap, the one table of them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "client-internal.h"
#include "errmap.h"

int cpuhp__client_error(struct cpuhp_client *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->message, sizeof(c->message), fmt, ap);
	va_end(ap);
	return err;
}

int cpuhp__client_note(struct cpuhp_client *c, int err, const char *msg)
{
	if (pthread_mutex_trylock(&c->lock) == 0) {
		snprintf(c->message, sizeof(c->message), "%s", msg);
		pthread_mutex_unlock(&c->lock);
	}
	return err;
}

const char *cpuhp_client_last_message(struct cpuhp_client *c)
{
	return c->message;
}

int cpuhp__client_take_error(struct cpuhp_client *c, const Cpuhp__Error *e)
{
	int err = cpuhp__errmap_from_wire(e->code);

	if (e->message && e->message[0])
		return cpuhp__client_error(c, err, "%s", e->message);
	return cpuhp__client_error(c, err, "cpuhpd: %s", cpuhp__errmap_describe(e->code));
}

int cpuhp__client_too_old(struct cpuhp_client *c, int ret, Cpuhp__Response__BodyCase expect)
{
	const char *what;

	if (ret != -EOPNOTSUPP)
		return ret;
	switch (expect) {
	case CPUHP__RESPONSE__BODY_SMT:
		what = "for SMT control";
		break;
	case CPUHP__RESPONSE__BODY_METRICS:
		what = "to give metrics";
		break;
	case CPUHP__RESPONSE__BODY_IDENTIFIED:
		what = "to keep who and why";
		break;
	case CPUHP__RESPONSE__BODY_LEASE_LIST:
		what = "to list leases";
		break;
	case CPUHP__RESPONSE__BODY_FROZEN:
		what = "to freeze hotplug";
		break;
	case CPUHP__RESPONSE__BODY_CPU_LIST:
		what = "to list the CPUs";
		break;
	case CPUHP__RESPONSE__BODY_PLAN:
		what = "to keep a plan (cpuhpd.conf(5))";
		break;
	default:
		return ret; /* a request every cpuhpd knows: the daemon's own words */
	}
	return cpuhp__client_error(c, ret, "this cpuhpd is too old %s", what);
}

int cpuhp__client_parse_cpus(struct cpuhp_client *c, const char *what, const char *str,
                             struct cpuhp_cpuset *out)
{
	if (cpuhp_cpuset_parse(str ? str : "", out) < 0)
		return cpuhp__client_error(c, -EPROTO,
		                           "cpuhpd sent a %s list that does not parse: \"%.64s\"",
		                           what, str ? str : "");
	return 0;
}
