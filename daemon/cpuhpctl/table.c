/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Listings (leases, states, cpus) the way util-linux prints them: -o/--output
 * picks the columns (a list, or +LIST to add to the default ones),
 * --raw and --noheadings print for scripts, and --help lists the
 * columns.  The table is libsmartcols', which shows control characters
 * and invalid UTF-8 in a cell as \xHH (in --raw, blanks too), as lsblk
 * does: cells get the bytes as they came.  --json is written here, not by
 * libsmartcols (whose JSON lets invalid UTF-8, DEL and C1 controls
 * through): an array of one object per row, keyed by the columns'
 * lower-case names, as lscpu -J prints it, with numbers as numbers and CPU
 * lists as arrays, each string through json.c.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <libsmartcols.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl.h"

struct cpuhpctl_table {
	const char *name;
	const struct cpuhpctl_column *cols;
	int sel[CPUHPCTL_COLS_MAX]; /* the columns shown, in order */
	size_t nsel;
	int place[CPUHPCTL_COLS_MAX]; /* a column's index in @sel, -1 if not shown */
	bool json;
	struct libscols_table *tb;  /* without --json */
	struct libscols_line *line; /* its current row */
	char **cells;               /* --json: nsel JSON values per row; NULL is null */
	size_t nrows, cap;
	bool nomem;
};

/* --- the command line ----------------------------------------------------------- */

static int find_column(const struct cpuhpctl_column *cols, size_t ncols, const char *name,
                       size_t len)
{
	for (size_t i = 0; i < ncols; i++)
		if (strlen(cols[i].name) == len && !strncasecmp(cols[i].name, name, len))
			return (int)i;
	return -1;
}

static void add_defaults(struct cpuhpctl_listing *l, const struct cpuhpctl_column *cols,
                         size_t ncols, unsigned flag)
{
	for (size_t i = 0; i < ncols && l->nsel < CPUHPCTL_COLS_MAX; i++)
		if (cols[i].flags & flag)
			l->sel[l->nsel++] = (int)i;
}

/* -o @arg: "WHO,PID" or "+WHY" (the defaults, then WHY).  Return: -1, or the exit code. */
static int parse_output(struct cpuhpctl *ctl, const char *cmd, const char *arg,
                        const struct cpuhpctl_column *cols, size_t ncols,
                        struct cpuhpctl_listing *l)
{
	const char *p = arg;

	l->nsel = 0;
	l->plus = *p == '+';
	p += l->plus;
	while (*p) {
		size_t len = strcspn(p, ",");
		int col = find_column(cols, ncols, p, len);

		if (col < 0)
			return cpuhpctl_usage_error(ctl, cmd, true, "unknown column '%.*s'",
			                            (int)len, p);
		if (l->nsel == CPUHPCTL_COLS_MAX)
			return cpuhpctl_usage_error(ctl, cmd, false, "at most %d columns",
			                            CPUHPCTL_COLS_MAX);
		l->sel[l->nsel++] = col;
		p += len + (p[len] == ',');
	}
	if (!l->nsel)
		return cpuhpctl_usage_error(ctl, cmd, true, "--output names no column");
	return -1;
}

/* "WHO,PID,..." for the columns with @flag. */
static void print_defaults(FILE *f, const struct cpuhpctl_column *cols, size_t ncols, unsigned flag)
{
	const char *sep = "";

	for (size_t i = 0; i < ncols; i++)
		if (cols[i].flags & flag) {
			fprintf(f, "%s%s", sep, cols[i].name);
			sep = ",";
		}
}

static void columns_help(FILE *f, const struct cpuhpctl_column *cols, size_t ncols)
{
	int width = 0;

	for (size_t i = 0; i < ncols; i++)
		if ((int)strlen(cols[i].name) > width)
			width = (int)strlen(cols[i].name);
	fprintf(f, "\nAvailable output columns (by default ");
	print_defaults(f, cols, ncols, CPUHPCTL_COL_TEXT);
	fprintf(f, ";\nwith --json ");
	print_defaults(f, cols, ncols, CPUHPCTL_COL_JSON);
	fprintf(f, "):\n");
	for (size_t i = 0; i < ncols; i++)
		fprintf(f, " %*s  %s\n", width, cols[i].name, cols[i].help);
}

int cpuhpctl_parse_listing(struct cpuhpctl *ctl, int argc, char **argv, void (*help)(FILE *),
                           const struct cpuhpctl_column *cols, size_t ncols,
                           struct cpuhpctl_listing *l)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'}, {"raw", no_argument, NULL, 'r'},
	    {"noheadings", no_argument, NULL, 'n'},   {"json", no_argument, NULL, 'J'},
	    {"help", no_argument, NULL, 'h'},         {0},
	};
	int opt, ret;

	*l = (struct cpuhpctl_listing){0};
	while ((opt = cpuhpctl_getopt(ctl, argc, argv, ":o:rnJjh", opts, argv[0])) != -1) {
		switch (opt) {
		case 'o':
			ret = parse_output(ctl, argv[0], optarg, cols, ncols, l);
			if (ret >= 0)
				return ret;
			break;
		case 'r':
			l->raw = true;
			break;
		case 'n':
			l->noheadings = true;
			break;
		case 'h':
			help(stdout);
			columns_help(stdout, cols, ncols);
			return CPUHPCTL_EXIT_OK;
		default:
			return CPUHPCTL_EXIT_USAGE;
		}
	}
	if (optind < argc)
		return cpuhpctl_usage_error(ctl, argv[0], true, "unexpected argument '%s'",
		                            argv[optind]);
	return -1;
}

/* --- the table ------------------------------------------------------------------- */

struct cpuhpctl_table *cpuhpctl_table_new(const struct cpuhpctl *ctl, const char *name,
                                          const struct cpuhpctl_column *cols, size_t ncols,
                                          const struct cpuhpctl_listing *l)
{
	struct cpuhpctl_table *t = calloc(1, sizeof(*t));
	struct cpuhpctl_listing chosen = {0};

	if (!t)
		return NULL;
	t->name = name;
	t->cols = cols;
	t->json = ctl->json;
	/* The defaults, for --json the scripting set; -o +LIST adds to them. */
	if (!l->nsel || l->plus)
		add_defaults(&chosen, cols, ncols, t->json ? CPUHPCTL_COL_JSON : CPUHPCTL_COL_TEXT);
	for (size_t i = 0; i < l->nsel && chosen.nsel < CPUHPCTL_COLS_MAX; i++)
		chosen.sel[chosen.nsel++] = l->sel[i];
	memcpy(t->sel, chosen.sel, sizeof(t->sel));
	t->nsel = chosen.nsel;
	for (size_t i = 0; i < CPUHPCTL_COLS_MAX; i++)
		t->place[i] = -1;
	/* A column named twice is shown twice; its cells are set once, at its first place. */
	for (size_t i = t->nsel; i-- > 0;)
		t->place[t->sel[i]] = (int)i;
	if (t->json)
		return t;
	t->tb = scols_new_table();
	if (!t->tb)
		goto fail;
	scols_table_enable_raw(t->tb, l->raw);
	scols_table_enable_noheadings(t->tb, l->noheadings);
	for (size_t i = 0; i < t->nsel; i++) {
		const struct cpuhpctl_column *c = &cols[t->sel[i]];
		int flags = (c->flags & CPUHPCTL_COL_RIGHT ? SCOLS_FL_RIGHT : 0) |
		            (c->flags & CPUHPCTL_COL_TRUNC ? SCOLS_FL_TRUNC : 0);

		if (!scols_table_new_column(t->tb, c->name, 0, flags))
			goto fail;
	}
	return t;
fail:
	cpuhpctl_table_free(t);
	return NULL;
}

int cpuhpctl_table_row(struct cpuhpctl_table *t)
{
	if (!t->json) {
		t->line = scols_table_new_line(t->tb, NULL);
		t->nomem |= !t->line;
		return t->line ? 0 : -ENOMEM;
	}
	if (t->nrows == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		char **cells = realloc(t->cells, cap * t->nsel * sizeof(*cells));

		if (!cells) {
			t->nomem = true;
			return -ENOMEM;
		}
		t->cells = cells;
		t->cap = cap;
	}
	memset(t->cells + t->nrows * t->nsel, 0, t->nsel * sizeof(*t->cells));
	t->nrows++;
	return 0;
}

/* Set cell @col of the current row: @text in the table, @json (taken; NULL: ENOMEM) in JSON. */
static void set(struct cpuhpctl_table *t, int col, const char *text, char *json)
{
	int at = col >= 0 && col < CPUHPCTL_COLS_MAX ? t->place[col] : -1;

	if (at < 0 || (t->json ? !t->nrows : !t->line)) {
		free(json);
		return;
	}
	if (!t->json) {
		t->nomem |= scols_line_set_data(t->line, (size_t)at, text) != 0;
		return;
	}
	t->nomem |= !json;
	free(t->cells[(t->nrows - 1) * t->nsel + (size_t)at]);
	t->cells[(t->nrows - 1) * t->nsel + (size_t)at] = json;
}

void cpuhpctl_table_str(struct cpuhpctl_table *t, int col, const char *s)
{
	set(t, col, s, t->json ? cpuhpctl_json_quote(s) : NULL);
}

void cpuhpctl_table_num(struct cpuhpctl_table *t, int col, long long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%lld", v);
	set(t, col, buf, t->json ? strdup(buf) : NULL);
}

void cpuhpctl_table_cpus(struct cpuhpctl_table *t, int col, const struct cpuhp_cpuset *set_)
{
	char *text = NULL, *json = NULL;
	size_t len;
	FILE *f;

	if (!t->json) {
		text = cpuhpctl_format(set_);
		set(t, col, text ? text : "?", NULL);
		free(text);
		return;
	}
	f = open_memstream(&json, &len);
	if (f) {
		cpuhpctl_json_cpus(f, set_);
		if (fclose(f)) {
			free(json);
			json = NULL;
		}
	}
	set(t, col, NULL, json);
}

void cpuhpctl_table_bool(struct cpuhpctl_table *t, int col, bool v)
{
	set(t, col, v ? "yes" : "no", t->json ? strdup(v ? "true" : "false") : NULL);
}

void cpuhpctl_table_none(struct cpuhpctl_table *t, int col)
{
	set(t, col, "-", t->json ? strdup("null") : NULL);
}

void cpuhpctl_table_strs(struct cpuhpctl_table *t, int col, const char *const *v, size_t n)
{
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	if (f) {
		if (t->json)
			putc('[', f);
		for (size_t i = 0; i < n; i++) {
			if (i)
				putc(',', f);
			if (t->json)
				cpuhpctl_json_string(f, v[i]);
			else
				fputs(v[i], f);
		}
		if (t->json)
			putc(']', f);
		if (fclose(f)) {
			free(buf);
			buf = NULL;
		}
	}
	if (t->json) {
		set(t, col, NULL, buf);
		return;
	}
	t->nomem |= !buf;
	set(t, col, buf ? buf : "", NULL);
	free(buf);
}

void cpuhpctl_table_ms(struct cpuhpctl_table *t, int col, uint64_t ms)
{
	char buf[CPUHPCTL_DURATION_MAX];

	if (t->json) {
		snprintf(buf, sizeof(buf), "%" PRIu64, ms);
		set(t, col, NULL, strdup(buf));
	} else {
		set(t, col, cpuhpctl_format_duration(buf, ms), NULL);
	}
}

int cpuhpctl_table_print(struct cpuhpctl_table *t)
{
	if (t->nomem)
		return -ENOMEM;
	if (!t->json)
		return scols_print_table(t->tb) ? -EIO : 0;
	/* The table's name is a JSON key of the caller's object: quoted like any string. */
	putchar('{');
	cpuhpctl_json_string(stdout, t->name);
	fputs(":[", stdout);
	for (size_t r = 0; r < t->nrows; r++) {
		fputs(r ? ",{" : "{", stdout);
		for (size_t i = 0; i < t->nsel; i++) {
			const char *name = t->cols[t->sel[i]].name;
			const char *v = t->cells[r * t->nsel + (size_t)t->place[t->sel[i]]];

			fputs(i ? ",\"" : "\"", stdout);
			for (; *name; name++)
				putchar(*name >= 'A' && *name <= 'Z' ? *name - 'A' + 'a' : *name);
			printf("\":%s", v ? v : "null");
		}
		putchar('}');
	}
	putchar(']');
	return 0;
}

void cpuhpctl_table_free(struct cpuhpctl_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->nsel; i++)
		free(t->cells[i]);
	free(t->cells);
	scols_unref_table(t->tb);
	free(t);
}
