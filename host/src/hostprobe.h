/*
 * What `fdlink doctor` asks of host/ (internal, not installed): the driver, as probe.h (link/src)
 * asks the libraries of link/. Ownership and thread-safety as there.
 */
#ifndef FDLINK_HOSTPROBE_H
#define FDLINK_HOSTPROBE_H

#include "probe.h"

/* The driver: path, version (cuDriverGetVersion). host/src/driver.c. */
void fdl__probe_driver(fdl__lib_probe *out);

#endif /* FDLINK_HOSTPROBE_H */
