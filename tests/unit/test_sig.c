/*
 * Tests of the signature language (abi/src/sig.c, fdlink/sig.h; abi/ABI.md "Signatures").
 *
 * Every parse goes through a copy of the text placed so that it ends exactly at a page that
 * cannot be read: a parser that reads one byte past `len` dies with SIGSEGV instead of passing.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdlink/sig.h"

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */


static int parse_n(fdl_sig *out, const char *s, size_t len, fdl_error *err)
{
    guarded g;
    char *text = guard_copy(&g, s, len);
    int rc = fdl_sig_parse(out, text, len, err);
    guard_free(&g);
    return rc;
}

static int parse(fdl_sig *out, const char *s, fdl_error *err)
{
    return parse_n(out, s, strlen(s), err);
}

static fdl_sig parse_ok(const char *s)
{
    fdl_sig sig;
    fdl_error err = FDL_ERROR_INIT;
    int rc = parse(&sig, s, &err);
    cr_assert_eq(rc, FDL_OK, "parse of \"%s\" failed: %d col %u: %s", s, rc, err.column,
                 err.message);
    cr_assert_eq(err.code, FDL_OK, "err touched on success for \"%s\"", s);
    return sig;
}

static void expect_error_n(const char *s, size_t len, int code, unsigned column, const char *msg)
{
    fdl_sig sig;
    memset(&sig, 0xab, sizeof sig);
    fdl_error err = FDL_ERROR_INIT;
    int rc = parse_n(&sig, s, len, &err);
    cr_assert_eq(rc, code, "\"%.*s\": status %d, expected %d (%s)", (int)len, s, rc, code,
                 err.message);
    cr_assert_eq(err.code, code, "\"%.*s\": err.code %d", (int)len, s, err.code);
    cr_assert_str_eq(err.message, msg, "\"%.*s\": message", (int)len, s);
    cr_assert_eq(err.column, column, "\"%.*s\": column %u, expected %u (%s)", (int)len, s,
                 err.column, column, err.message);
    /* On failure the output is zeroed, never half-filled. */
    fdl_sig zero;
    memset(&zero, 0, sizeof zero);
    cr_assert(memcmp(&sig, &zero, sizeof sig) == 0, "\"%.*s\": out not zeroed", (int)len, s);
}

static void expect_error(const char *s, int code, unsigned column, const char *msg)
{
    expect_error_n(s, strlen(s), code, column, msg);
}

static fdl_type T(fdl_scalar base, unsigned depth)
{
    fdl_type t = {base, depth};
    return t;
}

static void assert_type(fdl_type got, fdl_scalar base, unsigned depth, const char *what)
{
    cr_assert_eq(got.base, base, "%s: base %d, expected %d", what, (int)got.base, (int)base);
    cr_assert_eq(got.depth, depth, "%s: depth %u, expected %u", what, got.depth, depth);
}

static char *format_sig(const fdl_sig *sig)
{
    size_t n = fdl_sig_format(sig, NULL, 0);
    char *buf = malloc(n + 1);
    cr_assert_not_null(buf);
    cr_assert_eq(fdl_sig_format(sig, buf, n + 1), n);
    cr_assert_eq(strlen(buf), n);
    return buf;
}

/* Every name the language accepts, with the type Numba gives it (numba.core.types). */
typedef struct name_case {
    const char *name;
    fdl_scalar base;
    unsigned depth;
} name_case;

static const name_case names[] = {
    {"boolean", FDL_BOOL, 0},    {"bool_", FDL_BOOL, 0},       {"b1", FDL_BOOL, 0},
    {"int8", FDL_INT8, 0},       {"i1", FDL_INT8, 0},          {"char", FDL_INT8, 0},
    {"int16", FDL_INT16, 0},     {"i2", FDL_INT16, 0},         {"short", FDL_INT16, 0},
    {"int32", FDL_INT32, 0},     {"i4", FDL_INT32, 0},         {"intc", FDL_INT32, 0},
    {"int64", FDL_INT64, 0},     {"i8", FDL_INT64, 0},         {"longlong", FDL_INT64, 0},
    {"uint8", FDL_UINT8, 0},     {"u1", FDL_UINT8, 0},         {"byte", FDL_UINT8, 0},
    {"uchar", FDL_UINT8, 0},     {"uint16", FDL_UINT16, 0},    {"u2", FDL_UINT16, 0},
    {"ushort", FDL_UINT16, 0},   {"uint32", FDL_UINT32, 0},    {"u4", FDL_UINT32, 0},
    {"uintc", FDL_UINT32, 0},    {"uint64", FDL_UINT64, 0},    {"u8", FDL_UINT64, 0},
    {"ulonglong", FDL_UINT64, 0}, {"intp", FDL_INTP, 0},       {"uintp", FDL_UINTP, 0},
    {"float16", FDL_FLOAT16, 0}, {"f2", FDL_FLOAT16, 0},       {"float32", FDL_FLOAT32, 0},
    {"f4", FDL_FLOAT32, 0},      {"float_", FDL_FLOAT32, 0},   {"float64", FDL_FLOAT64, 0},
    {"f8", FDL_FLOAT64, 0},      {"double", FDL_FLOAT64, 0},   {"voidptr", FDL_VOID, 1},
};
#define NNAMES (sizeof names / sizeof names[0])

/* ------------------------------------------------------------------------------------------ */
/* Parsing: what is accepted                                                                   */
/* ------------------------------------------------------------------------------------------ */

Test(sig_parse, accepts_numba_ffi_examples)
{
    fdl_sig s = parse_ok("float32(float32, float32)");
    assert_type(s.ret, FDL_FLOAT32, 0, "ret");
    cr_assert_eq(s.nparams, 2);
    assert_type(s.params[0], FDL_FLOAT32, 0, "p1");
    assert_type(s.params[1], FDL_FLOAT32, 0, "p2");

    s = parse_ok("float32(CPointer(float32), int32)");
    assert_type(s.ret, FDL_FLOAT32, 0, "ret");
    cr_assert_eq(s.nparams, 2);
    assert_type(s.params[0], FDL_FLOAT32, 1, "p1");
    assert_type(s.params[1], FDL_INT32, 0, "p2");

    s = parse_ok("void(CPointer(int32))");
    assert_type(s.ret, FDL_VOID, 0, "ret");
    cr_assert_eq(s.nparams, 1);
    assert_type(s.params[0], FDL_INT32, 1, "p1");

    s = parse_ok("int32()");
    assert_type(s.ret, FDL_INT32, 0, "ret");
    cr_assert_eq(s.nparams, 0);
}

Test(sig_parse, accepts_every_type_name_as_parameter_and_return)
{
    for (size_t i = 0; i < NNAMES; i++) {
        char text[128];
        snprintf(text, sizeof text, "void(%s)", names[i].name);
        fdl_sig s = parse_ok(text);
        cr_assert_eq(s.nparams, 1);
        assert_type(s.params[0], names[i].base, names[i].depth, names[i].name);

        snprintf(text, sizeof text, "%s(int32)", names[i].name);
        s = parse_ok(text);
        assert_type(s.ret, names[i].base, names[i].depth, names[i].name);

        snprintf(text, sizeof text, "int32(CPointer(%s))", names[i].name);
        s = parse_ok(text);
        assert_type(s.params[0], names[i].base, names[i].depth + 1, names[i].name);
    }
}

Test(sig_parse, accepts_void_and_none_as_return_type)
{
    assert_type(parse_ok("void()").ret, FDL_VOID, 0, "void");
    assert_type(parse_ok("none(int32)").ret, FDL_VOID, 0, "none (Numba's void)");
}

Test(sig_parse, pointer_to_void_is_voidptr)
{
    fdl_sig a = parse_ok("void(CPointer(void))");
    fdl_sig b = parse_ok("void(voidptr)");
    assert_type(a.params[0], FDL_VOID, 1, "CPointer(void)");
    cr_assert(fdl_sig_equal(&a, &b));
    fdl_sig c = parse_ok("void(CPointer(voidptr))");
    assert_type(c.params[0], FDL_VOID, 2, "CPointer(voidptr)");
    fdl_sig d = parse_ok("void(CPointer(CPointer(none)))");
    cr_assert(fdl_sig_equal(&c, &d));
    fdl_sig e = parse_ok("voidptr(voidptr)");
    assert_type(e.ret, FDL_VOID, 1, "voidptr return");
}

Test(sig_parse, nests_cpointer_up_to_the_depth_limit)
{
    for (unsigned depth = 1; depth <= FDL_SIG_MAX_DEPTH; depth++) {
        char text[256] = "void(";
        for (unsigned i = 0; i < depth; i++)
            strcat(text, "CPointer(");
        strcat(text, "float64");
        for (unsigned i = 0; i < depth; i++)
            strcat(text, ")");
        strcat(text, ")");
        fdl_sig s = parse_ok(text);
        assert_type(s.params[0], FDL_FLOAT64, depth, text);
    }
    /* A pointer return type: CPointer(int32)(int64) is T *name(...) under abi=c. */
    fdl_sig s = parse_ok("CPointer(int32)(int64)");
    assert_type(s.ret, FDL_INT32, 1, "ret");
}

Test(sig_parse, accepts_whitespace_between_any_tokens)
{
    const char *texts[] = {
        " float32 ( CPointer ( float32 ) , int32 ) ",
        "\tfloat32\t(\tCPointer\t(\tfloat32\t)\t,\tint32\t)\t",
        "float32(\n  CPointer(float32),\r\n  int32\n)\n",
        "float32(CPointer(float32),int32)",
        "\v\ffloat32(CPointer(float32),int32)",
    };
    fdl_sig ref = parse_ok("float32(CPointer(float32), int32)");
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        fdl_sig s = parse_ok(texts[i]);
        cr_assert(fdl_sig_equal(&s, &ref), "\"%s\"", texts[i]);
    }
}

Test(sig_parse, accepts_a_trailing_comma_as_python_does)
{
    fdl_sig s = parse_ok("float32(float32, int32,)");
    cr_assert_eq(s.nparams, 2);
    s = parse_ok("float32(float32 , )");
    cr_assert_eq(s.nparams, 1);
}

Test(sig_parse, reads_only_len_bytes_of_a_longer_text)
{
    /* The text continues past len; only the first len bytes count. */
    const char *text = "float32(float32)garbage(";
    fdl_sig s;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_sig_parse(&s, text, 16, &err), FDL_OK);
    cr_assert_eq(s.nparams, 1);
    /* A prefix that stops inside the parameter list is an error at len + 1. */
    expect_error_n("float32(float32, int32)", 8, FDL_EPARSE, 9,
                   "expected a type for parameter 1");
    expect_error_n("float32(float32, int32)", 15, FDL_EPARSE, 16,
                   "expected ',' or ')' after parameter 1");
    expect_error_n("int32()", 6, FDL_EPARSE, 7, "expected a type for parameter 1");
}

Test(sig_parse, parses_a_non_terminated_buffer_ending_at_an_unreadable_page)
{
    /* parse_n already guards every test; here every prefix of a valid signature is tried. */
    const char *full = "float64(CPointer(CPointer(uint8)), voidptr, f2)";
    size_t n = strlen(full);
    for (size_t len = 0; len <= n; len++) {
        fdl_sig s;
        fdl_error err = FDL_ERROR_INIT;
        int rc = parse_n(&s, full, len, &err);
        cr_assert_eq(rc, len == n ? FDL_OK : FDL_EPARSE, "prefix %zu: %s", len, err.message);
        if (rc != FDL_OK)
            cr_assert(err.column >= 1 && err.column <= len + 1, "prefix %zu: column %u", len,
                      err.column);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing: what is rejected, with column and message                                          */
/* ------------------------------------------------------------------------------------------ */

Test(sig_parse, rejects_unknown_type_with_did_you_mean)
{
    expect_error("float32(flaot32)", FDL_EPARSE, 9,
                 "unknown type 'flaot32' (did you mean float32?)");
    expect_error("flaot32(float32)", FDL_EPARSE, 1,
                 "unknown type 'flaot32' (did you mean float32?)");
    expect_error("float32(int32, uint33)", FDL_EPARSE, 16,
                 "unknown type 'uint33' (did you mean uint32?)");
    expect_error("Float32()", FDL_EPARSE, 1, "unknown type 'Float32' (did you mean float32?)");
    expect_error("void(cpointer(int32))", FDL_EPARSE, 6,
                 "unknown type 'cpointer' (did you mean CPointer?)");
    expect_error("void(vodiptr)", FDL_EPARSE, 6, "unknown type 'vodiptr' (did you mean voidptr?)");
    expect_error("void(CPointer(boolen))", FDL_EPARSE, 15,
                 "unknown type 'boolen' (did you mean boolean?)");
}

Test(sig_parse, rejects_c_type_names_and_suggests_the_numba_type)
{
    expect_error("void(float)", FDL_EPARSE, 6, "unknown type 'float' (did you mean float32?)");
    expect_error("void(int)", FDL_EPARSE, 6, "unknown type 'int' (did you mean int32?)");
    expect_error("void(half)", FDL_EPARSE, 6, "unknown type 'half' (did you mean float16?)");
    expect_error("void(bool)", FDL_EPARSE, 6, "unknown type 'bool' (did you mean boolean?)");
    expect_error("void(size_t)", FDL_EPARSE, 6, "unknown type 'size_t' (did you mean uintp?)");
    expect_error("void(int64_t)", FDL_EPARSE, 6, "unknown type 'int64_t' (did you mean int64?)");
    expect_error("void(unsigned)", FDL_EPARSE, 6,
                 "unknown type 'unsigned' (did you mean uint32?)");
}

Test(sig_parse, rejects_unknown_type_without_a_guess_when_nothing_is_close)
{
    expect_error("void(xyzzy)", FDL_EPARSE, 6, "unknown type 'xyzzy'");
    /* f3 is one edit from f2, f4 and f8: no single guess */
    expect_error("void(f3)", FDL_EPARSE, 6, "unknown type 'f3'");
    expect_error("void(numba.float32)", FDL_EPARSE, 6, "unknown type 'numba'");
    /* long names are quoted only in part */
    char text[200] = "void(";
    for (int i = 0; i < 100; i++)
        strcat(text, "x");
    strcat(text, ")");
    char msg[200] = "unknown type '";
    for (int i = 0; i < 64; i++)
        strcat(msg, "x");
    strcat(msg, "...'");
    expect_error(text, FDL_EPARSE, 6, msg);
}

Test(sig_parse, rejects_complex_types)
{
    const char *msg = "complex types are not supported by the foreign-function ABI";
    expect_error("complex64(float32)", FDL_EPARSE, 1, msg);
    expect_error("void(complex128)", FDL_EPARSE, 6, msg);
    expect_error("void(c8)", FDL_EPARSE, 6, msg);
    expect_error("void(int32, c16)", FDL_EPARSE, 13, msg);
    expect_error("void(CPointer(complex64))", FDL_EPARSE, 15, msg);
}

Test(sig_parse, rejects_numba_names_of_platform_dependent_width)
{
    expect_error("void(int_)", FDL_EPARSE, 6,
                 "'int_' has a width that depends on the host platform; write int32 or int64");
    expect_error("void(long_)", FDL_EPARSE, 6,
                 "'long_' has a width that depends on the host platform; write int32 or int64");
    expect_error("void(uint)", FDL_EPARSE, 6,
                 "'uint' has a width that depends on the host platform; write uint32 or uint64");
    expect_error("ulong()", FDL_EPARSE, 1,
                 "'ulong' has a width that depends on the host platform; write uint32 or uint64");
}

Test(sig_parse, rejects_arrays_and_says_to_write_cpointer)
{
    expect_error("float32(float32[:])", FDL_EPARSE, 16,
                 "arrays are not passed to foreign functions; write CPointer(float32)");
    expect_error("float32(float32[::1], int32)", FDL_EPARSE, 16,
                 "arrays are not passed to foreign functions; write CPointer(float32)");
    expect_error("void(int32, f8[:, :])", FDL_EPARSE, 15,
                 "arrays are not passed to foreign functions; write CPointer(float64)");
    expect_error("float32[:](int32)", FDL_EPARSE, 8,
                 "arrays are not passed to foreign functions; write CPointer(float32)");
    expect_error("void(CPointer(int8)[:])", FDL_EPARSE, 20,
                 "arrays are not passed to foreign functions; write CPointer(CPointer(int8))");
    expect_error("void(CPointer(int8[:]))", FDL_EPARSE, 19,
                 "arrays are not passed to foreign functions; write CPointer(int8)");
}

Test(sig_parse, rejects_c_pointer_syntax)
{
    expect_error("void(float32 *)", FDL_EPARSE, 14,
                 "pointers are written CPointer(float32), not float32 *");
    expect_error("void(CPointer(int32)*)", FDL_EPARSE, 21,
                 "pointers are written CPointer(CPointer(int32)), not CPointer(int32) *");
}

Test(sig_parse, rejects_void_as_parameter_type) /* ABI-4: void is a return type only */
{
    expect_error("float32(void)", FDL_EPARSE, 9,
                 "parameter 1 cannot be void (void is only a return type; write voidptr for an "
                 "untyped pointer)");
    expect_error("float32(int32, none)", FDL_EPARSE, 16,
                 "parameter 2 cannot be void (void is only a return type; write voidptr for an "
                 "untyped pointer)");
}

Test(sig_parse, rejects_empty_and_missing_parts)
{
    expect_error("", FDL_EPARSE, 1, "empty signature");
    expect_error("   ", FDL_EPARSE, 4, "empty signature");
    expect_error("(float32, float32)", FDL_EPARSE, 1,
                 "missing return type: write e.g. void(...) or float32(...)");
    expect_error("float32", FDL_EPARSE, 8, "expected '(' after the return type");
    expect_error("float32 float32", FDL_EPARSE, 9, "expected '(' after the return type");
    expect_error("float32)", FDL_EPARSE, 8, "expected '(' after the return type");
    expect_error("32(int32)", FDL_EPARSE, 1, "expected the return type");
}

Test(sig_parse, rejects_bad_parameter_lists_at_the_offending_token)
{
    expect_error("float32(,int32)", FDL_EPARSE, 9, "expected a type for parameter 1");
    expect_error("float32(int32,,int32)", FDL_EPARSE, 15, "expected a type for parameter 2");
    expect_error("float32(,)", FDL_EPARSE, 9, "expected a type for parameter 1");
    expect_error("float32(int32", FDL_EPARSE, 14, "expected ',' or ')' after parameter 1");
    expect_error("float32(int32 int32)", FDL_EPARSE, 15, "expected ',' or ')' after parameter 1");
    expect_error("float32(int32, int32;)", FDL_EPARSE, 21,
                 "expected ',' or ')' after parameter 2");
    expect_error("float32(int32(", FDL_EPARSE, 14, "expected ',' or ')' after parameter 1");
    expect_error("float32(32)", FDL_EPARSE, 9, "expected a type for parameter 1");
}

Test(sig_parse, rejects_unbalanced_parentheses)
{
    expect_error("float32(int32))", FDL_EPARSE, 15, "unexpected ')' after the signature");
    expect_error("float32((int32)", FDL_EPARSE, 9, "expected a type for parameter 1");
    expect_error("void(CPointer(int32)", FDL_EPARSE, 21, "expected ',' or ')' after parameter 1");
    expect_error("void(CPointer(CPointer(int32))", FDL_EPARSE, 31,
                 "expected ',' or ')' after parameter 1");
    expect_error("void(CPointer(int32 int32))", FDL_EPARSE, 21,
                 "expected ')' to close CPointer(");
    expect_error("void(CPointer(int32", FDL_EPARSE, 20, "expected ')' to close CPointer(");
}

Test(sig_parse, rejects_malformed_cpointer)
{
    expect_error("void(CPointer)", FDL_EPARSE, 14, "expected '(' after CPointer");
    expect_error("void(CPointer float32)", FDL_EPARSE, 15, "expected '(' after CPointer");
    expect_error("void(CPointer())", FDL_EPARSE, 15, "expected a type inside CPointer(...)");
    expect_error("void(CPointer(float32, 1))", FDL_EPARSE, 22,
                 "CPointer takes one type (address spaces are not supported)");
}

Test(sig_parse, rejects_trailing_garbage)
{
    expect_error("float32(float32) extra", FDL_EPARSE, 18,
                 "unexpected 'extra' after the signature");
    expect_error("float32(float32)(int32)", FDL_EPARSE, 17, "unexpected '(' after the signature");
    expect_error("float32(float32) 1", FDL_EPARSE, 18, "unexpected '1' after the signature");
    expect_error("float32(float32) abi=c", FDL_EPARSE, 18,
                 "unexpected 'abi' after the signature");
}

Test(sig_parse, rejects_control_and_non_ascii_bytes)
{
    expect_error("float32(int32\x01)", FDL_EPARSE, 14, "unexpected byte 0x01");
    expect_error("float32(int32)\x7f", FDL_EPARSE, 15, "unexpected byte 0x7f");
    expect_error("void(\xc3\xa9)", FDL_EPARSE, 6, "unexpected byte 0xc3");
    /* An embedded NUL is a byte like any other: len, not NUL, ends the text. */
    expect_error_n("int32(\0)", 8, FDL_EPARSE, 7, "unexpected byte 0x00");
}

/* ------------------------------------------------------------------------------------------ */
/* Limits                                                                                      */
/* ------------------------------------------------------------------------------------------ */

Test(sig_parse, rejects_nesting_deeper_than_the_limit)
{
    char text[512] = "void(";
    for (int i = 0; i < FDL_SIG_MAX_DEPTH + 1; i++)
        strcat(text, "CPointer(");
    strcat(text, "int32");
    for (int i = 0; i < FDL_SIG_MAX_DEPTH + 1; i++)
        strcat(text, ")");
    strcat(text, ")");
    /* column of the ninth CPointer: 5 + 8 * 9 + 1 */
    expect_error(text, FDL_ELIMIT, 6 + 9 * FDL_SIG_MAX_DEPTH,
                 "pointer nesting too deep: at most 8 levels of CPointer (FDL_SIG_MAX_DEPTH)");

    /* voidptr is one level: under eight CPointers it is the ninth */
    char text2[512] = "void(";
    for (int i = 0; i < FDL_SIG_MAX_DEPTH; i++)
        strcat(text2, "CPointer(");
    strcat(text2, "voidptr");
    for (int i = 0; i < FDL_SIG_MAX_DEPTH; i++)
        strcat(text2, ")");
    strcat(text2, ")");
    expect_error(text2, FDL_ELIMIT, 6 + 9 * FDL_SIG_MAX_DEPTH,
                 "pointer nesting too deep: at most 8 levels of CPointer (FDL_SIG_MAX_DEPTH)");

    /* four hundred open CPointers stop at the limit, not at the end of the text */
    char text3[4096] = "void(";
    for (int i = 0; i < 400; i++)
        strcat(text3, "CPointer(");
    expect_error(text3, FDL_ELIMIT, 6 + 9 * FDL_SIG_MAX_DEPTH,
                 "pointer nesting too deep: at most 8 levels of CPointer (FDL_SIG_MAX_DEPTH)");
}

Test(sig_parse, rejects_more_parameters_than_the_limit)
{
    char text[1024] = "void(";
    for (int i = 0; i < FDL_SIG_MAX_PARAMS; i++)
        strcat(text, i ? ",i4" : "i4");
    strcat(text, ")");
    fdl_sig s = parse_ok(text);
    cr_assert_eq(s.nparams, FDL_SIG_MAX_PARAMS);

    char text2[1024] = "void(";
    for (int i = 0; i < FDL_SIG_MAX_PARAMS + 1; i++)
        strcat(text2, i ? ",i4" : "i4");
    strcat(text2, ")");
    /* column of the 65th parameter: "void(" + 64 * "i4," */
    expect_error(text2, FDL_ELIMIT, 6 + 3 * FDL_SIG_MAX_PARAMS,
                 "too many parameters: at most 64 (FDL_SIG_MAX_PARAMS)");
}

Test(sig_parse, rejects_text_longer_than_the_limit)
{
    char text[FDL_SIG_MAX_LENGTH + 2];
    /* exactly at the limit: a valid signature padded with spaces */
    memset(text, ' ', sizeof text);
    memcpy(text, "int32(int32)", 12);
    fdl_sig s;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(parse_n(&s, text, FDL_SIG_MAX_LENGTH, &err), FDL_OK, "%s", err.message);
    expect_error_n(text, FDL_SIG_MAX_LENGTH + 1, FDL_ELIMIT, FDL_SIG_MAX_LENGTH + 1,
                   "signature too long: 6145 bytes, at most 6144 (FDL_SIG_MAX_LENGTH)");
}

Test(sig_parse, accepts_the_largest_signature)
{
    /* 64 parameters and the return type, all of depth 8 around a 7-letter name: 5783 bytes */
    static const char deepest[] = "CPointer(CPointer(CPointer(CPointer(CPointer(CPointer("
                                  "CPointer(CPointer(float16))))))))";
    char text[FDL_SIG_MAX_LENGTH + 1] = "";
    strcat(text, deepest);
    strcat(text, "(");
    for (int i = 0; i < FDL_SIG_MAX_PARAMS; i++) {
        if (i)
            strcat(text, ", ");
        strcat(text, deepest);
    }
    strcat(text, ")");
    cr_assert_eq(strlen(text), 5783);
    fdl_sig s = parse_ok(text);
    cr_assert_eq(s.nparams, FDL_SIG_MAX_PARAMS);
    assert_type(s.ret, FDL_FLOAT16, 8, "ret");
    assert_type(s.params[63], FDL_FLOAT16, 8, "p64");
    /* it is canonical: it prints as itself */
    char *canon = format_sig(&s);
    cr_assert_str_eq(canon, text);
    free(canon);
}

/* ------------------------------------------------------------------------------------------ */
/* Argument checks                                                                             */
/* ------------------------------------------------------------------------------------------ */

#ifdef NDEBUG
Test(sig_parse, rejects_null_arguments)
{
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_sig_parse(NULL, "int32()", 7, &err), FDL_EINVAL);
    cr_assert_eq(err.code, FDL_EINVAL);
    fdl_sig s;
    cr_assert_eq(fdl_sig_parse(&s, NULL, 3, &err), FDL_EINVAL);
}
#else
Test(sig_parse, asserts_on_null_out_in_debug_builds, .signal = SIGABRT)
{
    fdl_sig_parse(NULL, "int32()", 7, NULL);
}
#endif

Test(sig_parse, accepts_null_text_of_length_zero_and_null_err)
{
    fdl_sig s;
    cr_assert_eq(fdl_sig_parse(&s, NULL, 0, NULL), FDL_EPARSE);
    cr_assert_eq(fdl_sig_parse(&s, "int32(", 6, NULL), FDL_EPARSE);
    cr_assert_eq(fdl_sig_parse(&s, "int32()", 7, NULL), FDL_OK);
}

Test(sig_parse, leaves_err_untouched_on_success)
{
    fdl_error err = FDL_ERROR_INIT;
    err.line = 42;
    fdl_sig s;
    cr_assert_eq(fdl_sig_parse(&s, "int32()", 7, &err), FDL_OK);
    cr_assert_eq(err.line, 42);
    cr_assert_eq(err.code, FDL_OK);
}

/* ------------------------------------------------------------------------------------------ */
/* Formatting                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void expect_canonical(const char *in, const char *want)
{
    fdl_sig s = parse_ok(in);
    char *got = format_sig(&s);
    cr_assert_str_eq(got, want, "format of \"%s\"", in);
    free(got);
}

Test(sig_format, prints_canonical_names_and_separators)
{
    expect_canonical("float32(CPointer(float32),int32)", "float32(CPointer(float32), int32)");
    expect_canonical("f4(f4,f4)", "float32(float32, float32)");
    expect_canonical("b1(bool_, boolean)", "boolean(boolean, boolean)");
    expect_canonical("none(CPointer(void))", "void(voidptr)");
    expect_canonical("void(CPointer(CPointer(void)))", "void(CPointer(voidptr))");
    expect_canonical("double(char, byte, short, ushort, intc, uintc, longlong, ulonglong)",
                     "float64(int8, uint8, int16, uint16, int32, uint32, int64, uint64)");
    expect_canonical("f2(i1,i2,i4,i8,u1,u2,u4,u8,float_,f8,intp,uintp)",
                     "float16(int8, int16, int32, int64, uint8, uint16, uint32, uint64, "
                     "float32, float64, intp, uintp)");
    expect_canonical(" int32 ( ) ", "int32()");
    expect_canonical("float32(float32,)", "float32(float32)");
}

Test(sig_format, behaves_like_snprintf)
{
    fdl_sig s = parse_ok("float32(float32, float32)");
    const char *want = "float32(float32, float32)";
    size_t n = strlen(want);
    cr_assert_eq(fdl_sig_format(&s, NULL, 0), n);
    char buf[64];
    memset(buf, 'x', sizeof buf);
    cr_assert_eq(fdl_sig_format(&s, buf, 0), n);
    cr_assert_eq(buf[0], 'x', "size 0 writes nothing");
    cr_assert_eq(fdl_sig_format(&s, buf, 1), n);
    cr_assert_str_eq(buf, "");
    cr_assert_eq(fdl_sig_format(&s, buf, 8), n);
    cr_assert_str_eq(buf, "float32");
    cr_assert_eq(fdl_sig_format(&s, buf, n), n);
    cr_assert_eq(strlen(buf), n - 1);
    cr_assert_eq(fdl_sig_format(&s, buf, n + 1), n);
    cr_assert_str_eq(buf, want);
    cr_assert_eq(fdl_sig_format(NULL, buf, sizeof buf), 0);
    cr_assert_str_eq(buf, "");
}

Test(sig_format, prints_single_types)
{
    char buf[128];
    cr_assert_eq(fdl_type_format(T(FDL_FLOAT32, 0), buf, sizeof buf), 7);
    cr_assert_str_eq(buf, "float32");
    fdl_type_format(T(FDL_VOID, 0), buf, sizeof buf);
    cr_assert_str_eq(buf, "void");
    fdl_type_format(T(FDL_VOID, 1), buf, sizeof buf);
    cr_assert_str_eq(buf, "voidptr");
    fdl_type_format(T(FDL_VOID, 3), buf, sizeof buf);
    cr_assert_str_eq(buf, "CPointer(CPointer(voidptr))");
    fdl_type_format(T(FDL_BOOL, 1), buf, sizeof buf);
    cr_assert_str_eq(buf, "CPointer(boolean)");
    size_t n = fdl_type_format(T(FDL_UINT16, 2), buf, 5);
    cr_assert_eq(n, strlen("CPointer(CPointer(uint16))"));
    cr_assert_str_eq(buf, "CPoi");
    cr_assert_eq(fdl_type_format(T(FDL_INT8, 0), NULL, 0), 4);
}

Test(sig_format, names_every_scalar)
{
    const char *want[FDL_SCALAR_COUNT] = {
        "void",   "boolean", "int8",  "int16",   "int32",   "int64",   "uint8",   "uint16",
        "uint32", "uint64",  "intp",  "uintp",   "float16", "float32", "float64",
    };
    for (int i = 0; i < FDL_SCALAR_COUNT; i++)
        cr_assert_str_eq(fdl_scalar_name((fdl_scalar)i), want[i]);
    cr_assert_str_eq(fdl_scalar_name(FDL_SCALAR_COUNT), "invalid");
    cr_assert_str_eq(fdl_scalar_name((fdl_scalar)-1), "invalid");
}

/* ------------------------------------------------------------------------------------------ */
/* Round trip                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static void round_trip(const char *text)
{
    fdl_sig a = parse_ok(text);
    char *canon = format_sig(&a);
    fdl_sig b = parse_ok(canon);
    cr_assert(fdl_sig_equal(&a, &b), "\"%s\" -> \"%s\" parses differently", text, canon);
    char *again = format_sig(&b);
    cr_assert_str_eq(again, canon, "formatting is not stable for \"%s\"", text);
    free(canon);
    free(again);
}

Test(sig_round_trip, holds_for_the_longest_canonical_forms)
{
    /*
     * Found with the fuzz harness's round-trip property: aliases are shorter than the canonical
     * names and commas need no space, so a signature within the length limit could print a
     * canonical form over it (4035 bytes printed as 4423 under the old limit of 4096) that
     * fdl_sig_parse then rejected.
     */
    static const char deep_b1[] = "CPointer(CPointer(CPointer(CPointer(CPointer(CPointer("
                                   "CPointer(CPointer(b1))))))))";
    char text[FDL_SIG_MAX_LENGTH + 1] = "b1(";
    for (int i = 0; i < FDL_SIG_MAX_PARAMS; i++) {
        if (i)
            strcat(text, ",");
        strcat(text, deep_b1);
    }
    strcat(text, ")");
    cr_assert_leq(strlen(text), (size_t)FDL_SIG_MAX_LENGTH);
    round_trip(text);
    /* every scalar name fits the bound the length limit was derived from */
    for (int i = 0; i < FDL_SCALAR_COUNT; i++)
        cr_assert_leq(strlen(fdl_scalar_name((fdl_scalar)i)), 7, "%s", fdl_scalar_name((fdl_scalar)i));
}

Test(sig_round_trip, holds_for_handwritten_signatures)
{
    const char *texts[] = {
        "float32(float32, float32)",
        "float32(CPointer(float32), int32)",
        "void(CPointer(int32))",
        "int32()",
        "void()",
        "voidptr(voidptr, CPointer(voidptr))",
        "float16(float16, CPointer(float16))",
        "CPointer(CPointer(boolean))(uint8, int8)",
        "intp(uintp, intp, CPointer(intp))",
        "f8(f4, f2, b1, i1, u8)",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        round_trip(texts[i]);
}

/* xorshift64*: a fixed sequence, so a failure reproduces */
static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (unsigned)((rng_state * 2685821657736338717u) >> 33) % n;
}

static void append(char *buf, size_t size, const char *s)
{
    size_t n = strlen(buf);
    cr_assert_lt(n + strlen(s), size, "generated text too long");
    memcpy(buf + n, s, strlen(s) + 1);
}

static void append_space(char *buf, size_t size)
{
    static const char *const spaces[] = {"", "", "", " ", "  ", "\t", "\n", " \r\n "};
    append(buf, size, spaces[rnd(8)]);
}

/* Write a random spelling of @t: aliases, CPointer(void) or voidptr, random whitespace. */
static void append_type(char *buf, size_t size, fdl_type t)
{
    unsigned depth = t.depth;
    const char *leaf = NULL;
    if (t.base == FDL_VOID && depth > 0 && rnd(2)) {
        leaf = "voidptr";
        depth--;
    } else if (t.base == FDL_VOID) {
        leaf = rnd(2) ? "void" : "none";
    } else {
        /* a random alias of the base */
        unsigned count = 0;
        for (size_t i = 0; i < NNAMES; i++)
            count += names[i].base == t.base && names[i].depth == 0;
        unsigned pick = rnd(count);
        for (size_t i = 0; i < NNAMES && !leaf; i++)
            if (names[i].base == t.base && names[i].depth == 0 && pick-- == 0)
                leaf = names[i].name;
    }
    for (unsigned i = 0; i < depth; i++) {
        append(buf, size, "CPointer");
        append_space(buf, size);
        append(buf, size, "(");
        append_space(buf, size);
    }
    append(buf, size, leaf);
    for (unsigned i = 0; i < depth; i++) {
        append_space(buf, size);
        append(buf, size, ")");
    }
}

static fdl_type random_type(int is_param)
{
    fdl_type t;
    t.base = (fdl_scalar)rnd(FDL_SCALAR_COUNT);
    t.depth = rnd(3) ? 0 : rnd(FDL_SIG_MAX_DEPTH + 1);
    if (is_param && t.base == FDL_VOID && t.depth == 0)
        t.depth = 1;
    return t;
}

Test(sig_round_trip, holds_for_generated_signatures)
{
    for (int iter = 0; iter < 3000; iter++) {
        fdl_sig want;
        memset(&want, 0, sizeof want);
        want.ret = random_type(0);
        want.nparams = rnd(iter % 10 == 0 ? FDL_SIG_MAX_PARAMS + 1 : 8);
        char text[FDL_SIG_MAX_LENGTH * 4] = "";
        append_space(text, sizeof text);
        append_type(text, sizeof text, want.ret);
        append_space(text, sizeof text);
        append(text, sizeof text, "(");
        for (size_t i = 0; i < want.nparams; i++) {
            want.params[i] = random_type(1);
            append_space(text, sizeof text);
            if (i)
                append(text, sizeof text, ",");
            append_space(text, sizeof text);
            append_type(text, sizeof text, want.params[i]);
        }
        append_space(text, sizeof text);
        append(text, sizeof text, ")");
        append_space(text, sizeof text);

        fdl_sig got;
        fdl_error err = FDL_ERROR_INIT;
        int rc = parse(&got, text, &err);
        if (strlen(text) > FDL_SIG_MAX_LENGTH) {
            cr_assert_eq(rc, FDL_ELIMIT, "iteration %d", iter);
            continue;
        }
        cr_assert_eq(rc, FDL_OK, "iteration %d: \"%s\": %s", iter, text, err.message);
        cr_assert(fdl_sig_equal(&got, &want), "iteration %d: \"%s\" parsed wrong", iter, text);
        round_trip(text);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Equality and sizes                                                                          */
/* ------------------------------------------------------------------------------------------ */

Test(sig_equal, compares_return_and_every_parameter)
{
    fdl_sig a = parse_ok("float32(float32, int32)");
    fdl_sig b = parse_ok("f4(f4, i4)");
    cr_assert(fdl_sig_equal(&a, &b));
    cr_assert(fdl_sig_equal(&a, &a));
    fdl_sig c = parse_ok("float32(float32, uint32)");
    cr_assert_not(fdl_sig_equal(&a, &c), "ABI-10: same width, different type");
    fdl_sig d = parse_ok("float32(float32)");
    cr_assert_not(fdl_sig_equal(&a, &d));
    fdl_sig e = parse_ok("int32(float32, int32)");
    cr_assert_not(fdl_sig_equal(&a, &e));
    fdl_sig f = parse_ok("float32(CPointer(float32), int32)");
    cr_assert_not(fdl_sig_equal(&a, &f));
    fdl_sig g = parse_ok("float32(float32, int64)");
    fdl_sig h = parse_ok("float32(float32, intp)");
    cr_assert_not(fdl_sig_equal(&g, &h), "intp is its own type, though 64-bit");
    cr_assert_not(fdl_sig_equal(&a, NULL));
    cr_assert_not(fdl_sig_equal(NULL, &a));
    cr_assert(fdl_sig_equal(NULL, NULL));
}

Test(sig_equal, ignores_parameters_past_nparams)
{
    fdl_sig a = parse_ok("void(int32)");
    fdl_sig b = a;
    b.params[5] = T(FDL_FLOAT64, 2);
    cr_assert(fdl_sig_equal(&a, &b));
}

Test(type_size, gives_device_sizes) /* ABI-5, ABI-12 */
{
    const size_t want[FDL_SCALAR_COUNT] = {0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 8, 8, 2, 4, 8};
    for (int i = 0; i < FDL_SCALAR_COUNT; i++) {
        cr_assert_eq(fdl_type_size(T((fdl_scalar)i, 0)), want[i], "%s",
                     fdl_scalar_name((fdl_scalar)i));
        cr_assert_eq(fdl_type_size(T((fdl_scalar)i, 1)), 8, "pointer to %s",
                     fdl_scalar_name((fdl_scalar)i));
    }
    cr_assert_eq(fdl_type_size(T(FDL_VOID, 1)), 8, "voidptr");
    cr_assert_eq(fdl_type_size(T(FDL_FLOAT16, 8)), 8);
    cr_assert_eq(fdl_type_size(T(FDL_SCALAR_COUNT, 0)), 0);
}
