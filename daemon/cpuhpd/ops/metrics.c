/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Counters, histograms and the Prometheus text for cpuhpd; see metrics.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cpuhp/version.h>

#include "text.h"

#include "cpuhpd.h"
#include "base/instance.h"
#include "base/log.h"
#include "core/conn.h"
#include "metrics.h"

static const char *const result_names[CPUHPD_HP_NRESULTS] = {
    [CPUHPD_HP_OK] = "ok",           [CPUHPD_HP_PARTIAL] = "partial",
    [CPUHPD_HP_FAILED] = "failed",   [CPUHPD_HP_TIMEOUT] = "timeout",
    [CPUHPD_HP_BUSY] = "busy",       [CPUHPD_HP_CANCELED] = "canceled",
    [CPUHPD_HP_DROPPED] = "dropped", [CPUHPD_HP_ERROR] = "error",
};

static const char *const kind_names[CPUHPD_HP_NKINDS] = {
    [CPUHPD_HP_CPUS] = "cpus",
    [CPUHPD_HP_SMT] = "smt",
};

void cpuhpd_metrics_view_changed(struct cpuhpd *d, const struct cpuhpd_view_change *ch)
{
	if (ch->external && ch->changed)
		d->counters.external_changes++;
}

static void header(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void scalar(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	header(f, name, type, help);
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

/*
 * A label's value, between its quotes.  The text format escapes only \,
 * " and line feed; a value read from sysfs may hold any bytes, so control
 * characters and bytes that are not UTF-8 are first shown as \xHH
 * (proto/text.c), whose backslash the format then doubles: a hostile
 * value can neither end the label nor start a sample of its own.
 */
static void label(FILE *f, const char *v)
{
	char shown[4 * CPUHP_SMT_CONTROL_MAX + 64];

	cpuhp__text_escape(shown, sizeof(shown), v, strlen(v), CPUHP__TEXT_UTF8);
	for (const char *p = shown; *p; p++) {
		if (*p == '\\' || *p == '"')
			fputc('\\', f);
		fputc(*p, f);
	}
}

static void histogram(FILE *f, const char *name, const char *help, const struct cpuhpd_histogram *h)
{
	uint64_t cum = 0;

	header(f, name, "histogram", help);
	for (unsigned i = 0; i < CPUHPD_COUNTERS_NBUCKETS; i++) {
		cum += h->bucket[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name, cpuhpd_counters_bucket_le[i],
		        (unsigned long long)cum);
	}
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->count);
	fprintf(f, "%s_sum %.9f\n%s_count %llu\n", name, h->sum, name,
	        (unsigned long long)h->count);
}

char *cpuhpd_metrics_text(struct cpuhpd *d)
{
	const struct cpuhpd_counters *m = &d->counters;
	struct cpuhpd_snapshot st;
	struct cpuhp_cpuset offline;
	uint64_t timeouts = 0;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	cpuhpd_snapshot_take(d, &st);
	cpuhpd_cpus_offline(&d->view, &offline);

	header(f, "cpuhpd_hotplugs_total", "counter",
	       "Hotplug requests by kind (cpus: SetOnline, smt: SetSmt) and how they ended.");
	for (unsigned k = 0; k < CPUHPD_HP_NKINDS; k++)
		for (unsigned r = 0; r < CPUHPD_HP_NRESULTS; r++)
			fprintf(f, "cpuhpd_hotplugs_total{kind=\"%s\",result=\"%s\"} %llu\n",
			        kind_names[k], result_names[r],
			        (unsigned long long)m->hotplugs[k][r]);
	for (unsigned k = 0; k < CPUHPD_HP_NKINDS; k++)
		timeouts += m->hotplugs[k][CPUHPD_HP_TIMEOUT];
	header(f, "cpuhpd_timeouts_total", "counter",
	       "Requests answered ETIMEDOUT: leases not granted in time, hotplugs that "
	       "waited for leases or readers in vain.");
	fprintf(f, "cpuhpd_timeouts_total{request=\"lease\"} %llu\n",
	        (unsigned long long)m->lease_timeouts);
	fprintf(f, "cpuhpd_timeouts_total{request=\"hotplug\"} %llu\n",
	        (unsigned long long)timeouts);
	header(f, "cpuhpd_cpu_results_total", "counter",
	       "CPUs of the hotplugs that ran: changed, already in the asked state, failed.");
	fprintf(f, "cpuhpd_cpu_results_total{result=\"changed\"} %llu\n",
	        (unsigned long long)m->cpu_changed);
	fprintf(f, "cpuhpd_cpu_results_total{result=\"unchanged\"} %llu\n",
	        (unsigned long long)m->cpu_unchanged);
	fprintf(f, "cpuhpd_cpu_results_total{result=\"failed\"} %llu\n",
	        (unsigned long long)m->cpu_failed);
	scalar(f, "cpuhpd_leases_granted_total", "counter", "Socket leases granted.",
	       m->leases_granted);
	scalar(f, "cpuhpd_leases_busy_total", "counter",
	       "Lease requests without a timeout refused (EAGAIN) because a hotplug was in "
	       "the way.",
	       m->lease_busy);
	scalar(f, "cpuhpd_external_changes_total", "counter",
	       "Times the online set changed outside cpuhpd (uevents).", m->external_changes);
	scalar(f, "cpuhpd_bypasses_total", "counter",
	       "CPUs that changed while leases were held, outside cpuhpd.", st.bypasses);
	scalar(f, "cpuhpd_lease_revocations_total", "counter", "Leases revoked by policy.",
	       st.revocations);
	scalar(f, "cpuhpd_plan_conflicts_total", "counter",
	       "Changes behind cpuhpd's back that contradicted its plan (cpuhpd.conf(5)).",
	       d->plan.conflicts);
	scalar(f, "cpuhpd_plan_hotplugs_total", "counter",
	       "Hotplugs cpuhpd made in its own name to apply its plan or bring new CPUs "
	       "online.",
	       d->plan.hotplugs);
	header(f, "cpuhpd_errors_total", "counter", "Error replies sent to clients, by code.");
	for (unsigned code = 0; code < 64; code++) {
		const ProtobufCEnumValue *v;

		if (!m->errors[code])
			continue;
		v = protobuf_c_enum_descriptor_get_value(&cpuhp__error_code__descriptor, (int)code);
		fprintf(f, "cpuhpd_errors_total{code=\"%s\"} %llu\n",
		        v ? v->name + 4 : "UNKNOWN", /* "ERR_EPERM" -> "EPERM" */
		        (unsigned long long)m->errors[code]);
	}
	histogram(f, "cpuhpd_lease_wait_seconds",
	          "From a socket lease request's arrival to its grant (0 when nothing was in "
	          "the way).",
	          &m->lease_wait);
	histogram(f, "cpuhpd_hotplug_duration_seconds",
	          "From a hotplug request's arrival to its answer, waiting for leases "
	          "included.",
	          &m->hotplug_duration);
	histogram(f, "cpuhpd_writer_hold_seconds",
	          "How long cpuhpd held the hotplug lock to write sysfs, per hotplug.",
	          &m->writer_hold);
	header(f, "cpuhpd_leases_held", "gauge",
	       "Leases held now: socket ones, and fast ones (a snapshot of the shared counters).");
	fprintf(f, "cpuhpd_leases_held{kind=\"socket\"} %u\n", st.leases_held);
	fprintf(f, "cpuhpd_leases_held{kind=\"fast\"} %u\n", st.fast_held);
	scalar(f, "cpuhpd_leases_waiting", "gauge", "Lease requests waiting behind a hotplug.",
	       st.leases_waiting);
	scalar(f, "cpuhpd_hotplugs_pending", "gauge",
	       "Hotplug requests queued, the running one included.", st.hotplugs_queued);
	scalar(f, "cpuhpd_freezes_held", "gauge", "Hotplug freezes held or pending.", st.freezes);
	scalar(f, "cpuhpd_connections", "gauge", "Client connections.", st.connections);
	header(f, "cpuhpd_cpus", "gauge", "CPUs by state, as cpuhpd last read them.");
	fprintf(f, "cpuhpd_cpus{state=\"online\"} %u\n", cpuhp_cpuset_count(&d->view.online));
	fprintf(f, "cpuhpd_cpus{state=\"offline\"} %u\n", cpuhp_cpuset_count(&offline));
	fprintf(f, "cpuhpd_cpus{state=\"possible\"} %u\n", cpuhp_cpuset_count(&d->view.possible));
	fprintf(f, "cpuhpd_cpus{state=\"present\"} %u\n", cpuhp_cpuset_count(&d->view.present));
	if (d->view.smt_control[0]) {
		header(f, "cpuhpd_smt_control", "gauge",
		       "1 for the word smt/control says (on, off, forceoff, notsupported, ...).");
		fputs("cpuhpd_smt_control{control=\"", f);
		label(f, d->view.smt_control);
		fputs("\"} 1\n", f);
		scalar(f, "cpuhpd_smt_active", "gauge",
		       "1 if some core runs more than one hardware thread (smt/active).",
		       d->view.smt_active);
	}
	header(f, "cpuhpd_info", "gauge", "The daemon's version.");
	fputs("cpuhpd_info{version=\"", f);
	label(f, CPUHP_VERSION_STRING);
	fputs("\"} 1\n", f);
	/* The convention: uptime is time() minus this, in the query. */
	header(f, "process_start_time_seconds", "gauge",
	       "When cpuhpd started, in seconds since the Unix epoch.");
	fprintf(f, "process_start_time_seconds %.3f\n", d->metrics.started_s);
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}

/*
 * The temporary file, made new and ours.  It is opened on the loop, so it
 * must never block: O_CREAT|O_EXCL never opens what is there already (a
 * FIFO would block the open, then every request, until someone read it),
 * O_NOFOLLOW|O_NONBLOCK for good measure.  A file of ours left by a cpuhpd
 * that died while writing goes; anything else there is refused, so the
 * published file is always a regular file cpuhpd made.
 * Return: the fd, or -errno with @why set.
 */
static int open_tmp(const char *tmp, char *why, size_t size)
{
	const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
	struct stat st;
	int fd = open(tmp, flags, 0644);

	if (fd < 0 && errno == EEXIST && lstat(tmp, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && unlink(tmp) == 0)
		fd = open(tmp, flags, 0644);
	if (fd < 0 && errno == EEXIST) {
		snprintf(why, size, "%s is there and is not a file cpuhpd left: remove it", tmp);
		return -EEXIST;
	}
	if (fd < 0) {
		snprintf(why, size, "%s: %s", tmp, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(why, size, "%s is not a regular file of cpuhpd's", tmp);
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Write all of @text to @fd.  Return: 0 or an errno. */
static int write_all(int fd, const char *text)
{
	size_t len = strlen(text), off = 0;

	while (off < len) {
		ssize_t n = write(fd, text + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? errno : EIO;
		off += (size_t)n;
	}
	return 0;
}

void cpuhpd_metrics_write(struct cpuhpd *d)
{
	const char *path = d->opt.metrics_file;
	char tmp[PATH_MAX + 8], why[PATH_MAX + 256] = "";
	char *text = NULL, *dir;
	int fd, err = 0;

	if (!path)
		return;
	/* The directory may have come, gone or changed hands since the start. */
	dir = cpuhpd_dirname(path);
	if (!dir) {
		err = ENOMEM;
		goto out;
	}
	err = -cpuhpd_dir_trusted(dir, "--metrics-file", why, sizeof(why));
	free(dir);
	if (err)
		goto out;
	text = cpuhpd_metrics_text(d);
	if (!text) {
		err = ENOMEM;
		goto out;
	}
	/* node_exporter reads *.prom only: the temporary name is never half read. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open_tmp(tmp, why, sizeof(why));
	if (fd < 0) {
		err = -fd;
		goto out;
	}
	err = write_all(fd, text);
	if (close(fd) && !err)
		err = errno;
	if (!err && rename(tmp, path))
		err = errno;
	if (err)
		unlink(tmp);
out:
	free(text);
	if (err && !d->metrics.file_failed)
		cpuhpd_warn("cannot write --metrics-file %s: %s (said once, until it works again)",
		            path, why[0] ? why : strerror(err));
	else if (!err && d->metrics.file_failed)
		cpuhpd_info("--metrics-file %s written again", path);
	d->metrics.file_failed = err != 0;
}

static void timer_cb(uv_timer_t *t)
{
	struct cpuhpd *d = cpuhpd_container_of(t, struct cpuhpd, metrics.timer);

	cpuhpd_metrics_write(d);
}

int cpuhpd_metrics_start(struct cpuhpd *d)
{
	int err;

	struct timespec ts;
	char *dir;

	clock_gettime(CLOCK_REALTIME, &ts);
	d->metrics.started_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (!d->opt.metrics_file)
		return 0;
	/* As for the socket: a directory another user may write is refused at start. */
	dir = cpuhpd_dirname(d->opt.metrics_file);
	if (!dir)
		return UV_ENOMEM;
	err = access(dir, F_OK) == 0 ? cpuhpd_dir_check(dir, "--metrics-file") : 0;
	free(dir);
	if (err)
		return err;
	cpuhpd_metrics_write(d);
	if (!d->opt.metrics_interval_ms)
		return 0;
	err = uv_timer_init(d->loop, &d->metrics.timer);
	if (!err) {
		d->metrics.timer_on = true;
		err = uv_timer_start(&d->metrics.timer, timer_cb, d->opt.metrics_interval_ms,
		                     d->opt.metrics_interval_ms);
	}
	if (err)
		cpuhpd_err("cannot start the --metrics-file timer: %s", uv_strerror(err));
	return err;
}

void cpuhpd_metrics_stop(struct cpuhpd *d)
{
	cpuhpd_metrics_write(d);
	if (d->metrics.timer_on) {
		uv_close((uv_handle_t *)&d->metrics.timer, NULL);
		d->metrics.timer_on = false;
	}
}

void cpuhpd_metrics_request(struct cpuhpd_conn *c, const Cpuhp__Request *req)
{
	uint64_t id = req->id;
	Cpuhp__Response r = CPUHP__RESPONSE__INIT;
	Cpuhp__Metrics m = CPUHP__METRICS__INIT;
	char *text = cpuhpd_metrics_text(c->d);

	if (!text) {
		cpuhpd_conn_send_error(c, id, ENOMEM, "cpuhpd is out of memory");
		return;
	}
	m.text = text;
	r.id = id;
	r.body_case = CPUHP__RESPONSE__BODY_METRICS;
	r.metrics = &m;
	cpuhpd_conn_send(c, &r);
	free(text);
}
