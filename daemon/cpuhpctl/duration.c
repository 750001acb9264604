/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Durations on the command line and in tables: every option that takes a
 * time (--timeout, --grace, --deadline) reads it here, and every table
 * shows one as cpuhpctl_format_duration() writes it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

/* The units a duration may carry, in milliseconds; none: milliseconds. */
static const struct {
	const char *name;
	uint64_t ms;
} units[] = {
    {"", 1}, {"ms", 1}, {"s", 1000}, {"sec", 1000}, {"m", 60000}, {"min", 60000}, {"h", 3600000},
};

/*
 * @arg as milliseconds: digits, an optional fraction, an optional unit.
 * Return: 0; -EINVAL (not a duration), -ERANGE (over 2^32 ms, or not a
 * whole number of milliseconds: -EDOM).
 */
static int parse(const char *arg, uint64_t *out)
{
	uint64_t whole = 0, frac = 0, scale = 1;
	const char *p = arg;
	size_t ndigits = 0;

	for (; *p >= '0' && *p <= '9'; p++, ndigits++) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > UINT32_MAX)
			return -ERANGE;
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, ndigits++) {
			if (scale >= 1000000000)
				return -EDOM; /* finer than any unit's millisecond */
			frac = frac * 10 + (uint64_t)(*p - '0');
			scale *= 10;
		}
	}
	if (!ndigits)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].name))
			continue;
		if (frac * units[i].ms % scale)
			return -EDOM;
		*out = whole * units[i].ms + frac * units[i].ms / scale;
		return *out > UINT32_MAX ? -ERANGE : 0;
	}
	return -EINVAL;
}

int cpuhpctl_parse_duration(const struct cpuhpctl *ctl, const char *cmd, const char *opt,
                            const char *arg, unsigned min, unsigned max, unsigned *out)
{
	char lo[CPUHPCTL_DURATION_MAX], hi[CPUHPCTL_DURATION_MAX];
	uint64_t ms = 0;
	int err = parse(arg, &ms);

	if (err == -EINVAL)
		return cpuhpctl_usage_error(
		    ctl, cmd, true,
		    "%s wants a time such as 500ms, 5s or 2m (a bare number "
		    "is milliseconds), not '%s'",
		    opt, arg);
	if (err == -EDOM)
		return cpuhpctl_usage_error(
		    ctl, cmd, true, "%s '%s' is not a whole number of milliseconds", opt, arg);
	if (err || ms < min || ms > max)
		return cpuhpctl_usage_error(ctl, cmd, true, "%s '%s' is out of range: %s to %s",
		                            opt, arg, cpuhpctl_format_duration(lo, min),
		                            max == UINT32_MAX ? "49 days"
		                                              : cpuhpctl_format_duration(hi, max));
	*out = (unsigned)ms;
	return 0;
}

const char *cpuhpctl_format_duration(char buf[CPUHPCTL_DURATION_MAX], uint64_t ms)
{
	if (ms < 1000)
		snprintf(buf, CPUHPCTL_DURATION_MAX, "%" PRIu64 "ms", ms);
	else if (ms < 60000)
		snprintf(buf, CPUHPCTL_DURATION_MAX, "%.1fs", (double)(ms / 100) / 10);
	else if (ms < 3600000)
		snprintf(buf, CPUHPCTL_DURATION_MAX, "%" PRIu64 "m%02" PRIu64 "s", ms / 60000,
		         ms / 1000 % 60);
	else
		snprintf(buf, CPUHPCTL_DURATION_MAX, "%" PRIu64 "h%02" PRIu64 "m", ms / 3600000,
		         ms / 60000 % 60);
	return buf;
}
