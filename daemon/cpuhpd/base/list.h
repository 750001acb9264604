/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A circular doubly linked list with the node embedded in its owner, as in
 * the kernel.  Every queue of cpuhpd (connections, lease waiters, hotplug
 * requests, watchers, worker jobs) is one of these, so removal is O(1) and
 * nothing is allocated to queue an object.
 */
#ifndef CPUHPD_LIST_H
#define CPUHPD_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct cpuhpd_list {
	struct cpuhpd_list *next, *prev;
};

#define cpuhpd_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static inline void cpuhpd_list_init(struct cpuhpd_list *l)
{
	l->next = l->prev = l;
}

static inline bool cpuhpd_list_empty(const struct cpuhpd_list *l)
{
	return l->next == l;
}

/* A node that was initialised and removed reads as empty: removal is idempotent. */
static inline void cpuhpd_list_del(struct cpuhpd_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	cpuhpd_list_init(n);
}

static inline void cpuhpd_list_add_tail(struct cpuhpd_list *head, struct cpuhpd_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline struct cpuhpd_list *cpuhpd_list_first(const struct cpuhpd_list *head)
{
	return cpuhpd_list_empty(head) ? NULL : head->next;
}

/* Iterate allowing removal of the current node (@tmp holds the next one). */
#define cpuhpd_list_for_each_safe(pos, tmp, head)                                                  \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                           \
	     (pos) = (tmp), (tmp) = (pos)->next)

#define cpuhpd_list_for_each(pos, head)                                                            \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#endif /* CPUHPD_LIST_H */
