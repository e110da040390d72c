/*
 * The kernels' parameter classes and sizes (issue 38), from the PTX a link saw: PTX inputs
 * (CUDA C compiled to PTX among them), the post-LTO PTX of LTO-IR inputs that the declaration
 * check made, and the post-LTO PTX of emit_ptx. Kept as text with the link, and in its cache
 * entry, so that a hit knows them too: a line per kernel, `NAME CLS:SIZE CLS:SIZE ...\n`, CLS one
 * of `f` float, `s` signed, `u` unsigned, `b` bits, `m` bytes (a struct), `x` unknown. A link of
 * LTO-IR without declarations has no post-LTO view (making one would cost an nvJitLink run):
 * its kernels' classes are not known, and fdl_link_kernel_params says FDL_ENOTFOUND.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "fdlink/ptx.h"
#include "internal.h"
#include "checks.h"
#include "linkobj.h"

static const char CLASS_LETTERS[] = "xfsubm"; /* indexed by fdl_param_class */

/* Whether the table in @p b already has a line for @p name. */
static int has_kernel(const fdl__buf *b, const char *name)
{
    size_t n = strlen(name);
    const char *s = b->data, *end = b->data ? b->data + b->len : NULL;
    while (s && s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl)
            break;
        if ((size_t)(nl - s) > n && memcmp(s, name, n) == 0 && (s[n] == ' ' || s[n] == '\n'))
            return 1;
        s = nl + 1;
    }
    return 0;
}

static void add_module(fdl__buf *b, const fdl_ptx *ptx)
{
    for (size_t i = 0; ptx && i < fdl_ptx_count(ptx); i++) {
        const fdl_ptx_func *f = fdl_ptx_get(ptx, i);
        if (!f->is_entry || !f->is_definition || has_kernel(b, f->name))
            continue;
        fdl__buf_puts(b, f->name);
        for (size_t p = 0; p < f->nparams; p++) {
            fdl_param_class c = fdl_ptx_param_class(&f->params[p]);
            fdl__buf_printf(b, " %c:%zu", CLASS_LETTERS[(unsigned)c < 6 ? c : 0],
                            f->params[p].bytes);
        }
        fdl__buf_puts(b, "\n");
    }
}

void fdl__link_params_collect(fdl_link *link)
{
    fdl__buf b = {0};
    fdl_ptx *emitted = NULL;
    for (size_t i = 0; i < link->ninputs; i++) {
        fdl__link_input *in = &link->inputs[i];
        for (size_t u = 0; in->chosen && u < in->images.nunits; u++) {
            fdl__image *img = in->chosen[u];
            if (!img || img->pub.kind != FDL_KIND_PTX)
                continue;
            if (!img->loaded && fdl__image_load(img, NULL) != FDL_OK)
                continue;
            add_module(&b, img->ptx);
        }
        add_module(&b, in->post_lto);
    }
    if (link->ptx && fdl_ptx_scan(&emitted, link->ptx, link->ptx_size, "post-LTO ptx", NULL) ==
                          FDL_OK)
        add_module(&b, emitted);
    fdl_ptx_destroy(emitted);
    if (b.oom || !b.len) {
        fdl__buf_free(&b);
        return; /* out of memory: not known, rather than half known */
    }
    free(link->params);
    link->params = b.data;
    link->params_size = b.len;
}

int fdl_link_kernel_params(const fdl_link *link, const char *name, fdl_param_info *out,
                           size_t max, size_t *count, fdl_error *err)
{
    if (!FDL__CHECK_ARG(link) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(count) ||
        !FDL__CHECK_ARG(out || !max))
        return fdl__fail(err, FDL_EINVAL,
                         "fdl_link_kernel_params: link, name, count or out is NULL");
    *count = 0;
    if (link->state != LINK_DONE)
        return fdl__fail(err, FDL_EINVAL, "fdl_link_kernel_params: the link is not complete");
    size_t n = strlen(name);
    const char *s = link->params, *end = link->params ? link->params + link->params_size : NULL;
    while (s && s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl)
            break;
        if ((size_t)(nl - s) >= n && memcmp(s, name, n) == 0 && (s[n] == ' ' || s[n] == '\n')) {
            size_t k = 0;
            const char *q = s + n;
            while (q < nl) {
                /* " C:SIZE": what does not parse ends the list (an entry is checksummed) */
                if (nl - q < 4 || q[0] != ' ' || q[2] != ':')
                    break;
                const char *cl = strchr(CLASS_LETTERS, q[1]);
                size_t size = 0;
                q += 3;
                while (q < nl && *q >= '0' && *q <= '9' && size < ((size_t)1 << 40))
                    size = size * 10 + (size_t)(*q++ - '0');
                if (k < max) {
                    out[k].cls = cl && q[-1] != ':' ? (fdl_param_class)(cl - CLASS_LETTERS)
                                                    : FDL_PARAM_UNKNOWN;
                    out[k].size = size;
                }
                k++;
            }
            *count = k;
            return FDL_OK;
        }
        s = nl + 1;
    }
    return fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name,
                      "the link's code does not say the parameter types of kernel %s (a cubin, "
                      "or LTO-IR linked without declarations)", name);
}
