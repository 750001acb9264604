/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Assertions for test programs.  A failed check prints where it failed and
 * both operands, then aborts, so meson shows the message and a core or
 * sanitizer report can follow.  Header-only; each test is a plain program.
 */
#ifndef CPUHP_TESTS_CHECK_H
#define CPUHP_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_FAIL_(...)                                                                           \
	do {                                                                                       \
		fprintf(stderr, "%s:%d: check failed: ", __FILE__, __LINE__);                      \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		fflush(stdout);                                                                    \
		abort();                                                                           \
	} while (0)

/* CHECK(cond): @cond must be true. */
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			CHECK_FAIL_("%s", #cond);                                                  \
	} while (0)

/* CHECK_EQ_INT(a, b): integers (any signedness up to 64 bits) must be equal. */
#define CHECK_EQ_INT(a, b)                                                                         \
	do {                                                                                       \
		long long check_a_ = (long long)(a), check_b_ = (long long)(b);                    \
		if (check_a_ != check_b_)                                                          \
			CHECK_FAIL_("%s == %s (%lld != %lld)", #a, #b, check_a_, check_b_);        \
	} while (0)

/* CHECK_EQ_STR(a, b): NUL-terminated strings must be equal; NULL only equals NULL. */
#define CHECK_EQ_STR(a, b)                                                                         \
	do {                                                                                       \
		const char *check_a_ = (a), *check_b_ = (b);                                       \
		if (!check_a_ || !check_b_ ? check_a_ != check_b_ : strcmp(check_a_, check_b_))    \
			CHECK_FAIL_("%s == %s (\"%s\" != \"%s\")", #a, #b,                         \
			            check_a_ ? check_a_ : "(null)",                                \
			            check_b_ ? check_b_ : "(null)");                               \
	} while (0)

/*
 * RUN_TEST(fn): run one test case, a void function named for the behaviour
 * it proves, and log its name so a failure's output says which case it was.
 */
#define RUN_TEST(fn)                                                                               \
	do {                                                                                       \
		printf("# %s\n", #fn);                                                             \
		fflush(stdout);                                                                    \
		fn();                                                                              \
		printf("ok %s\n", #fn);                                                            \
	} while (0)

/* CHECK_UNDER_TSAN: defined when built with ThreadSanitizer (gcc or clang). */
#if defined(__SANITIZE_THREAD__)
#define CHECK_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHECK_UNDER_TSAN 1
#endif
#endif

/* A test whose RUN_TEST a ThreadSanitizer build leaves out (and says so). */
#define CHECK_TSAN_SKIPS __attribute__((unused))

#endif /* CPUHP_TESTS_CHECK_H */
