/*
 * Tests of the host runtime that need no GPU (host/src, fdlink/host.h, fdlink/verify.h): loading
 * the driver, the errors when it is missing or is the toolkit's stub, argument checks, NULL
 * destroyers, verification of results, kernel names read from module images. Work on a device
 * is tested in tests/gpu/test_gpu.c (and against the mock driver of tests/gpu/mock).
 *
 * Criterion runs each test in its own process, so a test that sets FDLINK_LIBCUDA before its
 * first call sees a fresh table of driver entry points.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdl_test.h"
#include "formats.h" /* the .nv.info reader (link/src/formats) */
#include "fdlink/embed.h"
#include "fdlink/host.h"
#include "fdlink/verify.h"

/* host/src/driver.h (internal): kernel names read from a module image */
int fdl__image_kernel_names(char ***names, size_t *count, int *known, const void *image,
                            size_t size);

#define STUB "/usr/local/cuda/lib64/stubs/libcuda.so"

Test(host_driver, missing_driver_is_enolib_naming_it)
{
    const char *path = "/nonexistent/fdlink/libcuda.so.1";
    cr_assert_eq(setenv("FDLINK_LIBCUDA", path, 1), 0);
    for (int attempt = 0; attempt < 2; attempt++) {
        int count = 7;
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_device_count(&count, &err), FDL_ENOLIB, "attempt %d", attempt);
        cr_assert_eq(count, 0);
        cr_assert_eq(err.code, FDL_ENOLIB);
        static const char prefix[] = "cannot load /nonexistent/fdlink/libcuda.so.1 (the CUDA "
                                     "driver, from FDLINK_LIBCUDA), needed to run device code: ";
        cr_assert(strncmp(err.message, prefix, strlen(prefix)) == 0, "%s", err.message);
        cr_assert(strstr(err.message, "No such file"), "no dlerror text: %s", err.message);
    }
    fdl_device *dev = (fdl_device *)&dev;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_open(&dev, 0, &err), FDL_ENOLIB);
    cr_assert_null(dev, "*out not NULL after a failure");
    cr_assert(strstr(err.message, path), "%s", err.message);
}

Test(host_driver, default_driver_loads_or_is_enolib)
{
    /* here (no driver) the second; on a GPU host the first */
    cr_assert_eq(unsetenv("FDLINK_LIBCUDA"), 0);
    int count = -1;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_count(&count, &err);
    if (rc == FDL_OK) {
        cr_assert_gt(count, 0);
    } else if (rc == FDL_ENOLIB) {
        cr_assert_eq(count, 0);
        static const char prefix[] = "cannot load libcuda.so.1 (the CUDA driver), needed to run "
                                     "device code: ";
        cr_assert(strncmp(err.message, prefix, strlen(prefix)) == 0, "%s", err.message);
        cr_assert_str_eq(err.symbol, "libcuda.so.1");
    } else {
        cr_assert_eq(rc, FDL_ENODEVICE, "%s: %s", fdl_status_name(rc), err.message);
        cr_assert(strncmp(err.message, "no CUDA device: ", 16) == 0, "%s", err.message);
    }
}

Test(host_driver, stub_driver_is_a_clean_error)
{
    if (access(STUB, R_OK) != 0)
        cr_skip_test("the toolkit's stub driver %s is not installed", STUB);
    cr_assert_eq(setenv("FDLINK_LIBCUDA", STUB, 1), 0);
    for (int attempt = 0; attempt < 2; attempt++) {
        int count = 7;
        fdl_error err = FDL_ERROR_INIT;
        int rc = fdl_device_count(&count, &err);
        cr_assert_eq(rc, FDL_ENODEVICE, "attempt %d: %s: %s", attempt, fdl_status_name(rc),
                     err.message);
        cr_assert_eq(count, 0);
        cr_assert_str_eq(err.message, "no CUDA device: cuInit failed: CUDA_ERROR_STUB_LIBRARY "
                                      "(CUDA driver is a stub library)");
        cr_assert_eq(err.backend_code, 34 /* CUDA_ERROR_STUB_LIBRARY */);
    }
    fdl_device *dev = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_ENODEVICE);
    cr_assert_null(dev);
}

Test(host_driver, a_library_that_is_not_the_driver_is_enolib)
{
    cr_assert_eq(setenv("FDLINK_LIBCUDA", "libc.so.6", 1), 0);
    int count;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_count(&count, &err), FDL_ENOLIB);
    cr_assert(strstr(err.message, "libc.so.6 lacks cuInit"), "%s", err.message);
}

Test(host_device, bad_ordinals_are_einval_before_the_driver)
{
    /* a driver that cannot load would say FDL_ENOLIB: the ordinal is checked first */
    cr_assert_eq(setenv("FDLINK_LIBCUDA", "/nonexistent/libcuda.so.1", 1), 0);
    fdl_device *dev = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_open(&dev, -2, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "invalid device ordinal -2 (expected -1, 0, 1, ...)");
    static const char *const bad[] = {"abc", "1x", "-1", " ", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(setenv("FDLINK_DEVICE", bad[i], 1), 0);
        cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_EINVAL, "FDLINK_DEVICE='%s'", bad[i]);
        cr_assert(strstr(err.message, "is not a device number"), "%s", err.message);
        cr_assert_null(dev);
    }
    /* a valid FDLINK_DEVICE gets as far as the driver */
    cr_assert_eq(setenv("FDLINK_DEVICE", "0", 1), 0);
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_ENOLIB);
}

Test(host_device, destroyers_and_getters_accept_null)
{
    fdl_device_destroy(NULL);
    fdl_module_destroy(NULL);
    fdl_buffer_destroy(NULL);
    fdl_host_buffer_destroy(NULL);
    fdl_stream_destroy(NULL);
    fdl_event_destroy(NULL);
    fdl_launch_destroy(NULL);
    cr_assert_str_empty(fdl_device_name(NULL));
    cr_assert_str_empty(fdl_device_arch(NULL));
    cr_assert_eq(fdl_device_cc(NULL), 0);
    cr_assert_eq(fdl_device_driver_version(NULL), 0);
    cr_assert_eq(fdl_device_ordinal(NULL), -1);
    cr_assert_eq(fdl_device_total_memory(NULL), 0);
    cr_assert_eq(fdl_device_sm_count(NULL), 0);
    cr_assert_str_empty(fdl_kernel_name(NULL));
    cr_assert_null(fdl_kernel_module(NULL));
    cr_assert_str_empty(fdl_module_info_log(NULL));
    cr_assert_str_empty(fdl_module_name(NULL));
    cr_assert_null(fdl_module_device(NULL));
    cr_assert_eq(fdl_module_kernel_count(NULL), 0);
    cr_assert_null(fdl_module_kernel_name(NULL, 0));
    cr_assert_eq(fdl_module_has_status(NULL), 0);
    cr_assert_eq(fdl_buffer_address(NULL), 0);
    cr_assert_eq(fdl_buffer_size(NULL), 0);
    cr_assert_null(fdl_buffer_device(NULL));
    cr_assert_null(fdl_host_buffer_data(NULL));
    cr_assert_eq(fdl_host_buffer_size(NULL), 0);
}

Test(host_driver, driver_version_without_a_driver)
{
    cr_assert_eq(setenv("FDLINK_LIBCUDA", "/nonexistent/libcuda.so.1", 1), 0);
    int version = 42;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_driver_version(&version, &err), FDL_ENOLIB);
    cr_assert_eq(version, 0);
    cr_assert(strstr(err.message, "cannot load /nonexistent/libcuda.so.1"), "%s", err.message);
}

Test(host_driver, driver_version_of_the_stub_is_enodevice)
{
    if (access(STUB, R_OK) != 0)
        cr_skip_test("the toolkit's stub driver %s is not installed", STUB);
    cr_assert_eq(setenv("FDLINK_LIBCUDA", STUB, 1), 0);
    int version = 42;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_driver_version(&version, &err), FDL_ENODEVICE);
    cr_assert_eq(version, 0);
    cr_assert_eq(err.backend_code, 34 /* CUDA_ERROR_STUB_LIBRARY */);
}

#ifdef NDEBUG
/* Issue 35: an item's NULL path never reaches openat (FDL_EINVAL in release builds). */
Test(host_embed, an_item_with_a_null_path_or_name_is_einval)
{
    fdl_embed_item items[2] = {{"k", NULL}, {NULL, "/dev/null"}};
    char *dir = make_temp_dir(), *out = path_in(dir, "never-written.c");
    for (int i = 0; i < 2; i++) {
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_embed_write(out, &items[i], 1, &err), FDL_EINVAL);
        cr_assert_not_null(strstr(err.message, i ? "NULL name" : "NULL path"), "%s", err.message);
    }
    cr_assert_eq(access(out, F_OK), -1);
    cr_assert_eq(rmdir(dir), 0, "something was written beside it");
    free(out);
    free(dir);
}

/* A size variable that is no size is refused, naming it (issue 35: it fell back silently). */
Test(host_embed, a_bad_embed_max_size_is_refused_naming_the_variable)
{
    static const char *const bad[] = {"1.5G", "1e9", "-1", "0", "12Q"};
    fdl_embed_item item = {"k", "/dev/null"};
    char *dir = make_temp_dir(), *out = path_in(dir, "never-written.c");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(setenv("FDLINK_EMBED_MAX_SIZE", bad[i], 1), 0);
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_embed_write(out, &item, 1, &err), FDL_EINVAL, "%s", bad[i]);
        cr_assert_not_null(strstr(err.message, "FDLINK_EMBED_MAX_SIZE"), "%s", err.message);
    }
    unsetenv("FDLINK_EMBED_MAX_SIZE");
    cr_assert_eq(rmdir(dir), 0, "something was written there");
    free(out);
    free(dir);
}
#endif

#ifdef NDEBUG
/* Programmer misuse is FDL_EINVAL in release builds (it asserts in debug builds). */
Test(host_device, null_handles_are_einval_naming_the_function)
{
    fdl_error err = FDL_ERROR_INIT;
    void *bytes = &err;
    fdl_module *mod = (fdl_module *)bytes;
    fdl_buffer *buf = (fdl_buffer *)bytes;
    fdl_stream *stream = (fdl_stream *)bytes;
    fdl_event *event = (fdl_event *)bytes;
    fdl_host_buffer *hb = (fdl_host_buffer *)bytes;
    fdl_launch *launch = (fdl_launch *)bytes;
    fdl_kernel *kernel = (fdl_kernel *)bytes;
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    fdl_device_info info;
    fdl_kernel_attrs attrs;
    fdl_device_status st;
    float ms;
    int v;
    struct {
        int rc;
        const char *fn;
    } cases[] = {
        {fdl_driver_version(NULL, &err), "fdl_driver_version"},
        {fdl_device_count(NULL, &err), "fdl_device_count"},
        {fdl_device_get_info(NULL, &info, &err), "fdl_device_get_info"},
        {fdl_device_synchronize(NULL, &err), "fdl_device_synchronize"},
        {fdl_module_load_data(&mod, NULL, "x", 1, "x", &err), "fdl_module_load_data"},
        {fdl_module_load_file(&mod, NULL, "x", &err), "fdl_module_load_file"},
        {fdl_module_get_kernel(&kernel, NULL, "k", &err), "fdl_module_get_kernel"},
        {fdl_module_read_status(NULL, &st, &err), "fdl_module_read_status"},
        {fdl_module_check_status(NULL, &err), "fdl_module_check_status"},
        {fdl_kernel_get_attrs(NULL, &attrs, &err), "fdl_kernel_get_attrs"},
        {fdl_kernel_param(NULL, 0, NULL, NULL, &err), "fdl_kernel_param"},
        {fdl_kernel_set_max_dynamic_shared(NULL, 0, &err), "fdl_kernel_set_max_dynamic_shared"},
        {fdl_kernel_launch(NULL, cfg.grid, cfg.block, 0, NULL, 0, &err), "fdl_kernel_launch"},
        {fdl_kernel_launch_ex(NULL, &cfg, NULL, 0, &err), "fdl_kernel_launch_ex"},
        {fdl_launch_create(&launch, NULL, &cfg, NULL, 0, &err), "fdl_launch_create"},
        {fdl_launch_run(NULL, &err), "fdl_launch_run"},
        {fdl_launch_set_arg(NULL, 0, &v, sizeof v, &err), "fdl_launch_set_arg"},
        {fdl_stream_create(&stream, NULL, &err), "fdl_stream_create"},
        {fdl_stream_synchronize(NULL, &err), "fdl_stream_synchronize"},
        {fdl_event_create(&event, NULL, &err), "fdl_event_create"},
        {fdl_event_record(NULL, NULL, &err), "fdl_event_record"},
        {fdl_event_synchronize(NULL, &err), "fdl_event_synchronize"},
        {fdl_event_elapsed_ms(&ms, NULL, NULL, &err), "fdl_event_elapsed_ms"},
        {fdl_buffer_create(&buf, NULL, 8, &err), "fdl_buffer_create"},
        {fdl_buffer_write(NULL, 0, &v, 1, &err), "fdl_buffer_write"},
        {fdl_buffer_read(NULL, 0, &v, 1, &err), "fdl_buffer_read"},
        {fdl_buffer_copy(NULL, 0, NULL, 0, 1, &err), "fdl_buffer_copy"},
        {fdl_buffer_zero(NULL, &err), "fdl_buffer_zero"},
        {fdl_buffer_write_async(NULL, 0, &v, 1, NULL, &err), "fdl_buffer_write_async"},
        {fdl_buffer_read_async(NULL, 0, &v, 1, NULL, &err), "fdl_buffer_read_async"},
        {fdl_buffer_copy_async(NULL, 0, NULL, 0, 1, NULL, &err), "fdl_buffer_copy_async"},
        {fdl_buffer_zero_async(NULL, NULL, &err), "fdl_buffer_zero_async"},
        {fdl_host_buffer_create(&hb, NULL, 8, &err), "fdl_host_buffer_create"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_eq(cases[i].rc, FDL_EINVAL, "%s", cases[i].fn);
    /* errors name their function; outputs were cleared */
    cr_assert_eq(fdl_host_buffer_create(&hb, NULL, 8, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "fdl_host_buffer_create: dev is NULL");
    cr_assert_null(mod);
    cr_assert_null(kernel);
    cr_assert_null(launch);
    cr_assert_null(stream);
    cr_assert_null(event);
    cr_assert_null(buf);
    cr_assert_null(hb);
    cr_assert_eq(fdl_launch_run(NULL, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "fdl_launch_run: launch is NULL");
    cr_assert_eq(fdl_launch_run(NULL, NULL), FDL_EINVAL, "NULL err is allowed");
}
#endif

Test(host_launch, arguments_and_config_initialisers)
{
    double d = 2.5;
    unsigned char c = 7;
    fdl_arg a = FDL_ARG(d), b = FDL_ARG(c), e = fdl_arg_make(&c, 1);
    cr_assert_eq(a.value, &d);
    cr_assert_eq(a.size, sizeof(double));
    cr_assert_eq(b.value, &c);
    cr_assert_eq(b.size, 1);
    cr_assert_eq(e.value, b.value);
    cr_assert_eq(e.size, b.size);
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cr_assert_eq(cfg.version, FDL_LAUNCH_CONFIG_VERSION);
    cr_assert(cfg.grid.x == 1 && cfg.grid.y == 1 && cfg.grid.z == 1);
    cr_assert(cfg.block.x == 1 && cfg.block.y == 1 && cfg.block.z == 1);
    cr_assert_eq(cfg.shared_bytes, 0);
    cr_assert_null(cfg.stream);
    cr_assert_eq(cfg.flags, 0);
    fdl_verify_options o = FDL_VERIFY_OPTIONS_INIT;
    cr_assert_eq(o.version, FDL_VERIFY_OPTIONS_VERSION);
    cr_assert_eq(o.mode, FDL_VERIFY_EXACT);
    cr_assert_eq(o.nan_equal, 1);
}

/* ------------------------------------------------------------------------------------------ */
/* Kernel names read from images (drivers older than CUDA 12.4)                                */
/* ------------------------------------------------------------------------------------------ */

Test(host_image, ptx_entries_are_the_kernels_sorted)
{
    static const char ptx[] =
        ".version 7.0\n.target sm_75\n.address_size 64\n"
        ".extern .func (.param .b32 r) f(.param .b64 p);\n"
        ".visible .entry zeta(.param .u64 a)\n{\n ret;\n}\n"
        ".visible .func (.param .b32 r) helper(.param .b64 p)\n{\n ret;\n}\n"
        ".entry alpha()\n{\n ret;\n}\n"
        ".visible .entry mid(.param .u32 n)\n{\n ret;\n}\n";
    char **names = NULL;
    size_t n = 99;
    int known = 0;
    /* with its NUL, as the driver is given it */
    cr_assert_eq(fdl__image_kernel_names(&names, &n, &known, ptx, sizeof ptx), FDL_OK);
    cr_assert_eq(known, 1);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(names[0], "alpha");
    cr_assert_str_eq(names[1], "mid");
    cr_assert_str_eq(names[2], "zeta");
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

Test(host_image, malformed_images_give_no_names_and_read_nothing_past_the_end)
{
    char **names = NULL;
    size_t n = 99;
    int known = 1;
    /* a fatbin: unknown */
    static const unsigned char fatbin[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0};
    cr_assert_eq(fdl__image_kernel_names(&names, &n, &known, fatbin, sizeof fatbin), FDL_OK);
    cr_assert_eq(known, 0);
    cr_assert_eq(n, 0);
    cr_assert_null(names);
    /* ELF headers whose section table lies past the end, at every truncation */
    unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    elf[40] = 200;        /* e_shoff */
    elf[58] = 64;         /* e_shentsize */
    elf[60] = 3;          /* e_shnum */
    for (size_t len = 0; len <= sizeof elf; len++) {
        unsigned char *copy = malloc(len ? len : 1);
        cr_assert_not_null(copy);
        memcpy(copy, elf, len);
        cr_assert_eq(fdl__image_kernel_names(&names, &n, &known, copy, len), FDL_OK);
        cr_assert_eq(n, 0, "%zu bytes", len);
        free(names);
        free(copy);
    }
    /* text that is not PTX */
    static const char junk[] = "not ptx at all";
    cr_assert_eq(fdl__image_kernel_names(&names, &n, &known, junk, sizeof junk - 1), FDL_OK);
    cr_assert_eq(n, 0);
    free(names);
}

/* ------------------------------------------------------------------------------------------ */
/* Verification                                                                                */
/* ------------------------------------------------------------------------------------------ */

static fdl_verify_options mode(fdl_verify_mode m)
{
    fdl_verify_options o = FDL_VERIFY_OPTIONS_INIT;
    o.mode = m;
    return o;
}

Test(host_verify, integers_of_every_width_and_sign)
{
    fdl_verify_report r;
    fdl_error err = FDL_ERROR_INIT;
    int8_t a8[] = {-128, -1, 0, 127}, b8[] = {-128, -1, 0, 126};
    cr_assert_eq(fdl_verify(&r, FDL_INT8, a8, b8, 4, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 1);
    cr_assert_eq(r.first[0].index, 3);
    cr_assert_eq(r.first[0].got.i, 127);
    cr_assert_eq(r.first[0].expected.i, 126);
    cr_assert_str_eq(err.message, "1 of 4 int8 values differ (exact); first at index 3: got 127, "
                                  "expected 126 (difference 1)");
    uint8_t u8a[] = {255, 0}, u8b[] = {0, 255};
    cr_assert_eq(fdl_verify(&r, FDL_UINT8, u8a, u8b, 2, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 2);
    cr_assert_eq(r.first[0].got.u, 255);
    cr_assert_eq(r.first[0].ulp, 255);
    cr_assert_eq(r.max_ulp, 255);
    int16_t i16a[] = {-32768}, i16b[] = {32767};
    cr_assert_eq(fdl_verify(&r, FDL_INT16, i16a, i16b, 1, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].ulp, 65535);
    cr_assert_eq(r.first[0].got.i, -32768);
    uint16_t u16a[] = {1, 2}, u16b[] = {1, 2};
    cr_assert_eq(fdl_verify(&r, FDL_UINT16, u16a, u16b, 2, NULL, &err), FDL_OK);
    int32_t i32a[] = {INT32_MIN, 5}, i32b[] = {INT32_MAX, 5};
    cr_assert_eq(fdl_verify(&r, FDL_INT32, i32a, i32b, 2, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].ulp, UINT32_MAX);
    uint32_t u32a[] = {0, 10}, u32b[] = {0, 7};
    fdl_verify_options ulp = mode(FDL_VERIFY_ULP);
    ulp.max_ulp = 3;
    cr_assert_eq(fdl_verify(&r, FDL_UINT32, u32a, u32b, 2, &ulp, &err), FDL_OK, "%s",
                 err.message);
    ulp.max_ulp = 2;
    cr_assert_eq(fdl_verify(&r, FDL_UINT32, u32a, u32b, 2, &ulp, &err), FDL_EVERIFY);
    cr_assert_str_eq(err.message, "1 of 2 uint32 values differ (ulp <= 2); first at index 1: "
                                  "got 10, expected 7 (difference 3)");
    /* 64-bit extremes: exact differences, no overflow */
    int64_t i64a[] = {INT64_MIN, INT64_MAX}, i64b[] = {INT64_MAX, INT64_MAX};
    cr_assert_eq(fdl_verify(&r, FDL_INT64, i64a, i64b, 2, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 1);
    cr_assert_eq(r.first[0].ulp, UINT64_MAX);
    cr_assert_eq(r.first[0].got.i, INT64_MIN);
    cr_assert_str_eq(err.message, "1 of 2 int64 values differ (exact); first at index 0: got "
                                  "-9223372036854775808, expected 9223372036854775807 "
                                  "(difference 18446744073709551615)");
    uint64_t u64a[] = {UINT64_MAX}, u64b[] = {0};
    cr_assert_eq(fdl_verify(&r, FDL_UINT64, u64a, u64b, 1, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].got.u, UINT64_MAX);
    cr_assert_eq(fdl_verify(&r, FDL_INTP, i64a, i64a, 2, NULL, &err), FDL_OK);
    cr_assert_eq(fdl_verify(&r, FDL_UINTP, u64a, u64a, 1, NULL, &err), FDL_OK);
    /* integer tolerance: |got - expected| <= abs + rel * |expected| */
    int32_t ta[] = {100, -100}, tb[] = {104, -95};
    fdl_verify_options tol = mode(FDL_VERIFY_TOLERANCE);
    tol.abs_tol = 0.0;
    tol.rel_tol = 0.05;
    cr_assert_eq(fdl_verify(&r, FDL_INT32, ta, tb, 2, &tol, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 1, "5 > 0.05 * 95 but 4 <= 0.05 * 104");
    cr_assert_eq(r.first[0].index, 1);
    unsigned char ba[] = {0, 1, 1}, bb[] = {0, 1, 0};
    cr_assert_eq(fdl_verify(&r, FDL_BOOL, ba, bb, 3, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].index, 2);
}

Test(host_verify, float32_modes_nan_zero_and_infinity)
{
    fdl_verify_report r;
    fdl_error err = FDL_ERROR_INIT;
    float one_up = nextafterf(1.0f, 2.0f);
    float got[] = {1.0f, -0.0f, NAN, INFINITY, one_up, 1e-3f};
    float exp[] = {1.0f, 0.0f, NAN, INFINITY, 1.0f, 1.1e-3f};
    /* exact: -0 == +0, NaN == NaN by default; 2 differ */
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, got, exp, 6, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 2);
    cr_assert_eq(r.first[0].index, 4);
    cr_assert_eq(r.first[0].ulp, 1);
    cr_assert_eq(r.first[1].index, 5);
    cr_assert_str_eq(err.message, "2 of 6 float32 values differ (exact); first at index 4: got "
                                  "1.00000012, expected 1 (abs error 1.19209e-07, rel error "
                                  "1.19209e-07, 1 ulp)");
    /* NaN differs from NaN when asked */
    fdl_verify_options o = FDL_VERIFY_OPTIONS_INIT;
    o.nan_equal = 0;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, got, exp, 6, &o, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 3);
    cr_assert_eq(r.first[0].index, 2);
    cr_assert_eq(r.first[0].ulp, UINT64_MAX);
    cr_assert(isnan(r.first[0].abs_error));
    /* bitwise: -0 differs from +0 too */
    o = mode(FDL_VERIFY_BITWISE);
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, got, exp, 6, &o, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 3);
    cr_assert_eq(r.first[0].index, 1);
    /* ULP: within 1 passes index 4; 1e-3 vs 1.1e-3 is far */
    o = mode(FDL_VERIFY_ULP);
    o.max_ulp = 1;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, got, exp, 6, &o, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 1);
    cr_assert_eq(r.first[0].index, 5);
    /* tolerance: rel 0.1 covers both */
    o = mode(FDL_VERIFY_TOLERANCE);
    o.rel_tol = 0.1;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, got, exp, 6, &o, &err), FDL_OK, "%s", err.message);
    o.rel_tol = 0.05;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, got, exp, 6, &o, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].index, 5);
    /* infinities match only themselves, whatever the tolerance */
    float inf_got[] = {INFINITY, -INFINITY}, inf_exp[] = {FLT_MAX, -INFINITY};
    o.abs_tol = 1e300;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, inf_got, inf_exp, 2, &o, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 1);
    o = mode(FDL_VERIFY_ULP);
    o.max_ulp = 1;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, inf_got, inf_exp, 2, &o, &err), FDL_OK,
                 "FLT_MAX is one ulp from infinity");
    /* across zero: the smallest subnormals of both signs are 2 apart */
    float tiny[] = {-0x1p-149f}, tiny2[] = {0x1p-149f};
    o.max_ulp = 0;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT32, tiny, tiny2, 1, &o, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].ulp, 2);
}

Test(host_verify, float64_and_float16)
{
    fdl_verify_report r;
    fdl_error err = FDL_ERROR_INIT;
    double dg[] = {0.1 + 0.2, 1e308, -2.0}, de[] = {0.3, 1e308, -2.0};
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT64, dg, de, 3, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].index, 0);
    cr_assert_eq(r.first[0].ulp, 1);
    cr_assert_str_eq(err.message, "1 of 3 float64 values differ (exact); first at index 0: got "
                                  "0.30000000000000004, expected 0.29999999999999999 (abs error "
                                  "5.55112e-17, rel error 1.85037e-16, 1 ulp)");
    fdl_verify_options o = mode(FDL_VERIFY_ULP);
    o.max_ulp = 1;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT64, dg, de, 3, &o, &err), FDL_OK);
    /* binary16: 1.0 = 0x3c00, next 0x3c01 = 1.0009765625; 65504 = 0x7bff; -2 = 0xc000;
     * smallest subnormal 0x0001 = 2^-24; +inf 0x7c00; NaN 0x7e00 */
    uint16_t hg[] = {0x3c01, 0x7bff, 0xc000, 0x0001, 0x7c00, 0x7e00};
    uint16_t he[] = {0x3c00, 0x7bff, 0xc000, 0x0001, 0x7c00, 0x7e01};
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT16, hg, he, 6, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 1, "NaNs of any payload are equal by default");
    cr_assert_eq(r.first[0].got.f, 1.0009765625);
    cr_assert_eq(r.first[0].expected.f, 1.0);
    cr_assert_eq(r.first[0].ulp, 1);
    cr_assert_str_eq(err.message, "1 of 6 float16 values differ (exact); first at index 0: got "
                                  "1.001, expected 1 (abs error 0.000976562, rel error "
                                  "0.000976562, 1 ulp)");
    o = mode(FDL_VERIFY_BITWISE);
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT16, hg, he, 6, &o, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 2);
    cr_assert_eq(r.first[1].index, 5);
    uint16_t sub[] = {0x0001}, sub_e[] = {0x0000};
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT16, sub, sub_e, 1, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].got.f, ldexp(1.0, -24));
    uint16_t big[] = {0x7bff}, inf[] = {0x7c00};
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT16, big, inf, 1, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].got.f, 65504.0);
    cr_assert(isinf(r.first[0].expected.f));
}

Test(host_verify, many_mismatches_show_the_first_few_and_count_all)
{
    enum { N = 1000 };
    static int32_t got[N], exp[N];
    for (int i = 0; i < N; i++) {
        got[i] = i;
        exp[i] = i % 100 == 0 ? i + 7 : i;
    }
    fdl_verify_report r;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_verify(&r, FDL_INT32, got, exp, N, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.count, N);
    cr_assert_eq(r.mismatches, 10);
    cr_assert_eq(r.shown, FDL_VERIFY_SHOW_MAX);
    for (size_t i = 0; i < r.shown; i++)
        cr_assert_eq(r.first[i].index, i * 100);
    cr_assert_eq(r.max_ulp, 7);
    char text[2048];
    size_t need = fdl_verify_format(&r, text, sizeof text);
    cr_assert_eq(need, strlen(text));
    cr_assert_str_eq(text, "int32: 10 of 1000 values differ (exact); max difference 7\n"
                           "  [0] got 0, expected 7 (difference 7)\n"
                           "  [100] got 100, expected 107 (difference 7)\n"
                           "  [200] got 200, expected 207 (difference 7)\n"
                           "  [300] got 300, expected 307 (difference 7)\n"
                           "  [400] got 400, expected 407 (difference 7)\n"
                           "  [500] got 500, expected 507 (difference 7)\n"
                           "  [600] got 600, expected 607 (difference 7)\n"
                           "  [700] got 700, expected 707 (difference 7)\n"
                           "  ... and 2 more\n");
    /* truncation: like snprintf */
    char small[16];
    cr_assert_eq(fdl_verify_format(&r, small, sizeof small), need);
    cr_assert_eq(strlen(small), sizeof small - 1);
    cr_assert_eq(strncmp(small, text, sizeof small - 1), 0);
    cr_assert_eq(fdl_verify_format(&r, NULL, 0), need);
    cr_assert_eq(fdl_verify_format(NULL, text, sizeof text), 0);
    /* a match formats as one line */
    cr_assert_eq(fdl_verify(&r, FDL_INT32, got, got, N, NULL, &err), FDL_OK);
    fdl_verify_format(&r, text, sizeof text);
    cr_assert_str_eq(text, "int32: all 1000 values match (exact)\n");
    fdl_verify_options o = mode(FDL_VERIFY_TOLERANCE);
    o.abs_tol = 0.5;
    o.rel_tol = 1e-3;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT64, got, got, 0, &o, &err), FDL_OK);
    fdl_verify_format(&r, text, sizeof text);
    cr_assert_str_eq(text, "float64: all 0 values match (abs 0.5 + rel 0.001)\n");
}

Test(host_verify, unaligned_arrays_are_read_safely)
{
    unsigned char raw[1 + 3 * sizeof(double)], raw2[1 + 3 * sizeof(double)];
    double v[3] = {1.5, -2.25, 1e-300};
    memcpy(raw + 1, v, sizeof v);
    memcpy(raw2 + 1, v, sizeof v);
    fdl_verify_report r;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT64, raw + 1, raw2 + 1, 3, NULL, &err), FDL_OK);
    raw2[1 + 2 * sizeof(double)] ^= 1; /* the lowest bit of the last value */
    cr_assert_eq(fdl_verify(&r, FDL_FLOAT64, raw + 1, raw2 + 1, 3, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.first[0].index, 2);
    cr_assert_eq(r.first[0].ulp, 1);
}

Test(host_verify, bad_arguments_are_einval)
{
    fdl_verify_report r;
    fdl_error err = FDL_ERROR_INIT;
    int x = 1;
    cr_assert_eq(fdl_verify(&r, FDL_VOID, &x, &x, 1, NULL, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "fdl_verify: cannot compare values of type void");
    cr_assert_eq(fdl_verify(&r, FDL_INT32, NULL, &x, 1, NULL, &err), FDL_EINVAL);
    cr_assert_eq(fdl_verify(&r, FDL_INT32, NULL, NULL, 0, NULL, &err), FDL_OK);
    fdl_verify_options o = mode(FDL_VERIFY_TOLERANCE);
    o.abs_tol = -1;
    cr_assert_eq(fdl_verify(&r, FDL_INT32, &x, &x, 1, &o, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "tolerances must be non-negative numbers (abs -1, rel 0)");
    o.abs_tol = NAN;
    cr_assert_eq(fdl_verify(&r, FDL_INT32, &x, &x, 1, &o, &err), FDL_EINVAL);
    o = mode((fdl_verify_mode)9);
    cr_assert_eq(fdl_verify(&r, FDL_INT32, &x, &x, 1, &o, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "unknown verification mode 9");
    o = mode(FDL_VERIFY_EXACT);
    o.version = 99;
    cr_assert_eq(fdl_verify(&r, FDL_INT32, &x, &x, 1, &o, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "unsupported fdl_verify_options version 99 (expected 1)");
    cr_assert_eq(fdl_verify(&r, (fdl_scalar)77, &x, &x, 1, NULL, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "fdl_verify: cannot compare values of type ?");
}

/* A name or path holding the comment terminator must not end the generated comment early. */
Test(host_embed, comment_terminator_in_name_and_path_stays_inside_the_comment)
{
    char dir[] = "/tmp/fdl_embed_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char in[256], out[256];
    snprintf(in, sizeof in, "%s/k*/", dir);
    cr_assert_eq(mkdir(in, 0700), 0);
    snprintf(in, sizeof in, "%s/k*/x.ptx", dir);
    snprintf(out, sizeof out, "%s/embed.c", dir);
    FILE *f = fopen(in, "wb");
    cr_assert_not_null(f);
    fputs(".version 8.0\n", f);
    fclose(f);
    fdl_embed_item item = {"a*/b", in};
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_embed_write(out, &item, 1, &err), FDL_OK, "%s", err.message);
    f = fopen(out, "rb");
    cr_assert_not_null(f);
    char text[8192];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    /* outside string literals, every comment opener has exactly one closer after it */
    int in_comment = 0, in_string = 0, bad = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (in_comment) {
            if (text[i] == '*' && text[i + 1] == '/')
                in_comment = 0, i++;
        } else if (in_string) {
            if (text[i] == '"')
                in_string = 0;
        } else if (text[i] == '"') {
            in_string = 1;
        } else if (text[i] == '/' && text[i + 1] == '*') {
            in_comment = 1, i++;
        } else if (text[i] == '*' && text[i + 1] == '/') {
            bad = 1;
        } else if (text[i] == '/' && text[i + 1] == '/') {
            while (i < n && text[i] != '\n')
                i++;
        }
    }
    cr_assert_not(bad, "a comment ended early in:\n%s", text);
    cr_assert(strstr(text, "{\"a*/b\", fdl_embedded_0"), "the name itself is kept:\n%s", text);
    unlink(out);
    unlink(in);
    snprintf(in, sizeof in, "%s/k*/", dir);
    rmdir(in);
    rmdir(dir);
}

/* ---- the GPU ctest assigned (CTEST_RESOURCE_GROUP_*) ---------------------------------------- */

static void clear_device_env(void)
{
    static const char *const vars[] = {
        "CTEST_RESOURCE_GROUP_COUNT", "CTEST_RESOURCE_GROUP_0", "CTEST_RESOURCE_GROUP_0_GPUS",
        "CTEST_RESOURCE_GROUP_1",     "CTEST_RESOURCE_GROUP_1_GPUS", "FDLINK_DEVICE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        cr_assert_eq(unsetenv(vars[i]), 0);
}

static int default_ordinal(void)
{
    int ordinal = -5;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_default_ordinal(&ordinal, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s", fdl_status_name(rc), err.message);
    return ordinal;
}

Test(host_device, the_default_is_ctest_then_fdlink_device_then_zero)
{
    clear_device_env();
    cr_assert_eq(default_ordinal(), 0);
    cr_assert_eq(setenv("FDLINK_DEVICE", "2", 1), 0);
    cr_assert_eq(default_ordinal(), 2);
    /* ctest's assignment comes before FDLINK_DEVICE */
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_COUNT", "1", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0", "gpus", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:1,slots:1", 1), 0);
    cr_assert_eq(default_ordinal(), 1);
    /* several entries (a group asking for two GPUs): the first */
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:7,slots:2;id:3,slots:1", 1), 0);
    cr_assert_eq(default_ordinal(), 7);
    /* a group of other resources is passed over for the first that holds gpus */
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_COUNT", "2", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0", "licenses", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_1", "licenses,gpus", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_1_GPUS", "id:12,slots:4", 1), 0);
    cr_assert_eq(default_ordinal(), 12);
    /* groups but none with gpus: FDLINK_DEVICE, then 0 */
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_1", "licenses", 1), 0);
    cr_assert_eq(default_ordinal(), 2);
    cr_assert_eq(unsetenv("FDLINK_DEVICE"), 0);
    cr_assert_eq(default_ordinal(), 0);
    /* no groups at all */
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_COUNT", "0", 1), 0);
    cr_assert_eq(default_ordinal(), 0);
}

Test(host_device, malformed_ctest_variables_are_einval_before_the_driver)
{
    clear_device_env();
    cr_assert_eq(setenv("FDLINK_LIBCUDA", "/nonexistent/libcuda.so.1", 1), 0);
    static const struct {
        const char *count, *group0, *gpus0, *message;
    } bad[] = {
        {"x", "gpus", "id:0,slots:1",
         "CTEST_RESOURCE_GROUP_COUNT='x' is not a number of resource groups (expected 0 to 4096)"},
        {"-1", "gpus", "id:0,slots:1",
         "CTEST_RESOURCE_GROUP_COUNT='-1' is not a number of resource groups (expected 0 to 4096)"},
        {"99999", "gpus", "id:0,slots:1",
         "CTEST_RESOURCE_GROUP_COUNT='99999' is not a number of resource groups (expected 0 to "
         "4096)"},
        {"1", NULL, NULL,
         "CTEST_RESOURCE_GROUP_COUNT is 1 but CTEST_RESOURCE_GROUP_0 is not set (is ctest running "
         "this test?)"},
        {"1", "gpus", NULL, "CTEST_RESOURCE_GROUP_0 lists gpus but CTEST_RESOURCE_GROUP_0_GPUS is "
                            "not set"},
        {"1", "gpus", "id:gpu0,slots:1",
         "CTEST_RESOURCE_GROUP_0_GPUS='id:gpu0,slots:1' does not name a device: expected "
         "'id:N,slots:M' with N a device number, as the spec of 'fdlink resource-spec' gives"},
        {"1", "gpus", "id:1", NULL},
        {"1", "gpus", "id:,slots:1", NULL},
        {"1", "gpus", "slots:1,id:1", NULL},
        {"1", "gpus", "id:1,slots:0", NULL},
        {"1", "gpus", "id:1,slots:x", NULL},
        {"1", "gpus", "id:-1,slots:1", NULL},
        {"1", "gpus", "id:1,slots:1;id:2", NULL},
        {"1", "gpus", "id:99999999999,slots:1", NULL},
        {"1", "gpus", ";", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        clear_device_env();
        cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_COUNT", bad[i].count, 1), 0);
        if (bad[i].group0)
            cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0", bad[i].group0, 1), 0);
        if (bad[i].gpus0)
            cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0_GPUS", bad[i].gpus0, 1), 0);
        /* FDLINK_DEVICE does not hide a malformed assignment */
        cr_assert_eq(setenv("FDLINK_DEVICE", "0", 1), 0);
        int ordinal = 3;
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_device_default_ordinal(&ordinal, &err), FDL_EINVAL, "case %zu", i);
        cr_assert_eq(ordinal, -1);
        if (bad[i].message)
            cr_assert_str_eq(err.message, bad[i].message);
        else
            cr_assert(strstr(err.message, "CTEST_RESOURCE_GROUP_0_GPUS='") &&
                          strstr(err.message, "' does not name a device"),
                      "case %zu: %s", i, err.message);
        /* and fdl_device_open(-1) says the same, before loading the driver */
        fdl_device *dev = NULL;
        fdl_error open_err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_device_open(&dev, -1, &open_err), FDL_EINVAL, "case %zu", i);
        cr_assert_str_eq(open_err.message, err.message);
        cr_assert_null(dev);
    }
    /* a well-formed assignment gets as far as the driver */
    clear_device_env();
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_COUNT", "1", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0", "gpus", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:0,slots:1", 1), 0);
    fdl_device *dev = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_ENOLIB, "%s", err.message);
}

Test(host_device, a_resource_spec_without_a_driver_lists_no_gpus)
{
    cr_assert_eq(setenv("FDLINK_LIBCUDA", "/nonexistent/libcuda.so.1", 1), 0);
    char *json = NULL;
    size_t len = 0;
    int ngpus = -1;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_ctest_resource_spec(&json, &len, &ngpus, 1, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(ngpus, 0);
    cr_assert_str_eq(json, "{\n"
                           "  \"version\": {\n"
                           "    \"major\": 1,\n"
                           "    \"minor\": 0\n"
                           "  },\n"
                           "  \"local\": [\n"
                           "    {\n"
                           "      \"gpus\": []\n"
                           "    }\n"
                           "  ]\n"
                           "}\n");
    cr_assert_eq(len, strlen(json));
    free(json);
    json = (char *)"not reset";
    cr_assert_eq(fdl_device_ctest_resource_spec(&json, NULL, NULL, 0, &err), FDL_EINVAL);
    cr_assert_null(json);
    cr_assert_str_eq(err.message, "0 slots per GPU (expected 1 to 1024)");
    cr_assert_eq(fdl_device_ctest_resource_spec(&json, NULL, NULL, 1025, &err), FDL_EINVAL);
}

/* Issue 38: fdl_image_kernel_param_info gives PTX's classes and sizes (a cubin's: test_mock.c). */
Test(host_image, kernel_param_info_of_ptx)
{
    static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry k(.param .u64 p, .param .f32 x,\n"
                              "    .param .align 8 .b8 s[24])\n{\n ret;\n}\n";
    fdl_param_info info[3];
    size_t count = 0;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_image_kernel_param_info(ptx, sizeof ptx - 1, "k", info, 3, &count, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(count, 3);
    cr_assert_eq(info[0].cls, FDL_PARAM_UNSIGNED);
    cr_assert_eq(info[0].size, 8);
    cr_assert_eq(info[1].cls, FDL_PARAM_FLOAT);
    cr_assert_eq(info[1].size, 4);
    cr_assert_eq(info[2].cls, FDL_PARAM_BYTES);
    cr_assert_eq(info[2].size, 24);
    /* room for one: the count still says three */
    cr_assert_eq(fdl_image_kernel_param_info(ptx, sizeof ptx - 1, "k", info, 1, &count, NULL),
                 FDL_OK);
    cr_assert_eq(count, 3);
    cr_assert_eq(fdl_image_kernel_param_info(ptx, sizeof ptx - 1, "nope", info, 3, &count, &err),
                 FDL_ENOTFOUND);
    cr_assert_str_eq(err.message, "the image lists no kernel nope with its parameters");
#ifdef NDEBUG /* a NULL argument asserts in debug builds */
    cr_assert_eq(fdl_image_kernel_param_info(ptx, sizeof ptx - 1, "k", NULL, 3, &count, &err),
                 FDL_EINVAL);
#endif
}

/* Issue 40: nvJitLink 13.5's cubin, its section and program header tables at 4 mod 8 (what the
 * ELF specification allows and the driver loads), lists its kernel and the kernel's parameters
 * (fdlink run's check); before, the ELF check refused it and the image listed no kernel. */
Test(host_image, kernel_params_of_nvjitlink_13_5s_cubin)
{
    FILE *f = fopen(FDL_TEST_DATA "/link/nvjitlink135/twice_sm90.cubin", "rb");
    cr_assert_not_null(f);
    static unsigned char cubin[65536];
    size_t n = fread(cubin, 1, sizeof cubin, f);
    fclose(f);
    cr_assert_gt(n, 64);
    size_t count = 0, sizes[2] = {0, 0};
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_image_kernel_params(cubin, n, "twice", &count, sizes, 2, &err);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    cr_assert_eq(count, 2);
    cr_assert_eq(sizes[0], 8, "float *x");
    cr_assert_eq(sizes[1], 4, "int n");
}

/* fdl_image_kernel_params without a GPU: PTX says the count (no sizes), bad arguments are
 * refused, bytes that are no image list no kernel. */
Test(host_image, kernel_params_of_ptx_and_of_no_image)
{
    static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry k(.param .u64 p, .param .f32 x)\n{\n ret;\n}\n";
    size_t count = 0, sizes[2] = {5, 5};
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_image_kernel_params(ptx, sizeof ptx - 1, "k", &count, sizes, 2, &err);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    cr_assert_eq(count, 2);
    cr_assert_eq(sizes[0], 0, "PTX's kernel list says no sizes");
    cr_assert_eq(fdl_image_kernel_params(ptx, sizeof ptx - 1, "other", &count, NULL, 0, NULL),
                 FDL_ENOTFOUND);
    cr_assert_eq(fdl_image_kernel_params("\x01\x02\x03", 3, "k", &count, NULL, 0, NULL),
                 FDL_ENOTFOUND);
#ifdef NDEBUG /* a NULL argument asserts in debug builds */
    cr_assert_eq(fdl_image_kernel_params(NULL, 0, "k", &count, NULL, 0, &err), FDL_EINVAL);
    cr_assert_eq(fdl_image_kernel_params(ptx, sizeof ptx - 1, "k", NULL, NULL, 0, NULL),
                 FDL_EINVAL);
#endif
}

/* The one .nv.info reader (link/src/formats/cubin.c), as fdl_image_kernel_params reads a
 * kernel's .nv.info.<kernel> section: parameters by ordinal with their sizes, the cooperative
 * flag, and nothing said of a section that is not whole. */
Test(host_image, nv_info_kernel_section)
{
    /* KPARAM_INFO (SVAL, 12 bytes): index, ordinal, offset, flags with the size in bits 18.. */
    static const unsigned char good[] = {
        0x04, 0x17, 12, 0, 0, 0, 0, 0, 1, 0, 8, 0, 0, 0, 0x10, 0x00, /* ordinal 1: 4 bytes */
        0x04, 0x17, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x00, /* ordinal 0: 8 bytes */
        0x03, 0x1b, 0xff, 0x00,                                      /* an HVAL: passed over */
        0x04, 0x28, 4, 0, 0x10, 0, 0, 0,                             /* cooperative groups */
    };
    fdl__nv_kernel k;
    cr_assert_eq(fdl__nv_info_kernel(good, sizeof good, &k), 1);
    cr_assert_eq(k.nparams, 2);
    cr_assert_eq(k.coop, 1);
    cr_assert_not_null(k.sizes);
    cr_assert_eq(k.sizes[0], 8);
    cr_assert_eq(k.sizes[1], 4);
    free(k.sizes);
    /* the attributes one by one, the last ending the section */
    uint64_t off = 0;
    fdl__nv_attr a;
    size_t n = 0;
    int more;
    while ((more = fdl__nv_info_next(good, sizeof good, &off, &a)) == 1)
        n++;
    cr_assert_eq(more, 0);
    cr_assert_eq(n, 4);
    cr_assert_eq(off, sizeof good);
    /* not whole: bytes left over, a format not known, a value past the end, a parameter's
     * attribute not a 12-byte SVAL */
    cr_assert_eq(fdl__nv_info_kernel(good, sizeof good - 2, &k), 0);
    static const unsigned char fmt5[] = {0x05, 0x17, 0, 0};
    cr_assert_eq(fdl__nv_info_kernel(fmt5, sizeof fmt5, &k), 0);
    off = 0;
    cr_assert_eq(fdl__nv_info_next(fmt5, sizeof fmt5, &off, &a), -1);
    static const unsigned char past[] = {0x04, 0x28, 8, 0, 0, 0, 0, 0};
    cr_assert_eq(fdl__nv_info_kernel(past, sizeof past, &k), 0);
    static const unsigned char hval[] = {0x03, 0x17, 0, 0};
    cr_assert_eq(fdl__nv_info_kernel(hval, sizeof hval, &k), 0);
    /* none: a kernel without parameters */
    cr_assert_eq(fdl__nv_info_kernel(good + 32, 4, &k), 1);
    cr_assert_eq(k.nparams, 0);
    cr_assert_null(k.sizes);
}
