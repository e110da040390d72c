/* Strings, checked size arithmetic, growable arrays and byte buffers (internal.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define SP FDL__CC_SPACE
#define ID (FDL__CC_IDENT_START | FDL__CC_IDENT_CHAR)
#define DG FDL__CC_IDENT_CHAR
const unsigned char fdl__char_class[256] = {
    [' '] = SP, ['\t'] = SP, ['\n'] = SP, ['\r'] = SP, ['\v'] = SP, ['\f'] = SP,
    ['_'] = ID,
    ['0'] = DG, ['1'] = DG, ['2'] = DG, ['3'] = DG, ['4'] = DG,
    ['5'] = DG, ['6'] = DG, ['7'] = DG, ['8'] = DG, ['9'] = DG,
    ['a'] = ID, ['b'] = ID, ['c'] = ID, ['d'] = ID, ['e'] = ID, ['f'] = ID, ['g'] = ID,
    ['h'] = ID, ['i'] = ID, ['j'] = ID, ['k'] = ID, ['l'] = ID, ['m'] = ID, ['n'] = ID,
    ['o'] = ID, ['p'] = ID, ['q'] = ID, ['r'] = ID, ['s'] = ID, ['t'] = ID, ['u'] = ID,
    ['v'] = ID, ['w'] = ID, ['x'] = ID, ['y'] = ID, ['z'] = ID,
    ['A'] = ID, ['B'] = ID, ['C'] = ID, ['D'] = ID, ['E'] = ID, ['F'] = ID, ['G'] = ID,
    ['H'] = ID, ['I'] = ID, ['J'] = ID, ['K'] = ID, ['L'] = ID, ['M'] = ID, ['N'] = ID,
    ['O'] = ID, ['P'] = ID, ['Q'] = ID, ['R'] = ID, ['S'] = ID, ['T'] = ID, ['U'] = ID,
    ['V'] = ID, ['W'] = ID, ['X'] = ID, ['Y'] = ID, ['Z'] = ID,
};
#undef SP
#undef ID
#undef DG

int fdl__size_add(size_t *out, size_t a, size_t b)
{
    if (a > SIZE_MAX - b)
        return 0;
    *out = a + b;
    return 1;
}

int fdl__size_mul(size_t *out, size_t a, size_t b)
{
    if (b && a > SIZE_MAX / b)
        return 0;
    *out = a * b;
    return 1;
}

char *fdl__strndup(const char *s, size_t n)
{
    size_t len = 0;
    while (len < n && s[len])
        len++;
    char *p = malloc(len + 1);
    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *fdl__strdup(const char *s)
{
    return fdl__strndup(s, strlen(s));
}

void fdl__strlcpy(char *dst, const char *src, size_t size)
{
    if (!size)
        return;
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void *fdl__grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap && arr)
        return arr;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return NULL;
        ncap *= 2;
    }
    size_t bytes;
    if (!fdl__size_mul(&bytes, ncap, elem))
        return NULL;
    void *p = realloc(arr, bytes ? bytes : 1);
    if (!p)
        return NULL;
    *cap = ncap;
    return p;
}

static int buf_reserve(fdl__buf *b, size_t extra)
{
    size_t need;
    if (b->oom || !fdl__size_add(&need, b->len, extra) || !fdl__size_add(&need, need, 1)) {
        b->oom = 1;
        return 0;
    }
    if (need <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

int fdl__buf_append(fdl__buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return 0;
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 1;
}

int fdl__buf_puts(fdl__buf *b, const char *s)
{
    return fdl__buf_append(b, s, strlen(s));
}

int fdl__buf_printf(fdl__buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    int ok = 0;
    if (n >= 0 && buf_reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
        ok = 1;
    } else {
        b->oom = 1;
    }
    va_end(ap2);
    return ok;
}

void fdl__buf_free(fdl__buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

const char *fdl__quote(char *buf, size_t size, const char *s, size_t n, size_t max)
{
    if (!size)
        return buf;
    size_t keep = n < max ? n : max;
    if (keep > size - 1)
        keep = size - 1;
    /* shortened: make room for "..." when the buffer has any */
    if (keep < n && size > 4 && keep > size - 4)
        keep = size - 4;
    for (size_t i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    buf[keep] = '\0';
    if (keep < n)
        fdl__strlcpy(buf + keep, "...", size - keep);
    return buf;
}

int fdl__is_identifier(const char *s, size_t n)
{
    if (!n || !fdl__is_ident_start((unsigned char)s[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!fdl__is_ident_char((unsigned char)s[i]))
            return 0;
    return 1;
}
