/*
 * Fuzz the binary readers: input kind detection (fdl_input_detect), then fdl_inspect_data, which
 * unpacks a cubin, a fatbin (LZ4 and zstd members decompressed), a static library, a host object
 * or an NVVM (LTO-IR) container and scans every image in it; and the readers of a module image
 * that the host runtime uses before and after the driver loads it: the kernel names and the
 * parameter counts (.nv.info EIATTR_KPARAM_INFO, PTX .entry lists, fatbin members), and the search
 * of a fatbin's members for the device status record. The input is
 * exactly `size` bytes. Properties: a failure fills the error record well (fuzz.h); a success
 * gives images whose strings are terminated and whose symbols have names; the kernel and
 * parameter lists are consistent (names non-empty, no duplicate names). The ELF validation's
 * oracle (issue 22): a cubin that inspection accepts has, checked here independently of
 * link/src/elfread.c, every table and name inside the file: what a linker reads of it is there.
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

static uint64_t rd(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int inside(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

/* An accepted cubin: its tables and names lie inside it (the validation's invariants). */
static void check_accepted_cubin(const uint8_t *p, size_t size)
{
    if (size < 64 || memcmp(p, "\x7f" "ELF", 4) != 0 || rd(p + 18, 2) != 190)
        return;
    uint64_t shoff = rd(p + 40, 8), shnum = rd(p + 60, 2), shstrndx = rd(p + 62, 2);
    uint64_t phoff = rd(p + 32, 8), phnum = rd(p + 56, 2);
    FUZZ_REQUIRE(shoff >= 64 && rd(p + 58, 2) == 64 && inside(shoff, shnum * 64, size),
                 "accepted cubin: section table (%llu entries at %llu) not inside its %zu bytes",
                 (unsigned long long)shnum, (unsigned long long)shoff, size);
    FUZZ_REQUIRE(phnum == 0 || inside(phoff, phnum * 56, size),
                 "accepted cubin: program header table outside the file");
    FUZZ_REQUIRE(shnum > 1 && shstrndx < shnum, "accepted cubin: section name table %llu of %llu",
                 (unsigned long long)shstrndx, (unsigned long long)shnum);
    const uint8_t *names = p + shoff + shstrndx * 64;
    uint64_t names_off = rd(names + 24, 8), names_size = rd(names + 32, 8);
    FUZZ_REQUIRE(names_size && inside(names_off, names_size, size) &&
                     p[names_off + names_size - 1] == 0,
                 "accepted cubin: the section name table is not inside the file, NUL-ended");
    for (uint64_t i = 1; i < shnum; i++) {
        const uint8_t *sh = p + shoff + i * 64;
        uint32_t type = (uint32_t)rd(sh + 4, 4);
        uint64_t off = rd(sh + 24, 8), len = rd(sh + 32, 8);
        FUZZ_REQUIRE(rd(sh, 4) < names_size, "accepted cubin: section %llu's name outside",
                     (unsigned long long)i);
        if (type == 8 || type == 0x70000007u || type == 0x70000009u || type == 0x7000000au ||
            type == 0x70000015u)
            continue; /* no bytes in the file: NOBITS, .nv.global, .nv.local, .nv.shared */
        FUZZ_REQUIRE(inside(off, len, size), "accepted cubin: section %llu outside the file",
                     (unsigned long long)i);
        if (type != 2)
            continue;
        /* the symbol table: whole entries, names inside its NUL-ended string table */
        uint64_t link = rd(sh + 40, 4);
        FUZZ_REQUIRE(rd(sh + 56, 8) == 24 && len % 24 == 0 && link && link < shnum,
                     "accepted cubin: symbol table %llu malformed", (unsigned long long)i);
        const uint8_t *st = p + shoff + link * 64;
        uint64_t st_off = rd(st + 24, 8), st_size = rd(st + 32, 8);
        FUZZ_REQUIRE(st_size && inside(st_off, st_size, size) && p[st_off + st_size - 1] == 0,
                     "accepted cubin: string table %llu not inside, NUL-ended",
                     (unsigned long long)link);
        for (uint64_t k = 0; k < len / 24; k++)
            FUZZ_REQUIRE(rd(p + off + k * 24, 4) < st_size,
                         "accepted cubin: symbol %llu's name past its string table",
                         (unsigned long long)k);
    }
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
        check_accepted_cubin(data, size);
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
