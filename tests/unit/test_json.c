/* The JSON writer (base/src/json.h): layout, misuse, and strings of hostile bytes. */
#include <criterion/criterion.h>
#include <string.h>

#include "json.h"

/* @p s (n bytes) escaped, as a malloc'ed string. */
static char *escaped(const char *s, size_t n)
{
    fdl__buf b = {0};
    cr_assert(fdl__json_escape(&b, s, n));
    return b.data ? b.data : fdl__strdup("");
}

#define ESC(lit, want)                                                                            \
    do {                                                                                          \
        char *got_ = escaped(lit, sizeof lit - 1);                                                \
        cr_assert_str_eq(got_, want);                                                             \
        free(got_);                                                                               \
    } while (0)

Test(json_escape, quotes_backslashes_and_controls)
{
    ESC("plain text", "plain text");
    ESC("a\"b\\c", "a\\\"b\\\\c");
    ESC("\b\f\n\r\t", "\\b\\f\\n\\r\\t");
    ESC("\x01\x1f\x7f", "\\u0001\\u001f\\u007f");
    ESC("nul\0inside", "nul\\u0000inside");
    ESC("/", "/");
}

Test(json_escape, valid_utf8_kept_and_line_separators_escaped)
{
    ESC("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    ESC("\xe2\x80\xa8|\xe2\x80\xa9", "\\u2028|\\u2029");
    ESC("\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"); /* U+10FFFF, the last code point */
}

#define FFFD "\xef\xbf\xbd"
Test(json_escape, invalid_utf8_becomes_replacement_characters)
{
    ESC("\xff", FFFD);
    ESC("a\x80z", "a" FFFD "z");               /* a lone continuation byte */
    ESC("\xc3", FFFD);                           /* truncated at the end */
    ESC("\xc3(", FFFD "(");                      /* a lead byte without its continuation */
    ESC("\xc0\xaf", FFFD FFFD);                  /* overlong '/' */
    ESC("\xe0\x80\xaf", FFFD FFFD FFFD);         /* overlong, three bytes */
    ESC("\xed\xa0\x80", FFFD FFFD FFFD);         /* a surrogate (U+D800) */
    ESC("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* above U+10FFFF */
    ESC("\xf5\x80", FFFD FFFD);
}

/* Whether @p s is JSON text as far as strings go: valid UTF-8, no raw control characters. */
static int clean_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        if (*p < 0x20 && *p != '\n')
            return 0;
        size_t len = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : 4;
        for (size_t i = 1; i < len; i++)
            if ((p[i] & 0xC0) != 0x80)
                return 0;
        p += len;
    }
    return 1;
}

Test(json_escape, every_byte_pair_gives_clean_text)
{
    for (unsigned a = 0; a < 256; a++)
        for (unsigned b = 0; b < 256; b++) {
            char in[3] = {(char)a, (char)b, '\0'};
            char *got = escaped(in, 2);
            cr_assert(clean_utf8(got), "bytes %02x %02x gave %s", a, b, got);
            free(got);
        }
}

Test(json_writer, nested_document_on_one_line_and_indented)
{
    fdl__buf b = {0};
    fdl__json j;
    fdl__json_init(&j, &b, 0);
    fdl__json_object_begin(&j);
    fdl__json_member_string(&j, "k\"ey", "v\n");
    fdl__json_key(&j, "list");
    fdl__json_array_begin(&j);
    fdl__json_int(&j, -3);
    fdl__json_double(&j, 0.1);
    fdl__json_double(&j, 1.0 / 0.0);
    fdl__json_null(&j);
    fdl__json_array_end(&j);
    fdl__json_key(&j, "empty");
    fdl__json_object_begin(&j);
    fdl__json_object_end(&j);
    fdl__json_member_bool(&j, "ok", 1);
    fdl__json_member_string(&j, "none", NULL);
    fdl__json_object_end(&j);
    cr_assert(fdl__json_finish(&j));
    cr_assert_str_eq(b.data, "{\"k\\\"ey\": \"v\\n\", \"list\": [-3, 0.1, null, null], "
                             "\"empty\": {}, \"ok\": true, \"none\": null}\n");
    fdl__buf_free(&b);

    fdl__json_init(&j, &b, 2);
    fdl__json_object_begin(&j);
    fdl__json_key(&j, "a");
    fdl__json_array_begin(&j);
    fdl__json_uint(&j, 18446744073709551615ull);
    fdl__json_array_end(&j);
    fdl__json_object_end(&j);
    cr_assert(fdl__json_finish(&j));
    cr_assert_str_eq(b.data, "{\n  \"a\": [\n    18446744073709551615\n  ]\n}\n");
    fdl__buf_free(&b);
}

Test(json_writer, misuse_is_refused_not_written)
{
    fdl__buf b = {0};
    fdl__json j;
    /* a value where a key is due */
    fdl__json_init(&j, &b, 0);
    fdl__json_object_begin(&j);
    fdl__json_int(&j, 1);
    fdl__json_object_end(&j);
    cr_assert(!fdl__json_finish(&j));
    fdl__buf_free(&b);
    /* an end that does not match */
    fdl__json_init(&j, &b, 0);
    fdl__json_array_begin(&j);
    fdl__json_object_end(&j);
    cr_assert(!fdl__json_finish(&j));
    fdl__buf_free(&b);
    /* unfinished, and two top-level values */
    fdl__json_init(&j, &b, 0);
    fdl__json_array_begin(&j);
    cr_assert(!fdl__json_finish(&j));
    fdl__buf_free(&b);
    fdl__json_init(&j, &b, 0);
    fdl__json_int(&j, 1);
    fdl__json_int(&j, 2);
    cr_assert(!fdl__json_finish(&j));
    fdl__buf_free(&b);
    /* too deep */
    fdl__json_init(&j, &b, 0);
    for (int i = 0; i <= FDL__JSON_DEPTH_MAX; i++)
        fdl__json_array_begin(&j);
    cr_assert(j.bad);
    fdl__buf_free(&b);
}
