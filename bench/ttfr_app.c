/*
 * The program that benchmark 6 (time to first result, ttfr.c) starts again and again, built
 * twice from this source:
 *   fdlink-bench-ttfr-embedded  (FDL_TTFR_EMBEDDED) carries its cubin, linked at build time by
 *                               fdlink_link from the PTX of device/src and embedded with
 *                               fdlink_embed; it loads it with fdl_module_load_data;
 *   fdlink-bench-ttfr-runtime   links the same PTX at run time: fdl_decls_load, fdl_link (the
 *                               declarations checked, nvJitLink) for the device's architecture.
 * Both then run multiply_vectors on 2^20 elements, read the result back and verify every element
 * (exactly a[i] * b[i]); they print `ttfr-<variant>: verified N products; M ms from main to the
 * verified result` and exit 0, or 1 on any failure, or 77 without a GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fdlink/fdlink.h"
#ifdef FDL_TTFR_EMBEDDED
#  include "fdlink/embed.h"
#  define VARIANT "embedded"
#else
#  define VARIANT "runtime"
#endif

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fail(const char *what, const fdl_error *err)
{
    char line[1024];
    fdl_error_format(err, line, sizeof line);
    fprintf(stderr, "ttfr-" VARIANT ": error: %s: %s\n", what, line);
    return 1;
}

int main(void)
{
    double t0 = now_ms();
    fdl_error err = FDL_ERROR_INIT;
    fdl_device *dev = NULL;
    fdl_module *mod = NULL;
    fdl_kernel *k = NULL;
    fdl_buffer *da = NULL, *db = NULL, *dout = NULL;
    float *a = NULL, *b = NULL, *expected = NULL;
#ifndef FDL_TTFR_EMBEDDED
    fdl_decls *decls = NULL;
    fdl_link *link = NULL;
#endif
    int status = 1;
    const int n = 1 << 20;
    const size_t bytes = (size_t)n * sizeof(float);

    int count = 0, rc = fdl_device_count(&count, &err);
    if (rc == FDL_ENOLIB || rc == FDL_ENODEVICE) {
        printf("ttfr-" VARIANT ": skipped: %s\n", err.message);
        return FDL_EXIT_SKIP;
    }
    if (rc != FDL_OK || fdl_device_open(&dev, -1, &err) != FDL_OK) {
        status = fail("opening the device", &err);
        goto cleanup;
    }
#ifdef FDL_TTFR_EMBEDDED
    const void *image = NULL;
    size_t size = 0;
    if (fdl_embedded_find("ttfr.cubin", &image, &size) != FDL_OK) {
        fprintf(stderr, "ttfr-" VARIANT ": error: ttfr.cubin is not embedded\n");
        goto cleanup;
    }
    if (fdl_module_load_data(&mod, dev, image, size, "ttfr.cubin", &err) != FDL_OK) {
        status = fail("loading the embedded cubin", &err);
        goto cleanup;
    }
#else
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(dev);
    if (fdl_decls_load(&decls, FDL_TTFR_DECL, &err) != FDL_OK ||
        fdl_link_create(&link, &opts, &err) != FDL_OK ||
        fdl_link_add_decls(link, decls, &err) != FDL_OK ||
        fdl_link_add_file(link, FDL_TTFR_CALLERS_PTX, FDL_KIND_AUTO, &err) != FDL_OK ||
        fdl_link_add_file(link, FDL_TTFR_FUNCTIONS_PTX, FDL_KIND_AUTO, &err) != FDL_OK ||
        fdl_link_complete(link, &err) != FDL_OK) {
        status = fail("linking the PTX", &err);
        goto cleanup;
    }
    size_t size = 0;
    const void *image = fdl_link_cubin(link, &size);
    if (fdl_module_load_data(&mod, dev, image, size, "ttfr.cubin", &err) != FDL_OK) {
        status = fail("loading the linked cubin", &err);
        goto cleanup;
    }
#endif
    a = malloc(bytes);
    b = malloc(bytes);
    expected = malloc(bytes);
    if (!a || !b || !expected) {
        fprintf(stderr, "ttfr-" VARIANT ": error: out of memory\n");
        goto cleanup;
    }
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i % 1000) * 0.5f - 250.0f;
        b[i] = (float)(i % 997) * 0.25f + 1.0f;
        expected[i] = a[i] * b[i];
    }
    if (fdl_module_get_kernel(&k, mod, "multiply_vectors", &err) != FDL_OK ||
        fdl_buffer_create(&da, dev, bytes, &err) != FDL_OK ||
        fdl_buffer_create(&db, dev, bytes, &err) != FDL_OK ||
        fdl_buffer_create(&dout, dev, bytes, &err) != FDL_OK ||
        fdl_buffer_write(da, 0, a, bytes, &err) != FDL_OK ||
        fdl_buffer_write(db, 0, b, bytes, &err) != FDL_OK ||
        fdl_buffer_zero(dout, &err) != FDL_OK) {
        status = fail("preparing the launch", &err);
        goto cleanup;
    }
    uint64_t po = fdl_buffer_address(dout), pa = fdl_buffer_address(da),
             pb = fdl_buffer_address(db);
    int nn = n;
    void *args[4] = {&po, &pa, &pb, &nn};
    fdl_dim3 grid = {(unsigned)((n + 255) / 256), 1, 1}, block = {256, 1, 1};
    fdl_verify_report report;
    if (fdl_kernel_launch(k, grid, block, 0, args, 4, &err) != FDL_OK ||
        fdl_buffer_verify(&report, dout, 0, FDL_FLOAT32, expected, (size_t)n, NULL, &err) !=
            FDL_OK) {
        status = fail("multiply_vectors", &err);
        goto cleanup;
    }
    printf("ttfr-" VARIANT ": verified %d products; %.3f ms from main to the verified result\n",
           n, now_ms() - t0);
    status = 0;
cleanup:
    free(a);
    free(b);
    free(expected);
    fdl_device_destroy(dev); /* and the module and buffers with it */
#ifndef FDL_TTFR_EMBEDDED
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
#endif
    return status;
}
