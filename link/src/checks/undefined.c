/*
 * An undefined symbol said fully, for the backends: the symbol, the input that refers to it, and
 * where it is declared, or that it is not.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "fdlink/abi.h"
#include "internal.h"
#include "checks.h"
#include "linkobj.h"

/*
 * An undefined symbol, said fully: the symbol, the input that references it, and where it is
 * declared (or that it is not). nvJitLink names the input itself for PTX and cubins
 * ("in 'caller.ptx'"); after LTO, ptxas only says "unresolved extern function", and the LTO-IR
 * inputs are linked alone to find the one that refers to it.
 */
void fdl__link_undefined_error(fdl_link *link, const char *symbol, fdl_error *err)
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
