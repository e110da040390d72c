/*
 * Fuzz fdl_decls_parse, then fdl_header_generate on success. The input is the declaration text,
 * exactly `size` bytes (not NUL-terminated). Properties: a failure fills the error record well
 * (fuzz.h) with a line of the input; a success gives unique names that fdl_decls_find finds, a
 * canonical re-rendering (`name: sig [abi=c]`) that parses to the same set, and a header with one
 * prototype per declaration.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/decl.h"
#include "fuzz.h"

static const char source[] = "fuzz.decl";

static size_t count_lines(const char *s, size_t n)
{
    size_t lines = 1;
    for (size_t i = 0; i < n; i++)
        lines += s[i] == '\n';
    return lines;
}

static size_t count_occurrences(const char *hay, const char *needle)
{
    size_t n = 0, len = strlen(needle);
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += len)
        n++;
    return n;
}

/* `name: canonical signature [abi=c]`, one per line. */
static char *render(const fdl_decls *d, size_t *len)
{
    size_t cap = 1, n = fdl_decls_count(d);
    for (size_t i = 0; i < n; i++) {
        const fdl_decl *x = fdl_decls_get(d, i);
        cap += strlen(x->name) + fdl_sig_format(&x->sig, NULL, 0) + 16;
    }
    char *out = malloc(cap);
    FUZZ_REQUIRE(out != NULL, "out of memory");
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        const fdl_decl *x = fdl_decls_get(d, i);
        size_t k = strlen(x->name);
        memcpy(out + o, x->name, k);
        o += k;
        memcpy(out + o, ": ", 2);
        o += 2;
        o += fdl_sig_format(&x->sig, out + o, cap - o);
        if (x->abi == FDL_ABI_C) {
            memcpy(out + o, " abi=c", 6);
            o += 6;
        }
        out[o++] = '\n';
    }
    out[o] = '\0';
    *len = o;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    fdl_decls *d = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_decls_parse(&d, text, size, source, &err);
    if (rc != FDL_OK) {
        FUZZ_REQUIRE(d == NULL, "*out set on failure");
        FUZZ_REQUIRE(rc == FDL_EPARSE || rc == FDL_ELIMIT, "status %d", rc);
        fuzz_check_error(&err, rc);
        FUZZ_REQUIRE(strcmp(err.source, source) == 0, "source '%s'", err.source);
        FUZZ_REQUIRE(err.line >= 1 && err.line <= count_lines(text, size), "line %u", err.line);
        FUZZ_REQUIRE(err.column >= 1 && err.column <= FDL_DECL_MAX_LINE + 1, "column %u",
                     err.column);
        return 0;
    }
    FUZZ_REQUIRE(err.code == FDL_OK, "err touched on success");
    FUZZ_REQUIRE(strcmp(fdl_decls_source(d), source) == 0, "source");

    size_t n = fdl_decls_count(d);
    for (size_t i = 0; i < n; i++) {
        const fdl_decl *x = fdl_decls_get(d, i);
        FUZZ_REQUIRE(x && x->name && x->name[0], "declaration %zu has no name", i);
        FUZZ_REQUIRE(strlen(x->name) <= FDL_DECL_MAX_NAME, "name too long");
        FUZZ_REQUIRE(fdl_decls_find(d, x->name) == x, "find(%s) is not declaration %zu", x->name,
                     i);
        FUZZ_REQUIRE(x->line >= 1 && x->column >= 1 && x->sig_column > x->column, "position");
        FUZZ_REQUIRE(strcmp(x->source, source) == 0, "declaration source");
    }
    FUZZ_REQUIRE(fdl_decls_get(d, n) == NULL, "get past the end");

    /* canonical re-rendering parses to the same set */
    size_t rlen;
    char *again_text = render(d, &rlen);
    fdl_decls *again = NULL;
    rc = fdl_decls_parse(&again, again_text, rlen, source, &err);
    FUZZ_REQUIRE(rc == FDL_OK, "re-rendered set does not parse: %s", err.message);
    FUZZ_REQUIRE(fdl_decls_count(again) == n, "count after re-rendering");
    for (size_t i = 0; i < n; i++) {
        const fdl_decl *a = fdl_decls_get(d, i), *b = fdl_decls_get(again, i);
        FUZZ_REQUIRE(strcmp(a->name, b->name) == 0 && a->abi == b->abi &&
                         fdl_sig_equal(&a->sig, &b->sig),
                     "declaration %zu changed by re-rendering", i);
    }

    char *header = NULL;
    size_t hlen = 0;
    rc = fdl_header_generate(&header, &hlen, d, NULL, &err);
    FUZZ_REQUIRE(rc == FDL_OK, "header: %s", err.message);
    FUZZ_REQUIRE(strlen(header) == hlen, "header length");
    FUZZ_REQUIRE(count_occurrences(header, "extern \"C\" __device__ ") == n,
                 "header has not %zu prototypes", n);
    for (size_t i = 0; i < hlen; i++)
        FUZZ_REQUIRE(header[i] == '\n' || (header[i] >= 0x20 && header[i] < 0x7f),
                     "header byte 0x%02x", (unsigned char)header[i]);
    char *header2 = NULL;
    size_t hlen2 = 0;
    rc = fdl_header_generate(&header2, &hlen2, again, "FUZZ_GUARD_H", &err);
    FUZZ_REQUIRE(rc == FDL_OK && strstr(header2, "#ifndef FUZZ_GUARD_H\n"), "guard");

    free(header2);
    free(header);
    fdl_decls_destroy(again);
    free(again_text);
    fdl_decls_destroy(d);
    return 0;
}
