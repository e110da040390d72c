/*
 * Tests of the error record and the internal helpers every module shares (base/src/error.c,
 * strbuf.c, file.c, clock.c, sharedlib.c; fdlink/error.h, base/src/internal.h).
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <dirent.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdlink/error.h"
#include "internal.h"

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

static fdl_error make_error(const char *source, unsigned line, unsigned column, const char *symbol,
                            const char *message)
{
    fdl_error e = FDL_ERROR_INIT;
    fdl__error(&e, FDL_EABI, source, line, column, symbol, "%s", message);
    return e;
}

static void expect_format(fdl_error e, const char *want)
{
    char buf[1024];
    size_t n = fdl_error_format(&e, buf, sizeof buf);
    cr_assert_str_eq(buf, want);
    cr_assert_eq(n, strlen(want));
}

/* ------------------------------------------------------------------------------------------ */
/* Status names and the error record                                                           */
/* ------------------------------------------------------------------------------------------ */

Test(error_status, names_every_pinned_code)
{
    struct {
        int code;
        const char *name;
    } codes[] = {
        {FDL_OK, "FDL_OK"},           {FDL_EINVAL, "FDL_EINVAL"},
        {FDL_ENOMEM, "FDL_ENOMEM"},   {FDL_EIO, "FDL_EIO"},
        {FDL_EPARSE, "FDL_EPARSE"},   {FDL_EABI, "FDL_EABI"},
        {FDL_ELINK, "FDL_ELINK"},     {FDL_ENOTFOUND, "FDL_ENOTFOUND"},
        {FDL_ENODEVICE, "FDL_ENODEVICE"}, {FDL_ENOLIB, "FDL_ENOLIB"},
        {FDL_ECUDA, "FDL_ECUDA"},     {FDL_ELIMIT, "FDL_ELIMIT"},
        {FDL_EKIND, "FDL_EKIND"},     {FDL_EVERIFY, "FDL_EVERIFY"},
        {FDL_EDEVICE, "FDL_EDEVICE"},
    };
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        cr_assert_eq(codes[i].code, -(int)i, "values are pinned");
        cr_assert_str_eq(fdl_status_name(codes[i].code), codes[i].name);
    }
}

Test(error_status, names_unknown_codes_as_unknown)
{
    cr_assert_str_eq(fdl_status_name(1), "FDL_E?");
    cr_assert_str_eq(fdl_status_name(-15), "FDL_E?");
    cr_assert_str_eq(fdl_status_name(-1000), "FDL_E?");
    cr_assert_str_eq(fdl_status_name(INT_MAX), "FDL_E?");
    cr_assert_str_eq(fdl_status_name(INT_MIN), "FDL_E?");
}

Test(error_record, is_filled_by_fdl__error)
{
    fdl_error e = FDL_ERROR_INIT;
    e.backend_code = 77;
    e.log = "old log";
    int rc = fdl__error(&e, FDL_EPARSE, "a.decl", 3, 9, "mul", "unknown type '%s'", "x");
    cr_assert_eq(rc, FDL_EPARSE);
    cr_assert_eq(e.code, FDL_EPARSE);
    cr_assert_eq(e.backend_code, 0);
    cr_assert_null(e.log);
    cr_assert_str_eq(e.source, "a.decl");
    cr_assert_eq(e.line, 3);
    cr_assert_eq(e.column, 9);
    cr_assert_str_eq(e.symbol, "mul");
    cr_assert_str_eq(e.message, "unknown type 'x'");

    /* NULL source and symbol become empty strings */
    fdl__error(&e, FDL_EIO, NULL, 0, 0, NULL, "plain");
    cr_assert_str_eq(e.source, "");
    cr_assert_str_eq(e.symbol, "");
    cr_assert_eq(e.line, 0);
}

Test(error_record, tolerates_null_and_truncates_long_fields)
{
    cr_assert_eq(fdl__error(NULL, FDL_ENOMEM, "x", 1, 1, "y", "z"), FDL_ENOMEM);
    cr_assert_eq(fdl__fail(NULL, FDL_EINVAL, "z"), FDL_EINVAL);

    char longer[2000];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    fdl_error e = FDL_ERROR_INIT;
    fdl__error(&e, FDL_EIO, longer, 1, 2, longer, "%s", longer);
    cr_assert_eq(strlen(e.source), FDL_ERROR_SOURCE_MAX - 1);
    cr_assert_eq(strlen(e.symbol), FDL_ERROR_SYMBOL_MAX - 1);
    cr_assert_eq(strlen(e.message), FDL_ERROR_MESSAGE_MAX - 1);
}

Test(error_record, fdl__fail_has_no_location)
{
    fdl_error e = make_error("f", 1, 2, "s", "m");
    cr_assert_eq(fdl__fail(&e, FDL_EINVAL, "bad %d", 7), FDL_EINVAL);
    cr_assert_eq(e.code, FDL_EINVAL);
    cr_assert_str_eq(e.source, "");
    cr_assert_str_eq(e.symbol, "");
    cr_assert_eq(e.line, 0);
    cr_assert_eq(e.column, 0);
    cr_assert_str_eq(e.message, "bad 7");
}

Test(error_record, is_cleared_by_fdl_error_clear)
{
    fdl_error e = make_error("f", 1, 2, "s", "m");
    fdl_error_clear(&e);
    fdl_error empty = FDL_ERROR_INIT;
    cr_assert_eq(e.code, FDL_OK);
    cr_assert_str_eq(e.source, "");
    cr_assert_str_eq(e.message, "");
    cr_assert_eq(e.line, 0);
    cr_assert_null(e.log);
    cr_assert(memcmp(&e, &empty, sizeof e) == 0);
    fdl_error_clear(NULL);
}

/* The details (error.h's FDL_ERROR_HAS_*): set by their setters with their bits, zero in
 * FDL_ERROR_INIT, cleared by the next fdl__error (no detail of an earlier error survives), and
 * no part of fdl_error_format's line. */
Test(error_record, carries_details_as_fields)
{
    fdl_error e = FDL_ERROR_INIT, zero;
    memset(&zero, 0, sizeof zero);
    cr_assert(memcmp(&e, &zero, sizeof e) == 0, "FDL_ERROR_INIT is not all zero");
    fdl__error(&e, FDL_EDEVICE, "", 0, 0, "f", "f returned status 3");
    char before[256];
    fdl_error_format(&e, before, sizeof before);
    const unsigned block[3] = {1, 2, 3}, thread[3] = {4, 5, 6};
    fdl__error_rule(&e, 5);
    fdl__error_decl(&e, "lib.decl", 3, 1);
    fdl__error_library(&e, "libcuda.so.1");
    fdl__error_index(&e, 1ull << 40);
    fdl__error_place(&e, block, thread);
    fdl__error_count(&e, 7);
    cr_assert_eq(e.fields, FDL_ERROR_HAS_RULE | FDL_ERROR_HAS_DECL | FDL_ERROR_HAS_LIBRARY |
                               FDL_ERROR_HAS_INDEX | FDL_ERROR_HAS_PLACE | FDL_ERROR_HAS_COUNT);
    cr_assert_eq(e.rule, 5);
    cr_assert_str_eq(e.decl_source, "lib.decl");
    cr_assert_eq(e.decl_line, 3);
    cr_assert_eq(e.decl_column, 1);
    cr_assert_str_eq(e.library, "libcuda.so.1");
    cr_assert_eq(e.index, 1ull << 40);
    cr_assert_eq(e.block[0] * 100 + e.block[1] * 10 + e.block[2], 123);
    cr_assert_eq(e.thread[0] * 100 + e.thread[1] * 10 + e.thread[2], 456);
    cr_assert_eq(e.count, 7);
    char after[256];
    fdl_error_format(&e, after, sizeof after);
    cr_assert_str_eq(after, before);
    cr_assert_str_eq(after, "f returned status 3");
    /* a copy carries them; the next error made in the record clears them */
    fdl_error copy = e;
    cr_assert_eq(copy.rule, 5);
    fdl__fail(&e, FDL_EIO, "plain");
    cr_assert_eq(e.fields, 0u, "a detail survived the next error");
    cr_assert_eq(e.rule + e.decl_line + e.decl_column, 0);
    cr_assert_str_empty(e.decl_source);
    cr_assert_str_empty(e.library);
    cr_assert_eq(e.index + e.count, 0);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(e.block[i] + e.thread[i], 0);
    /* a long library name is cut to fit, as the source is */
    char longer[600];
    memset(longer, 'l', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    fdl__error_library(&e, longer);
    fdl__error_decl(&e, longer, 1, 1);
    cr_assert_eq(strlen(e.library), FDL_ERROR_SOURCE_MAX - 1);
    cr_assert_eq(strlen(e.decl_source), FDL_ERROR_SOURCE_MAX - 1);
    /* NULL records are ignored */
    fdl__error_rule(NULL, 1);
    fdl__error_decl(NULL, "x", 1, 1);
    fdl__error_library(NULL, "x");
    fdl__error_index(NULL, 1);
    fdl__error_place(NULL, block, thread);
    fdl__error_count(NULL, 1);
    fdl_error_clear(&copy);
    cr_assert(memcmp(&copy, &zero, sizeof copy) == 0);
}

/* ------------------------------------------------------------------------------------------ */
/* fdl_error_format                                                                            */
/* ------------------------------------------------------------------------------------------ */

Test(error_format, writes_source_line_column_symbol_and_message)
{
    expect_format(make_error("kernels.ptx", 42, 9, "mul_f32_f32",
                             "parameter 2 is .b64 but float32 needs 32 bits"),
                  "kernels.ptx:42:9: mul_f32_f32: parameter 2 is .b64 but float32 needs 32 bits");
}

Test(error_format, leaves_out_empty_parts)
{
    expect_format(make_error("a.decl", 3, 0, "f", "m"), "a.decl:3: f: m");
    expect_format(make_error("a.decl", 0, 0, "f", "m"), "a.decl: f: m");
    expect_format(make_error("a.decl", 0, 5, "", "m"), "a.decl: m");
    expect_format(make_error("", 3, 4, "f", "m"), "f: m");
    expect_format(make_error("", 3, 4, "", "just the message"), "just the message");
}

Test(error_format, does_not_repeat_a_symbol_the_message_starts_with)
{
    expect_format(make_error("x.ptx", 1, 2, "mul", "mul is defined twice"),
                  "x.ptx:1:2: mul is defined twice");
}

Test(error_format, behaves_like_snprintf)
{
    fdl_error e = make_error("a.decl", 3, 4, "f", "message");
    const char *full = "a.decl:3:4: f: message";
    char buf[8];
    memset(buf, 'x', sizeof buf);
    cr_assert_eq(fdl_error_format(&e, buf, sizeof buf), strlen(full));
    cr_assert_str_eq(buf, "a.decl:");
    cr_assert_eq(fdl_error_format(&e, NULL, 0), strlen(full));
    cr_assert_eq(fdl_error_format(NULL, buf, sizeof buf), 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Sizes and strings                                                                           */
/* ------------------------------------------------------------------------------------------ */

Test(error_helpers, checked_arithmetic_reports_overflow)
{
    size_t r = 0;
    cr_assert(fdl__size_add(&r, 2, 3));
    cr_assert_eq(r, 5);
    cr_assert(fdl__size_add(&r, SIZE_MAX - 1, 1));
    cr_assert_eq(r, SIZE_MAX);
    r = 7;
    cr_assert_not(fdl__size_add(&r, SIZE_MAX, 1));
    cr_assert_eq(r, 7, "output untouched on overflow");
    cr_assert(fdl__size_mul(&r, 6, 7));
    cr_assert_eq(r, 42);
    cr_assert(fdl__size_mul(&r, SIZE_MAX, 0));
    cr_assert_eq(r, 0);
    cr_assert_not(fdl__size_mul(&r, SIZE_MAX / 2 + 1, 2));
}

Test(error_helpers, copies_strings)
{
    char *s = fdl__strndup("abcdef", 3);
    cr_assert_str_eq(s, "abc");
    free(s);
    s = fdl__strndup("ab\0cd", 5);
    cr_assert_str_eq(s, "ab", "stops at NUL");
    free(s);
    s = fdl__strdup("");
    cr_assert_str_eq(s, "");
    free(s);

    char buf[4] = "zzz";
    fdl__strlcpy(buf, "abcdef", sizeof buf);
    cr_assert_str_eq(buf, "abc");
    fdl__strlcpy(buf, "x", sizeof buf);
    cr_assert_str_eq(buf, "x");
    buf[0] = 'q';
    fdl__strlcpy(buf, "x", 0);
    cr_assert_eq(buf[0], 'q', "size 0 writes nothing");
}

Test(error_helpers, quotes_input_as_one_printable_line)
{
    char buf[16];
    cr_assert_str_eq(fdl__quote(buf, sizeof buf, "abc", 3, 64), "abc");
    cr_assert_str_eq(fdl__quote(buf, sizeof buf, "a\nb\x01\x7f\xc3\xa9", 7, 64), "a?b?" "???");
    cr_assert_str_eq(fdl__quote(buf, sizeof buf, "a\0b", 3, 64), "a?b", "a NUL is a byte too");
    cr_assert_str_eq(fdl__quote(buf, sizeof buf, "abcdefgh", 8, 4), "abcd...");
    /* the buffer, not the limit, shortens: still marked */
    cr_assert_str_eq(fdl__quote(buf, sizeof buf, "0123456789abcdefghij", 20, 64),
                     "0123456789ab...");
    cr_assert_eq(strlen(buf), sizeof buf - 1);
    cr_assert_str_eq(fdl__quote(buf, 3, "abcdef", 6, 64), "ab");
    cr_assert_str_eq(fdl__quote(buf, sizeof buf, "", 0, 64), "");
    buf[0] = 'q';
    fdl__quote(buf, 0, "abc", 3, 64);
    cr_assert_eq(buf[0], 'q', "size 0 writes nothing");
}

Test(error_helpers, recognises_c_identifiers)
{
    cr_assert(fdl__is_identifier("f", 1));
    cr_assert(fdl__is_identifier("_Mul_f32_2", 10));
    cr_assert(fdl__is_identifier("ab-", 2), "only n bytes are looked at");
    cr_assert_not(fdl__is_identifier("", 0));
    cr_assert_not(fdl__is_identifier("1f", 2));
    cr_assert_not(fdl__is_identifier("a-b", 3));
    cr_assert_not(fdl__is_identifier("a$", 2));
    cr_assert_not(fdl__is_identifier("caf\xc3\xa9", 5));
    cr_assert_not(fdl__is_identifier("a\0b", 3));
}

Test(error_helpers, grows_arrays_by_doubling_and_refuses_overflow)
{
    size_t cap = 0;
    int *a = fdl__grow(NULL, &cap, 1, sizeof *a);
    cr_assert_not_null(a);
    cr_assert_eq(cap, 16);
    a[15] = 7;
    int *same = fdl__grow(a, &cap, 16, sizeof *a);
    cr_assert_eq(same, a, "no move when it fits");
    a = fdl__grow(a, &cap, 100, sizeof *a);
    cr_assert_not_null(a);
    cr_assert_eq(cap, 128);
    cr_assert_eq(a[15], 7, "contents kept");
    size_t before = cap;
    cr_assert_null(fdl__grow(a, &cap, SIZE_MAX / 2, sizeof *a), "size overflows");
    cr_assert_null(fdl__grow(a, &cap, SIZE_MAX, 1), "capacity overflows");
    cr_assert_eq(cap, before, "capacity untouched on failure");
    cr_assert_eq(a[15], 7, "array still valid on failure");
    free(a);
}

/* The keys of the index tests: names[i]. */
static const char *key_of(const void *owner, size_t i)
{
    return ((const char *const *)owner)[i];
}

Test(error_index, finds_every_name_and_nothing_else)
{
    enum { N = 3000 };
    static char storage[N][16];
    static const char *names[N];
    fdl__index ix = {NULL, 0};
    cr_assert_eq(fdl__index_find(&ix, "a", 1, key_of, names), SIZE_MAX, "empty index");
    for (size_t i = 0; i < N; i++) {
        snprintf(storage[i], sizeof storage[i], "name%zu", i);
        names[i] = storage[i];
        cr_assert(fdl__index_reserve(&ix, i + 1));
        uint64_t tag;
        uint64_t *slot = fdl__index_slot(&ix, names[i], strlen(names[i]), key_of, names, &tag);
        cr_assert_eq(*slot, 0, "%s is new", names[i]);
        *slot = tag | (i + 1);
    }
    cr_assert_leq(N * 2, ix.mask + 1, "at most half full");
    for (size_t i = 0; i < N; i++)
        cr_assert_eq(fdl__index_find(&ix, names[i], strlen(names[i]), key_of, names), i);
    /* lookups by length: a prefix or an extension of a name is another name */
    cr_assert_eq(fdl__index_find(&ix, "name12x", 6, key_of, names), 12);
    cr_assert_eq(fdl__index_find(&ix, "name1", 4, key_of, names), SIZE_MAX);
    cr_assert_eq(fdl__index_find(&ix, "name30000", 9, key_of, names), SIZE_MAX);
    cr_assert_eq(fdl__index_find(&ix, "", 0, key_of, names), SIZE_MAX);
    fdl__index_free(&ix);
    cr_assert_null(ix.slots);
    fdl__index_free(&ix); /* twice is harmless */
}

Test(error_index, name_hash_tells_prefixes_and_lengths_apart)
{
    /* every prefix of a name, each length read in its own way (bytes, words, overlapping
     * words), hashes differently from the others; equal bytes hash equally wherever they are */
    static const char text[] = "abcdefghijklmnopqrstuvwxyz0123456789_ABCDEFGHIJ";
    char copy[sizeof text];
    uint64_t h[sizeof text];
    for (size_t n = 0; n < sizeof text; n++) {
        h[n] = fdl__name_hash(text, n);
        memcpy(copy, text, n);
        cr_assert_eq(fdl__name_hash(copy, n), h[n]);
        for (size_t m = 0; m < n; m++)
            cr_assert_neq(h[m], h[n], "lengths %zu and %zu", m, n);
    }
}

Test(error_index, hashes_with_fnv1a)
{
    /* the published FNV-1a 64-bit test vectors */
    cr_assert_eq(fdl__hash("", 0), UINT64_C(0xcbf29ce484222325));
    cr_assert_eq(fdl__hash("a", 1), UINT64_C(0xaf63dc4c8601ec8c));
    cr_assert_eq(fdl__hash("foobar", 6), UINT64_C(0x85944171f73967e8));
}

/* ------------------------------------------------------------------------------------------ */
/* fdl__buf                                                                                    */
/* ------------------------------------------------------------------------------------------ */

Test(error_buf, appends_and_stays_nul_terminated)
{
    fdl__buf b = {0};
    cr_assert(fdl__buf_puts(&b, "ab"));
    cr_assert(fdl__buf_append(&b, "cdef", 2));
    cr_assert(fdl__buf_printf(&b, "-%d-%s", 42, "x"));
    cr_assert_str_eq(b.data, "abcd-42-x");
    cr_assert_eq(b.len, 9);
    cr_assert_geq(b.cap, b.len + 1);
    cr_assert_eq(b.oom, 0);
    cr_assert(fdl__buf_append(&b, NULL, 0), "appending nothing is fine");
    cr_assert_eq(b.len, 9);
    fdl__buf_free(&b);
    cr_assert_null(b.data);
    cr_assert_eq(b.len, 0);
    cr_assert_eq(b.cap, 0);
}

Test(error_buf, holds_binary_data)
{
    fdl__buf b = {0};
    cr_assert(fdl__buf_append(&b, "a\0b", 3));
    cr_assert_eq(b.len, 3);
    cr_assert(memcmp(b.data, "a\0b", 4) == 0);
    fdl__buf_free(&b);
}

Test(error_buf, grows_over_many_appends)
{
    fdl__buf b = {0};
    for (int i = 0; i < 100000; i++)
        cr_assert(fdl__buf_printf(&b, "%05d", i % 100000));
    cr_assert_eq(b.len, 500000);
    cr_assert_eq(strlen(b.data), 500000);
    cr_assert(memcmp(b.data + 5 * 12345, "12345", 5) == 0);
    fdl__buf_free(&b);

    /* one printf larger than the initial capacity */
    char big[5000];
    memset(big, 'q', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cr_assert(fdl__buf_printf(&b, "[%s]", big));
    cr_assert_eq(b.len, sizeof big + 1);
    cr_assert_eq(b.data[0], '[');
    cr_assert_eq(b.data[b.len - 1], ']');
    fdl__buf_free(&b);
}

Test(error_buf, refuses_sizes_that_overflow_and_stays_failed)
{
    fdl__buf b = {0};
    cr_assert(fdl__buf_puts(&b, "ok"));
    cr_assert_not(fdl__buf_append(&b, "x", SIZE_MAX));
    cr_assert_eq(b.oom, 1);
    cr_assert_not(fdl__buf_puts(&b, "more"), "oom is sticky");
    cr_assert_str_eq(b.data, "ok", "contents kept");
    fdl__buf_free(&b);
    cr_assert_eq(b.oom, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Files                                                                                       */
/* ------------------------------------------------------------------------------------------ */

Test(error_read_file, reads_a_whole_file)
{
    char *dir = make_temp_dir();
    char *path = path_in(dir, "f.bin");
    const char data[] = "line 1\n\0binary\xff";
    write_file(path, data, sizeof data - 1);
    char *got = NULL;
    size_t size = 0;
    cr_assert_eq(fdl__read_file(path, &got, &size, NULL), FDL_OK);
    cr_assert_eq(size, sizeof data - 1);
    cr_assert(memcmp(got, data, size) == 0);
    cr_assert_eq(got[size], '\0', "NUL-terminated");
    free(got);

    write_file(path, "", 0);
    cr_assert_eq(fdl__read_file(path, &got, NULL, NULL), FDL_OK);
    cr_assert_str_eq(got, "");
    free(got);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

Test(error_read_file, fails_for_a_missing_file)
{
    char *dir = make_temp_dir();
    char *path = path_in(dir, "missing");
    char *got = (char *)0x1;
    size_t size = 99;
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__read_file(path, &got, &size, &e), FDL_EIO);
    cr_assert_null(got);
    cr_assert_eq(size, 0);
    cr_assert_eq(e.code, FDL_EIO);
    cr_assert_str_eq(e.source, path);
    cr_assert_str_eq(e.message, "cannot open: No such file or directory");
    rmdir(dir);
    free(path);
    free(dir);
}

Test(error_read_file, fails_for_a_directory_and_a_device)
{
    char *dir = make_temp_dir();
    char *got = (char *)0x1;
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__read_file(dir, &got, NULL, &e), FDL_EIO);
    cr_assert_null(got);
    cr_assert_str_eq(e.source, dir);
    cr_assert_str_eq(e.message, "is a directory, not a file");
    cr_assert_eq(fdl__read_file("/dev/null", &got, NULL, &e), FDL_EIO);
    cr_assert_str_eq(e.message, "is a character device, not a file");
    rmdir(dir);
    free(dir);
}

Test(error_write_atomic, writes_and_replaces)
{
    char *dir = make_temp_dir();
    char *path = path_in(dir, "out.bin");
    cr_assert_eq(fdl__write_atomic(path, "first", 5, NULL), FDL_OK);
    cr_assert_eq(fdl__write_atomic(path, "second\0x", 8, NULL), FDL_OK);
    char *got = NULL;
    size_t size = 0;
    cr_assert_eq(fdl__read_file(path, &got, &size, NULL), FDL_OK);
    cr_assert_eq(size, 8);
    cr_assert(memcmp(got, "second\0x", 8) == 0);
    free(got);
    cr_assert_eq(count_entries(dir), 1, "no temporary left behind");

    /* permissions follow the umask, not mkstemp's 0600 */
    mode_t old = umask(022);
    cr_assert_eq(fdl__write_atomic(path, "", 0, NULL), FDL_OK);
    umask(old);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644);
    cr_assert_eq(st.st_size, 0);

    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

/* What a writer killed between naming its temporary and renaming it leaves: removed by the next
 * write of the same output when its process is gone, kept while it lives. */
Test(error_write_atomic, removes_the_temporaries_of_killed_writers)
{
    char *dir = make_temp_dir();
    char *path = path_in(dir, "out.bin");
    pid_t child = fork();
    cr_assert_geq(child, 0);
    if (child == 0)
        _exit(0);
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    char dead[4096], live[4096], other[4096];
    snprintf(dead, sizeof dead, "%s.tmp.%ld.abc123", path, (long)child);
    snprintf(live, sizeof live, "%s.tmp.1.abc123", path); /* pid 1 is alive */
    snprintf(other, sizeof other, "%s.tmp.%ld.not-ours", path, (long)child);
    write_file(dead, "complete", 8);
    write_file(live, "writing", 7);
    write_file(other, "someone's", 9);
    cr_assert_eq(fdl__write_atomic(path, "new", 3, NULL), FDL_OK);
    cr_assert_eq(access(dead, F_OK), -1, "the killed writer's temporary is still there");
    cr_assert_eq(access(live, F_OK), 0, "a live writer's temporary was removed");
    cr_assert_eq(access(other, F_OK), 0, "a file not named as fdlink names them was removed");
    cr_assert_eq(count_entries(dir), 3);
    unlink(live);
    unlink(other);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

Test(error_write_atomic, leaves_nothing_on_failure)
{
    char *dir = make_temp_dir();
    fdl_error e = FDL_ERROR_INIT;

    /* a directory that does not exist: nothing can be created */
    char *missing = path_in(dir, "nope/out.bin");
    cr_assert_eq(fdl__write_atomic(missing, "x", 1, &e), FDL_EIO);
    cr_assert_str_eq(e.source, missing);
    cr_assert(strncmp(e.message, "cannot create output: ", 22) == 0, "%s", e.message);
    cr_assert_eq(count_entries(dir), 0);

    /* a path that is a directory: refused before anything is written */
    char *target = path_in(dir, "target");
    cr_assert_eq(mkdir(target, 0755), 0);
    cr_assert_eq(fdl__write_atomic(target, "data", 4, &e), FDL_EIO);
    cr_assert_str_eq(e.source, target);
    cr_assert_str_eq(e.message, "cannot write output: is a directory (fdlink writes regular "
                                "files, character devices and FIFOs)");
    cr_assert_eq(count_entries(dir), 1, "nothing was left beside it");

    /* an existing file is untouched when the write fails */
    char *keep = path_in(dir, "keep");
    write_file(keep, "old", 3);
    cr_assert_eq(chmod(dir, 0555), 0);
    if (access(dir, W_OK) == 0) {
        /* running as root: permissions do not stop the write; skip this part */
        cr_assert_eq(chmod(dir, 0755), 0);
    } else {
        cr_assert_eq(fdl__write_atomic(keep, "new", 3, &e), FDL_EIO);
        cr_assert_eq(chmod(dir, 0755), 0);
        char *got = NULL;
        cr_assert_eq(fdl__read_file(keep, &got, NULL, NULL), FDL_OK);
        cr_assert_str_eq(got, "old");
        free(got);
    }
    cr_assert_eq(count_entries(dir), 2);

    unlink(keep);
    rmdir(target);
    rmdir(dir);
    free(keep);
    free(target);
    free(missing);
    free(dir);
}

/* ------------------------------------------------------------------------------------------ */
/* Clock and dlopen                                                                            */
/* ------------------------------------------------------------------------------------------ */

Test(error_clock, is_monotonic)
{
    uint64_t a = fdl__now_ns();
    usleep(2000);
    uint64_t b = fdl__now_ns();
    cr_assert_gt(b, a);
    cr_assert_geq(b - a, 1000000u, "slept 2 ms, measured %llu ns", (unsigned long long)(b - a));
}

Test(error_dlopen, names_the_library_and_purpose_when_none_loads)
{
    const char *names[] = {"libfdl_does_not_exist.so.1", "libfdl_nor_this.so", NULL};
    void *h = (void *)0x1;
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__dlopen_first(&h, names, "for testing", &e), FDL_ENOLIB);
    cr_assert_null(h);
    cr_assert_str_eq(e.symbol, "libfdl_does_not_exist.so.1");
    /* the reason is dlerror's text for the first name, copied before the next dlopen frees it,
     * without its repeat of the name (issue 35: a long path was said three times) */
    cr_assert_str_eq(e.message, "cannot load libfdl_does_not_exist.so.1, needed for testing: "
                                "cannot open shared object file: No such file or directory");
    /* the library as a field */
    cr_assert_eq(e.fields, FDL_ERROR_HAS_LIBRARY);
    cr_assert_str_eq(e.library, "libfdl_does_not_exist.so.1");
}

/* A library that loads but lacks an entry point: the library named as a field (the entry point
 * is the symbol) */
Test(error_dlopen, names_the_library_that_lacks_an_entry_point)
{
    const char *names[] = {"libc.so.6", NULL};
    struct {
        void (*fn)(void);
    } table;
    const fdl__symbol symbols[] = {{"fdl_no_such_entry_point", 0, 0}};
    void *h = NULL;
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__dlopen_table(&h, NULL, names, "the C library", "for testing", symbols, 1,
                                   &table, &e),
                 FDL_ENOLIB);
    cr_assert_str_eq(e.message, "the C library lacks fdl_no_such_entry_point (needed for "
                                "testing): the library is too old or not the C library");
    cr_assert_str_eq(e.symbol, "fdl_no_such_entry_point");
    cr_assert_eq(e.fields, FDL_ERROR_HAS_LIBRARY);
    cr_assert_str_eq(e.library, "the C library");
    if (h)
        dlclose(h);
}

Test(error_dlopen, takes_the_first_name_that_loads)
{
    const char *names[] = {"libfdl_does_not_exist.so.1", "libc.so.6", NULL};
    void *h = NULL;
    cr_assert_eq(fdl__dlopen_first(&h, names, "for testing", NULL), FDL_OK);
    cr_assert_not_null(h);
    dlclose(h);
}

/* ---- what a path may hold (issue 22) ------------------------------------------------------ */

/* A FIFO nothing writes: refused at once (an open that blocked would never return). */
Test(error_read_file, refuses_a_fifo_without_waiting, .timeout = 10)
{
    char *dir = make_temp_dir();
    char *fifo = path_in(dir, "p");
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    char *got = (char *)0x1;
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__read_file(fifo, &got, NULL, &e), FDL_EIO);
    cr_assert_null(got);
    cr_assert_str_eq(e.message, "is a FIFO, not a file");
    unlink(fifo);
    rmdir(dir);
    free(fifo);
    free(dir);
}

/* /proc files say 0 bytes: read to the end, not by st_size. */
Test(error_read_file, reads_a_proc_file_to_its_end)
{
    char *got = NULL;
    size_t size = 0;
    cr_assert_eq(fdl__read_file("/proc/self/status", &got, &size, NULL), FDL_OK);
    cr_assert_gt(size, 0);
    cr_assert(strncmp(got, "Name:", 5) == 0, "%.20s", got);
    cr_assert_eq(strlen(got), size);
    free(got);
}

/* A bound says what it is, past it by one byte or by many. */
Test(error_read_file, stops_at_a_bound)
{
    char *dir = make_temp_dir();
    char *path = path_in(dir, "f");
    write_file(path, "12345", 5);
    fdl__read_limit at = {5, "five"}, below = {4, "four bytes"};
    char *got = NULL;
    size_t size = 0;
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__read_at(AT_FDCWD, path, 0, &at, &got, &size, NULL), FDL_OK);
    cr_assert_eq(size, 5);
    free(got);
    cr_assert_eq(fdl__read_at(AT_FDCWD, path, 0, &below, &got, &size, &e), FDL_ELIMIT);
    cr_assert_null(got);
    cr_assert_str_eq(e.message, "larger than four bytes");
    /* a /proc file (st_size 0) is bounded while read */
    cr_assert_eq(fdl__read_at(AT_FDCWD, "/proc/self/status", 0, &below, &got, &size, &e),
                 FDL_ELIMIT);
    unlink(path);
    rmdir(dir);
    free(path);
    free(dir);
}

Test(error_read_file, refuses_a_symlink_when_asked)
{
    char *dir = make_temp_dir();
    char *path = path_in(dir, "f"), *link = path_in(dir, "l");
    write_file(path, "x", 1);
    cr_assert_eq(symlink("f", link), 0);
    char *got = NULL;
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__read_at(AT_FDCWD, link, FDL__FILE_NOFOLLOW, NULL, &got, NULL, &e), FDL_EIO);
    cr_assert_str_eq(e.message, "is a symlink, not followed here");
    cr_assert_eq(fdl__read_at(AT_FDCWD, link, 0, NULL, &got, NULL, NULL), FDL_OK);
    cr_assert_str_eq(got, "x");
    free(got);
    unlink(link);
    unlink(path);
    rmdir(dir);
    free(path);
    free(link);
    free(dir);
}

/* A symlink to a regular file: the target is replaced, the symlink stays. A device is written
 * into, never replaced. */
Test(error_write_atomic, follows_a_symlink_and_writes_into_devices)
{
    char *dir = make_temp_dir();
    char *target = path_in(dir, "real"), *link = path_in(dir, "out");
    write_file(target, "old", 3);
    cr_assert_eq(symlink("real", link), 0);
    cr_assert_eq(fdl__write_atomic(link, "new!", 4, NULL), FDL_OK);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the symlink was replaced");
    char *got = NULL;
    cr_assert_eq(fdl__read_file(target, &got, NULL, NULL), FDL_OK);
    cr_assert_str_eq(got, "new!");
    free(got);
    cr_assert_eq(count_entries(dir), 2);

    cr_assert_eq(fdl__write_atomic("/dev/null", "x", 1, NULL), FDL_OK);
    cr_assert_eq(stat("/dev/null", &st), 0);
    cr_assert(S_ISCHR(st.st_mode));
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__write_atomic("/dev/full", "x", 1, &e), FDL_EIO);
    cr_assert_str_eq(e.message, "write failed: No space left on device");
    unlink(link);
    unlink(target);
    rmdir(dir);
    free(target);
    free(link);
    free(dir);
}

/* Two outputs: when the second cannot be written, the first is not either. */
Test(error_write_atomic, writes_all_outputs_or_none)
{
    char *dir = make_temp_dir();
    char *a = path_in(dir, "a"), *sub = path_in(dir, "d");
    cr_assert_eq(mkdir(sub, 0755), 0);
    const char *paths[2] = {a, sub};
    const void *data[2] = {"A", "B"};
    size_t sizes[2] = {1, 1};
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl__write_outputs(2, paths, data, sizes, &e), FDL_EIO);
    cr_assert_str_eq(e.source, sub);
    cr_assert_eq(access(a, F_OK), -1, "the first output was written");
    const char *full[2] = {a, "/dev/full"};
    cr_assert_eq(fdl__write_outputs(2, full, data, sizes, &e), FDL_EIO);
    cr_assert_eq(access(a, F_OK), -1, "the first output was written");
    cr_assert_eq(count_entries(dir), 1, "a temporary was left");
    const char *fine[2] = {a, "/dev/null"};
    cr_assert_eq(fdl__write_outputs(2, fine, data, sizes, NULL), FDL_OK);
    cr_assert_eq(access(a, F_OK), 0);
    unlink(a);
    rmdir(sub);
    rmdir(dir);
    free(a);
    free(sub);
    free(dir);
}

/* ---- half.c: binary16 ----------------------------------------------------------------------- */

Test(half, every_value_round_trips_and_ties_go_to_even)
{
    for (unsigned h = 0; h < 0x10000u; h++) {
        double d = fdl__half_to_double((uint16_t)h);
        if (isnan(d)) {
            cr_assert((fdl__half_from_double(d) & 0x7c00u) == 0x7c00u &&
                      (fdl__half_from_double(d) & 0x3ffu) != 0, "NaN %04x stays NaN", h);
            continue;
        }
        cr_assert_eq(fdl__half_from_double(d), (uint16_t)h, "%04x -> %g -> %04x", h, d,
                     fdl__half_from_double(d));
    }
    cr_assert_eq(fdl__half_to_double(0x3c00u), 1.0);
    cr_assert_eq(fdl__half_to_double(0x7bffu), 65504.0);
    /* 1 + 2^-11 lies halfway between 1 and the next half: ties to even (1) */
    cr_assert_eq(fdl__half_from_double(1.0 + 0x1p-11), 0x3c00u);
    cr_assert_eq(fdl__half_from_double(1.0 + 3 * 0x1p-11), 0x3c02u);
    cr_assert_eq(fdl__half_from_double(65520.0), 0x7c00u); /* rounds to infinity */
    cr_assert_eq(fdl__half_from_double(65519.0), 0x7bffu);
    cr_assert_eq(fdl__half_from_double(-0x1p-25), 0x8000u); /* half the smallest subnormal: -0 */
}
