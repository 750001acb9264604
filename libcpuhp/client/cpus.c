/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CPUs as rows: cpuhp_client_list_cpus(), ListCpus page after page
 * (as many CPUs as a frame holds each), then ListStates, whose states'
 * CPUs say which states each CPU has; all on the handle, under its mutex.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"

struct pages {
	struct cpuhp_client_cpu_list *l;
	size_t cap;
	uint32_t next; /* the reply's next_cpu */
};

static enum cpuhp_client_writer_state writer(Cpuhp__WriterState s)
{
	return s == CPUHP__WRITER_STATE__WRITER_RUNNING   ? CPUHP_CLIENT_WRITER_RUNNING
	       : s == CPUHP__WRITER_STATE__WRITER_WAITING ? CPUHP_CLIENT_WRITER_WAITING
	                                                  : CPUHP_CLIENT_WRITER_IDLE;
}

static enum cpuhp_client_topology topology(Cpuhp__TopologySource s)
{
	return s == CPUHP__TOPOLOGY_SOURCE__TOPOLOGY_LIVE         ? CPUHP_CLIENT_TOPOLOGY_LIVE
	       : s == CPUHP__TOPOLOGY_SOURCE__TOPOLOGY_REMEMBERED ? CPUHP_CLIENT_TOPOLOGY_REMEMBERED
	                                                          : CPUHP_CLIENT_TOPOLOGY_UNKNOWN;
}

/* Append a page's rows to @arg's list. */
static int take_page(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	struct pages *p = arg;
	struct cpuhp_client_cpu_list *l = p->l;
	const Cpuhp__CpuList *in = resp->cpu_list;
	unsigned last = l->n_cpus ? l->cpus[l->n_cpus - 1].cpu : 0;

	if (l->n_cpus + in->n_cpus > p->cap) {
		size_t cap = l->n_cpus + in->n_cpus + p->cap;
		struct cpuhp_client_cpu_info *v = realloc(l->cpus, cap * sizeof(*v));

		if (!v)
			return cpuhp__client_error(c, -ENOMEM, "out of memory for %zu CPUs", cap);
		l->cpus = v;
		p->cap = cap;
	}
	for (size_t i = 0; i < in->n_cpus; i++) {
		const Cpuhp__CpuInfo *ci = in->cpus[i];
		struct cpuhp_client_cpu_info *o = &l->cpus[l->n_cpus];
		struct cpuhp_cpuset sib;
		int ret;

		/* Ascending, each CPU once, pages included: else the listing would go round. */
		if ((l->n_cpus || i) && ci->cpu <= last)
			return cpuhp__client_error(c, -EPROTO, "cpuhpd listed CPU %u after CPU %u",
			                           ci->cpu, last);
		ret = cpuhp__client_parse_cpus(c, "siblings", ci->siblings, &sib);
		if (ret < 0)
			return ret;
		*o = (struct cpuhp_client_cpu_info){
		    .cpu = ci->cpu,
		    .online = ci->online,
		    .present = ci->present,
		    .topology = topology(ci->topology),
		    .core = ci->core,
		    .socket = ci->socket,
		    .node = ci->node,
		    .siblings = strdup(ci->siblings ? ci->siblings : ""),
		    .hotplugs = ci->hotplugs,
		    .hotplug_seq = ci->hotplug_seq,
		    .hotplug_online = ci->hotplug_online,
		    .hotplug_state = writer(ci->hotplug_state),
		};
		if (!o->siblings)
			return cpuhp__client_error(c, -ENOMEM, "out of memory");
		l->n_cpus++;
		last = ci->cpu;
	}
	if (in->next_cpu && (!l->n_cpus || in->next_cpu <= last))
		return cpuhp__client_error(c, -EPROTO,
		                           "cpuhpd said the CPUs go on from %u, after CPU %u",
		                           in->next_cpu, last);
	p->next = in->next_cpu;
	return 0;
}

/* Each CPU's states: those whose CPUs name it, in the list's order (startup order). */
static int link_states(struct cpuhp_client *c, struct cpuhp_client_cpu_list *l)
{
	for (size_t i = 0; i < l->n_cpus; i++) {
		struct cpuhp_client_cpu_info *o = &l->cpus[i];
		const struct cpuhp_client_state_info **v;
		size_t n = 0;

		for (size_t k = 0; k < l->n_states; k++)
			n += cpuhp_cpuset_has(&l->states[k].cpus, o->cpu);
		if (!n)
			continue;
		v = calloc(n, sizeof(*v));
		if (!v)
			return cpuhp__client_error(c, -ENOMEM, "out of memory");
		n = 0;
		for (size_t k = 0; k < l->n_states; k++)
			if (cpuhp_cpuset_has(&l->states[k].cpus, o->cpu))
				v[n++] = &l->states[k];
		o->states = v;
		o->n_states = n;
	}
	return 0;
}

static int list_locked(struct cpuhp_client *c, struct cpuhp_client_cpu_list *l)
{
	struct pages p = {.l = l};
	int ret;

	do {
		Cpuhp__Request req = CPUHP__REQUEST__INIT;
		Cpuhp__ListCpus lc = CPUHP__LIST_CPUS__INIT;

		lc.from_cpu = p.next;
		req.body_case = CPUHP__REQUEST__BODY_LIST_CPUS;
		req.list_cpus = &lc;
		ret = cpuhp__client_request_locked(c, &req, CPUHP__RESPONSE__BODY_CPU_LIST,
		                                   take_page, &p);
	} while (!ret && p.next);
	if (!ret)
		ret = cpuhp__client_list_states_locked(c, &l->states, &l->n_states);
	return ret < 0 ? ret : link_states(c, l);
}

int cpuhp_client_list_cpus(struct cpuhp_client *c, struct cpuhp_client_cpu_list **out)
{
	struct cpuhp_client_cpu_list *l;
	int ret = cpuhp__client_enter(c);

	if (ret < 0)
		return ret;
	l = calloc(1, sizeof(*l));
	ret = l ? list_locked(c, l) : cpuhp__client_error(c, -ENOMEM, "out of memory");
	if (ret < 0)
		cpuhp_client_cpu_list_free(l);
	else
		*out = l;
	return cpuhp__client_leave(c, ret);
}

void cpuhp_client_cpu_list_free(struct cpuhp_client_cpu_list *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->n_cpus; i++) {
		free((char *)list->cpus[i].siblings);
		free((void *)list->cpus[i].states);
	}
	free(list->cpus);
	free(list->states);
	free(list);
}
