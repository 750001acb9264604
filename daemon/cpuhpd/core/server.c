/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Listen and accept; see server.h. */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cpuhpd.h"
#include "base/instance.h"
#include "base/log.h"
#include "conn.h"

/*
 * Return: the activation socket's fd (a socket unit's, or the one a
 * previous cpuhpd put in the fd store); -ENOENT when none was passed;
 * another -errno when the passed fd is unusable.
 */
static int activation_fd(struct cpuhpd *d)
{
	int fd = cpuhpd_fdstore_listen_fd(d), type = 0, listening = 0;
	socklen_t len = sizeof(int);
	struct sockaddr_un sa;
	socklen_t salen = sizeof(sa);

	if (fd < 0)
		return -ENOENT;
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &salen) < 0 || sa.sun_family != AF_UNIX ||
	    type != SOCK_STREAM || !listening) {
		cpuhpd_err("socket activation: fd %d is not a listening Unix stream socket; check "
		           "ListenStream= in cpuhpd.socket",
		           fd);
		return -EINVAL;
	}
	return fd;
}

/* The path systemd bound, for log lines: --socket does not apply then. */
static void activated_path(struct cpuhpd *d, int fd)
{
	static struct sockaddr_un sa;
	socklen_t len = sizeof(sa) - 1;

	if (getsockname(fd, (struct sockaddr *)&sa, &len) == 0 && sa.sun_path[0])
		d->opt.socket_path = sa.sun_path;
}

/* Create the socket's missing parents, then check that its directory is ours alone. */
static int make_parent_dirs(const char *path)
{
	char *dir = cpuhpd_dirname(path);
	int err;

	if (!dir)
		return -ENOMEM;
	err = cpuhpd_mkdir_p(dir, "the socket");
	if (!err)
		err = cpuhpd_dir_check(dir, "the socket");
	free(dir);
	return err;
}

/* A socket file at @path: remove it if nobody listens (a daemon crashed), refuse otherwise. */
static int clear_stale(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd, r, e;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		cpuhpd_err("%s exists and is not a socket; remove it or choose another --socket",
		           path);
		return -EEXIST;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	strcpy(sa.sun_path, path);
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	e = errno;
	close(fd);
	if (r == 0) {
		if (st.st_uid != geteuid()) {
			struct passwd *pw = getpwuid(st.st_uid);

			cpuhpd_err("%s is a live socket of user %s (uid %u), not a cpuhpd of ours; "
			           "find out who serves it, or choose another --socket",
			           path, pw ? pw->pw_name : "?", (unsigned)st.st_uid);
		} else {
			cpuhpd_err("another cpuhpd is already listening on %s; stop it first or "
			           "choose another --socket",
			           path);
		}
		return -EADDRINUSE;
	}
	if (e != ECONNREFUSED) {
		cpuhpd_err("cannot probe the existing socket %s: %s", path, strerror(e));
		return -e;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		cpuhpd_err("cannot remove the stale socket %s: %s", path, strerror(errno));
		return -errno;
	}
	cpuhpd_info("removed the stale socket %s (nobody listened on it)", path);
	return 0;
}

/*
 * --socket-group: give the socket we just bound its group.  An AF_UNIX
 * socket's fd is not the file bind() made (fchown() on it changes the
 * socket's inode in sockfs), and chown(path) would follow a symlink
 * swapped in since.  So the file is opened without following (O_PATH,
 * which a socket file allows), checked to be a socket of ours, and exactly
 * that inode gets the group.  Before listen(): nobody has connected yet.
 */
static int set_group(const struct cpuhpd *d, const char *path)
{
	struct stat st;
	int fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC), err = 0;

	if (fd < 0 || fstat(fd, &st) < 0)
		err = -errno;
	else if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
		err = -EEXIST;
	else if (fchownat(fd, "", (uid_t)-1, d->opt.socket_gid, AT_EMPTY_PATH) < 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err == -EPERM)
		cpuhpd_err("cannot give %s the group %s: cpuhpd is not root and not a member of it",
		           path, d->opt.socket_group);
	else if (err)
		cpuhpd_err("cannot give %s the group %s: %s", path, d->opt.socket_group,
		           err == -EEXIST ? "it is no longer the socket we bound" : strerror(-err));
	return err;
}

static int bind_path(struct cpuhpd *d)
{
	const char *path = d->opt.socket_path;
	struct sockaddr_un sa;
	struct stat st;
	mode_t old;
	int err;

	/* uv_pipe_bind() would silently cut the path. */
	if (strlen(path) >= sizeof(sa.sun_path)) {
		cpuhpd_err("socket path %s is too long (%zu bytes, the limit is %zu); choose a "
		           "shorter --socket",
		           path, strlen(path), sizeof(sa.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	err = make_parent_dirs(path);
	if (!err)
		err = clear_stale(path);
	if (err)
		return err;
	/*
	 * The mode comes from the umask alone: bind() creates the socket file
	 * 0777 & ~umask.  A chmod(path) afterwards would follow whatever the
	 * path names by then (a symlink swapped in, say) and change that file.
	 */
	old = umask(~d->opt.socket_mode & 0777);
	err = uv_pipe_bind(&d->server.pipe, path);
	umask(old);
	if (err) {
		cpuhpd_err("cannot bind %s: %s", path, uv_strerror(err));
		return err;
	}
	if (d->opt.socket_group && (err = set_group(d, path)))
		return err;
	if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 0777) != (d->opt.socket_mode & 0777) ||
	    (d->opt.socket_group && st.st_gid != d->opt.socket_gid)) {
		cpuhpd_err("%s is not the socket we bound with mode %04o: something replaced it; "
		           "check who can write its directory",
		           path, (unsigned)(d->opt.socket_mode & 0777));
		return -EEXIST;
	}
	return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
	struct cpuhpd *d = cpuhpd_container_of(server, struct cpuhpd, server.pipe);

	if (status < 0) {
		cpuhpd_warn("accept: %s", uv_strerror(status));
		return;
	}
	cpuhpd_conn_accept(d, server);
}

int cpuhpd_server_start(struct cpuhpd *d)
{
	struct cpuhpd_server *s = &d->server;
	int fd, err;

	err = uv_pipe_init(d->loop, &s->pipe, 0);
	if (err)
		return err;
	s->open = true;
	fd = activation_fd(d);
	if (fd >= 0) {
		err = uv_pipe_open(&s->pipe, fd);
		if (err) {
			cpuhpd_err("socket activation: cannot use fd %d: %s", fd, uv_strerror(err));
			return err;
		}
		s->activated = true;
		activated_path(d, fd);
	} else if (fd != -ENOENT) {
		return fd;
	} else {
		err = bind_path(d);
		if (err)
			return err;
	}
	/* Bursts of connections (1000 clients starting at once) must not be refused. */
	err = uv_listen((uv_stream_t *)&s->pipe, 4096, on_connection);
	if (err) {
		cpuhpd_err("cannot listen on %s: %s", d->opt.socket_path, uv_strerror(err));
		return err;
	}
	return 0;
}

void cpuhpd_server_stop(struct cpuhpd *d)
{
	struct cpuhpd_server *s = &d->server;

	if (!s->open)
		return;
	s->open = false;
	/* libuv unlinks the path of a pipe it bound, and leaves an opened fd's file alone. */
	uv_close((uv_handle_t *)&s->pipe, NULL);
}
