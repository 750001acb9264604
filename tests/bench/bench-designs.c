/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The designs bench-locks runs, in table order. */
#include "bench.h"

extern const struct bench_lock_ops bench_floor;
extern const struct bench_lock_ops bench_floor_call;
extern const struct bench_lock_ops bench_mutex;
extern const struct bench_lock_ops bench_percpu2013;
extern const struct bench_lock_ops bench_cpuhp;
extern const struct bench_lock_ops bench_cpuhp_static;
extern const struct bench_lock_ops bench_cpuhp_inline;
extern const struct bench_lock_ops bench_cpuhp_handle;
extern const struct bench_lock_ops bench_rwlock;
extern const struct bench_lock_ops bench_rwlock_wr;
#ifdef BENCH_HAVE_RSEQ
extern const struct bench_lock_ops bench_rseq_rwsem;
extern const struct bench_lock_ops bench_rseq_thread;
extern const struct bench_lock_ops bench_rseq_thread_call;
extern const struct bench_lock_ops bench_counter_rseq;
extern const struct bench_lock_ops bench_counter_atomic;
#endif

// clang-format off
const struct bench_lock_ops *const bench_designs[] = {
	&bench_floor,
	&bench_floor_call,
	&bench_mutex,
	&bench_percpu2013,
	&bench_cpuhp,
	&bench_cpuhp_static,
	&bench_cpuhp_inline,
	&bench_cpuhp_handle,
#ifdef BENCH_HAVE_RSEQ
	&bench_rseq_rwsem,
	&bench_rseq_thread,
	&bench_rseq_thread_call,
#endif
	&bench_rwlock,
	&bench_rwlock_wr,
#ifdef BENCH_HAVE_RSEQ
	&bench_counter_rseq,
	&bench_counter_atomic,
#endif
};
// clang-format on

const unsigned bench_ndesigns = sizeof(bench_designs) / sizeof(bench_designs[0]);
