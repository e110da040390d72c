/**
 * @file fdlink/version.h
 * Version of the fdlink library.
 */
#ifndef FDLINK_VERSION_H
#define FDLINK_VERSION_H

#include "fdlink/export.h"

#define FDLINK_VERSION_MAJOR 0
#define FDLINK_VERSION_MINOR 1
#define FDLINK_VERSION_PATCH 0
#define FDLINK_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Version of the library actually linked ("0.1.0"), which may differ from the
 * FDLINK_VERSION_STRING a program was compiled with.
 * Ownership: a static string. Thread-safety: safe.
 */
FDL_API const char *fdl_version(void);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_VERSION_H */
