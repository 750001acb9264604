/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Preloaded into cpuhpd by test_lifecycle.py: the attacker who owns the
 * socket's directory.  Right after the daemon's bind() of a Unix socket,
 * it moves the new socket aside and puts a symlink to
 * $CPUHP_TEST_BIND_SWAP in its place, once: whatever the daemon then does
 * to the path (a chmod, say) lands on that file.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	static int (*real_bind)(int, const struct sockaddr *, socklen_t);
	const char *victim = getenv("CPUHP_TEST_BIND_SWAP");
	int r;

	if (!real_bind)
		real_bind =
		    (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
	r = real_bind(fd, sa, len);
	if (r == 0 && victim && sa->sa_family == AF_UNIX) {
		const struct sockaddr_un *un = (const struct sockaddr_un *)(const void *)sa;
		char moved[sizeof(un->sun_path) + 8];

		snprintf(moved, sizeof(moved), "%s.moved", un->sun_path);
		if (rename(un->sun_path, moved) == 0 && symlink(victim, un->sun_path) == 0)
			unsetenv("CPUHP_TEST_BIND_SWAP");
	}
	return r;
}
