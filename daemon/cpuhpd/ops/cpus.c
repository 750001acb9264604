/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ListCpus; see cpus.h. */
#include <errno.h>
#include <stdlib.h>

#include "cpuhpd.h"
#include "core/conn.h"
#include "cpus.h"
#include "frame.h"

/*
 * What a page's rows may take: the frame less the Response around them
 * (its id, the body's tag and length, next_cpu: well under 64 bytes).
 * Each row costs its size plus its tag and length (4 bytes at most below
 * 2 MiB).
 */
#define PAGE_BUDGET (CPUHP__FRAME_MAX - 64)
#define ROW_COST    4

static const Cpuhp__TopologySource sources[] = {
    [CPUHPD_TOPO_UNKNOWN] = CPUHP__TOPOLOGY_SOURCE__TOPOLOGY_UNKNOWN,
    [CPUHPD_TOPO_LIVE] = CPUHP__TOPOLOGY_SOURCE__TOPOLOGY_LIVE,
    [CPUHPD_TOPO_REMEMBERED] = CPUHP__TOPOLOGY_SOURCE__TOPOLOGY_REMEMBERED,
};

/* Row @ci of CPU @cpu.  Return: 0 or -ENOMEM (ci->siblings is then NULL, or to free). */
static int fill(struct cpuhpd *d, unsigned cpu, Cpuhp__CpuInfo *ci)
{
	struct cpuhpd_topo t;
	int src;

	cpuhp__cpu_info__init(ci);
	ci->cpu = cpu;
	ci->online = cpuhp_cpuset_has(&d->view.online, cpu);
	ci->present = cpuhp_cpuset_has(&d->view.present, cpu);
	src = cpuhpd_topology_get(&d->topology, cpu, &t);
	if (src < 0)
		return src;
	ci->topology = sources[src];
	if (src != CPUHPD_TOPO_UNKNOWN) {
		ci->core = t.core;
		ci->socket = t.package;
		ci->node = t.node;
		ci->siblings = t.siblings;
	} else {
		ci->node = -1;
	}
	cpuhpd_hotplug_cpu_info(d, ci);
	return 0;
}

void cpuhpd_cpus_request(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	struct cpuhpd *d = c->d;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__CpuList cl = CPUHP__CPU_LIST__INIT;
	Cpuhp__CpuInfo *rows = NULL;
	uint32_t from = req->list_cpus->from_cpu;
	/* The CPUs listed start above @after: from_cpu on; none past the last a set can hold. */
	int after = from < CPUHP_CPUSET_MAX ? (int)from - 1 : CPUHP_CPUSET_MAX - 1;
	unsigned n = 0, max = 0;
	size_t used = 0;
	int cpu;

	for (cpu = after; (cpu = cpuhp_cpuset_next(&d->view.possible, cpu)) >= 0;)
		max++;
	rows = calloc(max + 1, sizeof(*rows));
	cl.cpus = calloc(max + 1, sizeof(*cl.cpus));
	if (!rows || !cl.cpus)
		goto oom;
	for (cpu = after; (cpu = cpuhp_cpuset_next(&d->view.possible, cpu)) >= 0;) {
		Cpuhp__CpuInfo *ci = &rows[n];
		size_t size;

		if (fill(d, (unsigned)cpu, ci))
			goto oom;
		size = cpuhp__cpu_info__get_packed_size(ci) + ROW_COST;
		/* The first row always fits: none of its fields but siblings grows, and those are
		 * few. */
		if (n && used + size > PAGE_BUDGET) {
			cl.next_cpu = (uint32_t)cpu;
			break;
		}
		used += size;
		cl.cpus[n++] = ci;
		cl.n_cpus = n;
	}
	r.id = req->id;
	r.body_case = CPUHP__RESPONSE__BODY_CPU_LIST;
	r.cpu_list = &cl;
	cpuhpd_conn_send(c, &r);
	goto out;
oom:
	cpuhpd_conn_send_error(c, req->id, ENOMEM, "cpuhpd is out of memory");
out:
	for (unsigned i = 0; rows && i <= max; i++)
		if (rows[i].siblings != protobuf_c_empty_string)
			free(rows[i].siblings);
	free(rows);
	free(cl.cpus);
}
