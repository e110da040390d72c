/*
 * Tests of the float-or-integer check (ABI-13, a warning): the PTX scanner's reading of the
 * bodies' typed parameter loads and return-slot stores (fdl__ptx_use_of), and fdl_abi_check's
 * warnings. Fixtures: tests/data/classes (nvcc -O3 and -G output, see its README.md), and small
 * PTX texts for what nvcc does not write.
 */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "abi_internal.h"

#define DIR FDL_TEST_DATA "/classes"
#define MAX 32

typedef struct seen {
    size_t n, errors;
    fdl_error e[MAX];
} seen;

static void on_warning(void *ctx, const fdl_error *d)
{
    seen *s = ctx;
    cr_assert_lt(s->n, MAX);
    s->e[s->n++] = *d;
}

static void on_error(void *ctx, const fdl_error *d)
{
    (void)d;
    ((seen *)ctx)->errors++;
}

static fdl_decls *decls_of(const char *text)
{
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_parse(&decls, text, strlen(text), "t.decl", &err), FDL_OK, "%s",
                 err.message);
    return decls;
}

static fdl_decls *decls_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DIR, name);
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_load(&decls, path, &err), FDL_OK, "%s", err.message);
    return decls;
}

/* The check of @p ptx against @p decls: its warnings into @p s; its result returned. */
static int run(seen *s, const fdl_decls *decls, const fdl_ptx *ptx)
{
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    opts.on_diag = on_error;
    opts.ctx = s;
    memset(s, 0, sizeof *s);
    size_t ndiags = 99;
    int rc = fdl__abi_check_warn(&ndiags, decls, &ptx, 1, &opts, on_warning, NULL);
    cr_assert_eq(ndiags, s->errors, "warnings are not counted as diagnostics");
    return rc;
}

static fdl_ptx *scan_file(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DIR, name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    static char text[1 << 20];
    size_t len = fread(text, 1, sizeof text, f);
    cr_assert(feof(f) && !ferror(f), "%s", path);
    fclose(f);
    fdl_ptx *ptx = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl__ptx_scan_bodies(&ptx, text, len, path, &err), FDL_OK, "%s", err.message);
    return ptx;
}

static fdl_ptx *scan_text(const char *text)
{
    fdl_ptx *ptx = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl__ptx_scan_bodies(&ptx, text, strlen(text), "m.ptx", &err), FDL_OK, "%s",
                 err.message);
    return ptx;
}

/* Whether a warning's message starts with @p head (after "<name>: "). */
static int has(const seen *s, const char *text)
{
    for (size_t i = 0; i < s->n; i++)
        if (strncmp(s->e[i].message, text, strlen(text)) == 0)
            return 1;
    return 0;
}

static void dump(const seen *s)
{
    for (size_t i = 0; i < s->n; i++)
        fprintf(stderr, "  %s:%u:%u: %s\n", s->e[i].source, s->e[i].line, s->e[i].column,
                s->e[i].message);
}

/* ---- nvcc's output ------------------------------------------------------------------------ */

Test(classes, right_declarations_give_no_warning)
{
    static const char *const files[] = {"classes_O3.ptx", "classes_O0.ptx"};
    fdl_decls *decls = decls_file("right.decl");
    for (size_t i = 0; i < 2; i++) {
        fdl_ptx *ptx = scan_file(files[i]);
        seen s;
        cr_expect_eq(run(&s, decls, ptx), FDL_OK, "%s", files[i]);
        if (s.n)
            dump(&s);
        cr_expect_eq(s.n, 0, "%s: %zu warnings", files[i], s.n);
        cr_expect_eq(s.errors, 0);
        fdl_ptx_destroy(ptx);
    }
    fdl_decls_destroy(decls);
}

Test(classes, wrong_declarations_at_O3)
{
    fdl_decls *decls = decls_file("wrong.decl");
    fdl_ptx *ptx = scan_file("classes_O3.ptx");
    seen s;
    cr_assert_eq(run(&s, decls, ptx), FDL_OK,
                 "warnings never fail the check");
    dump(&s);
    cr_expect_eq(s.n, 10);
    /* float declared int, int declared float, the return value, float64 declared int64 */
    cr_expect(has(&s, "mulf: parameter 1 is declared int32 but the code reads it as f32 (ABI-13; "
                      "declared at "));
    cr_expect(has(&s, "mulf: parameter 2 is declared float32 but the code reads it as u32"));
    cr_expect(has(&s, "mulf: the return value is declared int32 but the code stores it as f32"));
    cr_expect(has(&s, "addd: parameter 1 is declared int64 but the code reads it as f64"));
    cr_expect(has(&s, "addd: parameter 2 is declared float64 but the code reads it as u64"));
    cr_expect(has(&s, "addd: the return value is declared int64 but the code stores it as f64"));
    cr_expect(has(&s, "trunc64: parameter 1 is declared int64 but the code reads it as f64"));
    cr_expect(has(&s, "bits: parameter 1 is declared int32 but the code reads it as f32"));
    cr_expect(has(&s, "tofl: parameter 1 is declared float32 but the code reads it as u32"));
    cr_expect(has(&s, "twice: parameter 1 is declared float32 but the code reads it as u32"));
    /* the bit copy of tofl's return (st.u32 of the loaded register) and unused's constant are
     * no evidence; unused reads neither parameter; float16 is not looked at */
    cr_expect(!has(&s, "tofl: the return value"));
    cr_expect(!has(&s, "unused:"));
    cr_expect(!has(&s, "hcopy:"));
    /* where: the load, at its line and column; the symbol */
    cr_expect_str_eq(s.e[1].source, DIR "/classes_O3.ptx");
    cr_expect_eq(s.e[1].line, 28);
    cr_expect_eq(s.e[1].column, 2);
    cr_expect_str_eq(s.e[1].symbol, "mulf");
    cr_expect_eq(s.e[1].code, FDL_EABI);
    fdl_ptx_destroy(ptx);
    fdl_decls_destroy(decls);
}

Test(classes, wrong_declarations_at_O0)
{
    fdl_decls *decls = decls_file("wrong.decl");
    fdl_ptx *ptx = scan_file("classes_O0.ptx");
    seen s;
    cr_assert_eq(run(&s, decls, ptx), FDL_OK);
    dump(&s);
    cr_expect_eq(s.n, 13);
    cr_expect(has(&s, "tofl: the return value is declared int32 but the code stores it as f32"));
    cr_expect(has(&s, "unused: parameter 1 is declared int32 but the code reads it as f32"));
    cr_expect(has(&s, "unused: parameter 2 is declared float32 but the code reads it as u32"));
    cr_expect(has(&s, "mulf: the return value is declared int32 but the code stores it as f32"));
    cr_expect(!has(&s, "hcopy:"));
    fdl_ptx_destroy(ptx);
    fdl_decls_destroy(decls);
}

/* A user's PTX (fdl_ptx_scan, the bodies not read) is no evidence: no warning, even through
 * fdl__abi_check_warn, and fdl_abi_check never warns. */
Test(classes, user_ptx_gets_no_warning)
{
    fdl_decls *decls = decls_file("wrong.decl");
    char path[512];
    snprintf(path, sizeof path, "%s/classes_O3.ptx", DIR);
    fdl_ptx *ptx = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_ptx_scan_file(&ptx, path, &err), FDL_OK, "%s", err.message);
    cr_expect_null(fdl__ptx_use_of(ptx, fdl_ptx_find(ptx, "mulf"), 1), "the body was not read");
    seen s;
    cr_expect_eq(run(&s, decls, ptx), FDL_OK);
    cr_expect_eq(s.n, 0);
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    const fdl_ptx *m = ptx;
    cr_expect_eq(fdl_abi_check(NULL, decls, &m, 1, &opts, NULL), FDL_OK);
    fdl_ptx *bodies = scan_file("classes_O3.ptx"); /* the same text, the bodies read: warnings */
    cr_expect_eq(run(&s, decls, bodies), FDL_OK);
    cr_expect_gt(s.n, 0);
    fdl_ptx_destroy(bodies);
    fdl_ptx_destroy(ptx);
    fdl_decls_destroy(decls);
}

/* ---- what the scanner reads of a body ----------------------------------------------------- */

#define HEAD ".version 8.0\n.target sm_90\n.address_size 64\n"

Test(classes, scanner_reads_typed_loads_and_stores)
{
    fdl_ptx *ptx = scan_text(HEAD
                             ".visible .func (.param .b32 r) f(.param .b64 f_param_0, "
                             ".param .b32 f_param_1, .param .b32 f_param_2, .param .b32 p3)\n"
                             "{\n"
                             "\t.reg .f32 %f<3>; .reg .b64 %rd<4>; .reg .b32 %r<3>;\n"
                             "\tld.param.u64 %rd1, [f_param_0];\n"
                             "\tcvta.to.global.u64 %rd2, %rd1;\n"
                             "\tld.param.f32 %f1, [f_param_1];\n"
                             "\tld.param.b32 %r1, [f_param_2];\n"
                             "\tld.param.s32 %r2, [p3+0];\n"
                             "\t@%p1 st.global.f32 [%rd2+0], %f2;\n"
                             "\tst.global.u32 [%rd2+4], %r2;\n"
                             "\tret;\n"
                             "}\n"
                             ".func g(.param .b32 g_param_0) { ld.param.f32 %f1, [g_param_0]; }\n"
                             ".extern .func h(.param .b32 h_param_0);\n");
    const fdl_ptx_func *f = fdl_ptx_find(ptx, "f");
    const fdl__ptx_use *u = fdl__ptx_use_of(ptx, f, 2);
    cr_assert(u);
    cr_expect_eq(u->classes, FDL__USE_FLOAT);
    cr_expect_str_eq(u->type[0], "f32");
    cr_expect_eq(u->line[0], 9);
    cr_expect_eq(u->column[0], 2);
    cr_expect_null(fdl__ptx_use_of(ptx, f, 3), ".b32: untyped bits, no evidence");
    u = fdl__ptx_use_of(ptx, f, 4); /* named otherwise, +0 */
    cr_assert(u);
    cr_expect_eq(u->classes, FDL__USE_INT);
    cr_expect_str_eq(u->type[1], "s32");
    u = fdl__ptx_use_of(ptx, f, 0); /* through cvta, guarded; the +4 store is another field */
    cr_assert(u);
    cr_expect_eq(u->classes, FDL__USE_FLOAT);
    cr_expect_eq(u->line[0], 12);
    cr_expect_eq(u->column[0], 7);
    u = fdl__ptx_use_of(ptx, f, 1); /* the pointer's own load: .u64 */
    cr_assert(u);
    cr_expect_eq(u->classes, FDL__USE_INT);
    /* not .visible, a declaration: not read */
    cr_expect_null(fdl__ptx_use_of(ptx, fdl_ptx_find(ptx, "g"), 1));
    cr_expect_null(fdl__ptx_use_of(ptx, fdl_ptx_find(ptx, "h"), 1));
    cr_expect_null(fdl__ptx_use_of(NULL, f, 1));
    fdl_ptx_destroy(ptx);
}

Test(classes, mixed_loads_and_unfollowed_pointers_are_no_evidence)
{
    fdl_decls *decls = decls_of("f: int32(int32, float32)\n");
    /* parameter 1 read both ways; parameter 2 at an offset and as a vector; the pointer's
     * register written again before the store (of a computed value) */
    fdl_ptx *ptx = scan_text(HEAD
                             ".visible .func (.param .b32 r) f(.param .b64 f_param_0, "
                             ".param .b32 f_param_1, .param .b32 f_param_2)\n"
                             "{\n"
                             "\tld.param.u64 %rd1, [f_param_0];\n"
                             "\tld.param.f32 %f1, [f_param_1];\n"
                             "\tld.param.u32 %r1, [f_param_1];\n"
                             "\tld.param.u16 %rs1, [f_param_2+2];\n"
                             "\tld.param.v2.u16 {%rs1, %rs2}, [f_param_2];\n"
                             "\tadd.s64 %rd1, %rd1, 8;\n"
                             "\tst.f32 [%rd1], %f3;\n"
                             "\tret;\n"
                             "}\n");
    seen s;
    cr_expect_eq(run(&s, decls, ptx), FDL_OK);
    dump(&s);
    cr_expect_eq(s.n, 0);
    cr_expect_null(fdl__ptx_use_of(ptx, fdl_ptx_find(ptx, "f"), 0));
    fdl_ptx_destroy(ptx);
    fdl_decls_destroy(decls);
}

Test(classes, pointers_bool_and_float16_are_left_alone)
{
    fdl_decls *decls = decls_of("f: float32(CPointer(float32), boolean, float16)\n");
    fdl_ptx *ptx = scan_text(HEAD
                             ".visible .func (.param .b32 r) f(.param .b64 f_param_0, "
                             ".param .b64 f_param_1, .param .b32 f_param_2, "
                             ".param .b16 f_param_3)\n"
                             "{\n"
                             "\tld.param.u64 %rd1, [f_param_0];\n"
                             "\tld.param.f64 %fd1, [f_param_1];\n"
                             "\tld.param.f32 %f2, [f_param_2];\n"
                             "\tld.param.u16 %rs1, [f_param_3];\n"
                             "\tst.u32 [%rd1], %r9;\n"
                             "\tret;\n"
                             "}\n");
    seen s;
    cr_expect_eq(run(&s, decls, ptx), FDL_OK);
    dump(&s);
    cr_expect_eq(s.n, 0, "a float return stored as .u32 is no evidence either (constants)");
    fdl_ptx_destroy(ptx);
    fdl_decls_destroy(decls);
}

Test(classes, a_warning_beside_an_error)
{
    /* parameter 1 is too wide (an error, ABI-5): the classes are not looked at; g is fine in
     * width and read as the other class: its warning comes, and the error still fails */
    fdl_decls *decls = decls_of("f: int32(int32)\ng: int32(int32)\n");
    fdl_ptx *ptx = scan_text(HEAD
                             ".visible .func (.param .b32 r) f(.param .b64 f_param_0, "
                             ".param .b64 f_param_1)\n"
                             "{ ld.param.f64 %fd1, [f_param_1]; ret; }\n"
                             ".visible .func (.param .b32 r) g(.param .b64 g_param_0, "
                             ".param .b32 g_param_1)\n"
                             "{ ld.param.f32 %f1, [g_param_1]; ret; }\n");
    seen s;
    cr_expect_eq(run(&s, decls, ptx), FDL_EABI);
    cr_expect_eq(s.errors, 1);
    cr_expect_eq(s.n, 1);
    cr_expect(has(&s, "g: parameter 1 is declared int32 but the code reads it as f32"));
    cr_expect_eq(s.e[0].line, 7);
    cr_expect_eq(s.e[0].column, 3);
    fdl_ptx_destroy(ptx);
    fdl_decls_destroy(decls);
}

Test(classes, stores_before_loads_comments_and_loc_lines)
{
    /* the store comes before a later load (its position is counted again from the body's
     * start); a comment and a .loc line (no `;`) before it; ld.param::func */
    fdl_ptx *ptx = scan_text(HEAD
                             ".visible .func (.param .b32 r) f(.param .b64 f_param_0, "
                             ".param .b32 f_param_1)\n"
                             "{\n"
                             "\tld.param::func.u64 %rd1, [f_param_0];\n"
                             "\t// begin inline asm\n"
                             "\t.loc 1 2 3\n"
                             "\tst.f32 [%rd1], %f9;\n"
                             "\tld.param.u32 %r1, [f_param_1];\n"
                             "\tret;\n"
                             "}\n");
    const fdl_ptx_func *f = fdl_ptx_find(ptx, "f");
    const fdl__ptx_use *u = fdl__ptx_use_of(ptx, f, 0);
    cr_assert(u);
    cr_expect_eq(u->classes, FDL__USE_FLOAT);
    cr_expect_eq(u->line[0], 9);
    cr_expect_eq(u->column[0], 2);
    u = fdl__ptx_use_of(ptx, f, 2);
    cr_assert(u);
    cr_expect_eq(u->line[1], 10);
    cr_expect_eq(u->column[1], 2);
    u = fdl__ptx_use_of(ptx, f, 1);
    cr_assert(u, "ld.param::func.u64 is read");
    fdl_ptx_destroy(ptx);
}

Test(classes, a_long_statement_of_one_register)
{
    /* one statement naming the pointer's register many times: read once, not once a hit */
    size_t n = 200000;
    fdl__buf b = {0};
    fdl__buf_puts(&b, HEAD ".visible .func (.param .b32 r) f(.param .b64 f_param_0)\n{\n"
                           "\tld.param.u64 %rd1, [f_param_0];\n\tcall g, (");
    for (size_t i = 0; i < n; i++)
        fdl__buf_puts(&b, i ? ", %rd1" : "%rd1");
    fdl__buf_puts(&b, ");\n\tst.global.f32 [%rd1], %f2;\n\tret;\n}\n");
    cr_assert(!b.oom);
    fdl_ptx *ptx = NULL;
    cr_assert_eq(fdl__ptx_scan_bodies(&ptx, b.data, b.len, "long.ptx", NULL), FDL_OK);
    const fdl__ptx_use *u = fdl__ptx_use_of(ptx, fdl_ptx_find(ptx, "f"), 0);
    cr_assert(u);
    cr_expect_eq(u->classes, FDL__USE_FLOAT);
    cr_expect_eq(u->line[0], 8);
    fdl_ptx_destroy(ptx);
    fdl__buf_free(&b);
}
