/*
 * The directory tier of the link cache: entries looked up in the cache directory (checked, the
 * bad ones removed and counted, the unsigned ones kept but not served under a key), stored there
 * (then evicted down to the bound), adopted from elsewhere (a remote, a bundle), and the
 * directory's counters ("<dir>/stats": one byte per event, O_APPEND, no lock). A hit is kept in
 * the memory tier too. The chain over the tiers (cache.c) calls it; it calls no other tier.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cacheint.h"
#include "dirfiles.h"
#include "entry.h"
#include "internal.h"
#include "tier_dir.h"
#include "tier_memory.h"

/* The directory cannot be used: say why once, and leave it alone from now on. */
static void unusable(fdl__cache_use *u, const char *what, int errnum)
{
    if (!u->warning[0])
        snprintf(u->warning, sizeof u->warning, "cache directory %.300s %s (%s); linking "
                 "without it", u->dir, what, strerror(errnum));
    free(u->dir);
    u->dir = NULL;
}

/* Say once, in the warning of @p u, that @p name in the directory was left alone. */
static void ignored(fdl__cache_use *u, const char *name, const char *what)
{
    if (!u->warning[0] && what[0])
        snprintf(u->warning, sizeof u->warning,
                 "cache directory %.300s: ignored %s, %s (fdlink reads and replaces only regular "
                 "files there, and follows no symlink)", u->dir, name, what);
}

int fdl__cache_count(const char *dir, char event)
{
    return fdl__cache_append(dir, FDL__CACHE_STATS, &event, 1);
}

static void count(fdl__cache_use *u, char event)
{
    if (event != 'h' && u->quiet_misses)
        return; /* a second look of the same link (fdl__cache_lease_take): counted once */
    if (fdl__cache_count(u->dir, event) < 0)
        ignored(u, FDL__CACHE_STATS, "not a regular file");
}

fdl_cache_result fdl__cache_dir_get(fdl__cache_use *u, uint32_t kind,
                                    const unsigned char key[FDL__CACHE_KEY_SIZE],
                                    fdl__cache_sections *out)
{
    memset(out, 0, sizeof *out);
    if (!u->dir)
        return FDL_CACHE_UNUSED;
    int made = fdl__cdir_make(u->dir);
    if (made != 1) {
        unusable(u, made < 0 ? "is not a directory" : "cannot be created", errno);
        return FDL_CACHE_UNUSED;
    }
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" FDL__ENTRY_SUFFIX, hex);
    fdl_cache_result result = FDL_CACHE_MISS;
    unsigned char *b = NULL;
    size_t n = 0;
    const char *what = "";
    int dfd = fdl__cdir_open(u->dir);
    int got = dfd < 0 ? 0 : fdl__cdir_read(dfd, name, &b, &n, &what);
    if (got != 1) {
        if (got < 0)
            ignored(u, name, what); /* a miss; the store renames a good entry over it */
        count(u, 'm');
        goto cleanup;
    }
    uint32_t got_kind = 0;
    const char *problem = fdl__entry_check(b, n, key, &got_kind, u->payload);
    if (!problem[0] && got_kind != kind)
        problem = "another kind";
    if (problem[0]) {
        unlinkat(dfd, name, 0); /* a bad entry is removed, counted, and computed afresh */
        count(u, 'c');
        count(u, 'm');
        goto cleanup;
    }
    if (!fdl__entry_signed_ok(u, b, n)) {
        /* kept: a reader without the key may use it; this one links and signs its own */
        count(u, 'u');
        count(u, 'm');
        goto cleanup;
    }
    /* mark it used (least recently used go first): by name, never through a symlink */
    utimensat(dfd, name, NULL, AT_SYMLINK_NOFOLLOW);
    uint32_t nsecs = fdl__entry_nsecs(b);
    size_t psize = fdl__entry_payload_size(b, n);
    fdl__cache_mem_put(kind, key, b + FDL__ENTRY_HEADER, psize, nsecs);
    if (fdl__entry_split(out, b, b + FDL__ENTRY_HEADER, psize, nsecs)) {
        b = NULL;
        result = FDL_CACHE_HIT_DISK;
        count(u, 'h');
    }
cleanup:
    if (dfd >= 0)
        close(dfd);
    free(b);
    return result;
}

void fdl__cache_dir_put(fdl__cache_use *u, const unsigned char key[FDL__CACHE_KEY_SIZE],
                        const unsigned char *b, size_t n)
{
    if (!u->dir || n > u->max_size) /* too large: would be evicted at once */
        return;
    int made = fdl__cdir_make(u->dir);
    if (made != 1) {
        unusable(u, made < 0 ? "is not a directory" : "cannot be created", errno);
        return;
    }
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" FDL__ENTRY_SUFFIX, hex);
    const char *what;
    int wrote = fdl__cdir_write(u->dir, name, b, n, &what);
    if (wrote == -2) {
        if (!u->warning[0])
            snprintf(u->warning, sizeof u->warning,
                     "cache directory %.300s: %s not stored: its temporary file was removed "
                     "while it was written (by a cache clear or another user)", u->dir, name);
        return;
    }
    if (wrote < 0) {
        ignored(u, name, what);
        return;
    }
    if (!wrote) {
        int e = errno;
        unusable(u, e == ENOSPC || e == EDQUOT ? "is full" : "cannot be written to", e);
        return;
    }
    fdl__cdir_listing s;
    if (fdl__cdir_scan(u->dir, &s))
        fdl__cdir_evict(u->dir, &s, u->max_size);
    fdl__cdir_scan_free(&s);
}


int fdl__cache_adopt(fdl__cache_use *u, uint32_t kind, const unsigned char *want_key,
                     const unsigned char *b, size_t n, fdl__cache_sections *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    uint32_t got_kind = 0;
    if (fdl__entry_check(b, n, want_key, &got_kind, u->payload)[0] || (kind && got_kind != kind))
        return 'c';
    if (!fdl__entry_signed_ok(u, b, n))
        return 'u';
    unsigned char key[FDL__CACHE_KEY_SIZE];
    fdl__cache_entry_key(b, n, key);
    uint32_t nsecs = fdl__entry_nsecs(b);
    size_t psize = fdl__entry_payload_size(b, n);
    fdl__cache_mem_put(got_kind, key, b + FDL__ENTRY_HEADER, psize, nsecs);
    if (out) {
        unsigned char *copy = malloc(psize ? psize : 1);
        if (!copy)
            return 'c';
        if (psize)
            memcpy(copy, b + FDL__ENTRY_HEADER, psize);
        if (!fdl__entry_split(out, copy, copy, psize, nsecs))
            return 'c';
    }
    if (!u->dir || n > u->max_size || fdl__cdir_make(u->dir) != 1)
        return 'w';
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" FDL__ENTRY_SUFFIX, hex);
    const char *what;
    return fdl__cdir_write(u->dir, name, b, n, &what) == 1 ? 'g' : 'w';
}

void fdl__cache_dir_forget(const char *dir, const unsigned char key[FDL__CACHE_KEY_SIZE])
{
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" FDL__ENTRY_SUFFIX, hex);
    fdl__cdir_unlink(dir, name); /* absent already: nothing to do */
}
