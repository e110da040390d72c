/*
 * Tests of the host runtime that need no GPU (host/src, fdlink/host.h): loading the driver, the
 * errors when it is missing or is the toolkit's stub, argument checks, NULL destroyers. Work on a
 * device is tested in tests/gpu/test_gpu.c.
 *
 * Criterion runs each test in its own process, so a test that sets FDLINK_LIBCUDA before its
 * first call sees a fresh table of driver entry points.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdlink/host.h"

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
    cr_assert_str_empty(fdl_device_name(NULL));
    cr_assert_str_empty(fdl_device_arch(NULL));
    cr_assert_eq(fdl_device_cc(NULL), 0);
    cr_assert_eq(fdl_device_driver_version(NULL), 0);
    cr_assert_str_empty(fdl_kernel_name(NULL));
    cr_assert_str_empty(fdl_module_info_log(NULL));
    cr_assert_eq(fdl_buffer_address(NULL), 0);
    cr_assert_eq(fdl_buffer_size(NULL), 0);
}
