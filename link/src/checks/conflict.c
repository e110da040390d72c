/*
 * A CUDA C definition that NVRTC refused because it disagrees with its declaration's
 * force-included prototype (ABI-10: the header makes the mistake a compile error), said as the
 * ABI error it is: "mul.cu:1:27: mul_f32_f32: defined as (float *, float, float), declared
 * float64(float64, float64) (ABI-5; declared at wide.decl:1:1)". The definition's types are read
 * from the source at NVRTC's position: a bounded, linear scan of the declarator, from the
 * function's name to its closing parenthesis (comments, newlines and line continuations skipped;
 * never past the input). NVRTC's own lines stay in the log and in the link's records.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "fdlink/sig.h"
#include "internal.h"
#include "checks.h"
#include "diag.h"
#include "linkobj.h"

#define SCAN_MAX 4096u /* bytes of declarator read, at most, either way of the name */
#define TEXT_MAX 240u  /* the definition's types as shown, at most */

static int ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$';
}

/* Past blanks, newlines, line continuations and comments from @p i; @p n when the input ends
 * inside a comment. */
static size_t skip_space(const char *s, size_t n, size_t i)
{
    while (i < n) {
        if (isspace((unsigned char)s[i]) || (s[i] == '\\' && i + 1 < n && s[i + 1] == '\n')) {
            i++;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
            const char *end = NULL;
            for (size_t k = i + 2; k + 1 < n; k++)
                if (s[k] == '*' && s[k + 1] == '/') {
                    end = s + k;
                    break;
                }
            i = end ? (size_t)(end - s) + 2 : n;
        } else {
            break;
        }
    }
    return i;
}

/* A token list of one declarator part: words and punctuation, spaced as C++ is usually written
 * ("const float *", "unsigned int", "float **", "ns::T"). */
typedef struct toks {
    const char *t[64];
    size_t len[64];
    size_t n;
    int over; /* more tokens than kept */
} toks;

/* The tokens of s[b..e), comments and blanks left out; string literals whole. */
static void tokenize(toks *k, const char *s, size_t b, size_t e)
{
    k->n = 0;
    k->over = 0;
    for (size_t i = skip_space(s, e, b); i < e; i = skip_space(s, e, i)) {
        size_t j = i + 1;
        if (ident_char(s[i])) {
            while (j < e && ident_char(s[j]))
                j++;
        } else if (s[i] == '"' || s[i] == '\'') {
            while (j < e && s[j] != s[i])
                j += s[j] == '\\' ? 2 : 1;
            j = j < e ? j + 1 : e;
        } else if (s[i] == ':' && j < e && s[j] == ':') {
            j++;
        }
        if (k->n == sizeof k->t / sizeof k->t[0]) {
            k->over = 1;
            return;
        }
        k->t[k->n] = s + i;
        k->len[k->n++] = j - i;
        i = j;
    }
}

static int tok_is(const toks *k, size_t i, const char *w)
{
    return k->len[i] == strlen(w) && memcmp(k->t[i], w, k->len[i]) == 0;
}

static int tok_word(const toks *k, size_t i)
{
    return ident_char(k->t[i][0]);
}

/* Words that end a type rather than name a parameter ("unsigned int", "long long", "T const"). */
static int type_word(const toks *k, size_t i)
{
    static const char *const words[] = {
        "int", "char", "short", "long", "float", "double", "unsigned", "signed", "bool", "void",
        "const", "volatile", "__restrict__", "__restrict", "restrict", "__half", "half",
        "__nv_bfloat16", "size_t", "wchar_t", "char16_t", "char32_t", "auto"};
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++)
        if (tok_is(k, i, words[w]))
            return 1;
    return 0;
}

/* Append tokens [b, e) of @p k to @p out, spaced; @p skip: one token left out, or SIZE_MAX. */
static void emit(fdl__buf *out, const toks *k, size_t b, size_t e, size_t skip)
{
    int prev_word = 0, first = 1;
    for (size_t i = b; i < e; i++) {
        if (i == skip)
            continue;
        int word = tok_word(k, i);
        int star = k->len[i] == 1 && (k->t[i][0] == '*' || k->t[i][0] == '&');
        if (!first && prev_word && (word || star))
            fdl__buf_puts(out, " ");
        fdl__buf_append(out, k->t[i], k->len[i]);
        if (tok_is(k, i, ","))
            fdl__buf_puts(out, " ");
        prev_word = word;
        first = 0;
    }
}

/* One parameter, s[b..e), into @p out without its name and default argument ("float *r = 0"
 * is "float *"); a function pointer or anything unusual as written. */
static void emit_param(fdl__buf *out, const char *s, size_t b, size_t e)
{
    toks k;
    tokenize(&k, s, b, e);
    size_t end = k.n, name = SIZE_MAX;
    int depth = 0;
    for (size_t i = 0; i < k.n; i++) { /* the default argument goes */
        depth += tok_is(&k, i, "(") || tok_is(&k, i, "<") || tok_is(&k, i, "[");
        depth -= tok_is(&k, i, ")") || tok_is(&k, i, ">") || tok_is(&k, i, "]");
        if (depth == 0 && tok_is(&k, i, "=")) {
            end = i;
            break;
        }
    }
    size_t last = end; /* the name is the last word, or the word before an array's '[' */
    for (size_t i = 0; i < end; i++)
        if (tok_is(&k, i, "[")) {
            last = i;
            break;
        }
    int fnptr = 0;
    for (size_t i = 0; i < end; i++)
        fnptr |= tok_is(&k, i, "(");
    if (!fnptr && last >= 2 && tok_word(&k, last - 1) && !type_word(&k, last - 1) &&
        !tok_is(&k, last - 2, "struct") && !tok_is(&k, last - 2, "union") &&
        !tok_is(&k, last - 2, "enum") && !tok_is(&k, last - 2, "class") &&
        !tok_is(&k, last - 2, "typename") && !tok_is(&k, last - 2, "::"))
        name = last - 1;
    emit(out, &k, 0, end, name);
    if (k.over)
        fdl__buf_puts(out, " ...");
}

/*
 * The parameter list of the function named at @p at (its name, @p nlen bytes) in s[0..n), as
 * "(float *, float, float)" into @p out. 0 when there is no '(' after the name, or no matching
 * ')' within SCAN_MAX bytes.
 */
static int param_list(fdl__buf *out, const char *s, size_t n, size_t at, size_t nlen)
{
    size_t i = skip_space(s, n, at + nlen);
    if (i >= n || s[i] != '(')
        return 0;
    size_t open = i, limit = n - open > SCAN_MAX ? open + SCAN_MAX : n;
    size_t starts[FDL_SIG_MAX_PARAMS * 2 + 2], ends[FDL_SIG_MAX_PARAMS * 2 + 2];
    size_t np = 0;
    int depth = 0;
    size_t begin = open + 1;
    for (i = open + 1; i < limit; i++) {
        size_t j = skip_space(s, limit, i);
        if (j != i) { /* a comment may hold parentheses and commas: stepped over */
            i = j - 1;
            continue;
        }
        char c = s[i];
        if (c == '"' || c == '\'') { /* a literal in a default argument */
            for (i++; i < limit && s[i] != c; i++)
                i += s[i] == '\\';
            continue;
        }
        if (c == '(' || c == '<' || c == '[' || c == '{')
            depth++;
        else if ((c == ')' || c == '>' || c == ']' || c == '}') && depth > 0)
            depth--;
        else if ((c == ',' || c == ')') && depth == 0) {
            if (np == sizeof starts / sizeof starts[0])
                return 0;
            starts[np] = begin;
            ends[np++] = i;
            begin = i + 1;
            if (c == ')')
                break;
        }
    }
    if (i >= limit)
        return 0; /* no closing parenthesis near: not a declarator fdlink can read */
    fdl__buf b = {0};
    fdl__buf_puts(&b, "(");
    for (size_t p = 0; p < np; p++) {
        if (p)
            fdl__buf_puts(&b, ", ");
        emit_param(&b, s, starts[p], ends[p]);
    }
    fdl__buf_puts(&b, ")");
    int ok = !b.oom;
    if (ok && b.len > TEXT_MAX) {
        b.len = TEXT_MAX - 4;
        fdl__buf_puts(&b, "...)");
    }
    if (ok)
        fdl__buf_append(out, b.data, b.len);
    fdl__buf_free(&b);
    return ok;
}

/*
 * What comes before the function's name at @p at in its declaration, back to the previous ';',
 * '{', '}' or preprocessor line (read forward from a line start at most SCAN_MAX bytes before,
 * comments and literals stepped over), as "float " or "__global__ void ". Linkage and storage
 * words are left out. @p kernel: set when __global__ is among them.
 */
static void prefix(fdl__buf *out, const char *s, size_t at, int *kernel)
{
    *kernel = 0;
    size_t i = at > SCAN_MAX ? at - SCAN_MAX : 0, b;
    if (i > 0 && s[i - 1] != '\n') { /* from the next line's start */
        const char *nl = memchr(s + i, '\n', at - i);
        i = nl ? (size_t)(nl - s) + 1 : at;
    }
    b = i;
    int line_start = 1;
    while (i < at) {
        if (s[i] == '\n') {
            line_start = 1;
            i++;
            continue;
        }
        size_t j = skip_space(s, at, i);
        if (j != i) {
            for (size_t k = i; k < j; k++)
                line_start |= s[k] == '\n';
            i = j;
            continue;
        }
        if (line_start && s[i] == '#') { /* a preprocessor line, continuations included */
            while (i < at && (s[i] != '\n' || (i > 0 && s[i - 1] == '\\')))
                i++;
            b = i;
            continue;
        }
        line_start = 0;
        if (s[i] == '"' || s[i] == '\'') {
            char q = s[i];
            for (i++; i < at && s[i] != q; i++)
                i += s[i] == '\\';
            i += i < at;
            continue;
        }
        if (s[i] == ';' || s[i] == '{' || s[i] == '}')
            b = i + 1;
        i++;
    }
    toks k;
    tokenize(&k, s, b, at);
    fdl__buf kept = {0};
    int first = 1;
    for (size_t t = 0; t < k.n; t++) {
        if (tok_is(&k, t, "__global__"))
            *kernel = 1;
        if (tok_is(&k, t, "extern") || tok_is(&k, t, "\"C\"") || tok_is(&k, t, "__device__") ||
            tok_is(&k, t, "static") || tok_is(&k, t, "inline") ||
            tok_is(&k, t, "__forceinline__") || tok_is(&k, t, "__noinline__"))
            continue;
        if (!first && (tok_word(&k, t) || tok_is(&k, t, "*")))
            fdl__buf_puts(&kept, " ");
        fdl__buf_append(&kept, k.t[t], k.len[t]);
        first = 0;
    }
    if (!kept.oom && kept.len && kept.len < TEXT_MAX && !k.over) {
        fdl__buf_append(out, kept.data, kept.len);
        fdl__buf_puts(out, " ");
    }
    fdl__buf_free(&kept);
}

/* Byte offset of 1-based @p line in s[0..n), or n. */
static size_t line_start(const char *s, size_t n, unsigned line)
{
    size_t off = 0;
    for (unsigned l = 1; l < line && off < n; l++) {
        const char *nl = memchr(s + off, '\n', n - off);
        if (!nl)
            return n;
        off = (size_t)(nl - s) + 1;
    }
    return off;
}

/* The identifier that spans @p at in s[0..n): its start and length; 0 when none. */
static size_t ident_at(const char *s, size_t n, size_t at, size_t *start)
{
    if (at >= n || !ident_char(s[at]))
        return 0;
    size_t b = at, e = at;
    while (b > 0 && ident_char(s[b - 1]))
        b--;
    while (e < n && ident_char(s[e]))
        e++;
    if (isdigit((unsigned char)s[b]))
        return 0;
    *start = b;
    return e - b;
}

/* The first whole-word @p name followed by '(' on the line from @p ls; SIZE_MAX when none. */
static size_t find_on_line(const char *s, size_t n, size_t ls, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = ls; i + nl <= n && s[i] != '\n'; i++)
        if (memcmp(s + i, name, nl) == 0 && (i == 0 || !ident_char(s[i - 1])) &&
            (i + nl == n || !ident_char(s[i + nl]))) {
            size_t j = skip_space(s, n, i + nl);
            if (j < n && s[j] == '(')
                return i;
        }
    return SIZE_MAX;
}

/* NVRTC's words for a definition that conflicts with an earlier declaration of the name. */
typedef enum conflict {
    NONE,
    PARAMS,      /* "more than one instance of overloaded function "f" has "C" linkage" */
    RETURN_TYPE, /* "cannot overload functions distinguished by return type alone" */
    INCOMPATIBLE /* "declaration is incompatible with previous "f" (declared at ...)" */
} conflict;

static conflict classify(const char *msg, char *quoted, size_t cap)
{
    static const char c_linkage[] = "more than one instance of overloaded function \"";
    static const char incompatible[] = "declaration is incompatible with previous \"";
    const char *q = NULL;
    conflict c = NONE;
    quoted[0] = '\0';
    if (strncmp(msg, c_linkage, sizeof c_linkage - 1) == 0 && strstr(msg, "has \"C\" linkage"))
        c = PARAMS, q = msg + sizeof c_linkage - 1;
    else if (strncmp(msg, incompatible, sizeof incompatible - 1) == 0)
        c = INCOMPATIBLE, q = msg + sizeof incompatible - 1;
    else if (strncmp(msg, "cannot overload functions distinguished by return type alone", 60) == 0)
        c = RETURN_TYPE;
    if (q) {
        const char *e = strchr(q, '"');
        size_t len = e ? (size_t)(e - q) : 0;
        if (len < cap) {
            memcpy(quoted, q, len);
            quoted[len] = '\0';
        }
    }
    return c;
}

int fdl__link_cuda_conflict(fdl_link *link, const char *source, size_t size, const char *name,
                            const char *log, fdl_error *err)
{
    if (!err || err->code != FDL_EPARSE || !link->ndecls || !log || !err->line ||
        strcmp(err->source, name) != 0)
        return 0;
    fdl__diags d = {0};
    int done = 0;
    fdl__diags_parse_nvrtc(&d, log);
    for (size_t r = 0; r < d.n && !done; r++) {
        const fdl_diagnostic *g = &d.v[r];
        char quoted[FDL_ERROR_SYMBOL_MAX];
        conflict c;
        if (g->severity != FDL_SEVERITY_ERROR || g->line != err->line ||
            g->column != err->column || strcmp(g->file, name) != 0 ||
            (c = classify(g->message, quoted, sizeof quoted)) == NONE)
            continue;
        /* the name: NVRTC's quoted one, else the word at its column; declared either way */
        size_t ls = line_start(source, size, g->line), at = SIZE_MAX, start = 0, len = 0;
        char word[FDL_ERROR_SYMBOL_MAX] = "";
        if (ls < size && g->column && g->column - 1 < size - ls &&
            (len = ident_at(source, size, ls + g->column - 1, &start)) != 0 &&
            len < sizeof word) {
            memcpy(word, source + start, len);
            word[len] = '\0';
        }
        const char *fname = quoted[0] ? quoted : word;
        const fdl_decl *decl = fname[0] ? fdl__link_find_decl(link, fname) : NULL;
        if (!decl)
            continue;
        if (strcmp(word, decl->name) == 0)
            at = start;
        else if (ls < size)
            at = find_on_line(source, size, ls, decl->name);
        /* the definition's types, as written */
        fdl__buf def = {0};
        int kernel = 0;
        if (at != SIZE_MAX) {
            if (c != PARAMS)
                prefix(&def, source, at, &kernel);
            if (!param_list(&def, source, size, at, strlen(decl->name))) {
                fdl__buf_free(&def);
                kernel = 0;
            }
        }
        char declared[FDL_SIG_MAX_LENGTH];
        fdl_sig_format(&decl->sig, declared, sizeof declared);
        const char *defined = def.data && !def.oom ? def.data : "other types";
        int rule = kernel ? 11 : c == PARAMS ? 5 : decl->abi == FDL_ABI_C ? 9 : 2;
        char text[FDL_ERROR_MESSAGE_MAX];
        if (kernel)
            snprintf(text, sizeof text, "defined as a kernel, %.200s, but a foreign function must "
                     "be a device function", defined);
        else
            snprintf(text, sizeof text, "defined as %.240s, declared %.160s%s%s", defined,
                     declared, decl->abi == FDL_ABI_C ? " abi=c" : "",
                     rule == 2 ? ": a foreign function returns int, its status" : "");
        int backend = err->backend_code;
        const char *keep_log = err->log;
        fdl__error(err, FDL_EABI, name, g->line, g->column, decl->name,
                   "%s: %.380s (ABI-%d; declared at %s:%u:%u)", decl->name, text, rule,
                   decl->source, decl->line, decl->column);
        fdl__error_rule(err, rule);
        fdl__error_decl(err, decl->source, decl->line, decl->column);
        err->backend_code = backend;
        err->log = keep_log;
        /* fdlink's record beside NVRTC's: the rule as its code (fdl_link_diagnostic); the
         * caller has the error itself, as for any other input refused when added */
        fdl__diags_add_error(&link->diags, err);
        fdl__buf_free(&def);
        done = 1;
    }
    fdl__diags_free(&d);
    return done;
}
