/*
 * Static libraries (ar archives, as nvcc -lib writes them): every member, its name from the
 * header, the GNU long-name table ("/N") or a BSD name ("#1/N"), sniffed by its bytes and
 * unpacked as a host object, fatbin, cubin, PTX or LTO-IR; other members (host code) are skipped.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
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
            rc = fdl__error(err, FDL_EKIND, base.data, 0, 0, NULL,
                            "a fatbin as a member of a static library, which the linker skips "
                            "(it takes host objects, as nvcc -lib makes from nvcc -dc): link it "
                            "as an input of its own");
            break;
        case FDL_KIND_CUBIN:
        case FDL_KIND_PTX:
            /* nvJitLink takes only host objects from a library: it would skip this member,
             * and what the check found in it would be "defined in no input" at the link */
            rc = fdl__error(err, FDL_EKIND, base.data, 0, 0, NULL,
                            "%s as a member of a static library, which the linker skips (it "
                            "takes host objects, as nvcc -lib makes from nvcc -dc): link it as "
                            "an input of its own",
                            s.kind == FDL_KIND_CUBIN ? "a cubin" : "a PTX file");
            break;
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

/* Append an ar member header (GNU form) for @p name (16 bytes at most) and @p size bytes (a size
 * read from a 10-digit field of the input, so 10 digits at most). */
static void ar_header(fdl__buf *b, const char *name, size_t size)
{
    char h[96];
    snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "644", size);
    fdl__buf_append(b, h, 60);
}

int fdl__archive_for_linker(const unsigned char *p, size_t n, unsigned char **out, size_t *nout)
{
    *out = NULL;
    *nout = 0;
    /* the members as fdl__archive_parse reads them; whether nvJitLink would misread any */
    int odd = 0;
    fdl__buf names = {0}, body = {0};
    size_t nmembers = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t off = 8;
        while (off < n) {
            if (p[off] == '\n') {
                off++;
                continue;
            }
            uint64_t size;
            if (n - off < 60 || !ar_decimal(p + off + 48, 10, &size) ||
                !fdl__in_range(off + 60, size, n))
                goto as_is; /* fdl__archive_parse refused it already */
            const unsigned char *h = p + off;
            size_t data = off + 60, len = (size_t)size;
            off = data + len + (len & 1);
            if (h[0] == '/' && (h[1] == ' ' || h[1] == '/' || memcmp(h, "/SYM64/", 7) == 0))
                continue; /* symbol table, long names: rebuilt below, when needed */
            const unsigned char *name = h;
            size_t nl = 0;
            if (memcmp(h, "#1/", 3) == 0) {
                uint64_t bsd;
                size_t end = 16;
                while (end > 3 && h[end - 1] == ' ')
                    end--;
                if (!ar_decimal(h + 3, end - 3, &bsd) || bsd > len)
                    goto as_is;
                odd = 1; /* nvJitLink reads the name as the member's first bytes */
                name = p + data;
                nl = (size_t)bsd;
                while (nl && name[nl - 1] == '\0')
                    nl--;
                data += (size_t)bsd;
                len -= (size_t)bsd;
            } else {
                while (nl < 16 && h[nl] != '/' && h[nl] != ' ')
                    nl++;
            }
            if (len == 0) {
                odd = 1; /* nvJitLink stops at an empty member: drop it */
                continue;
            }
            if (pass == 0)
                continue;
            char label[17];
            snprintf(label, sizeof label, "/%zu", names.len);
            if (nl)
                fdl__buf_append(&names, (const char *)name, nl);
            else
                fdl__buf_puts(&names, "member");
            fdl__buf_puts(&names, "/\n");
            ar_header(&body, label, len);
            fdl__buf_append(&body, (const char *)p + data, len);
            if (len & 1)
                fdl__buf_puts(&body, "\n");
            nmembers++;
        }
        if (!odd)
            goto as_is;
    }
    /* a GNU archive of the members with bytes, their names in a long-name table */
    fdl__buf a = {0};
    fdl__buf_puts(&a, "!<arch>\n");
    if (names.len) {
        ar_header(&a, "//", names.len);
        fdl__buf_append(&a, names.data, names.len);
        if (names.len & 1)
            fdl__buf_puts(&a, "\n");
    }
    if (body.len)
        fdl__buf_append(&a, body.data, body.len);
    fdl__buf_free(&names);
    fdl__buf_free(&body);
    if (a.oom) {
        fdl__buf_free(&a);
        return -1;
    }
    (void)nmembers;
    *out = (unsigned char *)a.data;
    *nout = a.len;
    return 1;
as_is:
    fdl__buf_free(&names);
    fdl__buf_free(&body);
    return 0;
}
