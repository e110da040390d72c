/* Vectors of owned strings (strv.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "strv.h"

void fdl__strv_free(fdl__strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

int fdl__strv_push(fdl__strv *s, const char *fmt, const char *arg)
{
    if (s->n + 1 >= s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 8, bytes;
        char **grown = NULL;
        if (ncap > s->cap && fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(s->v, bytes);
        if (!grown)
            return 0;
        s->v = grown;
        s->cap = ncap;
    }
    fdl__buf b = {0};
    if (arg)
        fdl__buf_printf(&b, fmt, arg);
    else
        fdl__buf_puts(&b, fmt);
    if (b.oom)
        return 0;
    s->v[s->n++] = b.data;
    s->v[s->n] = NULL;
    return 1;
}

int fdl__strv_copy(fdl__strv *out, const char *const *in)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; in && in[i]; i++)
        if (!fdl__strv_push(out, in[i], NULL))
            return 0;
    return 1;
}
