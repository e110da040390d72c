/*
 * Declaration files (abi/ABI.md, "Declaration files"): one foreign device function per line,
 *
 *     name: signature [abi=numba|abi=c]     # comment
 *
 * Lines are parsed in one pass; names are indexed in an open-addressing hash table as they
 * arrive, so duplicates are found in file order and lookups are O(1) on average. The items, the
 * names and the index are sized once from the number of lines (an upper bound on the number of
 * declarations), so that nothing is copied or rehashed as they fill.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/decl.h"
#include "abi_internal.h"

struct fdl_decls {
    char *source;      /* name given to the parser */
    fdl_decl *items;   /* count declarations, file order */
    size_t count;
    size_t cap;
    char *names;       /* every name, NUL-terminated, back to back: never moves */
    size_t names_len;
    size_t names_cap;  /* the text's length + 1: every name and its NUL fit (see parse_line) */
    fdl__index index;  /* names to item positions */
};

/* The option words after a signature. */
static const char opt_numba[] = "abi=numba";
static const char opt_c[] = "abi=c";

/*
 * C and C++ keywords (C++20 and C23): a function with one of these names could not be declared
 * in the generated header, so the declaration is rejected where it is written. Told apart by
 * length, then compared whole (constant-length compares, which the compiler inlines); test_decl's
 * rejects_keywords_as_names tries each, and near misses.
 */
static int is_keyword(const char *s, size_t n)
{
#define IS(lit) (memcmp(s, lit, sizeof lit - 1) == 0)
    switch (n) {
    case 2:
        return IS("do") || IS("if") || IS("or");
    case 3:
        return IS("and") || IS("asm") || IS("for") || IS("int") || IS("new") || IS("not") ||
               IS("try") || IS("xor");
    case 4:
        return IS("auto") || IS("bool") || IS("case") || IS("char") || IS("else") || IS("enum") ||
               IS("goto") || IS("long") || IS("this") || IS("true") || IS("void");
    case 5:
        return IS("_Bool") || IS("bitor") || IS("break") || IS("catch") || IS("class") ||
               IS("compl") || IS("const") || IS("false") || IS("float") || IS("or_eq") ||
               IS("short") || IS("throw") || IS("union") || IS("using") || IS("while");
    case 6:
        return IS("and_eq") || IS("bitand") || IS("delete") || IS("double") || IS("export") ||
               IS("extern") || IS("friend") || IS("inline") || IS("not_eq") || IS("public") ||
               IS("return") || IS("signed") || IS("sizeof") || IS("static") || IS("struct") ||
               IS("switch") || IS("typeid") || IS("typeof") || IS("xor_eq");
    case 7:
        return IS("_Atomic") || IS("_BitInt") || IS("alignas") || IS("alignof") || IS("char8_t") ||
               IS("concept") || IS("default") || IS("mutable") || IS("nullptr") || IS("private") ||
               IS("typedef") || IS("virtual") || IS("wchar_t");
    case 8:
        return IS("_Alignas") || IS("_Alignof") || IS("_Complex") || IS("_Generic") ||
               IS("char16_t") || IS("char32_t") || IS("co_await") || IS("co_yield") ||
               IS("continue") || IS("decltype") || IS("explicit") || IS("noexcept") ||
               IS("operator") || IS("register") || IS("requires") || IS("restrict") ||
               IS("template") || IS("typename") || IS("unsigned") || IS("volatile");
    case 9:
        return IS("_Noreturn") || IS("co_return") || IS("consteval") || IS("constexpr") ||
               IS("constinit") || IS("namespace") || IS("protected");
    case 10:
        return IS("_Decimal32") || IS("_Decimal64") || IS("_Imaginary") || IS("const_cast");
    case 11:
        return IS("_Decimal128") || IS("static_cast");
    case 12:
        return IS("dynamic_cast") || IS("thread_local");
    case 13:
        return IS("_Thread_local") || IS("static_assert") || IS("typeof_unqual");
    case 14:
        return IS("_Static_assert");
    case 16:
        return IS("reinterpret_cast");
    default:
        return 0;
    }
#undef IS
}

/* The index's key: the name of item @i. */
static const char *item_name(const void *owner, size_t i)
{
    const fdl_decls *d = owner;
    return d->items[i].name;
}

size_t fdl__decls_index(const struct fdl_decls *decls, const char *s, size_t n)
{
    return fdl__index_find(&decls->index, s, n, item_name, decls);
}

/* Room for @count items. */
static int items_reserve(fdl_decls *d, size_t count)
{
    if (count <= d->cap && d->items)
        return 1;
    size_t cap = d->cap;
    fdl_decl *items = fdl__grow(d->items, &cap, count, sizeof *items);
    if (!items)
        return 0;
    d->items = items;
    d->cap = cap;
    return 1;
}

void fdl_decls_destroy(fdl_decls *decls)
{
    if (!decls)
        return;
    free(decls->source);
    free(decls->items);
    free(decls->names);
    fdl__index_free(&decls->index);
    free(decls);
}

/* Parsing state of one call. */
typedef struct ctx {
    fdl_decls *d;
    const char *source;
    fdl_error *err;
    /* the last signature parsed: its text (in the input) and the item it was parsed into;
     * files repeat signatures, and the same text always parses to the same value */
    const char *last_sig;
    size_t last_sig_len;
    size_t last_item;
} ctx;

static int fail(ctx *c, int code, unsigned line, size_t col0, const char *symbol, const char *fmt,
                ...) FDL__PRINTF(6, 7);

/* @col0 is the 0-based byte offset in the line; lines are bounded, so the column fits. */
static int fail(ctx *c, int code, unsigned line, size_t col0, const char *symbol, const char *fmt,
                ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdl__verror(c->err, code, c->source, line, (unsigned)(col0 + 1), symbol, fmt, ap);
    va_end(ap);
    return code;
}

/* Longest piece of input quoted back in a message. */
#define QUOTE_MAX 64

/* Check the name s[0..n) at column offset @at; on success the name is a C identifier. */
static int check_name(ctx *c, unsigned line, size_t at, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && fdl__is_ident_char((unsigned char)s[i]))
        i++;
    if (i == n && n <= FDL_DECL_MAX_NAME && !(s[0] >= '0' && s[0] <= '9') && !is_keyword(s, n))
        return FDL_OK; /* the usual case, said at once */
    char q[QUOTE_MAX + 4];
    fdl__quote(q, sizeof q, s, n, QUOTE_MAX);
    if (n > FDL_DECL_MAX_NAME)
        return fail(c, FDL_ELIMIT, line, at, NULL,
                    "function name '%s' is %zu characters long, at most %d (FDL_DECL_MAX_NAME)",
                    q, n, FDL_DECL_MAX_NAME);
    if (s[0] >= '0' && s[0] <= '9')
        return fail(c, FDL_EPARSE, line, at, NULL,
                    "function name '%s' starts with a digit (names are C identifiers)", q);
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (fdl__is_ident_char(ch))
            continue;
        if (ch > 0x20 && ch < 0x7f)
            return fail(c, FDL_EPARSE, line, at + i, NULL,
                        "invalid character '%c' in function name '%s' (names are C identifiers)",
                        ch, q);
        return fail(c, FDL_EPARSE, line, at + i, NULL,
                    "invalid byte 0x%02x in function name (names are C identifiers)", ch);
    }
    if (is_keyword(s, n))
        return fail(c, FDL_EPARSE, line, at, NULL,
                    "function name '%s' is a C/C++ keyword and cannot be declared", q);
    return FDL_OK;
}

/* Parse one line (without its terminator). Blank and comment-only lines add nothing. */
static int parse_line(ctx *c, const char *s, size_t n, unsigned line)
{
    fdl_decls *d = c->d;
    if (n > FDL_DECL_MAX_LINE)
        return fail(c, FDL_ELIMIT, line, FDL_DECL_MAX_LINE, NULL,
                    "line too long: %zu bytes, at most %d (FDL_DECL_MAX_LINE)", n,
                    FDL_DECL_MAX_LINE);
    /* '#' never occurs in a declaration, so it always starts a comment. */
    const char *hash = memchr(s, '#', n);
    if (hash)
        n = (size_t)(hash - s);
    while (n && fdl__is_space((unsigned char)s[n - 1]))
        n--;
    size_t i = 0;
    while (i < n && fdl__is_space((unsigned char)s[i]))
        i++;
    if (i == n)
        return FDL_OK;

    /* name */
    size_t name_at = i;
    while (i < n && !fdl__is_space((unsigned char)s[i]) && s[i] != ':')
        i++;
    size_t name_len = i - name_at;
    if (!name_len)
        return fail(c, FDL_EPARSE, line, name_at, NULL, "missing function name before ':'");
    if (!memchr(s + name_at, ':', n - name_at))
        return fail(c, FDL_EPARSE, line, i, NULL,
                    "missing ':' after the function name (a declaration is name: signature)");
    int rc = check_name(c, line, name_at, s + name_at, name_len);
    if (rc != FDL_OK)
        return rc;
    char name[FDL_DECL_MAX_NAME + 1];
    memcpy(name, s + name_at, name_len);
    name[name_len] = '\0';

    while (i < n && fdl__is_space((unsigned char)s[i]))
        i++;
    if (i == n || s[i] != ':')
        return fail(c, FDL_EPARSE, line, i, name, "expected ':' after function name '%s'",
                    name);
    i++;
    while (i < n && fdl__is_space((unsigned char)s[i]))
        i++;
    size_t sig_at = i;

    /*
     * Options are words `key=value` after the signature; '=' never occurs in a signature, so
     * the first '=' belongs to the first option, whose key starts the option list.
     */
    size_t sig_end = n;
    const char *eq = memchr(s + sig_at, '=', n - sig_at);
    if (eq) {
        sig_end = (size_t)(eq - s);
        while (sig_end > sig_at && fdl__is_ident_char((unsigned char)s[sig_end - 1]))
            sig_end--;
    }
    size_t opt_at = sig_end;
    while (sig_end > sig_at && fdl__is_space((unsigned char)s[sig_end - 1]))
        sig_end--;
    if (sig_end == sig_at)
        return fail(c, FDL_EPARSE, line, sig_at, name, "missing signature after ':'");

    /* parsed in place, in the slot after the last item (kept only when all of it is good) */
    if (!items_reserve(d, d->count + 1))
        return fail(c, FDL_ENOMEM, line, name_at, name, "out of memory");
    fdl_decl *decl = &d->items[d->count];
    decl->name = NULL;
    decl->abi = FDL_ABI_NUMBA;
    decl->source = NULL;
    decl->line = line;
    decl->column = (unsigned)(name_at + 1);
    decl->sig_column = (unsigned)(sig_at + 1);

    size_t sig_len = sig_end - sig_at;
    if (c->last_sig && sig_len == c->last_sig_len &&
        memcmp(s + sig_at, c->last_sig, sig_len) == 0) {
        decl->sig = d->items[c->last_item].sig;
    } else {
        fdl_error sig_err; /* filled whole by fdl_sig_parse when it fails, read only then */
        rc = fdl_sig_parse(&decl->sig, s + sig_at, sig_len, &sig_err);
        if (rc != FDL_OK) {
            /* The parser's column is 1-based within the signature. */
            size_t col0 = sig_at + (sig_err.column ? sig_err.column - 1 : 0);
            return fail(c, rc, line, col0, name, "%s", sig_err.message);
        }
        c->last_sig = s + sig_at;
        c->last_sig_len = sig_len;
        c->last_item = d->count;
    }

    int have_abi = 0;
    for (size_t k = opt_at; k < n;) {
        size_t w = k;
        while (k < n && !fdl__is_space((unsigned char)s[k]))
            k++;
        size_t wl = k - w;
        if (wl == sizeof opt_numba - 1 && memcmp(s + w, opt_numba, wl) == 0) {
            decl->abi = FDL_ABI_NUMBA;
        } else if (wl == sizeof opt_c - 1 && memcmp(s + w, opt_c, wl) == 0) {
            decl->abi = FDL_ABI_C;
        } else {
            char q[QUOTE_MAX + 4];
            return fail(c, FDL_EPARSE, line, w, name,
                        "unknown option '%s' (expected abi=numba or abi=c)",
                        fdl__quote(q, sizeof q, s + w, wl, QUOTE_MAX));
        }
        if (have_abi)
            return fail(c, FDL_EPARSE, line, w, name, "abi given more than once");
        have_abi = 1;
        while (k < n && fdl__is_space((unsigned char)s[k]))
            k++;
    }

    if (!fdl__index_reserve(&d->index, d->count + 1))
        return fail(c, FDL_ENOMEM, line, name_at, name, "out of memory");
    uint64_t tag;
    uint64_t *slot = fdl__index_slot(&d->index, name, name_len, item_name, d, &tag);
    if (*slot) {
        const fdl_decl *first = &d->items[fdl__index_entry(*slot)];
        return fail(c, FDL_EPARSE, line, name_at, name,
                    "duplicate declaration of %s (first declared at %s:%u:%u)", name, c->source,
                    first->line, first->column);
    }
    if (d->count == FDL_DECL_MAX_COUNT)
        return fail(c, FDL_ELIMIT, line, name_at, name,
                    "too many declarations: at most %d (FDL_DECL_MAX_COUNT)", FDL_DECL_MAX_COUNT);
    /* a name and its NUL take at most the bytes of its line (a ':' follows the name), so the
     * names of all the lines fit in names_cap; checked all the same */
    if (name_len + 1 > d->names_cap - d->names_len)
        return fail(c, FDL_ENOMEM, line, name_at, name, "out of memory");
    char *kept = d->names + d->names_len;
    memcpy(kept, name, name_len + 1);
    d->names_len += name_len + 1;
    decl->name = kept;
    decl->source = d->source;
    *slot = tag | (d->count + 1);
    d->count++;
    return FDL_OK;
}

int fdl_decls_parse(fdl_decls **out, const char *text, size_t len, const char *name,
                    fdl_error *err)
{
    if (!FDL__CHECK_ARG(out != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_decls_parse: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(name != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_decls_parse: name is NULL");
    if (!FDL__CHECK_ARG(text != NULL || len == 0))
        return fdl__fail(err, FDL_EINVAL, "fdl_decls_parse: text is NULL");

    int rc = FDL_OK;
    ctx c = {NULL, name, err, NULL, 0, 0};
    size_t pos = 0;
    unsigned line = 0;
    fdl_decls *d = calloc(1, sizeof *d);
    if (!d || !(d->source = fdl__strdup(name))) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
        goto cleanup;
    }
    c.d = d;
    c.source = d->source;
    /* Room from the start for every line's declaration (past 65536 lines, they grow as
     * needed), their names and their index, so that nothing is copied or rehashed as the
     * declarations arrive. */
    size_t lines = 1;
    for (size_t at = 0; at < len; at++) {
        const char *nl = memchr(text + at, '\n', len - at);
        if (!nl)
            break;
        lines++;
        at = (size_t)(nl - text);
    }
    size_t room = lines < 65536 ? lines : 65536;
    if (!fdl__size_add(&d->names_cap, len, 1) || !(d->names = malloc(d->names_cap)) ||
        !items_reserve(d, room) || !fdl__index_reserve(&d->index, room)) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
        goto cleanup;
    }

    /* A UTF-8 byte-order mark is not part of the first line. */
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        pos = 3;
    while (pos < len) {
        if (line == UINT_MAX) {
            rc = fail(&c, FDL_ELIMIT, line, 0, NULL, "too many lines");
            goto cleanup;
        }
        line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t n = end - pos;
        if (n && text[end - 1] == '\r')
            n--; /* CRLF */
        rc = parse_line(&c, text + pos, n, line);
        if (rc != FDL_OK)
            goto cleanup;
        pos = nl ? end + 1 : len;
    }

    *out = d;
    d = NULL;
cleanup:
    fdl_decls_destroy(d);
    return rc;
}

int fdl_decls_load(fdl_decls **out, const char *path, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_decls_load: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(path != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_decls_load: path is NULL");
    char *data = NULL;
    size_t size = 0;
    int rc = fdl__read_file(path, &data, &size, err);
    if (rc == FDL_OK)
        rc = fdl_decls_parse(out, data, size, path, err);
    free(data);
    return rc;
}

size_t fdl_decls_count(const fdl_decls *decls)
{
    return decls ? decls->count : 0;
}

const fdl_decl *fdl_decls_get(const fdl_decls *decls, size_t i)
{
    if (!decls || i >= decls->count)
        return NULL;
    return &decls->items[i];
}

const fdl_decl *fdl_decls_find(const fdl_decls *decls, const char *name)
{
    if (!decls || !name)
        return NULL;
    size_t i = fdl__decls_index(decls, name, strlen(name));
    return i == SIZE_MAX ? NULL : &decls->items[i];
}

const char *fdl_decls_source(const fdl_decls *decls)
{
    return decls ? decls->source : NULL;
}
