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
 * The holder writes who it is into the file (issue 40): "fdlink-lease pid=N host=H boot=B
 * start=T", its process id, host name, the kernel's boot id and its start time in clock ticks
 * since boot. The lock alone says whether a holder lives; the words are for where locks are not to
 * be had (ENOLCK) and for the sweep of `fdlink cache prune`, `clear` and `verify`
 * (fdl__cache_leases_sweep), which removes the files of leases nobody holds: their holder was
 * killed or its store failed. The words are read as untrusted text (a shared folder): bounded,
 * parsed strictly, and only ever trusted to say that a process of this very boot of this host
 * is gone.
 *
 * Across machines: the process that holds the directory's lease (or has no directory) then takes
 * the key's lease on a Redis remote (tier_remote.c, fdl__cache_remote_lease), within the same
 * time, so that one process of a farm sharing only the remote links.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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

/* This process as a lease holder names it: host, boot id, start time (0 when unknown). */
typedef struct holder {
    long pid;
    char host[64];
    char boot[40];
    unsigned long long start;
} holder;

/* @p n bytes of @p path (a /proc file) into @p buf, NUL-terminated; 0 when unreadable. */
static int read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t k = read(fd, buf, n - 1);
    close(fd);
    if (k <= 0)
        return 0;
    buf[k] = '\0';
    return 1;
}

/* Process @p pid's start time in clock ticks since boot (field 22 of /proc/PID/stat); 0 unknown. */
static unsigned long long start_of(long pid)
{
    char path[64], st[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (!read_small(path, st, sizeof st))
        return 0;
    const char *p = strrchr(st, ')'); /* the command name may hold spaces and parentheses */
    if (!p)
        return 0;
    for (int field = 2; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Keep letters, digits, '-' and '.' of @p in (a host name, a boot id), at most @p size - 1. */
static void tag(char *out, size_t size, const char *in)
{
    size_t j = 0;
    for (size_t i = 0; in[i] && j + 1 < size; i++) {
        char c = in[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.')
            out[j++] = c;
    }
    out[j] = '\0';
}

static void holder_self(holder *h)
{
    memset(h, 0, sizeof *h);
    h->pid = (long)getpid();
    char buf[256] = "";
    if (gethostname(buf, sizeof buf - 1) != 0)
        buf[0] = '\0';
    tag(h->host, sizeof h->host, buf);
    if (read_small("/proc/sys/kernel/random/boot_id", buf, sizeof buf))
        tag(h->boot, sizeof h->boot, buf);
    h->start = start_of(h->pid);
}

/* The holder's words into the lease file it holds (a failure only leaves them out). */
static void lease_sign(int fd)
{
    holder h;
    holder_self(&h);
    char line[200];
    int n = snprintf(line, sizeof line, "fdlink-lease pid=%ld host=%s boot=%s start=%llu\n",
                     h.pid, h.host, h.boot, h.start);
    if (n > 0 && (size_t)n < sizeof line && ftruncate(fd, 0) == 0) {
        ssize_t w = pwrite(fd, line, (size_t)n, 0);
        (void)w;
    }
}

/*
 * Whether the holder that @p text (a lease file's words, untrusted) names is known to be gone: a
 * process of this boot of this host that no longer runs, or whose process id another process has
 * taken since (another start time). Anything else (another host, another boot, words that do not
 * parse) is not known to be gone.
 */
static int words_say_gone(const char *text, long *pid_out)
{
    long pid = 0;
    char host[64], boot[40];
    unsigned long long start = 0;
    if (sscanf(text, "fdlink-lease pid=%ld host=%63s boot=%39s start=%llu", &pid, host, boot,
               &start) != 4 || pid <= 0 || pid > 0x7fffffffL)
        return 0;
    *pid_out = pid;
    holder me;
    holder_self(&me);
    if (strcmp(host, me.host) != 0 || !me.boot[0] || strcmp(boot, me.boot) != 0)
        return 0;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    unsigned long long now = start_of(pid);
    return start && now && now != start;
}

int fdl__cache_lease_is_name(const char *name)
{
    size_t n = strlen(name);
    if (n != 32 + sizeof LEASE_SUFFIX - 1 || strcmp(name + 32, LEASE_SUFFIX) != 0)
        return 0;
    for (size_t i = 0; i < 32; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

size_t fdl__cache_leases_sweep(const char *dir, fdl_cache_entry_fn fn, void *ctx)
{
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd < 0)
        return 0;
    int lfd = dup(dfd);
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        close(dfd);
        return 0;
    }
    size_t removed = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!fdl__cache_lease_is_name(de->d_name))
            continue;
        /* never through a symlink, never a FIFO's open blocking, only a regular file */
        int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            continue;
        }
        const char *why = NULL;
        char what[96];
        long pid = 0;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            why = "lease that no process holds (its holder was killed, or its store failed)";
        } else if (errno != EWOULDBLOCK) {
            /* no locks here: the holder's words alone, trusted only to say it is gone */
            char text[256];
            ssize_t k = pread(fd, text, sizeof text - 1, 0);
            text[k > 0 ? k : 0] = '\0';
            if (words_say_gone(text, &pid)) {
                snprintf(what, sizeof what, "lease of process %ld of this host, which is gone",
                         pid);
                why = what;
            }
        }
        if (why && lease_current(dfd, de->d_name, fd) && unlinkat(dfd, de->d_name, 0) == 0) {
            removed++;
            if (fn) {
                fdl_cache_entry e = {de->d_name, "lease", (uint64_t)st.st_size,
                                     (int64_t)st.st_mtime, why};
                fn(ctx, &e);
            }
        }
        close(fd); /* the lock, if taken, with it */
    }
    closedir(d);
    close(dfd);
    return removed;
}

fdl_cache_result fdl__cache_lease_take(fdl__cache_use *u, uint32_t kind,
                                       const unsigned char key[FDL__CACHE_KEY_SIZE],
                                       long timeout_ms, fdl__cache_lease *lease,
                                       fdl__cache_sections *out)
{
    lease->fd = -1;
    lease->dfd = -1;
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
            lease_sign(fd);
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
    if (lease->fd >= 0)
        lease->dfd = dfd; /* kept for the release */
    else
        close(dfd);
    return r;
}

void fdl__cache_lease_release(fdl__cache_use *u, const unsigned char key[FDL__CACHE_KEY_SIZE],
                              fdl__cache_lease *lease)
{
    fdl__cache_remote_unlease(u, lease);
    if (lease->fd < 0)
        return;
    int dfd = lease->dfd >= 0 ? lease->dfd
                              : u->dir ? open(u->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) {
        char name[64];
        lease_name(key, name);
        if (lease_current(dfd, name, lease->fd))
            unlinkat(dfd, name, 0);
        close(dfd);
    }
    close(lease->fd); /* the lock goes with it */
    lease->fd = -1;
    lease->dfd = -1;
}
