/*
 * Links of every input kind with the real nvJitLink and NVRTC (no GPU needed), over fixtures
 * that tests/link/CMakeLists.txt builds with nvcc: each kind, from a file and from memory, links
 * into a caller, and the output cubin defines the caller's kernel and resolves the foreign
 * function; then every refusal, with its exact message.
 *
 * Criterion runs each test in its own process, so a test that sets FDLINK_* environment
 * variables before its first link sees fresh tables of entry points.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdlink/decl.h"
#include "fdlink/link.h"
#include "fdlink/host.h"
#include "internal.h"

#define FX FDL_LINK_FIXTURES

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static const char *fx(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", FX, name);
    return p;
}

static char *slurp(const char *path, size_t *size)
{
    char *data = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl__read_file(path, &data, size, &err);
    cr_assert_eq(rc, FDL_OK, "cannot read fixture %s: %s", path, err.message);
    return data;
}

static fdl_link *make_link(fdl_lto_mode lto, int emit_ptx)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.lto = lto;
    opts.emit_ptx = emit_ptx;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_create(&link, &opts, &err);
    cr_assert_eq(rc, FDL_OK, "fdl_link_create: %s %s", fdl_status_name(rc), err.message);
    return link;
}

/* Add a fixture from its file, or from memory under its plain name. */
static void add(fdl_link *link, const char *name, int from_memory)
{
    fdl_error err = FDL_ERROR_INIT;
    int rc;
    if (from_memory) {
        size_t size;
        char *data = slurp(fx(name), &size);
        rc = fdl_link_add_data(link, data, size, name, FDL_KIND_AUTO, &err);
        memset(data, 0, size); /* the link keeps its own copy */
        free(data);
    } else {
        rc = fdl_link_add_file(link, fx(name), FDL_KIND_AUTO, &err);
    }
    cr_assert_eq(rc, FDL_OK, "add %s: %s %s", name, fdl_status_name(rc), err.message);
}

static const fdl_symbol *find_symbol(const fdl_image *img, const char *name)
{
    for (size_t i = 0; i < img->nsymbols; i++)
        if (strcmp(img->symbols[i].name, name) == 0)
            return &img->symbols[i];
    return NULL;
}

enum { MUL_ABSENT = 0, MUL_DEFINED = 1, MUL_EITHER = 2 };

/*
 * The linked cubin: an executable cubin for sm_90 that defines the kernel @p kernel, has no
 * undefined function left, and defines mul_f32_f32 or not as @p mul says.
 */
static void check_cubin(const fdl_link *link, const char *kernel, int mul)
{
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    cr_assert_not_null(cubin);
    fdl_inspection *ins = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_inspect_data(&ins, cubin, size, "out.cubin", FDL_KIND_AUTO, &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_inspection_kind(ins), FDL_KIND_CUBIN);
    cr_assert_eq(fdl_inspection_count(ins), 1);
    const fdl_image *img = fdl_inspection_image(ins, 0);
    cr_assert_str_eq(img->arch, "sm_90");
    cr_assert_eq(img->relocatable, 0, "a linked cubin is executable");
    const fdl_symbol *k = find_symbol(img, kernel);
    cr_assert_not_null(k, "%s is not in the cubin", kernel);
    cr_assert(k->defined && k->kind == FDL_SYMBOL_KERNEL);
    cr_assert_gt(k->registers, 0);
    /* the driver provides its syscalls at load (assert()'s __assertfail, printf's vprintf) */
    for (size_t i = 0; i < img->nsymbols; i++)
        cr_assert(img->symbols[i].defined || img->symbols[i].kind != FDL_SYMBOL_FUNCTION ||
                      strncmp(img->symbols[i].name, "__cuda_syscall", 14) == 0 ||
                      strcmp(img->symbols[i].name, "__assertfail") == 0 ||
                      strcmp(img->symbols[i].name, "vprintf") == 0,
                  "%s is still undefined", img->symbols[i].name);
    const fdl_symbol *m = find_symbol(img, "mul_f32_f32");
    if (mul == MUL_DEFINED)
        cr_assert(m && m->defined && m->kind == FDL_SYMBOL_FUNCTION, "mul_f32_f32 not defined");
    else if (mul == MUL_ABSENT)
        cr_assert_null(m, "mul_f32_f32 is still a function of its own (not inlined)");
    fdl_inspection_destroy(ins);
}

/* caller + callee, from files and from memory; LTO as expected. */
static void link_pair(const char *caller, const char *callee, fdl_lto_mode mode, int expect_lto,
                      int mul)
{
    for (int mem = 0; mem < 2; mem++) {
        fdl_link *link = make_link(mode, 0);
        add(link, caller, mem);
        add(link, callee, mem);
        fdl_error err = FDL_ERROR_INIT;
        int rc = fdl_link_complete(link, &err);
        cr_assert_eq(rc, FDL_OK, "%s + %s (%s): %s %s", caller, callee, mem ? "memory" : "file",
                     fdl_status_name(rc), err.message);
        cr_assert_eq(fdl_link_lto(link), expect_lto, "%s + %s: LTO %d", caller, callee,
                     fdl_link_lto(link));
        cr_assert_eq(fdl_link_get_backend(link), FDL_BACKEND_NVJITLINK);
        cr_assert_gt(fdl_link_wall_ms(link), 0.0);
        check_cubin(link, "multiply_vectors", mul);
        fdl_link_destroy(link);
    }
}

static fdl_decls *load_decls(void)
{
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_load(&decls, fx("mul.decl"), &err), FDL_OK, "%s", err.message);
    return decls;
}

/* Expect fdl_link_complete of @p files (with the declarations when @p decls) to fail. */
static void expect_complete(const char *const *files, size_t n, fdl_decls *decls,
                            fdl_lto_mode mode, int code, const char *source, const char *message)
{
    fdl_link *link = make_link(mode, 0);
    fdl_error err = FDL_ERROR_INIT;
    if (decls)
        cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    for (size_t i = 0; i < n; i++)
        add(link, files[i], 0);
    int rc = fdl_link_complete(link, &err);
    cr_assert_eq(rc, code, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert_eq(err.code, code);
    if (source)
        cr_assert_str_eq(err.source, source);
    cr_assert_str_eq(err.message, message);
    cr_assert_null(fdl_link_cubin(link, NULL));
    fdl_link_destroy(link);
}

/* ------------------------------------------------------------------------------------------ */
/* Every kind links                                                                            */
/* ------------------------------------------------------------------------------------------ */

Test(link_kinds, ptx) { link_pair("caller.ptx", "mul.ptx", FDL_LTO_AUTO, 0, MUL_DEFINED); }
Test(link_kinds, cubin) { link_pair("caller.ptx", "mul.cubin", FDL_LTO_AUTO, 0, MUL_DEFINED); }
Test(link_kinds, cubin_caller) { link_pair("caller.cubin", "mul.ptx", FDL_LTO_AUTO, 0, MUL_DEFINED); }
Test(link_kinds, fatbin_two_archs) { link_pair("caller.ptx", "mul.fatbin", FDL_LTO_AUTO, 0, MUL_DEFINED); }
Test(link_kinds, fatbin_ptx_only) { link_pair("caller.ptx", "mul_ptx.fatbin", FDL_LTO_AUTO, 0, MUL_DEFINED); }
Test(link_kinds, fatbin_lz4) { link_pair("caller.ptx", "mul_lz4.fatbin", FDL_LTO_AUTO, 0, MUL_DEFINED); }
Test(link_kinds, object) { link_pair("caller.ptx", "mul.o", FDL_LTO_AUTO, 0, MUL_DEFINED); }
Test(link_kinds, library) { link_pair("caller.ptx", "libmul.a", FDL_LTO_AUTO, 0, MUL_DEFINED); }

/* LTO-IR turns LTO on by itself; a PTX caller keeps its call (see link_lto below). */
Test(link_kinds, ltoir) { link_pair("caller.ptx", "mul.ltoir", FDL_LTO_AUTO, 1, MUL_DEFINED); }
Test(link_kinds, ltoir_in_fatbin) { link_pair("caller.ptx", "mul_lto.fatbin", FDL_LTO_AUTO, 1, MUL_DEFINED); }
Test(link_kinds, ltoir_in_object) { link_pair("caller.ptx", "mul_lto.o", FDL_LTO_AUTO, 1, MUL_DEFINED); }
Test(link_kinds, ltoir_in_library) { link_pair("caller.ptx", "libmul_lto.a", FDL_LTO_AUTO, 1, MUL_DEFINED); }

/* An LTO-IR caller with every kind of callee, under LTO. */
Test(link_kinds, lto_caller_with_ptx) { link_pair("caller.ltoir", "mul.ptx", FDL_LTO_ON, 1, MUL_DEFINED); }
Test(link_kinds, lto_caller_with_cubin) { link_pair("caller.ltoir", "mul.cubin", FDL_LTO_ON, 1, MUL_DEFINED); }
Test(link_kinds, lto_caller_with_fatbin) { link_pair("caller.ltoir", "mul.fatbin", FDL_LTO_ON, 1, MUL_DEFINED); }
Test(link_kinds, lto_caller_with_object) { link_pair("caller.ltoir", "mul.o", FDL_LTO_ON, 1, MUL_DEFINED); }
Test(link_kinds, lto_caller_with_library) { link_pair("caller.ltoir", "libmul.a", FDL_LTO_ON, 1, MUL_DEFINED); }
Test(link_kinds, lto_caller_with_ltoir) { link_pair("caller.ltoir", "mul.ltoir", FDL_LTO_AUTO, 1, MUL_ABSENT); }
Test(link_kinds, lto_caller_with_ltoir_library) { link_pair("caller.ltoir", "libmul_lto.a", FDL_LTO_AUTO, 1, MUL_ABSENT); }

/* CUDA C, compiled by NVRTC: to LTO-IR by default (LTO on), to PTX on request. */
Test(link_kinds, cuda_source)
{
    for (int output = 0; output < 2; output++) {
        fdl_link *link = make_link(FDL_LTO_AUTO, 0);
        add(link, "caller.ptx", 0);
        fdl_nvrtc_options o = FDL_NVRTC_OPTIONS_INIT;
        o.output = output ? FDL_CUDA_OUTPUT_PTX : FDL_CUDA_OUTPUT_AUTO;
        size_t size;
        char *src = slurp(fx("mul.cu"), &size);
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_link_add_cuda(link, src, size, "mul.cu", &o, &err), FDL_OK, "%s",
                     err.message);
        free(src);
        fdl_input_kind kind;
        cr_assert_str_eq(fdl_link_input(link, 1, &kind), "mul.cu");
        cr_assert_eq(kind, FDL_KIND_CUDA);
        /* the NVRTC output as the backend gets it: LTO-IR (auto, LTO on) or PTX text */
        size_t n = 0;
        const unsigned char *bytes = fdl_link_input_data(link, 1, &n, &kind);
        cr_assert(bytes && n > 16);
        cr_assert_eq(kind, output ? FDL_KIND_PTX : FDL_KIND_LTOIR);
        fdl_input_kind detected;
        cr_assert_eq(fdl_input_detect(&detected, bytes, n, "x", &err), FDL_OK, "%s", err.message);
        cr_assert_eq(detected, kind);
        if (output)
            cr_assert(strstr((const char *)bytes, "mul_f32_f32") != NULL);
        cr_assert_null(fdl_link_input_data(link, 2, &n, &kind));
        cr_assert_eq(n, 0);
        cr_assert_eq(kind, FDL_KIND_AUTO);
        cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
        cr_assert_eq(fdl_link_input_data(link, 1, &n, NULL), bytes); /* kept until destroy */
        cr_assert_eq(fdl_link_lto(link), !output);
        check_cubin(link, "multiply_vectors", MUL_DEFINED);
        fdl_link_destroy(link);
    }
    /* a .cu file is recognised by its name */
    fdl_link *link = make_link(FDL_LTO_OFF, 0);
    add(link, "caller.ptx", 0);
    add(link, "mul.cu", 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_lto(link), 0);
    check_cubin(link, "multiply_vectors", MUL_DEFINED);
    fdl_link_destroy(link);
}

Test(link_kinds, stated_kind_overrides_the_name)
{
    fdl_link *link = make_link(FDL_LTO_OFF, 0);
    size_t size;
    char *src = slurp(fx("mul.cu"), &size);
    fdl_error err = FDL_ERROR_INIT;
    /* text without a .cu name is no input of any kind ... */
    cr_assert_eq(fdl_link_add_data(link, src, size, "mul.txt", FDL_KIND_AUTO, &err), FDL_EKIND);
    /* ... unless the caller says it is CUDA C */
    cr_assert_eq(fdl_link_add_data(link, src, size, "mul.txt", FDL_KIND_CUDA, &err), FDL_OK,
                 "%s", err.message);
    free(src);
    add(link, "caller.ptx", 1);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    fdl_link_destroy(link);
}

/* ------------------------------------------------------------------------------------------ */
/* LTO inlines                                                                                 */
/* ------------------------------------------------------------------------------------------ */

Test(link_lto, ltoir_caller_and_callee_inline_the_call)
{
    fdl_link *link = make_link(FDL_LTO_AUTO, 1);
    add(link, "caller.ltoir", 0);
    add(link, "mul.ltoir", 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_lto(link), 1);
    size_t n = 0;
    const char *ptx = fdl_link_ptx(link, &n);
    cr_assert_not_null(ptx);
    cr_assert_eq(strlen(ptx), n);
    cr_assert(strstr(ptx, ".visible .entry multiply_vectors"), "%s", ptx);
    /* the foreign call is gone: no call instruction, not even the function's name */
    cr_assert_null(strstr(ptx, "call"), "post-LTO PTX still calls:\n%s", ptx);
    cr_assert_null(strstr(ptx, "mul_f32_f32"), "post-LTO PTX:\n%s", ptx);
    check_cubin(link, "multiply_vectors", MUL_ABSENT);
    fdl_link_destroy(link);
}

Test(link_lto, a_ptx_caller_keeps_its_call)
{
    /* nvJitLink compiles PTX inputs apart from the LTO-IR: it cannot inline into them */
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    add(link, "caller.ptx", 0);
    add(link, "mul.ltoir", 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_lto(link), 1);
    check_cubin(link, "multiply_vectors", MUL_DEFINED);
    cr_assert_null(fdl_link_ptx(link, NULL), "no PTX without emit_ptx");
    fdl_link_destroy(link);
    /* and the post-LTO PTX of such a link does not exist */
    link = make_link(FDL_LTO_AUTO, 1);
    add(link, "caller.ptx", 0);
    add(link, "mul.ltoir", 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_EINVAL);
    cr_assert_str_eq(err.source, fx("caller.ptx"));
    cr_assert_str_eq(err.message, "emit_ptx: nvJitLink emits post-LTO PTX only when every input "
                                  "is LTO-IR, and this input links ptx");
    fdl_link_destroy(link);
}

Test(link_lto, kernels_used_and_other_lto_options)
{
    static const char *const kernels[] = {"multiply_vectors", NULL};
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.kernels_used = kernels;
    opts.ftz = 1;
    opts.prec_div = 0;
    opts.prec_sqrt = 0;
    opts.fma = 1;
    opts.opt_level = 3;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    add(link, "caller.ltoir", 1);
    add(link, "mul.ltoir", 1);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    check_cubin(link, "multiply_vectors", MUL_ABSENT);
    fdl_link_destroy(link);
}

Test(link_lto, lto_on_without_ltoir_is_refused)
{
    static const char *const files[] = {"caller.ptx", "mul.ptx"};
    expect_complete(files, 2, NULL, FDL_LTO_ON, FDL_EINVAL, "",
                    "LTO is on, but no input carries LTO-IR for sm_90 (give LTO-IR, e.g. nvcc "
                    "-dlto, or leave LTO to be decided by the inputs)");
}

Test(link_lto, ltoir_with_lto_off_is_refused)
{
    fdl_link *link = make_link(FDL_LTO_OFF, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_file(link, fx("mul.ltoir"), FDL_KIND_AUTO, &err), FDL_EKIND);
    cr_assert_str_eq(err.source, fx("mul.ltoir"));
    cr_assert_str_eq(err.message,
                     "LTO-IR can only be linked with link-time optimisation, and LTO is off");
    fdl_link_destroy(link);
    /* inside a fatbin it is found when the link decides what each input gives */
    static const char *const files[] = {"caller.ptx", "mul_lto.fatbin"};
    expect_complete(files, 2, NULL, FDL_LTO_OFF, FDL_EKIND, fx("mul_lto.fatbin"),
                    "holds only LTO-IR for sm_90 (lto_90 ltoir), and LTO is off");
}

/* ------------------------------------------------------------------------------------------ */
/* Detection and inspection                                                                    */
/* ------------------------------------------------------------------------------------------ */

Test(link_detect, every_fixture)
{
    static const struct {
        const char *file;
        fdl_input_kind kind;
    } cases[] = {
        {"caller.ptx", FDL_KIND_PTX},       {"mul.cubin", FDL_KIND_CUBIN},
        {"mul.fatbin", FDL_KIND_FATBIN},    {"mul_lz4.fatbin", FDL_KIND_FATBIN},
        {"mul.ltoir", FDL_KIND_LTOIR},      {"mul.o", FDL_KIND_OBJECT},
        {"mul_lto.o", FDL_KIND_OBJECT},     {"libmul.a", FDL_KIND_LIBRARY},
        {"block_sum.cu", FDL_KIND_CUDA},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t size;
        char *data = slurp(fx(cases[i].file), &size);
        fdl_input_kind kind = (fdl_input_kind)99;
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_input_detect(&kind, data, size, cases[i].file, &err), FDL_OK, "%s: %s",
                     cases[i].file, err.message);
        cr_assert_eq(kind, cases[i].kind, "%s: %s", cases[i].file, fdl_input_kind_name(kind));
        free(data);
    }
    size_t size;
    char *data = slurp(fx("host_only.o"), &size);
    fdl_input_kind kind;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_input_detect(&kind, data, size, "x.o", &err), FDL_EKIND);
    cr_assert_eq(kind, FDL_KIND_AUTO);
    cr_assert_str_eq(err.source, "x.o");
    cr_assert_str_eq(err.message,
                     "a host object with no device code (no .nv_fatbin or __nv_relfatbin section)");
    free(data);
}

Test(link_inspect, fatbin_of_two_architectures)
{
    fdl_inspection *ins = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_inspect_file(&ins, fx("mul.fatbin"), FDL_KIND_AUTO, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_inspection_kind(ins), FDL_KIND_FATBIN);
    cr_assert_eq(fdl_inspection_count(ins), 2);
    int seen80 = 0, seen90 = 0;
    for (size_t i = 0; i < 2; i++) {
        const fdl_image *img = fdl_inspection_image(ins, i);
        cr_assert_eq(img->kind, FDL_KIND_CUBIN);
        cr_assert_str_eq(img->compression, "zstd");
        cr_assert(img->relocatable);
        cr_assert_str_empty(img->note);
        seen80 |= img->arch_number == 80 && strcmp(img->arch, "sm_80") == 0;
        seen90 |= img->arch_number == 90 && strcmp(img->arch, "sm_90") == 0;
        char name[600];
        snprintf(name, sizeof name, "%s[%s cubin]", fx("mul.fatbin"), img->arch);
        cr_assert_str_eq(img->name, name);
        const fdl_symbol *s = find_symbol(img, "mul_f32_f32");
        cr_assert_not_null(s);
        cr_assert(s->defined && !s->weak && s->kind == FDL_SYMBOL_FUNCTION);
        cr_assert_gt(s->registers, 0);
        cr_assert_eq(s->local_bytes, 0);
    }
    cr_assert(seen80 && seen90);
    cr_assert_null(fdl_inspection_image(ins, 2));
    fdl_inspection_destroy(ins);
}

Test(link_inspect, object_library_ltoir_and_lz4)
{
    static const struct {
        const char *file;
        fdl_input_kind kind;
        size_t images;
        fdl_input_kind first;
        const char *arch;
        const char *member;
        const char *compression;
    } cases[] = {
        {"mul.o", FDL_KIND_OBJECT, 2, FDL_KIND_CUBIN, "sm_90", "", "zstd"},
        {"libmul.a", FDL_KIND_LIBRARY, 2, FDL_KIND_CUBIN, "sm_90", "mul.o", "zstd"},
        {"mul_lto.o", FDL_KIND_OBJECT, 1, FDL_KIND_LTOIR, "lto_90", "", ""},
        {"mul.ltoir", FDL_KIND_LTOIR, 1, FDL_KIND_LTOIR, "lto_90", "", ""},
        {"mul_lz4.fatbin", FDL_KIND_FATBIN, 1, FDL_KIND_CUBIN, "sm_90", "", "lz4"},
        {"mul_ptx.fatbin", FDL_KIND_FATBIN, 1, FDL_KIND_PTX, "compute_80", "", "zstd"},
        {"caller.ptx", FDL_KIND_PTX, 1, FDL_KIND_PTX, "compute_80", "", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fdl_inspection *ins = NULL;
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_inspect_file(&ins, fx(cases[i].file), FDL_KIND_AUTO, &err), FDL_OK,
                     "%s: %s", cases[i].file, err.message);
        cr_assert_eq(fdl_inspection_kind(ins), cases[i].kind, "%s", cases[i].file);
        cr_assert_eq(fdl_inspection_count(ins), cases[i].images, "%s", cases[i].file);
        const fdl_image *img = fdl_inspection_image(ins, 0);
        cr_assert_eq(img->kind, cases[i].first, "%s", cases[i].file);
        cr_assert_str_eq(img->arch, cases[i].arch, "%s", cases[i].file);
        cr_assert_str_eq(img->member, cases[i].member, "%s", cases[i].file);
        cr_assert_str_eq(img->compression, cases[i].compression, "%s", cases[i].file);
        if (img->kind == FDL_KIND_CUBIN)
            cr_assert_not_null(find_symbol(img, "mul_f32_f32"), "%s", cases[i].file);
        if (img->kind == FDL_KIND_PTX) {
            cr_assert_not_null(img->ptx);
            cr_assert_str_eq(img->ptx_version, "9.0");
            cr_assert_not_null(fdl_ptx_find(img->ptx, strcmp(cases[i].file, "caller.ptx") == 0
                                                          ? "multiply_vectors"
                                                          : "mul_f32_f32"));
        }
        fdl_inspection_destroy(ins);
    }
}

Test(link_inspect, kernel_resources)
{
    /* what ptxas -v says of caller.cu for sm_90: 24 registers, 8 bytes stack frame */
    fdl_inspection *ins = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_inspect_file(&ins, fx("caller.cubin"), FDL_KIND_AUTO, &err), FDL_OK);
    const fdl_image *img = fdl_inspection_image(ins, 0);
    const fdl_symbol *k = find_symbol(img, "multiply_vectors");
    cr_assert_not_null(k);
    cr_assert_eq(k->kind, FDL_SYMBOL_KERNEL);
    cr_assert_eq(k->registers, 24);
    cr_assert_eq(k->local_bytes, 8);
    cr_assert_eq(k->shared_bytes, 0);
    cr_assert_gt(k->const_bytes, 0);
    const fdl_symbol *m = find_symbol(img, "mul_f32_f32");
    cr_assert_not_null(m);
    cr_assert_eq(m->defined, 0, "the caller only refers to mul_f32_f32");
    cr_assert_eq(m->registers, -1);
    fdl_inspection_destroy(ins);
}

/* ------------------------------------------------------------------------------------------ */
/* Refusals                                                                                    */
/* ------------------------------------------------------------------------------------------ */

static void expect_add(const char *file, int code, const char *message)
{
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_file(link, fx(file), FDL_KIND_AUTO, &err), code, "%s: %s %s", file,
                 fdl_status_name(err.code), err.message);
    cr_assert_str_eq(err.source, fx(file));
    cr_assert_str_eq(err.message, message);
    cr_assert_eq(fdl_link_input_count(link), 0);
    fdl_link_destroy(link);
}

Test(link_refuse, host_object_without_device_code)
{
    expect_add("host_only.o", FDL_EKIND,
               "a host object with no device code (no .nv_fatbin or __nv_relfatbin section)");
}

Test(link_refuse, cubin_for_another_arch)
{
    expect_add("mul_sm80.cubin", FDL_EKIND,
               "a cubin for sm_80 cannot be linked for sm_90 (machine code links only into its "
               "own architecture): rebuild it for sm_90, or link PTX or LTO-IR");
}

Test(link_refuse, executable_cubin)
{
    expect_add("mul_exec.cubin", FDL_EKIND,
               "an executable cubin (already linked, or compiled without -rdc=true): only "
               "relocatable device code can be linked; compile with nvcc -cubin -rdc=true or -dc");
}

Test(link_refuse, fatbin_without_code_for_the_arch)
{
    static const char *const files[] = {"caller.ptx", "mul_sm80.fatbin"};
    expect_complete(files, 2, NULL, FDL_LTO_AUTO, FDL_ELINK, fx("mul_sm80.fatbin"),
                    "no code for sm_90: it holds sm_80 cubin; rebuild it for sm_90, or with PTX "
                    "for compute_90 or older");
}

Test(link_refuse, duplicate_definitions_name_both_inputs)
{
    char expect[1024];
    static const char *const binary[] = {"caller.ptx", "mul.cubin", "libmul.a"};
    snprintf(expect, sizeof expect,
             "mul_f32_f32: multiple definition, first defined in %s (ABI-6)", fx("mul.cubin"));
    char source[600];
    snprintf(source, sizeof source, "%s(mul.o)[sm_90 cubin]", fx("libmul.a"));
    expect_complete(binary, 3, NULL, FDL_LTO_AUTO, FDL_ELINK, source, expect);

    /* a PTX definition is named with its line */
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    add(link, "mul.ptx", 0);
    add(link, "caller.ptx", 0);
    add(link, "mul.fatbin", 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK, "%s", err.message);
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    snprintf(source, sizeof source, "%s[sm_90 cubin]", fx("mul.fatbin"));
    cr_assert_str_eq(err.source, source);
    cr_assert(strstr(err.message, "first defined at ") && strstr(err.message, "mul.ptx:"),
              "%s", err.message);
    cr_assert_eq(fdl_link_wall_ms(link), 0.0, "the backend ran");
    fdl_link_destroy(link);
}

Test(link_refuse, undefined_symbol_in_a_cubin)
{
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    add(link, "caller.cubin", 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK);
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    cr_assert_str_eq(err.source, fx("caller.cubin"));
    cr_assert_eq(err.line, 0);
    cr_assert_str_eq(err.message, "mul_f32_f32: undefined reference; defined in no input, and "
                                  "not declared (no declarations were given)");
    cr_assert_not_null(err.log);
    cr_assert(strstr(err.log, "Undefined reference to 'mul_f32_f32'"), "%s", err.log);
    cr_assert_eq(err.log, fdl_link_error_log(link));
    cr_assert_neq(err.backend_code, 0);
    fdl_link_destroy(link);
}

/* A declaration file of one function, add_i32, and PTX that defines it. */
static const char add_decl[] = "add_i32: int32(int32, int32)\n";
static const char add_ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .func (.param .b32 r) add_i32(.param .b64 p, .param .b32 a, .param .b32 b)\n"
    "{\n .reg .b32 %r<4>;\n .reg .b64 %rd<2>;\n"
    " ld.param.u64 %rd1, [p];\n ld.param.u32 %r1, [a];\n ld.param.u32 %r2, [b];\n"
    " add.s32 %r3, %r1, %r2;\n st.u32 [%rd1], %r3;\n mov.u32 %r3, 0;\n"
    " st.param.b32 [r], %r3;\n ret;\n}\n";

Test(link_refuse, undefined_symbol_says_whether_it_is_declared)
{
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_parse(&decls, add_decl, strlen(add_decl), "add.decl", &err), FDL_OK);
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ptx", 0);
    cr_assert_eq(fdl_link_add_data(link, add_ptx, strlen(add_ptx), "add.ptx", FDL_KIND_AUTO,
                                   &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK, "%s", err.message);
    cr_assert_str_eq(err.source, fx("caller.ptx"));
    cr_assert_gt(err.line, 0);
    cr_assert_str_eq(err.message, "mul_f32_f32: undefined reference; not declared in add.decl, "
                                  "nor defined in any input");
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(link_refuse, undefined_after_lto_names_the_ltoir_input)
{
    /* without NVRTC the post-LTO check cannot tell a missing definition from a dropped one,
     * so the backend finds the undefined symbol; ptxas alone would not say where */
    cr_assert_eq(setenv("FDLINK_NVRTC", "/nonexistent/libnvrtc.so", 1), 0);
    fdl_decls *decls = load_decls();
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ltoir", 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK, "%s %s", fdl_status_name(err.code),
                 err.message);
    char source[600];
    snprintf(source, sizeof source, "%s[post-LTO ptx]", fx("caller.ltoir"));
    cr_assert_str_eq(err.source, source);
    cr_assert_gt(err.line, 0);
    char expect[600];
    snprintf(expect, sizeof expect,
             "mul_f32_f32: undefined reference; declared at %s:2:1 but defined in no input",
             fx("mul.decl"));
    cr_assert_str_eq(err.message, expect);
    cr_assert(strstr(err.log, "Unresolved extern function 'mul_f32_f32'"), "%s", err.log);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

/* ------------------------------------------------------------------------------------------ */
/* Declarations checked against binary inputs and LTO-IR                                       */
/* ------------------------------------------------------------------------------------------ */

static size_t ndiag;

static void count_diag(void *ctx, const fdl_error *diag)
{
    (void)ctx;
    cr_assert_eq(diag->code, FDL_EABI);
    ndiag++;
}

static void expect_decl_error(const char *callee, const char *source, const char *message)
{
    fdl_decls *decls = load_decls();
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    ndiag = 0;
    cr_assert_eq(fdl_link_set_diag(link, count_diag, NULL), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ptx", 0);
    add(link, callee, 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_EABI, "%s: %s %s", callee,
                 fdl_status_name(err.code), err.message);
    cr_assert_str_eq(err.source, source);
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    cr_assert_str_eq(err.message, message);
    cr_assert_geq(ndiag, 1);
    cr_assert_null(fdl_link_cubin(link, NULL));
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(link_decls, binary_inputs_that_conform_link)
{
    static const char *const callees[] = {"mul.cubin", "mul.fatbin", "mul_lz4.fatbin", "mul.o",
                                          "libmul.a", "mul_ptx.fatbin", "mul.ltoir",
                                          "mul_lto.fatbin", "libmul_lto.a"};
    fdl_decls *decls = load_decls();
    for (size_t i = 0; i < sizeof callees / sizeof callees[0]; i++) {
        fdl_link *link = make_link(FDL_LTO_AUTO, 0);
        fdl_error err = FDL_ERROR_INIT;
        ndiag = 0;
        fdl_link_set_diag(link, count_diag, NULL);
        cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
        add(link, "caller.ptx", 0);
        add(link, callees[i], 0);
        cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s: %s", callees[i], err.message);
        cr_assert_eq(ndiag, 0);
        check_cubin(link, "multiply_vectors", MUL_DEFINED);
        fdl_link_destroy(link);
    }
    fdl_decls_destroy(decls);
}

Test(link_decls, mangled_cubin_is_abi_7)
{
    char message[600];
    snprintf(message, sizeof message,
             "mul_f32_f32: defined only with a C++ mangled name _Z11mul_f32_f32Pfff; declare it "
             "extern \"C\" (ABI-7; declared at %s:2:1)",
             fx("mul.decl"));
    expect_decl_error("mangled.cubin", fx("mangled.cubin"), message);
}

/* issue 24: LTO-IR gives the same C++ hint as every other kind (the -O0 view keeps the
 * mangled definition that an optimising LTO dropped as unreferenced) */
Test(link_decls, mangled_ltoir_is_abi_7)
{
    char source[600], message[600];
    snprintf(source, sizeof source, "%s[post-LTO ptx]", fx("mangled.ltoir"));
    snprintf(message, sizeof message,
             "mul_f32_f32: defined only with a C++ mangled name _Z11mul_f32_f32Pfff; declare it "
             "extern \"C\" (ABI-7; declared at %s:2:1)",
             fx("mul.decl"));
    expect_decl_error("mangled.ltoir", source, message);
}

/* issue 38: a C++ definition of other types than declared (a Numba-ABI function written as a
 * plain one) is named with LTO as without it: the keeper keeps that form too */
Test(link_decls, mangled_plain_ltoir_is_abi_7_as_its_ptx)
{
    char source[600], message[600];
    snprintf(message, sizeof message,
             "mul_f32_f32: defined only with a C++ mangled name _Z11mul_f32_f32ff; declare it "
             "extern \"C\" (ABI-7; declared at %s:2:1)",
             fx("mul.decl"));
    expect_decl_error("mangled_plain.ptx", fx("mangled_plain.ptx"), message);
    snprintf(source, sizeof source, "%s[post-LTO ptx]", fx("mangled_plain.ltoir"));
    expect_decl_error("mangled_plain.ltoir", source, message);
}

/* issue 38: without declarations, an undefined C name beside LTO-IR says why a C++ definition
 * cannot be seen, and what makes fdlink look for one */
Test(link_decls, undefined_beside_ltoir_without_declarations_says_why)
{
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    add(link, "caller.ltoir", 0);
    add(link, "mangled_plain.ltoir", 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK, "%s", err.message);
    cr_assert(strstr(err.message, "mul_f32_f32: undefined reference; defined in no input, and "
                                  "not declared (no declarations were given) (a definition under "
                                  "a C++ name, without extern \"C\", is dropped unseen by "
                                  "link-time optimisation, which keeps only what is called: with "
                                  "the declarations, --decl, fdlink looks for it under its C++ "
                                  "names too)"),
              "%s", err.message);
    fdl_link_destroy(link);
}

Test(link_decls, kernel_in_a_cubin_is_abi_11)
{
    char message[600];
    snprintf(message, sizeof message,
             "mul_f32_f32: defined as a kernel in %s, but a foreign function must be a device "
             "function (ABI-11; declared at %s:2:1)",
             fx("kernel_named.cubin"), fx("mul.decl"));
    expect_decl_error("kernel_named.cubin", fx("kernel_named.cubin"), message);
}

Test(link_decls, wrong_width_in_ltoir_is_found_after_lto)
{
    char source[600], message[600];
    snprintf(source, sizeof source, "%s[post-LTO ptx]", fx("mul_wide.ltoir"));
    snprintf(message, sizeof message,
             "mul_f32_f32: parameter 2 (float32) is .b64 but needs .b32 (ABI-5; declared at "
             "%s:2:1)",
             fx("mul.decl"));
    expect_decl_error("mul_wide.ltoir", source, message);
}

Test(link_decls, declared_but_defined_nowhere)
{
    fdl_decls *decls = load_decls();
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.cubin", 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_EABI, "%s", err.message);
    cr_assert_str_eq(err.source, fx("mul.decl"));
    cr_assert_eq(err.line, 2);
    char message[600];
    snprintf(message, sizeof message,
             "mul_f32_f32: declared but not defined in any input (referenced in %s) (ABI-6; "
             "declared at %s:2:1)",
             fx("caller.cubin"), fx("mul.decl"));
    cr_assert_str_eq(err.message, message);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

/* ------------------------------------------------------------------------------------------ */
/* CUDA C with NVRTC                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* block_sum.cu with -DBLOCK_SIZE=@p block: its static shared memory is 4 * block bytes. */
static long block_sum_smem(const char *block_define, fdl_cuda_output output)
{
    const char *defines[] = {block_define, NULL};
    fdl_nvrtc_options o = FDL_NVRTC_OPTIONS_INIT;
    o.defines = defines;
    o.std = "c++17";
    o.output = output;
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    size_t size;
    char *src = slurp(fx("block_sum.cu"), &size);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_cuda(link, src, size, "block_sum.cu", &o, &err), FDL_OK, "%s",
                 err.message);
    free(src);
    add(link, "mul.ptx", 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    size_t n;
    const void *cubin = fdl_link_cubin(link, &n);
    fdl_inspection *ins = NULL;
    cr_assert_eq(fdl_inspect_data(&ins, cubin, n, "out", FDL_KIND_AUTO, &err), FDL_OK);
    const fdl_symbol *k = find_symbol(fdl_inspection_image(ins, 0), "block_sum");
    cr_assert_not_null(k);
    long smem = k->shared_bytes;
    fdl_inspection_destroy(ins);
    fdl_link_destroy(link);
    return smem;
}

Test(link_cuda, defines_reach_the_compiler)
{
    cr_assert_eq(block_sum_smem("BLOCK_SIZE=64", FDL_CUDA_OUTPUT_AUTO), 64 * 4);
    cr_assert_eq(block_sum_smem("BLOCK_SIZE=256", FDL_CUDA_OUTPUT_PTX), 256 * 4);
}

Test(link_cuda, compile_error_points_at_the_line_and_keeps_the_log)
{
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    size_t size;
    char *src = slurp(fx("block_sum.cu"), &size);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_cuda(link, src, size, "block_sum.cu", NULL, &err), FDL_EPARSE);
    free(src);
    cr_assert_str_eq(err.source, "block_sum.cu");
    cr_assert_eq(err.line, 5);
    cr_assert_str_eq(err.message, "catastrophic error: #error directive: \"BLOCK_SIZE must be "
                                  "defined (-DBLOCK_SIZE=N)\"");
    cr_assert_not_null(err.log);
    cr_assert(strstr(err.log, "block_sum.cu(5)"), "%s", err.log);
    cr_assert_eq(err.log, fdl_link_error_log(link));
    cr_assert_eq(fdl_link_input_count(link), 0);
    fdl_link_destroy(link);
}

Test(link_cuda, include_dirs_std_and_the_toolkit_headers)
{
    char dir[] = "/tmp/fdlink-test-nvrtc-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char header[600];
    snprintf(header, sizeof header, "%s/fdl_scale.h", dir);
    FILE *f = fopen(header, "w");
    cr_assert_not_null(f);
    fputs("#define FDL_SCALE 3\n", f);
    fclose(f);
    static const char src[] =
        "#include <cuda_fp16.h>\n"
        "#include \"fdl_scale.h\"\n"
        "template <typename T> __device__ T twice(T x) { if constexpr (sizeof(T) == 4) "
        "return x + x; else return x; }\n"
        "extern \"C\" __global__ void scale(float *p) { p[0] = twice(p[0]) * FDL_SCALE + "
        "__half2float(__float2half(1.0f)); }\n";
    const char *includes[] = {dir, NULL};
    fdl_nvrtc_options o = FDL_NVRTC_OPTIONS_INIT;
    o.include_dirs = includes;
    o.std = "c++17";
    fdl_error err = FDL_ERROR_INIT;
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_cuda(link, src, strlen(src), "scale.cu", &o, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    fdl_link_destroy(link);
    /* if constexpr is C++17 */
    o.std = "c++14";
    link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_cuda(link, src, strlen(src), "scale.cu", &o, &err), FDL_EPARSE);
    cr_assert_eq(err.line, 3, "%s", err.message);
    fdl_link_destroy(link);
    /* without the include directory, the header is not found */
    o.std = "c++17";
    o.include_dirs = NULL;
    link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_cuda(link, src, strlen(src), "scale.cu", &o, &err), FDL_EPARSE);
    cr_assert(strstr(err.message, "fdl_scale.h"), "%s", err.message);
    fdl_link_destroy(link);
    /* nor the toolkit's, when asked not to add them */
    o.include_dirs = includes;
    o.no_toolkit_include = 1;
    link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_cuda(link, src, strlen(src), "scale.cu", &o, &err), FDL_EPARSE);
    cr_assert(strstr(err.message, "cuda_fp16.h"), "%s", err.message);
    fdl_link_destroy(link);
    unlink(header);
    rmdir(dir);
}

Test(link_cuda, declarations_header_catches_what_ptx_cannot_show)
{
    /* ABI-10: an int where the declaration says float32 is the same .b32 in PTX */
    fdl_decls *decls = load_decls();
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    size_t size;
    char *src = slurp(fx("mul_stale.cu"), &size);
    /* NVRTC's refusal said as the ABI error it is (ABI-5, issue 38): where the definition is,
     * its types, the declaration's, and where that is; NVRTC's words stay in the log */
    cr_assert_eq(fdl_link_add_cuda(link, src, size, "mul_stale.cu", NULL, &err), FDL_EABI,
                 "%s", err.message);
    cr_assert_str_eq(err.source, "mul_stale.cu");
    cr_assert_eq(err.line, 4);
    cr_assert_eq(err.column, 27);
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    char want[400];
    snprintf(want, sizeof want, "mul_f32_f32: defined as (float *, float, int), declared "
             "float32(float32, float32) (ABI-5; declared at %s:2:1)", fx("mul.decl"));
    cr_assert_str_eq(err.message, want);
    cr_assert_not_null(err.log);
    cr_assert(strstr(err.log, "has \"C\" linkage"), "%s", err.log);
    /* both records: NVRTC's and fdlink's, the rule as its code */
    size_t nd = fdl_link_diagnostic_count(link);
    cr_assert_geq(nd, 2);
    const fdl_diagnostic *last = fdl_link_diagnostic(link, nd - 1);
    cr_assert_str_eq(last->tool, "fdlink");
    cr_assert_str_eq(last->code, "ABI-5");
    cr_assert_str_eq(fdl_link_diagnostic(link, nd - 2)->tool, "nvrtc");
    fdl_link_destroy(link);
    /* without the declarations it compiles: the failure above is the header's doing */
    link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_cuda(link, src, size, "mul_stale.cu", NULL, &err), FDL_OK, "%s",
                 err.message);
    fdl_link_destroy(link);
    free(src);
    fdl_decls_destroy(decls);
}

/* The definition's types as fdlink reads them from the source at NVRTC's position (issue 38):
 * names, comments, newlines and default arguments left out; a declarator beyond the scan's
 * bound said without its types, never read past. */
static void conflict_says(const char *src, const char *want)
{
    fdl_decls *decls = load_decls();
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_cuda(link, src, strlen(src), "c.cu", NULL, &err), FDL_EABI, "%s",
                 err.message);
    cr_assert_str_eq(err.source, "c.cu");
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    cr_assert(strncmp(err.message, want, strlen(want)) == 0, "%s", err.message);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(link_cuda, conflicting_definitions_are_named_with_their_types) /* ABI-5, ABI-2, ABI-11 */
{
    conflict_says("struct P { float x, y; };\n"
                  "extern \"C\" __device__ int mul_f32_f32(float *__restrict__ /* slot */ r,\n"
                  "    struct P, unsigned int b[2] = 0) { return 0; }\n",
                  "mul_f32_f32: defined as (float *__restrict__, struct P, unsigned int[2]), "
                  "declared float32(float32, float32) (ABI-5; ");
    conflict_says("/* a; comment */ extern \"C\" // x;\n"
                  "#define X ;\n"
                  "__device__ long mul_f32_f32(float *r, float a, float b) { return 0; }\n",
                  "mul_f32_f32: defined as long (float *, float, float), declared "
                  "float32(float32, float32): a foreign function returns int, its status "
                  "(ABI-2; ");
    conflict_says("extern \"C\" __global__ void mul_f32_f32(float *r, float a, float b) {}\n",
                  "mul_f32_f32: defined as a kernel, __global__ void (float *, float, float), "
                  "but a foreign function must be a device function (ABI-11; ");
    /* a declarator longer than the scan reads: no types, the rest of the record as ever */
    size_t pad = 6000;
    char *src = malloc(pad + 200);
    cr_assert_not_null(src);
    int n = snprintf(src, 200, "extern \"C\" __device__ int mul_f32_f32(double *r /* ");
    memset(src + n, 'x', pad);
    snprintf(src + n + pad, 200 - (size_t)n, " */, float a, float b) { return 0; }\n");
    conflict_says(src, "mul_f32_f32: defined as other types, declared float32(float32, float32) "
                       "(ABI-5; ");
    free(src);
}

Test(link_cuda, ltoir_output_needs_lto)
{
    fdl_nvrtc_options o = FDL_NVRTC_OPTIONS_INIT;
    o.output = FDL_CUDA_OUTPUT_LTOIR;
    fdl_link *link = make_link(FDL_LTO_OFF, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_cuda(link, "", 0, "empty.cu", &o, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "CUDA C compiled to LTO-IR needs link-time optimisation, and "
                                  "LTO is off");
    fdl_link_destroy(link);
}

Test(link_cuda, missing_nvrtc_is_enolib)
{
    cr_assert_eq(setenv("FDLINK_NVRTC", "/nonexistent/libnvrtc.so.13", 1), 0);
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_file(link, fx("mul.cu"), FDL_KIND_AUTO, &err), FDL_ENOLIB);
    cr_assert(strstr(err.message, "/nonexistent/libnvrtc.so.13"), "%s", err.message);
    cr_assert(strstr(err.message, "to compile CUDA C inputs"), "%s", err.message);
    fdl_link_destroy(link);
}

/* ------------------------------------------------------------------------------------------ */
/* libcudadevrt                                                                                */
/* ------------------------------------------------------------------------------------------ */

static fdl_link *devrt_link(int cudadevrt)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cudadevrt = cudadevrt;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    return link;
}

Test(link_devrt, a_kernel_that_launches_a_kernel)
{
    for (int source = 0; source < 2; source++) {
        fdl_link *link = devrt_link(0);
        add(link, source ? "launch_child.cu" : "launch_child.cubin", 0);
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK);
        cr_assert(strncmp(err.symbol, "__cudaCDP2", 10) == 0, "%s", err.symbol);
        cr_assert(strstr(err.message, "(a kernel launches kernels: link libcudadevrt, "
                                      "-lcudadevrt)"), "%s", err.message);
        fdl_link_destroy(link);

        link = devrt_link(1);
        add(link, source ? "launch_child.cu" : "launch_child.cubin", 0);
        cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
        cr_assert_eq(fdl_link_input_count(link), 2);
        fdl_input_kind kind;
        const char *name = fdl_link_input(link, 1, &kind);
        cr_assert(strstr(name, "libcudadevrt.a"), "%s", name);
        cr_assert_eq(kind, FDL_KIND_LIBRARY);
        check_cubin(link, "launch_child", MUL_EITHER);
        check_cubin(link, "child", MUL_EITHER);
        fdl_link_destroy(link);
    }
}

Test(link_devrt, found_through_fdlink_cuda_root)
{
    /* a toolkit whose libcudadevrt.a is really libmul.a: the lookup took the variable */
    char dir[] = "/tmp/fdlink-test-root-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char lib64[600], fake[700];
    snprintf(lib64, sizeof lib64, "%s/lib64", dir);
    snprintf(fake, sizeof fake, "%s/libcudadevrt.a", lib64);
    cr_assert_eq(mkdir(lib64, 0700), 0);
    size_t size;
    char *data = slurp(fx("libmul.a"), &size);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl__write_atomic(fake, data, size, &err), FDL_OK, "%s", err.message);
    free(data);
    cr_assert_eq(setenv("FDLINK_CUDA_ROOT", dir, 1), 0);
    fdl_link *link = devrt_link(1);
    add(link, "caller.ptx", 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_str_eq(fdl_link_input(link, 1, NULL), fake);
    check_cubin(link, "multiply_vectors", MUL_DEFINED);
    fdl_link_destroy(link);
    unlink(fake);
    rmdir(lib64);
    rmdir(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* Options and backends                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* A kernel that uses 32 registers on sm_90 when nothing limits it. */
static const char heavy_cu[] =
    "extern \"C\" __global__ void heavy(float *out, const float *in, int n)\n"
    "{\n"
    "    __shared__ float tile[256];\n"
    "    __shared__ double extra[32];\n"
    "    float local[40];\n"
    "    int i = threadIdx.x;\n"
    "    tile[i] = in[i];\n"
    "    extra[i % 32] = in[i] * 2.0;\n"
    "    for (int k = 0; k < 40; k++) local[k] = in[(i + k) % n];\n"
    "    __syncthreads();\n"
    "    out[i] = tile[255 - i] + (float)extra[(i + 1) % 32] + local[n % 40];\n"
    "}\n";

static long heavy_registers(int maxrregcount)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.maxrregcount = maxrregcount;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_cuda(link, heavy_cu, strlen(heavy_cu), "heavy.cu", NULL, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    size_t n;
    const void *cubin = fdl_link_cubin(link, &n);
    fdl_inspection *ins = NULL;
    cr_assert_eq(fdl_inspect_data(&ins, cubin, n, "out", FDL_KIND_AUTO, &err), FDL_OK);
    const fdl_symbol *k = find_symbol(fdl_inspection_image(ins, 0), "heavy");
    cr_assert_not_null(k);
    /* static shared memory as ptxas reports it: 256 floats and 32 doubles */
    cr_assert_eq(k->shared_bytes, 256 * 4 + 32 * 8);
    long regs = k->registers;
    fdl_inspection_destroy(ins);
    fdl_link_destroy(link);
    return regs;
}

Test(link_options, maxrregcount_limits_the_registers)
{
    cr_assert_gt(heavy_registers(0), 28);
    long limited = heavy_registers(28);
    cr_assert_leq(limited, 28);
    cr_assert_gt(limited, 0);
}

Test(link_options, culink_combinations_are_refused_first)
{
    static const char *const extra[] = {"-lineinfo", NULL};
    static const char *const kernels[] = {"k", NULL};
    static const struct {
        int what;
        const char *message;
    } cases[] = {
        {0, "LTO needs the nvjitlink backend: cuLink cannot link LTO-IR"},
        {1, "emit_ptx needs the nvjitlink backend"},
        {2, "extra options are nvJitLink options; the culink backend takes none"},
        {3, "ftz, prec-div, prec-sqrt, fma, kernels-used and variables-used are nvJitLink "
            "options; not with culink"},
        {4, "ftz, prec-div, prec-sqrt, fma, kernels-used and variables-used are nvJitLink "
            "options; not with culink"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
        opts.arch = "sm_90";
        opts.backend = FDL_BACKEND_CULINK;
        opts.lto = cases[i].what == 0 ? FDL_LTO_ON : FDL_LTO_AUTO;
        opts.emit_ptx = cases[i].what == 1;
        opts.extra = cases[i].what == 2 ? extra : NULL;
        opts.ftz = cases[i].what == 3 ? 1 : -1;
        opts.kernels_used = cases[i].what == 4 ? kernels : NULL;
        fdl_link *link = (fdl_link *)&opts;
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_EINVAL, "case %zu", i);
        cr_assert_null(link);
        cr_assert_str_eq(err.message, cases[i].message, "case %zu", i);
    }
}

Test(link_options, culink_needs_a_driver_and_a_context)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.backend = FDL_BACKEND_CULINK;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_create(&link, &opts, &err);
    /* here: no driver (ENOLIB), or a driver and no current context (EINVAL); never a link */
    cr_assert(rc == FDL_ENOLIB || rc == FDL_EINVAL || rc == FDL_ENODEVICE, "%s: %s",
              fdl_status_name(rc), err.message);
    cr_assert_null(link);
    if (rc == FDL_EINVAL)
        cr_assert_str_eq(err.message, "the culink backend needs a current CUDA context (open a "
                                      "device first) or use nvjitlink");
    if (rc == FDL_ENOLIB)
        cr_assert(strstr(err.message, "libcuda.so.1"), "%s", err.message);
}

Test(link_options, culink_with_a_library_that_is_not_the_driver)
{
    cr_assert_eq(setenv("FDLINK_LIBCUDA", "libc.so.6", 1), 0);
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.backend = FDL_BACKEND_CULINK;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_ENOLIB);
    cr_assert(strstr(err.message, "the CUDA driver lacks cuCtxGetCurrent"), "%s", err.message);
    /* native asks the same driver */
    opts.backend = FDL_BACKEND_NVJITLINK;
    opts.arch = "native";
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_ENOLIB);
    opts.arch = NULL;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_ENOLIB);
}

Test(link_options, native_arch_without_a_context)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT; /* arch NULL: the current device's */
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_create(&link, &opts, &err);
    cr_assert(rc == FDL_ENOLIB || rc == FDL_ENODEVICE, "%s: %s", fdl_status_name(rc),
              err.message);
    if (rc == FDL_ENODEVICE && !strstr(err.message, "stub"))
        cr_assert_str_eq(err.message, "arch \"native\" needs a current CUDA context (open a "
                                      "device first) or give sm_NN");
    cr_assert_null(link);
}

Test(link_options, auto_backend_is_nvjitlink_here)
{
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_get_backend(link), FDL_BACKEND_NVJITLINK);
    cr_assert_str_eq(fdl_link_arch(link), "sm_90");
    cr_assert_str_eq(fdl_link_backend_name(FDL_BACKEND_CULINK), "culink");
    cr_assert_str_eq(fdl_link_backend_name(FDL_BACKEND_NVJITLINK), "nvjitlink");
    cr_assert_str_eq(fdl_link_backend_name(FDL_BACKEND_AUTO), "auto");
    fdl_link_destroy(link);
}

/* ------------------------------------------------------------------------------------------ */
/* Several declaration files                                                                   */
/* ------------------------------------------------------------------------------------------ */

Test(link_decls, every_set_is_checked)
{
    fdl_decls *mul = load_decls(), *adds = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_load(&adds, fx("add.decl"), &err), FDL_OK, "%s", err.message);
    /* both defined: one in a cubin, one in PTX */
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_decls(link, mul, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, adds, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, adds, &err), FDL_OK, "a set added twice counts once");
    add(link, "caller.ptx", 0);
    add(link, "mul.cubin", 0);
    add(link, "add.ptx", 0);
    ndiag = 0;
    fdl_link_set_diag(link, count_diag, NULL);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(ndiag, 0);
    fdl_link_destroy(link);
    /* the second set's function missing: found, and only once */
    link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_decls(link, mul, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, adds, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, adds, &err), FDL_OK);
    add(link, "caller.ptx", 0);
    add(link, "mul.cubin", 0);
    ndiag = 0;
    fdl_link_set_diag(link, count_diag, NULL);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_EABI);
    cr_assert_eq(ndiag, 1);
    cr_assert_str_eq(err.symbol, "add_i32");
    cr_assert_str_eq(err.source, fx("add.decl"));
    cr_assert_eq(err.line, 2);
    fdl_link_destroy(link);
    fdl_decls_destroy(adds);
    fdl_decls_destroy(mul);
}

/* ------------------------------------------------------------------------------------------ */
/* CUDA C that includes CUDA 13's headers (CCCL in include/cccl) compiles as nvcc compiles it   */
/* ------------------------------------------------------------------------------------------ */

/* tests/data/link/src/cuda13/<name>.cu compiled by NVRTC (LTO-IR, then PTX) and linked. */
static void cuda13(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cuda13/%s.cu", FDL_LINK_SOURCES, name);
    for (int lto = 0; lto < 2; lto++) {
        fdl_link *link = make_link(lto ? FDL_LTO_ON : FDL_LTO_OFF, 0);
        fdl_error err = FDL_ERROR_INIT;
        int rc = fdl_link_add_file(link, path, FDL_KIND_AUTO, &err);
        cr_assert_eq(rc, FDL_OK, "%s: %s %s\n%s", name, fdl_status_name(rc), err.message,
                     err.log ? err.log : "");
        rc = fdl_link_complete(link, &err);
        cr_assert_eq(rc, FDL_OK, "%s: %s %s", name, fdl_status_name(rc), err.message);
        check_cubin(link, name, MUL_ABSENT);
        fdl_link_destroy(link);
    }
}

Test(link_cuda13, cooperative_groups) { cuda13("cg_tile_sum"); }
Test(link_cuda13, cuda_barrier) { cuda13("barrier_rotate"); }
Test(link_cuda13, cuda_std_type_traits) { cuda13("traits_values"); }
Test(link_cuda13, cub_block_reduce) { cuda13("cub_block_sum"); }
Test(link_cuda13, curand_kernel) { cuda13("curand_draws"); }

/* ------------------------------------------------------------------------------------------ */
/* Diagnostics as data (fdl_link_diagnostic)                                                   */
/* ------------------------------------------------------------------------------------------ */

static const fdl_diagnostic *find_diag(const fdl_link *link, fdl_severity sev, const char *code)
{
    for (size_t i = 0; i < fdl_link_diagnostic_count(link); i++) {
        const fdl_diagnostic *d = fdl_link_diagnostic(link, i);
        if (d->severity == sev && strcmp(d->code, code) == 0)
            return d;
    }
    return NULL;
}

/* A warning and an error inside a header: both records name the header, line and column. */
Test(link_diag, nvrtc_records_name_the_header)
{
    char inc[512], src[512];
    snprintf(inc, sizeof inc, "%s/../../diag/inc", FDL_LINK_SOURCES);
    snprintf(src, sizeof src, "%s/../../diag/header_error.cu", FDL_LINK_SOURCES);
    const char *dirs[] = {inc, NULL};
    fdl_nvrtc_options cuda = FDL_NVRTC_OPTIONS_INIT;
    cuda.include_dirs = dirs;
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cuda = &cuda;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_file(link, src, FDL_KIND_AUTO, &err), FDL_EPARSE);
    /* the error names the header, not header_error.cu at the header's line */
    cr_assert(strstr(err.source, "diag/inc/helper.h") != NULL, "%s", err.source);
    cr_assert_eq(err.line, 6);
    cr_assert_eq(err.column, 16);
    const fdl_diagnostic *e = find_diag(link, FDL_SEVERITY_ERROR, "");
    const fdl_diagnostic *w = find_diag(link, FDL_SEVERITY_WARNING, "177-D");
    cr_assert(e && w, "%zu records", fdl_link_diagnostic_count(link));
    cr_assert(strstr(e->file, "diag/inc/helper.h") && e->line == 6 && e->column == 16, "%s:%u:%u",
              e->file, e->line, e->column);
    cr_assert_str_eq(e->message, "identifier \"undefined_name\" is undefined");
    cr_assert_str_eq(e->tool, "nvrtc");
    cr_assert(strstr(w->file, "diag/inc/helper.h") && w->line == 5 && w->column == 9);
    cr_assert_str_eq(w->message, "variable \"unused\" was declared but never referenced");
    cr_assert_null(fdl_link_diagnostic(link, fdl_link_diagnostic_count(link)));
    fdl_link_destroy(link);
}

/* An error in NVRTC's built-in header is said there, not at a line of a two-line input. */
Test(link_diag, error_in_the_builtin_header_names_it)
{
    static const char src[] = "extern \"C\" __device__ int f(int *r, int x)\n"
                              "{ *r = x; return 0; }\n";
    const char *defines[] = {"warpSize=", NULL};
    fdl_nvrtc_options cuda = FDL_NVRTC_OPTIONS_INIT;
    cuda.defines = defines;
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_cuda(link, src, sizeof src - 1, "two.cu", &cuda, &err),
                 FDL_EPARSE);
    cr_assert_str_eq(err.source, "__nv_nvrtc_builtin_header.h");
    cr_assert_gt(err.line, 2);
    fdl_link_destroy(link);
}

/* A warning of a successful compile reaches the program (it used to be dropped). */
Test(link_diag, warnings_of_a_good_compile_are_kept)
{
    char src[512];
    snprintf(src, sizeof src, "%s/../../diag/warn.cu", FDL_LINK_SOURCES);
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_file(link, src, FDL_KIND_AUTO, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    const fdl_diagnostic *w = find_diag(link, FDL_SEVERITY_WARNING, "177-D");
    cr_assert_not_null(w);
    cr_assert_eq(w->line, 5);
    cr_assert_str_eq(fdl_severity_name(w->severity), "warning");
    fdl_link_destroy(link);
}

/* The linker's error and fdlink's own check as records. */
Test(link_diag, linker_and_check_records)
{
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    add(link, "caller.ptx", 0);
    cr_assert_neq(fdl_link_complete(link, &err), FDL_OK);
    size_t n = fdl_link_diagnostic_count(link);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        const fdl_diagnostic *d = fdl_link_diagnostic(link, i);
        if (d->severity == FDL_SEVERITY_ERROR && strstr(d->message, "mul_f32_f32"))
            found = 1;
    }
    cr_assert(found, "no record names the undefined function (%zu records)", n);
    fdl_link_destroy(link);

    /* fdlink's declaration check: rule ABI-5 as the code */
    fdl_decls *decls = NULL;
    cr_assert_eq(fdl_decls_load(&decls, fx("mul.decl"), &err), FDL_OK, "%s", err.message);
    link = make_link(FDL_LTO_OFF, 0);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ptx", 0);
    cr_assert_eq(fdl_link_add_file(link, FDL_LINK_SOURCES "/../mul_wide.ptx", FDL_KIND_AUTO, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_EABI);
    const fdl_diagnostic *d = fdl_link_diagnostic(link, 0);
    cr_assert_not_null(d);
    cr_assert_str_eq(d->tool, "fdlink");
    cr_assert_str_eq(d->code, "ABI-5", "%s: %s", d->code, d->message);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

/* ------------------------------------------------------------------------------------------ */
/* nvJitLink's options of fdl_link_options version 4 (issue 25), each against the real linker  */
/* ------------------------------------------------------------------------------------------ */

/* caller.ltoir + mul.ltoir linked with @p opts (arch sm_90, no cache): the link, completed. */
static fdl_link *jl_options_link(fdl_link_options *opts)
{
    opts->arch = "sm_90";
    opts->cache = FDL_CACHE_OFF;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, opts, &err), FDL_OK, "%s", err.message);
    add(link, "caller.ltoir", 0);
    add(link, "mul.ltoir", 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    check_cubin(link, "multiply_vectors", MUL_ABSENT);
    return link;
}

static void expect_bad_option(fdl_link_options *opts, const char *message)
{
    opts->arch = "sm_90";
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, opts, &err), FDL_EINVAL, "%s", message);
    cr_assert_null(link);
    cr_assert_str_eq(err.message, message);
}

Test(link_jl_options, time_puts_timings_in_the_info_log)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.time = 1;
    fdl_link *link = jl_options_link(&opts);
    cr_assert(strstr(fdl_link_info_log(link), "nvJitLink time"), "%s", fdl_link_info_log(link));
    fdl_link_destroy(link);
    opts = (fdl_link_options)FDL_LINK_OPTIONS_INIT;
    link = jl_options_link(&opts);
    cr_assert_null(strstr(fdl_link_info_log(link), "nvJitLink time"));
    fdl_link_destroy(link);
}

Test(link_jl_options, time_is_never_cached)
{
    char dir[] = "/tmp/fdl_jltime_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    for (int round = 0; round < 2; round++) {
        fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
        opts.arch = "sm_90";
        opts.time = 1;
        opts.cache = FDL_CACHE_ON;
        opts.cache_dir = dir;
        fdl_link *link = NULL;
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
        add(link, "caller.ltoir", 0);
        add(link, "mul.ltoir", 0);
        cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
        /* the second identical link runs again: its times are its own */
        fdl_cache_result res = fdl_link_cache_result(link, NULL);
        cr_assert(res != FDL_CACHE_HIT_MEMORY && res != FDL_CACHE_HIT_DISK, "round %d", round);
        cr_assert(strstr(fdl_link_info_log(link), "nvJitLink time"));
        fdl_link_destroy(link);
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(link_jl_options, xptxas_reaches_ptxas)
{
    static const char *const xptxas[] = {"-v", NULL};
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.xptxas = xptxas;
    fdl_link *link = jl_options_link(&opts);
    /* ptxas -v says what each kernel uses */
    cr_assert(strstr(fdl_link_info_log(link), "registers"), "%s", fdl_link_info_log(link));
    fdl_link_destroy(link);
}

Test(link_jl_options, parallel_and_code_options_link)
{
    for (int c = 0; c < 6; c++) {
        fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
        opts.split_compile = c == 0 ? 0 : c == 1 ? 3 : -1;
        opts.split_compile_extended = c == 2 ? 2 : -1;
        opts.jump_table_density = c == 3 ? 50 : -1;
        opts.jl_cache = c == 4 ? 0 : -1;
        opts.device_stack_protector = c == 5;
        opts.optimize_unused_variables = c == 5;
        fdl_link_destroy(jl_options_link(&opts));
    }
}

/* A kernel beside a device variable no device code reads: LTO keeps the variable (host code may
 * read it) unless told that no host code does. */
Test(link_jl_options, optimize_unused_variables_drops_the_variable)
{
    static const char src[] = "__device__ int fdl_unused_counter = 7;\n"
                              "extern \"C\" __global__ void only_kernel(int *p) { *p = 1; }\n";
    static const fdl_nvrtc_options cuda = {FDL_NVRTC_OPTIONS_VERSION, NULL, NULL, NULL,
                                           FDL_CUDA_OUTPUT_LTOIR, 0, NULL};
    for (int drop = 0; drop < 2; drop++) {
        fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
        opts.arch = "sm_90";
        opts.cache = FDL_CACHE_OFF;
        opts.optimize_unused_variables = drop;
        fdl_link *link = NULL;
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
        int rc = fdl_link_add_cuda(link, src, sizeof src - 1, "unused.cu", &cuda, &err);
        if (rc == FDL_ENOLIB) {
            fdl_link_destroy(link);
            cr_skip_test("NVRTC is not installed: %s", err.message);
        }
        cr_assert_eq(rc, FDL_OK, "%s", err.message);
        cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
        size_t size = 0;
        const void *cubin = fdl_link_cubin(link, &size);
        fdl_inspection *ins = NULL;
        cr_assert_eq(fdl_inspect_data(&ins, cubin, size, "out.cubin", FDL_KIND_AUTO, &err), FDL_OK);
        const fdl_symbol *v = find_symbol(fdl_inspection_image(ins, 0), "fdl_unused_counter");
        if (drop)
            cr_assert_null(v, "the unused variable is still there");
        else
            cr_assert(v && v->kind == FDL_SYMBOL_VARIABLE, "the variable was dropped");
        fdl_inspection_destroy(ins);
        fdl_link_destroy(link);
    }
}

Test(link_jl_options, bad_values_are_one_line)
{
    static const char *const no_dash[] = {"warn-spills", NULL};
    static const char *const spaced[] = {"-O3 -v", NULL};
    static const char *const extra[] = {"-split-compile=4", NULL};
    fdl_link_options o = FDL_LINK_OPTIONS_INIT;
    o.split_compile = -2;
    expect_bad_option(&o, "invalid split_compile -2 (expected a thread count 1..4096, 0 for "
                          "every processor, or -1 for fdlink's choice)");
    o = (fdl_link_options)FDL_LINK_OPTIONS_INIT;
    o.split_compile_extended = 5000;
    expect_bad_option(&o, "invalid split_compile_extended 5000 (expected a thread count "
                          "1..4096, 0 for every processor, or -1 for off)");
    o = (fdl_link_options)FDL_LINK_OPTIONS_INIT;
    o.jump_table_density = 102;
    expect_bad_option(&o, "invalid jump_table_density 102 (expected a percentage 0..101, or -1 "
                          "for the default)");
    o = (fdl_link_options)FDL_LINK_OPTIONS_INIT;
    o.time = 2;
    expect_bad_option(&o, "invalid time 2 (expected 0 or 1)");
    o = (fdl_link_options)FDL_LINK_OPTIONS_INIT;
    o.jl_cache = 3;
    expect_bad_option(&o, "invalid jl_cache 3 (expected 0, 1, or -1 for the default)");
    o = (fdl_link_options)FDL_LINK_OPTIONS_INIT;
    o.xptxas = no_dash;
    expect_bad_option(&o, "invalid xptxas option 'warn-spills' (expected one ptxas option, e.g. "
                          "-warn-spills or --def-load-cache=cg)");
    o.xptxas = spaced;
    expect_bad_option(&o, "invalid xptxas option '-O3 -v' (expected one ptxas option, e.g. "
                          "-warn-spills or --def-load-cache=cg)");
    o = (fdl_link_options)FDL_LINK_OPTIONS_INIT;
    o.extra = extra;
    expect_bad_option(&o, "extra option '-split-compile=4': set the split_compile field instead");
    o = (fdl_link_options)FDL_LINK_OPTIONS_INIT;
    o.backend = FDL_BACKEND_CULINK;
    o.split_compile = 4;
    expect_bad_option(&o, "time, xptxas, optimize-unused-variables, split-compile, "
                          "split-compile-extended, jump-table-density, no-cache and "
                          "device-stack-protector are nvJitLink options; not with culink");
}

/* A version-3 struct (one that ends at cache_dir) still links, with the new fields' defaults. */
Test(link_jl_options, version_3_is_accepted)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.version = 3;
    opts.time = 99; /* past the end of a version-3 struct: not read */
    opts.arch = "sm_90";
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    fdl_link_destroy(link);
}

/* A version-4 struct (one that ends at cache_remote) still links; cache_lease_ms past its end is
   not read (a bad value there would be refused by a version-5 struct). */
Test(link_jl_options, version_4_is_accepted_and_cache_lease_ms_validated)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    cr_assert_geq(opts.version, 5); /* 6 since issue 40 (require_warm) */
    cr_assert_eq(opts.cache_lease_ms, -1);
    opts.arch = "sm_90";
    opts.cache_lease_ms = -7;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_EINVAL);
    cr_assert(strstr(err.message, "invalid cache_lease_ms -7"), "%s", err.message);
    opts.version = 4;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    fdl_link_destroy(link);
}

/* ------------------------------------------------------------------------------------------ */
/* The isolated link (fdl_link_options.isolate, link/src/isolate.c)                            */
/* ------------------------------------------------------------------------------------------ */

static fdl_link *make_isolated(int isolate)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = FDL_CACHE_OFF; /* every link here must really run the linker */
    opts.isolate = isolate;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    return link;
}

/* The same link in the process and in a child: the same cubin, byte for byte. */
Test(link_isolated, same_cubin_as_in_process)
{
    size_t n[2];
    unsigned char *cubin[2];
    for (int isolate = 0; isolate < 2; isolate++) {
        fdl_link *link = make_isolated(isolate);
        add(link, "caller.ptx", 0);
        add(link, "mul.cubin", 0);
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
        const void *p = fdl_link_cubin(link, &n[isolate]);
        cubin[isolate] = malloc(n[isolate]);
        memcpy(cubin[isolate], p, n[isolate]);
        if (isolate)
            check_cubin(link, "multiply_vectors", MUL_DEFINED);
        fdl_link_destroy(link);
    }
    cr_assert_eq(n[0], n[1]);
    cr_assert(memcmp(cubin[0], cubin[1], n[0]) == 0, "the isolated link's cubin differs");
    free(cubin[0]);
    free(cubin[1]);
}

/*
 * A cubin nvJitLink dies on (its section table at byte 0), LZ4-compressed in a fatbin where
 * fdlink has no liblz4 to decompress it and validate it first: the real nvJitLink gets it and
 * dies of SIGSEGV (tests/fuzz/jloracle.c shows it). Isolated, that is an FDL_ELINK error.
 */
static unsigned char *crashing_fatbin(size_t *size)
{
    size_t n;
    unsigned char *cubin = (unsigned char *)slurp(fx("mul.cubin"), &n);
    memset(cubin + 40, 0, 8); /* e_shoff = 0 */
    size_t c = 0, cap = n + n / 255 + 16, pad;
    unsigned char *block = malloc(cap);
    block[c++] = 0xf0; /* one LZ4 sequence: literals only, their length 15 + the bytes below */
    size_t rest = n - 15;
    for (; rest >= 255; rest -= 255)
        block[c++] = 255;
    block[c++] = (unsigned char)rest;
    memcpy(block + c, cubin, n);
    c += n;
    pad = (c + 7) / 8 * 8;
    unsigned char *f = calloc(1, 16 + 64 + pad);
    static const unsigned char head[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0};
    memcpy(f, head, 16);
    uint64_t body = 64 + pad;
    memcpy(f + 8, &body, 8); /* little-endian hosts only, as every CUDA host is */
    unsigned char *h = f + 16;
    uint32_t u32;
    uint64_t u64;
    h[0] = 2; /* a cubin */
    h[2] = 1;
    h[3] = 1;
    h[4] = 64;
    u64 = pad;
    memcpy(h + 8, &u64, 8);
    u32 = (uint32_t)c;
    memcpy(h + 16, &u32, 4);
    h[24] = 8;
    h[26] = 1;
    h[28] = 90;
    u64 = 0x2011; /* 64-bit, linux, LZ4 */
    memcpy(h + 40, &u64, 8);
    u64 = n;
    memcpy(h + 56, &u64, 8);
    memcpy(h + 64, block, c);
    free(block);
    free(cubin);
    *size = 16 + 64 + pad;
    return f;
}

Test(link_isolated, a_linker_that_dies_is_an_error)
{
    setenv("FDLINK_LIBLZ4", "/nonexistent/liblz4.so.1", 1);
    size_t size;
    unsigned char *fat = crashing_fatbin(&size);
    fdl_link *link = make_isolated(1);
    add(link, "caller.ptx", 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_data(link, fat, size, "crash.fatbin", FDL_KIND_AUTO, &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK, "%s", err.message);
    cr_assert(strncmp(err.message, "nvJitLink died of signal ", 25) == 0, "%s", err.message);
    cr_assert(strstr(err.message, "linking ") && strstr(err.message, "caller.ptx, crash.fatbin"),
              "%s", err.message);
    cr_assert_null(strchr(err.message, '\n'));
    const char *log = fdl_link_error_log(link);
    cr_assert(log && strstr(log, "in the isolated link"), "%s", log ? log : "(no log)");
    cr_assert_null(fdl_link_cubin(link, &size));
    fdl_link_destroy(link);
    free(fat);
}

/* A link that fails in the child: its log comes back whole, and nothing reaches stderr. */
Test(link_isolated, the_linkers_own_output_goes_to_the_log, .init = cr_redirect_stderr)
{
    fdl_link *link = make_isolated(1);
    add(link, "caller.ptx", 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK, "%s", err.message);
    cr_assert(strstr(err.message, "mul_f32_f32"), "%s", err.message);
    const char *log = fdl_link_error_log(link);
    cr_assert(log && strstr(log, "Undefined reference"),
              "%s", log ? log : "(no log)");
    fflush(stderr);
    cr_assert_stderr_eq_str("");
    fdl_link_destroy(link);
}

/* FDLINK_LINK_ISOLATE decides when the option is -1; an option out of range is refused. */
Test(link_isolated, environment_and_validation)
{
    setenv("FDLINK_LINK_ISOLATE", "1", 1);
    setenv("FDLINK_LIBLZ4", "/nonexistent/liblz4.so.1", 1);
    size_t size;
    unsigned char *fat = crashing_fatbin(&size);
    fdl_link *link = make_isolated(-1);
    add(link, "caller.ptx", 0);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_add_data(link, fat, size, "crash.fatbin", FDL_KIND_AUTO, &err), FDL_OK);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_ELINK, "%s", err.message);
    cr_assert(strstr(err.message, "died of signal"), "%s", err.message);
    fdl_link_destroy(link);
    free(fat);
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.isolate = 2;
    link = NULL;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "invalid isolate 2 (expected 0, 1, or -1 for "
                                  "FDLINK_LINK_ISOLATE)");
}

/* ------------------------------------------------------------------------------------------ */
/* Checks without a link (fdl_link_check), inputs' bytes, CUDA C compiled alone                */
/* ------------------------------------------------------------------------------------------ */

Test(link_check, ltoir_is_checked_after_lto_without_a_cubin)
{
    fdl_decls *decls = load_decls();
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    ndiag = 0;
    cr_assert_eq(fdl_link_set_diag(link, count_diag, NULL), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ptx", 0);
    /* the caller alone: mul_f32_f32 is declared but defined nowhere, unless that is allowed */
    cr_assert_eq(fdl_link_check(link, 0, &err), FDL_EABI, "%s", err.message);
    cr_assert(strstr(err.message, "mul_f32_f32"), "%s", err.message);
    cr_assert(strstr(err.message, "ABI-6"), "%s", err.message);
    size_t before = ndiag;
    cr_assert_geq(before, 1);
    cr_assert_eq(fdl_link_check(link, FDL_LINK_CHECK_ALLOW_UNDEFINED, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(ndiag, before);
    /* a definition of the wrong width in LTO-IR, found in the post-LTO view, as complete does */
    add(link, "mul_wide.ltoir", 0);
    cr_assert_eq(fdl_link_check(link, FDL_LINK_CHECK_ALLOW_UNDEFINED, &err), FDL_EABI);
    char source[600], message[600];
    snprintf(source, sizeof source, "%s[post-LTO ptx]", fx("mul_wide.ltoir"));
    snprintf(message, sizeof message,
             "mul_f32_f32: parameter 2 (float32) is .b64 but needs .b32 (ABI-5; declared at "
             "%s:2:1)",
             fx("mul.decl"));
    cr_assert_str_eq(err.source, source);
    cr_assert_str_eq(err.message, message);
    cr_assert_null(fdl_link_cubin(link, NULL));
    cr_assert_eq(fdl_link_check(link, 3, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "fdl_link_check: unknown flags 0x2");
    /* the link stays open: complete finds the same */
    cr_assert_eq(fdl_link_complete(link, &err), FDL_EABI);
    cr_assert_str_eq(err.message, message);
    cr_assert_eq(fdl_link_check(link, 0, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "the link is already complete");
    fdl_link_destroy(link);

    link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_check(link, 0, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "nothing to check: no inputs were added");
#ifdef NDEBUG /* a NULL handle asserts in debug builds */
    cr_assert_eq(fdl_link_check(NULL, 0, &err), FDL_EINVAL);
#endif
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(link_check, a_passing_check_stands_until_an_input_is_added)
{
    fdl_decls *decls = load_decls();
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    ndiag = 0;
    cr_assert_eq(fdl_link_set_diag(link, count_diag, NULL), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ptx", 0);
    add(link, "mul.ltoir", 0);
    cr_assert_eq(fdl_link_check(link, 0, &err), FDL_OK, "%s", err.message);
    cr_assert_null(fdl_link_cubin(link, NULL));
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(ndiag, 0);
    check_cubin(link, "multiply_vectors", MUL_EITHER);
    fdl_link_destroy(link);

    /* a check that passed, then an input that disagrees: complete checks again and refuses */
    link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ltoir", 0);
    cr_assert_eq(fdl_link_check(link, FDL_LINK_CHECK_ALLOW_UNDEFINED, &err), FDL_OK, "%s",
                 err.message);
    add(link, "mul_wide.ltoir", 0);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_EABI, "%s", err.message);
    cr_assert(strstr(err.message, "ABI-5"), "%s", err.message);
    fdl_link_destroy(link);

    link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ptx", 0);
    add(link, "mul.ptx", 0);
    cr_assert_eq(fdl_link_check(link, 0, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_file(link, FDL_LINK_SOURCES "/../mul_wide.ptx", FDL_KIND_AUTO,
                                   &err),
                 FDL_OK, "%s", err.message);
    cr_assert_neq(fdl_link_complete(link, &err), FDL_OK);
    cr_assert_null(fdl_link_cubin(link, NULL));
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(link_check, the_bytes_of_each_input_as_the_backend_gets_them)
{
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    fdl_error err = FDL_ERROR_INIT;
    size_t size;
    char *src = slurp(FDL_LINK_SOURCES "/mul.cu", &size);
    cr_assert_eq(fdl_link_add_cuda(link, src, size, "mul.cu", NULL, &err), FDL_OK, "%s",
                 err.message);
    add(link, "caller.ptx", 0);
    fdl_input_kind kind = FDL_KIND_CUDA;
    size_t n = 0;
    const unsigned char *ir = fdl_link_input_data(link, 0, &n, &kind);
    cr_assert_not_null(ir);
    cr_assert_eq(kind, FDL_KIND_LTOIR, "%s", fdl_input_kind_name(kind));
    cr_assert_gt(n, 4);
    static const unsigned char magic[4] = {0xED, 0x43, 0x4E, 0x7F};
    cr_assert_eq(memcmp(ir, magic, 4), 0, "NVVM container magic");
    fdl_input_kind listed;
    fdl_link_input(link, 0, &listed);
    cr_assert_eq(listed, FDL_KIND_CUDA);
    size_t ptx_size = 0;
    char *ptx = slurp(fx("caller.ptx"), &ptx_size);
    const char *given = fdl_link_input_data(link, 1, &n, &kind);
    cr_assert_eq(kind, FDL_KIND_PTX);
    cr_assert_eq(n, ptx_size);
    cr_assert_eq(memcmp(given, ptx, n), 0);
    cr_assert_eq(given[n], '\0');
    free(ptx);
    cr_assert_null(fdl_link_input_data(link, 2, &n, &kind));
    cr_assert_eq(n, 0);
    cr_assert_eq(kind, FDL_KIND_AUTO);
    cr_assert_null(fdl_link_input_data(NULL, 0, NULL, NULL));
    free(src);
    fdl_link_destroy(link);
}

Test(link_cuda_compile, ltoir_and_ptx_checked_and_linkable_later)
{
    fdl_decls *decls = load_decls();
    size_t size;
    char *src = slurp(FDL_LINK_SOURCES "/mul.cu", &size);
    fdl_error err = FDL_ERROR_INIT;
    void *out = NULL;
    size_t n = 0;
    char *log = (char *)&log;
    fdl_input_kind kind = FDL_KIND_AUTO;
    cr_assert_eq(fdl_cuda_compile(&out, &n, &kind, &log, src, size, "mul.cu", "sm_90", decls,
                                  NULL, NULL, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(kind, FDL_KIND_LTOIR);
    cr_assert_null(log, "a clean compile has no log: %s", log);
    static const unsigned char magic[4] = {0xED, 0x43, 0x4E, 0x7F};
    cr_assert_eq(memcmp(out, magic, 4), 0);
    /* the bytes link with a caller, as any LTO-IR */
    fdl_link *link = make_link(FDL_LTO_AUTO, 0);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    add(link, "caller.ptx", 0);
    cr_assert_eq(fdl_link_add_data(link, out, n, "mul.ltoir", FDL_KIND_AUTO, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    check_cubin(link, "multiply_vectors", MUL_EITHER);
    fdl_link_destroy(link);
    free(out);

    /* PTX on request, at an arch of the options */
    fdl_nvrtc_options no = FDL_NVRTC_OPTIONS_INIT;
    no.output = FDL_CUDA_OUTPUT_PTX;
    fdl_link_options lo = FDL_LINK_OPTIONS_INIT;
    lo.arch = "sm_75";
    cr_assert_eq(fdl_cuda_compile(&out, &n, &kind, NULL, src, size, "mul.cu", NULL, decls, &lo,
                                  &no, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(kind, FDL_KIND_PTX);
    cr_assert_eq(((char *)out)[n], '\0');
    cr_assert(strstr(out, ".target sm_75"), "%s", (char *)out);
    cr_assert(strstr(out, ".visible .func"), "%s", (char *)out);
    cr_assert(strstr(out, "mul_f32_f32"), "%s", (char *)out);
    free(out);
    free(src);
    fdl_decls_destroy(decls);
}

Test(link_cuda_compile, disagreements_are_refused_with_the_log)
{
    fdl_decls *decls = load_decls();
    fdl_error err = FDL_ERROR_INIT;
    void *out = (void *)&out;
    size_t n = 7;
    char *log = NULL;
    size_t size;
    /* ABI-10: the declarations' header makes the stale prototype a compile error */
    char *src = slurp(fx("mul_stale.cu"), &size);
    cr_assert_eq(fdl_cuda_compile(&out, &n, NULL, &log, src, size, "mul_stale.cu", "sm_90",
                                  decls, NULL, NULL, &err),
                 FDL_EABI);
    cr_assert_null(out);
    cr_assert_eq(n, 0);
    cr_assert_str_eq(err.source, "mul_stale.cu");
    cr_assert(strstr(err.message, "defined as (float *, float, int), declared float32(float32, "
                                  "float32) (ABI-5; declared at "), "%s", err.message);
    cr_assert_null(err.log);
    cr_assert_not_null(log);
    cr_assert(strstr(log, "mul_stale.cu("), "%s", log);
    free(log);
    free(src);
    /*
     * What the header cannot catch, the check of the output does: a C++ overload (legal beside
     * the declared extern "C" prototype) where the extern "C" definition was meant (ABI-7).
     */
    static const char overload[] =
        "__device__ int mul_f32_f32(float *r, float a, double b)\n{\n    *r = a * b;\n"
        "    return 0;\n}\n";
    fdl_nvrtc_options no = FDL_NVRTC_OPTIONS_INIT;
    no.output = FDL_CUDA_OUTPUT_PTX;
    fdl_error fresh = FDL_ERROR_INIT;
    err = fresh;
    int rc = fdl_cuda_compile(&out, &n, NULL, NULL, overload, strlen(overload), "overload.cu",
                              "sm_90", decls, NULL, &no, &err);
    cr_assert_eq(rc, FDL_EABI, "%s %s", fdl_status_name(rc), err.message);
    cr_assert_null(out);
    char message[600];
    snprintf(message, sizeof message,
             "mul_f32_f32: defined only with a C++ mangled name _Z11mul_f32_f32Pffd; declare it "
             "extern \"C\" (ABI-7; declared at %s:2:1)",
             fx("mul.decl"));
    cr_assert_str_eq(err.message, message);
    /* without declarations nothing is checked */
    cr_assert_eq(fdl_cuda_compile(&out, &n, NULL, NULL, overload, strlen(overload),
                                  "overload.cu", "sm_90", NULL, NULL, &no, &err),
                 FDL_OK, "%s", err.message);
    free(out);
#ifdef NDEBUG /* a NULL output asserts in debug builds */
    cr_assert_eq(fdl_cuda_compile(NULL, &n, NULL, NULL, overload, strlen(overload),
                                  "overload.cu", "sm_90", decls, NULL, NULL, &err),
                 FDL_EINVAL);
#endif
    cr_assert_eq(fdl_cuda_compile(&out, &n, NULL, NULL, "a\0b", 3, "nul.cu", "sm_90", NULL, NULL,
                                  NULL, &err),
                 FDL_EKIND);
    fdl_decls_destroy(decls);
}

static void count_kinds(void *ctx, const fdl_cache_entry *entry)
{
    size_t *n = ctx;
    n[0] += strcmp(entry->kind, "nvrtc") == 0;
    n[1] += strcmp(entry->kind, "check") == 0;
}

Test(link_cuda_compile, the_compile_and_the_check_go_through_the_cache)
{
    char dir[] = "/tmp/fdlink-test-compile-cache-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    fdl_decls *decls = load_decls();
    size_t size;
    char *src = slurp(FDL_LINK_SOURCES "/mul.cu", &size);
    fdl_link_options lo = FDL_LINK_OPTIONS_INIT;
    lo.cache = FDL_CACHE_ON;
    lo.cache_dir = dir;
    fdl_error err = FDL_ERROR_INIT;
    void *first = NULL, *again = NULL;
    size_t n1 = 0, n2 = 0;
    cr_assert_eq(fdl_cuda_compile(&first, &n1, NULL, NULL, src, size, "mul.cu", "sm_90", decls,
                                  &lo, NULL, &err),
                 FDL_OK, "%s", err.message);
    size_t kinds[2] = {0, 0};
    cr_assert_eq(fdl_cache_list(dir, count_kinds, kinds, &err), FDL_OK, "%s", err.message);
    /* NVRTC's output (and the check's keeper of declared functions), the post-LTO view */
    cr_assert_geq(kinds[0], 1, "NVRTC's output stored: %zu", kinds[0]);
    cr_assert_geq(kinds[1], 1, "the LTO-IR check's post-LTO view stored: %zu", kinds[1]);
    size_t stored = kinds[0] + kinds[1];
    cr_assert_eq(fdl_cuda_compile(&again, &n2, NULL, NULL, src, size, "mul.cu", "sm_90", decls,
                                  &lo, NULL, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(n1, n2);
    cr_assert_eq(memcmp(first, again, n1), 0);
    kinds[0] = kinds[1] = 0;
    cr_assert_eq(fdl_cache_list(dir, count_kinds, kinds, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(kinds[0] + kinds[1], stored, "nothing new stored");
    size_t removed = 0;
    cr_assert_eq(fdl_cache_clear(dir, &removed, &err), FDL_OK, "%s", err.message);
    rmdir(dir);
    free(first);
    free(again);
    free(src);
    fdl_decls_destroy(decls);
}

/* fdl_image_kernel_params: a kernel's parameters from a cubin's .nv.info, no GPU (issue 33: the
 * CLI's run checks its arguments through it, not through host/src's image.h). */
Test(image_params, a_cubins_kernel_has_its_count_and_sizes)
{
    size_t size = 0, count = 0, sizes[4] = {9, 9, 9, 9};
    char *cubin = slurp(fx("kernel_named.cubin"), &size);
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_image_kernel_params(cubin, size, "mul_f32_f32", &count, sizes, 4, &err);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    cr_assert_eq(count, 3); /* (float *out, float a, float b) */
    cr_assert_eq(sizes[0], 8);
    cr_assert_eq(sizes[1], 4);
    cr_assert_eq(sizes[2], 4);
    cr_assert_eq(sizes[3], 9, "only min(count, max) sizes are written");
    count = 7;
    rc = fdl_image_kernel_params(cubin, size, "mul_f32_f32", &count, sizes, 1, NULL);
    cr_assert_eq(rc, FDL_OK);
    cr_assert_eq(count, 3, "the count whatever the room for sizes");
    rc = fdl_image_kernel_params(cubin, size, "no_such_kernel", &count, NULL, 0, &err);
    cr_assert_eq(rc, FDL_ENOTFOUND);
    cr_assert(strstr(err.message, "no_such_kernel"), "%s", err.message);
    free(cubin);
}
