/*
 * The link object's shared helpers (the declarations a link was given, what its inputs
 * contribute), used by the rest of core/ and the folders above it.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "fdlink/link.h"
#include "fdlink/ptx.h"
#include "internal.h"
#include "linkobj.h"

/* ---- declarations --------------------------------------------------------------------------- */

const fdl_decl *fdl__link_find_decl(const fdl_link *link, const char *name)
{
    for (size_t i = 0; i < link->ndecls; i++) {
        const fdl_decl *d = fdl_decls_find(link->decls[i], name);
        if (d)
            return d;
    }
    return NULL;
}

int fdl__link_decls_header(const fdl_link *link, char **out, fdl_error *err)
{
    *out = NULL;
    fdl__buf b = {0};
    int rc = FDL_OK;
    for (size_t i = 0; i < link->ndecls && rc == FDL_OK; i++) {
        char *one = NULL;
        rc = fdl_header_generate(&one, NULL, link->decls[i], NULL, err);
        if (rc == FDL_OK)
            fdl__buf_puts(&b, one);
        free(one);
    }
    if (rc == FDL_OK && b.oom)
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory generating the prototypes header");
    if (rc == FDL_OK) {
        *out = b.data;
        b.data = NULL;
    }
    fdl__buf_free(&b);
    return rc;
}

/* ---- inputs ------------------------------------------------------------------------------------ */

int fdl__link_chosen_kind(const fdl__link_input *in, fdl_input_kind kind)
{
    for (size_t u = 0; u < in->images.nunits; u++)
        if (in->chosen[u] && in->chosen[u]->pub.kind == kind)
            return 1;
    return 0;
}

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

/* Here, below both of its users (linknvjl.c's link and partition.c's, which linknvjl.c calls),
 * so that no two files call each other. */
void fdl__nvjl_run_free(fdl__nvjl_run *run)
{
    free(run->out);
    free(run->info);
    free(run->error);
    memset(run, 0, sizeof *run);
}
