/*
 * Shared libraries loaded at run time: dlopen by the first name that loads, a table of entry
 * points filled by dlsym, and where a loaded function lives (dladdr, for `fdlink doctor`);
 * declared in internal.h.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int fdl__dlopen_first(void **handle, const char *const *names, const char *purpose,
                      fdl_error *err)
{
    *handle = NULL;
    char why[256] = "not found";
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            *handle = h;
            return FDL_OK;
        }
        const char *e = dlerror();
        if (i == 0 && e)
            fdl__strlcpy(why, e, sizeof why); /* the next dlopen frees e */
    }
    return fdl__error(err, FDL_ENOLIB, NULL, 0, 0, names[0], "cannot load %s, needed %s: %s",
                      names[0], purpose, why);
}

int fdl__dlopen_table(void **handle, const char *env, const char *const *names, const char *what,
                      const char *purpose, const fdl__symbol *symbols, size_t nsymbols,
                      void *table, fdl_error *err)
{
    *handle = NULL;
    const char *override = env ? getenv(env) : NULL;
    int rc;
    if (override && override[0]) {
        const char *const only[] = {override, NULL};
        char why[160];
        snprintf(why, sizeof why, "%s (path from %s)", purpose, env);
        rc = fdl__dlopen_first(handle, only, why, err);
    } else {
        rc = fdl__dlopen_first(handle, names, purpose, err);
    }
    if (rc != FDL_OK)
        return rc;
    for (size_t i = 0; i < nsymbols; i++) {
        void *sym = dlsym(*handle, symbols[i].name);
        if (!sym && !symbols[i].optional)
            return fdl__error(err, FDL_ENOLIB, NULL, 0, 0, symbols[i].name,
                              "%s lacks %s (needed %s): the library is too old or not %s", what,
                              symbols[i].name, purpose, what);
        /* POSIX guarantees that a data pointer from dlsym can hold a function pointer. */
        memcpy((char *)table + symbols[i].offset, &sym, sizeof sym);
    }
    return FDL_OK;
}

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
