/*
 * Static libraries (ar archives, as nvcc -lib writes them): every member, its name from the
 * header, the GNU long-name table ("/N") or a BSD name ("#1/N"), sniffed by its bytes and
 * unpacked as a host object, fatbin, cubin, PTX or LTO-IR; other members (host code) are skipped.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>

#include "elfread.h"
#include "internal.h"
#include "formats.h"
#include "unpack.h"

/* A decimal field of an ar header (space padded); 0 when malformed. */
static int ar_decimal(const unsigned char *f, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    while (i < len && f[i] == ' ')
        i++;
    if (i == len || f[i] < '0' || f[i] > '9')
        return 0;
    for (; i < len && f[i] >= '0' && f[i] <= '9'; i++) {
        if (v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(f[i] - '0');
    }
    for (; i < len; i++)
        if (f[i] != ' ')
            return 0;
    *out = v;
    return 1;
}

int fdl__archive_parse(fdl__images *im, const unsigned char *p, size_t n, const char *input,
                       fdl_error *err)
{
    size_t off = 8;
    const unsigned char *longnames = NULL;
    size_t nlong = 0;
    int rc = FDL_OK;
    fdl__buf base = {0};
    char member[256];
    while (off < n) {
        if (p[off] == '\n') { /* padding to an even offset */
            off++;
            continue;
        }
        if (n - off < 60 || p[off + 58] != '`' || p[off + 59] != '\n') {
            rc = fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                            "malformed archive member header at byte offset %zu", off);
            goto cleanup;
        }
        const unsigned char *h = p + off;
        uint64_t size;
        if (!ar_decimal(h + 48, 10, &size) || !fdl__in_range(off + 60, size, n)) {
            rc = fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                            "archive member at byte offset %zu has a bad size or runs past the "
                            "end",
                            off);
            goto cleanup;
        }
        size_t data = off + 60, len = (size_t)size;
        off = data + len + (len & 1);
        /* the member's name: "name/", "/N" into the long names, "#1/N" (BSD) before the data */
        size_t nl = 0;
        if (h[0] == '/' && (h[1] == ' ' || memcmp(h, "/SYM64/", 7) == 0))
            continue; /* the symbol table */
        if (h[0] == '/' && h[1] == '/') {
            longnames = p + data;
            nlong = len;
            continue;
        }
        if (h[0] == '/' && h[1] >= '0' && h[1] <= '9') {
            uint64_t at;
            size_t end = 16;
            while (end > 1 && h[end - 1] == ' ')
                end--;
            if (!ar_decimal(h + 1, end - 1, &at) || !longnames || at >= nlong) {
                rc = fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                "archive member at byte offset %zu names a missing long name",
                                data - 60);
                goto cleanup;
            }
            const unsigned char *s = longnames + at;
            while (at + nl < nlong && s[nl] != '/' && s[nl] != '\n' && nl < sizeof member - 1)
                nl++;
            memcpy(member, s, nl);
        } else if (memcmp(h, "#1/", 3) == 0) {
            uint64_t bsd;
            size_t end = 16;
            while (end > 3 && h[end - 1] == ' ')
                end--;
            if (!ar_decimal(h + 3, end - 3, &bsd) || bsd > len) {
                rc = fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                "archive member at byte offset %zu has a bad BSD name",
                                data - 60);
                goto cleanup;
            }
            nl = bsd < sizeof member - 1 ? (size_t)bsd : sizeof member - 1;
            memcpy(member, p + data, nl);
            data += (size_t)bsd;
            len -= (size_t)bsd;
            while (nl && member[nl - 1] == '\0')
                nl--;
        } else {
            while (nl < 16 && h[nl] != '/' && h[nl] != ' ')
                nl++;
            memcpy(member, h, nl);
        }
        member[nl] = '\0';
        for (size_t i = 0; i < nl; i++)
            if ((unsigned char)member[i] < 0x20)
                member[i] = '?';
        if (len == 0)
            continue;
        fdl__sniffed s;
        fdl__sniff(&s, p + data, len, member);
        base.len = 0;
        if (base.data)
            base.data[0] = '\0';
        fdl__buf_printf(&base, "%s(%s)", input, member);
        if (base.oom) {
            rc = fdl__error(err, FDL_ENOMEM, input, 0, 0, NULL, "out of memory");
            goto cleanup;
        }
        switch (s.kind) {
        case FDL_KIND_OBJECT:
            rc = fdl__object_parse(im, p + data, len, data, input, base.data, member, err);
            break;
        case FDL_KIND_FATBIN:
            rc = fdl__fatbin_parse(im, p + data, len, data, input, base.data, member, err);
            break;
        case FDL_KIND_CUBIN:
        case FDL_KIND_PTX:
        case FDL_KIND_LTOIR:
            rc = fdl__images_add_whole(im, s.kind, p + data, len, base.data, member, err);
            break;
        default:
            break; /* host code only, or something else: nothing for the device linker */
        }
        if (rc != FDL_OK)
            goto cleanup;
    }
cleanup:
    fdl__buf_free(&base);
    return rc;
}
