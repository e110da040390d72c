/*
 * Advice after a successful link (issue 34), each said once as a warning record: a cubin
 * dominated by weak variables that nothing may use (libcu++'s and MathDx's static constexpr
 * members: 4,670 of a cuBLASDx GEMM's symbols, 1,595,464 bytes against 12,584 with
 * --optimize-unused-variables), and a caller given as PTX or a cubin beside large LTO-IR, which
 * makes nvJitLink compile that LTO-IR without seeing its callers (288 s against 2-4 s in the
 * issue's Cholesky link).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "checks.h"
#include "diag.h"
#include "linkobj.h"
#include "unpack.h"

/* LTO-IR inputs from this size count as large (the issue's, MathDx's: megabytes) */
#define LARGE_LTOIR (128u << 10)
/* "dominated": a cubin this large at least (the few hundred weak variables of libcu++ or
 * cooperative groups in an 80 KiB cubin are not worth a word), this many weak variables, and
 * this share of the symbols (percent) */
#define WEAK_CUBIN_MIN (512u << 10)
#define WEAK_MIN 256
#define WEAK_SHARE 75

static void weak_variables(fdl_link *link)
{
    fdl__images im;
    if (!link->cubin || link->cubin_size < WEAK_CUBIN_MIN || link->opts.optimize_unused_variables ||
        fdl__unpack(&im, link->cubin, link->cubin_size, "the linked cubin", FDL_KIND_CUBIN,
                    NULL) != FDL_OK)
        return;
    size_t weak = 0, all = 0;
    if (im.n == 1 && fdl__image_load(&im.v[0], NULL) == FDL_OK) {
        const fdl__image *img = &im.v[0];
        for (size_t i = 0; i < img->nsyms; i++) {
            all++;
            weak += img->syms[i].kind == FDL_SYMBOL_VARIABLE && img->syms[i].weak &&
                    img->syms[i].defined;
        }
    }
    fdl__images_free(&im);
    if (weak < WEAK_MIN || weak * 100 < all * WEAK_SHARE)
        return;
    char msg[2 * FDL_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg,
             "the linked cubin (%zu bytes) is mostly weak variables (%zu of its %zu symbols, "
             "static constexpr members of C++ headers): if the host reads none of them by name, "
             "%s", link->cubin_size, weak, all,
             link->lto ? "--optimize-unused-variables drops them"
                       : "link LTO-IR (nvcc -dlto, or CUDA C) with --optimize-unused-variables, "
                         "which drops them");
    fdl__diags_add(&link->diags, "fdlink", "", 0, 0, FDL_SEVERITY_WARNING, "", msg);
}

static void ptx_caller_of_ltoir(fdl_link *link)
{
    const fdl__link_input *big = NULL, *caller = NULL;
    size_t big_size = 0;
    if (!link->lto)
        return;
    for (size_t i = 0; i < link->ninputs; i++) {
        const fdl__link_input *in = &link->inputs[i];
        for (size_t u = 0; in->chosen && u < in->images.nunits; u++) {
            const fdl__image *img = in->chosen[u];
            if (!img)
                continue;
            size_t bytes = img->nbytes ? img->nbytes : img->raw_size;
            if (img->pub.kind == FDL_KIND_LTOIR && bytes >= LARGE_LTOIR && bytes > big_size) {
                big = in;
                big_size = bytes;
            } else if (!in->builtin && !caller &&
                       (img->pub.kind == FDL_KIND_PTX || img->pub.kind == FDL_KIND_CUBIN)) {
                caller = in;
            }
        }
    }
    if (!big || !caller)
        return;
    char msg[2 * FDL_ERROR_MESSAGE_MAX];
    snprintf(msg, sizeof msg,
             "a caller given as %s, not LTO-IR, beside the %zu bytes of LTO-IR of %.120s: "
             "nvJitLink compiles that without seeing its callers, which can take minutes; give "
             "this input as LTO-IR (nvcc -dlto, or its CUDA C source)",
             caller->kind == FDL_KIND_CUBIN ? "a cubin" : "PTX", big_size, big->name);
    fdl__diags_add(&link->diags, "fdlink", caller->name, 0, 0, FDL_SEVERITY_WARNING, "", msg);
}

void fdl__link_advice(fdl_link *link, int prepared)
{
    weak_variables(link);
    if (prepared)
        ptx_caller_of_ltoir(link);
}
