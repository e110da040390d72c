/*
 * Links: inputs (kind sniffed from content), options, the declaration check and nvJitLink.
 *
 * Every input handed to the backend is copied and kept for the life of the link; PTX inputs are
 * also scanned (fdl_ptx_scan) so that fdl_link_complete can check them against declarations
 * before linking.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "fdlink/link.h"
#include "fdlink/ptx.h"
#include "internal.h"
#include "nvjitlink.h"

/* Most options one link passes to nvJitLink (arch, -O, -g, -lineinfo, -verbose and extras). */
#define MAX_OPTIONS 4096

typedef struct link_input {
    char *name;
    char *data; /* size bytes, then a NUL */
    size_t size;
    fdl_input_kind kind;
    fdl_ptx *ptx; /* the scan of a PTX input */
} link_input;

enum link_state { LINK_OPEN, LINK_DONE, LINK_FAILED };

struct fdl_link {
    const fdl__nvjl *nv;
    nvJitLinkHandle handle;
    char **optv;
    size_t optc;
    link_input *inputs;
    size_t ninputs;
    size_t cap;
    const fdl_decls *decls;
    fdl_diag_fn on_diag;
    void *diag_ctx;
    enum link_state state;
    unsigned char *cubin;
    size_t cubin_size;
    char *info_log;
    char *error_log;
    /* logs replaced by newer ones, kept because an fdl_error may still borrow them */
    char **old_logs;
    size_t nold;
    double wall_ms;
};

const char *fdl_input_kind_name(fdl_input_kind kind)
{
    switch (kind) {
    case FDL_KIND_AUTO: return "auto";
    case FDL_KIND_PTX: return "ptx";
    case FDL_KIND_CUBIN: return "cubin";
    case FDL_KIND_FATBIN: return "fatbin";
    case FDL_KIND_LTOIR: return "ltoir";
    case FDL_KIND_OBJECT: return "object";
    case FDL_KIND_LIBRARY: return "library";
    case FDL_KIND_CUDA: return "cuda";
    }
    return "unknown";
}

/* ---- options ---------------------------------------------------------------------------- */

/*
 * sm_NN, sm_NNa or sm_NNf: two to four digits, no leading zero. nvJitLink ends the whole process
 * (exit status 1) when given a one-digit architecture such as sm_9, so the form is checked here.
 */
static int arch_valid(const char *arch)
{
    if (strncmp(arch, "sm_", 3) != 0)
        return 0;
    const char *p = arch + 3;
    if (*p < '1' || *p > '9')
        return 0;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9') {
        digits++;
        p++;
    }
    if (digits < 2 || digits > 4)
        return 0;
    if (*p == 'a' || *p == 'f')
        p++;
    return *p == '\0';
}

static int push_option(fdl_link *link, const char *fmt, const char *value, fdl_error *err)
{
    fdl__buf b = {0};
    fdl__buf_printf(&b, fmt, value);
    if (b.oom)
        return fdl__fail(err, FDL_ENOMEM, "out of memory building link options");
    link->optv[link->optc++] = b.data;
    return FDL_OK;
}

static int validate_options(const fdl_link_options *opts, size_t *nextra, fdl_error *err)
{
    *nextra = 0;
    if (opts->version != FDL_LINK_OPTIONS_VERSION)
        return fdl__fail(err, FDL_EINVAL, "unsupported fdl_link_options version %u (expected %u)",
                         opts->version, (unsigned)FDL_LINK_OPTIONS_VERSION);
    if (!opts->arch)
        return fdl__fail(err, FDL_EINVAL, "no arch given (expected sm_NN, e.g. sm_90)");
    if (!arch_valid(opts->arch))
        return fdl__fail(err, FDL_EINVAL, "invalid arch '%.64s' (expected sm_NN, e.g. sm_90)",
                         opts->arch);
    if (opts->opt_level < -1 || opts->opt_level > 3)
        return fdl__fail(err, FDL_EINVAL,
                         "invalid opt_level %d (expected 0..3, or -1 for the backend's default)",
                         opts->opt_level);
    for (size_t i = 0; opts->extra && opts->extra[i]; i++) {
        if (i >= MAX_OPTIONS)
            return fdl__fail(err, FDL_ELIMIT, "more than %d extra link options", MAX_OPTIONS);
        /* the arch is validated above; one smuggled in here would bypass that */
        if (strncmp(opts->extra[i], "-arch", 5) == 0)
            return fdl__fail(err, FDL_EINVAL,
                             "extra option '%.64s': set the arch field instead", opts->extra[i]);
        ++*nextra;
    }
    return FDL_OK;
}

/* ---- logs ------------------------------------------------------------------------------- */

/* Fetch one of the backend's logs into a fresh NUL-terminated buffer ("" when empty). */
static char *fetch_log(const fdl__nvjl *nv, nvJitLinkHandle h, int info)
{
    size_t size = 0;
    nvJitLinkResult r = info ? nv->get_info_log_size(h, &size) : nv->get_error_log_size(h, &size);
    if (r != NVJITLINK_SUCCESS)
        size = 0;
    size_t cap;
    if (!fdl__size_add(&cap, size, 1))
        return NULL;
    char *log = calloc(cap, 1);
    if (!log)
        return NULL;
    if (size) {
        r = info ? nv->get_info_log(h, log) : nv->get_error_log(h, log);
        if (r != NVJITLINK_SUCCESS)
            log[0] = '\0';
    }
    log[size] = '\0';
    return log;
}

/* Replace a log with a fresh copy, keeping the old one alive for errors that borrow it. */
static int refresh_log(fdl_link *link, int info)
{
    char *fresh = fetch_log(link->nv, link->handle, info);
    if (!fresh)
        return 0;
    char **slot = info ? &link->info_log : &link->error_log;
    if (*slot) {
        size_t n;
        char **grown = NULL;
        if (fdl__size_add(&n, link->nold, 1) && fdl__size_mul(&n, n, sizeof *grown))
            grown = realloc(link->old_logs, n);
        if (!grown) {
            free(fresh);
            return 0;
        }
        link->old_logs = grown;
        link->old_logs[link->nold++] = *slot;
    }
    *slot = fresh;
    return 1;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Skip one word of letters; return the end, or @p p when there is none. */
static const char *skip_word(const char *p, const char *end)
{
    while (p < end && isalpha((unsigned char)*p))
        p++;
    return p;
}

/*
 * If the line is `[tool ]error|fatal <spaces>: text`, point *tool and *text at those parts (the
 * tool's length in *tool_len) and return 1. Lines such as "ERROR 9: finish" are not headlines.
 */
static int parse_severity_line(const char *p, const char *end, const char **tool, size_t *tool_len,
                               const char **text)
{
    *tool = NULL;
    *tool_len = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *w = skip_word(p, end);
        size_t n = (size_t)(w - p);
        if ((n == 5 && (memcmp(p, "error", 5) == 0 || memcmp(p, "fatal", 5) == 0))) {
            const char *q = w;
            while (q < end && is_blank(*q))
                q++;
            if (q < end && *q == ':') {
                q++;
                while (q < end && is_blank(*q))
                    q++;
                *text = q;
                return 1;
            }
            return 0;
        }
        /* one leading tool name ("ptxas fatal : ...") is allowed */
        if (attempt == 1 || n == 0 || w >= end || *w != ' ')
            return 0;
        *tool = p;
        *tool_len = n;
        p = w;
        while (p < end && is_blank(*p))
            p++;
    }
    return 0;
}

/*
 * The line of a backend log that says what went wrong, for a one-line message: the first
 * `error`/`fatal` line without its severity tag ("ptxas: value 'sm_75a' is not defined ..."),
 * else the first non-blank line. The symbol named by an undefined-reference or
 * multiple-definition line goes to @p symbol. Both outputs are "" when the log says nothing.
 */
static void log_headline(const char *log, char *out, size_t size, char *symbol, size_t symsize)
{
    out[0] = '\0';
    symbol[0] = '\0';
    const char *first = NULL, *first_end = NULL;
    const char *line = log;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        const char *p = line, *e = end;
        while (p < e && (is_blank(*p)))
            p++;
        while (e > p && is_blank(e[-1]))
            e--;
        const char *tool, *text;
        size_t tool_len;
        if (p < e && parse_severity_line(p, e, &tool, &tool_len, &text) && text < e) {
            fdl__buf b = {0};
            if (tool)
                fdl__buf_printf(&b, "%.*s: ", (int)tool_len, tool);
            size_t at = b.len;
            fdl__buf_append(&b, text, (size_t)(e - text));
            /* "Undefined reference" reads as "undefined reference"; "PTX ..." stays */
            if (!b.oom && b.len > at + 1 && isupper((unsigned char)b.data[at]) &&
                islower((unsigned char)b.data[at + 1]))
                b.data[at] = (char)tolower((unsigned char)b.data[at]);
            if (!b.oom)
                fdl__strlcpy(out, b.data, size);
            fdl__buf_free(&b);
            static const char *const markers[] = {"reference to '", "definition of '"};
            for (size_t i = 0; i < 2; i++) {
                const char *m = strstr(out, markers[i]);
                if (!m)
                    continue;
                m += strlen(markers[i]);
                const char *q = strchr(m, '\'');
                if (q && q > m && (size_t)(q - m) < symsize) {
                    memcpy(symbol, m, (size_t)(q - m));
                    symbol[q - m] = '\0';
                }
                break;
            }
            return;
        }
        if (!first && p < e) {
            first = p;
            first_end = e;
        }
        line = *end ? end + 1 : NULL;
    }
    if (first) {
        size_t n = (size_t)(first_end - first);
        if (n >= size)
            n = size - 1;
        memcpy(out, first, n);
        out[n] = '\0';
    }
}

/*
 * Fill @p err for a failed backend call: the headline of the error log after @p what, the whole
 * log in err->log (borrowed from the link), the result in err->backend_code.
 */
static int backend_error(fdl_link *link, nvJitLinkResult r, const char *source, const char *what,
                         fdl_error *err)
{
    if (!refresh_log(link, 0))
        return fdl__fail(err, FDL_ENOMEM, "out of memory reading the nvJitLink log");
    char headline[FDL_ERROR_MESSAGE_MAX];
    char symbol[FDL_ERROR_SYMBOL_MAX];
    log_headline(link->error_log, headline, sizeof headline, symbol, sizeof symbol);
    if (headline[0])
        fdl__error(err, FDL_ELINK, source, 0, 0, symbol[0] ? symbol : NULL, "%s: %s", what,
                   headline);
    else
        fdl__error(err, FDL_ELINK, source, 0, 0, NULL, "%s: %s", what,
                   fdl__nvjl_result_name((int)r));
    if (err) {
        err->backend_code = (int)r;
        err->log = link->error_log;
    }
    return FDL_ELINK;
}

/* ---- create / destroy ------------------------------------------------------------------- */

int fdl_link_create(fdl_link **out, const fdl_link_options *opts, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(opts))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_create: opts is NULL");
    int rc;
    fdl_link *link = NULL;
    size_t nextra = 0;
    rc = validate_options(opts, &nextra, err);
    if (rc != FDL_OK)
        goto cleanup;
    const fdl__nvjl *nv;
    rc = fdl__nvjl_get(&nv, err);
    if (rc != FDL_OK)
        goto cleanup;
    link = calloc(1, sizeof *link);
    if (!link) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory creating a link");
        goto cleanup;
    }
    link->nv = nv;
    size_t nopts;
    if (!fdl__size_add(&nopts, nextra, 5) ||
        !(link->optv = calloc(nopts, sizeof *link->optv))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory building link options");
        goto cleanup;
    }
    char level[2] = {(char)('0' + (opts->opt_level < 0 ? 0 : opts->opt_level)), '\0'};
    if ((rc = push_option(link, "-arch=%s", opts->arch, err)) != FDL_OK ||
        (opts->opt_level >= 0 && (rc = push_option(link, "-O%s", level, err)) != FDL_OK) ||
        (opts->debug && (rc = push_option(link, "%s", "-g", err)) != FDL_OK) ||
        (opts->lineinfo && (rc = push_option(link, "%s", "-lineinfo", err)) != FDL_OK) ||
        (opts->verbose && (rc = push_option(link, "%s", "-verbose", err)) != FDL_OK))
        goto cleanup;
    for (size_t i = 0; i < nextra; i++)
        if ((rc = push_option(link, "%s", opts->extra[i], err)) != FDL_OK)
            goto cleanup;
    nvJitLinkResult r = nv->create(&link->handle, (uint32_t)link->optc, (const char **)link->optv);
    if (r != NVJITLINK_SUCCESS) {
        /* The handle may hold a log even though creation failed; the link is not returned, so
         * the headline goes in the message and err->log stays NULL. */
        char headline[FDL_ERROR_MESSAGE_MAX] = "";
        char symbol[FDL_ERROR_SYMBOL_MAX];
        char *log = link->handle ? fetch_log(nv, link->handle, 0) : NULL;
        if (log)
            log_headline(log, headline, sizeof headline, symbol, sizeof symbol);
        free(log);
        rc = fdl__fail(err, FDL_ELINK, "nvJitLink rejected the options: %s",
                       headline[0] ? headline : fdl__nvjl_result_name((int)r));
        if (err)
            err->backend_code = (int)r;
        goto cleanup;
    }
    *out = link;
    link = NULL;
    rc = FDL_OK;
cleanup:
    fdl_link_destroy(link);
    return rc;
}

void fdl_link_destroy(fdl_link *link)
{
    if (!link)
        return;
    if (link->handle)
        link->nv->destroy(&link->handle);
    for (size_t i = 0; i < link->optc; i++)
        free(link->optv[i]);
    free(link->optv);
    for (size_t i = 0; i < link->ninputs; i++) {
        free(link->inputs[i].name);
        free(link->inputs[i].data);
        fdl_ptx_destroy(link->inputs[i].ptx);
    }
    free(link->inputs);
    free(link->cubin);
    free(link->info_log);
    free(link->error_log);
    for (size_t i = 0; i < link->nold; i++)
        free(link->old_logs[i]);
    free(link->old_logs);
    free(link);
}

int fdl_link_add_decls(fdl_link *link, const fdl_decls *decls, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(decls))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_add_decls: link or decls is NULL");
    if (link->state != LINK_OPEN)
        return fdl__fail(err, FDL_EINVAL, "the link is already complete");
    link->decls = decls;
    return FDL_OK;
}

int fdl_link_set_diag(fdl_link *link, fdl_diag_fn fn, void *ctx)
{
    if (!FDL__CHECK_ARG(link))
        return FDL_EINVAL;
    link->on_diag = fn;
    link->diag_ctx = ctx;
    return FDL_OK;
}

/* ---- inputs ----------------------------------------------------------------------------- */

/* Skip whitespace, `//` and `/ * * /` comments; return where the text proper starts. */
static size_t skip_ptx_preamble(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        char c = s[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
            i++;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
                i++;
            if (i + 1 >= n)
                return n; /* unterminated comment: nothing follows */
            i += 2;
        } else {
            break;
        }
    }
    return i;
}

/* PTX begins with a `.version` directive, after comments and whitespace. */
static int looks_like_ptx(const char *s, size_t n)
{
    size_t i = skip_ptx_preamble(s, n);
    static const char directive[] = ".version";
    size_t dn = sizeof directive - 1;
    return n - i > dn && memcmp(s + i, directive, dn) == 0 &&
           (s[i + dn] == ' ' || s[i + dn] == '\t');
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* What content that is not PTX appears to be, for the message. */
static const char *describe_content(const unsigned char *p, size_t n)
{
    if (n >= 4 && memcmp(p, "\x7f" "ELF", 4) == 0) {
        if (n >= 20 && p[5] == 1 && (p[18] | p[19] << 8) == 190)
            return "a cubin (an ELF file for NVIDIA GPUs), not supported as an input yet";
        return "an ELF file";
    }
    if (n >= 4 && le32(p) == 0xBA55ED50u)
        return "a fatbin, not supported as an input yet";
    if (n >= 4 && le32(p) == 0x7F4E43EDu)
        return "LTO-IR (an NVVM container), not supported as an input yet";
    if (n >= 8 && memcmp(p, "!<arch>\n", 8) == 0)
        return "an ar archive (a static library), not supported as an input yet";
    if (n >= 4 && memcmp(p, "BC\xc0\xde", 4) == 0)
        return "LLVM bitcode";
    size_t look = n < 512 ? n : 512;
    for (size_t i = 0; i < look; i++) {
        unsigned char c = p[i];
        if (c == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f'))
            return "binary data";
    }
    return "text without a .version directive";
}

static int not_ptx_error(const char *name, const unsigned char *p, size_t n, fdl_error *err)
{
    char hex[32] = "";
    size_t show = n < 4 ? n : 4, at = 0;
    for (size_t i = 0; i < show; i++)
        at += (size_t)snprintf(hex + at, sizeof hex - at, "%s%02x", i ? " " : "", p[i]);
    if (n > show)
        snprintf(hex + at, sizeof hex - at, " ...");
    return fdl__error(err, FDL_EKIND, name, 0, 0, NULL, "not a PTX file (found %s: %s)", hex,
                      describe_content(p, n));
}

int fdl_link_add_data(fdl_link *link, const void *data, size_t size, const char *name,
                      fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(data || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_add_data: link, name or data is NULL");
    if (link->state != LINK_OPEN)
        return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "the link is already complete");
    if (!size)
        return fdl__error(err, FDL_EKIND, name, 0, 0, NULL, "empty input");
    switch (kind) {
    case FDL_KIND_AUTO:
    case FDL_KIND_PTX:
        break;
    case FDL_KIND_CUBIN:
    case FDL_KIND_FATBIN:
    case FDL_KIND_LTOIR:
    case FDL_KIND_OBJECT:
    case FDL_KIND_LIBRARY:
    case FDL_KIND_CUDA:
        return fdl__error(err, FDL_EKIND, name, 0, 0, NULL, "%s inputs are not supported yet",
                          fdl_input_kind_name(kind));
    default:
        return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "unknown input kind %d", (int)kind);
    }
    if (!looks_like_ptx(data, size))
        return not_ptx_error(name, data, size, err);

    int rc;
    link_input in = {0};
    in.kind = FDL_KIND_PTX;
    in.size = size;
    size_t cap;
    if (link->ninputs == link->cap) {
        size_t ncap = link->cap ? link->cap : 4, bytes;
        if (link->cap && !fdl__size_mul(&ncap, link->cap, 2)) {
            rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "too many inputs");
            goto cleanup;
        }
        link_input *grown = NULL;
        if (fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(link->inputs, bytes);
        if (!grown) {
            rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory adding an input");
            goto cleanup;
        }
        link->inputs = grown;
        link->cap = ncap;
    }
    in.name = fdl__strdup(name);
    if (fdl__size_add(&cap, size, 1))
        in.data = malloc(cap);
    if (!in.name || !in.data) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory copying %zu bytes",
                        size);
        goto cleanup;
    }
    memcpy(in.data, data, size);
    in.data[size] = '\0';
    rc = fdl_ptx_scan(&in.ptx, in.data, size, in.name, err);
    if (rc != FDL_OK)
        goto cleanup;
    link->inputs[link->ninputs++] = in;
    memset(&in, 0, sizeof in);
    rc = FDL_OK;
cleanup:
    free(in.name);
    free(in.data);
    fdl_ptx_destroy(in.ptx);
    return rc;
}

int fdl_link_add_file(fdl_link *link, const char *path, fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(path))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_add_file: link or path is NULL");
    char *data = NULL;
    size_t size = 0;
    int rc = fdl__read_file(path, &data, &size, err);
    if (rc != FDL_OK)
        goto cleanup;
    rc = fdl_link_add_data(link, data, size, path, kind, err);
cleanup:
    free(data);
    return rc;
}

/* ---- complete --------------------------------------------------------------------------- */

/* ABI-2..ABI-12: every PTX input against the declarations, before the backend sees a thing. */
static int check_decls(fdl_link *link, fdl_error *err)
{
    int rc;
    const fdl_ptx **ptx = NULL;
    size_t n = 0, bytes;
    if (!fdl__size_mul(&bytes, link->ninputs ? link->ninputs : 1, sizeof *ptx) ||
        !(ptx = malloc(bytes))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory checking declarations");
        goto cleanup;
    }
    for (size_t i = 0; i < link->ninputs; i++)
        if (link->inputs[i].ptx)
            ptx[n++] = link->inputs[i].ptx;
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    opts.on_diag = link->on_diag;
    opts.ctx = link->diag_ctx;
    size_t ndiags = 0;
    rc = fdl_abi_check(&ndiags, link->decls, ptx, n, &opts, err);
cleanup:
    free(ptx);
    return rc;
}

/*
 * ABI-6 for every name, declared or not: a `.visible` function or kernel defined in two inputs.
 * nvJitLink reports this on stderr only and links anyway, keeping one of the definitions.
 */
static int check_duplicates(const fdl_link *link, fdl_error *err)
{
    for (size_t i = 1; i < link->ninputs; i++) {
        const fdl_ptx *ptx = link->inputs[i].ptx;
        for (size_t k = 0; k < fdl_ptx_count(ptx); k++) {
            const fdl_ptx_func *f = fdl_ptx_get(ptx, k);
            if (!f->is_definition || f->linkage != FDL_PTX_LINK_VISIBLE)
                continue;
            for (size_t j = 0; j < i; j++) {
                const fdl_ptx_func *g = fdl_ptx_find(link->inputs[j].ptx, f->name);
                if (!g || !g->is_definition || g->linkage != FDL_PTX_LINK_VISIBLE)
                    continue;
                return fdl__error(err, FDL_ELINK, link->inputs[i].name, f->line, f->column,
                                  f->name, "multiple definition of '%s', first defined at "
                                  "%s:%u:%u (ABI-6)",
                                  f->name, link->inputs[j].name, g->line, g->column);
            }
        }
    }
    return FDL_OK;
}

int fdl_link_complete(fdl_link *link, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_complete: link is NULL");
    if (link->state != LINK_OPEN)
        return fdl__fail(err, FDL_EINVAL, "the link is already complete");
    if (!link->ninputs)
        return fdl__fail(err, FDL_EINVAL, "nothing to link: no inputs were added");
    int rc;
    if (link->decls && (rc = check_decls(link, err)) != FDL_OK)
        return rc;
    if ((rc = check_duplicates(link, err)) != FDL_OK)
        return rc;
    /* The backend sees the inputs only now, after the check: nvJitLink compiles PTX as it is
     * added and complains (on stderr too) about what the check reports better. */
    link->state = LINK_FAILED;
    uint64_t start = fdl__now_ns();
    nvJitLinkResult r = NVJITLINK_SUCCESS;
    const char *refused = NULL; /* the input the backend refused, if it was one */
    for (size_t i = 0; i < link->ninputs && !refused; i++) {
        const link_input *in = &link->inputs[i];
        r = link->nv->add_data(link->handle, NVJITLINK_INPUT_PTX, in->data, in->size, in->name);
        if (r != NVJITLINK_SUCCESS)
            refused = in->name;
    }
    if (!refused)
        r = link->nv->complete(link->handle);
    link->wall_ms = (double)(fdl__now_ns() - start) / 1e6;
    if (!refresh_log(link, 1)) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory reading the nvJitLink log");
        goto cleanup;
    }
    if (refused) {
        rc = backend_error(link, r, refused, "nvJitLink rejected the input", err);
        goto cleanup;
    }
    if (r != NVJITLINK_SUCCESS) {
        rc = backend_error(link, r, NULL, "link failed", err);
        goto cleanup;
    }
    size_t size = 0;
    r = link->nv->get_linked_cubin_size(link->handle, &size);
    if (r == NVJITLINK_SUCCESS && size == 0)
        r = NVJITLINK_ERROR_INTERNAL;
    if (r != NVJITLINK_SUCCESS) {
        rc = backend_error(link, r, NULL, "no linked cubin", err);
        goto cleanup;
    }
    link->cubin = malloc(size);
    if (!link->cubin) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory copying a cubin of %zu bytes", size);
        goto cleanup;
    }
    r = link->nv->get_linked_cubin(link->handle, link->cubin);
    if (r != NVJITLINK_SUCCESS) {
        free(link->cubin);
        link->cubin = NULL;
        rc = backend_error(link, r, NULL, "cannot copy the linked cubin", err);
        goto cleanup;
    }
    link->cubin_size = size;
    /* the error log may hold warnings even on success */
    if (!refresh_log(link, 0)) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory reading the nvJitLink log");
        goto cleanup;
    }
    link->state = LINK_DONE;
    rc = FDL_OK;
cleanup:
    return rc;
}

const void *fdl_link_cubin(const fdl_link *link, size_t *size)
{
    if (size)
        *size = 0;
    if (!link || link->state != LINK_DONE)
        return NULL;
    if (size)
        *size = link->cubin_size;
    return link->cubin;
}

int fdl_link_write(const fdl_link *link, const char *path, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(path))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_write: link or path is NULL");
    if (link->state != LINK_DONE)
        return fdl__error(err, FDL_EINVAL, path, 0, 0, NULL,
                          "nothing to write: the link has not completed");
    return fdl__write_atomic(path, link->cubin, link->cubin_size, err);
}

const char *fdl_link_info_log(const fdl_link *link)
{
    return link && link->info_log ? link->info_log : "";
}

const char *fdl_link_error_log(const fdl_link *link)
{
    return link && link->error_log ? link->error_log : "";
}

double fdl_link_wall_ms(const fdl_link *link)
{
    return link ? link->wall_ms : 0.0;
}

int fdl_link_backend_version(unsigned *major, unsigned *minor, fdl_error *err)
{
    if (!FDL__CHECK_ARG(major) || !FDL__CHECK_ARG(minor))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_backend_version: major or minor is NULL");
    *major = 0;
    *minor = 0;
    const fdl__nvjl *nv;
    int rc = fdl__nvjl_get(&nv, err);
    if (rc != FDL_OK)
        return rc;
    if (!nv->version)
        return fdl__fail(err, FDL_ENOLIB,
                         "nvJitLink lacks nvJitLinkVersion (added in CUDA 12.3): too old to say");
    unsigned int a = 0, b = 0;
    nvJitLinkResult r = nv->version(&a, &b);
    if (r != NVJITLINK_SUCCESS) {
        rc = fdl__fail(err, FDL_ELINK, "nvJitLinkVersion failed: %s",
                       fdl__nvjl_result_name((int)r));
        if (err)
            err->backend_code = (int)r;
        return rc;
    }
    *major = a;
    *minor = b;
    return FDL_OK;
}
