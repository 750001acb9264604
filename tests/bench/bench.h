/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one interface every lock design in the benchmark implements, so that
 * one driver (bench-locks.c) can run them all side by side in one process.
 *
 * A design file defines a `const struct bench_lock_ops bench_<id>` and is
 * listed in bench-designs.c.  Its read path is measured through read_loop(),
 * which the design writes with BENCH_DEFINE_READ_LOOP() so that the lock
 * calls are made exactly as a user would make them (inline or a direct call)
 * and not through the function pointers below.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stdint.h>

struct bench_lock_ops {
	const char *name;  /* short id: --only, CSV, callgrind */
	const char *label; /* table row */
	/* Return 0 or -errno; *lock is written only on success. */
	int (*init)(void **lock);
	void (*fini)(void *lock);
	void (*read_lock)(void *lock);
	void (*read_unlock)(void *lock);
	/* NULL for the floor, which has no writer side. */
	void (*write_lock)(void *lock);
	void (*write_unlock)(void *lock);
	/* Optional: called on every benchmark thread before/after it uses the lock. */
	void (*thread_init)(void *lock);
	void (*thread_fini)(void *lock);
	/* n read lock+unlock pairs with the calls made as a user makes them. */
	void (*read_loop)(void *lock, uint64_t n);
	/* Optional one-line note printed under the table. */
	const char *note;
	/* Reads through rseq: under valgrind (no rseq) its fallback is what runs. */
	bool uses_rseq;
};

/*
 * Defines `static void fn(void *lock, uint64_t n)` running n pairs of
 * lockfn(l); unlockfn(l);.  noinline keeps one loop per design, so the
 * loop overhead is the same for all and callgrind can count it.
 */
#define BENCH_DEFINE_READ_LOOP(fn, type, lockfn, unlockfn)                                         \
	static __attribute__((noinline)) void fn(void *lock, uint64_t n)                           \
	{                                                                                          \
		type *l = lock;                                                                    \
		for (uint64_t i = 0; i < n; i++) {                                                 \
			lockfn(l);                                                                 \
			unlockfn(l);                                                               \
		}                                                                                  \
	}

#define BENCH_CACHELINE 64

/* The designs, in table order (bench-designs.c). */
extern const struct bench_lock_ops *const bench_designs[];
extern const unsigned bench_ndesigns;

/* The design the ratios are taken against ("cpuhp"). */
#define BENCH_REFERENCE "cpuhp"

/* Abort with file, line and strerror(-err) when err is non-zero. */
#define BENCH_CHECK(err) bench_check((err), #err, __FILE__, __LINE__)
void bench_check(int err, const char *what, const char *file, int line);

#endif /* BENCH_H */
