/*
 * Inputs into their code images: fdl__unpack lists the images of an input of a known kind (the
 * entries of fatbin containers, of the fatbin sections of host objects, of the objects in a
 * static library), fdl__image_load decompresses and scans one on demand (PTX by fdl_ptx_scan,
 * cubins by cubin.c), and fdl_inspect_* shows them. The formats are read in files of their own,
 * below this one: kind.c (detection), fatbin.c, archive.c, cubin.c, over elfread.c and images.c.
 * Every read of a header, a table or a string is bounds-checked against the bytes at hand, so a
 * truncated or hostile input is an error, never a read past its end.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/link.h"
#include "fdlink/ptx.h"
#include "internal.h"
#include "formats.h"
#include "unpack.h"

int fdl__unpack(fdl__images *out, const unsigned char *p, size_t n, const char *name,
                fdl_input_kind kind, fdl_error *err)
{
    return fdl__unpack_for_link(out, p, n, name, kind, 0, err);
}

int fdl__unpack_for_link(fdl__images *out, const unsigned char *p, size_t n, const char *name,
                         fdl_input_kind kind, unsigned arch, fdl_error *err)
{
    memset(out, 0, sizeof *out);
    out->link_arch = arch;
    int rc;
    switch (kind) {
    case FDL_KIND_PTX:
    case FDL_KIND_CUBIN:
    case FDL_KIND_LTOIR:
        rc = fdl__images_add_whole(out, kind, p, n, name, NULL, err);
        break;
    case FDL_KIND_FATBIN:
        rc = fdl__fatbin_parse(out, p, n, 0, name, name, NULL, err);
        break;
    case FDL_KIND_OBJECT:
        rc = fdl__object_parse(out, p, n, 0, name, name, NULL, err);
        break;
    case FDL_KIND_LIBRARY:
        rc = fdl__archive_parse(out, p, n, name, err);
        break;
    case FDL_KIND_CUDA:
    case FDL_KIND_BITCODE: /* compiled by the link; inspected as it is */
        rc = FDL_OK;
        break;
    case FDL_KIND_AUTO:
    default:
        rc = fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "fdl__unpack: no kind");
        break;
    }
    if (rc != FDL_OK)
        fdl__images_free(out);
    return rc;
}

/* ---- loading an image ---------------------------------------------------------------------- */

static int set_note(fdl__image *img, const char *fmt, const char *arg)
{
    fdl__buf b = {0};
    fdl__buf_printf(&b, fmt, arg);
    if (b.oom)
        return 0;
    free(img->note_buf);
    img->note_buf = b.data;
    return 1;
}

int fdl__image_load(fdl__image *img, fdl_error *err)
{
    if (img->loaded)
        return FDL_OK;
    const char *name = img->pub.name;
    int rc = FDL_OK;
    if (img->pub.kind == FDL_KIND_LTOIR || img->pub.kind == FDL_KIND_AUTO) {
        /* LTO-IR is read by nvJitLink only (fatbins store it in a form of their own) */
        img->opaque = 1;
        img->loaded = 1;
        return FDL_OK;
    }
    if (img->flags) {
        if (img->full_size > FDL__MAX_IMAGE)
            return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL,
                              "decompressed size %llu is past the limit of %llu bytes",
                              (unsigned long long)img->full_size,
                              (unsigned long long)FDL__MAX_IMAGE);
        fdl_error e = FDL_ERROR_INIT;
        rc = fdl__decompress(&img->owned, (size_t)img->full_size, img->raw, img->raw_size,
                             img->flags, &e);
        if (rc == FDL_ENOLIB) {
            /* not fatal: the backend decompresses for itself; the content stays unknown */
            if (!set_note(img, "not shown: %s", e.message))
                return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
            img->opaque = 1;
            img->loaded = 1;
            fdl__image_fix(img);
            return FDL_OK;
        }
        if (rc != FDL_OK)
            return fdl__error(err, rc, name, 0, 0, NULL, "%s", e.message);
        img->bytes = img->owned;
        img->nbytes = (size_t)img->full_size;
        if ((rc = fdl__image_validate(img, err)) != FDL_OK)
            return rc;
    }
    if (img->pub.kind == FDL_KIND_PTX) {
        size_t len = img->nbytes;
        while (len && img->bytes[len - 1] == '\0') /* fatbins pad PTX with NULs */
            len--;
        rc = fdl_ptx_scan(&img->ptx, (const char *)img->bytes, len, name, err);
        if (rc != FDL_OK)
            return rc;
        if (!img->version_buf[0])
            fdl__strlcpy(img->version_buf, fdl_ptx_version(img->ptx), sizeof img->version_buf);
        if (!img->pub.arch_number) {
            const char *target = fdl_ptx_target(img->ptx);
            char first[32];
            size_t k = 0;
            while (target[k] && target[k] != ',' && target[k] != ' ' && k < sizeof first - 1) {
                first[k] = target[k];
                k++;
            }
            first[k] = '\0';
            fdl__image_set_arch(img, fdl__arch_number(first));
        }
    } else if (img->pub.kind == FDL_KIND_CUBIN) {
        rc = fdl__cubin_load(img, err);
        if (rc != FDL_OK)
            return rc;
    }
    img->pub.size = img->nbytes;
    img->loaded = 1;
    fdl__image_fix(img);
    return FDL_OK;
}

/* ---- inspection ----------------------------------------------------------------------------- */

struct fdl_inspection {
    fdl_input_kind kind;
    unsigned char *data;
    fdl__images images;
};

int fdl_inspect_data(fdl_inspection **out, const void *data, size_t size, const char *name,
                     fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_inspect_data: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(data || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_inspect_data: name or data is NULL");
    int rc;
    fdl_inspection *ins = calloc(1, sizeof *ins);
    if (!ins)
        return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
    rc = fdl__detect(&ins->kind, data, size, name, kind, err);
    if (rc != FDL_OK)
        goto cleanup;
    ins->data = malloc(size + 1);
    if (!ins->data) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory copying %zu bytes",
                        size);
        goto cleanup;
    }
    memcpy(ins->data, data, size);
    ins->data[size] = '\0';
    rc = fdl__unpack(&ins->images, ins->data, size, name, ins->kind, err);
    if (rc != FDL_OK)
        goto cleanup;
    for (size_t i = 0; i < ins->images.n; i++)
        if ((rc = fdl__image_load(&ins->images.v[i], err)) != FDL_OK)
            goto cleanup;
    *out = ins;
    ins = NULL;
cleanup:
    fdl_inspection_destroy(ins);
    return rc;
}

int fdl_inspect_file(fdl_inspection **out, const char *path, fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out) || !FDL__CHECK_ARG(path))
        return fdl__fail(err, FDL_EINVAL, "fdl_inspect_file: out or path is NULL");
    *out = NULL;
    char *data = NULL;
    size_t size = 0;
    int rc = fdl__read_file(path, &data, &size, err);
    if (rc == FDL_OK)
        rc = fdl_inspect_data(out, data, size, path, kind, err);
    free(data);
    return rc;
}

void fdl_inspection_destroy(fdl_inspection *ins)
{
    if (!ins)
        return;
    fdl__images_free(&ins->images);
    free(ins->data);
    free(ins);
}

fdl_input_kind fdl_inspection_kind(const fdl_inspection *ins)
{
    return ins ? ins->kind : FDL_KIND_AUTO;
}

size_t fdl_inspection_count(const fdl_inspection *ins)
{
    return ins ? ins->images.n : 0;
}

const fdl_image *fdl_inspection_image(const fdl_inspection *ins, size_t i)
{
    if (!ins || i >= ins->images.n)
        return NULL;
    return &ins->images.v[i].pub;
}
