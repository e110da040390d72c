/*
 * The list of code images of an input (formats.h's fdl__images): adding an image, with its
 * public fields kept pointing at its own storage as the array grows, and freeing them.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfread.h"
#include "fdlink/ptx.h"
#include "internal.h"
#include "formats.h"
#include "unpack.h"

static void image_free(fdl__image *img)
{
    free(img->owned);
    fdl_ptx_destroy(img->ptx);
    for (size_t i = 0; i < img->nsyms; i++)
        free((char *)img->syms[i].name);
    free(img->syms);
    free(img->name_buf);
    free(img->member_buf);
    free(img->note_buf);
}

void fdl__images_free(fdl__images *im)
{
    if (!im)
        return;
    for (size_t i = 0; i < im->n; i++)
        image_free(&im->v[i]);
    free(im->v);
    memset(im, 0, sizeof *im);
}

void fdl__image_fix(fdl__image *img)
{
    img->pub.name = img->name_buf ? img->name_buf : "";
    img->pub.member = img->member_buf ? img->member_buf : "";
    img->pub.arch = img->arch_buf;
    img->pub.ptx_version = img->version_buf;
    img->pub.note = img->note_buf ? img->note_buf : "";
    img->pub.ptx = img->ptx;
    img->pub.symbols = img->syms;
    img->pub.nsymbols = img->nsyms;
}

void fdl__image_set_arch(fdl__image *img, unsigned number)
{
    img->pub.arch_number = number;
    img->arch_buf[0] = '\0';
    if (!number)
        return;
    const char *prefix = img->pub.kind == FDL_KIND_PTX     ? "compute_"
                         : img->pub.kind == FDL_KIND_LTOIR ? "lto_"
                                                           : "sm_";
    snprintf(img->arch_buf, sizeof img->arch_buf, "%s%u", prefix, number);
}

int fdl__images_add(fdl__images *im, fdl_input_kind kind, size_t unit, const char *base,
                    const char *member, int entry, unsigned arch, const unsigned char *raw,
                    size_t raw_size, fdl__image **out, fdl_error *err)
{
    *out = NULL;
    if (im->n == im->cap) {
        size_t ncap = im->cap ? im->cap : 4, bytes;
        fdl__image *grown = NULL;
        if ((!im->cap || fdl__size_mul(&ncap, im->cap, 2)) &&
            fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(im->v, bytes);
        if (!grown)
            return fdl__error(err, FDL_ENOMEM, base, 0, 0, NULL, "out of memory listing images");
        im->v = grown;
        im->cap = ncap;
        for (size_t i = 0; i < im->n; i++)
            fdl__image_fix(&im->v[i]);
    }
    fdl__image *img = &im->v[im->n];
    memset(img, 0, sizeof *img);
    img->pub.kind = kind;
    img->unit = unit;
    img->raw = raw;
    img->raw_size = raw_size;
    img->bytes = raw;
    img->nbytes = raw_size;
    img->full_size = raw_size;
    img->pub.size = raw_size;
    img->pub.compression = "";
    fdl__image_set_arch(img, arch);
    fdl__buf name = {0};
    if (entry)
        fdl__buf_printf(&name, "%s[%s %s]", base, img->arch_buf[0] ? img->arch_buf : "?",
                        fdl__kind_image_name(kind));
    else
        fdl__buf_puts(&name, base);
    img->name_buf = name.data;
    img->member_buf = fdl__strdup(member ? member : "");
    if (name.oom || !img->name_buf || !img->member_buf) {
        free(name.data);
        free(img->member_buf);
        return fdl__error(err, FDL_ENOMEM, base, 0, 0, NULL, "out of memory listing images");
    }
    im->n++;
    fdl__image_fix(img);
    *out = img;
    return FDL_OK;
}

int fdl__elf_check(const unsigned char *p, size_t n, const char *name, const char *what,
                   uint64_t at, fdl_error *err)
{
    fdl__elf e;
    const char *why = NULL;
    char buf[256];
    uint64_t pos = 0;
    int ok;
    if (!fdl__elf_open(&e, p, n, &why))
        return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "malformed %s: %s (at byte %llu)",
                          what, why, (unsigned long long)(at + e.bad_at));
    ok = fdl__elf_validate(&e, buf, sizeof buf, &pos);
    if (ok < 0)
        return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory validating %s",
                          what);
    if (!ok)
        return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "malformed %s: %s (at byte %llu)",
                          what, buf, (unsigned long long)(at + pos));
    if (e.shnum == 0 && strcmp(what, "cubin") == 0)
        return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL,
                          "malformed cubin: no section table (at byte %llu)",
                          (unsigned long long)(at + 40));
    return FDL_OK;
}

int fdl__image_validate(fdl__image *img, fdl_error *err)
{
    /* a compressed image is validated once decompressed (fdl__image_load) */
    if (img->validated || img->pub.kind != FDL_KIND_CUBIN || (img->flags && !img->owned))
        return FDL_OK;
    int rc = fdl__elf_check(img->bytes, img->nbytes, img->pub.name, "cubin", 0, err);
    if (rc == FDL_OK)
        img->validated = 1;
    return rc;
}

int fdl__images_add_whole(fdl__images *im, fdl_input_kind kind, const unsigned char *p,
                          size_t n, const char *base, const char *member, fdl_error *err)
{
    unsigned arch = 0;
    if (kind == FDL_KIND_LTOIR && n < 0x1c)
        return fdl__error(err, FDL_EPARSE, base, 0, 0, NULL,
                          "truncated NVVM container (%zu bytes)", n);
    if (kind == FDL_KIND_CUBIN) {
        fdl__elf e;
        const char *why;
        if (fdl__elf_open(&e, p, n, &why))
            arch = fdl__elf_cubin_arch(&e);
    } else if (kind == FDL_KIND_LTOIR) {
        /* the NVVM container header holds the arch as in __CUDA_ARCH__ (900) */
        unsigned v = fdl__le16(p + 0x1a);
        if (v % 10 == 0 && v / 10 >= 30 && v / 10 <= 999)
            arch = v / 10;
    }
    fdl__image *img;
    int rc = fdl__images_add(im, kind, im->nunits++, base, member, 0, arch, p, n, &img, err);
    if (rc == FDL_OK && kind == FDL_KIND_LTOIR)
        img->opaque = 1;
    if (rc == FDL_OK)
        rc = fdl__image_validate(img, err);
    return rc;
}

/* ---- architecture names --------------------------------------------------------------------- */

unsigned fdl__arch_number(const char *arch)
{
    const char *p = NULL;
    if (strncmp(arch, "sm_", 3) == 0)
        p = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0)
        p = arch + 8;
    else if (strncmp(arch, "lto_", 4) == 0)
        p = arch + 4;
    if (!p || *p < '1' || *p > '9')
        return 0;
    unsigned v = 0;
    for (int digits = 0; *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits >= 4)
            return 0;
        v = v * 10 + (unsigned)(*p - '0');
    }
    return v;
}
