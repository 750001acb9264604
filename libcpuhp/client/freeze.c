/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hotplug freezes: cpuhp_client_freeze() on the handle's connection, its
 * asynchronous form (cpuhp_client_freeze_begin(), cpuhp_client_call_freeze())
 * whose freeze is held on a connection of its own for the handle (held.c),
 * and cpuhp_client_thaw() for either.
 */
#include <errno.h>

#include "client-internal.h"

static void freeze_request(Cpuhp__Request *req, Cpuhp__Freeze *fr, const char *who, const char *why)
{
	fr->who = (char *)who;
	fr->why = (char *)why;
	req->body_case = CPUHP__REQUEST__BODY_FREEZE;
	req->freeze = fr;
}

static int take_frozen(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	(void)c;
	*(uint64_t *)arg = resp->frozen->freeze_id;
	return 0;
}

int cpuhp_client_freeze(struct cpuhp_client *c, const char *who, const char *why,
                        uint64_t *freeze_id)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Freeze fr = CPUHP__FREEZE__INIT;
	int ret;

	if ((ret = cpuhp__identity_check(c, who, why)) < 0)
		return ret;
	freeze_request(&req, &fr, who ? who : "", why ? why : "");
	return cpuhp__client_request(c, &req, CPUHP__RESPONSE__BODY_FROZEN, take_frozen, freeze_id);
}

int cpuhp_client_freeze_begin(struct cpuhp_client *c, const char *who, const char *why,
                              struct cpuhp_client_call **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Freeze fr = CPUHP__FREEZE__INIT;
	char hwho[CPUHP_CLIENT_IDENTITY_MAX + 1], hwhy[CPUHP_CLIENT_IDENTITY_MAX + 1];
	int ret;

	if ((ret = cpuhp__identity_check(c, who, why)) < 0)
		return ret;
	cpuhp__identity_names(c, &who, &why, &hwho, &hwhy);
	freeze_request(&req, &fr, who, why);
	return cpuhp__call_begin(c, &req, CPUHP__RESPONSE__BODY_FROZEN, out);
}

int cpuhp_client_call_freeze(const struct cpuhp_client_call *call, uint64_t *freeze_id)
{
	return cpuhp__call_id(call, CPUHP__RESPONSE__BODY_FROZEN, freeze_id);
}

int cpuhp_client_thaw(struct cpuhp_client *c, uint64_t freeze_id)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__Thaw th = CPUHP__THAW__INIT;
	struct cpuhp_client *w;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	/* Held on a connection of its own (cpuhp_client_freeze_begin()): its only freeze. */
	if (cpuhp__held_take(c, freeze_id, true, &w)) {
		ret = cpuhp_client_thaw(w, freeze_id);
		if (ret < 0)
			cpuhp__client_note(c, ret, cpuhp_client_last_message(w));
		cpuhp_client_close(w); /* ends the freeze even if the thaw failed */
		return ret;
	}
	th.freeze_id = freeze_id;
	req.body_case = CPUHP__REQUEST__BODY_THAW;
	req.thaw = &th;
	return cpuhp__client_request(c, &req, CPUHP__RESPONSE__BODY_THAWED, NULL, NULL);
}
