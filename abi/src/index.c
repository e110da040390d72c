/*
 * The name index shared by the declaration sets and the PTX scanner (internal.h): open addressing
 * with linear probing over entry positions, at most half full. Names are hashed eight bytes at a
 * time (fdl__name_hash); fdl__hash (FNV-1a) stays the hash of byte strings elsewhere.
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

/* The entry named by @key(@owner, @e - 1) is s[0..n). */
static inline int key_is(fdl__key_fn key, const void *owner, size_t e, const char *s, size_t n)
{
    const char *name = key(owner, e - 1);
    /* the first byte at once (most mismatches); strncmp stops at a NUL in name, so name[n] is
     * read only when name has n bytes before it */
    if (n == 0)
        return name[0] == '\0';
    return name[0] == s[0] && strncmp(name, s, n) == 0 && name[n] == '\0';
}

static inline size_t *probe(size_t *slots, size_t mask, uint64_t hash, const char *s, size_t n,
                            fdl__key_fn key, const void *owner)
{
    size_t k = (size_t)hash & mask;
    while (slots[k] && !key_is(key, owner, slots[k], s, n))
        k = (k + 1) & mask;
    return &slots[k];
}

int fdl__index_reserve(fdl__index *ix, size_t count, fdl__key_fn key, const void *owner)
{
    size_t nslots = ix->slots ? ix->mask + 1 : 0;
    size_t need;
    if (!fdl__size_mul(&need, count, 2))
        return 0;
    if (need <= nslots)
        return 1;
    size_t n = nslots ? nslots : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return 0;
        n *= 2;
    }
    size_t *slots = calloc(n, sizeof *slots);
    if (!slots)
        return 0;
    for (size_t k = 0; k < nslots; k++) {
        size_t e = ix->slots[k];
        if (!e)
            continue;
        const char *name = key(owner, e - 1);
        size_t len = strlen(name);
        *probe(slots, n - 1, fdl__name_hash(name, len), name, len, key, owner) = e;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->mask = n - 1;
    return 1;
}

size_t *fdl__index_slot(const fdl__index *ix, const char *s, size_t n, fdl__key_fn key,
                        const void *owner)
{
    return probe(ix->slots, ix->mask, fdl__name_hash(s, n), s, n, key, owner);
}

size_t *fdl__index_slot_hashed(const fdl__index *ix, uint64_t hash, const char *s, size_t n,
                               fdl__key_fn key, const void *owner)
{
    return probe(ix->slots, ix->mask, hash, s, n, key, owner);
}

size_t fdl__index_find(const fdl__index *ix, const char *s, size_t n, fdl__key_fn key,
                       const void *owner)
{
    if (!ix->slots)
        return SIZE_MAX;
    size_t e = *probe(ix->slots, ix->mask, fdl__name_hash(s, n), s, n, key, owner);
    return e ? e - 1 : SIZE_MAX;
}

void fdl__index_free(fdl__index *ix)
{
    free(ix->slots);
    ix->slots = NULL;
    ix->mask = 0;
}
