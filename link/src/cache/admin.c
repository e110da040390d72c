/*
 * The administration of the link cache (fdlink/cache.h): its counters, listing, clearing,
 * pruning and verifying a directory, and the remotes' counters (fdl_cache_remotes). It works on
 * a directory given or the default one, whatever the cache mode, and uses the directory's files
 * (dirfiles.c), the entries' checks (entry.c), the tiers' counters and the transport's URLs.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cacheint.h"
#include "dirfiles.h"
#include "entry.h"
#include "fdlink/cache.h"
#include "internal.h"
#include "tier_dir.h"
#include "tier_memory.h"
#include "tier_remote.h"
#include "transport.h"

int fdl__cache_admin_dir(const char *dir, char *buf, size_t size, fdl_error *err)
{
    if (dir && dir[0]) {
        if (strlen(dir) >= size)
            return fdl__fail(err, FDL_ELIMIT, "cache directory path too long");
        fdl__strlcpy(buf, dir, size);
        return FDL_OK;
    }
    return fdl_cache_dir(buf, size, err);
}

/* The directory to administer (@p dir or the default, into @p d) and its entries and
 * temporaries (into @p s, owned when FDL_OK). */
static int admin_scan(const char *dir, char d[4096], fdl__cdir_listing *s, fdl_error *err)
{
    int rc = fdl__cache_admin_dir(dir, d, 4096, err);
    if (rc != FDL_OK)
        return rc;
    if (!fdl__cdir_scan(d, s)) {
        int e = errno;
        fdl__cdir_scan_free(s);
        return fdl__error(err, FDL_EIO, d, 0, 0, NULL, "cannot read the cache directory: %s",
                          strerror(e));
    }
    return FDL_OK;
}

/* Kind of an entry from its header ("unknown" when it cannot be read). */
static const char *entry_kind(const char *dir, const char *name)
{
    unsigned char h[16];
    const char *what;
    int fd = -1, dfd = fdl__cdir_open(dir);
    ssize_t n = -1;
    if (dfd >= 0 && fdl__cdir_open_file(dfd, name, &fd, &what) == 1) {
        n = read(fd, h, sizeof h);
        close(fd);
    }
    if (dfd >= 0)
        close(dfd);
    uint32_t k = n == (ssize_t)sizeof h ? fdl__entry_kind_of(h, sizeof h) : 0;
    return k == FDL__CACHE_LINK    ? "link"
           : k == FDL__CACHE_NVRTC ? "nvrtc"
           : k == FDL__CACHE_CHECK ? "check"
           : k == FDL__CACHE_NVVM  ? "nvvm"
                                   : "unknown";
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const fdl__cdir_item *)a)->name, ((const fdl__cdir_item *)b)->name);
}

int fdl_cache_stats_get(fdl_cache_stats *out, const char *dir, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_stats_get: out is NULL");
    memset(out, 0, sizeof *out);
    char d[4096];
    fdl__cdir_listing s;
    int rc = admin_scan(dir, d, &s, err);
    if (rc != FDL_OK)
        return rc;
    out->entries = s.entries;
    out->bytes = s.bytes;
    out->temporaries = s.temps;
    fdl__cache_max_size_env(&out->max_size, NULL);
    fdl__cdir_scan_free(&s);
    int fd = -1, dfd = fdl__cdir_open(d);
    const char *what;
    if (dfd >= 0) {
        /* anything but a regular file: no counts */
        fdl__cdir_open_file(dfd, FDL__CACHE_STATS, &fd, &what);
        close(dfd);
    }
    if (fd >= 0) {
        unsigned char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            for (ssize_t i = 0; i < n; i++) {
                out->hits += buf[i] == 'h';
                out->misses += buf[i] == 'm';
                out->corrupt += buf[i] == 'c';
                out->unsigned_forged += buf[i] == 'u';
            }
        close(fd);
    }
    return FDL_OK;
}

int fdl_cache_list(const char *dir, fdl_cache_entry_fn fn, void *ctx, fdl_error *err)
{
    if (!FDL__CHECK_ARG(fn))
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_list: fn is NULL");
    char d[4096];
    fdl__cdir_listing s;
    int rc = admin_scan(dir, d, &s, err);
    if (rc != FDL_OK)
        return rc;
    for (size_t i = 0; i < s.n; i++) {
        fdl_cache_entry e = {s.v[i].name,
                             s.v[i].temp ? "temporary" : entry_kind(d, s.v[i].name),
                             s.v[i].size, s.v[i].mtime_ns / 1000000000, NULL};
        fn(ctx, &e);
    }
    fdl__cdir_scan_free(&s);
    return FDL_OK;
}

/* Remove @p name from the directory @p d by name (never through a symlink); none is fine. */
static int remove_counter(const char *d, const char *name, fdl_error *err)
{
    if (fdl__cdir_unlink(d, name) == 0 || errno == ENOENT || errno == EISDIR)
        return FDL_OK;
    int e = errno;
    char *path = fdl__cdir_join(d, name);
    int rc = path ? fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot remove: %s", strerror(e))
                  : fdl__fail(err, FDL_ENOMEM, "out of memory");
    free(path);
    return rc;
}

int fdl_cache_clear(const char *dir, size_t *removed, fdl_error *err)
{
    if (removed)
        *removed = 0;
    fdl__cache_mem_clear();
    char d[4096];
    fdl__cdir_listing s;
    int rc = admin_scan(dir, d, &s, err);
    if (rc != FDL_OK)
        return rc;
    for (size_t i = 0; i < s.n && rc == FDL_OK; i++) {
        /* a running writer's temporary stays (it renames it into place in milliseconds): only
         * those of writers that are gone, or older than the bound, go */
        if (s.v[i].temp && !fdl__cdir_temp_is_stale(&s.v[i]))
            continue;
        if (fdl__cdir_unlink(d, s.v[i].name) == 0) {
            if (removed)
                ++*removed;
        } else if (errno != ENOENT) {
            int e = errno;
            char *path = fdl__cdir_join(d, s.v[i].name);
            rc = path ? fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot remove: %s",
                                   strerror(e))
                      : fdl__fail(err, FDL_ENOMEM, "out of memory");
            free(path);
        }
    }
    fdl__cdir_scan_free(&s);
    /* the leases that no process holds (issue 40); held ones stay with their links */
    size_t leases = rc == FDL_OK ? fdl__cache_leases_sweep(d, NULL, NULL) : 0;
    if (removed)
        *removed += leases;
    if (rc == FDL_OK)
        rc = fdl__cache_memos_remove(d, err);
    /* the counters (stats, tier_remote.c's remote-stats), or whatever was planted under their
     * names (a directory stays) */
    if (rc == FDL_OK)
        rc = remove_counter(d, FDL__CACHE_STATS, err);
    if (rc == FDL_OK)
        rc = remove_counter(d, FDL__REMOTE_STATS, err);
    return rc;
}

/* Remove the temporary files of writers that are gone; returns how many. */
static size_t remove_stale_temps(const char *dir, const fdl__cdir_listing *s,
                                 fdl_cache_entry_fn fn, void *ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->v[i].temp || !fdl__cdir_temp_is_stale(&s->v[i]))
            continue;
        if (fdl__cdir_unlink(dir, s->v[i].name) == 0) {
            n++;
            if (fn) {
                fdl_cache_entry e = {s->v[i].name, "temporary", s->v[i].size,
                                     s->v[i].mtime_ns / 1000000000,
                                     "temporary file of a writer that is gone"};
                fn(ctx, &e);
            }
        }
    }
    return n;
}

int fdl_cache_prune(const char *dir, uint64_t max_size, size_t *removed, fdl_error *err)
{
    if (removed)
        *removed = 0;
    char d[4096];
    fdl__cdir_listing s;
    int rc = admin_scan(dir, d, &s, err);
    if (rc != FDL_OK)
        return rc;
    uint64_t bound = max_size;
    if (!bound && !fdl__cache_max_size_env(&bound, err)) {
        fdl__cdir_scan_free(&s);
        return FDL_EINVAL;
    }
    size_t n = remove_stale_temps(d, &s, NULL, NULL);
    n += fdl__cache_leases_sweep(d, NULL, NULL);
    n += fdl__cdir_evict(d, &s, bound);
    fdl__cdir_scan_free(&s);
    if (removed)
        *removed = n;
    return FDL_OK;
}

int fdl__cache_verify(const char *dir, fdl__cache_payload_fn payload, fdl_cache_entry_fn fn,
                      void *ctx, size_t *bad, fdl_error *err)
{
    if (bad)
        *bad = 0;
    char d[4096];
    fdl__cdir_listing s;
    int rc = admin_scan(dir, d, &s, err);
    if (rc != FDL_OK)
        return rc;
    if (s.n > 1) /* qsort may not be given NULL, even for no elements */
        qsort(s.v, s.n, sizeof *s.v, by_name); /* reports in a stable order */
    size_t nbad = remove_stale_temps(d, &s, fn, ctx);
    nbad += fdl__cache_leases_sweep(d, fn, ctx);
    for (size_t i = 0; i < s.n; i++) {
        if (s.v[i].temp)
            continue;
        unsigned char *b = NULL;
        size_t n = 0;
        const char *what;
        int dfd = fdl__cdir_open(d);
        int got = dfd < 0 ? 0 : fdl__cdir_read(dfd, s.v[i].name, &b, &n, &what);
        if (got != 1) {
            if (dfd >= 0)
                close(dfd);
            continue; /* removed meanwhile, or replaced by what is no entry */
        }
        unsigned char key[FDL__CACHE_KEY_SIZE];
        fdl__cache_key_from_hex(s.v[i].name, key);
        uint32_t kind = 0;
        const char *problem = fdl__entry_check(b, n, key, &kind, payload);
        if (problem[0] && unlinkat(dfd, s.v[i].name, 0) == 0) {
            nbad++;
            fdl__cache_count(d, 'c');
            if (fn) {
                fdl_cache_entry e = {s.v[i].name, "unknown", s.v[i].size,
                                     s.v[i].mtime_ns / 1000000000, problem};
                fn(ctx, &e);
            }
        }
        close(dfd);
        free(b);
    }
    fdl__cdir_scan_free(&s);
    if (bad)
        *bad = nbad;
    return FDL_OK;
}

/* ---- fdl_cache_remotes --------------------------------------------------------------------- */
int fdl_cache_remotes(const char *dir, const char *spec, fdl_cache_remote_fn fn, void *ctx,
                      fdl_error *err)
{
    if (!FDL__CHECK_ARG(fn))
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_remotes: fn is NULL");
    char d[4096];
    int rc = fdl__cache_admin_dir(dir, d, sizeof d, err);
    if (rc != FDL_OK)
        return rc;
    char warning[512] = "";
    fdl__remotes *rs = fdl__remotes_new(spec ? spec : getenv("FDLINK_CACHE_REMOTE"), warning,
                                        sizeof warning);
    size_t n = fdl__remotes_count(rs);
    fdl_cache_remote *v = n ? calloc(n, sizeof *v) : NULL;
    if (n && !v) {
        fdl__remotes_free(rs);
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        v[i].url = fdl__remote_display(rs, i);
        v[i].read_only = fdl__remote_read_only(rs, i);
    }
    /* the counters, read as the directory's other files are: never through a symlink, never
     * from a FIFO or device (nothing waits), to their end, bounded */
    fdl__buf path = {0};
    fdl__buf_printf(&path, "%s/" FDL__REMOTE_STATS, d);
    static const fdl__read_limit limit = {(size_t)64 << 20,
                                          "fdlink's limit of 64 MiB for remote-stats"};
    char *text = NULL;
    size_t len = 0;
    if (!path.oom &&
        fdl__read_at(AT_FDCWD, path.data, FDL__FILE_NOFOLLOW, &limit, &text, &len, NULL) != FDL_OK)
        text = NULL; /* none yet, or not a regular file: no counts */
    for (char *line = text, *next; line && line < text + len; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        next = nl ? nl + 1 : text + len;
        if (nl)
            *nl = '\0';
        if (!line[0] || line[1] != ' ')
            continue;
        for (size_t i = 0; i < n; i++) {
            if (strcmp(line + 2, v[i].url) != 0)
                continue;
            switch (line[0]) {
            case 'h': v[i].hits++; break;
            case 'm': v[i].misses++; break;
            case 'e': v[i].errors++; break;
            case 'c': v[i].corrupt++; break;
            case 'u': v[i].unsigned_forged++; break;
            default: break;
            }
        }
    }
    free(text);
    fdl__buf_free(&path);
    for (size_t i = 0; i < n; i++)
        fn(ctx, &v[i]);
    free(v);
    fdl__remotes_free(rs);
    if (warning[0])
        return fdl__fail(err, FDL_EINVAL, "%s", warning);
    return FDL_OK;
}
