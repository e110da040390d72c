/* Where a loaded function lives (dladdr), for `fdlink doctor`. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "probe.h"

int fdl__library_of(void (*fn)(void), char *out, size_t size)
{
    Dl_info info;
    void *p = NULL;
    if (size)
        out[0] = '\0';
    if (!fn || !size)
        return 0;
    /* POSIX: a function pointer fits in a void * (as dlsym's result shows). */
    memcpy(&p, &fn, sizeof p);
    if (!dladdr(p, &info) || !info.dli_fname || !info.dli_fname[0])
        return 0;
    int n = snprintf(out, size, "%s", info.dli_fname);
    return n > 0 && (size_t)n < size;
}
