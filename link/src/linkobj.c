/*
 * The bottom of link/src: the link object's shared helpers, used by every file above (string
 * vectors, the declarations a link was given, what its inputs contribute). Calls nothing of
 * link/src but the readers (linkint.h). See README.md in this folder for the order of the files.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "fdlink/link.h"
#include "fdlink/ptx.h"
#include "internal.h"
#include "linkobj.h"

/* ---- string vectors -------------------------------------------------------------------------- */

/* ---- string vectors -------------------------------------------------------------------------- */
void fdl__strv_free(fdl__strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* Append a copy of @p fmt (formatted with one %s of @p arg when @p arg is not NULL). */
int fdl__strv_push(fdl__strv *s, const char *fmt, const char *arg)
{
    if (s->n + 1 >= s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 8, bytes;
        char **grown = NULL;
        if (ncap > s->cap && fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(s->v, bytes);
        if (!grown)
            return 0;
        s->v = grown;
        s->cap = ncap;
    }
    fdl__buf b = {0};
    if (arg)
        fdl__buf_printf(&b, fmt, arg);
    else
        fdl__buf_puts(&b, fmt);
    if (b.oom)
        return 0;
    s->v[s->n++] = b.data;
    s->v[s->n] = NULL;
    return 1;
}

int fdl__strv_copy(fdl__strv *out, const char *const *in)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; in && in[i]; i++)
        if (!fdl__strv_push(out, in[i], NULL))
            return 0;
    return 1;
}

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
