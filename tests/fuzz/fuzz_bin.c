/*
 * Fuzz the binary readers: input kind detection (fdl_input_detect), then fdl_inspect_data, which
 * unpacks a cubin, a fatbin (LZ4 and zstd members decompressed), a static library, a host object
 * or an NVVM (LTO-IR) container and scans every image in it; and the readers of a module image
 * that the host runtime uses before and after the driver loads it: the kernel names and the
 * parameter counts (.nv.info EIATTR_KPARAM_INFO, PTX .entry lists, fatbin members), and the search
 * of a fatbin's members for the device status record. The input is
 * exactly `size` bytes. Properties: a failure fills the error record well (fuzz.h); a success
 * gives images whose strings are terminated and whose symbols have names; the kernel and
 * parameter lists are consistent (names non-empty, no duplicate names).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "fdlink/link.h"
#include "fuzz.h"

static void check_image(const fdl_image *img)
{
    FUZZ_REQUIRE(img->name && img->member && img->arch && img->ptx_version && img->compression &&
                     img->note,
                 "an image string is NULL");
    FUZZ_REQUIRE(img->nsymbols == 0 || img->symbols, "symbols NULL with %zu", img->nsymbols);
    for (size_t i = 0; i < img->nsymbols; i++)
        FUZZ_REQUIRE(img->symbols[i].name, "symbol %zu has no name", i);
    if (img->ptx)
        (void)fdl_ptx_count(img->ptx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_input_kind kind;
    int rc = fdl_input_detect(&kind, data, size, "fuzz.bin", &err);
    if (rc != FDL_OK)
        fuzz_check_error(&err, rc);

    fdl_inspection *ins = NULL;
    err = (fdl_error)FDL_ERROR_INIT;
    rc = fdl_inspect_data(&ins, data, size, "fuzz.bin", FDL_KIND_AUTO, &err);
    if (rc != FDL_OK) {
        fuzz_check_error(&err, rc);
        FUZZ_REQUIRE(ins == NULL, "an inspection returned with status %d", rc);
    } else {
        for (size_t i = 0; i < fdl_inspection_count(ins); i++)
            check_image(fdl_inspection_image(ins, i));
    }
    fdl_inspection_destroy(ins);

    char **names = NULL;
    size_t count = 0;
    int known = 0;
    if (fdl__image_kernel_names(&names, &count, &known, data, size) == FDL_OK) {
        for (size_t i = 0; i < count; i++) {
            FUZZ_REQUIRE(names[i] && names[i][0], "kernel %zu has no name", i);
            FUZZ_REQUIRE(i == 0 || strcmp(names[i - 1], names[i]) < 0, "kernels not sorted");
        }
        for (size_t i = 0; i < count; i++)
            free(names[i]);
        free(names);
    }
    /* the device status record's lookup in a fatbin: every member read, or "may" */
    (void)fdl__fatbin_may_contain(data, size, "fdl_status_v1", 13);
    fdl__kparams params;
    if (fdl__image_param_counts(&params, data, size) == FDL_OK) {
        for (size_t i = 0; i < params.n; i++) {
            size_t n = 0;
            FUZZ_REQUIRE(params.v[i].name && params.v[i].name[0], "parameters of no kernel");
            FUZZ_REQUIRE(fdl__kparams_find(&params, params.v[i].name, &n) && n == params.v[i].count,
                         "kernel %s listed twice", params.v[i].name);
            FUZZ_REQUIRE(params.v[i].count <= 65536, "%zu parameters", params.v[i].count);
        }
        fdl__kparams_free(&params);
    }
    return 0;
}
