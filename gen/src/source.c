/*
 * The generated sources (see fdlink/gen.h): argument lists and types parsed, and the CUDA C of
 * maps, elementwise kernels and reductions written. Pure text: nothing here needs CUDA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_internal.h"
#include "genint.h"

void fdl__gen_kernel_free(fdl__gen_kernel *k)
{
    if (k)
        fdl__buf_free(&k->source);
}

/* C spellings of the scalars other than C's integer types (LP64, as on every CUDA host). */
typedef struct c_name {
    const char *name;
    fdl_scalar s;
} c_name;

static const c_name c_names[] = {
    {"float", FDL_FLOAT32},
    {"double", FDL_FLOAT64},
    {"__half", FDL_FLOAT16},
    {"half", FDL_FLOAT16},
    {"bool", FDL_BOOL},
    {"int8_t", FDL_INT8},
    {"int16_t", FDL_INT16},
    {"int32_t", FDL_INT32},
    {"int64_t", FDL_INT64},
    {"uint8_t", FDL_UINT8},
    {"uint16_t", FDL_UINT16},
    {"uint32_t", FDL_UINT32},
    {"uint64_t", FDL_UINT64},
    {"size_t", FDL_UINTP},
    {"ssize_t", FDL_INTP},
    {"ptrdiff_t", FDL_INTP},
    {"intptr_t", FDL_INTP},
    {"uintptr_t", FDL_UINTP},
    {"void", FDL_VOID},
};

/*
 * C's integer types (C11 6.7.2: the specifiers signed, unsigned, char, short, int and long in any
 * order; `signed` or `unsigned` alone is an int), LP64: long is 64-bit. Plain char is int8, as in
 * the signature language (Numba's char): the generated source writes it `signed char`. 1 with
 * *out set; 0 when @words (one space apart) are not such a type.
 */
static int c_integer(const char *words, fdl_scalar *out)
{
    static const char *const spec[] = {"signed", "unsigned", "char", "short", "int", "long"};
    unsigned n[6] = {0};
    for (const char *p = words; *p;) {
        const char *e = strchr(p, ' ');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        size_t k = 0;
        while (k < 6 && !(strlen(spec[k]) == len && memcmp(p, spec[k], len) == 0))
            k++;
        if (k == 6)
            return 0;
        n[k]++;
        p += len + (e != NULL);
    }
    unsigned sign = n[0], usign = n[1], chr = n[2], shrt = n[3], in = n[4], lng = n[5];
    if (sign + usign > 1 || chr > 1 || shrt > 1 || in > 1 || lng > 2 ||
        chr + shrt + (lng > 0) > 1 || (chr && in))
        return 0;
    if (chr)
        *out = usign ? FDL_UINT8 : FDL_INT8;
    else if (shrt)
        *out = usign ? FDL_UINT16 : FDL_INT16;
    else if (lng)
        *out = usign ? FDL_UINT64 : FDL_INT64;
    else
        *out = usign ? FDL_UINT32 : FDL_INT32;
    return 1;
}

int fdl__gen_parse_type(fdl_type *out, const char *text, size_t len, const char *what,
                        unsigned column, fdl_error *err)
{
    char words[128];
    size_t w = 0;
    out->base = FDL_VOID;
    out->depth = 0;
    /* the words, one space apart */
    for (size_t i = 0; i < len;) {
        while (i < len && fdl__is_space((unsigned char)text[i]))
            i++;
        size_t start = i;
        while (i < len && !fdl__is_space((unsigned char)text[i]))
            i++;
        if (i == start)
            break;
        if (w + (i - start) + 2 > sizeof words)
            return fdl__error(err, FDL_ELIMIT, what, 1, column, NULL, "type is too long");
        if (w)
            words[w++] = ' ';
        memcpy(words + w, text + start, i - start);
        w += i - start;
    }
    words[w] = '\0';
    if (!w)
        return fdl__error(err, FDL_EPARSE, what, 1, column, NULL, "a type is missing");
    for (size_t i = 0; i < sizeof c_names / sizeof c_names[0]; i++)
        if (strcmp(words, c_names[i].name) == 0) {
            out->base = c_names[i].s;
            return FDL_OK;
        }
    if (c_integer(words, &out->base))
        return FDL_OK;
    /* CPointer(T): a pointer to T, T in either vocabulary (CPointer(float) as CPointer(float32)) */
    size_t open = sizeof "CPointer" - 1;
    if (w > open && memcmp(words, "CPointer", open) == 0) {
        open += words[open] == ' ';
        if (words[open] == '(' && words[w - 1] == ')') {
            int rc = fdl__gen_parse_type(out, words + open + 1, w - open - 2, what, column, err);
            if (rc != FDL_OK)
                return rc;
            if (out->depth >= FDL_SIG_MAX_DEPTH)
                return fdl__error(err, FDL_ELIMIT, what, 1, column, NULL,
                                  "pointers nested deeper than %d", FDL_SIG_MAX_DEPTH);
            out->depth++;
            return FDL_OK;
        }
    }
    /* the signature language's names: float32, int64, b1, longlong, voidptr, ... */
    char sig[sizeof words + 4];
    snprintf(sig, sizeof sig, "%s()", words);
    fdl_sig s;
    fdl_error inner = FDL_ERROR_INIT;
    if (fdl_sig_parse(&s, sig, strlen(sig), &inner) != FDL_OK) {
        char q[80];
        return fdl__error(err, FDL_EPARSE, what, 1, column, NULL,
                          "unknown type '%s' (write a C type such as float or unsigned int, or "
                          "one of the signature language's: float32, int64, CPointer(float32))",
                          fdl__quote(q, sizeof q, words, w, 64));
    }
    *out = s.ret;
    return FDL_OK;
}

/* What split_type found wrong, at the offset it gives. */
enum { TYPE_OK, TYPE_WORD_AFTER_STAR, TYPE_TOO_LONG, TYPE_UNEXPECTED };

/*
 * The words of a parameter's type, text[0..len): `const` (noted in *is_const) and `__restrict__`
 * dropped, CPointer(...) kept whole, each `*` counted in *stars; into type[0..cap), one space
 * apart, its length in *n. TYPE_OK, or what is wrong with *at its offset.
 */
static int split_type(const char *text, size_t len, char *type, size_t cap, size_t *n,
                      unsigned *stars, int *is_const, size_t *at)
{
    size_t t = 0;
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)text[i];
        if (c == '*') {
            ++*stars;
            i++;
            continue;
        }
        if (fdl__is_ident_start(c)) {
            size_t ws = i;
            while (i < len && fdl__is_ident_char((unsigned char)text[i]))
                i++;
            if ((i - ws == 5 && memcmp(text + ws, "const", 5) == 0) ||
                (i - ws == 12 && memcmp(text + ws, "__restrict__", 12) == 0)) {
                *is_const |= text[ws] == 'c';
                continue;
            }
            *at = ws;
            if (*stars)
                return TYPE_WORD_AFTER_STAR;
            if (t + (i - ws) + 2 > cap)
                return TYPE_TOO_LONG;
            if (t)
                type[t++] = ' ';
            memcpy(type + t, text + ws, i - ws);
            t += i - ws;
            /* CPointer(...) keeps its parentheses */
            if (i < len && text[i] == '(') {
                size_t ps = i;
                int depth = 0;
                for (; i < len; i++) {
                    depth += text[i] == '(';
                    depth -= text[i] == ')';
                    if (!depth) {
                        i++;
                        break;
                    }
                }
                if (t + (i - ps) + 1 > cap)
                    return TYPE_TOO_LONG;
                memcpy(type + t, text + ps, i - ps);
                t += i - ps;
            }
            continue;
        }
        if (fdl__is_space(c)) {
            i++;
            continue;
        }
        *at = i;
        return TYPE_UNEXPECTED;
    }
    *n = t;
    return TYPE_OK;
}

int fdl_gen_parse_type(fdl_type *out, const char *text, size_t len, fdl_error *err)
{
    const char *what = "type";
    if (!out || (!text && len))
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, NULL, "fdl_gen_parse_type: NULL argument");
    if (len > FDL_SIG_MAX_LENGTH)
        return fdl__error(err, FDL_ELIMIT, what, 1, 1, NULL, "type is too long");
    char type[160];
    size_t t = 0, at = 0;
    unsigned stars = 0;
    int is_const = 0;
    switch (split_type(text, len, type, sizeof type, &t, &stars, &is_const, &at)) {
    case TYPE_WORD_AFTER_STAR:
        return fdl__error(err, FDL_EPARSE, what, 1, (unsigned)at + 1, NULL,
                          "a type word after '*'");
    case TYPE_TOO_LONG:
        return fdl__error(err, FDL_ELIMIT, what, 1, 1, NULL, "type is too long");
    case TYPE_UNEXPECTED: {
        unsigned char c = (unsigned char)text[at];
        return c > 0x20 && c < 0x7f
                   ? fdl__error(err, FDL_EPARSE, what, 1, (unsigned)at + 1, NULL,
                                "unexpected '%c'", c)
                   : fdl__error(err, FDL_EPARSE, what, 1, (unsigned)at + 1, NULL,
                                "unexpected byte 0x%02x", (unsigned)c);
    }
    default:
        break;
    }
    int rc = fdl__gen_parse_type(out, type, t, what, 1, err);
    if (rc != FDL_OK)
        return rc;
    if (stars > FDL_SIG_MAX_DEPTH - out->depth)
        return fdl__error(err, FDL_ELIMIT, what, 1, 1, NULL, "pointers nested deeper than %d",
                          FDL_SIG_MAX_DEPTH);
    out->depth += stars;
    return FDL_OK;
}

int fdl__gen_parse_arguments(fdl__gen_kernel *k, const char *arguments, fdl_error *err)
{
    const char *what = "arguments";
    k->nparams = 0;
    size_t len = strlen(arguments);
    size_t pos = 0;
    int only_space = 1;
    for (size_t i = 0; i < len; i++)
        only_space &= fdl__is_space((unsigned char)arguments[i]);
    if (only_space)
        return FDL_OK;
    while (pos <= len) {
        size_t end = pos;
        int parens = 0;
        while (end < len && (arguments[end] != ',' || parens)) {
            parens += arguments[end] == '(';
            parens -= arguments[end] == ')';
            end++;
        }
        unsigned column = (unsigned)pos + 1;
        /* the name: the last identifier */
        size_t e = end;
        while (e > pos && fdl__is_space((unsigned char)arguments[e - 1]))
            e--;
        size_t s = e;
        while (s > pos && fdl__is_ident_char((unsigned char)arguments[s - 1]))
            s--;
        if (s == e || !fdl__is_ident_start((unsigned char)arguments[s]))
            return fdl__error(err, FDL_EPARSE, what, 1, (unsigned)e + 1, NULL,
                              "argument %zu has no name (write `type name` or `type *name`)",
                              k->nparams + 1);
        if (e - s >= FDL__GEN_NAME_MAX)
            return fdl__error(err, FDL_ELIMIT, what, 1, (unsigned)s + 1, NULL,
                              "argument name longer than %d bytes", FDL__GEN_NAME_MAX - 1);
        if (k->nparams >= FDL_SIG_MAX_PARAMS)
            return fdl__error(err, FDL_ELIMIT, what, 1, column, NULL,
                              "more than %d arguments", FDL_SIG_MAX_PARAMS);
        fdl__gen_param *p = &k->params[k->nparams];
        memset(p, 0, sizeof *p);
        memcpy(p->name, arguments + s, e - s);
        if (strncmp(p->name, "fdl_", 4) == 0 || strcmp(p->name, "i") == 0 ||
            strcmp(p->name, "n") == 0)
            return fdl__error(err, FDL_EPARSE, what, 1, (unsigned)s + 1, p->name,
                              "argument name '%s' is reserved (i and n are the index and the "
                              "count; fdl_ is fdlink's prefix)", p->name);
        for (size_t j = 0; j < k->nparams; j++)
            if (strcmp(k->params[j].name, p->name) == 0)
                return fdl__error(err, FDL_EPARSE, what, 1, (unsigned)s + 1, p->name,
                                  "argument '%s' named twice", p->name);
        /* the type: words and stars before the name, `const` noted and dropped */
        char type[160];
        size_t t = 0, at = 0;
        unsigned stars = 0;
        int is_const = 0;
        switch (split_type(arguments + pos, s - pos, type, sizeof type, &t, &stars, &is_const,
                           &at)) {
        case TYPE_WORD_AFTER_STAR:
            return fdl__error(err, FDL_EPARSE, what, 1, (unsigned)(pos + at) + 1, p->name,
                              "argument '%s': a type word after '*'", p->name);
        case TYPE_TOO_LONG:
            return fdl__error(err, FDL_ELIMIT, what, 1, column, p->name,
                              "argument '%s': type too long", p->name);
        case TYPE_UNEXPECTED:
            return fdl__error(err, FDL_EPARSE, what, 1, (unsigned)(pos + at) + 1, p->name,
                              "argument '%s': unexpected '%c'", p->name, arguments[pos + at]);
        default:
            break;
        }
        p->is_const |= is_const;
        int rc = fdl__gen_parse_type(&p->type, type, t, what, column, err);
        if (rc != FDL_OK)
            return rc;
        if (p->type.base == FDL_VOID && p->type.depth == 0 && stars == 0)
            return fdl__error(err, FDL_EPARSE, what, 1, column, p->name,
                              "argument '%s' is void", p->name);
        if (stars) {
            p->array = 1;
            p->type.depth += stars - 1;
        }
        if (p->type.depth > FDL_SIG_MAX_DEPTH)
            return fdl__error(err, FDL_ELIMIT, what, 1, column, p->name,
                              "argument '%s': pointers nested deeper than %d", p->name,
                              FDL_SIG_MAX_DEPTH);
        k->nparams++;
        pos = end + 1;
    }
    return FDL_OK;
}

/* `float *name`, `unsigned int name`, `void **name` (an array adds one level). */
static void put_decl(fdl__buf *b, fdl_type t, int array, int is_const, int restrict_,
                     const char *name)
{
    /* const applies to the elements: `const float *x`, `unsigned short **const *x` */
    if (is_const && !t.depth)
        fdl__buf_puts(b, "const ");
    fdl__buf_puts(b, fdl__abi_c_type(t.base));
    fdl__buf_puts(b, " ");
    for (unsigned i = 0; i < t.depth; i++)
        fdl__buf_puts(b, "*");
    if (is_const && t.depth)
        fdl__buf_puts(b, "const ");
    if (array)
        fdl__buf_puts(b, restrict_ ? "*__restrict__ " : "*");
    fdl__buf_puts(b, name);
}

/* The C type of a value of @t (`float`, `int *`). */
static void put_type(fdl__buf *b, fdl_type t)
{
    fdl__buf_puts(b, fdl__abi_c_type(t.base));
    if (t.depth) {
        fdl__buf_puts(b, " ");
        for (unsigned i = 0; i < t.depth; i++)
            fdl__buf_puts(b, "*");
    }
}

static int uses_half(const fdl__gen_kernel *k, fdl_type extra)
{
    int half = extra.base == FDL_FLOAT16;
    for (size_t i = 0; i < k->nparams; i++)
        half |= k->params[i].type.base == FDL_FLOAT16;
    return half;
}

/*
 * What every generated kernel shares, after fdlink/device.h: the failure record of a launch
 * (lowest failing index, its status and function, the count), FDL_MAP_CALL, vectors.
 */
static const char common_text[] =
    "/*\n"
    " * The lowest index whose call failed since the host last read the record: updated under\n"
    " * a lock (only failing calls take it; Volta and later schedule each thread independently,\n"
    " * so lanes of one warp waiting on each other make progress). Read by fdl_map_check.\n"
    " */\n"
    "struct fdl_gen_fail {\n"
    "    unsigned int lock;\n"
    "    int status;\n"
    "    unsigned long long index; /* ~0: none */\n"
    "    unsigned long long failures;\n"
    "    char function[64];\n"
    "};\n"
    "static_assert(sizeof(fdl_gen_fail) == 88, \"the host reads 88 bytes\");\n"
    "\n"
    "__device__ __noinline__ void fdl_gen_failed(fdl_gen_fail *f, unsigned long long i,\n"
    "                                            const char *function, int status)\n"
    "{\n"
    "    atomicAdd(&f->failures, 1ull);\n"
    "    if (i >= ((volatile fdl_gen_fail *)f)->index)\n"
    "        return; /* a lower index failed already: no need to wait for the lock */\n"
    "    while (atomicCAS(&f->lock, 0u, 1u) != 0u) {\n"
    "    }\n"
    "    __threadfence();\n"
    "    volatile fdl_gen_fail *v = f;\n"
    "    if (i < v->index) {\n"
    "        v->index = i;\n"
    "        v->status = status;\n"
    "        unsigned int j = 0;\n"
    "        for (; function && function[j] && j + 1 < 64; j++)\n"
    "            v->function[j] = function[j];\n"
    "        v->function[j] = '\\0';\n"
    "    }\n"
    "    __threadfence();\n"
    "    atomicExch(&f->lock, 0u);\n"
    "}\n"
    "\n"
    "/* Pass a status through, noting index i when it is not 0. */\n"
    "__device__ __forceinline__ int fdl_gen_note(fdl_gen_fail *f, unsigned long long i,\n"
    "                                            const char *function, int status)\n"
    "{\n"
    "    if (__builtin_expect(status != 0, 0))\n"
    "        fdl_gen_failed(f, i, function, status);\n"
    "    return status;\n"
    "}\n"
    "\n"
    "/* FDL_CALL, and the lowest failing index i for the host (fdl_map_check). */\n"
    "#define FDL_MAP_CALL(fn, ...) fdl_gen_note(fdl_fail, i, #fn, FDL_CALL(fn, __VA_ARGS__))\n"
    "\n"
    "/* K elements moved as one access of K * sizeof(T) bytes (16 at most). */\n"
    "template <typename T, int K> struct __align__(sizeof(T) * K) fdl_vec {\n"
    "    T e[K];\n"
    "};\n";

static void put_prelude(fdl__buf *b, fdl__gen_kernel *k, int half)
{
    fdl__buf_puts(b, fdl__gen_device_h);
    fdl__buf_puts(b, "\n" FDL__GEN_MARK);
    /* NVRTC's messages count the generated part's lines, whatever device.h holds */
    fdl__buf_printf(b, "#line 1 \"%s.cu\"\n", k->kernel);
    k->body = b->len;
    if (half)
        fdl__buf_puts(b, "#include <cuda_fp16.h>\n");
    fdl__buf_puts(b, common_text);
}

/* A one-line comment: prefix, then s (control characters as spaces, no comment end inside). */
static void put_comment(fdl__buf *b, const char *prefix, const char *s)
{
    fdl__buf_puts(b, prefix);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char o = c < 0x20 || c == 0x7f ? ' ' : (char)c;
        if (c == '*' && s[1] == '/')
            o = '?';
        fdl__buf_append(b, &o, 1);
    }
    fdl__buf_puts(b, " */\n");
}

/*
 * User text (an operation, an expression) under `#line 1 "tag"`, so that NVRTC's errors point
 * into it, then back to the generated file's own line numbers.
 */
static void put_user(fdl__buf *b, const fdl__gen_kernel *k, const char *tag, const char *text)
{
    fdl__buf_printf(b, "#line 1 \"%s\"\n", tag);
    fdl__buf_puts(b, text);
    size_t lines = 1;
    for (size_t i = k->body; b->data && i < b->len; i++)
        lines += b->data[i] == '\n';
    /* `lines` is the user text's last line; then the directive's line; then the next one */
    fdl__buf_printf(b, "\n#line %zu \"%s.cu\"\n", lines + 2, k->kernel);
}

static size_t elem_size(fdl_type t)
{
    return fdl_type_size(t);
}

int fdl__gen_map_source(fdl__gen_kernel *k, const fdl_decl *d, const char *modes,
                        fdl_error *err)
{
    const fdl_sig *sig = &d->sig;
    if (sig->ret.base == FDL_VOID && sig->ret.depth == 0)
        return fdl__error(err, FDL_EINVAL, d->source, d->line, d->column, d->name,
                          "map over '%s': it returns void, so there is no result to map into "
                          "an output array (write an elementwise expression that calls it)",
                          d->name);
    if (modes && strlen(modes) != sig->nparams)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, d->name,
                          "map over '%s': modes \"%s\" give %zu parameters, but it takes %zu "
                          "(one 'a' or 's' each)", d->name, modes, strlen(modes), sig->nparams);
    for (size_t j = 0; modes && j < sig->nparams; j++)
        if (modes[j] != 'a' && modes[j] != 's')
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, d->name,
                              "map over '%s': mode '%c' of parameter %zu is neither 'a' (an "
                              "array) nor 's' (a scalar)", d->name, modes[j], j + 1);
    /* the launch's arguments: out, then the parameters */
    k->nparams = sig->nparams + 1;
    memset(&k->params[0], 0, sizeof k->params[0]);
    fdl__strlcpy(k->params[0].name, "out", FDL__GEN_NAME_MAX);
    k->params[0].type = sig->ret;
    k->params[0].array = 1;
    size_t largest = elem_size(sig->ret);
    for (size_t j = 0; j < sig->nparams; j++) {
        fdl__gen_param *p = &k->params[j + 1];
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "p%zu", j + 1);
        p->type = sig->params[j];
        p->array = !modes || modes[j] == 'a';
        p->is_const = p->array;
        if (p->array && elem_size(p->type) > largest)
            largest = elem_size(p->type);
    }
    k->vec = largest ? (unsigned)(16 / largest) : 1;
    if (!k->vec)
        k->vec = 1;
    snprintf(k->kernel, sizeof k->kernel, "fdl_map_%s", d->name);

    fdl__buf *b = &k->source;
    char sigtext[FDL_SIG_MAX_LENGTH];
    fdl_sig_format(sig, sigtext, sizeof sigtext);
    put_prelude(b, k, uses_half(k, sig->ret));
    fdl__buf_printf(b, "\n/* map: out[i] = %s(", d->name);
    for (size_t j = 0; j < sig->nparams; j++)
        fdl__buf_printf(b, "%s%s%s", j ? ", " : "", k->params[j + 1].name,
                        k->params[j + 1].array ? "[i]" : "");
    fdl__buf_printf(b, ") for i < n */\n");
    fdl__buf_printf(b, "/* declared: %s: %s abi=%s */\n", d->name, sigtext,
                    d->abi == FDL_ABI_C ? "c" : "numba");

    /* the prototype (ABI-1 or ABI-9), as the declarations header has it */
    fdl__buf_puts(b, "extern \"C\" __device__ ");
    if (d->abi == FDL_ABI_C) {
        put_decl(b, sig->ret, 0, 0, 0, d->name);
        fdl__buf_puts(b, "(");
        if (!sig->nparams)
            fdl__buf_puts(b, "void");
    } else {
        fdl_type slot = sig->ret;
        slot.depth++;
        fdl__buf_printf(b, "int %s(", d->name);
        put_decl(b, slot, 0, 0, 0, "return_value");
    }
    for (size_t j = 0; j < sig->nparams; j++) {
        char arg[32];
        snprintf(arg, sizeof arg, "arg%zu", j + 1);
        if (j || d->abi != FDL_ABI_C)
            fdl__buf_puts(b, ", ");
        put_decl(b, sig->params[j], 0, 0, 0, arg);
    }
    fdl__buf_puts(b, ");\n\n");

    /* the call at one index */
    fdl__buf_puts(b, "typedef ");
    put_type(b, sig->ret);
    fdl__buf_puts(b, " fdl_result;\n\n__device__ __forceinline__ fdl_result fdl_map_at(unsigned long long i");
    for (size_t j = 0; j < sig->nparams; j++) {
        fdl__buf_puts(b, ", ");
        put_decl(b, sig->params[j], 0, 0, 0, k->params[j + 1].name);
    }
    fdl__buf_puts(b, ", fdl_gen_fail *fdl_fail)\n{\n");
    if (d->abi == FDL_ABI_C) {
        fdl__buf_puts(b, "    (void)i;\n    (void)fdl_fail;\n");
        fdl__buf_printf(b, "    return %s(", d->name);
        for (size_t j = 0; j < sig->nparams; j++)
            fdl__buf_printf(b, "%s%s", j ? ", " : "", k->params[j + 1].name);
        fdl__buf_puts(b, ");\n}\n\n");
    } else {
        fdl__buf_printf(b, "    fdl_result r = fdl_result();\n    if (FDL_MAP_CALL(%s, &r",
                        d->name);
        for (size_t j = 0; j < sig->nparams; j++)
            fdl__buf_printf(b, ", %s", k->params[j + 1].name);
        fdl__buf_puts(b, ") != 0)\n        r = fdl_result(); /* a failed call leaves zero */\n"
                         "    return r;\n}\n\n");
    }

    /* the kernel */
    fdl__buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d) %s(\n    ",
                    FDL_GEN_BLOCK, k->kernel);
    for (size_t j = 0; j < k->nparams; j++) {
        const fdl__gen_param *p = &k->params[j];
        /* no __restrict__: the output may be one of the inputs (a map in place) */
        put_decl(b, p->type, p->array, p->is_const, 0, p->name);
        fdl__buf_puts(b, ",\n    ");
    }
    fdl__buf_puts(b, "unsigned long long n, int vec, fdl_gen_fail *fdl_fail)\n{\n");
    fdl__buf_puts(b,
                  "    const unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x "
                  "+ threadIdx.x;\n"
                  "    const unsigned long long stride = (unsigned long long)gridDim.x * "
                  "blockDim.x;\n"
                  "    unsigned long long start = t;\n");
    unsigned K = k->vec;
    if (K > 1) {
        fdl__buf_printf(b,
                        "    if (vec) {\n"
                        "        /* every array aligned for %u elements an access */\n"
                        "        const unsigned long long nv = n / %u;\n"
                        "        for (unsigned long long v = t; v < nv; v += stride) {\n"
                        "            const unsigned long long i = v * %u;\n",
                        K, K, K);
        for (size_t j = 1; j < k->nparams; j++) {
            const fdl__gen_param *p = &k->params[j];
            if (!p->array)
                continue;
            fdl__buf_puts(b, "            const fdl_vec<");
            put_type(b, p->type);
            fdl__buf_printf(b, ", %u> x%zu = reinterpret_cast<const fdl_vec<", K, j);
            put_type(b, p->type);
            fdl__buf_printf(b, ", %u> *>(%s)[v];\n", K, p->name);
        }
        fdl__buf_puts(b, "            fdl_vec<");
        put_type(b, sig->ret);
        fdl__buf_printf(b, ", %u> r;\n#pragma unroll\n            for (int e = 0; e < %u; e++)\n"
                           "                r.e[e] = fdl_map_at(i + e",
                        K, K);
        for (size_t j = 1; j < k->nparams; j++) {
            const fdl__gen_param *p = &k->params[j];
            if (p->array)
                fdl__buf_printf(b, ", x%zu.e[e]", j);
            else
                fdl__buf_printf(b, ", %s", p->name);
        }
        fdl__buf_puts(b, ", fdl_fail);\n            reinterpret_cast<fdl_vec<");
        put_type(b, sig->ret);
        fdl__buf_printf(b, ", %u> *>(out)[v] = r;\n        }\n        start = nv * %u + t;\n"
                           "    }\n",
                        K, K);
    } else {
        fdl__buf_puts(b, "    (void)vec;\n");
    }
    fdl__buf_puts(b, "    for (unsigned long long i = start; i < n; i += stride)\n"
                     "        out[i] = fdl_map_at(i");
    for (size_t j = 1; j < k->nparams; j++) {
        const fdl__gen_param *p = &k->params[j];
        fdl__buf_printf(b, ", %s%s", p->name, p->array ? "[i]" : "");
    }
    fdl__buf_puts(b, ", fdl_fail);\n}\n");
    if (b->oom)
        return fdl__fail(err, FDL_ENOMEM, "out of memory generating the map of %s", d->name);
    return FDL_OK;
}

static void put_params(fdl__buf *b, const fdl__gen_kernel *k, const char *sep)
{
    for (size_t j = 0; j < k->nparams; j++) {
        const fdl__gen_param *p = &k->params[j];
        put_decl(b, p->type, p->array, p->is_const, 0, p->name);
        fdl__buf_puts(b, sep);
    }
}

int fdl__gen_elementwise_source(fdl__gen_kernel *k, const char *arguments,
                                const char *operation, fdl_error *err)
{
    fdl_type none = {FDL_VOID, 0};
    k->vec = 1;
    fdl__strlcpy(k->kernel, "fdl_elementwise", sizeof k->kernel);
    fdl__buf *b = &k->source;
    put_prelude(b, k, uses_half(k, none));
    put_comment(b, "\n/* elementwise over: ", arguments);
    fdl__buf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d) %s(\n    ",
                    FDL_GEN_BLOCK, k->kernel);
    put_params(b, k, ",\n    ");
    fdl__buf_puts(b,
                  "unsigned long long n, fdl_gen_fail *fdl_fail)\n{\n"
                  "    const unsigned long long stride = (unsigned long long)gridDim.x * "
                  "blockDim.x;\n"
                  "    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x "
                  "+ threadIdx.x; i < n;\n"
                  "         i += stride) {\n"
                  "        (void)fdl_fail;\n");
    put_user(b, k, "operation", operation);
    fdl__buf_puts(b, ";\n    }\n}\n");
    if (b->oom)
        return fdl__fail(err, FDL_ENOMEM, "out of memory generating an elementwise kernel");
    return FDL_OK;
}

/* Neutral values of the named reductions for a scalar type; NULL when there is none. */
static const char *named_neutral(const char *op, fdl_scalar s)
{
    int is_min = strcmp(op, "min") == 0, is_max = strcmp(op, "max") == 0;
    if (strcmp(op, "sum") == 0)
        return "fdl_t(0)";
    if (strcmp(op, "product") == 0)
        return "fdl_t(1)";
    if (!is_min && !is_max)
        return NULL;
    switch (s) {
    case FDL_BOOL: return is_min ? "true" : "false";
    case FDL_INT8: return is_min ? "fdl_t(127)" : "fdl_t(-128)";
    case FDL_INT16: return is_min ? "fdl_t(32767)" : "fdl_t(-32768)";
    case FDL_INT32: return is_min ? "fdl_t(2147483647)" : "fdl_t(-2147483647 - 1)";
    case FDL_INT64:
    case FDL_INTP:
        return is_min ? "fdl_t(9223372036854775807LL)" : "fdl_t(-9223372036854775807LL - 1)";
    case FDL_UINT8: return is_min ? "fdl_t(255)" : "fdl_t(0)";
    case FDL_UINT16: return is_min ? "fdl_t(65535)" : "fdl_t(0)";
    case FDL_UINT32: return is_min ? "fdl_t(4294967295u)" : "fdl_t(0)";
    case FDL_UINT64:
    case FDL_UINTP:
        return is_min ? "fdl_t(18446744073709551615ull)" : "fdl_t(0)";
    case FDL_FLOAT16:
        return is_min ? "__ushort_as_half((unsigned short)0x7c00u)"
                      : "__ushort_as_half((unsigned short)0xfc00u)";
    case FDL_FLOAT32:
        return is_min ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
    case FDL_FLOAT64:
        return is_min ? "__longlong_as_double(0x7ff0000000000000ll)"
                      : "__longlong_as_double(0xfff0000000000000ull)";
    default: return NULL;
    }
}

static const char *named_reduce(const char *op)
{
    if (strcmp(op, "sum") == 0)
        return "a + b";
    if (strcmp(op, "product") == 0)
        return "a * b";
    if (strcmp(op, "min") == 0)
        return "b < a ? b : a";
    if (strcmp(op, "max") == 0)
        return "a < b ? b : a";
    return NULL;
}

static const char reduction_text[] =
    "    const unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + "
    "threadIdx.x;\n"
    "    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;\n"
    "    /* this thread's indices t, t + T, t + 2T, ..., into four interleaved accumulators */\n"
    "    fdl_t a0 = fdl_neutral(), a1 = fdl_neutral(), a2 = fdl_neutral(), a3 = fdl_neutral();\n"
    "    unsigned long long i = t;\n"
    "#if FDL_K > 1\n"
    "    if (fdl_vec) {\n"
    "        /*\n"
    "         * every array aligned for FDL_K elements: this thread's vectors t, t + T, ...,\n"
    "         * element e of each into accumulator e, FDL_K consecutive indices an access\n"
    "         */\n"
    "        FDL_ASSUME_ALIGNED\n"
    "        const unsigned long long nv = n / FDL_K;\n"
    "        fdl_t acc[FDL_K];\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < FDL_K; e++)\n"
    "            acc[e] = fdl_neutral();\n"
    "#pragma unroll 4\n"
    "        for (unsigned long long v = t; v < nv; v += stride) {\n"
    "            const unsigned long long base = v * FDL_K;\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < FDL_K; e++)\n"
    "                acc[e] = fdl_reduce(acc[e], fdl_value(base + e, FDL_ARGS));\n"
    "        }\n"
    "#pragma unroll\n"
    "        for (int e = 1; e < FDL_K; e++)\n"
    "            acc[0] = fdl_reduce(acc[0], acc[e]);\n"
    "        a0 = acc[0];\n"
    "        i = nv * FDL_K + t; /* the tail, fewer than FDL_K indices */\n"
    "    }\n"
    "#else\n"
    "    (void)fdl_vec;\n"
    "#endif\n"
    "    if (n > 3 * stride)\n"
    "        for (; i < n - 3 * stride; i += 4 * stride) {\n"
    "            a0 = fdl_reduce(a0, fdl_value(i, FDL_ARGS));\n"
    "            a1 = fdl_reduce(a1, fdl_value(i + stride, FDL_ARGS));\n"
    "            a2 = fdl_reduce(a2, fdl_value(i + 2 * stride, FDL_ARGS));\n"
    "            a3 = fdl_reduce(a3, fdl_value(i + 3 * stride, FDL_ARGS));\n"
    "        }\n"
    "    for (; i < n; i += stride)\n"
    "        a0 = fdl_reduce(a0, fdl_value(i, FDL_ARGS));\n"
    "    /* the block's threads, in a fixed tree */\n"
    "    __shared__ fdl_t sh[FDL_BLOCK];\n"
    "    __shared__ bool last;\n"
    "    sh[threadIdx.x] = fdl_reduce(fdl_reduce(a0, a1), fdl_reduce(a2, a3));\n"
    "    __syncthreads();\n"
    "    for (unsigned int s = FDL_BLOCK / 2; s > 0; s >>= 1) {\n"
    "        if (threadIdx.x < s)\n"
    "            sh[threadIdx.x] = fdl_reduce(sh[threadIdx.x], sh[threadIdx.x + s]);\n"
    "        __syncthreads();\n"
    "    }\n"
    "    fdl_t *partials = reinterpret_cast<fdl_t *>(fdl_scratch + FDL_PARTIALS);\n"
    "    unsigned int *done = reinterpret_cast<unsigned int *>(fdl_scratch + FDL_DONE);\n"
    "    if (threadIdx.x == 0) {\n"
    "        partials[blockIdx.x] = sh[0];\n"
    "        __threadfence();\n"
    "        last = atomicAdd(done, 1u) == gridDim.x - 1;\n"
    "    }\n"
    "    __syncthreads();\n"
    "    if (!last)\n"
    "        return;\n"
    "    /* the last block: the partials in block order, then the same tree */\n"
    "    __threadfence();\n"
    "    fdl_t acc = fdl_neutral();\n"
    "    for (unsigned int j = threadIdx.x; j < gridDim.x; j += FDL_BLOCK)\n"
    "        acc = fdl_reduce(acc, fdl_load_cg(partials + j));\n"
    "    sh[threadIdx.x] = acc;\n"
    "    __syncthreads();\n"
    "    for (unsigned int s = FDL_BLOCK / 2; s > 0; s >>= 1) {\n"
    "        if (threadIdx.x < s)\n"
    "            sh[threadIdx.x] = fdl_reduce(sh[threadIdx.x], sh[threadIdx.x + s]);\n"
    "        __syncthreads();\n"
    "    }\n"
    "    if (threadIdx.x == 0) {\n"
    "        *reinterpret_cast<fdl_t *>(fdl_scratch + FDL_RESULT) = sh[0];\n"
    "        *done = 0; /* ready for the next launch */\n"
    "    }\n"
    "}\n";

static const char load_cg_text[] =
    "/* A partial written by another block: read from L2 (ld.global.cg), past this SM's L1. */\n"
    "template <typename T> __device__ __forceinline__ T fdl_load_cg(const T *p)\n"
    "{\n"
    "    T v;\n"
    "    if constexpr (sizeof(T) == 8) {\n"
    "        unsigned long long u = __ldcg(reinterpret_cast<const unsigned long long *>(p));\n"
    "        v = *reinterpret_cast<const T *>(&u);\n"
    "    } else if constexpr (sizeof(T) == 4) {\n"
    "        unsigned int u = __ldcg(reinterpret_cast<const unsigned int *>(p));\n"
    "        v = *reinterpret_cast<const T *>(&u);\n"
    "    } else if constexpr (sizeof(T) == 2) {\n"
    "        unsigned short u = __ldcg(reinterpret_cast<const unsigned short *>(p));\n"
    "        v = *reinterpret_cast<const T *>(&u);\n"
    "    } else {\n"
    "        unsigned char u = __ldcg(reinterpret_cast<const unsigned char *>(p));\n"
    "        v = *reinterpret_cast<const T *>(&u);\n"
    "    }\n"
    "    return v;\n"
    "}\n";

int fdl__gen_reduction_source(fdl__gen_kernel *k, const fdl_reduction_spec *spec,
                              fdl_error *err)
{
    if (!spec->type || !spec->map || !spec->reduce || !spec->arguments)
        return fdl__fail(err, FDL_EINVAL, "reduction: %s is missing",
                         !spec->type ? "the result type" : !spec->map ? "the map expression"
                         : !spec->reduce ? "the reduce expression" : "the argument list");
    int rc = fdl__gen_parse_type(&k->result, spec->type, strlen(spec->type), "type", 1, err);
    if (rc != FDL_OK)
        return rc;
    if (k->result.depth || k->result.base == FDL_VOID)
        return fdl__error(err, FDL_EINVAL, "type", 1, 1, NULL,
                          "reduction: the result type must be a scalar, not %s", spec->type);
    if ((rc = fdl__gen_parse_arguments(k, spec->arguments, err)) != FDL_OK)
        return rc;
    const char *reduce = named_reduce(spec->reduce);
    const char *neutral = spec->neutral;
    if (!neutral && reduce)
        neutral = named_neutral(spec->reduce, k->result.base);
    if (!reduce)
        reduce = spec->reduce;
    if (!neutral)
        return fdl__fail(err, FDL_EINVAL, "reduction '%s' needs a neutral value (the value "
                         "that leaves any x unchanged: reduce(neutral, x) == x)", spec->reduce);
    fdl__strlcpy(k->kernel, "fdl_reduction", sizeof k->kernel);
    fdl__buf *b = &k->source;
    put_prelude(b, k, uses_half(k, k->result));
    fdl__buf_puts(b, load_cg_text);
    fdl__buf_puts(b, "\n");
    put_comment(b, "/* reduction over i < n of:", "");
    put_comment(b, "/*   ", spec->map);
    put_comment(b, "/* with: ", spec->reduce);
    fdl__buf_puts(b, "typedef ");
    put_type(b, k->result);
    fdl__buf_printf(b, " fdl_t;\n#define FDL_BLOCK %d\n#define FDL_DONE %d\n#define FDL_RESULT %d\n"
                       "#define FDL_PARTIALS %d\n#define FDL_ARGS ",
                    FDL_GEN_BLOCK, FDL__GEN_RED_DONE, FDL__GEN_RED_RESULT, FDL__GEN_RED_PARTIALS);
    for (size_t j = 0; j < k->nparams; j++)
        fdl__buf_printf(b, "%s, ", k->params[j].name);
    fdl__buf_puts(b, "fdl_fail\n");
    /* vector accesses: 16 bytes of the largest array element */
    size_t largest = 0;
    for (size_t j = 0; j < k->nparams; j++)
        if (k->params[j].array && fdl_type_size(k->params[j].type) > largest)
            largest = fdl_type_size(k->params[j].type);
    k->vec = largest ? (unsigned)(16 / largest) : 1;
    fdl__buf_printf(b, "#define FDL_K %u\n#define FDL_ASSUME_ALIGNED", k->vec);
    for (size_t j = 0; j < k->nparams; j++)
        if (k->params[j].array && fdl_type_size(k->params[j].type))
            fdl__buf_printf(b, " \\\n    %s = (decltype(%s))__builtin_assume_aligned(%s, %zu);",
                            k->params[j].name, k->params[j].name, k->params[j].name,
                            k->vec * fdl_type_size(k->params[j].type));
    fdl__buf_puts(b, "\n\n");
    fdl__buf_puts(b, "__device__ __forceinline__ fdl_t fdl_neutral(void)\n{\n    return (\n");
    put_user(b, k, "neutral", neutral);
    fdl__buf_puts(b, "    );\n}\n\n__device__ __forceinline__ fdl_t fdl_reduce(fdl_t a, "
                     "fdl_t b)\n{\n    return (\n");
    put_user(b, k, "reduce", reduce);
    fdl__buf_puts(b, "    );\n}\n\n__device__ __forceinline__ fdl_t fdl_value(unsigned long "
                     "long i, ");
    put_params(b, k, ", ");
    fdl__buf_puts(b, "fdl_gen_fail *fdl_fail)\n{\n    (void)fdl_fail;\n    return (fdl_t)(\n");
    put_user(b, k, "map", spec->map);
    fdl__buf_printf(b, "    );\n}\n\nextern \"C\" __global__ void __launch_bounds__(%d) %s(\n"
                       "    ",
                    FDL_GEN_BLOCK, k->kernel);
    put_params(b, k, ",\n    ");
    fdl__buf_puts(b, "unsigned long long n, int fdl_vec, unsigned char *fdl_scratch)\n{\n"
                     "    fdl_gen_fail *fdl_fail = reinterpret_cast<fdl_gen_fail *>(fdl_scratch);\n");
    fdl__buf_puts(b, reduction_text);
    if (b->oom)
        return fdl__fail(err, FDL_ENOMEM, "out of memory generating a reduction");
    return FDL_OK;
}
