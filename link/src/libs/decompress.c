/*
 * Decompression of fatbin payloads: the LZ4 block format (nvcc -compress-mode=speed, and the
 * default of CUDA before 12.8) through liblz4, and zstd (the default since) through libzstd, each
 * opened with dlopen the first time a payload of its kind is read. Neither is a dependency of the
 * library: without one, images so compressed are shown as not readable here (fdl__image_load),
 * and the link goes on, since nvJitLink and the driver decompress for themselves.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "libs.h"
#include "probe.h"

/* ---- LZ4, through liblz4 --------------------------------------------------------------------- */

/* The entry point of liblz4.so.1 that fdlink calls (lz4.h; stable since r129). */
typedef struct lz4_fn {
    int (*decompress_safe)(const char *src, char *dst, int src_size, int dst_capacity);
} lz4_fn;

/* Global state: the entry points, filled once under pthread_once and read-only after. */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    lz4_fn fn;
} g_lz4 = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {NULL}};

static void lz4_load(void)
{
    static const char *const names[] = {"liblz4.so.1", "liblz4.so", NULL};
    static const fdl__symbol symbols[] = {
        {"LZ4_decompress_safe", offsetof(lz4_fn, decompress_safe), 0},
    };
    void *h = NULL;
    g_lz4.status = fdl__dlopen_table(&h, "FDLINK_LIBLZ4", names, "liblz4",
                                     "to read LZ4-compressed fatbin entries", symbols,
                                     sizeof symbols / sizeof symbols[0], &g_lz4.fn, &g_lz4.error);
}

/*
 * Decode one LZ4 block into exactly @p cap bytes. LZ4_decompress_safe never reads past @p n
 * bytes nor writes past @p cap, whatever the data (liblz4 is fuzzed for this); what stays here is
 * what it cannot know: that the sizes fit its int arguments and that the block decodes to
 * exactly the size the fatbin entry states.
 */
static int lz4_decode(const unsigned char *in, size_t n, unsigned char *out, size_t cap,
                      const char **why)
{
    if (n == 0 && cap == 0)
        return 1; /* nothing, stated as nothing (liblz4 wants at least a token) */
    if (n > INT_MAX || cap > INT_MAX) {
        *why = "the data or its stated size is past what LZ4 blocks hold";
        return 0;
    }
    int got = g_lz4.fn.decompress_safe((const char *)in, (char *)out, (int)n, (int)cap);
    if (got < 0) {
        *why = "the data does not decode as an LZ4 block";
        return 0;
    }
    if ((size_t)got != cap) {
        *why = "the data decodes to fewer bytes than stated";
        return 0;
    }
    return 1;
}

/* ---- zstd ------------------------------------------------------------------------------------ */

typedef struct zstd_fn {
    size_t (*decompress)(void *dst, size_t cap, const void *src, size_t size);
    unsigned (*is_error)(size_t code);
    const char *(*error_name)(size_t code);
    unsigned (*version)(void); /* ZSTD_versionNumber, for fdlink doctor; NULL when absent */
} zstd_fn;

/* Global state: the entry points, filled once under pthread_once and read-only after. */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    zstd_fn fn;
} g_zstd = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {NULL, NULL, NULL, NULL}};

static void zstd_load(void)
{
    const char *purpose = "to read zstd-compressed fatbin entries";
    const char *override = getenv("FDLINK_LIBZSTD");
    void *h = NULL;
    int rc;
    if (override && override[0]) {
        const char *const names[] = {override, NULL};
        rc = fdl__dlopen_first(&h, names, purpose, &g_zstd.error);
    } else {
        const char *const names[] = {"libzstd.so.1", "libzstd.so", NULL};
        rc = fdl__dlopen_first(&h, names, purpose, &g_zstd.error);
    }
    if (rc != FDL_OK) {
        g_zstd.status = rc;
        return;
    }
    void *d = dlsym(h, "ZSTD_decompress"), *e = dlsym(h, "ZSTD_isError"),
         *n = dlsym(h, "ZSTD_getErrorName");
    if (!d || !e || !n) {
        g_zstd.status = fdl__error(&g_zstd.error, FDL_ENOLIB, NULL, 0, 0, NULL,
                                   "the zstd library lacks ZSTD_decompress (needed %s)", purpose);
        fdl__error_library(&g_zstd.error, "libzstd");
        return;
    }
    /* POSIX guarantees that a data pointer from dlsym can hold a function pointer. */
    memcpy(&g_zstd.fn.decompress, &d, sizeof d);
    memcpy(&g_zstd.fn.is_error, &e, sizeof e);
    memcpy(&g_zstd.fn.error_name, &n, sizeof n);
    void *v = dlsym(h, "ZSTD_versionNumber");
    memcpy(&g_zstd.fn.version, &v, sizeof v);
}

int fdl__decompress(unsigned char **out, size_t out_size, const unsigned char *in, size_t in_size,
                    unsigned flags, fdl_error *err)
{
    *out = NULL;
    int rc = FDL_OK;
    unsigned char *buf = NULL;
    if (!(flags & (FDL__FATBIN_FLAG_LZ4 | FDL__FATBIN_FLAG_ZSTD)))
        return fdl__fail(err, FDL_EINVAL, "fdl__decompress: the payload is not compressed");
    if ((uint64_t)out_size > FDL__MAX_IMAGE)
        return fdl__fail(err, FDL_EPARSE, "a stated size of %zu bytes is past the limit of %llu",
                         out_size, (unsigned long long)FDL__MAX_IMAGE);
    if (flags & FDL__FATBIN_FLAG_ZSTD) {
        pthread_once(&g_zstd.once, zstd_load);
        if (g_zstd.status != FDL_OK) {
            if (err)
                *err = g_zstd.error;
            return g_zstd.status;
        }
    } else {
        pthread_once(&g_lz4.once, lz4_load);
        if (g_lz4.status != FDL_OK) {
            if (err)
                *err = g_lz4.error;
            return g_lz4.status;
        }
    }
    buf = malloc(out_size ? out_size : 1);
    if (!buf)
        return fdl__fail(err, FDL_ENOMEM, "out of memory decompressing %zu bytes", out_size);
    if (flags & FDL__FATBIN_FLAG_ZSTD) {
        size_t got = g_zstd.fn.decompress(buf, out_size, in, in_size);
        if (g_zstd.fn.is_error(got)) {
            rc = fdl__fail(err, FDL_EPARSE, "corrupt zstd data: %s", g_zstd.fn.error_name(got));
            goto cleanup;
        }
        if (got != out_size) {
            rc = fdl__fail(err, FDL_EPARSE, "zstd data decodes to %zu bytes, not the %zu stated",
                           got, out_size);
            goto cleanup;
        }
    } else {
        const char *why = "";
        if (!lz4_decode(in, in_size, buf, out_size, &why)) {
            rc = fdl__fail(err, FDL_EPARSE, "corrupt LZ4 data: %s", why);
            goto cleanup;
        }
    }
    *out = buf;
    buf = NULL;
cleanup:
    free(buf);
    return rc;
}

void fdl__probe_zstd(fdl__lib_probe *out)
{
    memset(out, 0, sizeof *out);
    out->major = out->minor = -1;
    pthread_once(&g_zstd.once, zstd_load);
    out->status = g_zstd.status;
    if (g_zstd.status != FDL_OK) {
        out->error = g_zstd.error;
        return;
    }
    void (*any)(void) = NULL;
    memcpy(&any, &g_zstd.fn.decompress, sizeof any);
    fdl__library_of(any, out->path, sizeof out->path);
    /* ZSTD_versionNumber: major * 10000 + minor * 100 + release */
    if (g_zstd.fn.version) {
        unsigned v = g_zstd.fn.version();
        out->major = (int)(v / 10000);
        out->minor = (int)(v / 100 % 100);
    }
}
