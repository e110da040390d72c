/*
 * The driver's cuLink backend (fdl__backend_culink), on the calling thread's current context:
 * what it cannot do said before anything runs, the cubin, both logs kept, a failure said from the
 * log's headline and undefined symbols said fully.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "libs.h"
#include "backends.h"
#include "checks.h"
#include "linkobj.h"

/* What the culink backend cannot do, said before anything runs. */
static int culink_combination(const fdl_link_options *o, fdl_error *err)
{
    if (o->lto == FDL_LTO_ON)
        return fdl__fail(err, FDL_EINVAL, "LTO needs the nvjitlink backend: cuLink cannot link "
                                          "LTO-IR");
    if (o->emit_ptx)
        return fdl__fail(err, FDL_EINVAL, "emit_ptx needs the nvjitlink backend");
    if (o->extra && o->extra[0])
        return fdl__fail(err, FDL_EINVAL, "extra options are nvJitLink options; the culink "
                                          "backend takes none");
    int rc = fdl__link_options_nvjl_only(o, "culink", err);
    if (rc != FDL_OK)
        return rc;
    if (o->cuda && o->cuda->output == FDL_CUDA_OUTPUT_LTOIR)
        return fdl__fail(err, FDL_EINVAL, "CUDA C compiled to LTO-IR needs the nvjitlink "
                                          "backend: cuLink cannot link LTO-IR");
    return FDL_OK;
}

static char *dup_or_empty(const char *s)
{
    return fdl__strdup(s ? s : "");
}

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
static int run_culink(fdl_link *link, fdl_error *err)
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
            fdl__link_undefined_error(link, symbol, err);
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

/* cuLink links in the calling thread's current context: one must be current to complete. */
static int culink_ready(fdl_error *err)
{
    return fdl__cu_require_context(err);
}

const fdl__link_backend_ops fdl__backend_culink = {FDL_BACKEND_CULINK, 0, culink_combination,
                                                   culink_ready, run_culink};
