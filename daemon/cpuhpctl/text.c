/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What cpuhpctl prints for people: strings from clients and from the daemon
 * (who, why, process and state names, the daemon's messages that quote
 * them) pass proto/text.c's encoder, so that no client writes control
 * sequences to an operator's terminal or forges a line.  The locale says
 * whether the terminal takes UTF-8; libsmartcols, which prints the tables,
 * decides the same way.
 */
#include <langinfo.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "text.h"

static unsigned text_flags;

void cpuhpctl_text_init(void)
{
	/*
	 * Only LC_CTYPE: the character set and display widths.  LC_NUMERIC
	 * would put decimal commas into JSON numbers.
	 */
	setlocale(LC_CTYPE, "");
	if (!strcmp(nl_langinfo(CODESET), "UTF-8"))
		text_flags = CPUHP__TEXT_UTF8;
}

const char *cpuhpctl_safe(const char *s)
{
	/* A few at a time, for one message that quotes several strings. */
	static char *ring[8];
	static size_t cap[8];
	static unsigned next;
	unsigned i = next++ % 8;
	size_t len, n;

	s = s ? s : "";
	len = strlen(s);
	n = cpuhp__text_escape(ring[i], cap[i], s, len, text_flags);
	if (n >= cap[i]) {
		char *grown = realloc(ring[i], n + 1);

		if (!grown)
			return "(out of memory)";
		ring[i] = grown;
		cap[i] = n + 1;
		cpuhp__text_escape(ring[i], cap[i], s, len, text_flags);
	}
	return ring[i];
}
