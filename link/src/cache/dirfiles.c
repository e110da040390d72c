/*
 * The files of the cache directory, handled as hostile: reading, writing by temporary and
 * rename, removing by name, appending (the counters), scanning the entries and temporaries, and
 * eviction. It knows names and bytes, not entries (entry.c) or tiers.
 *
 * Every name in a shared cache directory is hostile: anyone who can write there may have put a
 * symlink (to another user's file, to /), a FIFO, a device node, a directory or junk under any
 * name fdlink uses. So a name there is only ever looked at without following it (fstatat with
 * AT_SYMLINK_NOFOLLOW first: a device is never opened, a FIFO never waited on), opened with
 * O_NOFOLLOW and O_NONBLOCK and its type checked again on the descriptor, read within a bound;
 * written only by creating a temporary exclusively (O_EXCL | O_NOFOLLOW) and renaming it over
 * the name (which replaces a planted symlink or FIFO, never what it points to); removed only as a
 * name (unlinkat). The directory itself is the user's choice and may be reached through a symlink.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cacheint.h"
#include "dirfiles.h"
#include "internal.h"

/* A temporary file this old is stale whoever wrote it (a writer takes milliseconds). */
#define STALE_TEMP_SECONDS 3600

int fdl__cdir_make(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 1;
        errno = ENOTDIR;
        return -1;
    }
    char *p = fdl__strdup(dir);
    if (!p) {
        errno = ENOMEM;
        return 0;
    }
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            free(p);
            errno = e;
            return 0;
        }
        *s = '/';
    }
    int ok = mkdir(p, 0777) == 0 || errno == EEXIST;
    int e = errno;
    free(p);
    errno = e;
    return ok;
}

char *fdl__cdir_join(const char *dir, const char *name)
{
    fdl__buf b = {0};
    fdl__buf_printf(&b, "%s/%s", dir, name);
    if (b.oom) {
        fdl__buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* The largest entry or memo read (a link's cubin and log, an NVRTC compile's output). */
#define ENTRY_READ_MAX ((size_t)1 << 30)

int fdl__cdir_open(const char *dir)
{
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

const char *fdl__cdir_foreign(int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISREG(st.st_mode))
        return "";
    return fdl__file_type_name((unsigned)st.st_mode);
}

int fdl__cdir_open_file(int dfd, const char *name, int *fd, const char **what)
{
    *fd = -1;
    *what = fdl__cdir_foreign(dfd, name);
    if ((*what)[0])
        return -1;
    fdl_error e = FDL_ERROR_INIT;
    if (fdl__open_at(dfd, name, FDL__FILE_NOFOLLOW, fd, NULL, &e) == FDL_OK)
        return 1;
    *what = fdl__cdir_foreign(dfd, name); /* replaced between the two looks */
    return (*what)[0] ? -1 : 0;
}

int fdl__cdir_read(int dfd, const char *name, unsigned char **out, size_t *size,
                    const char **what)
{
    *out = NULL;
    *size = 0;
    int fd, got = fdl__cdir_open_file(dfd, name, &fd, what);
    if (got != 1)
        return got;
    fdl__read_limit lim = {ENTRY_READ_MAX, "the largest cache entry fdlink reads (1 GiB)"};
    char *b = NULL;
    int rc = fdl__read_fd(fd, name, 0, &lim, &b, size, NULL);
    close(fd);
    if (rc == FDL_ELIMIT) {
        *what = "a file larger than any entry";
        return -1;
    }
    if (rc != FDL_OK)
        return 0;
    *out = (unsigned char *)b;
    return 1;
}

/* The host name as it goes into temporary names: letters, digits and '-' only. */
static void host_tag(char *out, size_t size)
{
    char h[256] = "";
    if (gethostname(h, sizeof h - 1) != 0)
        h[0] = '\0';
    size_t j = 0;
    for (size_t i = 0; h[i] && j + 1 < size; i++) {
        char c = h[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')
            out[j++] = c;
    }
    if (j == 0 && size > 1)
        out[j++] = 'h';
    out[j] = '\0';
}

int fdl__cdir_write(const char *dir, const char *name, const unsigned char *data, size_t n,
                     const char **what)
{
    *what = "";
    char host[64];
    host_tag(host, sizeof host);
    int ok = 0, e = 0;
    fdl__buf t = {0};
    int dfd = fdl__cdir_open(dir);
    if (dfd < 0)
        return 0;
    uint64_t nonce = fdl__now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&t;
    /* a program ended while the temporary has a name leaves none behind */
    unsigned char saved[FDL__SIGSET_SIZE];
    fdl__signals_hold(saved);
    e = EEXIST;
    for (int attempt = 0; attempt < 16 && e == EEXIST; attempt++) {
        nonce = nonce * 6364136223846793005u + 1442695040888963407u;
        t.len = 0;
        fdl__buf_printf(&t, "%.32s" FDL__TEMP_MARK "%s.%ld.%08llx", name, host, (long)getpid(),
                        (unsigned long long)(nonce >> 32));
        if (t.oom) {
            e = ENOMEM;
            break;
        }
        e = fdl__write_new_at(dfd, t.data, data, n, 0);
    }
    if (e)
        goto cleanup;
    /* concurrent writers of one key write the same bytes: whichever rename lands last wins */
    if (renameat(dfd, t.data, dfd, name) != 0) {
        e = errno;
        if (e == ENOENT && faccessat(dfd, t.data, F_OK, AT_EACCESS) != 0) {
            /* someone removed the temporary meanwhile (a `cache clear` that did not wait) */
            ok = -2;
            goto cleanup;
        }
        unlinkat(dfd, t.data, 0);
        if (e == EISDIR || e == ENOTEMPTY || e == EEXIST || e == EBUSY) {
            *what = fdl__cdir_foreign(dfd, name);
            ok = (*what)[0] ? -1 : 0;
        }
        goto cleanup;
    }
    ok = 1;
cleanup:
    fdl__signals_release(saved);
    close(dfd);
    fdl__buf_free(&t);
    errno = e;
    return ok;
}

int fdl__cdir_unlink(const char *dir, const char *name)
{
    int dfd = fdl__cdir_open(dir);
    if (dfd < 0)
        return -1;
    int r = unlinkat(dfd, name, 0);
    int e = errno;
    close(dfd);
    errno = e;
    return r;
}

int fdl__cache_append(const char *dir, const char *name, const void *data, size_t n)
{
    int dfd = fdl__cdir_open(dir);
    if (dfd < 0)
        return 0;
    int rc = 0;
    if (fdl__cdir_foreign(dfd, name)[0]) {
        rc = -1;
        goto cleanup;
    }
    int fd = openat(dfd, name,
                    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                    0666);
    if (fd < 0) {
        rc = errno == ELOOP || errno == ENXIO ? -1 : 0;
        goto cleanup;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        ssize_t w = write(fd, data, n);
        (void)w;
    } else {
        rc = -1;
    }
    close(fd);
cleanup:
    close(dfd);
    return rc;
}

/* ---- scanning ---------------------------------------------------------------------------- */
void fdl__cdir_scan_free(fdl__cdir_listing *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].name);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int is_entry_name(const char *name)
{
    size_t n = strlen(name);
    unsigned char key[FDL__CACHE_KEY_SIZE];
    return n == 32 + strlen(FDL__ENTRY_SUFFIX) && strcmp(name + 32, FDL__ENTRY_SUFFIX) == 0 &&
           fdl__cache_key_from_hex(name, key);
}

static int is_temp_name(const char *name)
{
    return strstr(name, FDL__TEMP_MARK) != NULL;
}

int fdl__cdir_scan(const char *dir, fdl__cdir_listing *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT;
    struct dirent *de;
    int ok = 1;
    while ((de = readdir(d))) {
        int temp = is_temp_name(de->d_name);
        if (!temp && !is_entry_name(de->d_name))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* removed meanwhile */
        if (!S_ISREG(st.st_mode)) {
            s->ignored++; /* a symlink, FIFO, device or folder under fdlink's names: left alone */
            continue;
        }
        fdl__cdir_item *grown = fdl__grow(s->v, &s->cap, s->n + 1, sizeof *s->v);
        char *name = fdl__strdup(de->d_name);
        if (!grown || !name) {
            if (grown)
                s->v = grown;
            free(name);
            errno = ENOMEM;
            ok = 0;
            break;
        }
        s->v = grown;
        s->v[s->n++] = (fdl__cdir_item){name, (uint64_t)st.st_size,
                                   (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                                   temp};
        if (temp) {
            s->temps++;
        } else {
            s->entries++;
            s->bytes += (uint64_t)st.st_size;
        }
    }
    closedir(d);
    return ok;
}

static int by_age(const void *a, const void *b)
{
    const fdl__cdir_item *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

size_t fdl__cdir_evict(const char *dir, fdl__cdir_listing *s, uint64_t max)
{
    size_t removed = 0;
    if (s->bytes <= max)
        return 0;
    qsort(s->v, s->n, sizeof *s->v, by_age);
    for (size_t i = 0; i < s->n && s->bytes > max; i++) {
        if (s->v[i].temp)
            continue;
        if (fdl__cdir_unlink(dir, s->v[i].name) == 0 || errno == ENOENT) {
            s->bytes -= s->v[i].size;
            s->entries--;
            removed++;
        }
    }
    return removed;
}

int fdl__cdir_temp_is_stale(const fdl__cdir_item *it)
{
    if ((int64_t)time(NULL) - it->mtime_ns / 1000000000 > STALE_TEMP_SECONDS)
        return 1;
    const char *m = strstr(it->name, FDL__TEMP_MARK);
    char host[64], theirs[64];
    host_tag(host, sizeof host);
    m += strlen(FDL__TEMP_MARK);
    const char *dot = strchr(m, '.');
    if (!dot || (size_t)(dot - m) >= sizeof theirs)
        return 0;
    memcpy(theirs, m, (size_t)(dot - m));
    theirs[dot - m] = '\0';
    if (strcmp(theirs, host) != 0)
        return 0; /* another machine's writer: only age tells */
    char *end = NULL;
    long pid = strtol(dot + 1, &end, 10);
    if (pid <= 0 || !end || *end != '.')
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}
