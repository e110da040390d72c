/* The JSON writer (json.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

/* The length of the well-formed UTF-8 sequence at s[0..n) (RFC 3629, table 3-7 of Unicode), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* no overlong forms */
        else if (c == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F; /* at most U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

int fdl__json_escape(fdl__buf *b, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n;) {
        unsigned char c = s[i];
        const char *esc = NULL;
        char u[8];
        size_t len = 1;
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
            run++;
            i++;
            continue;
        }
        if (c >= 0x80 && (len = utf8_len(s + i, n - i)) != 0) {
            /* U+2028 and U+2029 (E2 80 A8/A9): valid JSON, but not valid JavaScript */
            if (!(len == 3 && c == 0xE2 && s[i + 1] == 0x80 && (s[i + 2] & 0xFE) == 0xA8)) {
                run += len;
                i += len;
                continue;
            }
            snprintf(u, sizeof u, "\\u%04x", s[i + 2] == 0xA8 ? 0x2028 : 0x2029);
            esc = u;
        } else if (c >= 0x80) {
            esc = "\xEF\xBF\xBD"; /* U+FFFD for one byte of an ill-formed sequence */
            len = 1;
        } else if (c == '"')
            esc = "\\\"";
        else if (c == '\\')
            esc = "\\\\";
        else if (c == '\b')
            esc = "\\b";
        else if (c == '\f')
            esc = "\\f";
        else if (c == '\n')
            esc = "\\n";
        else if (c == '\r')
            esc = "\\r";
        else if (c == '\t')
            esc = "\\t";
        else {
            snprintf(u, sizeof u, "\\u%04x", c); /* the other controls and DEL */
            esc = u;
        }
        if (run && !fdl__buf_append(b, text + i - run, run))
            return 0;
        run = 0;
        if (!fdl__buf_puts(b, esc))
            return 0;
        i += len;
    }
    return !run || fdl__buf_append(b, text + n - run, run);
}

void fdl__json_init(fdl__json *j, fdl__buf *out, int indent)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->indent = indent < 0 ? 0 : indent > 8 ? 8 : indent;
}

static void newline(fdl__json *j)
{
    if (!j->indent)
        return;
    fdl__buf_puts(j->out, "\n");
    for (unsigned i = 0; i < j->depth * (unsigned)j->indent; i++)
        fdl__buf_puts(j->out, " ");
}

/* Before any value or key: the separator it needs; 0 when the writer may not write it. */
static int before(fdl__json *j, int is_key)
{
    if (j->bad || j->done)
        return j->bad = 1, 0;
    if (j->depth == 0)
        return !is_key || (j->bad = 1, 0);
    unsigned d = j->depth - 1;
    if (j->kind[d] == 'o' && is_key == j->want_value)
        return j->bad = 1, 0; /* a value without a key, or two keys in a row */
    if (j->kind[d] == 'a' && is_key)
        return j->bad = 1, 0;
    if (j->want_value) {
        j->want_value = 0;
        return 1;
    }
    if (j->count[d])
        fdl__buf_puts(j->out, j->indent ? "," : ", ");
    j->count[d] = 1;
    newline(j);
    return 1;
}

static void after_value(fdl__json *j)
{
    if (j->depth == 0)
        j->done = 1;
}

static void begin(fdl__json *j, char kind)
{
    if (!before(j, 0))
        return;
    if (j->depth >= FDL__JSON_DEPTH_MAX) {
        j->bad = 1;
        return;
    }
    fdl__buf_puts(j->out, kind == 'o' ? "{" : "[");
    j->kind[j->depth] = (unsigned char)kind;
    j->count[j->depth] = 0;
    j->depth++;
}

static void end(fdl__json *j, char kind)
{
    if (j->bad || j->depth == 0 || j->kind[j->depth - 1] != (unsigned char)kind || j->want_value) {
        j->bad = 1;
        return;
    }
    int empty = !j->count[j->depth - 1];
    j->depth--;
    if (!empty)
        newline(j);
    fdl__buf_puts(j->out, kind == 'o' ? "}" : "]");
    after_value(j);
}

void fdl__json_object_begin(fdl__json *j) { begin(j, 'o'); }
void fdl__json_object_end(fdl__json *j) { end(j, 'o'); }
void fdl__json_array_begin(fdl__json *j) { begin(j, 'a'); }
void fdl__json_array_end(fdl__json *j) { end(j, 'a'); }

void fdl__json_key(fdl__json *j, const char *key)
{
    if (!key || !before(j, 1)) {
        j->bad = 1;
        return;
    }
    fdl__buf_puts(j->out, "\"");
    fdl__json_escape(j->out, key, strlen(key));
    fdl__buf_puts(j->out, "\": ");
    j->want_value = 1;
}

/* A value written as it is (numbers, true, false, null). */
static void raw(fdl__json *j, const char *text)
{
    if (!before(j, 0))
        return;
    fdl__buf_puts(j->out, text);
    after_value(j);
}

void fdl__json_string_n(fdl__json *j, const char *s, size_t n)
{
    if (!s) {
        raw(j, "null");
        return;
    }
    if (!before(j, 0))
        return;
    fdl__buf_puts(j->out, "\"");
    fdl__json_escape(j->out, s, n);
    fdl__buf_puts(j->out, "\"");
    after_value(j);
}

void fdl__json_string(fdl__json *j, const char *s)
{
    fdl__json_string_n(j, s, s ? strlen(s) : 0);
}

void fdl__json_int(fdl__json *j, long long v)
{
    char t[32];
    snprintf(t, sizeof t, "%lld", v);
    raw(j, t);
}

void fdl__json_uint(fdl__json *j, unsigned long long v)
{
    char t[32];
    snprintf(t, sizeof t, "%llu", v);
    raw(j, t);
}

void fdl__json_double(fdl__json *j, double v)
{
    char t[40];
    if (!isfinite(v)) {
        raw(j, "null");
        return;
    }
    snprintf(t, sizeof t, "%.17g", v);
    /* %.17g is exact but long: the shortest of 15..17 digits that reads back the same */
    for (int p = 15; p < 17; p++) {
        char s[40];
        snprintf(s, sizeof s, "%.*g", p, v);
        if (strtod(s, NULL) == v) {
            memcpy(t, s, sizeof t);
            break;
        }
    }
    raw(j, t);
}

void fdl__json_bool(fdl__json *j, int v) { raw(j, v ? "true" : "false"); }
void fdl__json_null(fdl__json *j) { raw(j, "null"); }

void fdl__json_member_string(fdl__json *j, const char *key, const char *value)
{
    fdl__json_key(j, key);
    fdl__json_string(j, value);
}

void fdl__json_member_int(fdl__json *j, const char *key, long long v)
{
    fdl__json_key(j, key);
    fdl__json_int(j, v);
}

void fdl__json_member_uint(fdl__json *j, const char *key, unsigned long long v)
{
    fdl__json_key(j, key);
    fdl__json_uint(j, v);
}

void fdl__json_member_bool(fdl__json *j, const char *key, int v)
{
    fdl__json_key(j, key);
    fdl__json_bool(j, v);
}

int fdl__json_finish(fdl__json *j)
{
    if (!j->bad && j->done)
        fdl__buf_puts(j->out, "\n");
    return !j->bad && j->done && !j->out->oom;
}
