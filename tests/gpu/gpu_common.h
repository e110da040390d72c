/*
 * Helpers shared by the GPU test binaries (test_gpu, test_gpu_fault): open the GPU ctest assigned
 * or skip, link the mul/caller fixtures for it, load the result, make buffers. Needs
 * <criterion/criterion.h>, fdlink/host.h, fdlink/link.h and LINK_DATA defined before it.
 */
#ifndef FDL_TEST_GPU_COMMON_H
#define FDL_TEST_GPU_COMMON_H

#include <string.h>

static inline int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static inline fdl_device *open_or_skip(void)
{
    int count = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_count(&count, &err);
    if (rc == FDL_ENOLIB || rc == FDL_ENODEVICE) {
        if (starts_with(err.message, "no CUDA device"))
            cr_skip_test("%s", err.message);
        cr_skip_test("no CUDA device: %s", err.message);
    }
    cr_assert_eq(rc, FDL_OK, "fdl_device_count: %s %s", fdl_status_name(rc), err.message);
    cr_assert_gt(count, 0);
    /* -1: the GPU ctest assigned (ctest --resource-spec-file), else FDLINK_DEVICE, else 0 */
    fdl_device *dev = NULL;
    rc = fdl_device_open(&dev, -1, &err);
    cr_assert_eq(rc, FDL_OK, "fdl_device_open: %s %s", fdl_status_name(rc), err.message);
    cr_assert_not_null(dev);
    return dev;
}

/* mul.ptx + caller.ptx linked for the device's architecture. */
static inline fdl_link *link_for(const fdl_device *dev)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(dev);
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s: %s", opts.arch, err.message);
    cr_assert_eq(fdl_link_add_file(link, LINK_DATA "/mul.ptx", FDL_KIND_AUTO, &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_link_add_file(link, LINK_DATA "/caller.ptx", FDL_KIND_AUTO, &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    return link;
}

static inline fdl_module *load_linked(fdl_device *dev, const fdl_link *link)
{
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    cr_assert_not_null(cubin);
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_module_load_data(&mod, dev, cubin, size, "showcase.cubin", &err);
    cr_assert_eq(rc, FDL_OK, "%s %s", fdl_status_name(rc), err.message);
    return mod;
}

static inline fdl_buffer *new_buffer(fdl_device *dev, size_t size)
{
    fdl_buffer *buf = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_buffer_create(&buf, dev, size, &err), FDL_OK, "%s", err.message);
    return buf;
}

#endif
