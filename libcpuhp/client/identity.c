/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds a handle's leases and why: cpuhp_client_set_identity() tells
 * the daemon for the handle's own connection and keeps the names for the
 * requests made on connections of their own (a lease or a freeze there is
 * named by its request, since the daemon knows nothing else of that
 * connection).  The one check of a name: its length, and UTF-8 (cpuhpd
 * refuses a string field that is not, naming the field).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

#include "client-internal.h"

int cpuhp__identity_check(struct cpuhp_client *c, const char *who, const char *why)
{
	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if ((who && strlen(who) > CPUHP_CLIENT_IDENTITY_MAX) ||
	    (why && strlen(why) > CPUHP_CLIENT_IDENTITY_MAX))
		return cpuhp__client_note(c, -EINVAL,
		                          "who and why may have at most 255 bytes each");
	if ((who && !cpuhp__text_utf8_valid(who, strlen(who))) ||
	    (why && !cpuhp__text_utf8_valid(why, strlen(why))))
		return cpuhp__client_note(c, -EINVAL,
		                          "who and why must be UTF-8 text (cpuhpd refuses other "
		                          "bytes)");
	return 0;
}

void cpuhp__identity_names(struct cpuhp_client *c, const char **who, const char **why,
                           char (*hwho)[CPUHP_CLIENT_IDENTITY_MAX + 1],
                           char (*hwhy)[CPUHP_CLIENT_IDENTITY_MAX + 1])
{
	pthread_mutex_lock(&c->fb_lock);
	memcpy(*hwho, c->who, sizeof(*hwho));
	memcpy(*hwhy, c->why, sizeof(*hwhy));
	pthread_mutex_unlock(&c->fb_lock);
	if (!*who)
		*who = *hwho;
	if (!*why)
		*why = *hwhy;
}

/* Kept once the daemon took them, under fb_lock (a leaf lock: see struct cpuhp_client). */
static int take_identified(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	const Cpuhp__Identify *id = arg;

	(void)resp;
	pthread_mutex_lock(&c->fb_lock);
	snprintf(c->who, sizeof(c->who), "%s", id->who);
	snprintf(c->why, sizeof(c->why), "%s", id->why);
	pthread_mutex_unlock(&c->fb_lock);
	return 0;
}

int cpuhp_client_set_identity(struct cpuhp_client *c, const char *who, const char *why)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Identify id = CPUHP__IDENTIFY__INIT;

	int ret;

	if ((ret = cpuhp__identity_check(c, who, why)) < 0)
		return ret;
	id.who = (char *)(who ? who : "");
	id.why = (char *)(why ? why : "");
	req.body_case = CPUHP__REQUEST__BODY_IDENTIFY;
	req.identify = &id;
	return cpuhp__client_request(c, &req, CPUHP__RESPONSE__BODY_IDENTIFIED, take_identified,
	                             &id);
}
