/*
 * The name index shared by the declaration sets and the PTX scanner (internal.h): open addressing
 * with linear probing over entry positions and 32 hash bits kept in each slot, at most half
 * full. Names are hashed eight bytes at a time (fdl__name_hash); fdl__hash (FNV-1a) stays the
 * hash of byte strings elsewhere.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

uint64_t fdl__hash(const char *s, size_t n)
{
    uint64_t h = 14695981039346656037u; /* FNV-1a 64-bit offset basis */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211u; /* FNV-1a 64-bit prime */
    }
    return h;
}

/* One step of the name hash: fold in 64 bits, multiply, bring the high half down. */
static inline uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9E3779B97F4A7C15u;
    return h ^ (h >> 32);
}

uint64_t fdl__name_hash(const char *s, size_t n)
{
    uint64_t h = (uint64_t)n * 0xBF58476D1CE4E5B9u, w;
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            memcpy(&w, s + i, 8);
            h = mix(h, w);
        }
        if (i < n) { /* the last eight bytes, overlapping the word before */
            memcpy(&w, s + n - 8, 8);
            h = mix(h, w);
        }
    } else if (n >= 4) { /* two four-byte words, overlapping when n < 8 */
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        h = mix(h, (uint64_t)a << 32 | b);
    } else if (n) {
        h = mix(h, (uint64_t)(unsigned char)s[0] << 16 | (uint64_t)(unsigned char)s[n / 2] << 8 |
                       (unsigned char)s[n - 1]);
    }
    h *= 0x94D049BB133111EBu;
    return h ^ (h >> 31);
}

/* The entry named by @key(@owner, @e) is s[0..n). */
static inline int key_is(fdl__key_fn key, const void *owner, size_t e, const char *s, size_t n)
{
    const char *name = key(owner, e);
    /* strncmp stops at a NUL in name, so name[n] is read only when name has n bytes before it */
    return strncmp(name, s, n) == 0 && name[n] == '\0';
}

/* The slot's position comes from the same 32 bits of the hash that the slot keeps. */
static inline uint64_t *probe(uint64_t *slots, size_t mask, uint32_t tag, const char *s,
                              size_t n, fdl__key_fn key, const void *owner)
{
    size_t k = (size_t)tag & mask;
    for (;;) {
        uint64_t v = slots[k];
        if (!v || ((uint32_t)(v >> 32) == tag && key_is(key, owner, fdl__index_entry(v), s, n)))
            return &slots[k];
        k = (k + 1) & mask;
    }
}

static inline uint32_t tag_of(const char *s, size_t n)
{
    return (uint32_t)(fdl__name_hash(s, n) >> 32);
}

int fdl__index_reserve(fdl__index *ix, size_t count)
{
    size_t nslots = ix->slots ? ix->mask + 1 : 0;
    size_t need;
    if (count >= UINT32_MAX || !fdl__size_mul(&need, count, 2))
        return 0;
    if (need <= nslots)
        return 1;
    size_t n = nslots ? nslots : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / sizeof(uint64_t))
            return 0;
        n *= 2;
    }
    uint64_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return 0;
    /* every entry moves by the hash bits it keeps; names are distinct, so none is compared */
    for (size_t k = 0; k < nslots; k++) {
        uint64_t v = ix->slots[k];
        if (!v)
            continue;
        size_t j = (size_t)(v >> 32) & (n - 1);
        while (slots[j])
            j = (j + 1) & (n - 1);
        slots[j] = v;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->mask = n - 1;
    return 1;
}

uint64_t *fdl__index_slot(const fdl__index *ix, const char *s, size_t n, fdl__key_fn key,
                          const void *owner, uint64_t *tag)
{
    uint32_t t = tag_of(s, n);
    *tag = (uint64_t)t << 32;
    return probe(ix->slots, ix->mask, t, s, n, key, owner);
}

size_t fdl__index_find(const fdl__index *ix, const char *s, size_t n, fdl__key_fn key,
                       const void *owner)
{
    if (!ix->slots)
        return SIZE_MAX;
    return fdl__index_entry(*probe(ix->slots, ix->mask, tag_of(s, n), s, n, key, owner));
}

void fdl__index_free(fdl__index *ix)
{
    free(ix->slots);
    ix->slots = NULL;
    ix->mask = 0;
}
