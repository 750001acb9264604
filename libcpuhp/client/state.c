/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hotplug states on the client side (<cpuhp/client.h> says who calls what),
 * and the list of every state registered (cpuhp_client_list_states(), a
 * call on the handle).  Each state has its own connection, used by one thread at a time: the
 * registering thread until register returns, then the state's thread (or the
 * application's dispatcher), then the removing thread once the state's
 * thread is joined.  So the connection needs no lock of its own.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "errmap.h"
#include "text.h"

#include "client-internal.h"

/* Set while a callback runs on this thread: a lease it asks for would deadlock. */
_Thread_local bool cpuhp__client_in_state_cb;

int cpuhp__client_deadlk(struct cpuhp_client *c)
{
	return cpuhp__client_note(c, -EDEADLK,
	                          "a lease asked inside a hotplug state callback would wait for "
	                          "ever (the hotplug waits for the callback): take no lease in "
	                          "callbacks");
}

/*
 * Run @call's callback on this thread (@inst: the instance called, or
 * NULL).  While @s or @inst is being registered or added, what it started
 * is kept, for an unwinding.  Return: its result.
 */
static int run_callback(struct cpuhp_client_state *s, struct cpuhp_client_instance *inst,
                        struct cpuhp_client_state_call *call)
{
	cpuhp_client_state_fn fn = call->teardown ? s->teardown : s->startup;
	bool registering = inst ? inst->registering : s->registering;
	struct cpuhp_cpuset *started = inst ? &inst->started : &s->started;
	int ret = 0;

	call->instance = inst ? inst->arg : NULL;
	call->instance_name = inst ? inst->name : "";
	call->prepare = s->prepare;
	if (fn) {
		cpuhp__client_in_state_cb = true;
		ret = fn(call, s->arg);
		cpuhp__client_in_state_cb = false;
	}
	if (registering && call->teardown)
		cpuhp_cpuset_del(started, call->cpu);
	else if (registering && ret >= 0)
		cpuhp_cpuset_add(started, call->cpu);
	return ret;
}

/*
 * The instance a call names: in the list, or the one being added (its id
 * comes with the reply, after its startups).  NULL for a state's own call
 * or an instance this process no longer has (its call then does nothing).
 */
static struct cpuhp_client_instance *instance_of(struct cpuhp_client_state *s, uint64_t id)
{
	struct cpuhp_client_instance *i;

	if (!id)
		return NULL;
	for (i = s->insts; i; i = i->next)
		if (i->id == id)
			return i;
	if (s->adding && (!s->adding->id || s->adding->id == id)) {
		s->adding->id = id;
		return s->adding;
	}
	return NULL;
}

int cpuhp__state_call(struct cpuhp_client_state *s, struct cpuhp_client *conn,
                      const Cpuhp__StateCall *sc, uint64_t *skip_batch)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__StateAnswer ans = CPUHP__STATE_ANSWER__INIT;
	struct cpuhp_client_state_call call = {
	    .cpu = sc->cpu,
	    .teardown = sc->phase == CPUHP__STATE_PHASE__PHASE_TEARDOWN,
	    .external = sc->external,
	    .rollback = sc->rollback,
	};
	bool skip = sc->batch && sc->batch == *skip_batch;
	struct cpuhp_client_instance *inst = instance_of(s, sc->instance_id);
	/* A multi state's call of an instance gone here: nothing of it is left to run. */
	bool gone = s->multi && !inst;
	int ret = skip || gone ? (skip ? -ECANCELED : 0) : run_callback(s, inst, &call);
	char shown[4 * sizeof(call.message)];

	if (ret < 0 && sc->batch)
		*skip_batch = sc->batch;
	ans.skipped = skip;
	if (skip)
		snprintf(call.message, sizeof(call.message),
		         "not run: an earlier call of its batch failed");
	ans.call_id = sc->call_id;
	ans.ok = ret >= 0;
	ans.code = ret < 0 ? cpuhp__errmap_to_wire(ret) : CPUHP__ERROR_CODE__ERR_UNKNOWN;
	call.message[sizeof(call.message) - 1] = '\0';
	if (ret < 0 && !call.message[0])
		snprintf(call.message, sizeof(call.message), "%s", strerror(-ret));
	ans.message = call.message;
	/* cpuhpd ignores an answer whose string is not UTF-8: the answer must count. */
	if (!cpuhp__text_utf8_valid(call.message, strlen(call.message))) {
		cpuhp__text_escape(shown, sizeof(shown), call.message, strlen(call.message),
		                   CPUHP__TEXT_UTF8);
		ans.message = shown;
	}
	req.body_case = CPUHP__REQUEST__BODY_STATE_ANSWER;
	req.state_answer = &ans;
	return cpuhp__client_send_request(conn, &req);
}

/* A call of @s on its own connection. */
static int run_call(struct cpuhp_client_state *s, const Cpuhp__StateCall *sc)
{
	return cpuhp__state_call(s, s->conn, sc, &s->skip_batch);
}

/* A registration that failed on its connection: tear down what started here, last CPU first. */
static void unwind_started(struct cpuhp_client_state *s)
{
	for (unsigned cpu = CPUHP_CPUSET_MAX; cpu-- > 0;) {
		struct cpuhp_client_state_call call = {
		    .cpu = cpu, .teardown = true, .rollback = true};

		if (cpuhp_cpuset_has(&s->started, cpu))
			run_callback(s, NULL, &call);
	}
}

/*
 * One response read on the state's connection: a StateCall is run; the
 * reply to request @id (if not 0) is the awaited one, given in @out.
 * Return: 1 with *@out; 0 to read on; the daemon's Error to @id as
 * -errno; a connection -errno.
 */
static int handle(struct cpuhp_client_state *s, Cpuhp__Response *r, uint64_t id,
                  Cpuhp__Response__BodyCase expect, Cpuhp__Response **out)
{
	int ret;

	if (r->body_case == CPUHP__RESPONSE__BODY_STATE_CALL) {
		ret = run_call(s, r->state_call);
		cpuhp__response__free_unpacked(r, NULL);
		return ret;
	}
	if (id && r->id == id) {
		if (r->body_case == CPUHP__RESPONSE__BODY_ERROR) {
			ret = cpuhp__client_take_error(s->conn, r->error);
			cpuhp__response__free_unpacked(r, NULL);
			return ret;
		}
		if (r->body_case != expect) {
			cpuhp__response__free_unpacked(r, NULL);
			return cpuhp__client_kill(s->conn, -EPROTO,
			                          "cpuhpd answered with an unexpected message");
		}
		*out = r;
		return 1;
	}
	/* An id-0 Error concerns the connection: the daemon is stopping. */
	if (r->id == 0 && r->body_case == CPUHP__RESPONSE__BODY_ERROR) {
		ret = cpuhp__client_take_error(s->conn, r->error);
		cpuhp__response__free_unpacked(r, NULL);
		return cpuhp__client_kill(s->conn, ret, s->conn->message);
	}
	cpuhp__response__free_unpacked(r, NULL);
	return 0;
}

/*
 * Read and run calls until the reply to request @id arrives (@out).
 * Return: 0; the daemon's Error as -errno; a connection -errno.
 */
static int pump(struct cpuhp_client_state *s, uint64_t id, Cpuhp__Response__BodyCase expect,
                Cpuhp__Response **out)
{
	for (;;) {
		Cpuhp__Response *r;
		int ret = cpuhp__client_read(s->conn, -1, &r);

		if (ret == 0)
			ret = handle(s, r, id, expect, out);
		if (ret != 0)
			return ret < 0 ? ret : 0;
	}
}

/* Send @req on the state's connection and pump to its @expect answer (whose body says no more). */
static int call_plain(struct cpuhp_client_state *s, Cpuhp__Request *req,
                      Cpuhp__Response__BodyCase expect)
{
	Cpuhp__Response *r;
	int ret = cpuhp__client_send_request(s->conn, req);

	if (ret == 0)
		ret = pump(s, req->id, expect, &r);
	if (ret == 0)
		cpuhp__response__free_unpacked(r, NULL);
	return ret;
}

/*
 * Run the calls read already, without a system call: a call may have come
 * in the same read as a reply (the registration's), and poll() would not
 * see it.  Return: calls run, or a connection -errno.
 */
static int run_read_ahead(struct cpuhp_client_state *s)
{
	int ran = 0;

	for (;;) {
		Cpuhp__Response *r;
		int ret = cpuhp__client_read_ahead(s->conn, &r);

		if (ret == 0)
			return ran;
		if (ret > 0)
			ret = handle(s, r, 0, 0, NULL);
		if (ret < 0)
			return ret;
		ran++;
	}
}

/*
 * The state's thread: what was read ahead first, then wait for the socket
 * or the stop, one read, and again.  Three system calls a call: poll(),
 * recvmsg() and the answer's send().
 */
static void *state_thread(void *arg)
{
	struct cpuhp_client_state *s = arg;

	for (;;) {
		struct pollfd p[2] = {{.fd = s->conn->fd, .events = POLLIN},
		                      {.fd = s->stop_pipe[0], .events = POLLIN}};
		int ret = run_read_ahead(s);

		if (ret < 0) {
			s->err = ret;
			return NULL;
		}
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			s->err = -errno;
			return NULL;
		}
		if (p[1].revents)
			return NULL;
		ret = cpuhp__client_fill(s->conn, true);
		if (ret < 0 && ret != -EAGAIN) {
			s->err = ret;
			return NULL;
		}
	}
}

static bool name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > 63)
		return false;
	for (; *name; name++)
		if (*name <= ' ' || *name >= 0x7f)
			return false;
	return true;
}

static int state_register(struct cpuhp_client *c, const char *name, int priority,
                          unsigned deadline_ms, unsigned flags, cpuhp_client_state_fn startup,
                          cpuhp_client_state_fn teardown, void *arg,
                          struct cpuhp_client_state **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__RegisterState rs = CPUHP__REGISTER_STATE__INIT;
	struct cpuhp_client_state *s;
	Cpuhp__Response *r;
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if (!name_ok(name))
		return cpuhp__client_note(
		    c, -EINVAL, "a state name is 1 to 63 printable characters, no spaces");
	if (flags &
	    ~(CPUHP_CLIENT_STATE_NOCALLS | CPUHP_CLIENT_STATE_THREAD | CPUHP_CLIENT_STATE_SHARED |
	      CPUHP_CLIENT_STATE_PREPARE | CPUHP_CLIENT_STATE_MULTI))
		return cpuhp__client_note(c, -EINVAL, "unknown flags for a state");
	if ((flags & CPUHP_CLIENT_STATE_MULTI) && (flags & CPUHP_CLIENT_STATE_SHARED))
		return cpuhp__client_note(
		    c, -EINVAL,
		    "a multi-instance state cannot be shared "
		    "(CPUHP_CLIENT_STATE_SHARED): its instances already share "
		    "its one connection");
	s = calloc(1, sizeof(*s));
	if (!s)
		return cpuhp__client_note(c, -ENOMEM, "out of memory");
	s->stop_pipe[0] = s->stop_pipe[1] = -1;
	s->startup = startup;
	s->teardown = teardown;
	s->arg = arg;
	s->threaded = flags & (CPUHP_CLIENT_STATE_THREAD | CPUHP_CLIENT_STATE_SHARED);
	s->prepare = flags & CPUHP_CLIENT_STATE_PREPARE;
	s->multi = flags & CPUHP_CLIENT_STATE_MULTI;
	rs.section = s->prepare ? CPUHP__STATE_SECTION__SECTION_PREPARE
	                        : CPUHP__STATE_SECTION__SECTION_ONLINE;
	rs.multi = s->multi;
	rs.name = (char *)name;
	rs.priority = priority;
	rs.deadline_ms = deadline_ms;
	rs.nocalls = flags & CPUHP_CLIENT_STATE_NOCALLS;
	if (flags & CPUHP_CLIENT_STATE_SHARED) {
		/* It frees @s on failure (or the hub does, when close abandoned it). */
		ret = cpuhp__hub_register(c, s, &rs);
		if (ret == 0)
			*out = s;
		return ret;
	}
	ret = cpuhp__client_open(&c->sa, CPUHP__OPEN_AWAIT | CPUHP__OPEN_STATES, 0, &s->conn);
	if (ret < 0) {
		free(s);
		/* The per-uid cap is what a process with many states meets: name it. */
		return cpuhp__client_note(
		    c, ret,
		    ret == -EUSERS ? "cannot connect to cpuhpd for the state: too many connections "
		                     "(each state takes one of its own; cpuhpd "
		                     "--max-connections-per-uid caps a uid but root)"
		                   : "cannot connect to cpuhpd for the state");
	}
	/* Registration waits on it (and runs the startups): close of @c wakes it. */
	cpuhp__client_wait_on(c, s->conn);
	req.body_case = CPUHP__REQUEST__BODY_REGISTER_STATE;
	req.register_state = &rs;
	s->registering = true;
	ret = cpuhp__client_send_request(s->conn, &req);
	s->reg_id = req.id;
	if (ret == 0)
		ret = pump(s, s->reg_id, CPUHP__RESPONSE__BODY_STATE_REGISTERED, &r);
	if (ret < 0)
		goto fail;
	s->id = r->state_registered->state_id;
	cpuhp__response__free_unpacked(r, NULL);
	/* Started for good: from here on the daemon's calls say what to undo. */
	s->registering = false;
	if (s->threaded) {
		if (pipe2(s->stop_pipe, O_CLOEXEC) < 0) {
			ret = -errno;
			goto fail;
		}
		ret = -pthread_create(&s->thread, NULL, state_thread, s);
		if (ret < 0)
			goto fail;
		s->thread_live = true;
	}
	cpuhp__client_wait_off(c, s->conn);
	/*
	 * Calls read with the reply (a hotplug queued behind the registration)
	 * run now, here, so that polling the socket sees all that is left; the
	 * state's thread begins with them itself.
	 */
	if (!s->threaded) {
		ret = run_read_ahead(s);
		if (ret < 0)
			s->err = ret;
	}
	*out = s;
	return 0;

fail:
	cpuhp__client_wait_off(c, s->conn);
	cpuhp__client_note(c, ret, s->conn->message);
	/* Closed with the connection below: nothing but us undoes these startups. */
	s->registering = true;
	unwind_started(s);
	if (s->stop_pipe[0] >= 0) {
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
	}
	cpuhp_client_close(s->conn);
	free(s);
	return ret;
}

int cpuhp_client_state_register(struct cpuhp_client *c, const char *name, int priority,
                                unsigned deadline_ms, unsigned flags, cpuhp_client_state_fn startup,
                                cpuhp_client_state_fn teardown, void *arg,
                                struct cpuhp_client_state **out)
{
	int ret;

	if (cpuhp__client_forked(c))
		return cpuhp__client_forked_error(c);
	if (cpuhp__client_get(c) < 0)
		return cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	ret = state_register(c, name, priority, deadline_ms, flags, startup, teardown, arg, out);
	/* Close woke it: the state was removed with its connection. */
	if (ret < 0 && cpuhp__client_closing(c))
		ret = cpuhp__client_note(c, -ECANCELED, CPUHP__CANCELED_MSG);
	cpuhp__client_put(c);
	return ret;
}

int cpuhp_client_state_remove(struct cpuhp_client_state *s, bool nocalls)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__RemoveState rm = CPUHP__REMOVE_STATE__INIT;
	int ret;

	if (!s)
		return 0;
	if (s->hub)
		return cpuhp__hub_remove(s, nocalls);
	if (s->threaded) {
		char b = 0;

		while (write(s->stop_pipe[1], &b, 1) < 0 && errno == EINTR)
			;
		if (s->thread_live)
			pthread_join(s->thread, NULL);
		close(s->stop_pipe[0]);
		close(s->stop_pipe[1]);
	}
	ret = s->err;
	if (!ret && !cpuhp__client_forked(s->conn)) {
		rm.state_id = s->id;
		rm.nocalls = nocalls;
		req.body_case = CPUHP__REQUEST__BODY_REMOVE_STATE;
		req.remove_state = &rm;
		ret = call_plain(s, &req, CPUHP__RESPONSE__BODY_STATE_REMOVED);
	}
	cpuhp_client_close(s->conn);
	while (s->insts) {
		struct cpuhp_client_instance *i = s->insts;

		s->insts = i->next;
		free(i);
	}
	free(s);
	return ret;
}

int cpuhp_client_state_fd(const struct cpuhp_client_state *s)
{
	return s->threaded ? -1 : s->conn->fd;
}

int cpuhp_client_state_dispatch(struct cpuhp_client_state *s)
{
	int ran, more;

	if (s->threaded)
		return -EINVAL;
	if (s->err)
		return s->err;
	/* One read, not until EAGAIN: poll() says when there is more. */
	ran = run_read_ahead(s);
	if (ran < 0)
		return ran;
	more = cpuhp__client_fill(s->conn, true);
	if (more == -EAGAIN)
		return ran;
	if (more < 0)
		return more;
	more = run_read_ahead(s);
	return more < 0 ? more : ran + more;
}

uint64_t cpuhp_client_state_id(const struct cpuhp_client_state *s)
{
	return s->id;
}

/* The list so far, in pages; the caller's out-parameters are written only on success. */
struct state_list {
	struct cpuhp_client_state_info *v;
	size_t n;
};

static int take_states(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	struct state_list *o = arg;
	size_t k = resp->state_list->n_states;
	struct cpuhp_client_state_info *v = realloc(o->v, (o->n + k + 1) * sizeof(*v));

	if (!v)
		return cpuhp__client_error(c, -ENOMEM, "out of memory for %zu states", o->n + k);
	o->v = v;
	v += o->n;
	memset(v, 0, (k + 1) * sizeof(*v));
	for (size_t i = 0; i < k; i++) {
		const Cpuhp__StateInfo *si = resp->state_list->states[i];

		v[i].id = si->state_id;
		snprintf(v[i].name, sizeof(v[i].name), "%s", si->name);
		snprintf(v[i].comm, sizeof(v[i].comm), "%s", si->comm);
		v[i].priority = si->priority;
		v[i].deadline_ms = si->deadline_ms;
		v[i].pid = si->pid;
		v[i].uid = si->uid;
		if (cpuhp_cpuset_parse(si->cpus, &v[i].cpus) < 0)
			cpuhp_cpuset_zero(&v[i].cpus);
		v[i].prepare = si->section == CPUHP__STATE_SECTION__SECTION_PREPARE;
		v[i].multi = si->multi;
		v[i].instances = si->instances;
	}
	o->n += k;
	return 0;
}

static int states_again(struct cpuhp_client *c, const Cpuhp__Response *resp, uint64_t *id)
{
	const Cpuhp__StateList *page = resp->state_list;
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListStates ls = CPUHP__LIST_STATES__INIT;

	ls.after = page->next;
	req.body_case = CPUHP__REQUEST__BODY_LIST_STATES;
	req.list_states = &ls;
	return cpuhp__client_next_page(c, page->next, page->n_states, &req, id);
}

int cpuhp__client_list_states_locked(struct cpuhp_client *c, struct cpuhp_client_state_info **out,
                                     size_t *n)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__ListStates ls = CPUHP__LIST_STATES__INIT;
	struct state_list o = {NULL, 0};
	int ret;

	req.body_case = CPUHP__REQUEST__BODY_LIST_STATES;
	req.list_states = &ls;
	ret = cpuhp__client_pages_locked(c, &req, CPUHP__RESPONSE__BODY_STATE_LIST, states_again,
	                                 take_states, &o);
	if (ret < 0) {
		free(o.v);
		return ret;
	}
	/* Never NULL, as before paging: a list of none is an empty array. */
	if (!o.v && !(o.v = calloc(1, sizeof(*o.v))))
		return cpuhp__client_note(c, -ENOMEM, "out of memory");
	*out = o.v;
	*n = o.n;
	return 0;
}

int cpuhp_client_list_states(struct cpuhp_client *c, struct cpuhp_client_state_info **out,
                             size_t *n)
{
	int ret = cpuhp__client_enter(c);

	if (ret < 0)
		return ret;
	return cpuhp__client_leave(c, cpuhp__client_list_states_locked(c, out, n));
}

/*
 * The state's thread, if it has one, stops while an add or a remove reads
 * its connection here (the replies come there, after the calls), and
 * starts again after.
 */
static void pause_thread(struct cpuhp_client_state *s)
{
	char b = 0;

	if (!s->thread_live)
		return;
	while (write(s->stop_pipe[1], &b, 1) < 0 && errno == EINTR)
		;
	pthread_join(s->thread, NULL);
	s->thread_live = false;
	while (read(s->stop_pipe[0], &b, 1) < 0 && errno == EINTR)
		;
}

/* Its thread again, unless it left for a connection error (the state is gone with it). */
static int resume_thread(struct cpuhp_client_state *s)
{
	int err;

	if (!s->threaded || s->err)
		return 0;
	err = -pthread_create(&s->thread, NULL, state_thread, s);
	s->thread_live = !err;
	return err;
}

int cpuhp_client_state_add_instance(struct cpuhp_client_state *s, const char *name, void *arg,
                                    unsigned flags, struct cpuhp_client_instance **out)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__AddInstance ai = CPUHP__ADD_INSTANCE__INIT;
	struct cpuhp_client_instance *inst, **tail;
	Cpuhp__Response *r;
	int ret, r2;

	if (!s || !s->multi || !name_ok(name) || (flags & ~CPUHP_CLIENT_STATE_NOCALLS))
		return -EINVAL;
	if (s->hub)
		return -EOPNOTSUPP;
	if (s->err)
		return s->err;
	if (cpuhp__client_forked(s->conn))
		return cpuhp__client_forked_error(s->conn);
	inst = calloc(1, sizeof(*inst));
	if (!inst)
		return -ENOMEM;
	inst->s = s;
	inst->arg = arg;
	snprintf(inst->name, sizeof(inst->name), "%s", name);
	inst->registering = true;
	pause_thread(s);
	s->adding = inst;
	ai.state_id = s->id;
	ai.name = inst->name;
	ai.nocalls = flags & CPUHP_CLIENT_STATE_NOCALLS;
	req.body_case = CPUHP__REQUEST__BODY_ADD_INSTANCE;
	req.add_instance = &ai;
	ret = cpuhp__client_send_request(s->conn, &req);
	if (ret == 0)
		ret = pump(s, req.id, CPUHP__RESPONSE__BODY_INSTANCE_ADDED, &r);
	s->adding = NULL;
	if (ret == 0) {
		inst->id = r->instance_added->instance_id;
		cpuhp__response__free_unpacked(r, NULL);
		inst->registering = false;
		for (tail = &s->insts; *tail; tail = &(*tail)->next)
			;
		*tail = inst;
		*out = inst;
	} else {
		/*
		 * cpuhpd undid what it started (a refusal) or forgot the instance
		 * with the connection: either way what is left started is ours to
		 * undo.
		 */
		for (unsigned cpu = CPUHP_CPUSET_MAX; cpu-- > 0;) {
			struct cpuhp_client_state_call call = {
			    .cpu = cpu, .teardown = true, .rollback = true};

			if (cpuhp_cpuset_has(&inst->started, cpu))
				run_callback(s, inst, &call);
		}
		free(inst);
	}
	r2 = resume_thread(s);
	return ret ? ret : r2;
}

int cpuhp_client_instance_remove(struct cpuhp_client_instance *inst, bool nocalls)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__RemoveInstance ri = CPUHP__REMOVE_INSTANCE__INIT;
	struct cpuhp_client_state *s;
	struct cpuhp_client_instance **pp;
	int ret, r2;

	if (!inst)
		return 0;
	s = inst->s;
	pause_thread(s);
	ret = s->err;
	if (!ret && !cpuhp__client_forked(s->conn)) {
		ri.state_id = s->id;
		ri.instance_id = inst->id;
		ri.nocalls = nocalls;
		req.body_case = CPUHP__REQUEST__BODY_REMOVE_INSTANCE;
		req.remove_instance = &ri;
		ret = call_plain(s, &req, CPUHP__RESPONSE__BODY_INSTANCE_REMOVED);
	}
	for (pp = &s->insts; *pp; pp = &(*pp)->next) {
		if (*pp == inst) {
			*pp = inst->next;
			break;
		}
	}
	free(inst);
	r2 = resume_thread(s);
	return ret ? ret : r2;
}

uint64_t cpuhp_client_instance_id(const struct cpuhp_client_instance *inst)
{
	return inst->id;
}
