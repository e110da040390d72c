/*
 * The remote tier of the link cache, between the directory and a fresh link: a directory miss
 * asks each remote (transport.c) in order; what one answers is checked and adopted as the
 * directory's entries are (fdl__cache_adopt: header, key, kind, checksum, and with a key in
 * force the tag); a new entry goes to every writable remote.
 *
 * A remote never hurts a link: a failure of any kind (down, refusing, slow past its timeouts,
 * garbage, cut off, full) sets the remote aside for the rest of the process, by a process memo
 * of its shown URL (cacheint.h), and says so once, in the use's warning. What is counted goes to
 * "<dir>/remote-stats", one line per event: "<h|m|e|c|u> <shown URL>" (O_APPEND, no lock).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cacheint.h"
#include "dirfiles.h"
#include "internal.h"
#include "tier_remote.h"
#include "transport.h"

void fdl__cache_remote_count(const char *dir, const char *display, char event)
{
    if (!dir)
        return;
    fdl__buf line = {0};
    fdl__buf_printf(&line, "%c %s\n", event, display);
    if (!line.oom && line.len <= 512) /* one write(2): lines never mix */
        fdl__cache_append(dir, FDL__REMOTE_STATS, line.data, line.len);
    fdl__buf_free(&line);
}

/* The process memo that says a remote failed in this process. */
static int down_key(const char *display, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_PMEMO);
    if (!k)
        return 0;
    fdl__keyb_str(k, 0x52444f57 /* RDOW */, display);
    return fdl__keyb_finish(k, key);
}

static int is_down(const char *display)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    return down_key(display, key) && fdl__cache_pmemo_known(key);
}

/* Set the remote aside for the process, count the error, and say so once. */
static void set_aside(fdl__cache_use *u, const char *display, const char *why)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    if (down_key(display, key))
        fdl__cache_pmemo_put(key);
    fdl__cache_remote_count(u->dir, display, 'e');
    if (!u->warning[0])
        snprintf(u->warning, sizeof u->warning, "cache remote %.200s: %.200s; not used again by "
                 "this process", display, why);
}

/* An entry may be as large as the directory's bound allows (512 MiB by default). */
static size_t entry_max(const fdl__cache_use *u)
{
    return u->max_size && u->max_size < (uint64_t)SIZE_MAX ? (size_t)u->max_size
                                                           : (size_t)512 << 20;
}

fdl_cache_result fdl__cache_remote_get(fdl__cache_use *u, uint32_t kind,
                                       const unsigned char key[FDL__CACHE_KEY_SIZE],
                                       fdl__cache_sections *out)
{
    memset(out, 0, sizeof *out);
    size_t n = fdl__remotes_count(u->remotes);
    if (!n)
        return FDL_CACHE_MISS;
    char hex[33];
    fdl__cache_key_hex(key, hex);
    for (size_t i = 0; i < n; i++) {
        const char *shown = fdl__remote_display(u->remotes, i);
        if (is_down(shown))
            continue;
        unsigned char *b = NULL;
        size_t size = 0;
        char why[300] = "";
        int got = fdl__remote_get(u->remotes, i, hex, entry_max(u), &b, &size, why, sizeof why);
        if (got < 0) {
            set_aside(u, shown, why);
            continue;
        }
        if (got == 0) {
            if (!u->quiet_misses) /* a lease's look again: counted once */
                fdl__cache_remote_count(u->dir, shown, 'm');
            continue;
        }
        int verdict = fdl__cache_adopt(u, kind, key, b, size, out);
        free(b);
        if (verdict == 'g' || verdict == 'w') {
            fdl__cache_remote_count(u->dir, shown, 'h');
            return FDL_CACHE_HIT_REMOTE;
        }
        /* bad or unsigned: a miss here, counted apart (once: not again by a lease's look
         * again); the link stores a good one over it */
        fdl__cache_sections_free(out);
        if (!u->quiet_misses) {
            fdl__cache_remote_count(u->dir, shown, (char)verdict);
            fdl__cache_remote_count(u->dir, shown, 'm');
        }
    }
    return FDL_CACHE_MISS;
}

void fdl__cache_remote_put(fdl__cache_use *u, const unsigned char key[FDL__CACHE_KEY_SIZE],
                           const unsigned char *entry, size_t size)
{
    size_t n = fdl__remotes_count(u->remotes);
    if (!n || size > entry_max(u))
        return;
    char hex[33];
    fdl__cache_key_hex(key, hex);
    for (size_t i = 0; i < n; i++) {
        const char *shown = fdl__remote_display(u->remotes, i);
        if (fdl__remote_read_only(u->remotes, i) || is_down(shown))
            continue;
        char why[300] = "";
        if (fdl__remote_put(u->remotes, i, hex, entry, size, why, sizeof why) < 0)
            set_aside(u, shown, why);
    }
}

/* ---- leases on a Redis remote ---------------------------------------------------------------- */
fdl_cache_result fdl__cache_remote_lease(fdl__cache_use *u, uint32_t kind,
                                         const unsigned char key[FDL__CACHE_KEY_SIZE],
                                         uint64_t deadline_ns, fdl__cache_lease *lease,
                                         fdl__cache_sections *out)
{
    memset(out, 0, sizeof *out);
    size_t n = fdl__remotes_count(u->remotes), i = 0;
    for (; i < n; i++)
        if (fdl__remote_is_redis(u->remotes, i) && !fdl__remote_read_only(u->remotes, i) &&
            !is_down(fdl__remote_display(u->remotes, i)))
            break;
    if (i == n || lease->remote)
        return FDL_CACHE_MISS;
    const char *shown = fdl__remote_display(u->remotes, i);
    char hex[33];
    fdl__cache_key_hex(key, hex);
    long wait = 2;
    for (;;) {
        fdl__remote_lease *held = NULL;
        char why[300] = "";
        int got = fdl__remote_lease_take(u->remotes, i, hex, FDL__REMOTE_LEASE_TTL_MS, &held, why,
                                         sizeof why);
        if (got < 0) {
            set_aside(u, shown, why);
            return FDL_CACHE_MISS; /* no lease to be had: the link goes on */
        }
        /* held or not, the entry may be there now (its linker stored it, then gave up its
         * lease): look again, the miss counted once */
        u->quiet_misses = 1;
        fdl_cache_result r = fdl__cache_remote_get(u, kind, key, out);
        u->quiet_misses = 0;
        if (r != FDL_CACHE_MISS) {
            fdl__remote_lease_release(u->remotes, i, held);
            return r;
        }
        if (got == 1) {
            lease->remote = held; /* ours: the caller links, stores, and gives it up */
            lease->remote_i = i;
            return FDL_CACHE_MISS;
        }
        if (is_down(shown) || fdl__now_ns() >= deadline_ns)
            return FDL_CACHE_MISS; /* out of time: link without the lease */
        lease->waited = 1;
        fdl__cache_pause_ms(wait);
        wait = wait < 100 ? wait * 2 : 100;
    }
}

void fdl__cache_remote_unlease(fdl__cache_use *u, fdl__cache_lease *lease)
{
    if (!lease->remote)
        return;
    fdl__remote_lease_release(u->remotes, lease->remote_i, lease->remote);
    lease->remote = NULL;
}
