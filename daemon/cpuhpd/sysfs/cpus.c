/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's view of possible, present and online CPUs; see cpus.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpus.h"

int cpuhpd_cpus_read(const char *root, struct cpuhpd_cpus *out, const char **which)
{
	struct cpuhpd_cpus v;
	int cpu = -1;
	int err;

	err = cpuhp_sysfs_read_mask(root, CPUHP_MASK_POSSIBLE, &v.possible);
	if (err) {
		*which = "possible";
		return err;
	}
	err = cpuhp_sysfs_read_mask(root, CPUHP_MASK_PRESENT, &v.present);
	if (err) {
		*which = "present";
		return err;
	}
	err = cpuhp_sysfs_read_mask(root, CPUHP_MASK_ONLINE, &v.online);
	if (err) {
		*which = "online";
		return err;
	}
	/*
	 * A cpuN/online that cannot be read (-ENOENT: not hotpluggable; or a
	 * broken file) leaves the mask's answer in place: the daemon must still
	 * report a state for that CPU, and a write to it will say what is wrong.
	 */
	while ((cpu = cpuhp_cpuset_next(&v.present, cpu)) >= 0) {
		bool on;

		if (cpuhp_sysfs_read_online(root, (unsigned)cpu, &on))
			continue;
		if (on)
			cpuhp_cpuset_add(&v.online, (unsigned)cpu);
		else
			cpuhp_cpuset_del(&v.online, (unsigned)cpu);
	}
	/* No smt/ (an older kernel, most simulated trees) is not an error: SMT is then unknown. */
	if (cpuhp_sysfs_read_smt(root, v.smt_control, &v.smt_active)) {
		v.smt_control[0] = '\0';
		v.smt_active = false;
	}
	*out = v;
	return 0;
}

int cpuhpd_cpus_read_some(const char *root, const struct cpuhp_cpuset *cpus,
                          struct cpuhpd_cpus *out, const char **which)
{
	struct cpuhp_cpuset mask;
	bool have_mask = false;
	int cpu = -1;
	int err;

	memset(out, 0, sizeof(*out));
	err = cpuhp_sysfs_read_mask(root, CPUHP_MASK_POSSIBLE, &out->possible);
	if (err) {
		*which = "possible";
		return err;
	}
	err = cpuhp_sysfs_read_mask(root, CPUHP_MASK_PRESENT, &out->present);
	if (err) {
		*which = "present";
		return err;
	}
	/* As cpuhpd_cpus_read(): the file where it can be read, else the mask (read once). */
	while ((cpu = cpuhp_cpuset_next(cpus, cpu)) >= 0) {
		bool on;

		if (!cpuhp_cpuset_has(&out->present, (unsigned)cpu))
			continue;
		if (cpuhp_sysfs_read_online(root, (unsigned)cpu, &on)) {
			if (!have_mask) {
				err = cpuhp_sysfs_read_mask(root, CPUHP_MASK_ONLINE, &mask);
				if (err) {
					*which = "online";
					return err;
				}
				have_mask = true;
			}
			on = cpuhp_cpuset_has(&mask, (unsigned)cpu);
		}
		if (on)
			cpuhp_cpuset_add(&out->online, (unsigned)cpu);
	}
	return 0;
}

char *cpuhpd_cpus_to_str(const struct cpuhp_cpuset *set)
{
	/* Each CPU costs at most "8191," : the worst case (no ranges) fits. */
	size_t len = (size_t)cpuhp_cpuset_count(set) * 5 + 1;
	char *s = malloc(len);

	if (s && cpuhp_cpuset_format(set, s, len) < 0) {
		free(s);
		return NULL;
	}
	return s;
}

void cpuhpd_cpus_offline(const struct cpuhpd_cpus *v, struct cpuhp_cpuset *out)
{
	int cpu = -1;

	cpuhp_cpuset_zero(out);
	while ((cpu = cpuhp_cpuset_next(&v->possible, cpu)) >= 0)
		if (!cpuhp_cpuset_has(&v->online, (unsigned)cpu))
			cpuhp_cpuset_add(out, (unsigned)cpu);
}

void cpuhpd_cpus_smt_secondaries(const char *root, const struct cpuhpd_cpus *v,
                                 struct cpuhp_cpuset *out)
{
	int cpu = -1;

	cpuhp_cpuset_zero(out);
	while ((cpu = cpuhp_cpuset_next(&v->present, cpu)) >= 0) {
		struct cpuhp_cpuset sib;
		int first, s;

		if (cpuhp_sysfs_read_siblings(root, (unsigned)cpu, &sib))
			continue;
		first = cpuhp_cpuset_next(&sib, -1);
		for (s = cpuhp_cpuset_next(&sib, first); s >= 0; s = cpuhp_cpuset_next(&sib, s))
			if (cpuhp_cpuset_has(&v->present, (unsigned)s))
				cpuhp_cpuset_add(out, (unsigned)s);
	}
}

int cpuhpd_cpus_smt_changeable(const char *now)
{
	if (!now[0])
		return -ENOENT;
	if (!strcmp(now, "notsupported") || !strcmp(now, "notimplemented"))
		return -ENODEV;
	if (!strcmp(now, "forceoff"))
		return -EPERM;
	return 0;
}

#define WORDS (sizeof(((struct cpuhp_cpuset *)0)->bits) / sizeof(uint64_t))

void cpuhpd_cpus_and(struct cpuhp_cpuset *out, const struct cpuhp_cpuset *a,
                     const struct cpuhp_cpuset *b)
{
	for (size_t i = 0; i < WORDS; i++)
		out->bits[i] = a->bits[i] & b->bits[i];
}

void cpuhpd_cpus_andnot(struct cpuhp_cpuset *out, const struct cpuhp_cpuset *a,
                        const struct cpuhp_cpuset *b)
{
	for (size_t i = 0; i < WORDS; i++)
		out->bits[i] = a->bits[i] & ~b->bits[i];
}

void cpuhpd_cpus_or(struct cpuhp_cpuset *out, const struct cpuhp_cpuset *a,
                    const struct cpuhp_cpuset *b)
{
	for (size_t i = 0; i < WORDS; i++)
		out->bits[i] = a->bits[i] | b->bits[i];
}

void cpuhpd_cpus_xor(struct cpuhp_cpuset *out, const struct cpuhp_cpuset *a,
                     const struct cpuhp_cpuset *b)
{
	for (size_t i = 0; i < WORDS; i++)
		out->bits[i] = a->bits[i] ^ b->bits[i];
}
