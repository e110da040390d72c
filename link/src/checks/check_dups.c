/*
 * Definitions made twice (ABI-6), across all inputs, declared or not: nvJitLink reports them on
 * stderr only and links anyway, keeping one of them. A check of fdl_link_complete
 * (fdl__check_duplicates).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/ptx.h"
#include "internal.h"
#include "checks.h"
#include "linkobj.h"

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
        fdl__error(err, FDL_ELINK, where, line, column, name,
                   "%s: multiple definition, first defined at %s:%u:%u (ABI-6)", name,
                   first->where, first->line, first->column);
    else
        fdl__error(err, FDL_ELINK, where, line, column, name,
                   "%s: multiple definition, first defined in %s (ABI-6)", name, first->where);
    fdl__error_rule(err, 6);
    return FDL_ELINK;
}

/*
 * ABI-6 for every name, declared or not: a global function or kernel defined in two inputs.
 * nvJitLink reports this on stderr only and links anyway, keeping one of the definitions.
 */
static int check_duplicates(fdl_link *link, fdl_error *err)
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

const fdl__link_check fdl__check_duplicates = {"duplicate definitions", check_duplicates};
