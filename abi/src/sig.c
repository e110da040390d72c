/*
 * The signature language (abi/ABI.md, "Signatures"): Numba-style signature strings such as
 * `float32(CPointer(float32), int32)`, parsed into fdl_sig values and printed back canonically.
 *
 * The parser is a single left-to-right pass over a small token stream: linear in the input,
 * bounded in length, depth and parameter count, and it never reads past `len`.
 */
#include <stdio.h>
#include <string.h>

#include "fdlink/sig.h"
#include "internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Type names                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static const char *const scalar_names[FDL_SCALAR_COUNT] = {
    "void",   "boolean", "int8",   "int16", "int32",   "int64",   "uint8",   "uint16",
    "uint32", "uint64",  "intp",   "uintp", "float16", "float32", "float64",
};

/* Sizes in bytes on a CUDA device (ABI-12: 64-bit only, so intp and pointers are 8). */
static const unsigned char scalar_sizes[FDL_SCALAR_COUNT] = {
    0, 1, 1, 2, 4, 8, 1, 2, 4, 8, 8, 8, 2, 4, 8,
};

/*
 * Every name the parser accepts: the canonical names and the aliases that Numba itself defines
 * in numba.core.types with a width that does not depend on the host (char is int8 because Numba
 * derives it from np.byte; intc/uintc are 32-bit and longlong/ulonglong 64-bit on every platform
 * Numba supports). `none` is Numba's name for void.
 */
typedef struct type_name {
    const char *name;
    fdl_scalar base;
    unsigned depth;
} type_name;

#define T(name, base, depth) {name, base, depth}
static const type_name type_names[] = {
    T("void", FDL_VOID, 0),       T("none", FDL_VOID, 0),         T("voidptr", FDL_VOID, 1),
    T("boolean", FDL_BOOL, 0),    T("bool_", FDL_BOOL, 0),        T("b1", FDL_BOOL, 0),
    T("int8", FDL_INT8, 0),       T("i1", FDL_INT8, 0),           T("char", FDL_INT8, 0),
    T("int16", FDL_INT16, 0),     T("i2", FDL_INT16, 0),          T("short", FDL_INT16, 0),
    T("int32", FDL_INT32, 0),     T("i4", FDL_INT32, 0),          T("intc", FDL_INT32, 0),
    T("int64", FDL_INT64, 0),     T("i8", FDL_INT64, 0),          T("longlong", FDL_INT64, 0),
    T("uint8", FDL_UINT8, 0),     T("u1", FDL_UINT8, 0),          T("byte", FDL_UINT8, 0),
    T("uchar", FDL_UINT8, 0),     T("uint16", FDL_UINT16, 0),     T("u2", FDL_UINT16, 0),
    T("ushort", FDL_UINT16, 0),   T("uint32", FDL_UINT32, 0),     T("u4", FDL_UINT32, 0),
    T("uintc", FDL_UINT32, 0),    T("uint64", FDL_UINT64, 0),     T("u8", FDL_UINT64, 0),
    T("ulonglong", FDL_UINT64, 0), T("intp", FDL_INTP, 0),        T("uintp", FDL_UINTP, 0),
    T("float16", FDL_FLOAT16, 0), T("f2", FDL_FLOAT16, 0),        T("float32", FDL_FLOAT32, 0),
    T("f4", FDL_FLOAT32, 0),      T("float_", FDL_FLOAT32, 0),    T("float64", FDL_FLOAT64, 0),
    T("f8", FDL_FLOAT64, 0),      T("double", FDL_FLOAT64, 0),
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/*
 * The longest canonical type is the longest scalar name (7 bytes: "boolean", "float16") under
 * FDL_SIG_MAX_DEPTH levels of "CPointer(...)"; the longest signature has FDL_SIG_MAX_PARAMS + 1
 * of them, "(" and ")", and ", " between parameters. fdl_sig_format promises that its output
 * parses back, so the length limit must admit it.
 */
#define TYPE_TEXT_MAX (FDL_SIG_MAX_DEPTH * (sizeof "CPointer()" - 1) + sizeof "float16" - 1)
_Static_assert((FDL_SIG_MAX_PARAMS + 1) * TYPE_TEXT_MAX + 2 * FDL_SIG_MAX_PARAMS <=
                   FDL_SIG_MAX_LENGTH,
               "FDL_SIG_MAX_LENGTH is shorter than the longest canonical signature");

/* Names Numba defines that have no place in the foreign-function ABI, with the reason. */
typedef struct rejected_name {
    const char *name;
    const char *message;
} rejected_name;

static const rejected_name rejected_names[] = {
    {"complex64", "complex types are not supported by the foreign-function ABI"},
    {"complex128", "complex types are not supported by the foreign-function ABI"},
    {"c8", "complex types are not supported by the foreign-function ABI"},
    {"c16", "complex types are not supported by the foreign-function ABI"},
    {"int_", "'int_' has a width that depends on the host platform; write int32 or int64"},
    {"long_", "'long_' has a width that depends on the host platform; write int32 or int64"},
    {"uint", "'uint' has a width that depends on the host platform; write uint32 or uint64"},
    {"ulong", "'ulong' has a width that depends on the host platform; write uint32 or uint64"},
};

/* Names from C, CUDA and NumPy that people write by habit, with the type they most likely mean. */
static const type_name habit_names[] = {
    T("float", FDL_FLOAT32, 0),     T("half", FDL_FLOAT16, 0),     T("__half", FDL_FLOAT16, 0),
    T("int", FDL_INT32, 0),         T("unsigned", FDL_UINT32, 0),  T("long", FDL_INT64, 0),
    T("bool", FDL_BOOL, 0),         T("size_t", FDL_UINTP, 0),     T("ssize_t", FDL_INTP, 0),
    T("ptrdiff_t", FDL_INTP, 0),    T("int8_t", FDL_INT8, 0),      T("int16_t", FDL_INT16, 0),
    T("int32_t", FDL_INT32, 0),     T("int64_t", FDL_INT64, 0),    T("uint8_t", FDL_UINT8, 0),
    T("uint16_t", FDL_UINT16, 0),   T("uint32_t", FDL_UINT32, 0),  T("uint64_t", FDL_UINT64, 0),
    T("intptr_t", FDL_INTP, 0),     T("uintptr_t", FDL_UINTP, 0),
};
#undef T

static const char cpointer_name[] = "CPointer";

static int name_is(const char *s, size_t n, const char *name)
{
    return strlen(name) == n && memcmp(s, name, n) == 0;
}

/*
 * The accepted name s[0..n), or NULL: told apart by length, then compared whole (constant-length
 * compares, which the compiler inlines). Each entry is `type_names` at the index given.
 */
static const type_name *find_type_name(const char *s, size_t n)
{
#define IS(lit, i) if (memcmp(s, lit, sizeof lit - 1) == 0) return &type_names[i]
    switch (n) {
    case 2:
        IS("b1", 5);
        IS("i1", 7);
        IS("i2", 10);
        IS("i4", 13);
        IS("i8", 16);
        IS("u1", 19);
        IS("u2", 23);
        IS("u4", 26);
        IS("u8", 29);
        IS("f2", 34);
        IS("f4", 36);
        IS("f8", 39);
        return NULL;
    case 4:
        IS("void", 0);
        IS("none", 1);
        IS("int8", 6);
        IS("char", 8);
        IS("intc", 14);
        IS("byte", 20);
        IS("intp", 31);
        return NULL;
    case 5:
        IS("bool_", 4);
        IS("int16", 9);
        IS("short", 11);
        IS("int32", 12);
        IS("int64", 15);
        IS("uint8", 18);
        IS("uchar", 21);
        IS("uintc", 27);
        IS("uintp", 32);
        return NULL;
    case 6:
        IS("uint16", 22);
        IS("ushort", 24);
        IS("uint32", 25);
        IS("uint64", 28);
        IS("float_", 37);
        IS("double", 40);
        return NULL;
    case 7:
        IS("voidptr", 2);
        IS("boolean", 3);
        IS("float16", 33);
        IS("float32", 35);
        IS("float64", 38);
        return NULL;
    case 8:
        IS("longlong", 17);
        return NULL;
    case 9:
        IS("ulonglong", 30);
        return NULL;
    default:
        return NULL;
    }
#undef IS
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/*
 * Optimal string alignment distance (Levenshtein plus adjacent transposition), case-insensitive,
 * for short strings only (the caller bounds both lengths by SUGGEST_MAX).
 */
#define SUGGEST_MAX 24

static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
    size_t d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= na; i++) {
        for (size_t j = 1; j <= nb; j++) {
            size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
            size_t best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]) && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[na][nb];
}

/*
 * The name to suggest for an unknown identifier, or NULL. Habitual C names map to their Numba
 * type; otherwise the unique closest accepted name within two edits (ties suggest nothing).
 */
static const char *suggest(const char *s, size_t n)
{
    for (size_t i = 0; i < COUNT_OF(habit_names); i++)
        if (name_is(s, n, habit_names[i].name))
            return scalar_names[habit_names[i].base];
    if (n > SUGGEST_MAX)
        return NULL;
    const char *best = NULL;
    size_t best_d = 3;
    int tie = 0;
    for (size_t i = 0; i <= COUNT_OF(type_names); i++) {
        const char *cand = i < COUNT_OF(type_names) ? type_names[i].name : cpointer_name;
        size_t nc = strlen(cand);
        size_t dist = edit_distance(s, n, cand, nc);
        /* A one- or two-letter alias is never worth suggesting for a different word. */
        if (dist >= nc)
            continue;
        if (dist < best_d) {
            best = cand;
            best_d = dist;
            tie = 0;
        } else if (dist == best_d) {
            tie = 1;
        }
    }
    return tie ? NULL : best;
}

const char *fdl_scalar_name(fdl_scalar s)
{
    if ((unsigned)s >= FDL_SCALAR_COUNT)
        return "invalid";
    return scalar_names[s];
}

size_t fdl_type_size(fdl_type type)
{
    if (type.depth > 0)
        return 8; /* ABI-12: every pointer is 64-bit */
    if ((unsigned)type.base >= FDL_SCALAR_COUNT)
        return 0;
    return scalar_sizes[type.base];
}

/* ------------------------------------------------------------------------------------------ */
/* Formatting                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* snprintf-style accumulator: counts everything, stores what fits, always NUL-terminates. */
typedef struct writer {
    char *buf;
    size_t size;
    size_t n;
} writer;

static void put(writer *w, const char *s)
{
    size_t len = strlen(s);
    if (w->size && w->n < w->size - 1) {
        size_t room = w->size - 1 - w->n;
        size_t k = len < room ? len : room;
        memcpy(w->buf + w->n, s, k);
    }
    w->n += len;
    if (w->size)
        w->buf[w->n < w->size ? w->n : w->size - 1] = '\0';
}

static void put_type(writer *w, fdl_type t)
{
    unsigned depth = t.depth;
    /* A pointer to void is voidptr: one level of the depth is spent on it. */
    int voidptr = t.base == FDL_VOID && depth > 0;
    if (voidptr)
        depth--;
    for (unsigned i = 0; i < depth; i++)
        put(w, "CPointer(");
    put(w, voidptr ? "voidptr" : fdl_scalar_name(t.base));
    for (unsigned i = 0; i < depth; i++)
        put(w, ")");
}

size_t fdl_type_format(fdl_type type, char *buf, size_t size)
{
    writer w = {buf, buf ? size : 0, 0};
    if (w.size)
        buf[0] = '\0';
    put_type(&w, type);
    return w.n;
}

size_t fdl_sig_format(const fdl_sig *sig, char *buf, size_t size)
{
    writer w = {buf, buf ? size : 0, 0};
    if (w.size)
        buf[0] = '\0';
    if (!sig)
        return 0;
    put_type(&w, sig->ret);
    put(&w, "(");
    size_t n = sig->nparams <= FDL_SIG_MAX_PARAMS ? sig->nparams : FDL_SIG_MAX_PARAMS;
    for (size_t i = 0; i < n; i++) {
        if (i)
            put(&w, ", ");
        put_type(&w, sig->params[i]);
    }
    put(&w, ")");
    return w.n;
}

static int type_equal(fdl_type a, fdl_type b)
{
    return a.base == b.base && a.depth == b.depth;
}

int fdl_sig_equal(const fdl_sig *a, const fdl_sig *b)
{
    if (a == b)
        return 1;
    if (!a || !b || a->nparams != b->nparams || a->nparams > FDL_SIG_MAX_PARAMS)
        return 0;
    if (!type_equal(a->ret, b->ret))
        return 0;
    for (size_t i = 0; i < a->nparams; i++)
        if (!type_equal(a->params[i], b->params[i]))
            return 0;
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing                                                                                     */
/* ------------------------------------------------------------------------------------------ */

typedef enum tok_kind {
    TOK_END,    /* end of the text */
    TOK_IDENT,  /* [A-Za-z_][A-Za-z0-9_]* */
    TOK_NUMBER, /* [0-9][A-Za-z0-9_]* */
    TOK_PUNCT,  /* one printable ASCII character that is not part of a word */
    TOK_BYTE    /* a control character or a non-ASCII byte */
} tok_kind;

typedef struct token {
    tok_kind kind;
    size_t pos; /* byte offset in the text */
    size_t len;
} token;

typedef struct parser {
    const char *s;
    size_t len;
    size_t pos;
    token tok;
    fdl_error *err;
} parser;

/* Longest piece of input quoted back in a message. */
#define QUOTE_MAX 64

static void next(parser *p)
{
    while (p->pos < p->len && fdl__is_space((unsigned char)p->s[p->pos]))
        p->pos++;
    token t = {TOK_END, p->pos, 0};
    if (p->pos < p->len) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (fdl__is_ident_char(c)) {
            t.kind = c >= '0' && c <= '9' ? TOK_NUMBER : TOK_IDENT;
            size_t end = p->pos;
            while (end < p->len && fdl__is_ident_char((unsigned char)p->s[end]))
                end++;
            t.len = end - p->pos;
        } else {
            t.kind = c > 0x20 && c < 0x7f ? TOK_PUNCT : TOK_BYTE;
            t.len = 1;
        }
    }
    p->pos = t.pos + t.len;
    p->tok = t;
}

static int is_punct(const parser *p, char c)
{
    return p->tok.kind == TOK_PUNCT && p->s[p->tok.pos] == c;
}

static int fail_at(parser *p, int code, size_t pos, const char *fmt, ...) FDL__PRINTF(4, 5);

static int fail_at(parser *p, int code, size_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    /* Columns are 1-based; the text is at most FDL_SIG_MAX_LENGTH bytes, so this fits. */
    fdl__verror(p->err, code, NULL, 0, (unsigned)(pos + 1), NULL, fmt, ap);
    va_end(ap);
    return code;
}

/*
 * Report that the current token is not what the grammar needs. A stray control character or
 * non-ASCII byte is named as such, since "expected a type" would hide the real problem.
 */
static int fail_expected(parser *p, const char *what)
{
    if (p->tok.kind == TOK_BYTE)
        return fail_at(p, FDL_EPARSE, p->tok.pos, "unexpected byte 0x%02x",
                       (unsigned)(unsigned char)p->s[p->tok.pos]);
    return fail_at(p, FDL_EPARSE, p->tok.pos, "%s", what);
}

static int fail_unknown(parser *p, const token *t)
{
    const char *s = p->s + t->pos;
    int n = (int)(t->len < QUOTE_MAX ? t->len : QUOTE_MAX);
    const char *more = t->len > QUOTE_MAX ? "..." : "";
    for (size_t i = 0; i < COUNT_OF(rejected_names); i++)
        if (name_is(s, t->len, rejected_names[i].name))
            return fail_at(p, FDL_EPARSE, t->pos, "%s", rejected_names[i].message);
    const char *hint = suggest(s, t->len);
    if (hint)
        return fail_at(p, FDL_EPARSE, t->pos, "unknown type '%.*s%s' (did you mean %s?)", n, s,
                       more, hint);
    return fail_at(p, FDL_EPARSE, t->pos, "unknown type '%.*s%s'", n, s, more);
}

/*
 * After a type (or the scalar inside CPointer), catch the two ways people write pointers and
 * arrays in other languages and say what to write instead.
 */
static int check_suffix(parser *p, fdl_type written)
{
    if (!is_punct(p, '[') && !is_punct(p, '*'))
        return FDL_OK;
    char elem[96];
    fdl_type_format(written, elem, sizeof elem);
    if (is_punct(p, '['))
        return fail_at(p, FDL_EPARSE, p->tok.pos,
                       "arrays are not passed to foreign functions; write CPointer(%s)", elem);
    return fail_at(p, FDL_EPARSE, p->tok.pos, "pointers are written CPointer(%s), not %s *",
                   elem, elem);
}

/*
 * type := 'CPointer' '(' type ')' | name
 * Nesting is counted rather than recursed, so depth costs no stack. @index is the 1-based
 * parameter number, 0 for the return type.
 */
static int parse_type(parser *p, fdl_type *out, size_t index)
{
    unsigned opened = 0;
    while (p->tok.kind == TOK_IDENT && p->tok.len == sizeof cpointer_name - 1 &&
           memcmp(p->s + p->tok.pos, cpointer_name, sizeof cpointer_name - 1) == 0) {
        if (opened == FDL_SIG_MAX_DEPTH)
            return fail_at(p, FDL_ELIMIT, p->tok.pos,
                           "pointer nesting too deep: at most %d levels of CPointer "
                           "(FDL_SIG_MAX_DEPTH)",
                           FDL_SIG_MAX_DEPTH);
        opened++;
        next(p);
        if (!is_punct(p, '('))
            return fail_expected(p, "expected '(' after CPointer");
        next(p);
        if (p->tok.kind != TOK_IDENT)
            return fail_expected(p, "expected a type inside CPointer(...)");
    }
    if (p->tok.kind != TOK_IDENT) {
        char what[64];
        if (index)
            snprintf(what, sizeof what, "expected a type for parameter %zu", index);
        else
            snprintf(what, sizeof what, "expected the return type");
        return fail_expected(p, what);
    }

    token name = p->tok;
    const type_name *tn = find_type_name(p->s + name.pos, name.len);
    if (!tn)
        return fail_unknown(p, &name);
    if (opened + tn->depth > FDL_SIG_MAX_DEPTH)
        return fail_at(p, FDL_ELIMIT, name.pos,
                       "pointer nesting too deep: at most %d levels of CPointer "
                       "(FDL_SIG_MAX_DEPTH)",
                       FDL_SIG_MAX_DEPTH);
    fdl_type t = {tn->base, tn->depth};
    next(p);
    int rc = check_suffix(p, t);
    if (rc != FDL_OK)
        return rc;

    for (unsigned i = 0; i < opened; i++) {
        if (is_punct(p, ','))
            return fail_at(p, FDL_EPARSE, p->tok.pos,
                           "CPointer takes one type (address spaces are not supported)");
        if (!is_punct(p, ')'))
            return fail_expected(p, "expected ')' to close CPointer(");
        next(p);
        t.depth++;
        rc = check_suffix(p, t);
        if (rc != FDL_OK)
            return rc;
    }
    /* ABI-4: void is a return type only; a pointer to void (voidptr) may go anywhere. */
    if (index && t.base == FDL_VOID && t.depth == 0)
        return fail_at(p, FDL_EPARSE, name.pos,
                       "parameter %zu cannot be void (void is only a return type; write voidptr "
                       "for an untyped pointer)",
                       index);
    *out = t;
    return FDL_OK;
}

int fdl_sig_parse(fdl_sig *out, const char *text, size_t len, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_sig_parse: out is NULL");
    memset(out, 0, sizeof *out);
    if (!FDL__CHECK_ARG(text != NULL || len == 0))
        return fdl__fail(err, FDL_EINVAL, "fdl_sig_parse: text is NULL");
    parser p = {text, len, 0, {TOK_END, 0, 0}, err};
    if (len > FDL_SIG_MAX_LENGTH)
        return fail_at(&p, FDL_ELIMIT, FDL_SIG_MAX_LENGTH,
                       "signature too long: %zu bytes, at most %d (FDL_SIG_MAX_LENGTH)", len,
                       FDL_SIG_MAX_LENGTH);

    fdl_sig sig; /* ret and nparams set here, params[i] before nparams passes i */
    sig.ret.base = FDL_VOID;
    sig.ret.depth = 0;
    sig.nparams = 0;
    next(&p);
    if (p.tok.kind == TOK_END)
        return fail_at(&p, FDL_EPARSE, p.tok.pos, "empty signature");
    if (is_punct(&p, '('))
        return fail_at(&p, FDL_EPARSE, p.tok.pos,
                       "missing return type: write e.g. void(...) or float32(...)");
    int rc = parse_type(&p, &sig.ret, 0);
    if (rc != FDL_OK)
        return rc;
    if (!is_punct(&p, '('))
        return fail_expected(&p, "expected '(' after the return type");
    next(&p);

    if (is_punct(&p, ')')) {
        next(&p);
    } else {
        for (;;) {
            if (sig.nparams == FDL_SIG_MAX_PARAMS)
                return fail_at(&p, FDL_ELIMIT, p.tok.pos,
                               "too many parameters: at most %d (FDL_SIG_MAX_PARAMS)",
                               FDL_SIG_MAX_PARAMS);
            rc = parse_type(&p, &sig.params[sig.nparams], sig.nparams + 1);
            if (rc != FDL_OK)
                return rc;
            sig.nparams++;
            if (is_punct(&p, ')')) {
                next(&p);
                break;
            }
            if (!is_punct(&p, ',')) {
                char what[64];
                snprintf(what, sizeof what, "expected ',' or ')' after parameter %zu",
                         sig.nparams);
                return fail_expected(&p, what);
            }
            next(&p);
            /* A trailing comma is valid Python, so Numba accepts it: float32(float32,) */
            if (is_punct(&p, ')')) {
                next(&p);
                break;
            }
        }
    }

    if (p.tok.kind == TOK_IDENT || p.tok.kind == TOK_NUMBER) {
        int n = (int)(p.tok.len < QUOTE_MAX ? p.tok.len : QUOTE_MAX);
        return fail_at(&p, FDL_EPARSE, p.tok.pos, "unexpected '%.*s%s' after the signature", n,
                       p.s + p.tok.pos, p.tok.len > QUOTE_MAX ? "..." : "");
    }
    if (p.tok.kind == TOK_PUNCT)
        return fail_at(&p, FDL_EPARSE, p.tok.pos, "unexpected '%c' after the signature",
                       p.s[p.tok.pos]);
    if (p.tok.kind != TOK_END)
        return fail_expected(&p, "");
    /* *out is all zero: copy what was parsed, not the whole array */
    out->ret = sig.ret;
    out->nparams = sig.nparams;
    memcpy(out->params, sig.params, sig.nparams * sizeof sig.params[0]);
    return FDL_OK;
}
