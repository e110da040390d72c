/*
 * The link cache's keys (issue 33: cache/ by concern): a key builder over XXH3-128 of tagged
 * fields (fdl__keyb_*, cacheint.h), and a key's hex form both ways.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cacheint.h"
#include "fdlink/version.h"

struct fdl__keyb {
    XXH3_state_t *st;
    int oom;
};

fdl__keyb *fdl__keyb_new(uint32_t kind)
{
    fdl__keyb *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->st = XXH3_createState();
    if (!k->st || XXH3_128bits_reset(k->st) != XXH_OK) {
        fdl__keyb_free(k);
        return NULL;
    }
    fdl__keyb_u64(k, 0x464f524d /* FORM */, FDL__CACHE_FORMAT);
    fdl__keyb_u64(k, 0x4b494e44 /* KIND */, kind);
    fdl__keyb_str(k, 0x56455253 /* VERS */, FDLINK_VERSION_STRING);
    return k;
}

void fdl__keyb_bytes(fdl__keyb *k, uint32_t tag, const void *data, size_t size)
{
    unsigned char head[13];
    fdl__cache_put32(head, tag);
    head[4] = 1; /* present */
    fdl__cache_put64(head + 5, (uint64_t)size);
    if (XXH3_128bits_update(k->st, head, sizeof head) != XXH_OK ||
        (size && XXH3_128bits_update(k->st, data, size) != XXH_OK))
        k->oom = 1;
}

void fdl__keyb_str(fdl__keyb *k, uint32_t tag, const char *s)
{
    if (s) {
        fdl__keyb_bytes(k, tag, s, strlen(s));
        return;
    }
    unsigned char head[13] = {0};
    fdl__cache_put32(head, tag); /* head[4] == 0: absent */
    if (XXH3_128bits_update(k->st, head, sizeof head) != XXH_OK)
        k->oom = 1;
}

void fdl__keyb_u64(fdl__keyb *k, uint32_t tag, uint64_t v)
{
    unsigned char b[8];
    fdl__cache_put64(b, v);
    fdl__keyb_bytes(k, tag, b, sizeof b);
}

int fdl__keyb_finish(fdl__keyb *k, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    int ok = k && !k->oom;
    if (ok) {
        XXH128_canonical_t c;
        XXH128_canonicalFromHash(&c, XXH3_128bits_digest(k->st));
        memcpy(key, c.digest, FDL__CACHE_KEY_SIZE);
    }
    fdl__keyb_free(k);
    return ok;
}

void fdl__keyb_free(fdl__keyb *k)
{
    if (!k)
        return;
    XXH3_freeState(k->st);
    free(k);
}

void fdl__cache_key_hex(const unsigned char key[FDL__CACHE_KEY_SIZE], char hex[33])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < FDL__CACHE_KEY_SIZE; i++) {
        hex[2 * i] = digits[key[i] >> 4];
        hex[2 * i + 1] = digits[key[i] & 15];
    }
    hex[32] = '\0';
}

int fdl__cache_key_from_hex(const char *hex, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    for (int i = 0; i < 2 * FDL__CACHE_KEY_SIZE; i++) {
        char c = hex[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return 0;
        if (i % 2 == 0)
            key[i / 2] = (unsigned char)(v << 4);
        else
            key[i / 2] |= (unsigned char)v;
    }
    return 1;
}
