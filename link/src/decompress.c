/*
 * Decompression of fatbin payloads: the LZ4 block format (nvcc -compress-mode=speed, and the
 * default of CUDA before 12.8) decoded here, and zstd (the default since) through libzstd,
 * opened with dlopen the first time a zstd payload is read.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "linkint.h"
#include "probe.h"

/* ---- LZ4 ------------------------------------------------------------------------------------ */

/* A length continued in 255-valued bytes; 0 when the input ends or the length overflows. */
static int lz4_length(const unsigned char *in, size_t n, size_t *ip, size_t *len)
{
    unsigned char b;
    do {
        if (*ip >= n)
            return 0;
        b = in[(*ip)++];
        if (*len > SIZE_MAX - b)
            return 0;
        *len += b;
    } while (b == 255);
    return 1;
}

/* Decode one LZ4 block into exactly @p cap bytes; every read and write is bounds-checked. */
static int lz4_decode(const unsigned char *in, size_t n, unsigned char *out, size_t cap,
                      const char **why)
{
    size_t ip = 0, op = 0;
    while (ip < n) {
        unsigned token = in[ip++];
        size_t lit = token >> 4;
        if (lit == 15 && !lz4_length(in, n, &ip, &lit)) {
            *why = "a literal length runs past the data";
            return 0;
        }
        if (lit > n - ip || lit > cap - op) {
            *why = "literals run past the data or the stated size";
            return 0;
        }
        memcpy(out + op, in + ip, lit);
        ip += lit;
        op += lit;
        if (ip == n)
            break; /* the last sequence has no match */
        if (n - ip < 2) {
            *why = "a match offset is cut short";
            return 0;
        }
        size_t offset = (size_t)in[ip] | (size_t)in[ip + 1] << 8;
        ip += 2;
        if (offset == 0 || offset > op) {
            *why = "a match refers before the start of the output";
            return 0;
        }
        size_t match = token & 15;
        if (match == 15 && !lz4_length(in, n, &ip, &match)) {
            *why = "a match length runs past the data";
            return 0;
        }
        if (match > SIZE_MAX - 4 || match + 4 > cap - op) {
            *why = "a match runs past the stated size";
            return 0;
        }
        match += 4;
        for (size_t i = 0; i < match; i++, op++) /* may overlap itself */
            out[op] = out[op - offset];
    }
    if (op != cap) {
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
