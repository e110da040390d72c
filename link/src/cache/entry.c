/*
 * Entries of the link cache (the directory's files, the remotes' values, bundles' members, and
 * the memory tier's payloads): the codec, the checks every reader makes, and signatures. No I/O.
 *
 * Entry file, little-endian:
 *   0  magic "FDLCACHE"        8  format (u32)        12 kind (u32)
 *   16 key (16 bytes)          32 payload length (u64) 40 sections (u32)   44 flags (u32)
 *   48 XXH3-128 of bytes 0..47 and of the payload (canonical, 16 bytes)
 *   64 payload: per section a length (u64) and its bytes
 *   then, when flags has FLAG_SIGNED: HMAC-SHA256 (32 bytes) of everything before it, under the
 *   signing key (FDLINK_CACHE_KEY_FILE; sign.c)
 *
 * A memo (memo.c) is an entry of kind FDL__CACHE_MEMO, checked the same way.
 * xxHash is used header-only (XXH_INLINE_ALL): no run-time dependency.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cacheint.h"
#include "entry.h"
#include "internal.h"
#include "sign.h"

#define FLAG_SIGNED 1u

static const unsigned char MAGIC[8] = {'F', 'D', 'L', 'C', 'A', 'C', 'H', 'E'};

/* ---- entries ----------------------------------------------------------------------------- */
void fdl__cache_sections_free(fdl__cache_sections *s)
{
    free(s->buf);
    memset(s, 0, sizeof *s);
}

static void checksum(const unsigned char *header, const unsigned char *payload, size_t n,
                     unsigned char out[16])
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    XXH3_128bits_update(&st, header, 48);
    XXH3_128bits_update(&st, payload, n);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
    memcpy(out, c.digest, 16);
}

unsigned char *fdl__entry_encode(uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE],
                                 const unsigned char *const *secs, const size_t *lens,
                                 size_t nsecs, size_t *size)
{
    size_t payload = 0, total;
    for (size_t i = 0; i < nsecs; i++)
        if (!fdl__size_add(&payload, payload, 8) || !fdl__size_add(&payload, payload, lens[i]))
            return NULL;
    if (!fdl__size_add(&total, payload, FDL__ENTRY_HEADER))
        return NULL;
    unsigned char *b = malloc(total);
    if (!b)
        return NULL;
    memset(b, 0, FDL__ENTRY_HEADER);
    memcpy(b, MAGIC, 8);
    fdl__cache_put32(b + 8, FDL__CACHE_FORMAT);
    fdl__cache_put32(b + 12, kind);
    memcpy(b + 16, key, FDL__CACHE_KEY_SIZE);
    fdl__cache_put64(b + 32, (uint64_t)payload);
    fdl__cache_put32(b + 40, (uint32_t)nsecs);
    size_t at = FDL__ENTRY_HEADER;
    for (size_t i = 0; i < nsecs; i++) {
        fdl__cache_put64(b + at, (uint64_t)lens[i]);
        at += 8;
        if (lens[i])
            memcpy(b + at, secs[i], lens[i]);
        at += lens[i];
    }
    checksum(b, b + FDL__ENTRY_HEADER, payload, b + 48);
    *size = total;
    return b;
}

int fdl__entry_split(fdl__cache_sections *out, unsigned char *buf, const unsigned char *payload,
                     size_t n, uint32_t nsecs)
{
    memset(out, 0, sizeof *out);
    out->buf = buf;
    if (nsecs > FDL__CACHE_MAX_SECTIONS)
        goto bad;
    size_t at = 0;
    for (uint32_t i = 0; i < nsecs; i++) {
        if (n - at < 8)
            goto bad;
        uint64_t len = fdl__cache_get64(payload + at);
        at += 8;
        if (len > n - at)
            goto bad;
        out->p[i] = payload + at;
        out->len[i] = (size_t)len;
        at += (size_t)len;
    }
    if (at != n)
        goto bad;
    out->n = nsecs;
    return 1;
bad:
    fdl__cache_sections_free(out);
    return 0;
}

/*
 * Check a whole entry file: "" when good (then *kind_out and the payload's place are set), else
 * the problem. @p want_key NULL accepts any key.
 */
static const char *check_any_entry(const unsigned char *b, size_t n,
                                   const unsigned char *want_key, uint32_t *kind_out, int memo,
                                   fdl__cache_payload_fn payload)
{
    if (n == 0)
        return "empty";
    if (n < FDL__ENTRY_HEADER)
        return memcmp(b, MAGIC, n < 8 ? n : 8) == 0 ? "truncated header"
                                                     : "not an fdlink cache entry";
    if (memcmp(b, MAGIC, 8) != 0)
        return "not an fdlink cache entry";
    if (fdl__cache_get32(b + 8) != FDL__CACHE_FORMAT)
        return "another format version";
    uint32_t kind = fdl__cache_get32(b + 12);
    if (memo ? kind != FDL__CACHE_MEMO
             : kind != FDL__CACHE_LINK && kind != FDL__CACHE_NVRTC && kind != FDL__CACHE_CHECK &&
                   kind != FDL__CACHE_NVVM)
        return "unknown kind";
    if (want_key && memcmp(b + 16, want_key, FDL__CACHE_KEY_SIZE) != 0)
        return "key differs from its file name";
    uint32_t flags = fdl__cache_get32(b + 44);
    if (flags & ~FLAG_SIGNED)
        return "unknown flags";
    if (flags & FLAG_SIGNED) {
        if (n - FDL__ENTRY_HEADER < FDL__TAG_SIZE)
            return "truncated";
        n -= FDL__TAG_SIZE; /* the tag: fdl__entry_signed_ok's */
    }
    if (fdl__cache_get64(b + 32) != (uint64_t)(n - FDL__ENTRY_HEADER))
        return fdl__cache_get64(b + 32) > (uint64_t)(n - FDL__ENTRY_HEADER) ? "truncated"
                                                                             : "trailing bytes";
    unsigned char sum[16];
    checksum(b, b + FDL__ENTRY_HEADER, n - FDL__ENTRY_HEADER, sum);
    if (memcmp(sum, b + 48, 16) != 0)
        return "checksum mismatch";
    fdl__cache_sections s;
    unsigned char *none = NULL;
    if (!fdl__entry_split(&s, none, b + FDL__ENTRY_HEADER, n - FDL__ENTRY_HEADER,
                          fdl__cache_get32(b + 40)))
        return "section lengths disagree";
    if (!memo && payload) {
        /* the payload as what it stands for: a hit is served as an input would be accepted */
        const char *bad = payload(kind, &s);
        if (bad[0])
            return bad;
    }
    *kind_out = kind;
    return "";
}

/* ---- signatures ------------------------------------------------------------------------- */
size_t fdl__entry_payload_size(const unsigned char *b, size_t n)
{
    (void)n;
    return (size_t)fdl__cache_get64(b + 32);
}

int fdl__entry_sign(const fdl__cache_use *u, unsigned char **b, size_t *n)
{
    size_t total;
    if (!fdl__size_add(&total, *n, FDL__TAG_SIZE))
        return 0;
    unsigned char *g = realloc(*b, total);
    if (!g)
        return 0;
    *b = g;
    fdl__cache_put32(g + 44, fdl__cache_get32(g + 44) | FLAG_SIGNED);
    checksum(g, g + FDL__ENTRY_HEADER, *n - FDL__ENTRY_HEADER, g + 48);
    if (!fdl__hmac_sha256(u->sign_key, u->sign_key_len, g, *n, g + *n))
        return 0;
    *n = total;
    return 1;
}

int fdl__entry_signed_ok(const fdl__cache_use *u, const unsigned char *b, size_t n)
{
    if (!u->sign_key)
        return 1;
    if (!(fdl__cache_get32(b + 44) & FLAG_SIGNED) || n < FDL__ENTRY_HEADER + FDL__TAG_SIZE)
        return 0;
    unsigned char tag[FDL__TAG_SIZE];
    return fdl__hmac_sha256(u->sign_key, u->sign_key_len, b, n - FDL__TAG_SIZE, tag) &&
           fdl__tag_equal(tag, b + n - FDL__TAG_SIZE);
}

const char *fdl__entry_check(const unsigned char *b, size_t n, const unsigned char *want_key,
                             uint32_t *kind_out, fdl__cache_payload_fn payload)
{
    return check_any_entry(b, n, want_key, kind_out, 0, payload);
}

const char *fdl__entry_check_memo(const unsigned char *b, size_t n, const unsigned char *want_key)
{
    uint32_t kind = 0;
    return check_any_entry(b, n, want_key, &kind, 1, NULL);
}

uint32_t fdl__entry_nsecs(const unsigned char *b)
{
    return fdl__cache_get32(b + 40);
}

uint32_t fdl__entry_kind_of(const unsigned char *b, size_t n)
{
    if (n < 16 || memcmp(b, MAGIC, 8) != 0)
        return 0;
    return fdl__cache_get32(b + 12);
}

const char *fdl__cache_check(const unsigned char *b, size_t n,
                             const unsigned char want_key[FDL__CACHE_KEY_SIZE],
                             fdl__cache_payload_fn payload)
{
    uint32_t kind = 0;
    return fdl__entry_check(b, n, want_key, &kind, payload);
}

int fdl__cache_entry_key(const unsigned char *b, size_t n, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    if (n < FDL__ENTRY_HEADER)
        return 0;
    memcpy(key, b + 16, FDL__CACHE_KEY_SIZE);
    return 1;
}
