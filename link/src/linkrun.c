/*
 * The backends of a link: nvJitLink runs (the link, the post-LTO PTX of the checks) and the
 * driver's cuLink; their logs, kept whole, and the one-line errors made from them, undefined
 * symbols said fully.
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
#include "linkint.h"
#include "linkobj.h"
#include "nvjitlink.h"

/* ---- logs ------------------------------------------------------------------------------------ */
/* Make @p text (owned, may be NULL for "") the link's info or error log, keeping the old one. */
int fdl__link_set_log(fdl_link *link, int info, char *text)
{
    if (!text && !(text = calloc(1, 1)))
        return 0;
    char **slot = info ? &link->info_log : &link->error_log;
    if (*slot) {
        size_t n;
        char **grown = NULL;
        if (fdl__size_add(&n, link->nold, 1) && fdl__size_mul(&n, n, sizeof *grown))
            grown = realloc(link->old_logs, n);
        if (!grown) {
            free(text);
            return 0;
        }
        link->old_logs = grown;
        link->old_logs[link->nold++] = *slot;
    }
    *slot = text;
    return 1;
}

static char *dup_or_empty(const char *s)
{
    return fdl__strdup(s ? s : "");
}

/* Fetch one of nvJitLink's logs into a fresh NUL-terminated buffer ("" when empty). */
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

/* The symbol quoted after one of the markers in @p text, into @p symbol ("" when none). */
static void quoted_symbol(const char *text, char *symbol, size_t size)
{
    static const char *const markers[] = {"reference to '", "definition of '",
                                          "extern function '"};
    symbol[0] = '\0';
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        const char *m = strstr(text, markers[i]);
        if (!m)
            continue;
        m += strlen(markers[i]);
        const char *q = strchr(m, '\'');
        if (q && q > m && (size_t)(q - m) < size) {
            memcpy(symbol, m, (size_t)(q - m));
            symbol[q - m] = '\0';
        }
        return;
    }
}

/*
 * The line of a backend log that says what went wrong, for a one-line message: the first
 * `error`/`fatal` line without its severity tag ("ptxas: value 'sm_75a' is not defined ..."),
 * else the first non-blank line. The symbol named by an undefined-reference, unresolved-extern or
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
            quoted_symbol(out, symbol, symsize);
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

/* ---- nvJitLink ------------------------------------------------------------------------------- */
/* Let nvJitLink refuse bad options now rather than at the end (a handle that is then dropped). */
int fdl__link_probe(fdl_link *link, fdl_error *err)
{
    fdl__strv o;
    if (!fdl__link_jl_options(link, 0, 0, &o))
        return fdl__fail(err, FDL_ENOMEM, "out of memory building link options");
    int rc = FDL_OK;
    nvJitLinkHandle h = NULL;
    nvJitLinkResult r = link->nv->create(&h, (uint32_t)o.n, (const char **)o.v);
    if (r != NVJITLINK_SUCCESS) {
        /* the handle may hold a log even though creation failed */
        char headline[FDL_ERROR_MESSAGE_MAX] = "";
        char symbol[FDL_ERROR_SYMBOL_MAX];
        char *log = h ? fetch_log(link->nv, h, 0) : NULL;
        if (log)
            log_headline(log, headline, sizeof headline, symbol, sizeof symbol);
        free(log);
        rc = fdl__fail(err, FDL_ELINK, "nvJitLink rejected the options: %s",
                       headline[0] ? headline : fdl__nvjl_result_name((int)r));
        if (err)
            err->backend_code = (int)r;
    }
    if (h)
        link->nv->destroy(&h);
    fdl__strv_free(&o);
    return rc;
}

static nvJitLinkInputType jl_type(fdl_input_kind kind)
{
    switch (kind) {
    case FDL_KIND_PTX: return NVJITLINK_INPUT_PTX;
    case FDL_KIND_CUBIN: return NVJITLINK_INPUT_CUBIN;
    case FDL_KIND_FATBIN: return NVJITLINK_INPUT_FATBIN;
    case FDL_KIND_LTOIR: return NVJITLINK_INPUT_LTOIR;
    case FDL_KIND_OBJECT: return NVJITLINK_INPUT_OBJECT;
    case FDL_KIND_LIBRARY: return NVJITLINK_INPUT_LIBRARY;
    default: return NVJITLINK_INPUT_ANY;
    }
}

void fdl__jl_run_free(fdl__jl_run *run)
{
    free(run->out);
    free(run->info);
    free(run->error);
    memset(run, 0, sizeof *run);
}

/*
 * Link @p nins inputs (plus @p extra LTO-IR of @p extra_size bytes when not NULL) with nvJitLink.
 * @return FDL_OK; FDL_ELINK with run->r, run->refused and the logs; FDL_ENOMEM
 */
int fdl__jl_link(const fdl_link *link, int lto, int ptx, fdl__link_input *const *ins,
                 size_t nins, const unsigned char *extra, size_t extra_size, fdl__jl_run *run,
                 fdl_error *err)
{
    memset(run, 0, sizeof *run);
    const fdl__nvjl *nv = link->nv;
    fdl__strv o;
    if (!fdl__link_jl_options(link, lto, ptx, &o))
        return fdl__fail(err, FDL_ENOMEM, "out of memory building link options");
    int rc = FDL_OK;
    nvJitLinkHandle h = NULL;
    nvJitLinkResult r = nv->create(&h, (uint32_t)o.n, (const char **)o.v);
    for (size_t i = 0; r == NVJITLINK_SUCCESS && i < nins; i++) {
        const fdl__link_input *in = ins[i];
        r = nv->add_data(h, jl_type(in->kind), in->data, in->size, in->name);
        if (r != NVJITLINK_SUCCESS)
            run->refused = in->name;
    }
    if (r == NVJITLINK_SUCCESS && extra) {
        r = nv->add_data(h, NVJITLINK_INPUT_LTOIR, extra, extra_size, "fdlink-keep");
        if (r != NVJITLINK_SUCCESS)
            run->refused = "fdlink-keep";
    }
    if (r == NVJITLINK_SUCCESS)
        r = nv->complete(h);
    run->r = r;
    if (h) {
        run->info = fetch_log(nv, h, 1);
        run->error = fetch_log(nv, h, 0);
        if (!run->info || !run->error) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory reading the nvJitLink log");
            goto cleanup;
        }
    }
    if (r != NVJITLINK_SUCCESS) {
        rc = FDL_ELINK;
        goto cleanup;
    }
    size_t size = 0;
    r = ptx ? nv->get_linked_ptx_size(h, &size) : nv->get_linked_cubin_size(h, &size);
    if (r == NVJITLINK_SUCCESS && size == 0)
        r = NVJITLINK_ERROR_INTERNAL;
    if (r == NVJITLINK_SUCCESS) {
        size_t cap;
        if (!fdl__size_add(&cap, size, 1) || !(run->out = malloc(cap))) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory copying %zu bytes", size);
            goto cleanup;
        }
        r = ptx ? nv->get_linked_ptx(h, (char *)run->out) : nv->get_linked_cubin(h, run->out);
        run->out[size] = '\0';
        if (ptx)
            while (size && run->out[size - 1] == '\0')
                size--;
        run->out_size = size;
    }
    run->r = r;
    if (r != NVJITLINK_SUCCESS)
        rc = FDL_ELINK;
cleanup:
    if (h)
        nv->destroy(&h);
    fdl__strv_free(&o);
    return rc;
}

/*
 * Fill @p err for a failed backend run: the headline of @p log after @p what, the whole log made
 * the link's error log (err->log borrows it), @p code in err->backend_code.
 */
int fdl__link_backend_error(fdl_link *link, char *log, int code, const char *code_name,
                            const char *source, const char *what, char *symbol, size_t symsize,
                            fdl_error *err)
{
    if (!fdl__link_set_log(link, 0, log))
        return fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
    char headline[FDL_ERROR_MESSAGE_MAX];
    log_headline(link->error_log, headline, sizeof headline, symbol, symsize);
    if (headline[0])
        fdl__error(err, FDL_ELINK, source, 0, 0, symbol[0] ? symbol : NULL, "%s: %s", what,
                   headline);
    else
        fdl__error(err, FDL_ELINK, source, 0, 0, NULL, "%s: %s", what, code_name);
    if (err) {
        err->backend_code = code;
        err->log = link->error_log;
    }
    return FDL_ELINK;
}

/* ---- undefined symbols ----------------------------------------------------------------------- */
/*
 * An undefined symbol, said fully: the symbol, the input that references it, and where it is
 * declared (or that it is not). nvJitLink names the input itself for PTX and cubins
 * ("in 'caller.ptx'"); after LTO, ptxas only says "unresolved extern function", and the LTO-IR
 * inputs are linked alone to find the one that refers to it.
 */
static void undefined_error(fdl_link *link, const char *symbol, fdl_error *err)
{
    const char *where = NULL;
    unsigned line = 0, column = 0;
    char quoted[FDL_ERROR_SOURCE_MAX] = "";
    if (!fdl__link_find_reference(link, symbol, &where, &line, &column) && link->lto &&
        link->backend == FDL_BACKEND_NVJITLINK) {
        for (size_t i = 0; i < link->ninputs; i++)
            if (fdl__link_chosen_kind(&link->inputs[i], FDL_KIND_LTOIR))
                fdl__link_post_lto(link, &link->inputs[i], 0, NULL);
        fdl__link_find_reference(link, symbol, &where, &line, &column);
    }
    if (!where && err) {
        /* the backend's own word: "... in 'caller.ptx'" */
        const char *m = strstr(err->message, " in '");
        if (m) {
            m += 5;
            const char *q = strchr(m, '\'');
            if (q && (size_t)(q - m) < sizeof quoted) {
                memcpy(quoted, m, (size_t)(q - m));
                quoted[q - m] = '\0';
                where = quoted;
            }
        }
    }
    char declared[FDL_ERROR_MESSAGE_MAX];
    const fdl_decl *d = fdl__link_find_decl(link, symbol);
    if (d) {
        snprintf(declared, sizeof declared, "declared at %s:%u:%u but defined in no input",
                 d->source, d->line, d->column);
    } else if (link->ndecls) {
        fdl__buf files = {0};
        for (size_t i = 0; i < link->ndecls; i++)
            fdl__buf_printf(&files, "%s%s", i ? ", " : "", fdl_decls_source(link->decls[i]));
        snprintf(declared, sizeof declared, "not declared in %.300s, nor defined in any input",
                 files.data ? files.data : "");
        fdl__buf_free(&files);
    } else
        snprintf(declared, sizeof declared, "defined in no input, and not declared (no "
                 "declarations were given)");
    if (!err)
        return;
    int code = err->backend_code;
    const char *log = err->log;
    /* kernels that launch kernels call into the device runtime */
    const char *hint = strncmp(symbol, "__cudaCDP", 9) == 0 ||
                               strncmp(symbol, "cudaGetParameterBuffer", 22) == 0 ||
                               strncmp(symbol, "cudaLaunchDevice", 16) == 0
                           ? " (a kernel launches kernels: link libcudadevrt, -lcudadevrt)"
                           : "";
    /* the input that refers to it is err->source, with the line of a PTX reference */
    fdl__error(err, FDL_ELINK, where, line, column, symbol, "%s: undefined reference%s; %s%s",
               symbol, where ? "" : " in an input", declared, hint);
    err->backend_code = code;
    err->log = log;
}

/* ---- the link -------------------------------------------------------------------------------- */
/* Run nvJitLink: the cubin, and with emit_ptx the post-LTO PTX. */
int fdl__link_run_nvjitlink(fdl_link *link, fdl_error *err)
{
    int rc;
    fdl__jl_run run;
    memset(&run, 0, sizeof run);
    fdl__link_input **ins = malloc((link->ninputs ? link->ninputs : 1) * sizeof *ins);
    if (!ins)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    for (size_t i = 0; i < link->ninputs; i++)
        ins[i] = &link->inputs[i];
    for (int pass = 0; pass < (link->opts.emit_ptx ? 2 : 1); pass++) {
        rc = fdl__jl_link(link, link->lto, pass == 1, ins, link->ninputs, NULL, 0, &run, err);
        link->jl_runs++;
        if (rc == FDL_ENOMEM)
            goto cleanup;
        if (!fdl__link_set_log(link, 1, run.info)) {
            run.info = NULL;
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
            goto cleanup;
        }
        run.info = NULL;
        if (rc == FDL_ELINK) {
            char symbol[FDL_ERROR_SYMBOL_MAX];
            char *log = run.error;
            run.error = NULL;
            const char *what = run.refused ? "nvJitLink rejected the input"
                               : pass      ? "emitting PTX failed"
                                           : "link failed";
            rc = fdl__link_backend_error(link, log, (int)run.r,
                                         fdl__nvjl_result_name((int)run.r), run.refused, what,
                                         symbol, sizeof symbol, err);
            if (!run.refused && symbol[0] && err && !strstr(err->message, "multiple definition"))
                undefined_error(link, symbol, err);
            goto cleanup;
        }
        /* the error log may hold warnings even on success */
        if (!fdl__link_set_log(link, 0, run.error)) {
            run.error = NULL;
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
            goto cleanup;
        }
        run.error = NULL;
        if (pass == 0) {
            link->cubin = run.out;
            link->cubin_size = run.out_size;
        } else {
            link->ptx = (char *)run.out;
            link->ptx_size = run.out_size;
        }
        run.out = NULL;
        fdl__jl_run_free(&run);
    }
    rc = FDL_OK;
cleanup:
    fdl__jl_run_free(&run);
    free(ins);
    return rc;
}

/* ---- cuLink ---------------------------------------------------------------------------------- */
static int cu_type(fdl_input_kind kind)
{
    switch (kind) {
    case FDL_KIND_CUBIN: return FDL__CU_INPUT_CUBIN;
    case FDL_KIND_FATBIN: return FDL__CU_INPUT_FATBIN;
    case FDL_KIND_OBJECT: return FDL__CU_INPUT_OBJECT;
    case FDL_KIND_LIBRARY: return FDL__CU_INPUT_LIBRARY;
    case FDL_KIND_PTX:
    default: return FDL__CU_INPUT_PTX;
    }
}

/* Run the driver's cuLink (on the calling thread's current context). */
int fdl__link_run_culink(fdl_link *link, fdl_error *err)
{
    fdl__culink_options o = {link->arch_number + (link->arch_suffix == 'a'   ? 0x10000u
                                                  : link->arch_suffix == 'f' ? 0x20000u
                                                                             : 0u),
                             link->opts.opt_level, link->opts.debug, link->opts.lineinfo,
                             link->opts.verbose, link->opts.maxrregcount};
    fdl__culink_state *st = NULL;
    unsigned char *cubin = NULL;
    char *info = NULL, *error = NULL;
    size_t cubin_size = 0;
    int cu = 0;
    const char *refused = NULL;
    int rc = fdl__culink_create(&st, &o, err);
    if (rc != FDL_OK)
        goto cleanup;
    for (size_t i = 0; i < link->ninputs && !refused; i++) {
        const fdl__link_input *in = &link->inputs[i];
        /* PTX goes with its NUL (the copy has one after the bytes) */
        size_t size = in->kind == FDL_KIND_PTX ? in->size + 1 : in->size;
        if (fdl__culink_add(st, cu_type(in->kind), in->data, size, in->name, &cu) != FDL_OK)
            refused = in->name;
    }
    int linked = refused ? FDL_ELINK : fdl__culink_complete(st, &cubin, &cubin_size, &cu);
    info = dup_or_empty(fdl__culink_info_log(st));
    error = dup_or_empty(fdl__culink_error_log(st));
    fdl__culink_destroy(st); /* the cubin was copied out before */
    st = NULL;
    if (!info || !error || linked == FDL_ENOMEM) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker's output");
        goto cleanup;
    }
    int kept = fdl__link_set_log(link, 1, info);
    info = NULL; /* the link's now, or freed */
    if (!kept) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
        goto cleanup;
    }
    if (linked != FDL_OK) {
        char name[48], symbol[FDL_ERROR_SYMBOL_MAX];
        rc = fdl__link_backend_error(link, error, cu, fdl__cu_result_name(cu, name, sizeof name),
                                     refused, refused ? "cuLink rejected the input" : "link failed",
                                     symbol, sizeof symbol, err);
        error = NULL;
        if (!refused && symbol[0] && err && !strstr(err->message, "multiple definition"))
            undefined_error(link, symbol, err);
        goto cleanup;
    }
    kept = fdl__link_set_log(link, 0, error);
    error = NULL;
    if (!kept) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
        goto cleanup;
    }
    link->cubin = cubin;
    link->cubin_size = cubin_size;
    cubin = NULL;
    rc = FDL_OK;
cleanup:
    fdl__culink_destroy(st);
    free(cubin);
    free(info);
    free(error);
    return rc;
}
