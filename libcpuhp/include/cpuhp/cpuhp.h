/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libcpuhp: the whole in-process API. */
#ifndef CPUHP_CPUHP_H
#define CPUHP_CPUHP_H

#include <cpuhp/rcu_sync.h>
#include <cpuhp/rwsem.h>
#include <cpuhp/hotplug.h>
#include <cpuhp/cpuset.h>
#include <cpuhp/version.h>

#endif /* CPUHP_CPUHP_H */
