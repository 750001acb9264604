/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The listening socket: bound at --socket (the directory is created, a
 * stale socket file left by a crashed daemon is detected by connecting to it
 * and removed, the mode is set to --socket-mode), or taken over from systemd
 * socket activation (LISTEN_PID/LISTEN_FDS, fd 3), in which case it is never
 * unlinked: systemd owns that file.  Loop thread only.
 */
#ifndef CPUHPD_SERVER_H
#define CPUHPD_SERVER_H

#include <stdbool.h>

#include <uv.h>

struct cpuhpd;

struct cpuhpd_server {
	uv_pipe_t pipe;
	bool activated; /* from systemd: not ours to unlink */
	bool open;
};

/* Return: 0, or -errno after logging what went wrong and what to do. */
int cpuhpd_server_start(struct cpuhpd *d);
/* Stop accepting; unlinks the socket file unless it came from systemd. */
void cpuhpd_server_stop(struct cpuhpd *d);

#endif /* CPUHPD_SERVER_H */
