/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The daemon's metrics text: cpuhp_client_metrics(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-internal.h"

static int take_metrics(struct cpuhp_client *c, const Cpuhp__Response *resp, void *arg)
{
	char *s = strdup(resp->metrics->text ? resp->metrics->text : "");

	if (!s)
		return cpuhp__client_error(c, -ENOMEM, "out of memory for the metrics");
	*(char **)arg = s;
	return 0;
}

int cpuhp_client_metrics(struct cpuhp_client *c, char **text)
{
	Cpuhp__Request req = CPUHP__REQUEST__INIT;
	Cpuhp__MetricsRequest mr = CPUHP__METRICS_REQUEST__INIT;

	req.body_case = CPUHP__REQUEST__BODY_METRICS;
	req.metrics = &mr;
	return cpuhp__client_request(c, &req, CPUHP__RESPONSE__BODY_METRICS, take_metrics, text);
}
