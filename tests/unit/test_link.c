/*
 * Tests of links (link/src/link.c, link/src/libs/nvjl.c, fdlink/link.h) with the real nvJitLink,
 * which needs no GPU. Fixtures: tests/data/link (PTX made by nvcc from tests/data/link/src).
 *
 * Criterion runs each test in its own process, so a test that sets FDLINK_NVJITLINK before its
 * first link sees a fresh table of entry points.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdlink/abi.h"
#include "fdlink/decl.h"
#include "fdlink/link.h"
#include "internal.h"

#define LINK_DATA FDL_TEST_DATA "/link"

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static char *slurp(const char *path, size_t *size)
{
    char *data = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl__read_file(path, &data, size, &err);
    cr_assert_eq(rc, FDL_OK, "cannot read fixture %s: %s", path, err.message);
    return data;
}

static fdl_link *new_link(const char *arch)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = arch;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_create(&link, &opts, &err);
    cr_assert_eq(rc, FDL_OK, "fdl_link_create(%s): %s %s", arch, fdl_status_name(rc), err.message);
    cr_assert_not_null(link);
    return link;
}

static void add_fixture(fdl_link *link, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", LINK_DATA, file);
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_add_file(link, path, FDL_KIND_AUTO, &err);
    cr_assert_eq(rc, FDL_OK, "add %s: %s %s", file, fdl_status_name(rc), err.message);
}

static uint16_t u16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t u32(const unsigned char *p)
{
    return (uint32_t)u16(p) | (uint32_t)u16(p + 2) << 16;
}

static uint64_t u64(const unsigned char *p)
{
    return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32;
}

static int range_ok(uint64_t off, uint64_t len, size_t size)
{
    return off <= size && len <= size - off;
}

/*
 * Minimal ELF64 reader: the machine, and whether a symbol table holds @p name. Every read is
 * bounds-checked; a malformed file fails the test.
 */
static int elf_has_symbol(const void *data, size_t size, const char *name, unsigned *machine)
{
    const unsigned char *p = data;
    cr_assert_geq(size, 64, "cubin of %zu bytes is too small for an ELF header", size);
    cr_assert(memcmp(p, "\x7f" "ELF", 4) == 0, "cubin has no ELF magic");
    cr_assert_eq(p[4], 2, "cubin is not ELF64");
    cr_assert_eq(p[5], 1, "cubin is not little-endian");
    *machine = u16(p + 18);
    uint64_t shoff = u64(p + 40);
    unsigned shentsize = u16(p + 58), shnum = u16(p + 60);
    cr_assert_geq(shentsize, 64);
    cr_assert(range_ok(shoff, (uint64_t)shnum * shentsize, size), "section headers out of range");
    int found = 0;
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
        if (u32(sh + 4) != 2 /* SHT_SYMTAB */)
            continue;
        uint64_t off = u64(sh + 24), len = u64(sh + 32), entsize = u64(sh + 56);
        unsigned link = u32(sh + 40);
        cr_assert(range_ok(off, len, size), "symbol table out of range");
        cr_assert_geq(entsize, 24);
        cr_assert_lt(link, shnum, "symbol table names no string table");
        const unsigned char *strsh = p + shoff + (uint64_t)link * shentsize;
        uint64_t stroff = u64(strsh + 24), strlen_ = u64(strsh + 32);
        cr_assert(range_ok(stroff, strlen_, size), "string table out of range");
        for (uint64_t s = 0; s + entsize <= len; s += entsize) {
            uint32_t nameoff = u32(p + off + s);
            if (nameoff >= strlen_)
                continue;
            const char *sym = (const char *)p + stroff + nameoff;
            size_t room = (size_t)(strlen_ - nameoff);
            if (strnlen(sym, room) < room && strcmp(sym, name) == 0)
                found = 1;
        }
    }
    return found;
}

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}


/* ------------------------------------------------------------------------------------------ */
/* Linking                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void link_and_inspect(const char *arch)
{
    fdl_link *link = new_link(arch);
    add_fixture(link, "mul.ptx");
    add_fixture(link, "caller.ptx");
    cr_assert_eq(fdl_link_cubin(link, NULL), NULL, "a cubin before the link completed");
    cr_assert_eq(fdl_link_wall_ms(link), 0.0);
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_complete(link, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s %s", arch, fdl_status_name(rc), err.message);
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    cr_assert_not_null(cubin);
    cr_assert_gt(size, 0);
    unsigned machine = 0;
    cr_assert(elf_has_symbol(cubin, size, "multiply_vectors", &machine),
              "%s: multiply_vectors is not in the cubin's symbol table", arch);
    cr_assert_eq(machine, 190, "%s: e_machine %u, expected 190 (EM_CUDA)", arch, machine);
    cr_assert(!elf_has_symbol(cubin, size, "no_such_symbol_xyz", &machine));
    cr_assert_gt(fdl_link_wall_ms(link), 0.0);
    cr_assert_not_null(fdl_link_info_log(link));
    cr_assert_str_empty(fdl_link_error_log(link));
    cr_assert_eq(err.code, FDL_OK, "err was touched on success");
    fdl_link_destroy(link);
}

Test(link_complete, links_ptx_for_sm_75)
{
    link_and_inspect("sm_75");
}

Test(link_complete, links_ptx_for_sm_90)
{
    link_and_inspect("sm_90");
}

Test(link_complete, links_data_from_memory_with_options)
{
    static const char *const extra[] = {"-maxrregcount=64", NULL};
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90a";
    opts.opt_level = 3;
    opts.lineinfo = 1;
    opts.verbose = 1;
    opts.extra = extra;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    const char *files[] = {"caller.ptx", "mul.ptx"};
    for (size_t i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", LINK_DATA, files[i]);
        size_t size;
        char *data = slurp(path, &size);
        /* no NUL in the bytes handed over: the link must not depend on one */
        cr_assert_eq(fdl_link_add_data(link, data, size, files[i], FDL_KIND_PTX, &err), FDL_OK,
                     "%s", err.message);
        memset(data, 'x', size); /* the link keeps its own copy */
        free(data);
    }
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    size_t size;
    const void *cubin = fdl_link_cubin(link, &size);
    unsigned machine;
    cr_assert(elf_has_symbol(cubin, size, "multiply_vectors", &machine));
    /* -verbose makes nvJitLink describe the link in the info log */
    cr_assert_str_not_empty(fdl_link_info_log(link));
    fdl_link_destroy(link);
}

Test(link_complete, undefined_symbol_names_it_and_keeps_the_log)
{
    fdl_link *link = new_link("sm_90");
    add_fixture(link, "caller.ptx");
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_complete(link, &err);
    cr_assert_eq(rc, FDL_ELINK, "got %s", fdl_status_name(rc));
    cr_assert_eq(err.code, FDL_ELINK);
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    cr_assert(strstr(err.message, "mul_f32_f32"), "message does not name the symbol: %s",
              err.message);
    cr_assert(strstr(err.message, "undefined reference"), "message: %s", err.message);
    cr_assert_neq(err.backend_code, 0);
    cr_assert_not_null(err.log);
    cr_assert(strstr(err.log, "Undefined reference to 'mul_f32_f32'"), "log: %s", err.log);
    cr_assert_eq(err.log, fdl_link_error_log(link), "err->log is not the link's log");
    cr_assert_eq(strchr(err.message, '\n'), NULL, "message is not one line");
    cr_assert_eq(fdl_link_cubin(link, NULL), NULL);
    /* a failed link stays failed */
    fdl_error again = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &again), FDL_EINVAL);
    cr_assert_str_eq(again.message, "the link is already complete");
    /* the log the first error borrowed is still valid (checked under valgrind/ASan) */
    cr_assert(strstr(err.log, "mul_f32_f32"));
    fdl_link_destroy(link);
}

Test(link_complete, multiple_definition_is_an_error)
{
    /* nvJitLink itself only prints this on stderr and links anyway (ABI-6) */
    fdl_link *link = new_link("sm_90");
    add_fixture(link, "mul.ptx");
    add_fixture(link, "caller.ptx");
    add_fixture(link, "mul.ptx");
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_complete(link, &err);
    cr_assert_eq(rc, FDL_ELINK, "got %s", fdl_status_name(rc));
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    cr_assert_str_eq(err.source, LINK_DATA "/mul.ptx");
    cr_assert_eq(err.line, 15);
    char expect[600];
    snprintf(expect, sizeof expect,
             "mul_f32_f32: multiple definition, first defined at %s/mul.ptx:15:%u (ABI-6)",
             LINK_DATA, err.column);
    cr_assert_str_eq(err.message, expect);
    /* the rule as a field; no declaration concerned */
    cr_assert_eq(err.fields, FDL_ERROR_HAS_RULE);
    cr_assert_eq(err.rule, 6);
    cr_assert_eq(fdl_link_wall_ms(link), 0.0, "the backend ran");
    fdl_link_destroy(link);
}

Test(link_complete, nothing_to_link)
{
    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "nothing to link: no inputs were added");
    fdl_link_destroy(link);
}

Test(link_complete, ptx_rejected_by_the_backend_names_the_input)
{
    /* sm_75a passes the form check, but ptxas knows no such target */
    fdl_link *link = new_link("sm_75a");
    char path[512];
    snprintf(path, sizeof path, "%s/mul.ptx", LINK_DATA);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_file(link, path, FDL_KIND_AUTO, &err), FDL_OK, "%s", err.message);
    int rc = fdl_link_complete(link, &err);
    cr_assert_eq(rc, FDL_ELINK, "got %s", fdl_status_name(rc));
    cr_assert_str_eq(err.source, path);
    cr_assert(strncmp(err.message, "nvJitLink rejected the input: ", 30) == 0, "%s",
              err.message);
    cr_assert(strstr(err.message, "sm_75a"), "%s", err.message);
    cr_assert_not_null(err.log);
    cr_assert_eq(err.backend_code, 4 /* NVJITLINK_ERROR_PTX_COMPILE */);
    fdl_link_destroy(link);
}

/* ------------------------------------------------------------------------------------------ */
/* Options                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static int create_with_arch(const char *arch, fdl_error *err)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = arch;
    fdl_link *link = (fdl_link *)&opts; /* must be reset to NULL on failure */
    int rc = fdl_link_create(&link, &opts, err);
    if (rc != FDL_OK)
        cr_assert_null(link, "*out not NULL after a failure");
    fdl_link_destroy(link);
    return rc;
}

Test(link_options, rejects_a_malformed_arch)
{
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(create_with_arch("sm90", &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "invalid arch 'sm90' (expected sm_NN, e.g. sm_90, or native)");
    /* nvJitLink ends the process on a one-digit arch: it must never get there */
    static const char *const bad[] = {"sm_9",  "sm_09",  "sm_",  "sm_90b",   "sm_90a ",
                                      "sm_90af", "SM_90", "sm_-90", "sm_0", "sm_12345",
                                      "compute_90", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fdl_error e = FDL_ERROR_INIT;
        cr_assert_eq(create_with_arch(bad[i], &e), FDL_EINVAL, "arch '%s' accepted", bad[i]);
        cr_assert(strstr(e.message, "invalid arch"), "%s", e.message);
    }
    /* no arch is the current device's: here there is none (or no driver at all) */
    int rc = create_with_arch(NULL, &err);
    cr_assert(rc == FDL_ENOLIB || rc == FDL_ENODEVICE, "%s: %s", fdl_status_name(rc),
              err.message);
}

/*
 * Issue 35: option texts are bounded before nvJitLink, NVRTC or ptxas see them. A ptxas option
 * of 99,964 bytes or more overflows a heap buffer in nvJitLink 13.0's and NVRTC 13.0's ptxas;
 * fdlink refuses one over 65,536 bytes (however it comes), and any option text over 1,000,000.
 */
Test(link_options, option_texts_are_bounded_before_the_libraries_see_them)
{
    char *ptxas = malloc(65537 + 16), *huge = malloc(1000001 + 16);
    cr_assert(ptxas && huge);
    snprintf(ptxas, 16, "-Xptxas=-");
    memset(ptxas + 9, 'x', 65536);
    ptxas[9 + 65536] = '\0'; /* a ptxas option of 65,537 bytes */
    snprintf(huge, 16, "-Xnvvm=");
    memset(huge + 7, 'y', 1000000);
    huge[7 + 1000000] = '\0';
    fdl_error err = FDL_ERROR_INIT;
    fdl_link *link = NULL;
    /* xptxas: the whole text goes to ptxas */
    const char *xptxas[] = {ptxas + 8, NULL};
    fdl_link_options o = FDL_LINK_OPTIONS_INIT;
    o.arch = "sm_90";
    o.xptxas = xptxas;
    cr_assert_eq(fdl_link_create(&link, &o, &err), FDL_ELIMIT);
    cr_assert_not_null(strstr(err.message, "a ptxas option may have at most 65536"), "%s",
                       err.message);
    /* a raw nvJitLink option that passes a ptxas option, and one that is only too long */
    const char *extra1[] = {ptxas, NULL}, *extra2[] = {huge, NULL};
    o.xptxas = NULL;
    o.extra = extra1;
    cr_assert_eq(fdl_link_create(&link, &o, &err), FDL_ELIMIT);
    o.extra = extra2;
    cr_assert_eq(fdl_link_create(&link, &o, &err), FDL_ELIMIT);
    cr_assert_not_null(strstr(err.message, "an option may have at most 1000000"), "%s",
                       err.message);
    /* NVRTC's options, given to fdl_cuda_compile (refused before NVRTC is loaded) */
    fdl_nvrtc_options no = FDL_NVRTC_OPTIONS_INIT;
    no.extra = extra1;
    void *out = NULL;
    size_t size = 0;
    static const char src[] = "extern \"C\" __device__ int f(int x) { return x; }\n";
    cr_assert_eq(fdl_cuda_compile(&out, &size, NULL, NULL, src, sizeof src - 1, "k.cu", "sm_90",
                                  NULL, NULL, &no, &err), FDL_ELIMIT, "%s", err.message);
    cr_assert_null(out);
    /* at the bound: accepted here (nvJitLink then refuses the unknown option cleanly) */
    ptxas[9 + 65535] = '\0';
    o.extra = extra1;
    cr_assert_eq(fdl_link_create(&link, &o, &err) == FDL_ELIMIT, 0, "%s", err.message);
    fdl_link_destroy(link);
    free(ptxas);
    free(huge);
}

Test(link_options, accepts_arch_variants)
{
    static const char *const good[] = {"sm_75", "sm_90", "sm_90a", "sm_100f", "sm_120"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(create_with_arch(good[i], &err), FDL_OK, "%s: %s", good[i], err.message);
    }
}

Test(link_options, rejects_bad_levels_versions_and_arch_in_extra)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    opts.opt_level = 4;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_EINVAL);
    cr_assert(strstr(err.message, "opt_level 4"), "%s", err.message);
    opts.opt_level = -2;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_EINVAL);
    opts.opt_level = -1;
    opts.version = 99;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_EINVAL);
    cr_assert(strstr(err.message, "version 99"), "%s", err.message);
    opts.version = FDL_LINK_OPTIONS_VERSION;
    static const char *const extra[] = {"-lineinfo", "-arch=sm_9", NULL};
    opts.extra = extra;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_EINVAL);
    cr_assert(strstr(err.message, "-arch=sm_9"), "%s", err.message);
    cr_assert_null(link);
}

/* The options' table (issue 33): the init function, the bounds the CLI asks for, the check. */
Test(link_options, init_bounds_and_check_are_the_tables)
{
    const fdl_link_options frozen = FDL_LINK_OPTIONS_INIT;
    fdl_link_options o = fdl_link_options_init();
    cr_assert_eq(o.version, frozen.version);
    cr_assert_eq(o.opt_level, frozen.opt_level);
    cr_assert_eq(o.jump_table_density, frozen.jump_table_density);
    cr_assert_eq(o.split_compile, frozen.split_compile);
    cr_assert_eq(o.cache_lease_ms, frozen.cache_lease_ms);
    cr_assert_eq(o.lto_report, frozen.lto_report);
    int lo = 7, hi = 7;
    cr_assert_eq(fdl_link_option_bounds("jump_table_density", &lo, &hi), 1);
    cr_assert_eq(lo, -1);
    cr_assert_eq(hi, 101);
    cr_assert_eq(fdl_link_option_bounds("maxrregcount", NULL, &hi), 1);
    cr_assert_eq(hi, 65535);
    cr_assert_eq(fdl_link_option_bounds("no_such_option", &lo, &hi), 0);
    cr_assert_eq(fdl_link_option_bounds(NULL, &lo, &hi), 0);
    fdl_error err = FDL_ERROR_INIT;
#ifdef NDEBUG /* a NULL argument asserts in debug builds */
    cr_assert_eq(fdl_link_options_check(NULL, &err), FDL_EINVAL);
#endif
    o.arch = "sm_90";
    cr_assert_eq(fdl_link_options_check(&o, &err), FDL_OK, "%s", err.message);
    /* each bound, from the table: the edge taken, one past it refused with the table's words */
    o.jump_table_density = 101;
    cr_assert_eq(fdl_link_options_check(&o, &err), FDL_OK, "%s", err.message);
    o.jump_table_density = 102;
    cr_assert_eq(fdl_link_options_check(&o, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "invalid jump_table_density 102 (expected a percentage 0..101, "
                                  "or -1 for the default)");
    o.jump_table_density = -1;
    o.split_compile = 4097;
    cr_assert_eq(fdl_link_options_check(&o, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "invalid split_compile 4097 (expected a thread count 1..4096, "
                                  "0 for every processor, or -1 for fdlink's choice)");
    o.split_compile = -1;
    /* cuLink's refusal lists its group from the table */
    o.backend = FDL_BACKEND_CULINK;
    o.jl_cache = 1;
    cr_assert_eq(fdl_link_options_check(&o, &err), FDL_OK, "%s", err.message);
    o.jl_cache = 0;
    cr_assert_eq(fdl_link_options_check(&o, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "time, xptxas, optimize-unused-variables, split-compile, "
                                  "split-compile-extended, jump-table-density, no-cache and "
                                  "device-stack-protector are nvJitLink options; not with culink");
}

Test(link_options, backend_refusal_is_elink_with_its_reason)
{
    /* nvJitLink accepts -O0 and -O3 only */
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.opt_level = 1;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_create(&link, &opts, &err);
    cr_assert_eq(rc, FDL_ELINK, "got %s", fdl_status_name(rc));
    cr_assert_null(link);
    cr_assert(strncmp(err.message, "nvJitLink rejected the options: ", 32) == 0, "%s",
              err.message);
    cr_assert(strstr(err.message, "-O"), "%s", err.message);
    cr_assert_eq(err.backend_code, 1 /* NVJITLINK_ERROR_UNRECOGNIZED_OPTION */);
    static const char *const extra[] = {"-no-such-option", NULL};
    opts.opt_level = 0;
    opts.extra = extra;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_ELINK);
    cr_assert(strstr(err.message, "-no-such-option"), "%s", err.message);
}

/* ------------------------------------------------------------------------------------------ */
/* Inputs                                                                                      */
/* ------------------------------------------------------------------------------------------ */

Test(link_input, a_short_elf_file_says_so)
{
    static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0,
                                        0,    0,   0,   0,   2, 0, 62, 0};
    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    guarded g;
    const unsigned char *p = (const unsigned char *)guard_copy(&g, (const char *)elf, sizeof elf);
    cr_assert_eq(fdl_link_add_data(link, p, sizeof elf, "x.bin", FDL_KIND_AUTO, &err),
                 FDL_EKIND);
    cr_assert_str_eq(err.source, "x.bin");
    cr_assert_str_eq(err.message, "not a link input (found 7f 45 4c 46 ...: a truncated ELF file)");
    char line[1024];
    fdl_error_format(&err, line, sizeof line);
    cr_assert_str_eq(line, "x.bin: not a link input (found 7f 45 4c 46 ...: a truncated ELF file)");
    /* an explicit PTX kind does not make it PTX */
    cr_assert_eq(fdl_link_add_data(link, p, sizeof elf, "x.bin", FDL_KIND_PTX, &err), FDL_EKIND);
    cr_assert_str_eq(err.message, "not PTX (found 7f 45 4c 46 ...: a truncated ELF file)");
    /* a cubin header cut short */
    unsigned char cubin[24];
    memcpy(cubin, elf, 20);
    cubin[18] = 190;
    cubin[19] = 0;
    memset(cubin + 20, 0, 4);
    cr_assert_eq(fdl_link_add_data(link, cubin, sizeof cubin, "k.cubin", FDL_KIND_AUTO, &err),
                 FDL_EPARSE);
    cr_assert_str_eq(err.message, "malformed cubin: a truncated ELF file (at byte 24)");
    guard_free(&g);
    fdl_link_destroy(link);
}

/* A 64-bit ELF header (no section table) of the given type and machine. */
static void make_elf(unsigned char *h, unsigned type, unsigned machine)
{
    memset(h, 0, 64);
    memcpy(h, "\x7f" "ELF", 4);
    h[4] = 2; /* ELFCLASS64 */
    h[5] = 1; /* little-endian */
    h[6] = 1;
    h[16] = (unsigned char)type;
    h[18] = (unsigned char)machine;
    h[19] = (unsigned char)(machine >> 8);
    h[52] = 64; /* e_ehsize */
}

Test(link_input, host_files_without_device_code)
{
    static const struct {
        unsigned type, machine;
        const char *message;
    } cases[] = {
        {1, 62, "a host object with no device code (no .nv_fatbin or __nv_relfatbin section)"},
        {3, 183, "a host shared library with no device code (no .nv_fatbin or __nv_relfatbin "
                 "section)"},
        {2, 62, "a host executable with no device code (no .nv_fatbin or __nv_relfatbin "
                "section)"},
    };
    fdl_link *link = new_link("sm_90");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char h[64];
        make_elf(h, cases[i].type, cases[i].machine);
        guarded g;
        const char *p = guard_copy(&g, (const char *)h, sizeof h);
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_link_add_data(link, p, sizeof h, "x.o", FDL_KIND_AUTO, &err), FDL_EKIND,
                     "case %zu", i);
        cr_assert_str_eq(err.message, cases[i].message, "case %zu", i);
        /* stated, it still has to be one */
        cr_assert_eq(fdl_link_add_data(link, p, sizeof h, "x.o", FDL_KIND_OBJECT, &err),
                     FDL_EKIND);
        cr_assert(strncmp(err.message, "not a host object with device code (found 7f 45 4c 46 "
                                       "...: ", 55) == 0, "%s", err.message);
        guard_free(&g);
    }
    /* a section table that lies outside the file */
    unsigned char h[64];
    make_elf(h, 1, 62);
    h[40] = 0x10; /* e_shoff = 0x1000 */
    h[41] = 0x10;
    h[58] = 64; /* e_shentsize */
    h[60] = 3;  /* e_shnum */
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_data(link, h, sizeof h, "x.o", FDL_KIND_AUTO, &err), FDL_EKIND);
    cr_assert_str_eq(err.message, "not a link input (found 7f 45 4c 46 ...: an ELF file whose "
                                  "section table lies outside it)");
    fdl_link_destroy(link);
}

Test(link_input, an_executable_cubin_is_refused)
{
    fdl_link *first = new_link("sm_90");
    add_fixture(first, "mul.ptx");
    add_fixture(first, "caller.ptx");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(first, &err), FDL_OK, "%s", err.message);
    size_t size;
    const void *cubin = fdl_link_cubin(first, &size);
    fdl_input_kind kind;
    cr_assert_eq(fdl_input_detect(&kind, cubin, size, "k.cubin", &err), FDL_OK);
    cr_assert_eq(kind, FDL_KIND_CUBIN);
    fdl_link *link = new_link("sm_90");
    cr_assert_eq(fdl_link_add_data(link, cubin, size, "k.cubin", FDL_KIND_AUTO, &err),
                 FDL_EKIND);
    cr_assert_str_eq(err.source, "k.cubin");
    cr_assert_str_eq(err.message, "an executable cubin (already linked, or compiled without "
                                  "-rdc=true): only relocatable device code can be linked; "
                                  "compile with nvcc -cubin -rdc=true or -dc");
    cr_assert_eq(fdl_link_add_data(link, cubin, size, "k.cubin", FDL_KIND_FATBIN, &err),
                 FDL_EKIND);
    cr_assert_str_eq(err.message, "not a fatbin (found 7f 45 4c 46 ...: a cubin)");
    fdl_link_destroy(link);
    fdl_link_destroy(first);
}

Test(link_input, other_content_says_what_it_is)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *name;
        const char *message;
    } cases[] = {
        {"hello world\n", 12, "in",
         "not a link input (found 68 65 6c 6c ...: text that is neither PTX (no .version "
         "directive) nor named .cu or .cuh)"},
        {"\x01\x02", 2, "in", "not a link input (found 01 02: binary data)"},
        {"// only a comment\n.target sm_90\n", 32, "in",
         "not a link input (found 2f 2f 20 6f ...: text that is neither PTX (no .version "
         "directive) nor named .cu or .cuh)"},
        {"/* unterminated .version 8.0", 28, "in.ptx",
         "not a link input (found 2f 2a 20 75 ...: text that is neither PTX (no .version "
         "directive) nor named .cu or .cuh)"},
        {"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16, "logo.png",
         "not a link input (found 89 50 4e 47 ...: a PNG image)"},
        {"!<thin>\n", 8, "libk.a",
         "not a link input (found 21 3c 74 68 ...: a thin archive (its members live in other "
         "files))"},
        {"\x1f\x8b\x08\x00", 4, "k.ptx.gz", "not a link input (found 1f 8b 08 00: gzip-compressed "
                                            "data)"},
    };
    fdl_link *link = new_link("sm_90");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fdl_error err = FDL_ERROR_INIT;
        guarded g;
        const char *p = guard_copy(&g, cases[i].bytes, cases[i].len);
        cr_assert_eq(fdl_link_add_data(link, p, cases[i].len, cases[i].name, FDL_KIND_AUTO,
                                       &err),
                     FDL_EKIND, "case %zu", i);
        cr_assert_str_eq(err.message, cases[i].message, "case %zu", i);
        cr_assert_str_eq(err.source, cases[i].name);
        guard_free(&g);
    }
    /* text named .cu or .cuh is CUDA C, which the extension alone decides only for text */
    fdl_input_kind kind;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_input_detect(&kind, "int x;\n", 7, "k.cu", &err), FDL_OK);
    cr_assert_eq(kind, FDL_KIND_CUDA);
    cr_assert_eq(fdl_input_detect(&kind, "int x;\n", 7, "k.cuh", &err), FDL_OK);
    cr_assert_eq(kind, FDL_KIND_CUDA);
    cr_assert_eq(fdl_input_detect(&kind, ".version 8.0\n", 13, "k.cu", &err), FDL_OK);
    cr_assert_eq(kind, FDL_KIND_PTX, "content first: PTX named .cu is PTX");
    cr_assert_eq(fdl_input_detect(&kind, "\x89PNG\r\n\x1a\n", 8, "k.cu", &err), FDL_EKIND);
    fdl_link_destroy(link);
}

Test(link_input, truncated_containers_are_eparse_with_the_offset)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *message;
    } cases[] = {
        {"\x50\xed\x55\xba\x01\x00\x10\x00", 8, "truncated fatbin header at byte offset 0"},
        {"\x50\xed\x55\xba\x01\x00\x10\x00\xff\x00\x00\x00\x00\x00\x00\x00", 16,
         "fatbin container at byte offset 0 claims 255 bytes, past the end of the input"},
        {"\x50\xed\x55\xba\x01\x00\x10\x00\x08\x00\x00\x00\x00\x00\x00\x00"
         "\x02\x00\x01\x01\x40\x00\x00\x00",
         24, "truncated fatbin entry at byte offset 16"},
        {"!<arch>\nx", 9, "malformed archive member header at byte offset 8"},
        {"!<arch>\nk.o/            0           0     0     644     999       `\n", 68,
         "archive member at byte offset 8 has a bad size or runs past the end"},
        {"\xed\x43\x4e\x7f\x00", 5, "truncated NVVM container (5 bytes)"},
    };
    fdl_link *link = new_link("sm_90");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fdl_error err = FDL_ERROR_INIT;
        guarded g;
        const char *p = guard_copy(&g, cases[i].bytes, cases[i].len);
        cr_assert_eq(fdl_link_add_data(link, p, cases[i].len, "in", FDL_KIND_AUTO, &err),
                     FDL_EPARSE, "case %zu: %s", i, err.message);
        cr_assert_str_eq(err.message, cases[i].message, "case %zu", i);
        cr_assert_str_eq(err.source, "in");
        /* inspection reads them the same way */
        fdl_inspection *ins = (fdl_inspection *)&err;
        cr_assert_eq(fdl_inspect_data(&ins, p, cases[i].len, "in", FDL_KIND_AUTO, &err),
                     FDL_EPARSE, "case %zu", i);
        cr_assert_null(ins);
        guard_free(&g);
    }
    cr_assert_eq(fdl_link_input_count(link), 0);
    fdl_link_destroy(link);
}

Test(link_input, directory_and_kind_names)
{
    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_file(link, LINK_DATA, FDL_KIND_AUTO, &err), FDL_EIO);
    cr_assert_str_eq(err.source, LINK_DATA);
    cr_assert_str_eq(err.message, "is a directory, not a file");
    fdl_link_destroy(link);
    static const struct {
        const char *name;
        fdl_input_kind kind;
    } names[] = {{"ptx", FDL_KIND_PTX},     {"cubin", FDL_KIND_CUBIN},  {"fatbin", FDL_KIND_FATBIN},
                 {"ltoir", FDL_KIND_LTOIR}, {"lto-ir", FDL_KIND_LTOIR}, {"object", FDL_KIND_OBJECT},
                 {"o", FDL_KIND_OBJECT},    {"library", FDL_KIND_LIBRARY},
                 {"a", FDL_KIND_LIBRARY},   {"cuda", FDL_KIND_CUDA},    {"cu", FDL_KIND_CUDA},
                 {"bitcode", FDL_KIND_BITCODE}, {"bc", FDL_KIND_BITCODE},
                 {"auto", FDL_KIND_AUTO}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        fdl_input_kind kind = (fdl_input_kind)99;
        cr_assert_eq(fdl_input_kind_parse(&kind, names[i].name, &err), FDL_OK);
        cr_assert_eq(kind, names[i].kind, "%s", names[i].name);
    }
    fdl_input_kind kind;
    cr_assert_eq(fdl_input_kind_parse(&kind, "png", &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "unknown input kind 'png' (expected ptx, cubin, fatbin, ltoir, "
                                  "object, library, cuda or bitcode)");
    /* every name of a kind from one table (issue 33) */
    cr_assert_str_eq(fdl_input_kind_title(FDL_KIND_LIBRARY), "static library");
    cr_assert_str_eq(fdl_input_kind_title(FDL_KIND_AUTO), "unknown");
    cr_assert_str_eq(fdl_input_kind_title((fdl_input_kind)99), "unknown");
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_BITCODE), "bitcode");
    cr_assert_str_eq(fdl_input_kind_name((fdl_input_kind)99), "unknown");
}

Test(link_input, empty_input)
{
    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_data(link, "", 0, "empty.ptx", FDL_KIND_AUTO, &err), FDL_EKIND);
    cr_assert_str_eq(err.message, "empty input");
    cr_assert_str_eq(err.source, "empty.ptx");
    fdl_link_destroy(link);
}

Test(link_input, ptx_detected_after_comments_and_blank_lines)
{
    char path[512];
    snprintf(path, sizeof path, "%s/mul.ptx", LINK_DATA);
    size_t size;
    char *ptx = slurp(path, &size);
    /* the fixture starts with nvcc's `//` banner; add a block comment and blank lines too */
    fdl__buf b = {0};
    fdl__buf_puts(&b, "\n\n/* a block\n comment */\t\r\n");
    fdl__buf_append(&b, ptx, size);
    cr_assert(!b.oom);
    guarded g;
    const char *p = guard_copy(&g, b.data, b.len);
    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_data(link, p, b.len, "mul.ptx", FDL_KIND_AUTO, &err), FDL_OK,
                 "%s %s", fdl_status_name(err.code), err.message);
    fdl_link_destroy(link);
    guard_free(&g);
    fdl__buf_free(&b);
    free(ptx);
}

Test(link_input, missing_file_is_eio)
{
    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_file(link, LINK_DATA "/no-such.ptx", FDL_KIND_AUTO, &err),
                 FDL_EIO);
    cr_assert_str_eq(err.source, LINK_DATA "/no-such.ptx");
    fdl_link_destroy(link);
}

Test(link_input, unknown_kind_is_einval)
{
    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_data(link, ".version 8.0\n", 13, "k", (fdl_input_kind)42, &err),
                 FDL_EINVAL);
    fdl_link_destroy(link);
}

Test(link_input, kind_names)
{
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_AUTO), "auto");
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_PTX), "ptx");
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_CUBIN), "cubin");
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_FATBIN), "fatbin");
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_LTOIR), "ltoir");
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_OBJECT), "object");
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_LIBRARY), "library");
    cr_assert_str_eq(fdl_input_kind_name(FDL_KIND_CUDA), "cuda");
    cr_assert_str_eq(fdl_input_kind_name((fdl_input_kind)99), "unknown");
}

Test(link_input, no_inputs_after_completion)
{
    fdl_link *link = new_link("sm_90");
    add_fixture(link, "mul.ptx");
    add_fixture(link, "caller.ptx");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    char path[512];
    snprintf(path, sizeof path, "%s/mul.ptx", LINK_DATA);
    cr_assert_eq(fdl_link_add_file(link, path, FDL_KIND_AUTO, &err), FDL_EINVAL);
    fdl_decls *decls = NULL;
    cr_assert_eq(fdl_decls_parse(&decls, "f: int32()", 10, "d", &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_EINVAL);
    fdl_decls_destroy(decls);
    fdl_link_destroy(link);
}

/* ------------------------------------------------------------------------------------------ */
/* Declarations                                                                                */
/* ------------------------------------------------------------------------------------------ */

static void count_diag(void *ctx, const fdl_error *diag)
{
    size_t *n = ctx;
    cr_assert_eq(diag->code, FDL_EABI);
    ++*n;
}

Test(link_decls, wrong_width_is_eabi_before_linking)
{
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_load(&decls, LINK_DATA "/mul.decl", &err), FDL_OK, "%s", err.message);
    fdl_link *link = new_link("sm_90");
    size_t ndiags = 0;
    cr_assert_eq(fdl_link_set_diag(link, count_diag, &ndiags), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add_fixture(link, "mul_wide.ptx");
    add_fixture(link, "caller.ptx");
    int rc = fdl_link_complete(link, &err);
    cr_assert_eq(rc, FDL_EABI, "got %s: %s", fdl_status_name(rc), err.message);
    /* ABI-5: the error points into the PTX and names the function */
    cr_assert(strstr(err.source, "mul_wide.ptx"), "source: %s", err.source);
    cr_assert_gt(err.line, 0);
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    /* the rule and the declaration's place as fields (mul.decl's line 2) */
    cr_assert_eq(err.fields, FDL_ERROR_HAS_RULE | FDL_ERROR_HAS_DECL);
    cr_assert_eq(err.rule, 5);
    cr_assert_str_eq(err.decl_source, LINK_DATA "/mul.decl");
    cr_assert_eq(err.decl_line, 2);
    cr_assert_eq(err.decl_column, 1);
    /* the link's record of it has the rule as its code */
    const fdl_diagnostic *d = NULL;
    for (size_t i = 0; i < fdl_link_diagnostic_count(link) && !d; i++)
        if (strcmp(fdl_link_diagnostic(link, i)->tool, "fdlink") == 0)
            d = fdl_link_diagnostic(link, i);
    cr_assert_not_null(d);
    cr_assert_str_eq(d->code, "ABI-5");
    cr_assert_geq(ndiags, 1, "the diagnostic callback was not called");
    /* nothing reached the linker */
    cr_assert_eq(fdl_link_wall_ms(link), 0.0);
    cr_assert_null(fdl_link_cubin(link, NULL));
    cr_assert_str_empty(fdl_link_error_log(link));
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

/* CUDA C that disagrees with its declaration (NVRTC refuses the force-included prototype): the
 * rule and the declaration's place as fields of the error that refuses the input */
Test(link_decls, a_cuda_conflict_carries_its_rule_and_declaration)
{
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_load(&decls, FDL_TEST_DATA "/diag/wide.decl", &err), FDL_OK, "%s",
                 err.message);
    fdl_link *link = new_link("sm_90");
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    int rc = fdl_link_add_file(link, FDL_TEST_DATA "/diag/mul_float.cu", FDL_KIND_AUTO, &err);
    if (rc == FDL_ENOLIB)
        cr_skip_test("no NVRTC: %s", err.message);
    cr_assert_eq(rc, FDL_EABI, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert_str_eq(err.message, "mul_f32_f32: defined as (float *, float, const float), declared "
                                  "float64(float64, float64) (ABI-5; declared at " FDL_TEST_DATA
                                  "/diag/wide.decl:2:1)");
    cr_assert_eq(err.fields, FDL_ERROR_HAS_RULE | FDL_ERROR_HAS_DECL);
    cr_assert_eq(err.rule, 5);
    cr_assert_str_eq(err.decl_source, FDL_TEST_DATA "/diag/wide.decl");
    cr_assert_eq(err.decl_line, 2);
    cr_assert_eq(err.decl_column, 1);
    cr_assert_not_null(err.log, "NVRTC's log is kept beside the fields");
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(link_decls, conforming_inputs_link)
{
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_load(&decls, LINK_DATA "/mul.decl", &err), FDL_OK, "%s", err.message);
    fdl_link *link = new_link("sm_90");
    size_t ndiags = 0;
    fdl_link_set_diag(link, count_diag, &ndiags);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add_fixture(link, "caller.ptx");
    add_fixture(link, "mul.ptx");
    int rc = fdl_link_complete(link, &err);
    cr_assert_eq(rc, FDL_OK, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert_eq(ndiags, 0);
    cr_assert_not_null(fdl_link_cubin(link, NULL));
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

/* ------------------------------------------------------------------------------------------ */
/* Output                                                                                      */
/* ------------------------------------------------------------------------------------------ */

Test(link_write, writes_the_cubin_atomically)
{
    char dir[] = "/tmp/fdlink-test-link-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char out[600], missing[600], isdir[600];
    snprintf(out, sizeof out, "%s/k.cubin", dir);
    snprintf(missing, sizeof missing, "%s/no/such/dir/k.cubin", dir);
    snprintf(isdir, sizeof isdir, "%s/sub", dir);
    cr_assert_eq(mkdir(isdir, 0700), 0);

    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_write(link, out, &err), FDL_EINVAL, "wrote before completing");
    add_fixture(link, "mul.ptx");
    add_fixture(link, "caller.ptx");
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);

    cr_assert_eq(fdl_link_write(link, out, &err), FDL_OK, "%s", err.message);
    size_t size, wsize;
    const void *cubin = fdl_link_cubin(link, &size);
    char *written = slurp(out, &wsize);
    cr_assert_eq(wsize, size);
    cr_assert_eq(memcmp(written, cubin, size), 0, "the file is not the cubin");
    free(written);

    /* a target in a missing folder fails and leaves nothing */
    cr_assert_eq(fdl_link_write(link, missing, &err), FDL_EIO);
    cr_assert_str_eq(err.source, missing);
    /* a target that cannot be renamed over (a folder) fails and removes its temporary */
    cr_assert_eq(fdl_link_write(link, isdir, &err), FDL_EIO);
    cr_assert_eq(count_entries(dir), 2, "something was left behind in %s", dir);
    struct stat st;
    cr_assert_eq(stat(isdir, &st), 0);
    cr_assert(S_ISDIR(st.st_mode));
    fdl_link_destroy(link);
    unlink(out);
    rmdir(isdir);
    rmdir(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* The library                                                                                 */
/* ------------------------------------------------------------------------------------------ */

Test(link_backend, reports_its_version)
{
    unsigned major = 0, minor = 99;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_backend_version(&major, &minor, &err), FDL_OK, "%s", err.message);
    cr_assert_geq(major, 12);
    cr_assert_lt(minor, 99);
}

Test(link_backend, missing_library_is_enolib_every_time)
{
    const char *path = "/nonexistent/fdlink/libnvJitLink.so.13";
    cr_assert_eq(setenv("FDLINK_NVJITLINK", path, 1), 0);
    for (int attempt = 0; attempt < 2; attempt++) {
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(create_with_arch("sm_90", &err), FDL_ENOLIB, "attempt %d", attempt);
        cr_assert(strstr(err.message, path), "the message does not name the library: %s",
                  err.message);
        cr_assert(strstr(err.message, "needed to link device code"), "%s", err.message);
        cr_assert(strstr(err.message, "No such file"), "no dlerror text: %s", err.message);
        /* the library as a field, the second time too (the first load's record, kept) */
        cr_assert_eq(err.fields, FDL_ERROR_HAS_LIBRARY, "attempt %d", attempt);
        cr_assert_str_eq(err.library, path);
    }
    unsigned major, minor;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_backend_version(&major, &minor, &err), FDL_ENOLIB);
    cr_assert_eq(major, 0);
    /* an invalid arch is still reported as such: options are checked before loading */
    cr_assert_eq(create_with_arch("sm90", &err), FDL_EINVAL);
}

Test(link_backend, a_library_that_is_not_nvjitlink_is_enolib)
{
    /* libc loads fine but has no nvJitLinkCreate */
    cr_assert_eq(setenv("FDLINK_NVJITLINK", "libc.so.6", 1), 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(create_with_arch("sm_90", &err), FDL_ENOLIB);
    cr_assert(strstr(err.message, "nvJitLinkCreate"), "%s", err.message);
    cr_assert_str_eq(err.library, "nvJitLink"); /* the library, not the entry point it lacks */
    cr_assert_str_eq(err.symbol, "nvJitLinkCreate");
}

Test(link_backend, destroy_accepts_null)
{
    fdl_link_destroy(NULL);
    cr_assert_null(fdl_link_cubin(NULL, NULL));
    cr_assert_str_empty(fdl_link_info_log(NULL));
    cr_assert_str_empty(fdl_link_error_log(NULL));
    cr_assert_eq(fdl_link_wall_ms(NULL), 0.0);
}

/* ------------------------------------------------------------------------------------------ */
/* Containers: bounds, compression                                                            */
/* ------------------------------------------------------------------------------------------ */

/* Fixtures that tests/link builds with nvcc. */
#define BUILT FDL_TEST_BUILD "/link/fixtures"

/*
 * Every prefix of a real input, and copies with single bytes changed, must be read or refused,
 * never read past: each copy ends right before an unreadable page.
 */
static void survive_damage(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", BUILT, file);
    size_t size;
    char *data = slurp(path, &size);
    size_t step = size > 4096 ? size / 1024 : 1;
    for (size_t n = 0; n <= size; n += step) {
        guarded g;
        const char *p = guard_copy(&g, data, n);
        fdl_input_kind kind;
        fdl_error err = FDL_ERROR_INIT;
        int rc = fdl_input_detect(&kind, p, n, file, &err);
        cr_assert(rc == FDL_OK || rc == FDL_EKIND, "%s[:%zu]: %s", file, n, fdl_status_name(rc));
        fdl_inspection *ins = NULL;
        rc = fdl_inspect_data(&ins, p, n, file, FDL_KIND_AUTO, &err);
        cr_assert(rc == FDL_OK || rc == FDL_EKIND || rc == FDL_EPARSE, "%s[:%zu]: %s %s", file,
                  n, fdl_status_name(rc), err.message);
        fdl_inspection_destroy(ins);
        guard_free(&g);
    }
    /* a deterministic scatter of changed bytes over the headers and tables */
    unsigned state = 12345;
    for (int round = 0; round < 300; round++) {
        char *copy = malloc(size);
        cr_assert_not_null(copy);
        memcpy(copy, data, size);
        for (int k = 0; k < 4; k++) {
            state = state * 1103515245u + 12345u;
            size_t at = (state >> 8) % (size < 512 ? size : 512);
            if (k & 1)
                at = (state >> 4) % size;
            copy[at] = (char)(state >> 24);
        }
        guarded g;
        const char *p = guard_copy(&g, copy, size);
        fdl_inspection *ins = NULL;
        fdl_error err = FDL_ERROR_INIT;
        int rc = fdl_inspect_data(&ins, p, size, file, FDL_KIND_AUTO, &err);
        cr_assert(rc == FDL_OK || rc == FDL_EKIND || rc == FDL_EPARSE, "%s round %d: %s %s",
                  file, round, fdl_status_name(rc), err.message);
        fdl_inspection_destroy(ins);
        guard_free(&g);
        free(copy);
    }
    free(data);
}

Test(link_container, damaged_fatbin) { survive_damage("mul.fatbin"); }
Test(link_container, damaged_lz4_fatbin) { survive_damage("mul_lz4.fatbin"); }
Test(link_container, damaged_object) { survive_damage("mul.o"); }
Test(link_container, damaged_library) { survive_damage("libmul.a"); }
Test(link_container, damaged_cubin) { survive_damage("caller.cubin"); }
Test(link_container, damaged_ptx_and_ltoir)
{
    survive_damage("caller.ptx");
    survive_damage("mul.ltoir");
}

/* The first entry header of the fatbin in @p data (a fatbin file). */
static unsigned char *first_entry(char *data)
{
    return (unsigned char *)data + 16;
}

Test(link_container, lz4_that_decodes_short_is_corrupt)
{
    size_t size;
    char *data = slurp(BUILT "/mul_lz4.fatbin", &size);
    unsigned char *e = first_entry(data);
    cr_assert_eq(e[41] & 0x20, 0x20, "not LZ4-compressed (flags %02x%02x)", e[41], e[40]);
    e[56] = (unsigned char)(e[56] + 1); /* one byte more than the data holds */
    fdl_inspection *ins = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_inspect_data(&ins, data, size, "k.fatbin", FDL_KIND_AUTO, &err), FDL_EPARSE);
    cr_assert_str_eq(err.source, "k.fatbin[sm_90 cubin]");
    cr_assert(strncmp(err.message, "corrupt LZ4 data: ", 18) == 0, "%s", err.message);
    free(data);
}

Test(link_container, zstd_that_decodes_short_is_corrupt)
{
    size_t size;
    char *data = slurp(BUILT "/mul.fatbin", &size);
    unsigned char *e = first_entry(data);
    cr_assert_eq(e[41] & 0x80, 0x80, "not zstd-compressed");
    e[56] = (unsigned char)(e[56] + 8);
    fdl_inspection *ins = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_inspect_data(&ins, data, size, "k.fatbin", FDL_KIND_AUTO, &err), FDL_EPARSE);
    cr_assert(strstr(err.message, "zstd"), "%s", err.message);
    free(data);
}

Test(link_container, without_libzstd_the_content_is_not_shown_but_links)
{
    cr_assert_eq(setenv("FDLINK_LIBZSTD", "/nonexistent/libzstd.so.1", 1), 0);
    fdl_inspection *ins = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_inspect_file(&ins, BUILT "/mul.fatbin", FDL_KIND_AUTO, &err), FDL_OK, "%s",
                 err.message);
    const fdl_image *img = fdl_inspection_image(ins, 0);
    cr_assert_eq(img->kind, FDL_KIND_CUBIN);
    cr_assert_eq(img->nsymbols, 0);
    cr_assert(strncmp(img->note, "not shown: cannot load /nonexistent/libzstd.so.1", 48) == 0,
              "%s", img->note);
    fdl_inspection_destroy(ins);
    /* nvJitLink reads it all the same, and the declarations cannot be refuted by it */
    fdl_decls *decls = NULL;
    cr_assert_eq(fdl_decls_load(&decls, LINK_DATA "/mul.decl", &err), FDL_OK);
    fdl_link *link = new_link("sm_90");
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add_fixture(link, "caller.ptx");
    cr_assert_eq(fdl_link_add_file(link, BUILT "/mul.fatbin", FDL_KIND_AUTO, &err), FDL_OK);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(link_container, without_liblz4_the_content_is_not_shown_but_links)
{
    cr_assert_eq(setenv("FDLINK_LIBLZ4", "/nonexistent/liblz4.so.1", 1), 0);
    fdl_inspection *ins = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_inspect_file(&ins, BUILT "/mul_lz4.fatbin", FDL_KIND_AUTO, &err), FDL_OK,
                 "%s", err.message);
    const fdl_image *img = fdl_inspection_image(ins, 0);
    cr_assert_eq(img->kind, FDL_KIND_CUBIN);
    cr_assert_str_eq(img->compression, "lz4");
    cr_assert_eq(img->nsymbols, 0);
    cr_assert(strncmp(img->note, "not shown: cannot load /nonexistent/liblz4.so.1", 47) == 0,
              "%s", img->note);
    fdl_inspection_destroy(ins);
    /* nvJitLink reads it all the same, and the declarations cannot be refuted by it */
    fdl_decls *decls = NULL;
    cr_assert_eq(fdl_decls_load(&decls, LINK_DATA "/mul.decl", &err), FDL_OK);
    fdl_link *link = new_link("sm_90");
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add_fixture(link, "caller.ptx");
    cr_assert_eq(fdl_link_add_file(link, BUILT "/mul_lz4.fatbin", FDL_KIND_AUTO, &err), FDL_OK);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

/* ------------------------------------------------------------------------------------------ */
/* Options of version 1                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* The layout of fdl_link_options version 1. */
typedef struct options_v1 {
    unsigned version;
    const char *arch;
    int opt_level;
    int debug;
    int lineinfo;
    int verbose;
    const char *const *extra;
} options_v1;

Test(link_options, version_1_is_still_accepted)
{
    options_v1 v1 = {1, "sm_90", -1, 0, 1, 0, NULL};
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    /* the struct is only as long as version 1 was: nothing past it may be read */
    guarded g;
    const fdl_link_options *opts =
        (const fdl_link_options *)guard_copy(&g, (const char *)&v1, sizeof v1);
    cr_assert_eq(fdl_link_create(&link, opts, &err), FDL_OK, "%s", err.message);
    guard_free(&g);
    add_fixture(link, "caller.ptx");
    add_fixture(link, "mul.ptx");
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_get_backend(link), FDL_BACKEND_NVJITLINK);
    fdl_link_destroy(link);
}

/* Issue 38: a link knows its kernels' parameter classes from the PTX it saw, and a cache hit
 * knows them too. */
Test(link_complete, kernel_params_from_ptx_inputs_and_from_the_cache)
{
    char dir[] = "/tmp/fdl-params-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    for (int round = 0; round < 2; round++) {
        fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
        opts.arch = "sm_90";
        opts.cache = FDL_CACHE_ON;
        opts.cache_dir = dir;
        fdl_link *link = NULL;
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
        add_fixture(link, "mul.ptx");
        add_fixture(link, "caller.ptx");
        fdl_param_info info[8];
        size_t count = 9;
        cr_assert_eq(fdl_link_kernel_params(link, "multiply_vectors", info, 8, &count, &err),
                     FDL_EINVAL, "not complete yet");
        cr_assert_eq(count, 0);
        cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
        fdl_cache_result r = fdl_link_cache_result(link, NULL);
        cr_assert(round ? (r == FDL_CACHE_HIT_MEMORY || r == FDL_CACHE_HIT_DISK) : r == FDL_CACHE_MISS,
                  "round %d: %d", round, r);
        cr_assert_eq(fdl_link_kernel_params(link, "multiply_vectors", info, 8, &count, &err),
                     FDL_OK, "round %d: %s", round, err.message);
        cr_assert_eq(count, 4);
        static const size_t size[] = {8, 8, 8, 4};
        for (size_t i = 0; i < 4; i++) {
            cr_assert_eq(info[i].cls, FDL_PARAM_UNSIGNED, "round %d parameter %zu", round, i);
            cr_assert_eq(info[i].size, size[i], "round %d parameter %zu", round, i);
        }
        cr_assert_eq(fdl_link_kernel_params(link, "multiply", info, 8, &count, &err),
                     FDL_ENOTFOUND, "a .func is no kernel; a prefix is no name");
        cr_assert_eq(fdl_link_kernel_params(link, "multiply_vectors", NULL, 0, &count, &err),
                     FDL_OK);
        cr_assert_eq(count, 4);
        fdl_link_destroy(link);
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
