/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bring the daemon's services up in the feature table's order
 * (table.c): what it needs, then the previous cpuhpd's clients
 * (adopt.c), then what lets the world in.  One place for main() and the
 * dispatch fuzzer, so that the fuzzer runs the daemon main() runs.
 */
#include "cpuhpd.h"
#include "adopt.h"
#include "table.h"

int cpuhpd_start(struct cpuhpd *d)
{
	int err;

	cpuhpd_features_plug(d);
	err = cpuhpd_features_start(d, cpuhpd_features.prepare);
	/* The previous instance's clients, before anyone new can come in. */
	if (!err)
		err = cpuhpd_adopt(d);
	if (!err)
		err = cpuhpd_features_start(d, cpuhpd_features.serve);
	return err;
}
