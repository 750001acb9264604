/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared hotplug states (CPUHP_CLIENT_STATE_SHARED): the states of a handle
 * that ask for it share one connection and one thread, the hub, so that
 * cpuhpd sends the calls of all of them for a CPU in one write (a batch,
 * proto/FRAMING.md) and they cost about one round trip together.
 *
 * The hub's thread alone reads and writes its connection: it sends the
 * registrations and removals other threads queue, runs every callback (the
 * startups of a registration and the teardowns of a removal too), and hands
 * each reply to the thread that waits for it.  So a registration that waits
 * (a reader, behind a hotplug) never keeps the hub from answering that
 * hotplug's calls of the other states.
 *
 * ->lock guards the queue, the requests sent, the states' list, ->refs,
 * ->dead and ->stop; ->conn is the thread's alone.  Lock order: a handle's
 * fb_lock, then ->lock, then a handle's life_lock.
 *
 * References: the handle's (->hub, until it closes) and one per state on
 * the hub, registering or registered.  The last one stops and joins the
 * thread; if that is the thread itself (the end of a state whose
 * registration close abandoned), it detaches and frees the hub on its way
 * out.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client-internal.h"

struct hub_req {
	struct hub_req *next;
	bool remove; /* RemoveState; else RegisterState */
	struct cpuhp_client_state *s;
	struct cpuhp_client *owner; /* close of it ends the wait; NULL: none */
	Cpuhp__RegisterState rs;
	Cpuhp__RemoveState rm;
	char name[64];
	uint64_t id; /* once sent */
	bool done, abandoned;
	int err;
	uint64_t state_id;
	char msg[CPUHP_CLIENT_MESSAGE_MAX];
};

struct cpuhp__hub {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a request is done, or the hub died */
	unsigned refs;
	struct cpuhp_client *conn;
	pthread_t thread;
	int wake[2]; /* written when a request is queued or the hub must stop */
	struct hub_req *queue, **queue_tail;
	struct hub_req *sent;              /* awaiting their replies */
	struct cpuhp_client_state *states; /* registering or registered, by ->hub_next */
	int dead;                          /* the connection failed: -errno */
	char dead_msg[CPUHP_CLIENT_MESSAGE_MAX];
	bool stop, self_free;
	uint64_t skip_batch; /* a call of this batch failed: the rest are not run */
};

static void hub_wake(struct cpuhp__hub *h)
{
	char b = 0;

	/* Full: the thread is woken already. */
	if (write(h->wake[1], &b, 1) < 0)
		return;
}

static void hub_free(struct cpuhp__hub *h)
{
	cpuhp_client_close(h->conn);
	close(h->wake[0]);
	close(h->wake[1]);
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static void hub_put(struct cpuhp__hub *h)
{
	bool last;

	pthread_mutex_lock(&h->lock);
	last = --h->refs == 0;
	if (last)
		h->stop = true;
	pthread_mutex_unlock(&h->lock);
	if (!last)
		return;
	if (cpuhp__client_forked(h->conn)) {
		/* No thread in a fork child, and the locks may be a parent thread's: memory only.
		 */
		cpuhp_client_close(h->conn);
		free(h);
		return;
	}
	if (pthread_equal(pthread_self(), h->thread)) {
		pthread_detach(h->thread);
		h->self_free = true;
		return;
	}
	hub_wake(h);
	pthread_join(h->thread, NULL);
	hub_free(h);
}

static void link_state(struct cpuhp__hub *h, struct cpuhp_client_state *s)
{
	s->hub_next = h->states;
	h->states = s;
}

static void unlink_state(struct cpuhp__hub *h, struct cpuhp_client_state *s)
{
	for (struct cpuhp_client_state **p = &h->states; *p; p = &(*p)->hub_next)
		if (*p == s) {
			*p = s->hub_next;
			return;
		}
}

/* Nobody waits for @hr any more (abandoned, or the hub died): end it, its state and its ref. */
static void drop(struct cpuhp__hub *h, struct hub_req *hr)
{
	pthread_mutex_lock(&h->lock);
	unlink_state(h, hr->s);
	pthread_mutex_unlock(&h->lock);
	free(hr->s);
	free(hr);
	hub_put(h);
}

/* The connection failed with @err: every request fails, the abandoned ones end here. */
static void die(struct cpuhp__hub *h, int err)
{
	struct hub_req *gone = NULL, *hr, *next;

	pthread_mutex_lock(&h->lock);
	if (!h->dead) {
		h->dead = err;
		snprintf(h->dead_msg, sizeof(h->dead_msg), "%s",
		         h->conn->message[0] ? h->conn->message
		                             : "the connection to cpuhpd failed");
	}
	for (int pass = 0; pass < 2; pass++) {
		struct hub_req **list = pass ? &h->sent : &h->queue;

		for (hr = *list; hr; hr = next) {
			next = hr->next;
			if (hr->abandoned) {
				hr->next = gone;
				gone = hr;
				continue;
			}
			hr->err = err;
			snprintf(hr->msg, sizeof(hr->msg), "%s", h->dead_msg);
			hr->done = true;
		}
		*list = NULL;
	}
	h->queue_tail = &h->queue;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	for (hr = gone; hr; hr = next) {
		next = hr->next;
		drop(h, hr);
	}
}

/* Send what other threads queued.  Return: 0 or a connection -errno. */
static int send_queued(struct cpuhp__hub *h)
{
	for (;;) {
		Cpuhp__Request req = CPUHP__REQUEST__INIT;
		struct hub_req *hr;
		int ret;

		pthread_mutex_lock(&h->lock);
		hr = h->queue;
		if (hr) {
			h->queue = hr->next;
			if (!h->queue)
				h->queue_tail = &h->queue;
		}
		pthread_mutex_unlock(&h->lock);
		if (!hr)
			return 0;
		if (hr->remove) {
			req.body_case = CPUHP__REQUEST__BODY_REMOVE_STATE;
			req.remove_state = &hr->rm;
		} else {
			req.body_case = CPUHP__REQUEST__BODY_REGISTER_STATE;
			req.register_state = &hr->rs;
		}
		ret = cpuhp__client_send_request(h->conn, &req);
		pthread_mutex_lock(&h->lock);
		hr->id = req.id;
		/* Its calls (Response.id: this request's) find it from now on. */
		if (!hr->remove && !ret) {
			hr->s->reg_id = req.id;
			link_state(h, hr->s);
		}
		hr->next = h->sent;
		h->sent = hr;
		pthread_mutex_unlock(&h->lock);
		if (ret < 0)
			return ret;
	}
}

/* The request sent with @id, out of the list; NULL if none. */
static struct hub_req *take_sent(struct cpuhp__hub *h, uint64_t id)
{
	struct hub_req *hr = NULL;

	pthread_mutex_lock(&h->lock);
	for (struct hub_req **p = &h->sent; *p; p = &(*p)->next)
		if ((*p)->id == id) {
			hr = *p;
			*p = hr->next;
			break;
		}
	pthread_mutex_unlock(&h->lock);
	return hr;
}

/* The reply @r to @hr: hand it to its waiter, or finish what nobody waits for. */
static void complete(struct cpuhp__hub *h, struct hub_req *hr, const Cpuhp__Response *r)
{
	Cpuhp__Response__BodyCase want = hr->remove ? CPUHP__RESPONSE__BODY_STATE_REMOVED
	                                            : CPUHP__RESPONSE__BODY_STATE_REGISTERED;
	int err = 0;

	if (r->body_case == CPUHP__RESPONSE__BODY_ERROR)
		err = cpuhp__client_take_error(h->conn, r->error);
	else if (r->body_case != want)
		err = cpuhp__client_error(h->conn, -EPROTO,
		                          "cpuhpd answered with an unexpected message");
	else if (!hr->remove)
		hr->state_id = r->state_registered->state_id;
	pthread_mutex_lock(&h->lock);
	/* A refused registration or a removal: the state is not the daemon's any more. */
	if (err || hr->remove)
		unlink_state(h, hr->s);
	if (!hr->abandoned) {
		hr->err = err;
		snprintf(hr->msg, sizeof(hr->msg), "%s", err ? h->conn->message : "");
		hr->done = true;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
		return;
	}
	/* Registered as close() came: remove it, with its teardowns, as nobody will. */
	if (!err && !hr->remove) {
		hr->s->id = hr->state_id;
		hr->remove = true;
		hr->rm = (Cpuhp__RemoveState)CPUHP__REMOVE_STATE__INIT;
		hr->rm.state_id = hr->state_id;
		hr->next = NULL;
		*h->queue_tail = hr;
		h->queue_tail = &hr->next;
		pthread_mutex_unlock(&h->lock);
		return;
	}
	pthread_mutex_unlock(&h->lock);
	free(hr->s);
	free(hr);
	hub_put(h);
}

/* One response read on the hub.  Return: 0 or a connection -errno. */
static int handle(struct cpuhp__hub *h, Cpuhp__Response *r)
{
	struct cpuhp_client_state *s = NULL;
	struct hub_req *hr;
	int ret = 0;

	if (r->body_case == CPUHP__RESPONSE__BODY_STATE_CALL) {
		pthread_mutex_lock(&h->lock);
		for (s = h->states; s && s->reg_id != r->id; s = s->hub_next)
			;
		pthread_mutex_unlock(&h->lock);
		/* Only this thread unlinks a state while it is the daemon's: @s stays. */
		if (s)
			ret = cpuhp__state_call(s, h->conn, r->state_call, &h->skip_batch);
	} else if (r->id == 0 && r->body_case == CPUHP__RESPONSE__BODY_ERROR) {
		/* An id-0 Error concerns the connection: the daemon is stopping. */
		ret = cpuhp__client_take_error(h->conn, r->error);
		ret = cpuhp__client_kill(h->conn, ret, h->conn->message);
	} else if ((hr = take_sent(h, r->id))) {
		complete(h, hr, r);
	}
	cpuhp__response__free_unpacked(r, NULL);
	return ret;
}

static int run_read_ahead(struct cpuhp__hub *h)
{
	for (;;) {
		Cpuhp__Response *r;
		int ret = cpuhp__client_read_ahead(h->conn, &r);

		if (ret <= 0)
			return ret;
		ret = handle(h, r);
		if (ret < 0)
			return ret;
	}
}

static void *hub_thread(void *arg)
{
	struct cpuhp__hub *h = arg;
	bool stop;

	for (;;) {
		struct pollfd p[2] = {{.fd = h->conn->fd, .events = POLLIN},
		                      {.fd = h->wake[0], .events = POLLIN}};
		char buf[64];
		/* The replies read may queue a removal (an abandoned registration's): then send. */
		int ret = run_read_ahead(h);

		if (ret == 0)
			ret = send_queued(h);
		pthread_mutex_lock(&h->lock);
		stop = h->stop;
		pthread_mutex_unlock(&h->lock);
		if (stop)
			break;
		if (ret == 0 && poll(p, 2, -1) < 0 && errno != EINTR)
			ret = -errno;
		if (ret == 0 && (p[1].revents & POLLIN))
			while (read(h->wake[0], buf, sizeof(buf)) > 0)
				;
		if (ret == 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			ret = cpuhp__client_fill(h->conn, true);
		if (ret < 0 && ret != -EAGAIN) {
			/* Every wait fails; the states' removals find the hub dead. */
			die(h, ret);
			break;
		}
	}
	if (h->self_free)
		hub_free(h);
	return NULL;
}

/* @c's hub, made with its connection and thread if it has none; a reference for the caller. */
static int hub_get(struct cpuhp_client *c, struct cpuhp__hub **out)
{
	struct cpuhp__hub *h, *other;
	bool dead = false;
	int ret;

	pthread_mutex_lock(&c->fb_lock);
	h = c->hub;
	if (h) {
		pthread_mutex_lock(&h->lock);
		dead = h->dead;
		if (!dead)
			h->refs++;
		pthread_mutex_unlock(&h->lock);
		/* Its connection ended (cpuhpd restarted): a new one for the new states. */
		if (dead)
			c->hub = NULL;
	}
	pthread_mutex_unlock(&c->fb_lock);
	if (h && !dead) {
		*out = h;
		return 0;
	}
	if (dead)
		hub_put(h); /* the handle's reference */
	h = calloc(1, sizeof(*h));
	if (!h)
		return cpuhp__client_note(c, -ENOMEM, "out of memory");
	h->queue_tail = &h->queue;
	h->refs = 2; /* the handle's and the caller's */
	if (pipe2(h->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		ret = cpuhp__client_note(c, -errno, "cannot make a pipe for the shared states");
		free(h);
		return ret;
	}
	ret = cpuhp__client_open(&c->sa, CPUHP__OPEN_AWAIT | CPUHP__OPEN_STATES, 0, &h->conn);
	if (ret < 0) {
		close(h->wake[0]);
		close(h->wake[1]);
		free(h);
		return cpuhp__client_note(c, ret, "cannot connect to cpuhpd for the shared states");
	}
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	ret = -pthread_create(&h->thread, NULL, hub_thread, h);
	if (ret < 0) {
		hub_free(h);
		return cpuhp__client_note(c, ret, "cannot start the shared states' thread");
	}
	pthread_mutex_lock(&c->fb_lock);
	other = c->hub;
	if (!other)
		c->hub = h;
	else {
		pthread_mutex_lock(&other->lock);
		other->refs++;
		pthread_mutex_unlock(&other->lock);
	}
	pthread_mutex_unlock(&c->fb_lock);
	if (other) {
		/* Another thread made one meanwhile: ours goes (both its references). */
		h->refs = 1;
		hub_put(h);
		h = other;
	}
	*out = h;
	return 0;
}

/*
 * Queue @hr and wait for it; its owner's close ends the wait: then
 * *@abandoned, and @hr (with its state) is the hub's from now on.
 * Return: its error.
 */
static int post_and_wait(struct cpuhp__hub *h, struct hub_req *hr, bool *abandoned)
{
	int ret;

	pthread_mutex_lock(&h->lock);
	if (h->dead) {
		hr->err = h->dead;
		snprintf(hr->msg, sizeof(hr->msg), "%s", h->dead_msg);
		pthread_mutex_unlock(&h->lock);
		return hr->err;
	}
	hr->next = NULL;
	*h->queue_tail = hr;
	h->queue_tail = &hr->next;
	pthread_mutex_unlock(&h->lock);
	hub_wake(h);
	pthread_mutex_lock(&h->lock);
	while (!hr->done && !(hr->owner && cpuhp__client_closing(hr->owner)))
		pthread_cond_wait(&h->cond, &h->lock);
	*abandoned = !hr->done;
	if (*abandoned) {
		/* The hub finishes it: a registration that succeeds is removed again. */
		hr->abandoned = true;
		pthread_mutex_unlock(&h->lock);
		return -ECANCELED;
	}
	ret = hr->err;
	pthread_mutex_unlock(&h->lock);
	return ret;
}

int cpuhp__hub_register(struct cpuhp_client *c, struct cpuhp_client_state *s,
                        const Cpuhp__RegisterState *rs)
{
	struct cpuhp__hub *h;
	struct hub_req *hr;
	bool abandoned;
	int ret;

	pthread_mutex_lock(&c->fb_lock);
	h = c->hub;
	pthread_mutex_unlock(&c->fb_lock);
	if (h && pthread_equal(pthread_self(), h->thread)) {
		free(s);
		return cpuhp__client_note(
		    c, -EDEADLK,
		    "a shared state's callback cannot register a shared state "
		    "(it runs on the thread that would serve it)");
	}
	hr = calloc(1, sizeof(*hr));
	ret = hr ? hub_get(c, &h) : cpuhp__client_note(c, -ENOMEM, "out of memory");
	if (ret < 0) {
		free(hr);
		free(s);
		return ret;
	}
	s->hub = h;
	hr->s = s;
	hr->owner = c;
	hr->rs = *rs;
	snprintf(hr->name, sizeof(hr->name), "%s", rs->name);
	hr->rs.name = hr->name;
	ret = post_and_wait(h, hr, &abandoned);
	if (abandoned) /* @hr and @s are the hub's now */
		return cpuhp__client_note(c, ret, CPUHP__CANCELED_MSG);
	if (ret == 0) {
		s->id = hr->state_id;
		free(hr);
		return 0;
	}
	cpuhp__client_note(c, ret, hr->msg);
	free(hr);
	free(s);
	hub_put(h);
	return ret;
}

int cpuhp__hub_remove(struct cpuhp_client_state *s, bool nocalls)
{
	struct cpuhp__hub *h = s->hub;
	struct hub_req hr = {.remove = true, .s = s};
	bool abandoned;
	int ret;

	if (cpuhp__client_forked(h->conn)) {
		ret = -ECHILD;
	} else if (pthread_equal(pthread_self(), h->thread)) {
		return -EDEADLK; /* from a callback of the hub: it would wait for itself */
	} else {
		cpuhp__remove_state__init(&hr.rm);
		hr.rm.state_id = s->id;
		hr.rm.nocalls = nocalls;
		ret = post_and_wait(h, &hr, &abandoned); /* no owner: never abandoned */
		/* Not sent (the hub had died): the state is gone with the connection. */
		pthread_mutex_lock(&h->lock);
		unlink_state(h, s);
		pthread_mutex_unlock(&h->lock);
	}
	free(s);
	hub_put(h);
	return ret;
}

void cpuhp__hub_cancel(struct cpuhp_client *c)
{
	struct cpuhp__hub *h;

	pthread_mutex_lock(&c->fb_lock);
	h = c->hub;
	if (h) {
		pthread_mutex_lock(&h->lock);
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
	}
	pthread_mutex_unlock(&c->fb_lock);
}

void cpuhp__hub_release(struct cpuhp_client *c)
{
	struct cpuhp__hub *h;

	pthread_mutex_lock(&c->fb_lock);
	h = c->hub;
	c->hub = NULL;
	pthread_mutex_unlock(&c->fb_lock);
	if (h)
		hub_put(h);
}
