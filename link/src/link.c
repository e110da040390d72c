/*
 * Links, the top of link/src: create and destroy, inputs (recognised from their bytes and
 * unpacked into code images), what each input contributes to the link, and fdl_link_complete,
 * the one place that decides the order: the cache, the inputs prepared, the checks in the order
 * of `checks`, the backend of `backends`, the cache again. The order of link/src's folders: README.md here.
 *
 * Every input is copied and kept for the life of the link; the images of an input point into
 * that copy. PTX is scanned as it is added (a malformed one is refused there), unless this process
 * scanned the same bytes before (a process memo): then the scan waits for prepare(), and a cache
 * hit needs none. The backend runs only in fdl_link_complete, once LTO is decided: nvJitLink compiles
 * PTX as it is added and complains on stderr about what the checks report better.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdlink/abi.h"
#include "fdlink/link.h"
#include "fdlink/ptx.h"
#include "internal.h"
#include "formats.h"
#include "backends.h"
#include "checks.h"
#include "linkobj.h"
#include "nvjl.h"
#include "probe.h"

/* The name CUDA C inputs include the declarations' prototypes under. */
#define DECLS_HEADER "fdlink_decls.cuh"

/* ---- the checks and the backends ------------------------------------------------------------ */

/*
 * The checks fdl_link_complete runs, in this order, between preparing the inputs and the
 * backend; and the backends a link can have. A new check or backend is a file of its own (see
 * linkobj.h, "checks and backends") and one line here.
 */
static const fdl__link_check *const checks[] = {&fdl__check_skew, &fdl__check_decls,
                                                &fdl__check_duplicates};
static const fdl__link_backend_ops *const backends[] = {&fdl__backend_nvjl,
                                                         &fdl__backend_culink};

/* The backend of @p id (FDL_BACKEND_NVJITLINK or FDL_BACKEND_CULINK), or NULL. */
static const fdl__link_backend_ops *backend_of(fdl_link_backend id)
{
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i]->id == id)
            return backends[i];
    return NULL;
}

/* What the backend @p id cannot take of @p o, said before anything runs. */
static int backend_options(fdl_link_backend id, const fdl_link_options *o, fdl_error *err)
{
    const fdl__link_backend_ops *b = backend_of(id);
    return b && b->options ? b->options(o, err) : FDL_OK;
}

/* ---- create / destroy ------------------------------------------------------------------------ */
static int copy_options(fdl_link *link, const fdl_link_options *o, fdl_error *err)
{
    link->opts = *o;
    if (!fdl__strv_copy(&link->extra, o->extra) || !fdl__strv_copy(&link->kernels_used, o->kernels_used) ||
        !fdl__strv_copy(&link->variables_used, o->variables_used) ||
        !fdl__strv_copy(&link->xptxas, o->xptxas))
        return fdl__fail(err, FDL_ENOMEM, "out of memory copying the link options");
    link->opts.extra = (const char *const *)link->extra.v;
    link->opts.kernels_used = (const char *const *)link->kernels_used.v;
    link->opts.variables_used = (const char *const *)link->variables_used.v;
    link->opts.xptxas = (const char *const *)link->xptxas.v;
    static const fdl_nvrtc_options cuda_defaults = FDL_NVRTC_OPTIONS_INIT;
    link->cuda = o->cuda ? *o->cuda : cuda_defaults;
    if (!fdl__strv_copy(&link->cuda_defines, link->cuda.defines) ||
        !fdl__strv_copy(&link->cuda_includes, link->cuda.include_dirs) ||
        !fdl__strv_copy(&link->cuda_extra, link->cuda.extra) ||
        (link->cuda.std && !(link->cuda_std = fdl__strdup(link->cuda.std))))
        return fdl__fail(err, FDL_ENOMEM, "out of memory copying the link options");
    link->cuda.defines = (const char *const *)link->cuda_defines.v;
    link->cuda.include_dirs = (const char *const *)link->cuda_includes.v;
    link->cuda.extra = (const char *const *)link->cuda_extra.v;
    link->cuda.std = link->cuda_std;
    link->opts.cuda = &link->cuda;
    link->opts.arch = NULL; /* see link->arch */
    if (o->cache_dir && !(link->cache_dir = fdl__strdup(o->cache_dir)))
        return fdl__fail(err, FDL_ENOMEM, "out of memory copying the link options");
    link->opts.cache_dir = link->cache_dir;
    if (o->cache_remote && !(link->cache_remote = fdl__strdup(o->cache_remote)))
        return fdl__fail(err, FDL_ENOMEM, "out of memory copying the link options");
    link->opts.cache_remote = link->cache_remote;
    fdl__cache_use_init(&link->cache, o->cache, link->cache_dir, link->cache_remote);
    link->cache.payload = fdl__cache_payload_problem;
    return FDL_OK;
}

/* The backend: as asked, or nvJitLink when it loads, else cuLink when a context is current. */
static int choose_backend(fdl_link *link, fdl_error *err)
{
    fdl_link_backend want = link->opts.backend;
    if (want == FDL_BACKEND_CULINK) {
        int rc = fdl__cu_load(err);
        if (rc == FDL_OK)
            rc = fdl__cu_require_context(err);
        if (rc == FDL_OK)
            link->backend = FDL_BACKEND_CULINK;
        return rc;
    }
    /* with the cache on, a memo of nvJitLink's version spares loading it before a hit */
    if (link->cache.on && !fdl__nvjl_tried() &&
        fdl__libmemo_lookup(fdl__nvjl_spec(), link->cache.dir, &link->nvjl_major,
                            &link->nvjl_minor, link->nvjl_id)) {
        link->nvjl_known = link->nvjl_memo = link->nvjl_id_ok = 1;
        link->backend = FDL_BACKEND_NVJITLINK;
        return FDL_OK;
    }
    fdl_error nvjl_err = FDL_ERROR_INIT;
    const fdl__nvjl *nv = NULL;
    int rc = fdl__nvjl_get(&nv, &nvjl_err);
    if (rc == FDL_OK) {
        link->backend = FDL_BACKEND_NVJITLINK;
        return fdl__link_need_nv(link, err);
    }
    if (want == FDL_BACKEND_AUTO && rc == FDL_ENOLIB && fdl__cu_load(NULL) == FDL_OK &&
        fdl__cu_require_context(NULL) == FDL_OK) {
        rc = backend_options(FDL_BACKEND_CULINK, &link->opts, err);
        if (rc == FDL_OK)
            link->backend = FDL_BACKEND_CULINK;
        return rc;
    }
    if (err)
        *err = nvjl_err;
    return rc;
}

/* "native": the current context's device. */
static int resolve_arch(fdl_link *link, const char *arch, fdl_error *err)
{
    if (arch && strcmp(arch, "native") != 0) {
        fdl__link_arch_parse(arch, &link->arch_number, &link->arch_suffix);
        fdl__strlcpy(link->arch, arch, sizeof link->arch);
        return FDL_OK;
    }
    int cc = 0;
    int rc = fdl__cu_current_cc(&cc, err);
    if (rc != FDL_OK)
        return rc;
    if (cc >= 10 && cc <= 9999)
        snprintf(link->arch, sizeof link->arch, "sm_%u", (unsigned)cc % 10000u);
    if (!fdl__link_arch_parse(link->arch, &link->arch_number, &link->arch_suffix))
        return fdl__fail(err, FDL_ECUDA, "the current device reports compute capability %d.%d, "
                         "which is no architecture nvJitLink knows", cc / 10, cc % 10);
    return FDL_OK;
}

int fdl_link_options_check(const fdl_link_options *opts, fdl_error *err)
{
    if (!FDL__CHECK_ARG(opts))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_options_check: opts is NULL");
    fdl_link_options o;
    int rc;
    if ((rc = fdl__link_options_normalise(&o, opts, err)) != FDL_OK ||
        (rc = fdl__link_options_validate(&o, err)) != FDL_OK)
        return rc;
    return backend_options(o.backend, &o, err);
}

int fdl_link_create(fdl_link **out, const fdl_link_options *opts, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(opts))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_create: opts is NULL");
    int rc;
    fdl_link *link = NULL;
    fdl_link_options o;
    if ((rc = fdl__link_options_normalise(&o, opts, err)) != FDL_OK ||
        (rc = fdl__link_options_validate(&o, err)) != FDL_OK)
        goto cleanup;
    if ((rc = backend_options(o.backend, &o, err)) != FDL_OK)
        goto cleanup;
    link = calloc(1, sizeof *link);
    if (!link) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory creating a link");
        goto cleanup;
    }
    link->lease.fd = -1;
    link->lease.dfd = -1;
    link->jobs.rfd = link->jobs.wfd = -1;
    if ((rc = copy_options(link, &o, err)) != FDL_OK ||
        (rc = choose_backend(link, err)) != FDL_OK ||
        (rc = resolve_arch(link, o.arch, err)) != FDL_OK)
        goto cleanup;
    /* nvJitLink checks the options now, unless a memo says that this very library accepted
     * them: this process's (a repeated link creates no nvJitLink handle for them) or the cache
     * directory's (then the library need not even be loaded before a cache hit) */
    if (link->backend == FDL_BACKEND_NVJITLINK && !fdl__link_probe_known(link)) {
        if ((rc = fdl__link_need_nv(link, err)) != FDL_OK && link->nvjl_memo) {
            /* the memoed library exists but does not load: decide as without a memo (which
             * may fall back to cuLink) */
            link->nvjl_memo = link->nvjl_known = link->nvjl_id_ok = 0;
            rc = choose_backend(link, err);
        }
        if (rc != FDL_OK)
            goto cleanup;
        if (link->backend == FDL_BACKEND_NVJITLINK) {
            if ((rc = fdl__link_probe(link, err)) != FDL_OK)
                goto cleanup;
            fdl__link_probe_remember(link);
        }
    }
    if (o.cudadevrt) {
        char path[1024];
        if (!fdl__cuda_find(path, sizeof path, "lib64/libcudadevrt.a") &&
            !fdl__cuda_find(path, sizeof path, "targets/x86_64-linux/lib/libcudadevrt.a")) {
            const char *roots[4];
            size_t n = fdl__cuda_roots(roots, 4);
            fdl__buf where = {0};
            for (size_t i = 0; i < n; i++)
                fdl__buf_printf(&where, "%s%s/lib64", i ? ", " : "", roots[i]);
            rc = fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, "libcudadevrt.a",
                            "libcudadevrt.a not found (looked in %s; set FDLINK_CUDA_ROOT to "
                            "the CUDA toolkit)",
                            where.data ? where.data : "nowhere");
            fdl__buf_free(&where);
            goto cleanup;
        }
        if (!(link->devrt = fdl__strdup(path))) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
            goto cleanup;
        }
    }
    *out = link;
    link = NULL;
    rc = FDL_OK;
cleanup:
    fdl_link_destroy(link);
    return rc;
}

static void input_free(fdl__link_input *in)
{
    free(in->name);
    free(in->data);
    fdl__images_free(&in->images);
    free(in->chosen);
    fdl_ptx_destroy(in->post_lto);
}

void fdl_link_destroy(fdl_link *link)
{
    if (!link)
        return;
    fdl__nvjl_ahead_discard(link);
    fdl__jobs_give_back(link);
    fdl__link_cache_end(link, FDL_EINVAL); /* a lease left (none after complete): given up */
    fdl__strv_free(&link->extra);
    fdl__strv_free(&link->kernels_used);
    fdl__strv_free(&link->variables_used);
    fdl__strv_free(&link->xptxas);
    fdl__strv_free(&link->cuda_defines);
    fdl__strv_free(&link->cuda_includes);
    fdl__strv_free(&link->cuda_extra);
    free(link->cuda_std);
    free(link->cache_dir);
    free(link->cache_remote);
    fdl__cache_use_free(&link->cache);
    free(link->devrt);
    free(link->decls);
    for (size_t i = 0; i < link->ninputs; i++)
        input_free(&link->inputs[i]);
    free(link->inputs);
    free(link->keeper);
    free(link->cubin);
    free(link->ptx);
    free(link->params);
    free(link->info_log);
    free(link->error_log);
    for (size_t i = 0; i < link->nold; i++)
        free(link->old_logs[i]);
    free(link->old_logs);
    fdl__diags_free(&link->diags);
    free(link);
}

int fdl_link_add_decls(fdl_link *link, const fdl_decls *decls, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(decls))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_add_decls: link or decls is NULL");
    if (link->state != LINK_OPEN)
        return fdl__fail(err, FDL_EINVAL, "the link is already complete");
    for (size_t i = 0; i < link->ndecls; i++)
        if (link->decls[i] == decls)
            return FDL_OK;
    size_t n, bytes;
    const fdl_decls **grown = NULL;
    if (fdl__size_add(&n, link->ndecls, 1) && fdl__size_mul(&bytes, n, sizeof *grown))
        grown = realloc(link->decls, bytes);
    if (!grown)
        return fdl__fail(err, FDL_ENOMEM, "out of memory adding declarations");
    link->decls = grown;
    link->decls[link->ndecls++] = decls;
    free(link->keeper);
    link->keeper = NULL;
    link->keeper_size = 0;
    link->keeper_tried = 0;
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

/* ---- inputs ---------------------------------------------------------------------------------- */
/* Make room for one more input. */
static int reserve_input(fdl_link *link, const char *name, fdl_error *err)
{
    if (link->ninputs < link->cap)
        return FDL_OK;
    size_t ncap = link->cap ? link->cap : 4, bytes;
    if (link->cap && !fdl__size_mul(&ncap, link->cap, 2))
        return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "too many inputs");
    fdl__link_input *grown = NULL;
    if (fdl__size_mul(&bytes, ncap, sizeof *grown))
        grown = realloc(link->inputs, bytes);
    if (!grown)
        return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory adding an input");
    link->inputs = grown;
    link->cap = ncap;
    return FDL_OK;
}

/* Refusals that depend only on the input and the link's options (not yet on LTO's decision). */
static int check_input(fdl_link *link, fdl__link_input *in, fdl_error *err)
{
    if (in->kind == FDL_KIND_LTOIR) {
        if (link->backend == FDL_BACKEND_CULINK)
            return fdl__error(err, FDL_EKIND, in->name, 0, 0, NULL,
                              "LTO-IR cannot be linked by the culink backend; use nvjitlink");
        if (link->opts.lto == FDL_LTO_OFF)
            return fdl__error(err, FDL_EKIND, in->name, 0, 0, NULL,
                              "LTO-IR can only be linked with link-time optimisation, and LTO "
                              "is off");
    }
    if (in->kind == FDL_KIND_CUBIN) {
        fdl__image *img = &in->images.v[0];
        int rc = fdl__image_load(img, err);
        if (rc != FDL_OK)
            return rc;
        if (!img->pub.relocatable)
            return fdl__error(err, FDL_EKIND, in->name, 0, 0, NULL,
                              "an executable cubin (already linked, or compiled without "
                              "-rdc=true): only relocatable device code can be linked; compile "
                              "with nvcc -cubin -rdc=true or -dc");
        if (img->pub.arch_number && img->pub.arch_number != link->arch_number)
            return fdl__error(err, FDL_EKIND, in->name, 0, 0, NULL,
                              "a cubin for %s cannot be linked for %s (machine code links only "
                              "into its own architecture): rebuild it for %s, or link PTX or "
                              "LTO-IR",
                              img->pub.arch, link->arch, link->arch);
    }
    if (in->kind == FDL_KIND_PTX) {
        /* bytes this process scanned before scan again at once (a scan is a pure function of
         * them), so theirs can wait for the link to need it: a cache hit never does */
        if (link->cache.on && fdl__link_scan_known(in)) {
            link->scans_put_off++;
            return FDL_OK;
        }
        int rc = fdl__image_load(&in->images.v[0], err);
        if (rc == FDL_OK && link->cache.on)
            fdl__link_scan_remember(in);
        return rc;
    }
    return FDL_OK;
}

/* Take ownership of @p data (size bytes and a NUL) as a new input. */
static int push_input(fdl_link *link, unsigned char *data, size_t size, const char *name,
                      fdl_input_kind kind, int from_cuda, int builtin, fdl_error *err)
{
    int rc;
    fdl__link_input in;
    memset(&in, 0, sizeof in);
    in.data = data;
    in.size = size;
    in.kind = kind;
    in.from_cuda = from_cuda;
    in.builtin = builtin;
    if ((rc = reserve_input(link, name, err)) != FDL_OK)
        goto cleanup;
    if (!(in.name = fdl__strdup(name))) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory adding an input");
        goto cleanup;
    }
    if ((rc = fdl__unpack_for_link(&in.images, in.data, in.size, in.name, kind,
                                   link->arch_number, err)) != FDL_OK ||
        (rc = check_input(link, &in, err)) != FDL_OK)
        goto cleanup;
    link->inputs[link->ninputs++] = in;
    memset(&in, 0, sizeof in);
    rc = FDL_OK;
cleanup:
    input_free(&in);
    return rc;
}




/* Compile CUDA C into PTX or LTO-IR with NVRTC and add it. */
static int add_cuda(fdl_link *link, const char *source, size_t size, const char *name,
                    const fdl_nvrtc_options *o, fdl_error *err)
{
    int rc;
    fdl__strv args = {0};
    char *header = NULL, *log = NULL;
    unsigned char *out = NULL;
    size_t out_size = 0;
    int ltoir;
    if (o->version != FDL_NVRTC_OPTIONS_VERSION) {
        rc = fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "unsupported fdl_nvrtc_options "
                        "version %u (expected %u)", o->version,
                        (unsigned)FDL_NVRTC_OPTIONS_VERSION);
        goto cleanup;
    }
    if ((unsigned)o->output > FDL_CUDA_OUTPUT_LTOIR) {
        rc = fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "invalid CUDA output %d",
                        (int)o->output);
        goto cleanup;
    }
    if ((rc = fdl__link_nvrtc_texts_ok(o, err)) != FDL_OK)
        goto cleanup;
    int lto_possible = link->backend == FDL_BACKEND_NVJITLINK && link->opts.lto != FDL_LTO_OFF;
    ltoir = o->output == FDL_CUDA_OUTPUT_LTOIR ||
            (o->output == FDL_CUDA_OUTPUT_AUTO && lto_possible);
    if (ltoir && !lto_possible) {
        rc = fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                        "CUDA C compiled to LTO-IR needs link-time optimisation, and %s",
                        link->backend == FDL_BACKEND_CULINK ? "the culink backend has none"
                                                            : "LTO is off");
        goto cleanup;
    }
    int whole = fdl__nvrtc_user_whole_program(o->extra);
    int ok = fdl__link_nvrtc_args(link, ltoir, o->include_dirs, !o->no_toolkit_include, !whole,
                                  &args);
    for (size_t i = 0; o->defines && o->defines[i]; i++)
        ok = ok && fdl__strv_push(&args, "-D%s", o->defines[i]);
    if (o->std)
        ok = ok && fdl__strv_push(&args, "-std=%s", o->std);
    if (link->opts.debug)
        ok = ok && fdl__strv_push(&args, "-G", NULL);
    if (link->opts.lineinfo)
        ok = ok && fdl__strv_push(&args, "-lineinfo", NULL);
    if (link->opts.ftz >= 0)
        ok = ok && fdl__strv_push(&args, "-ftz=%s", link->opts.ftz ? "true" : "false");
    if (link->opts.prec_div >= 0)
        ok = ok && fdl__strv_push(&args, "-prec-div=%s", link->opts.prec_div ? "true" : "false");
    if (link->opts.prec_sqrt >= 0)
        ok = ok && fdl__strv_push(&args, "-prec-sqrt=%s", link->opts.prec_sqrt ? "true" : "false");
    if (link->opts.fma >= 0)
        ok = ok && fdl__strv_push(&args, "-fmad=%s", link->opts.fma ? "true" : "false");
    fdl__nvrtc_header hdr = {DECLS_HEADER, NULL};
    size_t nheaders = 0;
    if (link->ndecls) {
        /* ABI-10: the declared prototypes, so that a disagreeing definition does not compile */
        if ((rc = fdl__link_decls_header(link, &header, err)) != FDL_OK)
            goto cleanup;
        hdr.text = header;
        nheaders = 1;
        ok = ok && fdl__strv_push(&args, "--pre-include=" DECLS_HEADER, NULL);
    }
    for (size_t i = 0; o->extra && o->extra[i]; i++)
        ok = ok && fdl__strv_push(&args, o->extra[i], NULL);
    if (!ok) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory building options");
        goto cleanup;
    }
    rc = fdl__link_nvrtc_cached(link, &out, &out_size, &log, source, size, name,
                                (const char *const *)args.v, &hdr, nheaders, ltoir, err);
    /* NVRTC's warnings and errors as records (fdl_link_diagnostic), whatever the outcome */
    if (log && !fdl__diags_parse_nvrtc(&link->diags, log) && rc == FDL_OK) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory keeping diagnostics");
        goto cleanup;
    }
    if (rc == FDL_EPARSE && fdl__link_cuda_conflict(link, source, size, name, log, err))
        rc = FDL_EABI; /* a definition that disagrees with its declaration (ABI-5) */
    if (rc != FDL_OK) {
        /* the whole compiler log stays with the link, where err->log can borrow it */
        if (log && fdl__link_set_log(link, 0, log)) {
            log = NULL;
            if (err)
                err->log = link->error_log;
        }
        goto cleanup;
    }
    if (log && log[0] && fdl__link_set_log(link, 1, log))
        log = NULL;
    rc = push_input(link, out, out_size, name, ltoir ? FDL_KIND_LTOIR : FDL_KIND_PTX, 1, 0, err);
    out = NULL; /* push_input owns it now, whatever happened */
cleanup:
    fdl__strv_free(&args);
    free(header);
    free(log);
    free(out);
    return rc;
}

/*
 * Compile NVVM bitcode with libNVVM and add it (issue 34): LTO-IR where the link has LTO
 * (nvJitLink, LTO not off), else PTX. The input reports FDL_KIND_BITCODE.
 */
static int add_bitcode(fdl_link *link, const unsigned char *bc, size_t size, const char *name,
                       fdl_error *err)
{
    unsigned char *out = NULL;
    size_t out_size = 0;
    char *log = NULL, arch[32];
    int ltoir = link->backend == FDL_BACKEND_NVJITLINK && link->opts.lto != FDL_LTO_OFF;
    fdl__link_virtual_arch(link, arch, sizeof arch);
    int rc = fdl__link_nvvm_cached(link, &out, &out_size, &log, bc, size, name, arch, ltoir, err);
    if (rc != FDL_OK) {
        if (log && fdl__link_set_log(link, 0, log)) {
            log = NULL;
            if (err)
                err->log = link->error_log;
        }
        goto cleanup;
    }
    rc = push_input(link, out, out_size, name, ltoir ? FDL_KIND_LTOIR : FDL_KIND_PTX, 2, 0, err);
    out = NULL; /* push_input owns it now, whatever happened */
cleanup:
    free(log);
    free(out);
    return rc;
}

int fdl_link_add_cuda(fdl_link *link, const char *source, size_t size, const char *name,
                      const fdl_nvrtc_options *opts, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(source || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_add_cuda: link, name or source is NULL");
    if (link->state != LINK_OPEN)
        return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "the link is already complete");
    if (memchr(source, '\0', size))
        return fdl__error(err, FDL_EKIND, name, 0, 0, NULL,
                          "CUDA C source holds a NUL byte (binary data?)");
    return add_cuda(link, source, size, name, opts ? opts : &link->cuda, err);
}

int fdl_link_add_data(fdl_link *link, const void *data, size_t size, const char *name,
                      fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(data || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_add_data: link, name or data is NULL");
    if (link->state != LINK_OPEN)
        return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "the link is already complete");
    fdl_input_kind detected;
    int rc = fdl__detect(&detected, data, size, name, kind, err);
    if (rc != FDL_OK)
        return rc;
    if (detected == FDL_KIND_CUDA)
        return add_cuda(link, (const char *)data, size, name, &link->cuda, err);
    if (detected == FDL_KIND_BITCODE)
        return add_bitcode(link, data, size, name, err);
    size_t cap;
    unsigned char *copy = NULL;
    if (fdl__size_add(&cap, size, 1))
        copy = malloc(cap);
    if (!copy)
        return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory copying %zu bytes",
                          size);
    memcpy(copy, data, size);
    copy[size] = '\0';
    return push_input(link, copy, size, name, detected, 0, 0, err);
}

int fdl_link_add_file(fdl_link *link, const char *path, fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(path))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_add_file: link or path is NULL");
    if (link->state != LINK_OPEN)
        return fdl__error(err, FDL_EINVAL, path, 0, 0, NULL, "the link is already complete");
    char *data = NULL;
    size_t size = 0;
    int rc = fdl__read_file(path, &data, &size, err);
    if (rc != FDL_OK)
        goto cleanup;
    fdl_input_kind detected;
    if ((rc = fdl__detect(&detected, (const unsigned char *)data, size, path, kind, err)) !=
        FDL_OK)
        goto cleanup;
    if (detected == FDL_KIND_CUDA) {
        rc = add_cuda(link, data, size, path, &link->cuda, err);
        goto cleanup;
    }
    if (detected == FDL_KIND_BITCODE) {
        rc = add_bitcode(link, (const unsigned char *)data, size, path, err);
        goto cleanup;
    }
    rc = push_input(link, (unsigned char *)data, size, path, detected, 0, 0, err);
    data = NULL; /* owned by the input, or freed by push_input */
cleanup:
    free(data);
    return rc;
}

/* ---- what each input contributes ------------------------------------------------------------- */
/* Whether an image can serve the link's arch (LTO-IR and PTX: any arch up to it). */
static int image_fits(const fdl_link *link, const fdl__image *img)
{
    unsigned a = img->pub.arch_number;
    switch (img->pub.kind) {
    case FDL_KIND_CUBIN:
        return a == link->arch_number;
    case FDL_KIND_PTX:
    case FDL_KIND_LTOIR:
        return a == 0 || a <= link->arch_number;
    default:
        return 0;
    }
}

static int input_has_ltoir(const fdl_link *link, const fdl__link_input *in)
{
    for (size_t i = 0; i < in->images.n; i++)
        if (in->images.v[i].pub.kind == FDL_KIND_LTOIR && image_fits(link, &in->images.v[i]))
            return 1;
    return 0;
}

/* "sm_80 cubin, compute_75 ptx" of a unit, for messages. */
static void unit_contents(const fdl__link_input *in, size_t unit, char *out, size_t size)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < in->images.n && at < size; i++) {
        const fdl__image *img = &in->images.v[i];
        if (img->unit != unit)
            continue;
        int n = snprintf(out + at, size - at, "%s%s %s", at ? ", " : "",
                         img->pub.arch[0] ? img->pub.arch : "?",
                         fdl_input_kind_name(img->pub.kind));
        if (n < 0)
            break;
        at += (size_t)n;
    }
    if (at >= size && size > 4)
        memcpy(out + size - 4, "...", 4);
}

/*
 * Pick the image each unit contributes: with LTO, LTO-IR first; then the cubin for the arch,
 * then the newest PTX up to the arch; without LTO, LTO-IR never.
 */
static int choose_images(fdl_link *link, fdl__link_input *in, fdl_error *err)
{
    free(in->chosen);
    in->chosen = calloc(in->images.nunits ? in->images.nunits : 1, sizeof *in->chosen);
    if (!in->chosen)
        return fdl__error(err, FDL_ENOMEM, in->name, 0, 0, NULL, "out of memory");
    for (size_t i = 0; i < in->images.n; i++) {
        fdl__image *img = &in->images.v[i];
        fdl__image **slot = &in->chosen[img->unit];
        if (!image_fits(link, img) || (img->pub.kind == FDL_KIND_LTOIR && !link->lto))
            continue;
        int rank = img->pub.kind == FDL_KIND_LTOIR ? 3 : img->pub.kind == FDL_KIND_CUBIN ? 2 : 1;
        int best = !*slot ? 0
                   : (*slot)->pub.kind == FDL_KIND_LTOIR ? 3
                   : (*slot)->pub.kind == FDL_KIND_CUBIN ? 2
                                                          : 1;
        if (rank > best || (rank == best && img->pub.arch_number > (*slot)->pub.arch_number))
            *slot = img;
    }
    for (size_t u = 0; u < in->images.nunits; u++) {
        if (in->chosen[u]) {
            fdl__image *img = in->chosen[u];
            int rc = fdl__image_load(img, err);
            if (rc != FDL_OK)
                return rc;
            if (img->pub.kind == FDL_KIND_CUBIN && !img->opaque && !img->pub.relocatable)
                return fdl__error(err, FDL_EKIND, img->pub.name, 0, 0, NULL,
                                  "an executable cubin (compiled without -rdc=true): only "
                                  "relocatable device code can be linked; compile with "
                                  "-rdc=true or -dc");
            continue;
        }
        char what[256];
        unit_contents(in, u, what, sizeof what);
        int lto_only = 0, any = 0;
        for (size_t i = 0; i < in->images.n; i++) {
            const fdl__image *img = &in->images.v[i];
            if (img->unit != u)
                continue;
            any = 1;
            lto_only |= img->pub.kind == FDL_KIND_LTOIR && image_fits(link, img);
        }
        if (!any)
            continue; /* a container with no entries gives nothing and needs nothing */
        if (lto_only && link->backend == FDL_BACKEND_CULINK)
            return fdl__error(err, FDL_EKIND, in->name, 0, 0, NULL,
                              "holds only LTO-IR for %s (%s), which the culink backend cannot "
                              "link; use nvjitlink",
                              link->arch, what);
        if (lto_only)
            return fdl__error(err, FDL_EKIND, in->name, 0, 0, NULL,
                              "holds only LTO-IR for %s (%s), and LTO is off", link->arch, what);
        return fdl__error(err, FDL_ELINK, in->name, 0, 0, NULL,
                          "no code for %s: it holds %s; rebuild it for %s, or with PTX for "
                          "compute_%u or older",
                          link->arch, what[0] ? what : "nothing", link->arch, link->arch_number);
    }
    return FDL_OK;
}

/* ---- complete -------------------------------------------------------------------------------- */
static int add_devrt(fdl_link *link, fdl_error *err)
{
    char *data = NULL;
    size_t size = 0;
    int rc = fdl__read_file(link->devrt, &data, &size, err);
    if (rc != FDL_OK)
        return rc;
    fdl_input_kind kind;
    if ((rc = fdl__detect(&kind, (const unsigned char *)data, size, link->devrt,
                          FDL_KIND_LIBRARY, err)) != FDL_OK) {
        free(data);
        return rc;
    }
    return push_input(link, (unsigned char *)data, size, link->devrt, FDL_KIND_LIBRARY, 0, 1,
                      err);
}

/* Decide LTO and the image of every unit; refuse what cannot be linked. */
/*
 * Every compressed cubin of every input decompressed and validated (fdl__image_load): the
 * backend is given whole containers, not only the images chosen, and those were validated when
 * unpacked only if they were stored uncompressed. Runs on a miss only (a hit never links).
 */
static int validate_compressed(fdl_link *link, fdl_error *err)
{
    for (size_t i = 0; i < link->ninputs; i++) {
        fdl__link_input *in = &link->inputs[i];
        for (size_t k = 0; k < in->images.n; k++) {
            fdl__image *img = &in->images.v[k];
            int rc;
            /* (a member for another architecture is not read by the linker either) */
            if (img->pub.kind == FDL_KIND_CUBIN && img->flags &&
                img->pub.arch_number == link->arch_number &&
                (rc = fdl__image_load(img, err)) != FDL_OK)
                return rc;
        }
    }
    return FDL_OK;
}

static int prepare(fdl_link *link, fdl_error *err)
{
    int vrc = validate_compressed(link, err);
    if (vrc != FDL_OK)
        return vrc;
    /* the scans that check_input put off: the choice of images needs them from here on */
    for (size_t i = 0; i < link->ninputs; i++) {
        fdl__link_input *in = &link->inputs[i];
        int rc;
        if (in->kind == FDL_KIND_PTX && (rc = fdl__image_load(&in->images.v[0], err)) != FDL_OK)
            return rc;
    }
    int any_ltoir = 0;
    for (size_t i = 0; i < link->ninputs; i++)
        any_ltoir |= !link->inputs[i].builtin && input_has_ltoir(link, &link->inputs[i]);
    if (!backend_of(link->backend)->lto)
        link->lto = 0;
    else if (link->opts.lto == FDL_LTO_ON && !any_ltoir)
        return fdl__fail(err, FDL_EINVAL, "LTO is on, but no input carries LTO-IR for %s (give "
                         "LTO-IR, e.g. nvcc -dlto, or leave LTO to be decided by the inputs)",
                         link->arch);
    else
        link->lto = link->opts.lto != FDL_LTO_OFF && any_ltoir;
    for (size_t i = 0; i < link->ninputs; i++) {
        int rc = choose_images(link, &link->inputs[i], err);
        if (rc != FDL_OK)
            return rc;
    }
    if (link->opts.emit_ptx) {
        for (size_t i = 0; i < link->ninputs; i++) {
            const fdl__link_input *in = &link->inputs[i];
            for (size_t u = 0; u < in->images.nunits; u++)
                if (in->chosen[u] && in->chosen[u]->pub.kind != FDL_KIND_LTOIR)
                    return fdl__error(err, FDL_EINVAL, in->name, 0, 0, NULL,
                                      "emit_ptx: nvJitLink emits post-LTO PTX only when every "
                                      "input is LTO-IR, and this input links %s",
                                      fdl_input_kind_name(in->chosen[u]->pub.kind));
        }
    }
    return FDL_OK;
}

/* The backend's errors and warnings as records, from its logs (the info log once it is its own). */
static void backend_diags(fdl_link *link, const char *nvrtc_info)
{
    const char *tool = link->backend == FDL_BACKEND_CULINK ? "culink" : "nvjitlink";
    if (link->info_log && link->info_log != nvrtc_info)
        fdl__diags_parse_linker(&link->diags, link->info_log, tool);
    if (link->error_log)
        fdl__diags_parse_linker(&link->diags, link->error_log, tool);
}

size_t fdl_link_diagnostic_count(const fdl_link *link)
{
    return link ? link->diags.n : 0;
}

const fdl_diagnostic *fdl_link_diagnostic(const fdl_link *link, size_t index)
{
    return link && index < link->diags.n ? &link->diags.v[index] : NULL;
}

int fdl_cubin_defines_function(const void *data, size_t size, const char *name)
{
    return data && name && fdl__lto_cubin_keeps(data, size, name);
}

void fdl_link_jobs(const fdl_link *link, int *threads, int *tokens, int *jobserver)
{
    if (threads)
        *threads = link ? link->jobs.threads : 0;
    if (tokens)
        *tokens = link ? link->jobs.taken : 0;
    if (jobserver)
        *jobserver = link ? link->jobs.had_server : 0;
}

int fdl_link_jobs_memory_bound(const fdl_link *link)
{
    return link ? link->jobs.memory_bound : 0;
}

/* The link beside its checks, unless FDLINK_CHECK_AHEAD=0 (one after the other, as before). An
 * isolated link runs after them: two threads forking at once deadlocked a child in the
 * sanitizer's allocator (test_link_kinds under ASan). */
static int ahead_wanted(void)
{
    const char *env = getenv("FDLINK_CHECK_AHEAD");
    return !(env && strcmp(env, "0") == 0);
}

/* Forget the post-LTO views of an earlier check: inputs or declarations may have come since. */
static void forget_views(fdl_link *link)
{
    for (size_t i = 0; i < link->ninputs; i++) {
        fdl_ptx_destroy(link->inputs[i].post_lto);
        link->inputs[i].post_lto = NULL;
    }
}

/* The checks of fdl_link_complete (declarations, duplicates), after prepare. */
static int run_checks(fdl_link *link, fdl_error *err)
{
    int rc = FDL_OK;
    for (size_t i = 0; rc == FDL_OK && i < sizeof checks / sizeof checks[0]; i++)
        rc = checks[i]->run(link, err);
    return rc;
}

int fdl_link_check(fdl_link *link, unsigned flags, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_check: link is NULL");
    if (flags & ~FDL_LINK_CHECK_ALLOW_UNDEFINED)
        return fdl__fail(err, FDL_EINVAL, "fdl_link_check: unknown flags 0x%x",
                         flags & ~FDL_LINK_CHECK_ALLOW_UNDEFINED);
    if (link->state != LINK_OPEN)
        return fdl__fail(err, FDL_EINVAL, "the link is already complete");
    if (!link->ninputs)
        return fdl__fail(err, FDL_EINVAL, "nothing to check: no inputs were added");
    link->checked = 0;
    forget_views(link);
    int rc = prepare(link, err);
    if (rc == FDL_OK) {
        link->allow_undefined = (flags & FDL_LINK_CHECK_ALLOW_UNDEFINED) != 0;
        rc = run_checks(link, err);
        link->allow_undefined = 0;
    }
    /* a whole check stands for fdl_link_complete's while nothing is added */
    if (rc == FDL_OK && !flags) {
        link->checked = 1;
        link->checked_inputs = link->ninputs;
        link->checked_decls = link->ndecls;
    }
    return rc;
}

int fdl_link_complete(fdl_link *link, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link))
        return fdl__fail(err, FDL_EINVAL, "fdl_link_complete: link is NULL");
    if (link->state != LINK_OPEN)
        return fdl__fail(err, FDL_EINVAL, "the link is already complete");
    if (!link->ninputs)
        return fdl__fail(err, FDL_EINVAL, "nothing to link: no inputs were added");
    const fdl__link_backend_ops *backend = backend_of(link->backend);
    int rc;
    if (backend->ready && (rc = backend->ready(err)) != FDL_OK)
        return rc;
    int checked = link->checked && link->checked_inputs == link->ninputs &&
                  link->checked_decls == link->ndecls;
    link->state = LINK_FAILED;
    int hit = 0;
    if (link->devrt && (rc = add_devrt(link, err)) != FDL_OK)
        goto cleanup;
    uint64_t lookup_start = fdl__now_ns();
    const char *before = link->info_log; /* NVRTC's, until the backend's replaces it */
    if ((rc = fdl__link_cache_begin(link, &hit, err)) != FDL_OK)
        goto cleanup;
    if (hit) {
        link->wall_ms = (double)(fdl__now_ns() - lookup_start) / 1e6;
        if (link->wall_ms <= 0.0)
            link->wall_ms = 1e-6;
        link->state = LINK_DONE;
        backend_diags(link, before);
        goto cleanup;
    }
    if ((rc = prepare(link, err)) != FDL_OK)
        goto cleanup;
    /* -split-compile-extended, when fdlink would choose it, unless it killed nvJitLink here */
    if (fdl__link_extended_auto(link))
        fdl__link_extended_recall(link);
    /* a link on every processor takes the build's job slots instead, when it runs under one */
    if (backend == &fdl__backend_nvjl && fdl__link_split_threads(link) == 0) {
        long nproc = sysconf(_SC_NPROCESSORS_ONLN);
        fdl__jobs_take(link, nproc > 0 && nproc < 4096 ? (int)nproc : 4096);
    }
    /* fdl_link_check ran them on these very inputs: not again (their diagnostics are there) */
    uint64_t start = 0; /* the backend's time: from its run's start, beside the checks or not */
    if (!checked) {
        /* the declaration check of LTO-IR runs nvJitLink too: the link's own run goes beside
         * it, on a thread of its own, and is kept only when every check passes */
        start = fdl__now_ns();
        if (!(backend == &fdl__backend_nvjl && fdl__check_decls_links(link) &&
              fdl__link_need_nv(link, NULL) == FDL_OK && ahead_wanted() &&
              !fdl__isolate_wanted(&link->opts) &&
              fdl__nvjl_ahead_start(link)))
            start = 0;
        forget_views(link); /* of an earlier fdl_link_check, if any */
        if ((rc = run_checks(link, err)) != FDL_OK) {
            fdl__nvjl_ahead_discard(link);
            goto cleanup;
        }
    }
    if (!start)
        start = fdl__now_ns();
    rc = backend->run(link, err);
    link->wall_ms = (double)(fdl__now_ns() - start) / 1e6;
    if (link->wall_ms <= 0.0)
        link->wall_ms = 1e-6;
    backend_diags(link, before);
    if (rc != FDL_OK)
        goto cleanup;
    if (!link->cubin || !link->cubin_size) {
        rc = fdl__fail(err, FDL_ELINK, "the link gave no cubin"); /* never success without */
        goto cleanup;
    }
    if (link->opts.lto_report && link->ndecls)
        fdl__lto_report(link);
    link->state = LINK_DONE;
    fdl__link_params_collect(link);
cleanup:
    fdl__jobs_give_back(link); /* the job slots of the backend's run, if any were taken */
    fdl__link_cache_end(link, rc); /* a link made stored, the lease given up */
    if (rc == FDL_OK)
        fdl__link_advice(link, !hit);
    return rc;
}

/* ---- links side by side: one program for several architectures (issue 40) ------------------ */

typedef struct links_run {
    fdl_link *const *links;
    size_t n;
    fdl_error *errs;
    int *rcs;
    pthread_mutex_t lock;
    size_t next; /* the next link to complete, under lock */
} links_run;

static void *links_worker(void *arg)
{
    links_run *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        size_t i = r->next < r->n ? r->next++ : r->n;
        pthread_mutex_unlock(&r->lock);
        if (i >= r->n)
            return NULL;
        r->rcs[i] = fdl_link_complete(r->links[i], &r->errs[i]);
    }
}

int fdl_links_complete(fdl_link *const *links, size_t n, int jobs, fdl_error *errs)
{
    fdl_error *own = NULL;
    int *rcs = NULL;
    pthread_t *threads = NULL;
    size_t started = 0;
    fdl__slots slots;
    int rc = FDL_OK, nthreads = 1, have_slots = 0;
    links_run r = {.links = links, .n = n};
    if (!FDL__CHECK_ARG(links || !n))
        return fdl__fail(errs, FDL_EINVAL, "fdl_links_complete: links is NULL");
    for (size_t i = 0; i < n; i++)
        if (!FDL__CHECK_ARG(links[i]))
            return fdl__fail(errs, FDL_EINVAL, "fdl_links_complete: link %zu is NULL", i);
    if (!n)
        return FDL_OK;
    if (!errs) {
        if (!(own = calloc(n, sizeof *own)))
            return fdl__fail(NULL, FDL_ENOMEM, "out of memory");
        errs = own;
    }
    for (size_t i = 0; i < n; i++)
        fdl_error_clear(&errs[i]);
    rcs = calloc(n, sizeof *rcs);
    if (!rcs) {
        rc = fdl__fail(&errs[0], FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    r.errs = errs;
    r.rcs = rcs;
    /* An isolated link forks, and a fork while other threads of this process run (in the
     * allocator, in nvJitLink, in dlopen) can leave the child waiting for a lock forever (seen
     * under AddressSanitizer): isolated links complete one after another, each with every core
     * for its own split compilation. */
    int isolated = 0;
    for (size_t i = 0; i < n; i++)
        isolated |= fdl__isolate_wanted(&links[i]->opts) || fdl__link_extended_auto(links[i]);
    nthreads = fdl__slots_take(&slots, isolated ? 1 : n > 4096 ? 4096 : (int)n, jobs);
    have_slots = 1;
    if (pthread_mutex_init(&r.lock, NULL) != 0) {
        rc = fdl__fail(&errs[0], FDL_ENOMEM, "cannot make a lock for the links");
        goto cleanup;
    }
    /* this thread is one of them: nthreads - 1 more */
    if (nthreads > 1 && (threads = calloc((size_t)nthreads - 1, sizeof *threads)) != NULL)
        for (; started < (size_t)nthreads - 1; started++)
            if (pthread_create(&threads[started], NULL, links_worker, &r) != 0)
                break; /* fewer threads: the others share the work */
    links_worker(&r);
    for (size_t t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    pthread_mutex_destroy(&r.lock);
    for (size_t i = 0; i < n; i++)
        if (rcs[i] != FDL_OK) {
            rc = rcs[i];
            break;
        }
cleanup:
    if (have_slots)
        fdl__slots_give_back(&slots);
    free(threads);
    free(rcs);
    free(own);
    return rc;
}

/* ---- CUDA C to checked PTX or LTO-IR, without a link ------------------------------------- */

/* A copy of a NUL-terminated log, or NULL for none or an empty one. */
static char *copy_log(const char *log)
{
    return log && log[0] ? fdl__strdup(log) : NULL;
}

int fdl_cuda_compile(void **out, size_t *size, fdl_input_kind *kind, char **log,
                     const char *source, size_t len, const char *name, const char *arch,
                     const fdl_decls *decls, const fdl_link_options *link_opts,
                     const fdl_nvrtc_options *nvrtc_opts, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out) || !FDL__CHECK_ARG(size))
        return fdl__fail(err, FDL_EINVAL, "fdl_cuda_compile: out or size is NULL");
    *out = NULL;
    *size = 0;
    if (kind)
        *kind = FDL_KIND_AUTO;
    if (log)
        *log = NULL;
    if (!FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(source || !len))
        return fdl__fail(err, FDL_EINVAL, "fdl_cuda_compile: name or source is NULL");
    fdl_link *link = NULL;
    unsigned char *copy = NULL;
    int rc;
    fdl_link_options o = FDL_LINK_OPTIONS_INIT;
    /* the options of any version, as the current one, with the arch given */
    if (link_opts && (rc = fdl__link_options_normalise(&o, link_opts, err)) != FDL_OK)
        goto cleanup;
    if (arch)
        o.arch = arch;
    /* a compile, not a link: the fdl_link is only the way through NVRTC, the cache and checks */
    if ((rc = fdl_link_create(&link, &o, err)) != FDL_OK)
        goto cleanup;
    if (decls && (rc = fdl_link_add_decls(link, decls, err)) != FDL_OK)
        goto cleanup;
    if ((rc = fdl_link_add_cuda(link, source, len, name, nvrtc_opts, err)) != FDL_OK)
        goto cleanup;
    /* what it defines against the declarations; the rest is defined elsewhere */
    if (decls && (rc = fdl_link_check(link, FDL_LINK_CHECK_ALLOW_UNDEFINED, err)) != FDL_OK)
        goto cleanup;
    size_t n = 0, cap;
    fdl_input_kind k = FDL_KIND_AUTO;
    const void *data = fdl_link_input_data(link, 0, &n, &k);
    if (!fdl__size_add(&cap, n, 1) || !(copy = malloc(cap))) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory copying %zu bytes", n);
        goto cleanup;
    }
    memcpy(copy, data, n);
    copy[n] = '\0';
    *out = copy;
    *size = n;
    if (kind)
        *kind = k;
    copy = NULL;
    rc = FDL_OK;
cleanup:
    /* NVRTC's log (warnings too) is the caller's; err->log would outlive the link it points into */
    if (log && link) {
        const char *l = rc == FDL_OK ? "" : fdl_link_error_log(link);
        *log = copy_log(l[0] ? l : fdl_link_info_log(link));
    }
    if (err && link && err->log)
        err->log = NULL;
    if (rc == FDL_OK && log && !*log && fdl_link_info_log(link)[0]) {
        free(*out);
        *out = NULL;
        *size = 0;
        if (kind)
            *kind = FDL_KIND_AUTO;
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory copying the log");
    }
    free(copy);
    fdl_link_destroy(link);
    return rc;
}

/* ---- results --------------------------------------------------------------------------------- */
const void *fdl_link_input_data(const fdl_link *link, size_t i, size_t *size,
                                fdl_input_kind *kind)
{
    if (size)
        *size = 0;
    if (kind)
        *kind = FDL_KIND_AUTO;
    if (!link || i >= link->ninputs)
        return NULL;
    if (size)
        *size = link->inputs[i].size;
    if (kind)
        *kind = link->inputs[i].kind;
    return link->inputs[i].data;
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

const char *fdl_link_ptx(const fdl_link *link, size_t *size)
{
    if (size)
        *size = 0;
    if (!link || link->state != LINK_DONE || !link->ptx)
        return NULL;
    if (size)
        *size = link->ptx_size;
    return link->ptx;
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

fdl_cache_result fdl_link_cache_result(const fdl_link *link, const char **key)
{
    if (key)
        *key = link ? link->cache_key : "";
    return link && link->state == LINK_DONE ? link->cache_result : FDL_CACHE_UNUSED;
}

const char *fdl_link_cache_warning(const fdl_link *link)
{
    return link ? link->cache.warning : "";
}

void fdl_link_nvrtc_cache(const fdl_link *link, size_t *hits, size_t *compiled)
{
    if (hits)
        *hits = link ? link->nvrtc_hits : 0;
    if (compiled)
        *compiled = link ? link->nvrtc_compiled : 0;
}

void fdl_link_nvvm_cache(const fdl_link *link, size_t *hits, size_t *compiled)
{
    if (hits)
        *hits = link ? link->nvvm_hits : 0;
    if (compiled)
        *compiled = link ? link->nvvm_compiled : 0;
}

fdl_link_backend fdl_link_get_backend(const fdl_link *link)
{
    return link ? link->backend : FDL_BACKEND_AUTO;
}

const char *fdl_link_arch(const fdl_link *link)
{
    return link ? link->arch : "";
}

int fdl_link_lto(const fdl_link *link)
{
    return link && link->state == LINK_DONE ? link->lto : 0;
}

size_t fdl_link_input_count(const fdl_link *link)
{
    return link ? link->ninputs : 0;
}

const char *fdl_link_input(const fdl_link *link, size_t i, fdl_input_kind *kind)
{
    if (kind)
        *kind = FDL_KIND_AUTO;
    if (!link || i >= link->ninputs)
        return NULL;
    if (kind)
        *kind = link->inputs[i].from_cuda == 2   ? FDL_KIND_BITCODE
                : link->inputs[i].from_cuda ? FDL_KIND_CUDA
                                            : link->inputs[i].kind;
    return link->inputs[i].name;
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
    if (!nv->version) {
        fdl__fail(err, FDL_ENOLIB,
                  "nvJitLink lacks nvJitLinkVersion (added in CUDA 12.3): too old to say");
        fdl__error_library(err, "nvJitLink");
        return FDL_ENOLIB;
    }
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
