/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Symbol visibility for libcpuhp: the library is built with -fvisibility=hidden. */
#ifndef CPUHP_EXPORT_H
#define CPUHP_EXPORT_H

#if defined(__GNUC__)
#define CPUHP_EXPORT __attribute__((visibility("default")))
#else
#define CPUHP_EXPORT
#endif

#endif /* CPUHP_EXPORT_H */
