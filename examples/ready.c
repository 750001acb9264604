/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ready: a lease holder that lets go when a hotplug waits for it.
 *
 * It holds a cpuhpd lease around a long piece of work (here, a batch of
 * steps of 10 ms each, --hold MS in all), sized by the online CPUs.  Between
 * steps it looks at its connection without waiting: when cpuhpd says a
 * hotplug is pending (CPUHP_CLIENT_EVENT_HOTPLUG_PENDING, sent to every
 * holder of a lease the hotplug waits for), it stops at the next step,
 * releases the lease, and waits for the hotplug to be done before it takes
 * a new lease and sizes its work again.  The hotplug then takes about the
 * notice's round trip and one step, not the rest of the batch.
 *
 * With --delay MS its leases are delay leases: a holder that does not let
 * go within MS of the notice has its lease revoked by cpuhpd.  The program
 * says so if that happens (it does not, as long as a step is shorter).
 *
 * Build: cc ready.c $(pkg-config --cflags --libs libcpuhp-client)
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuhp/client.h>

#define STEP_MS 10

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: ready [--socket PATH] [--hold MS] [--batches N] [--delay MS]\n"
	        "Hold a cpuhpd lease around a batch of work sized by the online CPUs, and let\n"
	        "go early when a hotplug waits for it (cpuhpd's notice); then take a new\n"
	        "lease and size the work again.\n"
	        "\n"
	        "  -s, --socket PATH  cpuhpd's socket (default: $%s if set, else %s)\n"
	        "  -H, --hold MS      how long a batch holds the lease (default 2000)\n"
	        "  -b, --batches N    batches to run, then exit (default 2)\n"
	        "  -D, --delay MS     take delay leases of MS (revoked MS after a notice)\n"
	        "  -h, --help         this help\n",
	        CPUHP_CLIENT_SOCKET_ENV, CPUHP_CLIENT_DEFAULT_SOCKET);
}

static int fail(struct cpuhp_client *c, const char *what, int err)
{
	const char *msg = c ? cpuhp_client_last_message(c) : "";

	fprintf(stderr, "ready: %s: %s\n", what, *msg ? msg : strerror(-err));
	return 1;
}

/* One step of the work: 10 ms of it. */
static void step(void)
{
	struct timespec ts = {.tv_nsec = STEP_MS * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * What arrived on the connection, without waiting.  Return: 1 when a
 * hotplug waits for our lease (*@seq its number), 0 otherwise, -errno.
 */
static int notices(struct cpuhp_client *c, uint64_t *seq)
{
	static struct cpuhp_client_event ev; /* its CPU sets are large: not on the stack */
	int pending = 0, err;

	while ((err = cpuhp_client_next_event(c, 0, &ev)) == 0) {
		if (ev.type == CPUHP_CLIENT_EVENT_HOTPLUG_PENDING) {
			pending = 1;
			*seq = ev.hotplug_id;
		} else if (ev.type == CPUHP_CLIENT_EVENT_LEASE_REVOKED) {
			printf(
			    "ready: cpuhpd revoked our lease (its delay was over): stopping now\n");
			pending = 1;
		}
	}
	return err == -EAGAIN ? pending : err;
}

/* A batch under one lease.  Return: 0 when done, 1 when cut short for a hotplug, -errno. */
static int batch(struct cpuhp_client *c, unsigned hold_ms, unsigned n)
{
	struct cpuhp_client_status st;
	char list[CPUHP_CPUSET_LIST_MAX];
	uint64_t lease, seq = 0;
	int err, cut = 0;

	err = cpuhp_client_lease_acquire(c, 60000, &lease);
	if (err) {
		fail(c, "no lease", err);
		return err;
	}
	/* Sized now: until the release the set cannot change. */
	err = cpuhp_client_status(c, &st);
	if (err) {
		fail(c, "status", err);
		cpuhp_client_lease_release(c, lease);
		return err;
	}
	cpuhp_cpuset_format(&st.online, list, sizeof(list));
	printf("ready: batch %u: lease held, work sized for online CPUs %s\n", n, list);
	fflush(stdout);
	for (unsigned done = 0; done < hold_ms; done += STEP_MS) {
		int p = notices(c, &seq);

		if (p < 0) {
			fail(c, "reading cpuhpd's notices", p);
			cpuhp_client_lease_release(c, lease);
			return p;
		}
		if (p) {
			cut = 1;
			break;
		}
		step();
	}
	err = cpuhp_client_lease_release(c, lease);
	if (cut)
		printf("ready: batch %u: hotplug #%llu is pending: released the lease early%s\n", n,
		       (unsigned long long)seq, err == -ETIME ? " (it was revoked already)" : "");
	else
		printf("ready: batch %u: done, lease released\n", n);
	fflush(stdout);
	if (err && err != -ETIME) {
		fail(c, "release", err);
		return err;
	}
	return cut;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"socket", required_argument, NULL, 's'},  {"hold", required_argument, NULL, 'H'},
	    {"batches", required_argument, NULL, 'b'}, {"delay", required_argument, NULL, 'D'},
	    {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0},
	};
	unsigned long hold_ms = 2000, batches = 2, delay_ms = 0, *arg;
	const char *path = NULL;
	struct cpuhp_client *c;
	int opt, err, ret = 0;
	char *end;

	while ((opt = getopt_long(argc, argv, "s:H:b:D:h", opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			path = optarg;
			break;
		case 'H':
		case 'b':
		case 'D':
			arg = opt == 'H' ? &hold_ms : opt == 'b' ? &batches : &delay_ms;
			errno = 0;
			*arg = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || *optarg == '-' ||
			    *arg > 0xffffffffUL) {
				fprintf(stderr, "ready: -%c wants a number, not '%s'\n", opt,
				        optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	err = cpuhp_client_connect(path, &c);
	if (err) {
		fprintf(stderr, "ready: cannot connect to cpuhpd at %s: %s (is it running?)\n",
		        path ? path : cpuhp_client_socket_path(), strerror(-err));
		return 1;
	}
	if (delay_ms) {
		unsigned got;

		err = cpuhp_client_set_lease_delay(c, (unsigned)delay_ms, &got);
		if (err) {
			ret = fail(c, "--delay", err);
			goto out;
		}
		printf("ready: delay leases of %u ms\n", got);
	}
	for (unsigned long n = 1; n <= batches; n++) {
		err = batch(c, (unsigned)hold_ms, (unsigned)n);
		if (err < 0) {
			ret = 1;
			break;
		}
	}
out:
	cpuhp_client_close(c);
	return ret;
}
