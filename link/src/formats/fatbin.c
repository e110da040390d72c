/*
 * Fatbin containers: a fatbin file, or the fatbin sections (.nv_fatbin, __nv_relfatbin) of a host
 * object, each one or more containers of entries (PTX, cubins, LTO-IR), listed as images without
 * decompressing them. Every header is bounds-checked against its container and the input.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfread.h"
#include "internal.h"
#include "formats.h"
#include "unpack.h"

/* Entry header: kind u16, (u16), header size u32, payload size u64, compressed size u32, (u32),
 * version minor u16, major u16, arch u32, name offset u32, name size u32, flags u64, (u64),
 * decompressed size u64. */
#define FATBIN_ENTRY_MIN 64

static fdl_input_kind entry_kind(unsigned kind)
{
    switch (kind) {
    case 1: return FDL_KIND_PTX;
    case 2:
    case 0x10: return FDL_KIND_CUBIN;
    case 8: return FDL_KIND_LTOIR;
    default: return FDL_KIND_AUTO;
    }
}

int fdl__fatbin_parse(fdl__images *im, const unsigned char *p, size_t n, size_t at,
                      const char *input, const char *base, const char *member, fdl_error *err)
{
    size_t off = 0;
    int containers = 0;
    while (off < n) {
        if (p[off] == 0 && containers) { /* padding between containers */
            off++;
            continue;
        }
        if (n - off < 16)
            return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                              "truncated fatbin header at byte offset %zu", at + off);
        if (fdl__le32(p + off) != FDL__FATBIN_MAGIC)
            return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                              "no fatbin magic at byte offset %zu (found %08x)", at + off,
                              (unsigned)fdl__le32(p + off));
        unsigned header = fdl__le16(p + off + 6);
        uint64_t body = fdl__le64(p + off + 8);
        if (header < 16 || !fdl__in_range(off + header, body, n))
            return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                              "fatbin container at byte offset %zu claims %llu bytes, past the "
                              "end of the input",
                              at + off, (unsigned long long)body);
        size_t e = off + header, end = e + (size_t)body;
        size_t unit = im->nunits++;
        containers++;
        while (e < end) {
            if (end - e < FATBIN_ENTRY_MIN)
                return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                  "truncated fatbin entry at byte offset %zu", at + e);
            const unsigned char *h = p + e;
            unsigned kind = fdl__le16(h);
            uint32_t hsize = fdl__le32(h + 4);
            uint64_t psize = fdl__le64(h + 8);
            uint32_t csize = fdl__le32(h + 16);
            unsigned minor = fdl__le16(h + 24), major = fdl__le16(h + 26);
            uint32_t arch = fdl__le32(h + 28);
            uint64_t flags = fdl__le64(h + 40);
            uint64_t dsize = fdl__le64(h + 56);
            if (hsize < FATBIN_ENTRY_MIN || hsize > end - e || psize > end - e - hsize)
                return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                  "fatbin entry at byte offset %zu runs past its container",
                                  at + e);
            unsigned compressed =
                (unsigned)(flags & (FDL__FATBIN_FLAG_LZ4 | FDL__FATBIN_FLAG_ZSTD));
            size_t stored = (size_t)psize;
            if (compressed) {
                if (csize > psize)
                    return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                      "fatbin entry at byte offset %zu: compressed size %u is "
                                      "larger than its payload (%llu)",
                                      at + e, (unsigned)csize, (unsigned long long)psize);
                stored = csize;
            }
            fdl__image *img;
            fdl_input_kind k = entry_kind(kind);
            int rc = fdl__images_add(im, k, unit, base, member, 1, arch > 9999 ? 0 : arch,
                               h + hsize, stored, &img, err);
            if (rc != FDL_OK)
                return rc;
            /* LTO-IR entries carry the compression flag over a payload in a form of nvcc's
             * own (no zstd frame): fdlink leaves them to nvJitLink and claims nothing */
            if (k == FDL_KIND_LTOIR && !(stored >= 4 && fdl__le32(h + hsize) == 0xFD2FB528u))
                compressed = 0;
            img->flags = compressed;
            if (compressed) {
                img->full_size = dsize;
                img->pub.size = dsize > SIZE_MAX ? SIZE_MAX : (size_t)dsize;
                img->pub.compression = (compressed & FDL__FATBIN_FLAG_ZSTD) ? "zstd" : "lz4";
            }
            if (k == FDL_KIND_CUBIN && im->link_arch && img->pub.arch_number &&
                img->pub.arch_number != im->link_arch) {
                /* a member this link never uses: nvJitLink does not read it, so neither is it
                 * refused when malformed (issue 34); it stays unread */
                fdl_error skip = FDL_ERROR_INIT;
                if (!compressed && fdl__image_validate(img, &skip) != FDL_OK) {
                    fdl__buf note = {0};
                    fdl__buf_printf(&note, "not read: %s", skip.message);
                    if (note.oom)
                        return fdl__error(err, FDL_ENOMEM, input, 0, 0, NULL, "out of memory");
                    img->note_buf = note.data;
                    img->opaque = 1;
                    img->loaded = 1;
                    fdl__image_fix(img);
                }
            } else if ((rc = fdl__image_validate(img, err)) != FDL_OK) {
                return rc;
            }
            if (k == FDL_KIND_PTX)
                snprintf(img->version_buf, sizeof img->version_buf, "%u.%u", major, minor);
            if (k == FDL_KIND_AUTO) {
                fdl__buf note = {0};
                fdl__buf_printf(&note, "a fatbin entry of kind 0x%x, unknown to fdlink", kind);
                img->note_buf = note.data;
                img->opaque = 1;
                fdl__image_fix(img);
            }
            e += hsize + (size_t)psize;
        }
        off = end;
    }
    if (!containers)
        return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL, "empty fatbin section at byte "
                          "offset %zu", at);
    return FDL_OK;
}

int fdl__object_parse(fdl__images *im, const unsigned char *p, size_t n, size_t at,
                      const char *input, const char *base, const char *member, fdl_error *err)
{
    fdl__elf e;
    const char *why = NULL;
    if (!fdl__elf_open(&e, p, n, &why))
        return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL, "%s at byte offset %zu", why, at);
    int rc = fdl__elf_check(p, n, base, "host object", 0, err);
    if (rc != FDL_OK)
        return rc;
    int found = 0;
    for (size_t i = 1; i < e.shnum; i++) {
        fdl__shdr s;
        fdl__elf_shdr(&e, i, &s);
        const unsigned char *d;
        if (fdl__elf_no_bytes(s.type) || !s.size || !fdl__elf_is_fatbin_section(fdl__elf_section_name(&e, &s)))
            continue;
        if (!fdl__elf_section_bytes(&e, &s, &d))
            return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                              "fatbin section %zu lies outside the object", i);
        rc = fdl__fatbin_parse(im, d, (size_t)s.size, at + (size_t)s.offset, input, base, member,
                               err);
        if (rc != FDL_OK)
            return rc;
        found = 1;
    }
    if (!found)
        return fdl__error(err, FDL_EKIND, input, 0, 0, NULL,
                          "a host object with no device code (no .nv_fatbin or __nv_relfatbin "
                          "section)");
    return FDL_OK;
}

/* ---- writing: fdl_fatbin_create ------------------------------------------------------------ */

/* What nvcc's fatbinary writes (CUDA 12 and 13, read back from `nvcc -fatbin`): a 16-byte
 * container header (magic, version 1, header size 16, body size), then per entry a 64-byte
 * header (80 for PTX: 16 bytes more, the PTX options' place, empty) and the payload, padded with
 * zeros to 8 bytes. Flags 0x11: a 64-bit image for a Linux host; nothing compressed. */
#define FATBIN_FLAG_64BIT 0x1u
#define FATBIN_FLAG_LINUX 0x10u
#define FATBIN_PTX_HEADER 80u

/* The PTX `.version X.Y` of @p p (text of @p n bytes): 1 and *major, *minor, else 0. */
static int ptx_version_of(const unsigned char *p, size_t n, unsigned *major, unsigned *minor)
{
    static const char dir[] = ".version";
    for (size_t i = 0; i + sizeof dir <= n; i++) {
        if (memcmp(p + i, dir, sizeof dir - 1) != 0 ||
            (i && !fdl__is_space(p[i - 1]) && p[i - 1] != ';'))
            continue;
        size_t j = i + sizeof dir - 1;
        if (j >= n || !fdl__is_space(p[j]))
            continue;
        while (j < n && fdl__is_space(p[j]))
            j++;
        unsigned a = 0, b = 0, da = 0, db = 0;
        for (; j < n && p[j] >= '0' && p[j] <= '9' && da < 4; j++, da++)
            a = a * 10 + (unsigned)(p[j] - '0');
        if (!da || j >= n || p[j] != '.')
            return 0;
        for (j++; j < n && p[j] >= '0' && p[j] <= '9' && db < 4; j++, db++)
            b = b * 10 + (unsigned)(p[j] - '0');
        if (!db)
            return 0;
        *major = a;
        *minor = b;
        return 1;
    }
    return 0;
}

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

int fdl_fatbin_create(void **out, size_t *size, const fdl_fatbin_entry *entries, size_t n,
                      fdl_error *err)
{
    unsigned char *buf;
    if (out)
        *out = NULL;
    if (size)
        *size = 0;
    if (!FDL__CHECK_ARG(out && size && (entries || !n)))
        return fdl__fail(err, FDL_EINVAL, "fdl_fatbin_create: NULL argument");
    if (!n)
        return fdl__fail(err, FDL_EINVAL, "a fatbin needs at least one entry");
    size_t total = 16;
    for (size_t i = 0; i < n; i++) {
        const fdl_fatbin_entry *e = &entries[i];
        const unsigned char *p = e->data;
        if (!e->data || !e->size)
            return fdl__fail(err, FDL_EINVAL, "fatbin entry %zu is empty", i + 1);
        if (e->arch < 10 || e->arch > 9999)
            return fdl__fail(err, FDL_EINVAL, "fatbin entry %zu: architecture %u is not one "
                             "(expected e.g. 90 for sm_90)", i + 1, e->arch);
        for (size_t j = 0; j < i; j++)
            if (entries[j].kind == e->kind && entries[j].arch == e->arch)
                return fdl__fail(err, FDL_EINVAL, "fatbin entries %zu and %zu are both %s for "
                                 "%s_%u", j + 1, i + 1, fdl_input_kind_name(e->kind),
                                 e->kind == FDL_KIND_PTX ? "compute" : "sm", e->arch);
        size_t header = 64, payload = e->size;
        unsigned major = 0, minor = 0;
        if (e->kind == FDL_KIND_CUBIN) {
            fdl__elf elf;
            const char *why = NULL;
            if (!fdl__elf_open(&elf, p, e->size, &why) || e->size < 20 ||
                fdl__le16(p + 18) != FDL__EM_CUDA)
                return fdl__fail(err, FDL_EINVAL, "fatbin entry %zu (sm_%u) is not a cubin%s%s",
                                 i + 1, e->arch, why ? ": " : "", why ? why : "");
        } else if (e->kind == FDL_KIND_PTX) {
            if (!ptx_version_of(p, e->size, &major, &minor))
                return fdl__fail(err, FDL_EINVAL, "fatbin entry %zu (compute_%u) is not PTX "
                                 "(no .version directive)", i + 1, e->arch);
            header = FATBIN_PTX_HEADER;
            if (p[e->size - 1] != '\0')
                payload++; /* the driver reads PTX up to its NUL */
        } else {
            return fdl__fail(err, FDL_EINVAL, "fatbin entry %zu: kind %s cannot be written "
                             "(cubin or ptx)", i + 1, fdl_input_kind_name(e->kind));
        }
        size_t padded = payload + (8 - payload % 8) % 8;
        if (padded < payload || !fdl__size_add(&total, total, header) ||
            !fdl__size_add(&total, total, padded))
            return fdl__fail(err, FDL_ELIMIT, "a fatbin of these entries is too large");
    }
    buf = calloc(1, total);
    if (!buf)
        return fdl__fail(err, FDL_ENOMEM, "out of memory for a fatbin of %zu bytes", total);
    put32(buf, FDL__FATBIN_MAGIC);
    put16(buf + 4, 1);
    put16(buf + 6, 16);
    put64(buf + 8, (uint64_t)(total - 16));
    size_t at = 16;
    for (size_t i = 0; i < n; i++) {
        const fdl_fatbin_entry *e = &entries[i];
        const unsigned char *p = e->data;
        unsigned char *h = buf + at;
        int ptx = e->kind == FDL_KIND_PTX;
        size_t header = ptx ? FATBIN_PTX_HEADER : 64;
        size_t payload = e->size + (ptx && p[e->size - 1] != '\0');
        size_t padded = payload + (8 - payload % 8) % 8;
        unsigned major = 1, minor = p[8]; /* a cubin: 1 and its ELF ABI version, as nvcc's */
        if (ptx)
            (void)ptx_version_of(p, e->size, &major, &minor);
        put16(h, ptx ? 1 : 2);
        put16(h + 2, 0x0101);
        put32(h + 4, (uint32_t)header);
        put64(h + 8, (uint64_t)padded);
        if (ptx)
            put32(h + 20, 64); /* the options' place in this header */
        put16(h + 24, minor);
        put16(h + 26, major);
        put32(h + 28, e->arch);
        put64(h + 40, FATBIN_FLAG_64BIT | FATBIN_FLAG_LINUX);
        if (ptx)
            put64(h + 64, 72);
        memcpy(h + header, p, e->size);
        at += header + padded;
    }
    *out = buf;
    *size = total;
    return FDL_OK;
}
