/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The feature table: the one place that names every feature of cpuhpd and
 * the order in which each of its hooks runs (table.c).  The core walks
 * what it is plugged with (a request's handler, a connection gone, the
 * state text); start.c, stop.c and adopt.c walk the lists below.  Adding a
 * request type, or a feature, is one line per hook here and the feature's
 * own files (README.md, "Adding a request type").
 */
#ifndef CPUHPD_TABLE_H
#define CPUHPD_TABLE_H

struct cpuhpd;
struct cpuhpd_conn;
struct cpuhpd_saved;
struct cpuhpd_saved_conn;

typedef int (*cpuhpd_start_fn)(struct cpuhpd *d);
typedef void (*cpuhpd_daemon_fn)(struct cpuhpd *d);
typedef void (*cpuhpd_adopt_ids_fn)(struct cpuhpd *d, const struct cpuhpd_saved *s);
typedef int (*cpuhpd_adopt_conn_fn)(struct cpuhpd_conn *c, const struct cpuhpd_saved_conn *sc);

/* Every list is NULL-terminated and runs in its order. */
struct cpuhpd_features {
	/* Start, up to the last cpuhpd's clients (adopt.c): each 0 or -errno, logged. */
	const cpuhpd_start_fn *prepare;
	/* Start, after them: what lets the world in. */
	const cpuhpd_start_fn *serve;
	/* An orderly stop begins: cancel what waits, start nothing more. */
	const cpuhpd_daemon_fn *stop;
	/* A restart's stop begins (the fd store keeps the clients): start nothing more. */
	const cpuhpd_daemon_fn *handover;
	/* The stop ends, after the clients were closed: close every handle. */
	const cpuhpd_daemon_fn *close;
	/* A restart: ids go on above the last cpuhpd's. */
	const cpuhpd_adopt_ids_fn *adopt_ids;
	/* A restart: what one connection held, back in each feature (0 or -errno). */
	const cpuhpd_adopt_conn_fn *adopt_conn;
	/* The requests left unanswered handled again, before the connections read on. */
	const cpuhpd_daemon_fn *replayed;
};

extern const struct cpuhpd_features cpuhpd_features;

/*
 * Plug the table into the core: request handlers, connection gone, the
 * state text, the gate's sources, the snapshot's gauges, the view's
 * subscribers, the admission and hotplug hooks.
 */
void cpuhpd_features_plug(struct cpuhpd *d);

/* Run @steps in order. */
void cpuhpd_features_run(struct cpuhpd *d, const cpuhpd_daemon_fn *steps);
/* Run @steps in order up to the first that fails.  Return: 0 or its -errno. */
int cpuhpd_features_start(struct cpuhpd *d, const cpuhpd_start_fn *steps);

#endif /* CPUHPD_TABLE_H */
