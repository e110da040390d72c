/*
 * Tests of links (link/src/link.c, link/src/nvjitlink.c, fdlink/link.h) with the real nvJitLink,
 * which needs no GPU. Fixtures: tests/data/link (PTX made by nvcc from tests/data/link/src).
 *
 * Criterion runs each test in its own process, so a test that sets FDLINK_NVJITLINK before its
 * first link sees a fresh table of entry points.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
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

/* A copy of @p len bytes that ends right before an unreadable page. */
typedef struct guarded {
    char *map;
    size_t maplen;
    char *text;
} guarded;

static char *guard_copy(guarded *g, const char *s, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (len + page - 1) / page + 1;
    g->maplen = pages * page;
    g->map = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(g->map != MAP_FAILED);
    cr_assert_eq(mprotect(g->map + (pages - 1) * page, page, PROT_NONE), 0);
    g->text = g->map + (pages - 1) * page - len;
    memcpy(g->text, s, len);
    return g->text;
}

static void guard_free(guarded *g)
{
    munmap(g->map, g->maplen);
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
             "multiple definition of 'mul_f32_f32', first defined at %s/mul.ptx:15:%u (ABI-6)",
             LINK_DATA, err.column);
    cr_assert_str_eq(err.message, expect);
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
    cr_assert_str_eq(err.message, "invalid arch 'sm90' (expected sm_NN, e.g. sm_90)");
    /* nvJitLink ends the process on a one-digit arch: it must never get there */
    static const char *const bad[] = {"sm_9",  "sm_09",  "sm_",  "sm_90b",   "sm_90a ",
                                      "sm_90af", "SM_90", "sm_-90", "sm_0", "sm_12345",
                                      "compute_90", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        fdl_error e = FDL_ERROR_INIT;
        cr_assert_eq(create_with_arch(bad[i], &e), FDL_EINVAL, "arch '%s' accepted", bad[i]);
        cr_assert(strstr(e.message, "invalid arch"), "%s", e.message);
    }
    cr_assert_eq(create_with_arch(NULL, &err), FDL_EINVAL);
    cr_assert(strstr(err.message, "no arch"), "%s", err.message);
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

Test(link_input, elf_is_not_ptx)
{
    static const unsigned char elf[] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0,
                                        0,    0,   0,   0,   2, 0, 62, 0};
    fdl_link *link = new_link("sm_90");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_data(link, elf, sizeof elf, "x.bin", FDL_KIND_AUTO, &err),
                 FDL_EKIND);
    cr_assert_str_eq(err.source, "x.bin");
    cr_assert_str_eq(err.message, "not a PTX file (found 7f 45 4c 46 ...: an ELF file)");
    char line[1024];
    fdl_error_format(&err, line, sizeof line);
    cr_assert_str_eq(line, "x.bin: not a PTX file (found 7f 45 4c 46 ...: an ELF file)");
    /* an explicit PTX kind does not make it PTX */
    cr_assert_eq(fdl_link_add_data(link, elf, sizeof elf, "x.bin", FDL_KIND_PTX, &err),
                 FDL_EKIND);
    fdl_link_destroy(link);
}

Test(link_input, a_cubin_is_recognised_but_not_supported_yet)
{
    fdl_link *first = new_link("sm_90");
    add_fixture(first, "mul.ptx");
    add_fixture(first, "caller.ptx");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(first, &err), FDL_OK, "%s", err.message);
    size_t size;
    const void *cubin = fdl_link_cubin(first, &size);
    fdl_link *link = new_link("sm_90");
    cr_assert_eq(fdl_link_add_data(link, cubin, size, "k.cubin", FDL_KIND_AUTO, &err),
                 FDL_EKIND);
    cr_assert(strncmp(err.message, "not a PTX file (found 7f 45 4c 46 ...: a cubin", 46) == 0,
              "%s", err.message);
    cr_assert(strstr(err.message, "not supported"), "%s", err.message);
    cr_assert_eq(fdl_link_add_data(link, cubin, size, "k.cubin", FDL_KIND_CUBIN, &err),
                 FDL_EKIND);
    cr_assert_str_eq(err.message, "cubin inputs are not supported yet");
    cr_assert_str_eq(err.source, "k.cubin");
    fdl_link_destroy(link);
    fdl_link_destroy(first);
}

Test(link_input, other_content_says_what_it_is)
{
    static const struct {
        const char *bytes;
        size_t len;
        const char *message;
    } cases[] = {
        {"\x50\xed\x55\xba\x01\x00\x10\x00", 8,
         "not a PTX file (found 50 ed 55 ba ...: a fatbin, not supported as an input yet)"},
        {"\xed\x43\x4e\x7f\x00", 5,
         "not a PTX file (found ed 43 4e 7f ...: LTO-IR (an NVVM container), not supported as "
         "an input yet)"},
        {"!<arch>\nx", 9,
         "not a PTX file (found 21 3c 61 72 ...: an ar archive (a static library), not supported "
         "as an input yet)"},
        {"hello world\n", 12,
         "not a PTX file (found 68 65 6c 6c ...: text without a .version directive)"},
        {"\x01\x02", 2, "not a PTX file (found 01 02: binary data)"},
        {"// only a comment\n.target sm_90\n", 32,
         "not a PTX file (found 2f 2f 20 6f ...: text without a .version directive)"},
        {"/* unterminated .version 8.0", 28,
         "not a PTX file (found 2f 2a 20 75 ...: text without a .version directive)"},
    };
    fdl_link *link = new_link("sm_90");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fdl_error err = FDL_ERROR_INIT;
        guarded g;
        const char *p = guard_copy(&g, cases[i].bytes, cases[i].len);
        cr_assert_eq(fdl_link_add_data(link, p, cases[i].len, "in", FDL_KIND_AUTO, &err),
                     FDL_EKIND, "case %zu", i);
        cr_assert_str_eq(err.message, cases[i].message, "case %zu", i);
        guard_free(&g);
    }
    fdl_link_destroy(link);
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
    cr_assert_geq(ndiags, 1, "the diagnostic callback was not called");
    /* nothing reached the linker */
    cr_assert_eq(fdl_link_wall_ms(link), 0.0);
    cr_assert_null(fdl_link_cubin(link, NULL));
    cr_assert_str_empty(fdl_link_error_log(link));
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
}

Test(link_backend, destroy_accepts_null)
{
    fdl_link_destroy(NULL);
    cr_assert_null(fdl_link_cubin(NULL, NULL));
    cr_assert_str_empty(fdl_link_info_log(NULL));
    cr_assert_str_empty(fdl_link_error_log(NULL));
    cr_assert_eq(fdl_link_wall_ms(NULL), 0.0);
}
