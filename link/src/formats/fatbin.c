/*
 * Fatbin containers: a fatbin file, or the fatbin sections (.nv_fatbin, __nv_relfatbin) of a host
 * object, each one or more containers of entries (PTX, cubins, LTO-IR), listed as images without
 * decompressing them. Every header is bounds-checked against its container and the input.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
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
