/*
 * What `fdlink doctor` asks of the library (abi/src/probe.h): the PTX ISA of each CUDA release,
 * where a loaded function lives, the toolkit found, the libraries' probes when they cannot be
 * loaded, and the link options' own checks that the CLI makes before it opens a device.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <gnu/libc-version.h>
#include <string.h>
#include <sys/stat.h>

#include "fdlink/link.h"
#include "hostprobe.h"

Test(probe, ptx_isa_of_each_cuda_release)
{
    cr_expect_eq(fdl__ptx_isa_of_cuda(12000), 80);
    cr_expect_eq(fdl__ptx_isa_of_cuda(12040), 84);
    cr_expect_eq(fdl__ptx_isa_of_cuda(12050), 85);
    cr_expect_eq(fdl__ptx_isa_of_cuda(12060), 85); /* 12.6 kept ISA 8.5 */
    cr_expect_eq(fdl__ptx_isa_of_cuda(12080), 87);
    cr_expect_eq(fdl__ptx_isa_of_cuda(12090), 88);
    cr_expect_eq(fdl__ptx_isa_of_cuda(13000), 90);
    cr_expect_eq(fdl__ptx_isa_of_cuda(12041), 84); /* a patch release: its minor's */
    cr_expect_eq(fdl__ptx_isa_of_cuda(10020), 0);  /* older than the table */
    cr_expect_eq(fdl__ptx_isa_of_cuda(99000), 91); /* newer: the newest known, a lower bound */
}

/* gnu_get_libc_version: in libc, and not intercepted by the sanitizers (puts is, by ASan) */
Test(probe, library_of_a_function)
{
    char path[FDL__PROBE_PATH_MAX];
    cr_assert(fdl__library_of((void (*)(void))gnu_get_libc_version, path, sizeof path));
    cr_expect(strstr(path, "libc") != NULL, "%s", path);
    cr_expect_eq(fdl__library_of(NULL, path, sizeof path), 0);
    cr_expect_str_eq(path, "");
    char tiny[4];
    cr_expect_eq(fdl__library_of((void (*)(void))gnu_get_libc_version, tiny, sizeof tiny), 0, "too small");
}

Test(probe, toolkit_from_fdlink_cuda_root)
{
    char *dir = make_temp_dir();
    char *inc = path_in(dir, "include"), *bin = path_in(dir, "bin");
    cr_assert_eq(mkdir(inc, 0755), 0);
    cr_assert_eq(mkdir(bin, 0755), 0);
    char *header = path_in(inc, "cuda.h"), *nvcc = path_in(bin, "nvcc");
    FILE *f = fopen(header, "w");
    cr_assert_not_null(f);
    fputs("#ifndef CUDA_H\n#define CUDA_VERSION 12040\n#endif\n", f);
    fclose(f);
    f = fopen(nvcc, "w");
    cr_assert_not_null(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    cr_assert_eq(chmod(nvcc, 0755), 0);
    setenv("FDLINK_CUDA_ROOT", dir, 1);
    fdl__toolkit_probe tk;
    fdl__probe_toolkit(&tk);
    cr_expect_str_eq(tk.root, dir);
    cr_expect_eq(tk.version, 12040);
    cr_expect_str_eq(tk.nvcc, nvcc);
    /* no nvcc there: the toolkit is still found, nvcc is not */
    cr_assert_eq(remove(nvcc), 0);
    fdl__probe_toolkit(&tk);
    cr_expect_str_eq(tk.root, dir);
    cr_expect_str_eq(tk.nvcc, "");
    remove(header);
    rmdir(inc);
    rmdir(bin);
    rmdir(dir);
    free(header);
    free(nvcc);
    free(inc);
    free(bin);
    free(dir);
}

Test(probe, toolkit_root_without_headers_is_skipped)
{
    char *dir = make_temp_dir();
    setenv("FDLINK_CUDA_ROOT", dir, 1);
    fdl__toolkit_probe tk;
    fdl__probe_toolkit(&tk);
    cr_expect_neq(strcmp(tk.root, dir), 0, "a folder without include/cuda.h is no toolkit");
    rmdir(dir);
    free(dir);
}

Test(probe, driver_missing)
{
    setenv("FDLINK_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    fdl__lib_probe p;
    fdl__probe_driver(&p);
    cr_expect_eq(p.status, FDL_ENOLIB);
    cr_expect_str_eq(p.path, "");
    cr_expect_eq(p.major, -1);
    cr_expect(strstr(p.error.message, "cannot load /nonexistent/libcuda.so.1") != NULL, "%s",
              p.error.message);
}

Test(probe, nvjitlink_missing)
{
    setenv("FDLINK_NVJITLINK", "/nonexistent/libnvJitLink.so", 1);
    fdl__lib_probe p;
    fdl__probe_nvjl(&p);
    cr_expect_eq(p.status, FDL_ENOLIB);
    cr_expect_str_eq(p.path, "");
    cr_expect(strstr(p.error.message, "/nonexistent/libnvJitLink.so") != NULL, "%s",
              p.error.message);
}

Test(probe, nvrtc_and_zstd_missing)
{
    setenv("FDLINK_NVRTC", "/nonexistent/libnvrtc.so", 1);
    setenv("FDLINK_LIBZSTD", "/nonexistent/libzstd.so", 1);
    fdl__lib_probe p;
    fdl__probe_nvrtc(&p);
    cr_expect_eq(p.status, FDL_ENOLIB);
    cr_expect(strstr(p.error.message, "/nonexistent/libnvrtc.so") != NULL, "%s", p.error.message);
    fdl__probe_zstd(&p);
    cr_expect_eq(p.status, FDL_ENOLIB);
    cr_expect(strstr(p.error.message, "/nonexistent/libzstd.so") != NULL, "%s", p.error.message);
}

Test(probe, loaded_libraries_say_where_and_which)
{
    fdl__lib_probe p;
    fdl__probe_zstd(&p);
    if (p.status != FDL_OK)
        cr_skip_test("no libzstd here: %s", p.error.message);
    cr_expect(strstr(p.path, "zstd") != NULL, "%s", p.path);
    cr_expect_geq(p.major, 1);
    fdl__probe_nvjl(&p);
    if (p.status != FDL_OK)
        cr_skip_test("no nvJitLink here: %s", p.error.message);
    cr_expect(strstr(p.path, "nvJitLink") != NULL, "%s", p.path);
    cr_expect_geq(p.major, 12);
}

Test(probe, cudadevrt_missing)
{
    char *dir = make_temp_dir();
    setenv("FDLINK_CUDA_ROOT", dir, 1);
    setenv("CUDA_PATH", dir, 1);
    fdl__lib_probe p;
    fdl__probe_cudadevrt(&p, NULL);
    /* the build's toolkit and /usr/local/cuda are still looked in: found there or not at all */
    if (p.status == FDL_OK)
        cr_expect(strstr(p.path, "libcudadevrt.a") != NULL, "%s", p.path);
    else
        cr_expect(strstr(p.error.message, "libcudadevrt.a not found") != NULL, "%s",
                  p.error.message);
    rmdir(dir);
    free(dir);
}

Test(probe, link_options_checked_without_a_device)
{
    fdl_link_options o = FDL_LINK_OPTIONS_INIT;
    fdl_error err = FDL_ERROR_INIT;
    o.arch = "sm_90";
    cr_expect_eq(fdl_link_options_check(&o, &err), FDL_OK, "%s", err.message);
    o.backend = FDL_BACKEND_CULINK;
    cr_expect_eq(fdl_link_options_check(&o, &err), FDL_OK, "culink needs no context to check");
    o.lto = FDL_LTO_ON;
    cr_expect_eq(fdl_link_options_check(&o, &err), FDL_EINVAL);
    cr_expect_str_eq(err.message, "LTO needs the nvjitlink backend: cuLink cannot link LTO-IR");
    o.lto = FDL_LTO_AUTO;
    o.ftz = 1;
    cr_expect_eq(fdl_link_options_check(&o, &err), FDL_EINVAL);
    o.ftz = -1;
    o.arch = "sm_9x";
    cr_expect_eq(fdl_link_options_check(&o, &err), FDL_EINVAL);
    cr_expect(strstr(err.message, "invalid arch 'sm_9x'") != NULL, "%s", err.message);
    o.arch = "native";
    cr_expect_eq(fdl_link_options_check(&o, &err), FDL_OK, "%s", err.message);
}
