/*
 * The checks a link makes before its backend runs: the declarations against every input (PTX by
 * its prototypes, LTO-IR by its post-LTO PTX, cubins by their symbols), and definitions made
 * twice across all inputs; and where an undefined symbol is referenced.
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

/* ---- the declaration check ------------------------------------------------------------------- */
typedef struct diag_sink {
    fdl_link *link;
    fdl_error *err;
    size_t n;
} diag_sink;

static void sink_diag(void *ctx, const fdl_error *diag)
{
    diag_sink *s = ctx;
    if (s->link->on_diag)
        s->link->on_diag(s->link->diag_ctx, diag);
    if (s->n == 0 && s->err)
        *s->err = *diag;
    s->n++;
}

/* One diagnostic about a binary input: "<name>: <text> (ABI-<rule>; declared at <where>)". */
static void binary_diag(diag_sink *s, const char *source, const fdl_decl *d, int rule,
                        const char *fmt, const char *arg)
{
    char text[FDL_ERROR_MESSAGE_MAX];
    snprintf(text, sizeof text, fmt, arg);
    fdl_error e = FDL_ERROR_INIT;
    int at_decl = source == d->source; /* no input to point at: point at the declaration */
    fdl__error(&e, FDL_EABI, source, at_decl ? d->line : 0, at_decl ? d->column : 0, d->name,
               "%s: %.300s (ABI-%d; declared at %s:%u:%u)",
               d->name, text, rule, d->source, d->line, d->column);
    sink_diag(s, &e);
}

/* LTO-IR that takes the address of every declared function, so that LTO keeps them. */
static int make_keeper(fdl_link *link, fdl_error *err)
{
    if (link->keeper_tried)
        return FDL_OK;
    link->keeper_tried = 1;
    int rc;
    char *header = NULL, *log = NULL;
    fdl__buf src = {0};
    fdl__strv args = {0};
    char arch[32], include[1024];
    if ((rc = fdl__link_decls_header(link, &header, err)) != FDL_OK)
        goto cleanup;
    fdl__buf_puts(&src, header);
    fdl__buf_puts(&src, "\n/* a pointer to each function keeps it, and its prototype, alive */\n");
    size_t keep = 0;
    for (size_t s = 0; s < link->ndecls; s++)
        for (size_t i = 0; i < fdl_decls_count(link->decls[s]); i++) {
            const fdl_decl *d = fdl_decls_get(link->decls[s], i);
            if (fdl__link_find_decl(link, d->name) != d)
                continue; /* declared in an earlier set too: one pointer is enough */
            fdl__buf_printf(&src,
                            "extern \"C\" __device__ decltype(&%s) __fdlink_keep_%zu = &%s;\n",
                            d->name, keep++, d->name);
        }
    fdl__link_virtual_arch(link, arch, sizeof arch);
    int ok = !src.oom && fdl__strv_push(&args, "-arch=%s", arch) &&
             fdl__strv_push(&args, "-rdc=true", NULL) && fdl__strv_push(&args, "-dlto", NULL);
    if (ok && fdl__cuda_find(include, sizeof include, "include/cuda.h")) {
        include[strlen(include) - strlen("/cuda.h")] = '\0';
        ok = fdl__strv_push(&args, "-I%s", include);
    }
    if (!ok) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    fdl_error e = FDL_ERROR_INIT;
    /* through the cache: the keeper depends only on the declarations and NVRTC */
    size_t hits = link->nvrtc_hits, compiled = link->nvrtc_compiled;
    rc = fdl__link_nvrtc_cached(link, &link->keeper, &link->keeper_size, &log, src.data, src.len,
                                "fdlink-keep.cu", (const char *const *)args.v, NULL, 0, 1, &e);
    link->nvrtc_hits = hits; /* the counters are the CUDA C inputs' */
    link->nvrtc_compiled = compiled;
    if (rc == FDL_ENOLIB) {
        rc = FDL_OK; /* without NVRTC, LTO-IR definitions stay unconfirmed */
    } else if (rc != FDL_OK) {
        rc = fdl__error(err, rc, NULL, 0, 0, NULL,
                        "cannot compile the declarations for the post-LTO check: %s", e.message);
    }
cleanup:
    free(header);
    free(log);
    fdl__buf_free(&src);
    fdl__strv_free(&args);
    return rc;
}

/* Byte offset of 1-based @p line, @p column in @p text, or SIZE_MAX. */
static size_t offset_of(const char *text, size_t len, unsigned line, unsigned column)
{
    size_t off = 0;
    for (unsigned l = 1; l < line; l++) {
        const char *nl = memchr(text + off, '\n', len - off);
        if (!nl)
            return SIZE_MAX;
        off = (size_t)(nl - text) + 1;
    }
    if (column == 0 || column - 1 > len - off)
        return SIZE_MAX;
    return off + column - 1;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Scan post-LTO PTX as a module of @p name. Whole-program LTO gives every device function
 * internal linkage; the declared ones it kept are visible to other inputs all the same (their
 * LTO-IR defines them for the link), so they are scanned as `.visible` (ABI-6).
 */
static int scan_post_lto(fdl_link *link, const char *text, size_t len, const char *name,
                         fdl_ptx **out, fdl_error *err)
{
    *out = NULL;
    int rc;
    fdl_ptx *first = NULL;
    size_t *at = NULL, nat = 0;
    fdl__buf b = {0};
    if ((rc = fdl_ptx_scan(&first, text, len, name, err)) != FDL_OK)
        goto cleanup;
    size_t count = fdl_ptx_count(first);
    if (!(at = malloc((count ? count : 1) * sizeof *at))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < count; i++) {
        const fdl_ptx_func *f = fdl_ptx_get(first, i);
        if (f->is_definition && !f->is_entry && f->linkage == FDL_PTX_LINK_NONE &&
            fdl__link_find_decl(link, f->name)) {
            size_t off = offset_of(text, len, f->decl_line, f->decl_column);
            if (off != SIZE_MAX)
                at[nat++] = off;
        }
    }
    if (!nat) {
        *out = first;
        first = NULL;
        goto cleanup;
    }
    qsort(at, nat, sizeof *at, cmp_size);
    size_t prev = 0;
    for (size_t i = 0; i < nat; i++) {
        fdl__buf_append(&b, text + prev, at[i] - prev);
        fdl__buf_puts(&b, ".visible ");
        prev = at[i];
    }
    fdl__buf_append(&b, text + prev, len - prev);
    if (b.oom) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    rc = fdl_ptx_scan(out, b.data, b.len, name, err);
cleanup:
    fdl_ptx_destroy(first);
    free(at);
    fdl__buf_free(&b);
    return rc;
}

/*
 * The post-LTO PTX of @p n inputs' LTO-IR, linked together in one nvJitLink run, kept with the
 * first of them (declaration check; the others' post_lto stay NULL). One input's module is named
 * "<name>[post-LTO ptx]", that of several "<a>+<b>+...[post-LTO ptx]".
 */
static int post_lto_joint(fdl_link *link, fdl__link_input **ins, size_t n, int with_keeper,
                          fdl_error *err)
{
    if (ins[0]->post_lto)
        return FDL_OK;
    fdl__jl_run run;
    memset(&run, 0, sizeof run);
    const unsigned char *keep = with_keeper ? link->keeper : NULL;
    /* the post-LTO PTX depends only on the inputs, the keeper and the options: cached */
    unsigned char key[FDL__CACHE_KEY_SIZE];
    int keyed = fdl__link_check_key(link, ins, n, keep, link->keeper_size, key);
    int rc = FDL_OK;
    fdl__cache_sections cached;
    memset(&cached, 0, sizeof cached);
    if (keyed && fdl__cache_get(&link->cache, FDL__CACHE_CHECK, key, &cached) != FDL_CACHE_MISS &&
        cached.n == 1 && cached.len[0] && (run.out = malloc(cached.len[0] + 1))) {
        memcpy(run.out, cached.p[0], cached.len[0]);
        run.out[cached.len[0]] = '\0';
        run.out_size = cached.len[0];
    } else {
        rc = fdl__jl_link(link, 1, 1, ins, n, keep, link->keeper_size, &run, err);
        link->jl_runs++;
        if (rc == FDL_OK && keyed) {
            const unsigned char *secs[1] = {run.out};
            size_t lens[1] = {run.out_size};
            fdl__cache_put(&link->cache, FDL__CACHE_CHECK, key, secs, lens, 1);
        }
    }
    fdl__cache_sections_free(&cached);
    fdl__link_cache_warn(link);
    if (rc == FDL_ELINK && err) {
        char symbol[FDL_ERROR_SYMBOL_MAX];
        char *log = run.error;
        run.error = NULL;
        rc = fdl__link_backend_error(link, log, (int)run.r, fdl__nvjl_result_name((int)run.r),
                                     n == 1 ? ins[0]->name : run.refused,
                                     n == 1 ? "link-time optimisation of the input failed"
                                            : "link-time optimisation of the LTO-IR inputs "
                                              "failed",
                                     symbol, sizeof symbol, err);
    }
    if (rc == FDL_OK) {
        fdl__buf name = {0};
        for (size_t i = 0; i < n; i++)
            fdl__buf_printf(&name, "%s%s", i ? "+" : "", ins[i]->name);
        fdl__buf_puts(&name, "[post-LTO ptx]");
        if (name.oom)
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        else
            rc = scan_post_lto(link, (const char *)run.out, run.out_size, name.data,
                               &ins[0]->post_lto, err);
        fdl__buf_free(&name);
    }
    fdl__jl_run_free(&run);
    return rc;
}

/* The post-LTO PTX of one input's LTO-IR, kept with the input (declaration check). */
int fdl__link_post_lto(fdl_link *link, fdl__link_input *in, int with_keeper, fdl_error *err)
{
    fdl__link_input *one[1] = {in};
    return post_lto_joint(link, one, 1, with_keeper, err);
}

int fdl__link_chosen_kind(const fdl__link_input *in, fdl_input_kind kind)
{
    for (size_t u = 0; u < in->images.nunits; u++)
        if (in->chosen[u] && in->chosen[u]->pub.kind == kind)
            return 1;
    return 0;
}

/* A defined function symbol of @p name in the chosen cubins, or NULL. */
static const fdl_symbol *elf_find(const fdl_link *link, const char *name, int defined,
                                  fdl_symbol_kind kind, const fdl__image **where)
{
    for (size_t i = 0; i < link->ninputs; i++) {
        const fdl__link_input *in = &link->inputs[i];
        for (size_t u = 0; u < in->images.nunits; u++) {
            const fdl__image *img = in->chosen[u];
            if (!img || img->pub.kind != FDL_KIND_CUBIN)
                continue;
            for (size_t k = 0; k < img->nsyms; k++) {
                const fdl_symbol *s = &img->syms[k];
                if (s->defined == defined && s->kind == kind && strcmp(s->name, name) == 0) {
                    *where = img;
                    return s;
                }
            }
        }
    }
    return NULL;
}

/* A definition of `_Z<len><name>...` (ABI-7) in the chosen cubins, or NULL. */
static const fdl_symbol *elf_find_mangled(const fdl_link *link, const char *name,
                                          const fdl__image **where)
{
    char prefix[FDL_DECL_MAX_NAME + 16];
    snprintf(prefix, sizeof prefix, "_Z%zu%s", strlen(name), name);
    size_t n = strlen(prefix);
    for (size_t i = 0; i < link->ninputs; i++) {
        const fdl__link_input *in = &link->inputs[i];
        for (size_t u = 0; u < in->images.nunits; u++) {
            const fdl__image *img = in->chosen[u];
            if (!img || img->pub.kind != FDL_KIND_CUBIN)
                continue;
            for (size_t k = 0; k < img->nsyms; k++)
                if (img->syms[k].defined && img->syms[k].kind == FDL_SYMBOL_FUNCTION &&
                    strncmp(img->syms[k].name, prefix, n) == 0) {
                    *where = img;
                    return &img->syms[k];
                }
        }
    }
    return NULL;
}

static int module_defines(const fdl_ptx *const *mods, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const fdl_ptx_func *f = fdl_ptx_find(mods[i], name);
        if (f && f->is_definition && !f->is_entry)
            return 1;
    }
    return 0;
}

static int check_binaries(fdl_link *link, const fdl_decls *decls, diag_sink *sink,
                          const fdl_ptx *const *mods, size_t nmods, int binary, int unknown);

/*
 * ABI-2..ABI-12 against every input, before the backend links: PTX (inputs, fatbin entries,
 * NVRTC output) by its prototypes, LTO-IR by its post-LTO PTX, cubins by their symbols.
 */
int fdl__link_check_decls(fdl_link *link, fdl_error *err)
{
    int rc = FDL_OK;
    const fdl_ptx **mods = NULL;
    size_t nmods = 0, cap = 0;
    int binary = 0, unknown = 0;
    diag_sink sink = {link, err, 0};

    int need_post_lto = 0;
    for (size_t i = 0; i < link->ninputs; i++)
        need_post_lto |= !link->inputs[i].builtin &&
                         fdl__link_chosen_kind(&link->inputs[i], FDL_KIND_LTOIR);
    if (need_post_lto && (rc = make_keeper(link, err)) != FDL_OK)
        goto cleanup;
    /* every LTO-IR input in one post-LTO link: one extra link, however many there are */
    if (need_post_lto) {
        fdl__link_input **lto = malloc(link->ninputs * sizeof *lto);
        size_t nlto = 0;
        if (!lto) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory checking declarations");
            goto cleanup;
        }
        for (size_t i = 0; i < link->ninputs; i++)
            if (!link->inputs[i].builtin &&
                fdl__link_chosen_kind(&link->inputs[i], FDL_KIND_LTOIR))
                lto[nlto++] = &link->inputs[i];
        rc = post_lto_joint(link, lto, nlto, link->keeper != NULL, err);
        free(lto);
        if (rc != FDL_OK)
            goto cleanup;
    }
    for (size_t i = 0; i < link->ninputs; i++)
        for (size_t u = 0; u < link->inputs[i].images.nunits; u++)
            cap++;
    if (!(mods = malloc((cap + link->ninputs + 1) * sizeof *mods))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory checking declarations");
        goto cleanup;
    }
    for (size_t i = 0; i < link->ninputs; i++) {
        fdl__link_input *in = &link->inputs[i];
        if (in->builtin)
            continue; /* the toolkit's own library: nothing declared lives there */
        for (size_t u = 0; u < in->images.nunits; u++) {
            const fdl__image *img = in->chosen[u];
            if (!img)
                continue;
            if (img->pub.kind == FDL_KIND_PTX && img->ptx)
                mods[nmods++] = img->ptx;
            else if (img->pub.kind == FDL_KIND_CUBIN && !img->opaque)
                binary = 1;
            else if (img->pub.kind != FDL_KIND_LTOIR)
                unknown = 1;
        }
        if (fdl__link_chosen_kind(in, FDL_KIND_LTOIR)) {
            if (in->post_lto) /* the joint module, kept with the first LTO-IR input */
                mods[nmods++] = in->post_lto;
            if (!link->keeper)
                unknown = 1; /* definitions LTO dropped cannot be told from missing ones */
        }
    }

    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    opts.allow_undefined = binary || unknown;
    opts.on_diag = sink_diag;
    opts.ctx = &sink;
    for (size_t set = 0; set < link->ndecls; set++) {
        size_t ndiags = 0;
        rc = fdl_abi_check(&ndiags, link->decls[set], mods, nmods, &opts, NULL);
        if (rc != FDL_OK && rc != FDL_EABI)
            goto cleanup;
        rc = FDL_OK;
        if ((rc = check_binaries(link, link->decls[set], &sink, mods, nmods, binary, unknown)) !=
            FDL_OK)
            goto cleanup;
    }
    if (sink.n)
        rc = FDL_EABI;
cleanup:
    free(mods);
    return rc;
}

/* What the PTX check left to the cubins: each declared function defined at all, and how. */
static int check_binaries(fdl_link *link, const fdl_decls *decls, diag_sink *sink,
                          const fdl_ptx *const *mods, size_t nmods, int binary, int unknown)
{
    for (size_t k = 0; binary && k < fdl_decls_count(decls); k++) {
        const fdl_decl *d = fdl_decls_get(decls, k);
        const fdl__image *where = NULL;
        const fdl_symbol *s = elf_find(link, d->name, 1, FDL_SYMBOL_FUNCTION, &where);
        if (s) {
            if (s->weak) /* ABI-6 */
                binary_diag(sink, where->pub.name, d, 6,
                            "defined with weak binding in %s, but a foreign function needs a "
                            "global (.visible) definition",
                            where->pub.name);
            continue;
        }
        if (module_defines(mods, nmods, d->name))
            continue;
        if ((s = elf_find_mangled(link, d->name, &where))) /* ABI-7 */
            binary_diag(sink, where->pub.name, d, 7,
                        "defined only with a C++ mangled name %s; declare it extern \"C\"",
                        s->name);
        else if ((s = elf_find(link, d->name, 1, FDL_SYMBOL_KERNEL, &where))) /* ABI-11 */
            binary_diag(sink, where->pub.name, d, 11, "defined as a kernel in %s, but a foreign "
                        "function must be a device function", where->pub.name);
        else if (!unknown) { /* ABI-6 */
            s = elf_find(link, d->name, 0, FDL_SYMBOL_FUNCTION, &where);
            if (s)
                binary_diag(sink, d->source, d, 6,
                            "declared but not defined in any input (referenced in %s)",
                            where->pub.name);
            else
                binary_diag(sink, d->source, d, 6, "declared but not defined in any input%s",
                            "");
        }
    }
    return FDL_OK;
}

/* ---- duplicate definitions ------------------------------------------------------------------ */

typedef struct def_entry {
    const char *name;
    const char *where; /* image name */
    unsigned line, column;
} def_entry;

typedef struct def_table {
    def_entry *slots;
    size_t mask;
    size_t used;
} def_table;

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603u;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211u;
    }
    return h;
}

/* Record a definition; return the earlier one of the same name, if any. */
static const def_entry *def_insert(def_table *t, const char *name, const char *where,
                                   unsigned line, unsigned column)
{
    size_t slot = (size_t)hash_name(name) & t->mask;
    while (t->slots[slot].name) {
        if (strcmp(t->slots[slot].name, name) == 0)
            return &t->slots[slot];
        slot = (slot + 1) & t->mask;
    }
    t->slots[slot] = (def_entry){name, where, line, column};
    t->used++;
    return NULL;
}

static int duplicate_error(const def_entry *first, const char *name, const char *where,
                           unsigned line, unsigned column, fdl_error *err)
{
    if (first->line)
        return fdl__error(err, FDL_ELINK, where, line, column, name,
                          "%s: multiple definition, first defined at %s:%u:%u (ABI-6)", name,
                          first->where, first->line, first->column);
    return fdl__error(err, FDL_ELINK, where, line, column, name,
                      "%s: multiple definition, first defined in %s (ABI-6)", name,
                      first->where);
}

/*
 * ABI-6 for every name, declared or not: a global function or kernel defined in two inputs.
 * nvJitLink reports this on stderr only and links anyway, keeping one of the definitions.
 */
int fdl__link_check_duplicates(const fdl_link *link, fdl_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < link->ninputs; i++) {
        const fdl__link_input *in = &link->inputs[i];
        for (size_t u = 0; u < in->images.nunits; u++) {
            const fdl__image *img = in->chosen[u];
            if (img && img->ptx)
                total += fdl_ptx_count(img->ptx);
            else if (img)
                total += img->nsyms;
        }
        if (in->post_lto)
            total += fdl_ptx_count(in->post_lto);
    }
    size_t size = 16;
    while (size / 2 < total) {
        if (size > SIZE_MAX / 4)
            return fdl__fail(err, FDL_ENOMEM, "too many symbols");
        size *= 2;
    }
    def_table t = {calloc(size, sizeof(def_entry)), size - 1, 0};
    if (!t.slots)
        return fdl__fail(err, FDL_ENOMEM, "out of memory checking definitions");
    int rc = FDL_OK;
    for (size_t i = 0; i < link->ninputs && rc == FDL_OK; i++) {
        const fdl__link_input *in = &link->inputs[i];
        for (size_t u = 0; u <= in->images.nunits && rc == FDL_OK; u++) {
            const fdl_ptx *ptx = NULL;
            const fdl__image *img = NULL;
            if (u < in->images.nunits) {
                img = in->chosen[u];
                if (!img)
                    continue;
                ptx = img->ptx;
            } else {
                ptx = in->post_lto;
                if (!ptx)
                    continue;
            }
            if (ptx) {
                for (size_t k = 0; k < fdl_ptx_count(ptx) && rc == FDL_OK; k++) {
                    const fdl_ptx_func *f = fdl_ptx_get(ptx, k);
                    if (!f->is_definition || f->linkage != FDL_PTX_LINK_VISIBLE)
                        continue;
                    const def_entry *first =
                        def_insert(&t, f->name, fdl_ptx_source(ptx), f->line, f->column);
                    if (first)
                        rc = duplicate_error(first, f->name, fdl_ptx_source(ptx), f->line,
                                             f->column, err);
                }
                continue;
            }
            for (size_t k = 0; k < img->nsyms && rc == FDL_OK; k++) {
                const fdl_symbol *s = &img->syms[k];
                if (!s->defined || s->weak || s->kind == FDL_SYMBOL_VARIABLE)
                    continue;
                const def_entry *first = def_insert(&t, s->name, img->pub.name, 0, 0);
                if (first)
                    rc = duplicate_error(first, s->name, img->pub.name, 0, 0, err);
            }
        }
    }
    free(t.slots);
    return rc;
}

/* Where @p name is referenced: an image or post-LTO module, with a position for PTX. */
int fdl__link_find_reference(const fdl_link *link, const char *name, const char **where,
                             unsigned *line, unsigned *column)
{
    *line = *column = 0;
    for (size_t i = 0; i < link->ninputs; i++) {
        const fdl__link_input *in = &link->inputs[i];
        for (size_t u = 0; u <= in->images.nunits; u++) {
            const fdl__image *img = u < in->images.nunits ? in->chosen[u] : NULL;
            const fdl_ptx *ptx = u < in->images.nunits ? (img ? img->ptx : NULL) : in->post_lto;
            if (ptx) {
                for (size_t k = 0; k < fdl_ptx_count(ptx); k++) {
                    const fdl_ptx_func *f = fdl_ptx_get(ptx, k);
                    if (!f->is_definition && f->linkage == FDL_PTX_LINK_EXTERN &&
                        strcmp(f->name, name) == 0) {
                        *where = fdl_ptx_source(ptx);
                        *line = f->line;
                        *column = f->column;
                        return 1;
                    }
                }
            } else if (img) {
                for (size_t k = 0; k < img->nsyms; k++)
                    if (!img->syms[k].defined && strcmp(img->syms[k].name, name) == 0) {
                        *where = img->pub.name;
                        return 1;
                    }
            }
        }
    }
    return 0;
}
