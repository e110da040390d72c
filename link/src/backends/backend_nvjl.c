/*
 * The nvJitLink backend (fdl__backend_nvjl): the cubin, and with emit_ptx the post-LTO PTX,
 * both logs kept, a failure said from the log's headline and undefined symbols said fully.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "backends.h"
#include "checks.h"
#include "linkobj.h"
#include "nvjl.h"

/* The isolated link's child died (isolate.c): its log kept, one line naming the inputs. */
static int linker_died(fdl_link *link, fdl__nvjl_run *run, fdl__link_input *const *ins,
                       fdl_error *err)
{
    char *log = run->error;
    run->error = NULL;
    if (!fdl__link_set_log(link, 0, log))
        return fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
    return fdl__isolate_died_error(run->signal, "nvJitLink", ins, link->ninputs, err);
}

/* Run nvJitLink: the cubin, and with emit_ptx the post-LTO PTX. */
static int run_nvjitlink(fdl_link *link, fdl_error *err)
{
    /* a cache lookup may have run on a memo of nvJitLink's version alone: load it now (a
     * rejected entry's fallback must never call into a library that is not loaded) */
    int rc = fdl__link_need_nv(link, err);
    if (rc != FDL_OK)
        return rc;
    fdl__nvjl_run run;
    memset(&run, 0, sizeof run);
    fdl__link_input **ins = malloc((link->ninputs ? link->ninputs : 1) * sizeof *ins);
    if (!ins)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    for (size_t i = 0; i < link->ninputs; i++)
        ins[i] = &link->inputs[i];
    for (int pass = 0; pass < (link->opts.emit_ptx ? 2 : 1); pass++) {
        /* the cubin's run may have started beside the checks (link.c): take it */
        if (pass == 1 || !fdl__nvjl_ahead_take(link, &run, &rc, err))
            rc = fdl__nvjl_link(link, link->lto, pass == 1, ins, link->ninputs, NULL, 0, &run, err);
        link->nvjl_runs++;
        if (rc == FDL_ELINK && run.signal && pass == 0 && fdl__link_extended_auto(link)) {
            /* fdlink's choice of -split-compile-extended killed the (isolated) linker: said
             * once, remembered, and linked again with the next mode */
            fdl__link_extended_failed(link, run.signal);
            fdl__nvjl_run_free(&run);
            rc = fdl__nvjl_link(link, link->lto, 0, ins, link->ninputs, NULL, 0, &run, err);
            link->nvjl_runs++;
        }
        if (rc != FDL_OK && rc != FDL_ELINK)
            goto cleanup; /* no link ran (a pipe, a fork, memory): err says why */
        if (!fdl__link_set_log(link, 1, run.info)) {
            run.info = NULL;
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
            goto cleanup;
        }
        run.info = NULL;
        if (rc == FDL_ELINK && run.signal) {
            rc = linker_died(link, &run, ins, err);
            goto cleanup;
        }
        if (rc == FDL_ELINK && run.r == NVJITLINK_ERROR_OUTDATED_LIBRARY) {
            /* an input newer than the linker that the skew check did not know: said alike */
            char *log = run.error;
            run.error = NULL;
            if (!fdl__link_set_log(link, 0, log))
                rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
            else
                rc = fdl__link_outdated_error(link, run.refused ? run.refused : "", err);
            goto cleanup;
        }
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
                fdl__link_undefined_error(link, symbol, err);
            goto cleanup;
        }
        /* the error log may hold warnings even on success */
        if (!fdl__link_set_log(link, 0, run.error)) {
            run.error = NULL;
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
            goto cleanup;
        }
        run.error = NULL;
        if (!run.out || run.out_size == 0) {
            /* never a success without a result */
            rc = fdl__fail(err, FDL_ELINK, "nvJitLink reported success but gave no %s",
                           pass ? "PTX" : "cubin");
            goto cleanup;
        }
        if (pass == 0) {
            link->cubin = run.out;
            link->cubin_size = run.out_size;
        } else {
            link->ptx = (char *)run.out;
            link->ptx_size = run.out_size;
        }
        run.out = NULL;
        fdl__nvjl_run_free(&run);
    }
    rc = FDL_OK;
cleanup:
    fdl__nvjl_run_free(&run);
    free(ins);
    return rc;
}

const fdl__link_backend_ops fdl__backend_nvjl = {FDL_BACKEND_NVJITLINK, 1, NULL, NULL,
                                                      run_nvjitlink};
