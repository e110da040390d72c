/*
 * Cache bundles: the entries of a cache directory (all, or those of given keys) as one file, and
 * that file's entries added to a directory, each checked on the way in as a remote's answer is
 * (fdl__cache_adopt: header, lengths, checksum, and with a signing key its tag).
 *
 * Bundle file, little-endian:
 *   0  magic "FDLBUNDL"   8 format (u32) = 1   12 entries (u32)
 *   16 per entry: its length (u64) and the entry file's bytes, whole (signed ones with their tag)
 *   end: XXH3-128 of everything before it (canonical, 16 bytes)
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cacheint.h"
#include "fdlink/cache.h"
#include "internal.h"
#include "libs.h"
#include "linkobj.h"
#include "nvjl.h"

#define BUNDLE_FORMAT 1u
#define HEAD 16
#define MAX_ENTRIES 1000000u

static const unsigned char BMAGIC[8] = {'F', 'D', 'L', 'B', 'U', 'N', 'D', 'L'};

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void digest(const unsigned char *b, size_t n, unsigned char out[16])
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(b, n));
    memcpy(out, c.digest, 16);
}

/*
 * A mapped bundle's pages from @p from to @p to given back once read (bounded memory: the pages
 * of a mapping stay resident until released, and a bundle may be gigabytes).
 */
static void release_pages(const unsigned char *map, size_t from, size_t to)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t ps = page > 0 ? (size_t)page : 4096;
    size_t a = (from + ps - 1) / ps * ps, z = to / ps * ps;
    if (z > a)
        (void)madvise((void *)(map + a), z - a, MADV_DONTNEED); /* posix_madvise ignores it */
}

/* digest() of a mapped bundle's first @p n bytes, read a window at a time and given back. */
static void digest_mapped(const unsigned char *map, size_t n, unsigned char out[16])
{
    enum { WINDOW = 16 << 20 };
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    for (size_t at = 0; at < n;) {
        size_t k = n - at < WINDOW ? n - at : WINDOW;
        XXH3_128bits_update(&st, map + at, k);
        release_pages(map, at, at + k);
        at += k;
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
    memcpy(out, c.digest, 16);
}

/* The entry file <dir>/<hex>.fdlc, read whole through the one reader (regular files only, no
 * symlink followed, nothing waited on, to its end, bounded as the cache bounds its reads). */
static int read_entry(const char *dir, const char *hex, unsigned char **out, size_t *size)
{
    static const fdl__read_limit limit = {(size_t)1 << 30, "fdlink's limit of 1 GiB per entry"};
    *out = NULL;
    *size = 0;
    fdl__buf path = {0};
    fdl__buf_printf(&path, "%s/%.32s.fdlc", dir, hex);
    char *b = NULL;
    size_t n = 0;
    int ok = !path.oom &&
             fdl__read_at(AT_FDCWD, path.data, FDL__FILE_NOFOLLOW, &limit, &b, &n, NULL) == FDL_OK &&
             n > 0;
    fdl__buf_free(&path);
    if (!ok) {
        free(b);
        return 0;
    }
    *out = (unsigned char *)b;
    *size = n;
    return 1;
}

typedef struct names {
    char **v;
    size_t n, cap;
    int oom;
} names;

static void collect(void *ctx, const fdl_cache_entry *e)
{
    names *l = ctx;
    if (strcmp(e->kind, "temporary") == 0 || strlen(e->name) < 32)
        return;
    char **grown = fdl__grow(l->v, &l->cap, l->n + 1, sizeof *l->v);
    char *name = grown ? fdl__strdup(e->name) : NULL;
    if (grown)
        l->v = grown;
    if (!name) {
        l->oom = 1;
        return;
    }
    name[32] = '\0';
    l->v[l->n++] = name;
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_hex_key(const char *s)
{
    if (strlen(s) != 32)
        return 0;
    for (int i = 0; i < 32; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

int fdl_cache_export(const char *dir, const char *path, const char *const *keys,
                     size_t *exported, fdl_error *err)
{
    if (exported)
        *exported = 0;
    if (!FDL__CHECK_ARG(path))
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_export: path is NULL");
    char d[4096];
    int rc = fdl__cache_admin_dir(dir, d, sizeof d, err);
    if (rc != FDL_OK)
        return rc;
    names l = {0};
    fdl__buf out = {0};
    unsigned char *entry = NULL;
    if (keys) {
        for (size_t i = 0; keys[i]; i++) {
            if (!is_hex_key(keys[i])) {
                rc = fdl__error(err, FDL_EINVAL, NULL, 0, 0, keys[i],
                                "%s: not a cache key (32 lower-case hex digits)", keys[i]);
                goto cleanup;
            }
            fdl_cache_entry e = {keys[i], "link", 0, 0, NULL};
            collect(&l, &e);
        }
    } else if ((rc = fdl_cache_list(d, collect, &l, err)) != FDL_OK) {
        goto cleanup;
    }
    if (l.oom) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    if (l.n > 1)
        qsort(l.v, l.n, sizeof *l.v, by_str); /* the same entries give the same bundle */
    unsigned char head[HEAD] = {0};
    memcpy(head, BMAGIC, 8);
    put32(head + 8, BUNDLE_FORMAT);
    fdl__buf_append(&out, (const char *)head, HEAD);
    uint32_t count = 0;
    for (size_t i = 0; i < l.n; i++) {
        size_t n = 0;
        if (i && strcmp(l.v[i], l.v[i - 1]) == 0)
            continue; /* a key listed twice goes in once */
        unsigned char got[FDL__CACHE_KEY_SIZE];
        int good = read_entry(d, l.v[i], &entry, &n) && fdl__cache_entry_key(entry, n, got);
        if (good) {
            char hex[33];
            fdl__cache_key_hex(got, hex);
            good = strcmp(hex, l.v[i]) == 0 && fdl__cache_check(entry, n, got, fdl__cache_payload_problem)[0] == '\0';
        }
        if (!good) {
            free(entry);
            entry = NULL;
            if (keys) {
                rc = fdl__error(err, FDL_ENOTFOUND, d, 0, 0, l.v[i],
                                "no good entry in the cache directory");
                goto cleanup;
            }
            continue; /* removed or damaged meanwhile: not exported */
        }
        unsigned char len[8];
        for (int k = 0; k < 8; k++)
            len[k] = (unsigned char)((uint64_t)n >> (8 * k));
        fdl__buf_append(&out, (const char *)len, 8);
        fdl__buf_append(&out, (const char *)entry, n);
        free(entry);
        entry = NULL;
        count++;
    }
    if (out.oom) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    put32((unsigned char *)out.data + 12, count);
    unsigned char sum[16];
    digest((const unsigned char *)out.data, out.len, sum);
    fdl__buf_append(&out, (const char *)sum, 16);
    if (out.oom) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    if ((rc = fdl__write_atomic(path, out.data, out.len, err)) != FDL_OK)
        goto cleanup;
    if (exported)
        *exported = count;
cleanup:
    free(entry);
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    fdl__buf_free(&out);
    return rc;
}

int fdl_cache_import(const char *dir, const char *path, size_t *imported, size_t *rejected,
                     size_t *unsigned_forged, fdl_error *err)
{
    if (imported)
        *imported = 0;
    if (rejected)
        *rejected = 0;
    if (unsigned_forged)
        *unsigned_forged = 0;
    if (!FDL__CHECK_ARG(path))
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_import: path is NULL");
    /* mapped, not read: bounded memory whatever the bundle's size (the pages are the file's) */
    int fd = -1;
    size_t n = 0;
    void *map = MAP_FAILED;
    int rc = fdl__open_file(path, &fd, &n, err);
    if (rc != FDL_OK)
        return rc;
    if (n == 0) {
        close(fd);
        return fdl__error(err, FDL_EPARSE, path, 0, 0, NULL, "not an fdlink cache bundle");
    }
    map = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (map == MAP_FAILED)
        return fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot map: %s", strerror(map_errno));
    (void)posix_madvise(map, n, POSIX_MADV_SEQUENTIAL);
    fdl__cache_use u;
    fdl__cache_use_init(&u, FDL_CACHE_ON, dir, "");
    u.payload = fdl__cache_payload_problem;
    const unsigned char *b = map;
    size_t good = 0, bad = 0, forged = 0;
    int nvrtc = 0;
    if (!u.on || !u.dir) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "%s",
                        u.warning[0] ? u.warning : "no cache directory");
        goto cleanup;
    }
    if (n < HEAD + 16 || memcmp(b, BMAGIC, 8) != 0) {
        rc = fdl__error(err, FDL_EPARSE, path, 0, 0, NULL, "not an fdlink cache bundle");
        goto cleanup;
    }
    if (get32(b + 8) != BUNDLE_FORMAT) {
        rc = fdl__error(err, FDL_EPARSE, path, 0, 0, NULL, "byte 8: bundle format %u, not %u",
                        get32(b + 8), BUNDLE_FORMAT);
        goto cleanup;
    }
    unsigned char sum[16];
    digest_mapped(b, n - 16, sum);
    if (memcmp(sum, b + n - 16, 16) != 0) {
        rc = fdl__error(err, FDL_EPARSE, path, 0, 0, NULL, "byte %zu: checksum mismatch (the "
                        "bundle is truncated or damaged)", n - 16);
        goto cleanup;
    }
    uint32_t count = get32(b + 12);
    size_t at = HEAD, end = n - 16;
    if (count > MAX_ENTRIES) {
        rc = fdl__error(err, FDL_EPARSE, path, 0, 0, NULL, "byte 12: %u entries is too many",
                        count);
        goto cleanup;
    }
    /* the whole bundle's structure first: nothing is stored from a bundle that is refused */
    for (uint32_t i = 0; i < count; i++) {
        if (end - at < 8 || get64(b + at) > (uint64_t)(end - at - 8)) {
            rc = fdl__error(err, FDL_EPARSE, path, 0, 0, NULL, "byte %zu: entry %u runs past "
                            "the end of the bundle", at, i + 1);
            goto cleanup;
        }
        at += 8 + (size_t)get64(b + at);
    }
    if (at != end) {
        rc = fdl__error(err, FDL_EPARSE, path, 0, 0, NULL, "byte %zu: bytes after the last "
                        "entry (the bundle says %u)", at, count);
        goto cleanup;
    }
    at = HEAD;
    for (uint32_t i = 0; i < count; i++) {
        size_t len = (size_t)get64(b + at);
        at += 8;
        int verdict = fdl__cache_adopt(&u, 0, NULL, b + at, len, NULL);
        if (verdict == 'w') {
            rc = fdl__error(err, FDL_EIO, u.dir, 0, 0, NULL, "cannot store entry %u of %s: %s",
                            i + 1, path, strerror(errno ? errno : EIO));
            goto cleanup;
        }
        good += verdict == 'g';
        nvrtc |= verdict == 'g' && len >= 16 && get32(b + at + 12) == FDL__CACHE_NVRTC;
        bad += verdict == 'c';
        forged += verdict == 'u';
        release_pages(b, at - 8, at + len);
        at += len;
    }
    /*
     * The first run after an import should load neither library: their versions are in the
     * keys, and a hit learns them from memos of this machine's files (libmemo.c), which a
     * bundle cannot carry. Record them now, at install time (best effort).
     */
    if (good) {
        unsigned char id[FDL__LIBMEMO_ID_SIZE];
        fdl__nvjl_remember(u.dir, id);
        int major = 0, minor = 0;
        if (nvrtc)
            fdl__nvrtc_remember(u.dir, &major, &minor);
    }
cleanup:
    if (imported)
        *imported = good;
    if (rejected)
        *rejected = bad + forged;
    if (unsigned_forged)
        *unsigned_forged = forged;
    fdl__cache_use_free(&u);
    munmap(map, n);
    return rc;
}

int fdl_cache_verify(const char *dir, fdl_cache_entry_fn fn, void *ctx, size_t *bad,
                     fdl_error *err)
{
    /* here, above the cache folder: each payload checked as the link would accept it */
    return fdl__cache_verify(dir, fdl__cache_payload_problem, fn, ctx, bad, err);
}
