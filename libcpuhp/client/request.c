/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One request and its reply, the helper of every blocking call: a public
 * call's bracket (a fork child's handle refused, close on another thread
 * waited for, the handle's mutex, a fresh message), sending the request and
 * awaiting the reply with its id while the events that come first are
 * queued (events.c), and the daemon's Error as -errno; a listing's pages
 * one after the other.  A request family
 * (lease.c, status.c, ...) builds its Request and says what the reply
 * becomes; the calls on a connection of their own are call.c's.
 */
#include <errno.h>

#include "client-internal.h"

int cpuhp__client_enter(struct cpuhp_client *c)
{
	/* First: a fork child must not touch the locks a parent's thread may have held. */
	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if (cpuhp__client_get(c) < 0)
		return cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	pthread_mutex_lock(&c->lock);
	c->message[0] = '\0';
	/* Queued behind a call that close woke: do not start. */
	if (cpuhp__client_closing(c)) {
		int ret = cpuhp__client_error(c, -ECANCELED, CPUHP__CANCELED_MSG);

		pthread_mutex_unlock(&c->lock);
		cpuhp__client_put(c);
		return ret;
	}
	return 0;
}

int cpuhp__client_leave(struct cpuhp_client *c, int ret)
{
	/* Woken by close (it shut the socket down): say so, not "connection reset". */
	if (ret < 0 && cpuhp__client_closing(c))
		ret = cpuhp__client_error(c, -ECANCELED, CPUHP__CANCELED_MSG);
	pthread_mutex_unlock(&c->lock);
	cpuhp__client_put(c);
	return ret;
}

int cpuhp__client_await(struct cpuhp_client *c, uint64_t id, Cpuhp__Response__BodyCase expect,
                        int timeout_ms, Cpuhp__Response **out)
{
	for (;;) {
		Cpuhp__Response *resp;
		int ret;

		if (c->dead)
			return cpuhp__client_dead_error(c);
		ret = cpuhp__client_read(c, timeout_ms, &resp);
		if (ret == -EAGAIN && timeout_ms == 0)
			return 1; /* nothing yet: the caller polls the fd */
		if (ret < 0)
			return ret;
		/* Id 0: a notice to a lease holder (revoked, bypassed), watching or not. */
		if (resp->body_case == CPUHP__RESPONSE__BODY_EVENT &&
		    ((c->watch_id && resp->id == c->watch_id) || resp->id == 0)) {
			cpuhp__client_queue_event(c, resp);
			continue;
		}
		if (resp->id == id ||
		    (resp->id == 0 && resp->body_case == CPUHP__RESPONSE__BODY_ERROR)) {
			if (resp->body_case == CPUHP__RESPONSE__BODY_ERROR) {
				ret = cpuhp__client_take_error(c, resp->error);
				/* Id 0: about the connection, which the daemon now closes. */
				if (resp->id == 0)
					cpuhp__client_end(c, ret, c->message);
				else
					ret = cpuhp__client_too_old(c, ret, expect);
			} else if (resp->body_case != expect) {
				ret = cpuhp__client_error(c, -EPROTO,
				                          "cpuhpd answered with a reply of another "
				                          "kind (%d, expected %d)",
				                          (int)resp->body_case, (int)expect);
			} else {
				*out = resp;
				return 0;
			}
			cpuhp__response__free_unpacked(resp, NULL);
			return ret;
		}
		/*
		 * Requests are answered in order, and a call (or a begin's hello)
		 * awaits the one before the next: any other id is a daemon bug.
		 */
		cpuhp__response__free_unpacked(resp, NULL);
		return cpuhp__client_kill(c, -EPROTO,
		                          "cpuhpd answered a request that was not asked");
	}
}

int cpuhp__client_call(struct cpuhp_client *c, Cpuhp__Request *req,
                       Cpuhp__Response__BodyCase expect, Cpuhp__Response **out)
{
	int ret = cpuhp__client_send_request(c, req);

	return ret < 0 ? ret : cpuhp__client_await(c, req->id, expect, -1, out);
}

int cpuhp__client_request_locked(struct cpuhp_client *c, Cpuhp__Request *req,
                                 Cpuhp__Response__BodyCase expect, cpuhp__client_take_fn take,
                                 void *arg)
{
	Cpuhp__Response *resp;
	int ret = cpuhp__client_call(c, req, expect, &resp);

	if (ret < 0)
		return ret;
	if (take)
		ret = take(c, resp, arg);
	cpuhp__response__free_unpacked(resp, NULL);
	return ret;
}

int cpuhp__client_request(struct cpuhp_client *c, Cpuhp__Request *req,
                          Cpuhp__Response__BodyCase expect, cpuhp__client_take_fn take, void *arg)
{
	int ret = cpuhp__client_enter(c);

	if (ret < 0)
		return ret;
	return cpuhp__client_leave(c, cpuhp__client_request_locked(c, req, expect, take, arg));
}

int cpuhp__client_next_page(struct cpuhp_client *c, ProtobufCBinaryData next, size_t rows,
                            Cpuhp__Request *req, uint64_t *id)
{
	int ret;

	if (!next.len)
		return 0;
	if (!rows)
		return cpuhp__client_error(
		    c, -EPROTO, "cpuhpd sent an empty page of a listing, and more to come");
	ret = cpuhp__client_send_request(c, req);
	*id = req->id;
	return ret < 0 ? ret : 1;
}

int cpuhp__client_pages_locked(struct cpuhp_client *c, Cpuhp__Request *req,
                               Cpuhp__Response__BodyCase expect, cpuhp__client_again_fn again,
                               cpuhp__client_take_fn take, void *arg)
{
	uint64_t id;
	int ret = cpuhp__client_send_request(c, req);

	id = req->id;
	while (ret == 0) {
		Cpuhp__Response *resp;

		ret = cpuhp__client_await(c, id, expect, -1, &resp);
		if (ret < 0)
			break;
		ret = take(c, resp, arg);
		if (ret == 0)
			ret = again(c, resp, &id);
		cpuhp__response__free_unpacked(resp, NULL);
		if (ret <= 0)
			break;
		ret = 0;
	}
	return ret;
}

int cpuhp__client_pages(struct cpuhp_client *c, Cpuhp__Request *req,
                        Cpuhp__Response__BodyCase expect, cpuhp__client_again_fn again,
                        cpuhp__client_take_fn take, void *arg)
{
	int ret = cpuhp__client_enter(c);

	if (ret < 0)
		return ret;
	return cpuhp__client_leave(c, cpuhp__client_pages_locked(c, req, expect, again, take, arg));
}
