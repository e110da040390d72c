/*
 * Vectors of owned strings, NULL-terminated (internal to link/): option lists for nvJitLink and
 * NVRTC, search paths.
 */
#ifndef FDLINK_STRV_H
#define FDLINK_STRV_H

#include <stddef.h>

/* A NULL-terminated vector of owned strings; a zeroed one is empty. */
typedef struct fdl__strv {
    char **v;
    size_t n;
    size_t cap;
} fdl__strv;

void fdl__strv_free(fdl__strv *s);
/* Append a copy of @p fmt (formatted with one %s of @p arg when @p arg is not NULL). */
int fdl__strv_push(fdl__strv *s, const char *fmt, const char *arg);
/* Copy @p in (NULL-terminated, may be NULL) into *out. @return 1, or 0 when out of memory */
int fdl__strv_copy(fdl__strv *out, const char *const *in);

#endif /* FDLINK_STRV_H */
