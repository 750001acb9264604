/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A restart with the fd store (fdstore.h): rebuild every connection of the
 * previous cpuhpd from its stored socket and the state text, then let each
 * go on where it stopped.  What happens to each kind of thing is in
 * README.md, "Restart".
 *
 * Loop thread only, at start.
 */
#ifndef CPUHPD_ADOPT_H
#define CPUHPD_ADOPT_H

struct cpuhpd;

/*
 * Rebuild the connections and what they hold (before the socket listens).
 * Return: 0 (a connection that cannot be rebuilt is closed, its client
 * sees EOF), or -ENOMEM.
 */
int cpuhpd_adopt(struct cpuhpd *d);

#endif /* CPUHPD_ADOPT_H */
