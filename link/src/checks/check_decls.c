/*
 * The declaration check (ABI-2..ABI-12), before the backend runs: PTX (inputs, fatbin entries,
 * NVRTC output) by its prototypes, LTO-IR by its post-LTO PTX (postlto.c), cubins by their
 * symbols. A check of fdl_link_complete (fdl__check_decls).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "fdlink/ptx.h"
#include "abi_internal.h"
#include "checks.h"
#include "linkobj.h"

typedef struct diag_sink {
    fdl_link *link;
    fdl_error *err;
    size_t n;
} diag_sink;

static void sink_diag(void *ctx, const fdl_error *diag)
{
    diag_sink *s = ctx;
    fdl__diags_add_error(&s->link->diags, diag); /* fdl_link_diagnostic; out of memory: left out */
    if (s->link->on_diag)
        s->link->on_diag(s->link->diag_ctx, diag);
    if (s->n == 0 && s->err)
        *s->err = *diag;
    s->n++;
}

/* A warning of the check (ABI-13): a record of severity warning; neither the link's callback
 * (fdl_link_set_diag, which gets errors) nor the link's error. */
static void sink_warning(void *ctx, const fdl_error *diag)
{
    diag_sink *s = ctx;
    fdl__diags_add_warning(&s->link->diags, diag); /* out of memory: left out */
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
    fdl__error_rule(&e, rule);
    fdl__error_decl(&e, d->source, d->line, d->column);
    sink_diag(s, &e);
}

/* `T`, `T *`, `const T *` of @p t (@p as_const: its pointee const) into @p b. */
static void put_type(fdl__buf *b, fdl_type t, int as_const)
{
    fdl__buf_printf(b, "%s%s", as_const && t.depth ? "const " : "", fdl__abi_c_type(t.base));
    if (t.depth)
        fdl__buf_puts(b, " ");
    for (unsigned i = 0; i < t.depth; i++)
        fdl__buf_puts(b, "*");
}

/*
 * The parameter list and return type of @p d's C++ prototype in one of its other likely forms,
 * into @p params and @p ret: 0, the other ABI's (a Numba-ABI declaration written as a plain C
 * function, `float f(float, float)`, and the other way round); 1, its pointer parameters'
 * pointees const (`const float *`). Returns 0 when the form is the declared one.
 */
static int variant(fdl__buf *ret, fdl__buf *params, const fdl_decl *d, int form)
{
    int any_pointer = 0;
    for (size_t i = 0; i < d->sig.nparams; i++)
        any_pointer |= d->sig.params[i].depth > 0;
    if (form == 1 && !any_pointer)
        return 0;
    int c_form = (d->abi == FDL_ABI_C) == (form == 1); /* form 0 flips the ABI */
    size_t n = 0;
    if (c_form) {
        put_type(ret, d->sig.ret, 0);
    } else {
        fdl_type slot = d->sig.ret;
        slot.depth++;
        fdl__buf_puts(ret, "int");
        put_type(params, slot, 0);
        n++;
    }
    for (size_t i = 0; i < d->sig.nparams; i++, n++) {
        if (n)
            fdl__buf_puts(params, ", ");
        put_type(params, d->sig.params[i], form == 1);
    }
    if (!n)
        fdl__buf_puts(params, "void");
    return 1;
}

/*
 * LTO-IR that takes the address of every declared function, so that LTO keeps them: under its
 * C name, and under the C++ mangled name of the same prototype, so that a definition made
 * without extern "C" stays in the view and gets the C++ hint (ABI-7) as from every other kind.
 * Whole-program LTO drops what nothing refers to, and LTO-IR cannot be read otherwise: a C++
 * definition of other types is kept, and named, only in the forms written here, the other
 * ABI's (a Numba-ABI function written as a plain C one) and const pointees (issue 38).
 * The C-linkage prototypes go in a namespace (a C++ function may not share a scope with a C one
 * of the same name and parameters); both refer to the symbols the inputs define.
 */
static int make_keeper(fdl_link *link, fdl_error *err)
{
    if (link->keeper_tried)
        return FDL_OK;
    link->keeper_tried = 1;
    int rc;
    char *header = NULL, *log = NULL;
    fdl__buf src = {0}, variants = {0};
    fdl__strv args = {0};
    if ((rc = fdl__link_decls_header(link, &header, err)) != FDL_OK)
        goto cleanup;
    if (strstr(header, "<cuda_fp16.h>")) /* before the namespace: the header skips it then */
        fdl__buf_puts(&src, "#include <cuda_fp16.h>\n");
    fdl__buf_puts(&src, "namespace fdlink_c {\n");
    fdl__buf_puts(&src, header);
    fdl__buf_puts(&src, "}\n\n/* the same prototypes with C++ linkage */\n");
    static const char c_proto[] = "\nextern \"C\" __device__ ";
    for (const char *p = strstr(header, c_proto); p; p = strstr(p + 1, c_proto)) {
        const char *start = p + strlen("\nextern \"C\" ");
        const char *end = strchr(start, '\n');
        if (end)
            fdl__buf_printf(&src, "%.*s\n", (int)(end - start), start);
    }
    fdl__buf_puts(&src, "\n/* a pointer to each function keeps it, and its prototype, alive */\n");
    size_t keep = 0;
    for (size_t s = 0; s < link->ndecls; s++)
        for (size_t i = 0; i < fdl_decls_count(link->decls[s]); i++) {
            const fdl_decl *d = fdl_decls_get(link->decls[s], i);
            if (fdl__link_find_decl(link, d->name) != d)
                continue; /* declared in an earlier set too: one pointer is enough */
            fdl__buf_printf(&src,
                            "extern \"C\" __device__ decltype(&fdlink_c::%s) __fdlink_keep_%zu = "
                            "&fdlink_c::%s;\n",
                            d->name, keep, d->name);
            fdl__buf_printf(&src,
                            "extern \"C\" __device__ decltype(&::%s) __fdlink_keep_cxx_%zu = "
                            "&::%s;\n",
                            d->name, keep, d->name);
            for (int form = 0; form < 2; form++) { /* overloads: the pointer's type picks one */
                fdl__buf ret = {0}, params = {0};
                if (variant(&ret, &params, d, form) && !ret.oom && !params.oom)
                    fdl__buf_printf(&variants,
                                    "__device__ %s %s(%s);\n"
                                    "extern \"C\" __device__ %s (*__fdlink_keep_v%d_%zu)(%s) = "
                                    "&::%s;\n",
                                    ret.data, d->name, params.data, ret.data, form, keep,
                                    params.data, d->name);
                variants.oom |= ret.oom || params.oom;
                fdl__buf_free(&ret);
                fdl__buf_free(&params);
            }
            keep++;
        }
    fdl__buf_puts(&src, "\n/* other forms a C++ definition may have been written in */\n");
    fdl__buf_append(&src, variants.data ? variants.data : "", variants.len);
    src.oom |= variants.oom;
    int ok = !src.oom && fdl__link_nvrtc_args(link, 1, NULL, 1, 1, &args);
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
    fdl__buf_free(&variants);
    fdl__strv_free(&args);
    return rc;
}

/* Every declared function is defined in @p view (a post-LTO module). */
static int view_defines_all(const fdl_link *link, const fdl_ptx *view)
{
    for (size_t s = 0; s < link->ndecls; s++)
        for (size_t i = 0; i < fdl_decls_count(link->decls[s]); i++) {
            const char *name = fdl_decls_get(link->decls[s], i)->name;
            int found = 0;
            for (size_t k = 0; view && !found && k < fdl_ptx_count(view); k++) {
                const fdl_ptx_func *f = fdl_ptx_get(view, k);
                found = f->is_definition && strcmp(f->name, name) == 0;
            }
            if (!found)
                return 0;
        }
    return 1;
}

/*
 * The post-LTO view of the @p n LTO-IR inputs @p lto. First without the keeper: when the inputs'
 * kernels call every declared function, the view holds them all and the check needs no NVRTC
 * compile (the cost of a check is then that of an -O0 LTO to PTX). Else again with the keeper,
 * which keeps what nothing calls and definitions made under a C++ name.
 */
static int post_lto_view(fdl_link *link, fdl__link_input **lto, size_t n, fdl_error *err)
{
    int rc = fdl__link_post_lto_joint(link, lto, n, 0, err);
    if (rc != FDL_OK || view_defines_all(link, lto[0]->post_lto))
        return rc;
    if ((rc = make_keeper(link, err)) != FDL_OK || !link->keeper)
        return rc;
    fdl_ptx_destroy(lto[0]->post_lto);
    lto[0]->post_lto = NULL;
    return fdl__link_post_lto_joint(link, lto, n, 1, err);
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
        else if (!unknown && !link->allow_undefined) { /* ABI-6 */
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

int fdl__check_decls_links(const fdl_link *link)
{
    if (!link->ndecls)
        return 0;
    for (size_t i = 0; i < link->ninputs; i++)
        if (!link->inputs[i].builtin && fdl__link_chosen_kind(&link->inputs[i], FDL_KIND_LTOIR))
            return 1;
    return 0;
}

/*
 * ABI-2..ABI-12 against every input, before the backend links: PTX (inputs, fatbin entries,
 * NVRTC output) by its prototypes, LTO-IR by its post-LTO PTX, cubins by their symbols. A link
 * without declarations passes. @return FDL_OK, FDL_EABI, FDL_ELINK, FDL_ENOMEM
 */
static int check_decls(fdl_link *link, fdl_error *err)
{
    if (!link->ndecls)
        return FDL_OK;
    int rc = FDL_OK;
    const fdl_ptx **mods = NULL;
    size_t nmods = 0, cap = 0;
    int binary = 0, unknown = 0;
    diag_sink sink = {link, err, 0};

    int need_post_lto = 0, view_complete = 0;
    for (size_t i = 0; i < link->ninputs; i++)
        need_post_lto |= !link->inputs[i].builtin &&
                         fdl__link_chosen_kind(&link->inputs[i], FDL_KIND_LTOIR);
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
        rc = post_lto_view(link, lto, nlto, err);
        view_complete = rc == FDL_OK && (link->keeper || view_defines_all(link, lto[0]->post_lto));
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
            if (!view_complete)
                unknown = 1; /* definitions LTO dropped cannot be told from missing ones */
        }
    }

    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    opts.allow_undefined = binary || unknown || link->allow_undefined;
    opts.on_diag = sink_diag;
    opts.ctx = &sink;
    for (size_t set = 0; set < link->ndecls; set++) {
        size_t ndiags = 0;
        rc = fdl__abi_check_warn(&ndiags, link->decls[set], mods, nmods, &opts, sink_warning,
                                 NULL);
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

const fdl__link_check fdl__check_decls = {"declarations", check_decls};
