/*
 * GPU tests that fault or make driver calls fail on purpose (label fault): an illegal address
 * that poisons the context, and images the driver refuses. They are kept apart from test_gpu so
 * that every other gpu-labelled test can run clean under compute-sanitizer, whose runs leave out
 * the label fault (a deliberate fault is, rightly, a report). Each test skips where there is no
 * driver or device; Criterion runs each in its own process, so a poisoned context harms no other.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/host.h"
#include "fdlink/link.h"

#define LINK_DATA FDL_LINK_FIXTURES

#include "gpu_common.h"

/* ------------------------------------------------------------------------------------------ */
/* Images the driver refuses                                                                    */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_module, bad_images_are_errors)
{
    fdl_device *dev = open_or_skip();
    fdl_error err = FDL_ERROR_INIT;
    fdl_module *mod = NULL;

    /* garbage: not ELF, not a fatbin, so the driver takes it for PTX and refuses it */
    unsigned char garbage[4096];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof garbage; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        garbage[i] = (unsigned char)x;
    }
    garbage[0] = 0x13;
    int rc = fdl_module_load_data(&mod, dev, garbage, sizeof garbage, "garbage.bin", &err);
    cr_assert_eq(rc, FDL_ECUDA, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert_null(mod);
    cr_assert_str_eq(err.source, "garbage.bin");
    cr_assert(starts_with(err.message, "cuModuleLoadDataEx failed: CUDA_ERROR_"), "%s",
              err.message);
    cr_assert_neq(err.backend_code, 0);

    /* PTX with an error: the message quotes the JIT log */
    static const char broken[] = ".version 7.0\n.target sm_75\n.address_size 64\n"
                                 ".visible .entry k()\n{\n    no_such_instruction;\n    ret;\n}\n";
    rc = fdl_module_load_data(&mod, dev, broken, sizeof broken - 1, "broken.ptx", &err);
    cr_assert_eq(rc, FDL_ECUDA, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert(starts_with(err.message, "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX"),
              "%s", err.message);
    cr_assert(strstr(err.message, "; jit log: "), "no JIT log quoted: %s", err.message);
    cr_assert_eq(err.backend_code, 218 /* CUDA_ERROR_INVALID_PTX */);

    /* a truncated cubin is caught before the driver reads past it */
    fdl_link *link = link_for(dev);
    size_t size;
    const void *cubin = fdl_link_cubin(link, &size);
    rc = fdl_module_load_data(&mod, dev, cubin, size / 2, "half.cubin", &err);
    cr_assert_eq(rc, FDL_EINVAL, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert(strstr(err.message, "truncated ELF image"), "%s", err.message);
    cr_assert_str_eq(err.source, "half.cubin");
    rc = fdl_module_load_data(&mod, dev, cubin, 0, "empty.cubin", &err);
    cr_assert_eq(rc, FDL_EINVAL);
    /* a malformed cubin (section 1's alignment 3) is refused before the driver reads it, by the
     * validation every cubin passes before a linker sees it (issue 22) */
    unsigned char *bad = malloc(size);
    cr_assert_not_null(bad);
    memcpy(bad, cubin, size);
    uint64_t shoff = 0;
    for (int b = 7; b >= 0; b--)
        shoff = shoff << 8 | bad[40 + b];
    bad[shoff + 64 + 48] = 3;
    rc = fdl_module_load_data(&mod, dev, bad, size, "bad.cubin", &err);
    cr_assert_eq(rc, FDL_EPARSE, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert(strstr(err.message, "malformed cubin: section 1's alignment 3 is not a power of "
                                  "two (at byte "), "%s", err.message);
    free(bad);
    fdl_link_destroy(link);
    /* the context is still usable */
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    fdl_device_destroy(dev);
}

Test(gpu_async, illegal_address_is_reported_by_synchronize_naming_the_kernel)
{
    fdl_device *dev = open_or_skip();
    fdl_link *link = link_for(dev);
    fdl_module *mod = load_linked(dev, link);
    fdl_kernel *kernel = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_get_kernel(&kernel, mod, "multiply_vectors", &err), FDL_OK, "%s",
                 err.message);
    enum { N = 256 };
    fdl_buffer *a = new_buffer(dev, N * sizeof(float));
    cr_assert_eq(fdl_buffer_zero(a, &err), FDL_OK, "%s", err.message);
    uint64_t bad = 0x8; /* out = an address no allocation has */
    uint64_t pa = fdl_buffer_address(a);
    int n = N;
    void *args[] = {&bad, &pa, &pa, &n};
    /* the launch itself is accepted: the fault happens on the device, later */
    cr_assert_eq(fdl_kernel_launch(kernel, (fdl_dim3){1, 1, 1}, (fdl_dim3){N, 1, 1}, 0, args, 4,
                                   &err),
                 FDL_OK, "%s", err.message);
    int rc = fdl_device_synchronize(dev, &err);
    cr_assert_eq(rc, FDL_ECUDA, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert(starts_with(err.message, "an earlier launch failed: CUDA_ERROR_ILLEGAL_ADDRESS ("),
              "%s", err.message);
    cr_assert(strstr(err.message, "the last kernel launched was 'multiply_vectors'"), "%s",
              err.message);
    cr_assert_str_eq(err.symbol, "multiply_vectors");
    cr_assert_eq(err.backend_code, 700 /* CUDA_ERROR_ILLEGAL_ADDRESS */);
    /* the error is sticky: later calls say so too */
    float host[N];
    rc = fdl_buffer_read(a, 0, host, sizeof host, &err);
    cr_assert_eq(rc, FDL_ECUDA);
    cr_assert(starts_with(err.message, "an earlier launch failed: "), "%s", err.message);
    /* and tearing down a poisoned context does not crash */
    fdl_buffer_destroy(a);
    fdl_module_destroy(mod);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}

