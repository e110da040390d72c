/*
 * link/src/backends: the linkers fdl_link_complete can run (internal to link/; their interface is
 * core/linkobj.h's fdl__link_backend_ops).
 */
#ifndef FDLINK_BACKENDS_H
#define FDLINK_BACKENDS_H

#include "linkobj.h"

extern const fdl__link_backend_ops fdl__backend_nvjl; /* backend_nvjl.c */
extern const fdl__link_backend_ops fdl__backend_culink;    /* backend_culink.c */

#endif /* FDLINK_BACKENDS_H */
