/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-lock instructions under callgrind: make N locks, free them or not. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <cpuhp/rwsem.h>

int main(int argc, char **argv)
{
	unsigned n = (unsigned)atoi(argv[2]);
	int do_free = atoi(argv[3]);
	void **v = calloc(n, sizeof(*v));

	for (unsigned i = 0; i < n; i++) {
		if (!strcmp(argv[1], "cpuhp")) {
			cpuhp_rwsem_new((struct cpuhp_rwsem **)&v[i]);
		} else {
			pthread_rwlock_t *rw = malloc(sizeof(*rw));
			pthread_rwlock_init(rw, NULL);
			v[i] = rw;
		}
	}
	if (do_free)
		for (unsigned i = 0; i < n; i++) {
			if (!strcmp(argv[1], "cpuhp")) {
				cpuhp_rwsem_free(v[i]);
			} else {
				pthread_rwlock_destroy(v[i]);
				free(v[i]);
			}
		}
	free(v);
	return 0;
}
