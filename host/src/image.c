/*
 * What a module image says about its kernels, read from the image itself: their names (for
 * drivers older than CUDA 12.4, which cannot enumerate a module's functions) and how many
 * parameters each takes (the driver has no count query, and asking it for parameters until it
 * refuses an index is an API error under compute-sanitizer).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/host.h"
#include "image.h"
#include "elfread.h"
#include "fdlink/ptx.h"
#include "internal.h"
#include "formats.h"

#define STT_FUNC 2
/* st_other flag that marks a kernel (an entry function) in a CUDA ELF image */
#define STO_CUDA_ENTRY 0x10

typedef struct name_list {
    char **names;
    size_t n, cap;
} name_list;

static int add_name(name_list *l, const char *name, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->names[i]) == len && memcmp(l->names[i], name, len) == 0)
            return FDL_OK;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 8, bytes;
        char **grown = NULL;
        if (fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(l->names, bytes);
        if (!grown)
            return FDL_ENOMEM;
        l->names = grown;
        l->cap = ncap;
    }
    char *copy = fdl__strndup(name, len);
    if (!copy)
        return FDL_ENOMEM;
    l->names[l->n++] = copy;
    return FDL_OK;
}

/*
 * Open an ELF image through link/'s reader, and only when it passes the validation that every
 * binary passes before a linker sees it (elfread.h): then every table and name read below lies
 * inside the image. A malformed image gives no kernels (the driver then refuses it itself).
 */
static int elf_valid(fdl__elf *e, const unsigned char *p, size_t size)
{
    const char *why;
    char buf[8];
    uint64_t at;
    return fdl__elf_open(e, p, size, &why) && fdl__elf_validate(e, buf, sizeof buf, &at) == 1;
}

/* Kernels of a 64-bit little-endian ELF image; a malformed one gives none. */
static int elf_kernels(name_list *l, const unsigned char *p, size_t size)
{
    fdl__elf e;
    if (!elf_valid(&e, p, size))
        return FDL_OK;
    for (size_t i = 1; i < e.shnum; i++) {
        fdl__shdr sh;
        fdl__elf_shdr(&e, i, &sh);
        const unsigned char *d;
        if (sh.type != FDL__SHT_SYMTAB || !fdl__elf_section_bytes(&e, &sh, &d) || !d)
            continue;
        for (uint64_t k = 0; k < sh.size / 24; k++) {
            const unsigned char *sym = d + k * 24;
            unsigned char info = sym[4], other = sym[5];
            if ((info & 0xf) != STT_FUNC || !(other & STO_CUDA_ENTRY) || fdl__le16(sym + 6) == 0)
                continue;
            const char *text = fdl__elf_string(&e, sh.link, fdl__le32(sym));
            if (!text || !text[0])
                continue;
            int rc = add_name(l, text, strlen(text));
            if (rc != FDL_OK)
                return rc;
        }
    }
    return FDL_OK;
}

/* Kernels defined by PTX text; text the scanner cannot read gives none. */
static int ptx_kernels(name_list *l, const char *text, size_t size)
{
    const char *nul = memchr(text, '\0', size);
    size_t len = nul ? (size_t)(nul - text) : size;
    fdl_ptx *ptx = NULL;
    if (fdl_ptx_scan(&ptx, text, len, "module", NULL) != FDL_OK)
        return FDL_OK;
    int rc = FDL_OK;
    for (size_t i = 0; rc == FDL_OK && i < fdl_ptx_count(ptx); i++) {
        const fdl_ptx_func *f = fdl_ptx_get(ptx, i);
        if (f->is_entry && f->is_definition)
            rc = add_name(l, f->name, strlen(f->name));
    }
    fdl_ptx_destroy(ptx);
    return rc;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int fdl__image_kernel_names(char ***names, size_t *count, int *known, const void *image,
                            size_t size)
{
    *names = NULL;
    *count = 0;
    *known = 0;
    const unsigned char *p = image;
    name_list l = {NULL, 0, 0};
    int rc = FDL_OK;
    if (size >= 4 && memcmp(p, "\x7f" "ELF", 4) == 0) {
        rc = elf_kernels(&l, p, size);
        *known = 1;
    } else if (size >= 4 && fdl__le32(p) == FDL__FATBIN_MAGIC) {
        /* a fatbin: its members may be compressed; not worth unpacking for a diagnostic */
    } else {
        rc = ptx_kernels(&l, image, size);
        *known = 1;
    }
    if (rc != FDL_OK) {
        for (size_t i = 0; i < l.n; i++)
            free(l.names[i]);
        free(l.names);
        *known = 0;
        return rc;
    }
    if (l.n > 1)
        qsort(l.names, l.n, sizeof *l.names, compare_names);
    *names = l.names;
    *count = l.n;
    return FDL_OK;
}

/* ---- parameter counts ------------------------------------------------------------------------ */

/* Takes @p sizes (count entries or NULL), whatever the outcome. */
static int add_count(fdl__kparams *l, const char *name, size_t len, size_t count, int coop,
                     size_t *sizes, fdl_param_info *info)
{
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->v[i].name) == len && memcmp(l->v[i].name, name, len) == 0) {
            free(sizes);
            if (info && !l->v[i].info) { /* a cubin's sizes first, a PTX member's types after */
                l->v[i].info = info;
                info = NULL;
            }
            free(info);
            return FDL_OK; /* members of one fatbin agree: the first one read is kept */
        }
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 8, bytes;
        fdl__kparam *grown = NULL;
        if (fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(l->v, bytes);
        if (!grown) {
            free(sizes);
            free(info);
            return FDL_ENOMEM;
        }
        l->v = grown;
        l->cap = ncap;
    }
    char *copy = fdl__strndup(name, len);
    if (!copy) {
        free(sizes);
        free(info);
        return FDL_ENOMEM;
    }
    l->v[l->n].name = copy;
    l->v[l->n].count = count;
    l->v[l->n].coop = coop;
    l->v[l->n].sizes = sizes;
    l->v[l->n].info = info;
    l->n++;
    return FDL_OK;
}

/* Parameter counts of the kernels of an ELF cubin, from its .nv.info.<kernel> sections. */
static int elf_params(fdl__kparams *l, const unsigned char *p, size_t size)
{
    fdl__elf e;
    if (!elf_valid(&e, p, size))
        return FDL_OK;
    static const char prefix[] = ".nv.info.";
    for (size_t i = 1; i < e.shnum; i++) {
        fdl__shdr sh;
        fdl__elf_shdr(&e, i, &sh);
        const unsigned char *d;
        if (sh.type != FDL__SHT_NV_INFO || !fdl__elf_section_bytes(&e, &sh, &d) || !d)
            continue;
        const char *text = fdl__elf_section_name(&e, &sh);
        size_t tlen = text ? strlen(text) : 0;
        if (tlen <= sizeof prefix - 1 || memcmp(text, prefix, sizeof prefix - 1) != 0)
            continue;
        fdl__nv_kernel k; /* formats' .nv.info reader (cubin.c) */
        if (!fdl__nv_info_kernel(d, sh.size, &k))
            continue;
        int rc = add_count(l, text + sizeof prefix - 1, tlen - (sizeof prefix - 1), k.nparams,
                           k.coop, k.sizes, NULL);
        if (rc != FDL_OK)
            return rc;
    }
    return FDL_OK;
}

/* Parameter counts, classes and sizes of the `.entry` definitions of scanned PTX. */
static int ptx_params(fdl__kparams *l, const fdl_ptx *ptx)
{
    for (size_t i = 0; i < fdl_ptx_count(ptx); i++) {
        const fdl_ptx_func *f = fdl_ptx_get(ptx, i);
        if (f->is_entry && f->is_definition) {
            fdl_param_info *info = calloc(f->nparams ? f->nparams : 1, sizeof *info);
            if (!info)
                return FDL_ENOMEM;
            for (size_t p = 0; p < f->nparams; p++) {
                info[p].cls = fdl_ptx_param_class(&f->params[p]);
                info[p].size = f->params[p].bytes;
            }
            int rc = add_count(l, f->name, strlen(f->name), f->nparams, 0, NULL, info);
            if (rc != FDL_OK)
                return rc;
        }
    }
    return FDL_OK;
}

/* Every member of a fatbin that can be read (decompressed where needed). */
static int fatbin_params(fdl__kparams *l, const unsigned char *p, size_t size)
{
    fdl__images im = {0};
    int rc = FDL_OK;
    if (fdl__unpack(&im, p, size, "module", FDL_KIND_FATBIN, NULL) != FDL_OK)
        goto cleanup;
    for (size_t i = 0; rc == FDL_OK && i < im.n; i++) {
        fdl__image *img = &im.v[i];
        if (img->pub.kind != FDL_KIND_CUBIN && img->pub.kind != FDL_KIND_PTX)
            continue;
        int lrc = fdl__image_load(img, NULL);
        if (lrc == FDL_ENOMEM)
            rc = lrc;
        if (lrc != FDL_OK || img->opaque)
            continue;
        if (img->pub.kind == FDL_KIND_CUBIN)
            rc = elf_params(l, img->bytes, img->nbytes);
        else if (img->ptx)
            rc = ptx_params(l, img->ptx);
    }
cleanup:
    fdl__images_free(&im);
    return rc;
}

void fdl__kparams_free(fdl__kparams *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        free(l->v[i].sizes);
        free(l->v[i].info);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

int fdl__image_param_counts(fdl__kparams *out, const void *image, size_t size)
{
    const unsigned char *p = image;
    fdl__kparams l = {NULL, 0, 0};
    int rc = FDL_OK;
    if (size >= 4 && memcmp(p, "\x7f" "ELF", 4) == 0) {
        rc = elf_params(&l, p, size);
    } else if (size >= 4 && fdl__le32(p) == FDL__FATBIN_MAGIC) {
        rc = fatbin_params(&l, p, size);
    } else {
        const char *nul = memchr(image, '\0', size);
        fdl_ptx *ptx = NULL;
        if (fdl_ptx_scan(&ptx, image, nul ? (size_t)(nul - (const char *)image) : size, "module",
                         NULL) == FDL_OK)
            rc = ptx_params(&l, ptx);
        fdl_ptx_destroy(ptx);
    }
    if (rc != FDL_OK) {
        fdl__kparams_free(&l);
        return rc;
    }
    *out = l;
    return FDL_OK;
}

int fdl_image_kernel_params(const void *image, size_t size, const char *name, size_t *count,
                            size_t *sizes, size_t max, fdl_error *err)
{
    if (!FDL__CHECK_ARG(image) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(count))
        return fdl__fail(err, FDL_EINVAL, "fdl_image_kernel_params: image, name or count is NULL");
    *count = 0;
    fdl__kparams l = {NULL, 0, 0};
    int rc = fdl__image_param_counts(&l, image, size);
    if (rc == FDL_ENOMEM)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    for (size_t i = 0; rc == FDL_OK && i < l.n; i++) {
        if (strcmp(l.v[i].name, name) != 0)
            continue;
        *count = l.v[i].count;
        for (size_t p = 0; sizes && p < *count && p < max; p++)
            sizes[p] = l.v[i].sizes ? l.v[i].sizes[p] : 0;
        fdl__kparams_free(&l);
        return FDL_OK;
    }
    fdl__kparams_free(&l);
    return fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name, "the image lists no kernel %s with "
                      "its parameters", name);
}

int fdl_image_kernel_param_info(const void *image, size_t size, const char *name,
                                fdl_param_info *out, size_t max, size_t *count, fdl_error *err)
{
    if (!FDL__CHECK_ARG(image) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(count) ||
        !FDL__CHECK_ARG(out || !max))
        return fdl__fail(err, FDL_EINVAL,
                         "fdl_image_kernel_param_info: image, name, count or out is NULL");
    *count = 0;
    fdl__kparams l = {NULL, 0, 0};
    int rc = fdl__image_param_counts(&l, image, size);
    if (rc == FDL_ENOMEM)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    for (size_t i = 0; rc == FDL_OK && i < l.n; i++) {
        const fdl__kparam *k = &l.v[i];
        if (strcmp(k->name, name) != 0)
            continue;
        *count = k->count;
        for (size_t p = 0; p < k->count && p < max; p++) {
            out[p].cls = k->info ? k->info[p].cls : FDL_PARAM_UNKNOWN;
            out[p].size = k->sizes ? k->sizes[p] : k->info ? k->info[p].size : 0;
        }
        fdl__kparams_free(&l);
        return FDL_OK;
    }
    fdl__kparams_free(&l);
    return fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name, "the image lists no kernel %s with "
                      "its parameters", name);
}

int fdl__kparams_coop(const fdl__kparams *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0)
            return l->v[i].coop;
    return 0;
}

int fdl__kparams_find(const fdl__kparams *l, const char *name, size_t *count)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].name, name) == 0) {
            *count = l->v[i].count;
            return 1;
        }
    return 0;
}

/* Whether @p n bytes at @p p contain @p len bytes of @p needle. */
static int contains(const unsigned char *p, size_t n, const char *needle, size_t len)
{
    for (size_t i = 0; len && n >= len && i <= n - len; i++) {
        const unsigned char *hit = memchr(p + i, needle[0], n - len + 1 - i);
        if (!hit)
            return 0;
        i = (size_t)(hit - p);
        if (memcmp(hit, needle, len) == 0)
            return 1;
    }
    return 0;
}

int fdl__fatbin_may_contain(const void *image, size_t size, const char *needle, size_t len)
{
    fdl__images im = {0};
    int may = 1;
    if (fdl__unpack(&im, image, size, "module", FDL_KIND_FATBIN, NULL) != FDL_OK)
        goto cleanup; /* not read here: the driver decides */
    may = 0;
    for (size_t i = 0; !may && i < im.n; i++) {
        fdl__image *img = &im.v[i];
        if (fdl__image_load(img, NULL) != FDL_OK || img->opaque || !img->bytes)
            may = 1; /* a member not read here (no decompressor, say) may hold it */
        else
            may = contains(img->bytes, img->nbytes, needle, len);
    }
cleanup:
    fdl__images_free(&im);
    return may;
}
