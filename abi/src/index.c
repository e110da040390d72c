/*
 * The name index shared by the declaration sets and the PTX scanner (internal.h): open addressing
 * with linear probing over entry positions, FNV-1a hashing, at most half full.
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

/* The entry named by @key(@owner, @e - 1) is s[0..n). */
static int key_is(fdl__key_fn key, const void *owner, size_t e, const char *s, size_t n)
{
    const char *name = key(owner, e - 1);
    /* strncmp stops at a NUL in name, so name[n] is read only when name has n bytes before it */
    return strncmp(name, s, n) == 0 && name[n] == '\0';
}

static size_t *probe(size_t *slots, size_t mask, const char *s, size_t n, fdl__key_fn key,
                     const void *owner)
{
    size_t k = (size_t)fdl__hash(s, n) & mask;
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
        *probe(slots, n - 1, name, strlen(name), key, owner) = e;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->mask = n - 1;
    return 1;
}

size_t *fdl__index_slot(const fdl__index *ix, const char *s, size_t n, fdl__key_fn key,
                        const void *owner)
{
    return probe(ix->slots, ix->mask, s, n, key, owner);
}

size_t fdl__index_find(const fdl__index *ix, const char *s, size_t n, fdl__key_fn key,
                       const void *owner)
{
    if (!ix->slots)
        return SIZE_MAX;
    size_t e = *probe(ix->slots, ix->mask, s, n, key, owner);
    return e ? e - 1 : SIZE_MAX;
}

void fdl__index_free(fdl__index *ix)
{
    free(ix->slots);
    ix->slots = NULL;
    ix->mask = 0;
}
