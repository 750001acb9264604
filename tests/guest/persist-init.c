// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The guest's first process (rdinit=): what a machine's initramfs does before
 * its root's systemd runs, cut down to what the guest lacks. The guest's root
 * is the initramfs itself, gone at every reset; its disk (/dev/vda, made empty
 * by the host for each run) gives it a persistent /etc: the disk's drivers
 * are loaded (the image has no modprobe: finit_module, in the order of their
 * names), the disk mounted, an overlay laid on /etc
 * with the disk as its upper layer, and systemd exec'd. What a boot enables,
 * adds or writes in /etc is there after a reboot, as on a disk-rooted machine.
 *
 * No disk or a driver that will not load: systemd runs on the volatile /etc,
 * and the console says why (the scenario that reboots then fails).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MODULES  "/usr/lib/cpuhp-guest/modules"
#define DISK     "/dev/vda"
#define DISK_DIR "/var/lib/cpuhp-guest-disk"

static void say(const char *what, int err)
{
	if (err)
		fprintf(stderr, "cpuhp-guest-init: %s: %s\n", what, strerror(err));
	else
		fprintf(stderr, "cpuhp-guest-init: %s\n", what);
}

/* 0 once every module of MODULES is in, else the last error.  Their names
 * sort in an order that loads each after its dependencies. */
static int load_modules(void)
{
	struct dirent **names;
	int n = scandir(MODULES, &names, NULL, alphasort), err = 0;

	if (n < 0)
		return errno;
	for (int i = 0; i < n; i++) {
		char path[512];
		int fd;

		if (!strstr(names[i]->d_name, ".ko"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", MODULES, names[i]->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || (syscall(SYS_finit_module, fd, "", 0) && errno != EEXIST)) {
			err = errno;
			say(path, err);
		}
		if (fd >= 0)
			close(fd);
		if (err)
			break;
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return err;
}

static int mount_persistent_etc(void)
{
	struct stat st;
	struct timespec tick = {0, 10 * 1000 * 1000};
	int err;

	if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") && errno != EBUSY)
		return errno;
	err = load_modules();
	if (err)
		return err;
	/* The disk's probe runs within virtio_blk's load; the wait bounds a
	 * device node that devtmpfs makes late, and measures nothing. */
	for (int i = 0; stat(DISK, &st) && i < 500; i++)
		nanosleep(&tick, NULL);
	if (mkdir(DISK_DIR, 0755) && errno != EEXIST)
		return errno;
	if (mount(DISK, DISK_DIR, "ext4", 0, ""))
		return errno;
	if ((mkdir(DISK_DIR "/etc", 0755) && errno != EEXIST) ||
	    (mkdir(DISK_DIR "/etc-work", 0755) && errno != EEXIST))
		return errno;
	if (mount("overlay", "/etc", "overlay", 0,
	          "lowerdir=/etc,upperdir=" DISK_DIR "/etc,workdir=" DISK_DIR "/etc-work"))
		return errno;
	return 0;
}

int main(void)
{
	int err = mount_persistent_etc();

	if (err)
		say("/etc stays volatile (no persistent disk)", err);
	else
		say("/etc is persistent (an overlay on " DISK ")", 0);
	execl("/lib/systemd/systemd", "/lib/systemd/systemd", (char *)NULL);
	say("exec /lib/systemd/systemd", errno);
	return 1;
}
