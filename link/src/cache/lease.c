/*
 * Leases of cache keys: when processes sharing a cache directory miss the same key at once (a
 * farm's cold start, a build's parallel links of one program), one of them links and the others
 * wait for its entry instead of linking the same thing again.
 *
 * A lease is an exclusive flock(2) on "<key>.lease" in the cache directory. flock, not a file
 * created with O_EXCL: a lock ends with the open file description that holds it, so a holder that
 * is killed (or whose machine loses the file system's lock) gives the lease up at once, with no
 * expiry to tune and no stale file to break. Waiters poll the lock (LOCK_NB, backing off to 50 ms)
 * until it is free or their time is up; then they look at the entry again: the holder's entry is
 * a hit, and a miss (the holder failed or died) makes the first waiter to lock the next linker.
 * The holder removes the file before it unlocks, so that the file of a key that is linked does
 * not stay; a waiter that locked a file no longer at that name looks again and retries.
 *
 * Across machines: the process that holds the directory's lease (or has no directory) then takes
 * the key's lease on a Redis remote (tier_remote.c, fdl__cache_remote_lease), within the same
 * time, so that one process of a farm sharing only the remote links.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cacheint.h"
#include "internal.h"
#include "tier_remote.h"

#define LEASE_SUFFIX ".lease"

static void lease_name(const unsigned char key[FDL__CACHE_KEY_SIZE], char name[64])
{
    char hex[33];
    fdl__cache_key_hex(key, hex);
    snprintf(name, 64, "%s" LEASE_SUFFIX, hex);
}

/* The lease file of @p name in @p dfd, opened (created when missing): a regular file only. */
static int lease_open(int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd); /* a FIFO, a device, a folder planted there: no lease, the link goes on */
        return -1;
    }
    return fd;
}

/* Whether @p fd is still the file named @p name in @p dfd. */
static int lease_current(int dfd, const char *name, int fd)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

fdl_cache_result fdl__cache_lease_take(fdl__cache_use *u, uint32_t kind,
                                       const unsigned char key[FDL__CACHE_KEY_SIZE],
                                       long timeout_ms, fdl__cache_lease *lease,
                                       fdl__cache_sections *out)
{
    lease->fd = -1;
    lease->waited = 0;
    lease->remote = NULL;
    memset(out, 0, sizeof *out);
    if (!u->on || timeout_ms <= 0)
        return FDL_CACHE_MISS;
    uint64_t deadline = fdl__now_ns() + (uint64_t)timeout_ms * 1000000u;
    int dfd = u->dir ? open(u->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd < 0) /* no directory: the remote's lease alone */
        return fdl__cache_remote_lease(u, kind, key, deadline, lease, out);
    char name[64];
    lease_name(key, name);
    fdl_cache_result r = FDL_CACHE_MISS;
    long wait = 1;
    for (int tries = 0; tries < 64; tries++) {
        int fd = lease_open(dfd, name);
        if (fd < 0)
            break;
        int locked;
        while (!(locked = flock(fd, LOCK_EX | LOCK_NB) == 0) && errno == EWOULDBLOCK &&
               fdl__now_ns() < deadline) {
            lease->waited = 1;
            fdl__cache_pause_ms(wait);
            wait = wait < 50 ? wait * 2 : 50;
        }
        if (!locked) {
            close(fd); /* out of time (or no locks here): link without a lease */
            break;
        }
        /* free: the holder before (if any) stored its entry or gave up; look again, a miss
         * counted once (the caller's first look counted it) */
        u->quiet_misses = 1;
        r = fdl__cache_get(u, kind, key, out);
        u->quiet_misses = 0;
        if (r != FDL_CACHE_MISS) {
            if (lease_current(dfd, name, fd))
                unlinkat(dfd, name, 0);
            close(fd);
            break;
        }
        if (lease_current(dfd, name, fd)) {
            lease->fd = fd; /* ours: the caller links */
            break;
        }
        close(fd); /* a file its holder removed: take the one at the name now */
    }
    if (r == FDL_CACHE_MISS) {
        /* first among this machine's processes (or out of time): now among the machines that
         * share a Redis remote */
        r = fdl__cache_remote_lease(u, kind, key, deadline, lease, out);
        if (r != FDL_CACHE_MISS && lease->fd >= 0) {
            if (lease_current(dfd, name, lease->fd))
                unlinkat(dfd, name, 0);
            close(lease->fd);
            lease->fd = -1;
        }
    }
    close(dfd);
    return r;
}

void fdl__cache_lease_release(fdl__cache_use *u, const unsigned char key[FDL__CACHE_KEY_SIZE],
                              fdl__cache_lease *lease)
{
    fdl__cache_remote_unlease(u, lease);
    if (lease->fd < 0)
        return;
    int dfd = u->dir ? open(u->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        char name[64];
        lease_name(key, name);
        if (lease_current(dfd, name, lease->fd))
            unlinkat(dfd, name, 0);
        close(dfd);
    }
    close(lease->fd); /* the lock goes with it */
    lease->fd = -1;
}
