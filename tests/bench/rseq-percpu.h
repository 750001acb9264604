/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A per-CPU counter whose add is a restartable sequence (x86-64).
 *
 * The add reads this thread's current CPU from glibc's registered struct
 * rseq and does load/add/store on that CPU's slot.  The kernel restarts the
 * sequence (jumps to the abort handler, which retries) if the thread is
 * preempted, migrated or signalled before the final store, so two threads
 * never interleave on one slot and no atomic instruction is needed.  Only
 * the sum of the slots means anything: a thread may add on one CPU and
 * subtract on another.
 *
 * Fallback when glibc did not register rseq (old kernel, seccomp, valgrind,
 * GLIBC_TUNABLES=glibc.pthread.rseq=0): an atomic add on the slot of
 * sched_getcpu().
 */
#ifndef RSEQ_PERCPU_H
#define RSEQ_PERCPU_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/rseq.h>

#include "bench.h"

#if !defined(__x86_64__)
#error "rseq-percpu.h: the restartable sequence is written for x86-64 only"
#endif

struct pcpu_slot {
	long value;
} __attribute__((aligned(BENCH_CACHELINE)));

struct pcpu_counter {
	struct pcpu_slot *slots; /* one per possible CPU */
	unsigned nslots;
};

/* Return 0 or -errno. */
int pcpu_counter_init(struct pcpu_counter *c);
void pcpu_counter_fini(struct pcpu_counter *c);
long pcpu_counter_sum(const struct pcpu_counter *c);
/* True when this process adds through rseq (decided once, at init). */
bool pcpu_rseq_enabled(void);

extern bool pcpu__use_rseq;

void pcpu__add_fallback(struct pcpu_counter *c, long v);

/* Tests count the kernel's restarts; the benchmark compiles this out. */
#ifdef PCPU_COUNT_ABORTS
extern __thread unsigned long pcpu_aborts;
#define PCPU_ABORTED() (pcpu_aborts++)
#else
#define PCPU_ABORTED() ((void)0)
#endif

/* The rseq area's offset from the thread pointer (%fs on x86-64). */
#define PCPU_RSEQ_CPU_ID 4 /* offsetof(struct rseq, cpu_id) */
#define PCPU_RSEQ_CS     8 /* offsetof(struct rseq, rseq_cs) */

_Static_assert(offsetof(struct rseq, cpu_id) == PCPU_RSEQ_CPU_ID, "struct rseq layout");
_Static_assert(offsetof(struct rseq, rseq_cs) == PCPU_RSEQ_CS, "struct rseq layout");
_Static_assert(sizeof(struct pcpu_slot) == 64, "slot stride is hard-coded as shl $6");
_Static_assert(RSEQ_SIG == 0x53053053, "signature in the asm below");

/*
 * The parts every sequence here shares.  PCPU_RSEQ_BEGIN emits the
 * descriptor (struct rseq_cs: version 0, flags 0, start_ip, post_commit
 * offset, abort_ip) into section __rseq_cs and points this thread's
 * rseq->rseq_cs at it; the sequence runs from label 1 to label 2, and
 * nothing in it may be visible to others before its last instruction, the
 * committing store.  PCPU_RSEQ_END emits the abort handler into
 * __rseq_failure, preceded by the 4-byte signature the kernel checks before
 * jumping there (as the operand of a ud1, so disassemblers show an
 * undefined instruction rather than garbage).  %[off] holds __rseq_offset,
 * the rseq area's offset from the thread pointer (%fs on x86-64).
 */
// clang-format off
#define PCPU_RSEQ_BEGIN                                                                            \
	".pushsection __rseq_cs, \"aw\"\n\t"                                                       \
	".balign 32\n"                                                                             \
	"3:\n\t"                                                                                   \
	".long 0, 0\n\t"                                                                           \
	".quad 1f, (2f - 1f), 4f\n\t"                                                              \
	".popsection\n\t"                                                                          \
	"leaq 3b(%%rip), %%rax\n\t"                                                                \
	"movq %%rax, %%fs:8(%[off])\n"                                                             \
	"1:\n\t"

#define PCPU_RSEQ_END(aborted)                                                                     \
	"2:\n\t"                                                                                   \
	".pushsection __rseq_failure, \"ax\"\n\t"                                                  \
	".byte 0x0f, 0xb9, 0x3d\n\t"                                                               \
	".long 0x53053053\n"                                                                       \
	"4:\n\t"                                                                                   \
	"jmp %l[" #aborted "]\n\t"                                                                 \
	".popsection\n\t"

// clang-format on

/* This CPU's slot address into %rax; to no_cpu if rseq failed for this thread. */
#define PCPU_RSEQ_SLOT(no_cpu)                                                                     \
	"movslq %%fs:4(%[off]), %%rax\n\t"                                                         \
	"testq %%rax, %%rax\n\t"                                                                   \
	"js %l[" #no_cpu "]\n\t"                                                                   \
	"shlq $6, %%rax\n\t"                                                                       \
	"addq %[base], %%rax\n\t"

/* slot += v; the final store commits. */
// clang-format off
#define PCPU_RSEQ_ADD_ASM(slots, v, rseq_off, aborted, no_cpu)                                     \
	__asm__ goto(PCPU_RSEQ_BEGIN                                                               \
		     PCPU_RSEQ_SLOT(no_cpu)                                                        \
		     "movq (%%rax), %%rdx\n\t"                                                     \
		     "addq %[val], %%rdx\n\t"                                                      \
		     "movq %%rdx, (%%rax)\n"                                                       \
		     PCPU_RSEQ_END(aborted)                                                        \
		     :                                                                             \
		     : [off] "r"(rseq_off), [base] "r"(slots), [val] "r"(v)                        \
		     : "rax", "rdx", "memory", "cc"                                                \
		     : aborted, no_cpu)

/* if (*flag == 0) slot += v; else goto busy.  The flag is read inside the sequence. */
#define PCPU_RSEQ_ADD_IF_ZERO_ASM(slots, v, flag, rseq_off, aborted, busy)                         \
	__asm__ goto(PCPU_RSEQ_BEGIN                                                               \
		     "cmpl $0, (%[flag])\n\t"                                                      \
		     "jne %l[" #busy "]\n\t"                                                       \
		     PCPU_RSEQ_SLOT(busy)                                                          \
		     "movq (%%rax), %%rdx\n\t"                                                     \
		     "addq %[val], %%rdx\n\t"                                                      \
		     "movq %%rdx, (%%rax)\n"                                                       \
		     PCPU_RSEQ_END(aborted)                                                        \
		     :                                                                             \
		     : [off] "r"(rseq_off), [base] "r"(slots), [val] "r"(v), [flag] "r"(flag)      \
		     : "rax", "rdx", "memory", "cc"                                                \
		     : aborted, busy)

/*
 * if (*flag == 0) *ptr += v; else goto busy.  No CPU number: the sequence
 * only serves as a section that the rseq membarrier can wait out, around a
 * counter that only this thread writes.
 */
#define PCPU_RSEQ_PTR_ADD_IF_ZERO_ASM(ptr, v, flag, rseq_off, aborted, busy)                       \
	__asm__ goto(PCPU_RSEQ_BEGIN                                                               \
		     "cmpl $0, (%[flag])\n\t"                                                      \
		     "jne %l[" #busy "]\n\t"                                                       \
		     "movq (%[p]), %%rdx\n\t"                                                      \
		     "addq %[val], %%rdx\n\t"                                                      \
		     "movq %%rdx, (%[p])\n"                                                        \
		     PCPU_RSEQ_END(aborted)                                                        \
		     :                                                                             \
		     : [off] "r"(rseq_off), [p] "r"(ptr), [val] "r"(v), [flag] "r"(flag)           \
		     : "rax", "rdx", "memory", "cc"                                                \
		     : aborted, busy)
// clang-format on

/*
 * Add @v to this CPU's slot.  Not a barrier: order it yourself (as the
 * callers here do with an RCU section or a membarrier on the other side).
 */
static inline void pcpu_counter_add(struct pcpu_counter *c, long v)
{
	if (__builtin_expect(!pcpu__use_rseq, 0))
		goto fallback;
retry:
	PCPU_RSEQ_ADD_ASM(c->slots, v, __rseq_offset, aborted, fallback);
	return;
aborted:
	PCPU_ABORTED();
	goto retry;
fallback:
	pcpu__add_fallback(c, v);
}

/*
 * If *flag is 0, add @v to this CPU's slot and return true; otherwise (or
 * without rseq) change nothing and return false.  The flag is read inside
 * the sequence: a writer that sets it and then runs
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ) knows that every add
 * which saw 0 has committed (and is visible to it) or will restart and see
 * the new value.  That is the grace period of a per-CPU reader count.
 */
static inline bool pcpu_counter_add_if_zero(struct pcpu_counter *c, long v, const int *flag)
{
	if (__builtin_expect(!pcpu__use_rseq, 0))
		return false;
retry:
	PCPU_RSEQ_ADD_IF_ZERO_ASM(c->slots, v, flag, __rseq_offset, aborted, busy);
	return true;
aborted:
	PCPU_ABORTED();
	goto retry;
busy:
	return false;
}

/*
 * If *flag is 0, add @v to *@ptr (a counter only this thread writes) and
 * return true; otherwise, or without rseq, return false.  Same grace-period
 * argument as pcpu_counter_add_if_zero().
 */
static inline bool rseq_add_if_zero(long *ptr, long v, const int *flag)
{
	if (__builtin_expect(!pcpu__use_rseq, 0))
		return false;
retry:
	PCPU_RSEQ_PTR_ADD_IF_ZERO_ASM(ptr, v, flag, __rseq_offset, aborted, busy);
	return true;
aborted:
	PCPU_ABORTED();
	goto retry;
busy:
	return false;
}

/*
 * Test-only: the same load/add/store without telling the kernel about it,
 * to show that the correctness test catches a lost update.
 */
static inline void pcpu_counter_add_unprotected(struct pcpu_counter *c, long v)
{
	int cpu = sched_getcpu();
	struct pcpu_slot *s = &c->slots[cpu < 0 ? 0 : cpu];
	long old = __atomic_load_n(&s->value, __ATOMIC_RELAXED);

	__asm__ __volatile__("" ::: "memory");
	__atomic_store_n(&s->value, old + v, __ATOMIC_RELAXED);
}

#endif /* RSEQ_PERCPU_H */
