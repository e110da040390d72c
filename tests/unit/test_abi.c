/*
 * Tests of the conformance check (fdlink/abi.h) against the rules of abi/ABI.md. The fixtures in
 * tests/data/check are real nvcc output (see its README.md); each failure fixture is the conforming
 * library with one function broken, so each must yield exactly the diagnostics listed here.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "internal.h"

#define CHECK_DIR FDL_TEST_DATA "/check"
#define DECL CHECK_DIR "/functions.decl"
#define MAX_DIAGS 32

/* Diagnostics collected through on_diag. */
typedef struct diags {
    size_t n;
    fdl_error e[MAX_DIAGS];
    char text[MAX_DIAGS][1024]; /* fdl_error_format of each */
} diags;

static void collect(void *ctx, const fdl_error *d)
{
    diags *ds = ctx;
    cr_assert_lt(ds->n, MAX_DIAGS);
    ds->e[ds->n] = *d;
    fdl_error_format(d, ds->text[ds->n], sizeof ds->text[ds->n]);
    ds->n++;
}

typedef struct result {
    int rc;
    size_t ndiags;
    fdl_error err;
    diags d;
} result;

static fdl_decls *load_decls(const char *path)
{
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_load(&decls, path, &err), FDL_OK, "%s", err.message);
    return decls;
}

static fdl_decls *parse_decls(const char *text)
{
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_parse(&decls, text, strlen(text), "t.decl", &err), FDL_OK, "%s",
                 err.message);
    return decls;
}

/* Check @p decls against the fixture files named in @p files (NULL-terminated, no directory). */
static void check_files(result *r, const fdl_decls *decls, const char *const *files,
                        const fdl_check_options *base)
{
    fdl_ptx *ptx[8] = {NULL};
    size_t n = 0;
    for (; files[n]; n++) {
        char path[512];
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_lt(n, 8);
        snprintf(path, sizeof path, "%s/%s", CHECK_DIR, files[n]);
        cr_assert_eq(fdl_ptx_scan_file(&ptx[n], path, &err), FDL_OK, "%s: %s", path,
                     err.message);
    }
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    if (base)
        opts = *base;
    opts.on_diag = collect;
    opts.ctx = &r->d;
    memset(r, 0, sizeof *r);
    r->ndiags = 12345;
    r->rc = fdl_abi_check(&r->ndiags, decls, (const fdl_ptx *const *)ptx, n, &opts, &r->err);
    for (size_t i = 0; i < n; i++)
        fdl_ptx_destroy(ptx[i]);
}

/* Check in-memory PTX texts (each named m<i>.ptx). */
static void check_texts(result *r, const fdl_decls *decls, const char *const *texts,
                        const fdl_check_options *base)
{
    fdl_ptx *ptx[8] = {NULL};
    size_t n = 0;
    for (; texts[n]; n++) {
        char name[16];
        fdl_error err = FDL_ERROR_INIT;
        cr_assert_lt(n, 8);
        snprintf(name, sizeof name, "m%zu.ptx", n);
        cr_assert_eq(fdl_ptx_scan(&ptx[n], texts[n], strlen(texts[n]), name, &err), FDL_OK,
                     "%s: %s", name, err.message);
    }
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    if (base)
        opts = *base;
    opts.on_diag = collect;
    opts.ctx = &r->d;
    memset(r, 0, sizeof *r);
    r->ndiags = 12345;
    r->rc = fdl_abi_check(&r->ndiags, decls, (const fdl_ptx *const *)ptx, n, &opts, &r->err);
    for (size_t i = 0; i < n; i++)
        fdl_ptx_destroy(ptx[i]);
}

static void expect_ok(const result *r)
{
    cr_assert_eq(r->rc, FDL_OK, "%s", r->d.n ? r->d.text[0] : "");
    cr_assert_eq(r->ndiags, 0);
    cr_assert_eq(r->d.n, 0);
    cr_assert_eq(r->err.code, FDL_OK, "err must be untouched on success");
}

/*
 * The record's details say what its message says: the rule it cites and, for a declared function,
 * the declaration's place, as fields (error.h's FDL_ERROR_HAS_*); nothing of a device status.
 */
static void expect_fields(const fdl_error *e)
{
    cr_assert(e->fields & FDL_ERROR_HAS_RULE, "no rule: %s", e->message);
    cr_assert_eq(e->fields & ~(FDL_ERROR_HAS_RULE | FDL_ERROR_HAS_DECL), 0u, "%s", e->message);
    char cited[64];
    snprintf(cited, sizeof cited, "(ABI-%d%s", e->rule,
             e->fields & FDL_ERROR_HAS_DECL ? "; declared at " : ")");
    cr_assert_not_null(strstr(e->message, cited), "rule %d: %s", e->rule, e->message);
    if (e->fields & FDL_ERROR_HAS_DECL) {
        char where[FDL_ERROR_SOURCE_MAX + 32];
        snprintf(where, sizeof where, "declared at %s:%u:%u)", e->decl_source, e->decl_line,
                 e->decl_column);
        cr_assert_not_null(strstr(e->message, where), "%s: %s", where, e->message);
        cr_assert_str_eq(e->decl_source + strlen(e->decl_source) - 5, ".decl");
        cr_assert_gt(e->decl_line, 0);
        cr_assert_gt(e->decl_column, 0);
    } else {
        cr_assert_str_empty(e->decl_source);
        cr_assert_eq(e->decl_line + e->decl_column, 0);
    }
}

/*
 * Expect exactly the @p n diagnostics @p want, each as fdl_error_format prints it with the fixture
 * directory left out ("wrong_width.ptx:177:2: mul_f32_f32: ...").
 */
static void expect_diags(const result *r, size_t n, const char *const *want)
{
    cr_assert_eq(r->rc, FDL_EABI);
    cr_assert_eq(r->ndiags, r->d.n);
    for (size_t i = 0; i < r->d.n && i < n; i++) {
        const char *got = r->d.text[i];
        /* drop every "<fixture dir>/" so the expectations stay short */
        char clean[1024];
        size_t o = 0, dl = strlen(CHECK_DIR "/");
        for (size_t k = 0; got[k] && o + 1 < sizeof clean;) {
            if (strncmp(got + k, CHECK_DIR "/", dl) == 0) {
                k += dl;
                continue;
            }
            clean[o++] = got[k++];
        }
        clean[o] = '\0';
        cr_assert_str_eq(clean, want[i], "diagnostic %zu", i);
        cr_assert_eq(r->d.e[i].code, FDL_EABI);
        cr_assert_eq(strlen(r->d.e[i].message) < FDL_ERROR_MESSAGE_MAX, 1);
        expect_fields(&r->d.e[i]);
    }
    cr_assert_eq(r->d.n, n, "%zu diagnostics, expected %zu; first: %s", r->d.n, n,
                 r->d.n ? r->d.text[0] : "");
    /* err gets the first */
    cr_assert_eq(r->err.code, FDL_EABI);
    cr_assert_str_eq(r->err.message, r->d.e[0].message);
    cr_assert_str_eq(r->err.source, r->d.e[0].source);
    cr_assert_eq(r->err.line, r->d.e[0].line);
    cr_assert_eq(r->err.column, r->d.e[0].column);
}

#define FILES(...) ((const char *const[]){__VA_ARGS__, NULL})
#define WANT(...) ((const char *const[]){__VA_ARGS__})
#define NWANT(...) (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))
#define EXPECT(r, ...) expect_diags((r), NWANT(__VA_ARGS__), WANT(__VA_ARGS__))

/* ---- nvcc fixtures ------------------------------------------------------------------------ */

Test(abi_check, conforming_library_passes)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("conforming.ptx"), NULL);
    expect_ok(&r);
    check_files(&r, decls, FILES("conforming.ptx", "caller.ptx"), NULL); /* ABI-8 conforming */
    expect_ok(&r);
    check_files(&r, decls, FILES("caller.ptx", "conforming.ptx"), NULL);
    expect_ok(&r);
    fdl_decls_destroy(decls);
}

Test(abi_check, abi5_wrong_parameter_width)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("wrong_width.ptx"), NULL);
    EXPECT(&r, "wrong_width.ptx:177:2: mul_f32_f32: parameter 1 (float32) is .b64 but needs .b32 "
               "(ABI-5; declared at functions.decl:2:1)");
    const fdl_error *e = &r.d.e[0];
    cr_assert_str_eq(e->source, CHECK_DIR "/wrong_width.ptx");
    cr_assert_eq(e->line, 177);
    cr_assert_eq(e->column, 2);
    cr_assert_str_eq(e->symbol, "mul_f32_f32");
    cr_assert_str_eq(e->message, "mul_f32_f32: parameter 1 (float32) is .b64 but needs .b32 "
                                 "(ABI-5; declared at " CHECK_DIR "/functions.decl:2:1)");
    /* the rule and the declaration's place as fields, in the diagnostic and in err */
    const fdl_error *both[] = {e, &r.err};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(both[i]->fields, FDL_ERROR_HAS_RULE | FDL_ERROR_HAS_DECL);
        cr_assert_eq(both[i]->rule, 5);
        cr_assert_str_eq(both[i]->decl_source, DECL);
        cr_assert_eq(both[i]->decl_line, 2);
        cr_assert_eq(both[i]->decl_column, 1);
        cr_assert_str_empty(both[i]->library);
    }
    fdl_decls_destroy(decls);
}

Test(abi_check, abi3_missing_return_pointer)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("missing_retptr.ptx"), NULL);
    EXPECT(&r, "missing_retptr.ptx:175:44: mul_f32_f32: missing return pointer: parameter 0 must "
               "be the 64-bit pointer to the float32 return slot (ABI-3; declared at "
               "functions.decl:2:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi2_c_void_function_declared_numba)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("c_void.ptx"), NULL);
    EXPECT(&r, "c_void.ptx:175:16: mul_f32_f32: returns nothing, but the numba ABI needs an int "
               "status return (a C void function? declare it abi=c) (ABI-2; declared at "
               "functions.decl:2:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi5_wrong_parameter_count)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("wrong_count.ptx"), NULL);
    EXPECT(&r, "wrong_count.ptx:127:44: sum_reduce: has 2 parameters but "
               "float32(CPointer(float32), int32) needs 3 (return pointer + 2) (ABI-5; declared "
               "at functions.decl:3:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi6_declared_but_not_defined)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("missing.ptx"), NULL);
    EXPECT(&r, "functions.decl:3:1: sum_reduce: declared but not defined in any input (ABI-6; "
               "declared at functions.decl:3:1)");
    cr_assert_str_eq(r.d.e[0].source, DECL);
    cr_assert_eq(r.d.e[0].line, 3);
    cr_assert_eq(r.d.e[0].column, 1);
    check_files(&r, decls, FILES("missing.ptx", "caller.ptx"), NULL);
    EXPECT(&r, "functions.decl:3:1: sum_reduce: declared but not defined in any input "
               "(referenced at caller.ptx:21:43) (ABI-6; declared at functions.decl:3:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, allow_undefined)
{
    fdl_decls *decls = load_decls(DECL);
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    opts.allow_undefined = 1;
    result r;
    check_files(&r, decls, FILES("missing.ptx"), &opts);
    expect_ok(&r);
    check_files(&r, decls, FILES("missing.ptx", "caller.ptx"), &opts);
    expect_ok(&r);
    check_files(&r, decls, FILES("caller.ptx"), &opts); /* only references: fine */
    expect_ok(&r);
    /* what is defined is still checked (ABI-7, ABI-11 are not excused) */
    check_files(&r, decls, FILES("wrong_count.ptx"), &opts);
    cr_assert_eq(r.ndiags, 1);
    check_files(&r, decls, FILES("mangled.ptx"), &opts);
    cr_assert_eq(r.ndiags, 1);
    check_files(&r, decls, FILES("entry.ptx"), &opts);
    cr_assert_eq(r.ndiags, 1);
    fdl_decls_destroy(decls);
}

Test(abi_check, abi7_cxx_mangled_name)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("mangled.ptx"), NULL);
    EXPECT(&r, "mangled.ptx:175:44: mul_f32_f32: defined only with a C++ mangled name "
               "_Z11mul_f32_f32Pfff; declare it extern \"C\" (ABI-7; declared at "
               "functions.decl:2:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi6_weak_definition)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("weak.ptx"), NULL);
    EXPECT(&r, "weak.ptx:175:41: mul_f32_f32: defined with .weak linkage, but a foreign function "
               "needs .visible (ABI-6; declared at functions.decl:2:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi11_kernel_with_a_declared_name)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("entry.ptx"), NULL);
    EXPECT(&r, "entry.ptx:175:17: mul_f32_f32: defined as a kernel (.entry), but a foreign "
               "function must be a device function (.func) (ABI-11; declared at "
               "functions.decl:2:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi6_duplicate_definition)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("conforming.ptx", "duplicate.ptx"), NULL);
    EXPECT(&r, "duplicate.ptx:15:44: mul_f32_f32: defined more than once, at "
               "conforming.ptx:15:44 and at duplicate.ptx:15:44 (ABI-6; declared at "
               "functions.decl:2:1)");
    check_files(&r, decls, FILES("duplicate.ptx", "conforming.ptx", "duplicate.ptx"), NULL);
    EXPECT(&r,
           "conforming.ptx:15:44: mul_f32_f32: defined more than once, at duplicate.ptx:15:44 "
           "and at conforming.ptx:15:44 (ABI-6; declared at functions.decl:2:1)",
           "duplicate.ptx:15:44: mul_f32_f32: defined more than once, at duplicate.ptx:15:44 "
           "and at duplicate.ptx:15:44 (ABI-6; declared at functions.decl:2:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi8_stale_prototype_in_caller)
{
    fdl_decls *decls = load_decls(DECL);
    result r;
    check_files(&r, decls, FILES("conforming.ptx", "stale_caller.ptx"), NULL);
    EXPECT(&r, "stale_caller.ptx:17:2: mul_f32_f32: stale prototype in caller: parameter 1 "
               "(float32) is .b64 but needs .b32 (ABI-8; declared at functions.decl:2:1)");
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    opts.check_externs = 0;
    check_files(&r, decls, FILES("conforming.ptx", "stale_caller.ptx"), &opts);
    expect_ok(&r);
    fdl_decls_destroy(decls);
}

Test(abi_check, diagnostics_in_declaration_then_input_order)
{
    fdl_decls *decls = parse_decls("mul_f32_f32: float32(float32, float32)\n"
                                   "sum_reduce: float32(CPointer(float32), int32)\n");
    result r;
    check_files(&r, decls,
                FILES("stale_caller.ptx", "wrong_count.ptx", "wrong_width.ptx", "c_void.ptx"),
                NULL);
    EXPECT(&r,
           /* mul_f32_f32 (declared first): its definitions in input order, then references */
           "wrong_width.ptx:175:44: mul_f32_f32: defined more than once, at "
           "wrong_count.ptx:15:44 and at wrong_width.ptx:175:44 (ABI-6; declared at t.decl:1:1)",
           "wrong_width.ptx:177:2: mul_f32_f32: parameter 1 (float32) is .b64 but needs .b32 "
           "(ABI-5; declared at t.decl:1:1)",
           "c_void.ptx:175:16: mul_f32_f32: defined more than once, at wrong_count.ptx:15:44 and "
           "at c_void.ptx:175:16 (ABI-6; declared at t.decl:1:1)",
           "c_void.ptx:175:16: mul_f32_f32: returns nothing, but the numba ABI needs an int "
           "status return (a C void function? declare it abi=c) (ABI-2; declared at t.decl:1:1)",
           "stale_caller.ptx:17:2: mul_f32_f32: stale prototype in caller: parameter 1 "
           "(float32) is .b64 but needs .b32 (ABI-8; declared at t.decl:1:1)",
           /* then sum_reduce */
           "wrong_count.ptx:127:44: sum_reduce: has 2 parameters but float32(CPointer(float32), "
           "int32) needs 3 (return pointer + 2) (ABI-5; declared at t.decl:2:1)",
           "wrong_width.ptx:15:44: sum_reduce: defined more than once, at wrong_count.ptx:127:44 "
           "and at wrong_width.ptx:15:44 (ABI-6; declared at t.decl:2:1)",
           "c_void.ptx:15:44: sum_reduce: defined more than once, at wrong_count.ptx:127:44 and "
           "at c_void.ptx:15:44 (ABI-6; declared at t.decl:2:1)");
    fdl_decls_destroy(decls);
}

/* ---- rules on hand-written prototypes ----------------------------------------------------- */

#define HEAD ".version 9.0\n.target sm_75\n.address_size 64\n"

Test(abi_check, modules_split_a_library)
{
    fdl_decls *decls = parse_decls("f: float32(float32)\ng: int64(CPointer(int8), float64)\n");
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) f(.param .b64 r, .param .f32 a)\n"
                           "{\n\tret;\n}\n",
                      HEAD ".extern .func (.param .b32 s) f(.param .b64 r, .param .b32 a);\n"
                           ".visible .func (.param .b32 s) g(.param .b64 r, .param .b64 p, "
                           ".param .f64 x)\n{\n\tret;\n}\n"),
                NULL);
    expect_ok(&r);
    fdl_decls_destroy(decls);
}

Test(abi_check, abi2_status_return_must_be_32_bit)
{
    fdl_decls *decls = parse_decls("f: float32(float32)\n");
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b64 s) f(.param .b64 r, .param .b32 a)\n"
                           "{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r, "m0.ptx:4:17: f: returns .b64, but the numba ABI needs a .b32 int status return "
               "(ABI-2; declared at t.decl:1:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi3_return_pointer_must_be_64_bit)
{
    fdl_decls *decls = parse_decls("f: float32(float32)\n");
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) f(.param .b32 r, .param .b32 a, "
                           ".param .b32 b)\n{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r, "m0.ptx:4:34: f: parameter 0 is .b32 but the return pointer needs .b64 (ABI-3; "
               "declared at t.decl:1:1)",
           "m0.ptx:4:32: f: has 3 parameters but float32(float32) needs 2 (return pointer + 1) "
           "(ABI-5; declared at t.decl:1:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi4_void_return_still_has_a_slot)
{
    fdl_decls *decls = parse_decls("v: void(float32)\nw: void()\n");
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) v(.param .b64 r, .param .b32 a)\n"
                           "{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) w(.param .b64 r)\n{\n\tret;\n}\n"),
                NULL);
    expect_ok(&r);
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) v(.param .b32 a)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) w()\n{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r,
           "m0.ptx:4:32: v: missing return pointer: parameter 0 must be the 64-bit pointer to the "
           "return slot, which numba passes even for a void return (ABI-3; declared at "
           "t.decl:1:1)",
           "m0.ptx:8:32: w: missing return pointer: parameter 0 must be the 64-bit pointer to the "
           "return slot, which numba passes even for a void return (ABI-3; declared at "
           "t.decl:2:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi5_widths_of_every_type)
{
    /* ABI-5: bool..uint16 promoted to .b32; 32-bit types .b32; 64-bit types and pointers .b64 */
    fdl_decls *decls = parse_decls(
        "f: int32(boolean, int8, uint8, int16, uint16, int32, uint32, float32, int64, uint64, "
        "intp, uintp, float64, CPointer(float32), voidptr, CPointer(CPointer(int8)), float16, "
        "float16)\n");
    static const char ok[] =
        HEAD ".visible .func (.param .b32 s) f(.param .b64 r, .param .b32 a1, .param .b32 a2, "
             ".param .u32 a3, .param .s32 a4, .param .b32 a5, .param .s32 a6, .param .u32 a7, "
             ".param .f32 a8, .param .b64 a9, .param .u64 a10, .param .s64 a11, .param .b64 a12, "
             ".param .f64 a13, .param .b64 a14, .param .u64 a15, .param .b64 a16, "
             ".param .align 2 .b8 a17[2], .param .f16 a18)\n{\n\tret;\n}\n";
    result r;
    check_texts(&r, decls, FILES(ok), NULL);
    expect_ok(&r);
    /* and the opposite width (or shape) for each is reported at its parameter */
    static const char bad[] =
        HEAD ".visible .func (.param .b32 s) f(.param .b64 r,\n"
             ".param .b16 a1, .param .b8 a2, .param .b64 a3, .param .b16 a4, .param .b64 a5,\n"
             ".param .b64 a6, .param .b64 a7, .param .f64 a8, .param .b32 a9, .param .b32 a10,\n"
             ".param .b32 a11, .param .b32 a12, .param .f32 a13, .param .b32 a14,\n"
             ".param .b32 a15, .param .b32 a16, .param .b32 a17, .param .align 4 .b8 a18[4])\n"
             "{\n\tret;\n}\n";
    check_texts(&r, decls, FILES(bad), NULL);
    EXPECT(&r,
           "m0.ptx:5:1: f: parameter 1 (boolean) is .b16 but needs .b32 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:5:17: f: parameter 2 (int8) is .b8 but needs .b32 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:5:32: f: parameter 3 (uint8) is .b64 but needs .b32 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:5:48: f: parameter 4 (int16) is .b16 but needs .b32 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:5:64: f: parameter 5 (uint16) is .b64 but needs .b32 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:6:1: f: parameter 6 (int32) is .b64 but needs .b32 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:6:17: f: parameter 7 (uint32) is .b64 but needs .b32 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:6:33: f: parameter 8 (float32) is .f64 but needs .b32 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:6:49: f: parameter 9 (int64) is .b32 but needs .b64 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:6:65: f: parameter 10 (uint64) is .b32 but needs .b64 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:7:1: f: parameter 11 (intp) is .b32 but needs .b64 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:7:18: f: parameter 12 (uintp) is .b32 but needs .b64 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:7:35: f: parameter 13 (float64) is .f32 but needs .b64 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:7:52: f: parameter 14 (CPointer(float32)) is .b32 but needs .b64 (ABI-5; "
           "declared at t.decl:1:1)",
           "m0.ptx:8:1: f: parameter 15 (voidptr) is .b32 but needs .b64 (ABI-5; declared at "
           "t.decl:1:1)",
           "m0.ptx:8:18: f: parameter 16 (CPointer(CPointer(int8))) is .b32 but needs .b64 "
           "(ABI-5; declared at t.decl:1:1)",
           "m0.ptx:8:35: f: parameter 17 (float16) is .b32 but needs .b16 or .b8[2] (ABI-5; "
           "declared at t.decl:1:1)",
           "m0.ptx:8:52: f: parameter 18 (float16) is .b8[4] but needs .b16 or .b8[2] (ABI-5; "
           "declared at t.decl:1:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi5_float16_shapes)
{
    fdl_decls *decls = parse_decls("h: float16(float16)\n");
    result r;
    /* both `.align 2 .b8 x[2]` (what nvcc emits) and a 16-bit scalar are float16 */
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) h(.param .b64 r, .param .b16 x)\n"
                           "{\n\tret;\n}\n"),
                NULL);
    expect_ok(&r);
    /* every 16-bit type letter, and the byte array at any alignment (ABI.md, ABI-5) */
    const char *const halves[] = {".f16 x", ".u16 x", ".s16 x", ".bf16 x", ".b8 x[2]",
                                  ".align 2 .b8 x[2]", ".align 4 .b8 x[2]"};
    for (size_t i = 0; i < sizeof halves / sizeof halves[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 HEAD ".visible .func (.param .b32 s) h(.param .b64 r, .param %s)\n"
                      "{\n\tret;\n}\n",
                 halves[i]);
        check_texts(&r, decls, FILES(text), NULL);
        expect_ok(&r);
    }
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) h(.param .b64 r, .param .b32 x)\n"
                           "{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r, "m0.ptx:4:49: h: parameter 1 (float16) is .b32 but needs .b16 or .b8[2] (ABI-5; "
               "declared at t.decl:1:1)");
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) h(.param .b64 r, .param .align 4 "
                           ".b8 x[4])\n{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r, "m0.ptx:4:49: h: parameter 1 (float16) is .b8[4] but needs .b16 or .b8[2] "
               "(ABI-5; declared at t.decl:1:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi6_definition_without_linkage)
{
    fdl_decls *decls = parse_decls("f: int32()\n");
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".func (.param .b32 s) f(.param .b64 r)\n{\n\tret;\n}\n"), NULL);
    EXPECT(&r, "m0.ptx:4:23: f: defined without linkage (local to its module), but a foreign "
               "function needs .visible (ABI-6; declared at t.decl:1:1)");
    check_texts(&r, decls,
                FILES(HEAD ".common .func (.param .b32 s) f(.param .b64 r)\n{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r, "m0.ptx:4:31: f: defined with .common linkage, but a foreign function needs "
               ".visible (ABI-6; declared at t.decl:1:1)");
    /* a forward declaration plus the definition in one module is one definition */
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) f(.param .b64 r);\n"
                           ".visible .func (.param .b32 s) f(.param .b64 r)\n{\n\tret;\n}\n"),
                NULL);
    expect_ok(&r);
    fdl_decls_destroy(decls);
}

Test(abi_check, abi7_only_exact_mangling_of_the_name)
{
    fdl_decls *decls = parse_decls("f: int32()\nfoo: int32()\n");
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) _Z3foov(.param .b64 r)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) _Z2fooi(.param .b64 r)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) _Z4foo1v(.param .b64 r)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) _ZN1f1gEv(.param .b64 r)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) _Z1fv(.param .b64 r)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) _Z99fv(.param .b64 r)\n{\n\tret;\n}\n"),
                &opts);
    EXPECT(&r, "m0.ptx:20:32: f: defined only with a C++ mangled name _Z1fv; declare it extern "
               "\"C\" (ABI-7; declared at t.decl:1:1)",
           "m0.ptx:4:32: foo: defined only with a C++ mangled name _Z3foov; declare it extern "
           "\"C\" (ABI-7; declared at t.decl:2:1)");
    /* the extern "C" definition is there too: the mangled overload is not an error */
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) _Z3foov(.param .b64 r)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) foo(.param .b64 r)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) f(.param .b64 r)\n{\n\tret;\n}\n"),
                &opts);
    expect_ok(&r);
    fdl_decls_destroy(decls);
}

Test(abi_check, abi8_every_stale_reference)
{
    fdl_decls *decls = parse_decls("f: float32(float32)\n");
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) f(.param .b64 r, .param .b32 a)\n"
                           "{\n\tret;\n}\n",
                      HEAD ".extern .func f(.param .b64 r, .param .b32 a);\n",
                      HEAD ".extern .func (.param .b32 s) f(.param .b32 a);\n"),
                NULL);
    EXPECT(&r,
           "m1.ptx:4:15: f: stale prototype in caller: returns nothing, but the numba ABI needs an "
           "int status return (a C void function? declare it abi=c) (ABI-8; declared at "
           "t.decl:1:1)",
           "m2.ptx:4:31: f: stale prototype in caller: missing return pointer: parameter 0 must "
           "be the 64-bit pointer to the float32 return slot (ABI-8; declared at t.decl:1:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi9_c_abi)
{
    fdl_decls *decls =
        parse_decls("add: uint32(uint32, uint32) abi=c\nnothing: void(float64) abi=c\n"
                    "half: float16(float16) abi=c\n");
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) add(.param .b32 a, .param .b32 b)\n"
                           "{\n\tret;\n}\n"
                           ".visible .func nothing(.param .b64 x)\n{\n\tret;\n}\n"
                           ".visible .func (.param .align 2 .b8 rv[2]) half(.param .align 2 .b8 "
                           "x[2])\n{\n\tret;\n}\n"),
                NULL);
    expect_ok(&r);
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b64 s) add(.param .b32 a, .param .b64 b)\n"
                           "{\n\tret;\n}\n"
                           ".visible .func (.param .b32 s) nothing(.param .b64 x)\n{\n\tret;\n}\n"
                           ".visible .func half(.param .b16 x)\n{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r,
           "m0.ptx:4:17: add: returns .b64, but uint32 needs .b32 (ABI-9; declared at "
           "t.decl:1:1)",
           "m0.ptx:4:51: add: parameter 2 (uint32) is .b64 but needs .b32 (ABI-9; declared at "
           "t.decl:1:1)",
           "m0.ptx:8:17: nothing: returns .b32, but a void function has no return value (ABI-9; "
           "declared at t.decl:2:1)",
           "m0.ptx:12:16: half: returns nothing, but float16 needs a .b16 or .b8[2] return "
           "(ABI-9; declared at t.decl:3:1)");
    /* a numba-ABI definition of a function declared abi=c */
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) add(.param .b64 r, .param .b32 a, "
                           ".param .b32 b)\n{\n\tret;\n}\n"
                           ".visible .func nothing(.param .b64 x, .param .b64 y)\n{\n\tret;\n}\n"
                           ".visible .func (.param .b16 s) half(.param .b16 x)\n{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r,
           "m0.ptx:4:32: add: has 3 parameters but uint32(uint32, uint32) needs 2 (a numba ABI "
           "function? remove abi=c) (ABI-9; declared at t.decl:1:1)",
           "m0.ptx:8:16: nothing: has 2 parameters but void(float64) needs 1 (ABI-9; declared at "
           "t.decl:2:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi11_kernel_and_undeclared_functions)
{
    fdl_decls *decls = parse_decls("k: int32()\n");
    result r;
    /* undeclared .func and .entry are ignored; a declared name only as .entry is ABI-11 */
    check_texts(&r, decls,
                FILES(HEAD ".visible .entry k()\n{\n\tret;\n}\n"
                           ".visible .entry other()\n{\n\tret;\n}\n"
                           ".visible .func anything(.param .b32 x)\n{\n\tret;\n}\n"),
                NULL);
    EXPECT(&r, "m0.ptx:4:17: k: defined as a kernel (.entry), but a foreign function must be a "
               "device function (.func) (ABI-11; declared at t.decl:1:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi11_every_kernel_of_a_declared_name)
{
    fdl_decls *decls = parse_decls("k: int32()\n");
    result r;
    /*
     * ABI-11 fires for any .entry of a declared name, even when a conforming .func of that name
     * is defined in another input; a declaration of a kernel is named as such.
     */
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) k(.param .b64 r)\n{\n\tret;\n}\n",
                      HEAD ".visible .entry k()\n{\n\tret;\n}\n",
                      HEAD ".extern .entry k();\n"),
                NULL);
    EXPECT(&r,
           "m1.ptx:4:17: k: defined as a kernel (.entry), but a foreign function must be a "
           "device function (.func) (ABI-11; declared at t.decl:1:1)",
           "m2.ptx:4:16: k: declared as a kernel (.entry), but a foreign function must be a "
           "device function (.func) (ABI-11; declared at t.decl:1:1)");
    fdl_decls_destroy(decls);
}

Test(abi_check, abi12_address_size)
{
    fdl_decls *decls = parse_decls("f: int32()\n");
    result r;
    check_texts(&r, decls,
                FILES(".version 9.0\n.target sm_75\n.address_size 32\n"
                      ".visible .func (.param .b32 s) f(.param .b64 r)\n{\n\tret;\n}\n",
                      "// comment\n.version 9.0\n.target sm_75\n",
                      ".version 9.0\n.target sm_75\n.address_size 32\n"),
                NULL);
    EXPECT(&r,
           "m0.ptx:3:1: module uses .address_size 32, but foreign functions need .address_size 64 "
           "(ABI-12)",
           "m1.ptx:2:1: module has no .address_size directive (32-bit addressing), but foreign "
           "functions need .address_size 64 (ABI-12)",
           "m2.ptx:3:1: module uses .address_size 32, but foreign functions need .address_size 64 "
           "(ABI-12)");
    /* a module's rule: no declaration to point at */
    cr_assert_eq(r.d.e[0].fields, FDL_ERROR_HAS_RULE);
    cr_assert_eq(r.d.e[0].rule, 12);
    cr_assert_str_eq(r.d.e[0].symbol, "");
    fdl_decls_destroy(decls);
}

Test(abi_check, no_modules_and_no_declarations)
{
    fdl_decls *decls = parse_decls("f: int32()\n");
    result r;
    check_texts(&r, decls, (const char *const[]){NULL}, NULL);
    EXPECT(&r, "t.decl:1:1: f: declared but not defined in any input (ABI-6; declared at "
               "t.decl:1:1)");
    fdl_decls_destroy(decls);
    decls = parse_decls("# nothing declared\n");
    check_texts(&r, decls, FILES(HEAD ".visible .func f()\n{\n\tret;\n}\n"), NULL);
    expect_ok(&r);
    fdl_decls_destroy(decls);
}

/* A message too long for fdl_error is shortened in the middle: the rule and location stay. */
Test(abi_check, long_messages_keep_rule_and_location)
{
    fdl__buf sig = {0};
    fdl__buf_puts(&sig, "a_function_with_a_long_name_for_a_long_message: float32(");
    for (int i = 0; i < 60; i++)
        fdl__buf_printf(&sig, "%sCPointer(CPointer(float64))", i ? ", " : "");
    fdl__buf_puts(&sig, ")\n");
    char source[301];
    memset(source, 'd', 300);
    source[300] = '\0';
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_parse(&decls, sig.data, sig.len, source, &err), FDL_OK, "%s",
                 err.message);
    result r;
    check_texts(&r, decls,
                FILES(HEAD ".visible .func (.param .b32 s) "
                           "a_function_with_a_long_name_for_a_long_message(.param .b64 r)\n"
                           "{\n\tret;\n}\n"),
                NULL);
    cr_assert_eq(r.rc, FDL_EABI);
    cr_assert_eq(r.ndiags, 1);
    const char *m = r.d.e[0].message;
    cr_assert_eq(strlen(m), FDL_ERROR_MESSAGE_MAX - 1);
    char tail[400];
    snprintf(tail, sizeof tail, "... (ABI-5; declared at %s:1:1)", source);
    cr_assert(strcmp(m + strlen(m) - strlen(tail), tail) == 0, "%s", m);
    const char *head = "a_function_with_a_long_name_for_a_long_message: has 1 parameter but "
                       "float32(CPointer(CPointer(float64)), ";
    cr_assert(strncmp(m, head, strlen(head)) == 0, "%s", m);
    fdl_decls_destroy(decls);
    fdl__buf_free(&sig);
}

Test(abi_check, options_and_outputs)
{
    fdl_decls *decls = load_decls(DECL);
    fdl_ptx *ptx = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_ptx_scan_file(&ptx, CHECK_DIR "/wrong_width.ptx", &err), FDL_OK);
    const fdl_ptx *mods[] = {ptx};
    /* NULL options, ndiags and err are allowed */
    cr_assert_eq(fdl_abi_check(NULL, decls, mods, 1, NULL, NULL), FDL_EABI);
    size_t n = 99;
    cr_assert_eq(fdl_abi_check(&n, decls, mods, 1, NULL, &err), FDL_EABI);
    cr_assert_eq(n, 1);
    cr_assert_eq(err.code, FDL_EABI);
    cr_assert_str_eq(err.symbol, "mul_f32_f32");
    cr_assert_eq(err.line, 177);
    fdl_check_options bad = FDL_CHECK_OPTIONS_INIT;
    bad.version = 99;
    cr_assert_eq(fdl_abi_check(&n, decls, mods, 1, &bad, &err), FDL_EINVAL);
    cr_assert_eq(n, 0);
    cr_assert_str_eq(err.message, "fdl_abi_check: unsupported options version 99");
    fdl_ptx_destroy(ptx);
    fdl_decls_destroy(decls);
}

#ifdef NDEBUG
Test(abi_check, null_arguments)
{
    fdl_error err = FDL_ERROR_INIT;
    size_t n = 7;
    cr_assert_eq(fdl_abi_check(&n, NULL, NULL, 0, NULL, &err), FDL_EINVAL);
    cr_assert_eq(n, 0);
    fdl_decls *decls = parse_decls("f: int32()\n");
    const fdl_ptx *mods[] = {NULL};
    cr_assert_eq(fdl_abi_check(&n, decls, mods, 1, NULL, &err), FDL_EINVAL);
    cr_assert_eq(fdl_abi_check(&n, decls, NULL, 1, NULL, &err), FDL_EINVAL);
    fdl_decls_destroy(decls);
}
#endif
