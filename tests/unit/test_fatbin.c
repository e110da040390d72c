/*
 * Fat binaries and warm deployments (issue 40): fdl_fatbin_create (the layout nvcc's fatbinary
 * writes, each entry's bytes unchanged, read back by fdl_inspect_data), fdl_links_complete (links
 * side by side, each with its own record), and require_warm (a miss of a link or a compile is
 * FDL_ENOTFOUND naming it and its key). With the real nvJitLink and NVRTC, which need no GPU.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/link.h"
#include "internal.h"

static const char SOURCE[] =
    "extern \"C\" __global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\n";

static fdl_link *cuda_link(const char *arch, int emit_ptx, const char *cache_dir, int warm,
                           const char *source)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = arch;
    opts.emit_ptx = emit_ptx;
    opts.require_warm = warm;
    if (cache_dir) {
        opts.cache = FDL_CACHE_ON;
        opts.cache_dir = cache_dir;
        opts.cache_remote = "";
    } else {
        opts.cache = FDL_CACHE_OFF;
    }
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_create(&link, &opts, &err);
    cr_assert_eq(rc, FDL_OK, "create %s: %s", arch, err.message);
    rc = fdl_link_add_cuda(link, source, strlen(source), "twice.cu", NULL, &err);
    cr_assert_eq(rc, FDL_OK, "add: %s", err.message);
    return link;
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

Test(fatbin_create, entries_byte_equal_to_the_links_and_read_back)
{
    fdl_link *links[2] = {cuda_link("sm_80", 0, NULL, -1, SOURCE),
                          cuda_link("sm_90", 1, NULL, -1, SOURCE)};
    fdl_error errs[2];
    int rc = fdl_links_complete(links, 2, 2, errs);
    cr_assert_eq(rc, FDL_OK, "%s / %s", errs[0].message, errs[1].message);
    fdl_fatbin_entry e[3];
    memset(e, 0, sizeof e);
    e[0].kind = FDL_KIND_CUBIN;
    e[0].arch = 80;
    e[0].data = fdl_link_cubin(links[0], &e[0].size);
    e[1].kind = FDL_KIND_CUBIN;
    e[1].arch = 90;
    e[1].data = fdl_link_cubin(links[1], &e[1].size);
    e[2].kind = FDL_KIND_PTX;
    e[2].arch = 90;
    e[2].data = fdl_link_ptx(links[1], &e[2].size);
    cr_assert_not_null(e[2].data);
    void *fat = NULL;
    size_t size = 0;
    fdl_error err = FDL_ERROR_INIT;
    rc = fdl_fatbin_create(&fat, &size, e, 3, &err);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    const unsigned char *p = fat;
    /* the container: magic, version 1, header 16, the body the rest */
    cr_expect_eq(le32(p), 0xBA55ED50u);
    cr_expect_eq(p[4] | p[5] << 8, 1);
    cr_expect_eq(p[6] | p[7] << 8, 16);
    cr_expect_eq(le64(p + 8), size - 16);
    size_t at = 16;
    for (int i = 0; i < 3; i++) {
        const unsigned char *h = p + at;
        unsigned hsize = le32(h + 4);
        uint64_t psize = le64(h + 8);
        cr_assert_eq(h[0] | h[1] << 8, e[i].kind == FDL_KIND_PTX ? 1 : 2, "entry %d's kind", i);
        cr_expect_eq(hsize, e[i].kind == FDL_KIND_PTX ? 80u : 64u);
        cr_expect_eq(le32(h + 28), e[i].arch);
        cr_expect_eq(le64(h + 40), 0x11u, "64-bit, Linux, not compressed");
        cr_expect_eq(psize % 8, 0u);
        cr_assert(psize >= e[i].size && at + hsize + psize <= size);
        cr_expect(memcmp(h + hsize, e[i].data, e[i].size) == 0, "entry %d's bytes", i);
        for (uint64_t j = e[i].size; j < psize; j++)
            cr_assert_eq(h[hsize + j], 0, "entry %d padded with zeros", i);
        if (e[i].kind == FDL_KIND_PTX)
            cr_expect(psize > e[i].size, "PTX NUL-terminated");
        at += hsize + (size_t)psize;
    }
    cr_expect_eq(at, size);
    /* fdlink reads it as it reads nvcc's */
    fdl_inspection *ins = NULL;
    rc = fdl_inspect_data(&ins, fat, size, "app.fatbin", FDL_KIND_AUTO, &err);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    cr_expect_eq(fdl_inspection_kind(ins), FDL_KIND_FATBIN);
    cr_assert_eq(fdl_inspection_count(ins), 3);
    cr_expect_str_eq(fdl_inspection_image(ins, 0)->arch, "sm_80");
    cr_expect_str_eq(fdl_inspection_image(ins, 1)->arch, "sm_90");
    cr_expect_str_eq(fdl_inspection_image(ins, 2)->arch, "compute_90");
    cr_expect_eq(fdl_inspection_image(ins, 2)->kind, FDL_KIND_PTX);
    cr_expect_str_eq(fdl_inspection_image(ins, 2)->ptx_version, "9.0");
    cr_expect_eq(fdl_inspection_image(ins, 1)->nsymbols > 0, 1);
    fdl_inspection_destroy(ins);
    free(fat);
    fdl_link_destroy(links[0]);
    fdl_link_destroy(links[1]);
}

Test(fatbin_create, refuses_what_it_cannot_write)
{
    static const char ptx[] = "//\n.version 8.5\n.target sm_80\n.address_size 64\n";
    static const char not_ptx[] = "hello";
    void *fat = (void *)1;
    size_t size = 7;
    fdl_error err = FDL_ERROR_INIT;
    cr_expect_eq(fdl_fatbin_create(&fat, &size, NULL, 0, &err), FDL_EINVAL);
    cr_expect_null(fat);
    cr_expect_eq(size, 0);
    cr_expect_str_eq(err.message, "a fatbin needs at least one entry");
    fdl_fatbin_entry e[2] = {{FDL_KIND_PTX, 80, ptx, sizeof ptx - 1},
                             {FDL_KIND_PTX, 80, ptx, sizeof ptx - 1}};
    cr_expect_eq(fdl_fatbin_create(&fat, &size, e, 2, &err), FDL_EINVAL);
    cr_expect_str_eq(err.message, "fatbin entries 1 and 2 are both ptx for compute_80");
    e[1].kind = FDL_KIND_CUBIN;
    cr_expect_eq(fdl_fatbin_create(&fat, &size, e, 2, &err), FDL_EINVAL);
    cr_expect(strstr(err.message, "fatbin entry 2 (sm_80) is not a cubin") == err.message,
              "%s", err.message);
    e[0].data = not_ptx;
    e[0].size = sizeof not_ptx - 1;
    cr_expect_eq(fdl_fatbin_create(&fat, &size, e, 1, &err), FDL_EINVAL);
    cr_expect_str_eq(err.message, "fatbin entry 1 (compute_80) is not PTX (no .version directive)");
    e[0].data = ptx;
    e[0].size = sizeof ptx - 1;
    e[0].arch = 8;
    cr_expect_eq(fdl_fatbin_create(&fat, &size, e, 1, &err), FDL_EINVAL);
    e[0].arch = 80;
    e[0].kind = FDL_KIND_LTOIR;
    cr_expect_eq(fdl_fatbin_create(&fat, &size, e, 1, &err), FDL_EINVAL);
    cr_expect_str_eq(err.message, "fatbin entry 1: kind ltoir cannot be written (cubin or ptx)");
    /* PTX alone: a fatbin the driver JITs */
    e[0].kind = FDL_KIND_PTX;
    cr_assert_eq(fdl_fatbin_create(&fat, &size, e, 1, &err), FDL_OK, "%s", err.message);
    cr_expect_eq(size, 16 + 80 + 48); /* 45 bytes, a NUL, padded to 48 */
    free(fat);
}

Test(links_complete, each_link_its_own_record)
{
    static const char bad[] =
        "extern \"C\" __device__ float missing(float);\n"
        "extern \"C\" __global__ void k(float *x) { x[0] = missing(x[0]); }\n";
    fdl_link *links[3] = {cuda_link("sm_80", 0, NULL, -1, SOURCE),
                          cuda_link("sm_90", 0, NULL, -1, bad),
                          cuda_link("sm_90", 0, NULL, -1, SOURCE)};
    fdl_error errs[3];
    int rc = fdl_links_complete(links, 3, 0, errs);
    cr_expect_eq(rc, FDL_ELINK, "%s", fdl_status_name(rc));
    cr_expect_eq(errs[0].code, FDL_OK);
    cr_expect_eq(errs[1].code, FDL_ELINK);
    cr_expect(strstr(errs[1].message, "missing") != NULL, "%s", errs[1].message);
    cr_expect_eq(errs[2].code, FDL_OK);
    cr_expect_not_null(fdl_link_cubin(links[0], NULL) ? links[0] : NULL);
    size_t s = 0;
    cr_expect_not_null(fdl_link_cubin(links[2], &s));
    for (int i = 0; i < 3; i++)
        fdl_link_destroy(links[i]);
    cr_expect_eq(fdl_links_complete(NULL, 0, 0, NULL), FDL_OK);
}

Test(require_warm, a_miss_is_an_error_naming_it_and_a_hit_passes)
{
    char *dir = make_temp_dir();
    fdl_error err = FDL_ERROR_INIT;
    /* cold: the NVRTC compile of the source misses first, named with its key */
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = FDL_CACHE_ON;
    opts.cache_dir = dir;
    opts.cache_remote = "";
    opts.require_warm = 1;
    fdl_link *link = NULL;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    int rc = fdl_link_add_cuda(link, SOURCE, strlen(SOURCE), "twice.cu", NULL, &err);
    cr_expect_eq(rc, FDL_ENOTFOUND, "%s", fdl_status_name(rc));
    cr_expect_str_eq(err.source, "twice.cu");
    cr_expect(strstr(err.message, "cache miss: the NVRTC compile of twice.cu for sm_90 (key ") ==
                  err.message, "%s", err.message);
    cr_expect(strstr(err.message, "require_warm forbids making it") != NULL, "%s", err.message);
    fdl_link_destroy(link);
    /* warmed, then required: a hit */
    link = cuda_link("sm_90", 0, dir, -1, SOURCE);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    fdl_link_destroy(link);
    link = cuda_link("sm_90", 0, dir, 1, SOURCE);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    const char *key = NULL;
    cr_expect_neq(fdl_link_cache_result(link, &key), FDL_CACHE_MISS);
    fdl_link_destroy(link);
    /* the compile is warm but this link is not: the link is named */
    fdl_link_options o2 = opts;
    o2.maxrregcount = 32; /* another link of the same compile */
    cr_assert_eq(fdl_link_create(&link, &o2, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_cuda(link, SOURCE, strlen(SOURCE), "twice.cu", NULL, &err), FDL_OK,
                 "%s", err.message);
    rc = fdl_link_complete(link, &err);
    cr_expect_eq(rc, FDL_ENOTFOUND, "%s", err.message);
    cr_expect(strstr(err.message, "cache miss: the link of twice.cu for sm_90 (key ") ==
                  err.message, "%s", err.message);
    cr_expect_null(fdl_link_cubin(link, NULL));
    fdl_link_destroy(link);
    free(dir);
}

Test(require_warm, the_environment_decides_when_the_option_is_0)
{
    char *dir = make_temp_dir();
    fdl_error err = FDL_ERROR_INIT;
    static const char other[] = "extern \"C\" __global__ void other(float *x) { x[0] = 1; }\n";
    setenv("FDLINK_REQUIRE_WARM", "1", 1);
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = FDL_CACHE_ON;
    opts.cache_dir = dir;
    opts.cache_remote = "";
    fdl_link *link = NULL;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    int rc = fdl_link_add_cuda(link, other, strlen(other), "other.cu", NULL, &err);
    cr_expect_eq(rc, FDL_ENOTFOUND);
    cr_expect(strstr(err.message, "FDLINK_REQUIRE_WARM forbids making it") != NULL, "%s",
              err.message);
    fdl_link_destroy(link);
    opts.require_warm = -1; /* this link: never */
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_expect_eq(fdl_link_add_cuda(link, other, strlen(other), "other.cu", NULL, &err), FDL_OK,
                 "%s", err.message);
    cr_expect_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    fdl_link_destroy(link);
    /* without the cache, nothing can be warm */
    setenv("FDLINK_REQUIRE_WARM", "yes", 1);
    opts.require_warm = 0;
    opts.cache = FDL_CACHE_OFF;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_expect_eq(fdl_link_add_cuda(link, other, strlen(other), "other.cu", NULL, &err),
                 FDL_ENOTFOUND);
    cr_expect(strstr(err.message, "needs the cache, which is not in use") != NULL, "%s",
              err.message);
    fdl_link_destroy(link);
    opts.require_warm = 2;
    cr_expect_eq(fdl_link_options_check(&opts, &err), FDL_EINVAL);
    cr_expect_str_eq(err.message, "require_warm is 2 (expected -1, 0 or 1)");
    free(dir);
}

Test(require_warm, a_version_5_struct_has_no_require_warm)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    fdl_error err = FDL_ERROR_INIT;
    cr_expect_eq(opts.version, 6);
    cr_expect_eq(opts.require_warm, 0);
    opts.arch = "sm_90";
    opts.version = 5;
    opts.require_warm = 77; /* past a version-5 struct's end: never read */
    cr_expect_eq(fdl_link_options_check(&opts, &err), FDL_OK, "%s", err.message);
    opts.version = 6;
    cr_expect_eq(fdl_link_options_check(&opts, &err), FDL_EINVAL);
}
