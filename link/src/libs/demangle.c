/*
 * C++ names made readable for messages: the C++ runtime's __cxa_demangle (the Itanium ABI that
 * nvcc and NVRTC mangle device names with), from libstdc++ or libc++abi opened with dlopen the
 * first time a message needs it, like the CUDA libraries (issue 34). Without either, names
 * stay as they are.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "libs.h"

typedef struct demangle_fn {
    char *(*cxa_demangle)(const char *mangled, char *buf, size_t *len, int *status);
} demangle_fn;

/* Global state: the entry point, filled once under pthread_once and read-only after. */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    demangle_fn fn;
} g_dem = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {NULL}};

static void demangle_load(void)
{
    static const char *const names[] = {"libstdc++.so.6", "libc++abi.so.1", "libc++.so.1", NULL};
    static const fdl__symbol symbols[] = {
        {"__cxa_demangle", offsetof(demangle_fn, cxa_demangle), 0},
    };
    void *h = NULL;
    g_dem.status = fdl__dlopen_table(&h, "FDLINK_LIBCXXABI", names, "the C++ runtime",
                                     "to show C++ names readably", symbols, 1, &g_dem.fn,
                                     &g_dem.error);
}

int fdl__demangle(const char *name, char *out, size_t cap)
{
    if (!name || !out || cap == 0 || strncmp(name, "_Z", 2) != 0)
        return 0;
    out[0] = '\0';
    pthread_once(&g_dem.once, demangle_load);
    if (g_dem.status != FDL_OK)
        return 0;
    int status = -1;
    char *d = g_dem.fn.cxa_demangle(name, NULL, NULL, &status);
    int ok = status == 0 && d && d[0];
    if (ok)
        snprintf(out, cap, "%s", d);
    free(d);
    return ok;
}
