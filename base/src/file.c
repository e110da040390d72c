/*
 * Files: opening and reading a whole file, and writing outputs (complete or not at all, under
 * concurrent writers and killed processes) (internal.h). Every input fdlink reads and every output
 * it writes goes through here, so that what a path may hold (a FIFO, a device node, a symlink, a
 * directory, a /proc file) is handled once:
 * - inputs are opened without blocking (O_NONBLOCK: a FIFO with no writer does not hang the open),
 *   the type checked on the open descriptor (fstat, no race with a stat before), and read to the
 *   end rather than by st_size (a /proc file says 0 bytes and holds more), within a bound;
 * - an output that is a regular file, or missing, is replaced atomically (a temporary in the same
 *   folder, renamed); a symlink to a regular file is followed and its target replaced; a character
 *   device or a FIFO is written into (/dev/null, /dev/stdout, a pipe); anything else is refused.
 */
#define _POSIX_C_SOURCE 200809L
#ifdef __linux__
#define _GNU_SOURCE /* O_TMPFILE */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

const char *fdl__file_type_name(unsigned mode)
{
    if (S_ISREG(mode))
        return "a regular file";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISLNK(mode))
        return "a symlink";
    return "not a file";
}

int fdl__open_at(int dfd, const char *name, int flags, int *fd, size_t *size, fdl_error *err)
{
    *fd = -1;
    if (size)
        *size = 0;
    int rc = FDL_OK;
    int oflags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (flags & FDL__FILE_NOFOLLOW)
        oflags |= O_NOFOLLOW;
    int f = openat(dfd, name, oflags);
    if (f < 0) {
        int e = errno;
        struct stat st;
        if (e == ELOOP && (flags & FDL__FILE_NOFOLLOW))
            return fdl__error(err, FDL_EIO, name, 0, 0, NULL, "is a symlink, not followed here");
        if (e == ENXIO && fstatat(dfd, name, &st, 0) == 0 && S_ISSOCK(st.st_mode))
            return fdl__error(err, FDL_EIO, name, 0, 0, NULL, "is a socket, not a file");
        errno = e;
        return fdl__error(err, FDL_EIO, name, 0, 0, NULL, "cannot open: %s", strerror(errno));
    }
    struct stat st;
    if (fstat(f, &st) != 0) {
        rc = fdl__error(err, FDL_EIO, name, 0, 0, NULL, "cannot stat: %s", strerror(errno));
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = fdl__error(err, FDL_EIO, name, 0, 0, NULL, "is %s, not a file",
                        fdl__file_type_name((unsigned)st.st_mode));
        goto cleanup;
    }
    if (st.st_size < 0 || (uintmax_t)st.st_size >= SIZE_MAX) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "file too large to read");
        goto cleanup;
    }
    /* a regular file never blocks; reads go on without O_NONBLOCK as any other would */
    int fl = fcntl(f, F_GETFL);
    if (fl >= 0)
        (void)fcntl(f, F_SETFL, fl & ~O_NONBLOCK);
    if (size)
        *size = (size_t)st.st_size;
    *fd = f;
    f = -1;
cleanup:
    if (f >= 0)
        close(f);
    return rc;
}

int fdl__open_file(const char *path, int *fd, size_t *size, fdl_error *err)
{
    return fdl__open_at(AT_FDCWD, path, 0, fd, size, err);
}

int fdl__read_fd(int fd, const char *name, size_t hint, const fdl__read_limit *limit, char **data,
                 size_t *size, fdl_error *err)
{
    *data = NULL;
    if (size)
        *size = 0;
    size_t max = limit && limit->max < SIZE_MAX - 1 ? limit->max : SIZE_MAX - 1;
    size_t cap = hint < 4096 ? 4096 : hint;
    if (cap > max)
        cap = max;
    char *buf = malloc(cap + 1);
    if (!buf)
        return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory reading %zu bytes",
                          cap);
    int rc = FDL_OK;
    size_t got = 0;
    for (;;) {
        if (got == cap) {
            /* full: grow, unless the bound is reached (read one byte more to tell) */
            if (cap >= max) {
                char c;
                ssize_t n = read(fd, &c, 1);
                if (n < 0 && errno == EINTR)
                    continue;
                if (n == 0)
                    break;
                if (n < 0) {
                    rc = fdl__error(err, FDL_EIO, name, 0, 0, NULL, "read failed: %s",
                                    strerror(errno));
                    goto cleanup;
                }
                rc = fdl__error(err, FDL_ELIMIT, name, 0, 0, NULL, "larger than %s",
                                limit && limit->what ? limit->what : "fdlink can read");
                goto cleanup;
            }
            size_t ncap = cap > max / 2 ? max : cap * 2;
            char *grown = realloc(buf, ncap + 1);
            if (!grown) {
                rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL,
                                "out of memory reading %zu bytes", ncap);
                goto cleanup;
            }
            buf = grown;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = fdl__error(err, FDL_EIO, name, 0, 0, NULL, "read failed: %s", strerror(errno));
            goto cleanup;
        }
        if (n == 0)
            break; /* the end, wherever st_size said it was (a /proc file, a file that changed) */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *data = buf;
    buf = NULL;
    if (size)
        *size = got;
cleanup:
    free(buf);
    return rc;
}

int fdl__read_at(int dfd, const char *name, int flags, const fdl__read_limit *limit, char **data,
                 size_t *size, fdl_error *err)
{
    *data = NULL;
    if (size)
        *size = 0;
    int fd;
    size_t hint;
    int rc = fdl__open_at(dfd, name, flags, &fd, &hint, err);
    if (rc != FDL_OK)
        return rc;
    if (limit && hint > limit->max)
        rc = fdl__error(err, FDL_ELIMIT, name, 0, 0, NULL, "larger than %s",
                        limit->what ? limit->what : "fdlink can read");
    else
        rc = fdl__read_fd(fd, name, hint, limit, data, size, err);
    close(fd);
    return rc;
}

int fdl__read_file(const char *path, char **data, size_t *size, fdl_error *err)
{
    return fdl__read_at(AT_FDCWD, path, 0, NULL, data, size, err);
}

/* ---- writing ---------------------------------------------------------------------------------- */

/* All of @p size bytes of @p data to @p fd, then fsync when @p sync. @return 0, or an errno value
 * (*failed_sync set when the fsync failed). */
static int write_all(int fd, const void *data, size_t size, int sync, int *failed_sync)
{
    const char *p = data;
    size_t left = size;
    *failed_sync = 0;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        p += n;
        left -= (size_t)n;
    }
    if (sync && fsync(fd) != 0) {
        *failed_sync = 1;
        return errno;
    }
    return 0;
}

int fdl__write_new_at(int dfd, const char *name, const void *data, size_t size, int sync)
{
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                    0666);
    if (fd < 0)
        return errno;
    int failed_sync, e = write_all(fd, data, size, sync, &failed_sync);
    if (close(fd) != 0 && !e)
        e = errno;
    if (e)
        unlinkat(dfd, name, 0);
    return e;
}

/*
 * Remove what a writer of @path that was killed may have left: "<path>.tmp.<pid>.<nonce>" of a
 * process that no longer exists. Best effort, after a successful write; a live writer's
 * temporary (its pid exists) is left alone.
 */
static void remove_stale(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    fdl__buf dir = {0};
    if (slash ? !fdl__buf_printf(&dir, "%.*s", (int)(slash - path + 1), path)
              : !fdl__buf_puts(&dir, "."))
        goto cleanup;
    DIR *d = opendir(dir.data);
    if (!d)
        goto cleanup;
    size_t blen = strlen(base);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strncmp(n, base, blen) != 0 || strncmp(n + blen, ".tmp.", 5) != 0)
            continue;
        const char *q = n + blen + 5;
        long pid = 0;
        while (*q >= '0' && *q <= '9' && pid < 100000000)
            pid = pid * 10 + (*q++ - '0');
        if (q == n + blen + 5 || *q != '.' || pid <= 0)
            continue;
        size_t hex = strspn(q + 1, "0123456789abcdef");
        if (hex != 6 || q[7] != '\0' || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            unlinkat(dirfd(d), n, 0);
    }
    closedir(d);
cleanup:
    fdl__buf_free(&dir);
}

enum { OUT_REPLACE = 1, OUT_NODE = 2 };

/* One output of fdl__write_outputs, from its opening to its landing. */
typedef struct out {
    const char *path; /* as given, for messages */
    char *target;     /* the regular file replaced (a symlink's target), or NULL */
    int kind;
    int fd;           /* OUT_NODE: open for writing; OUT_REPLACE: the unnamed temporary */
    char *tmp;        /* OUT_REPLACE: the temporary's name, once it has one */
} out;

/* The descriptor that /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N name, or -1. */
static int std_fd(const char *path)
{
    if (strcmp(path, "/dev/stdout") == 0)
        return 1;
    if (strcmp(path, "/dev/stderr") == 0)
        return 2;
    const char *n = strncmp(path, "/dev/fd/", 8) == 0          ? path + 8
                    : strncmp(path, "/proc/self/fd/", 14) == 0 ? path + 14
                                                               : NULL;
    if (!n || !*n || strspn(n, "0123456789") != strlen(n) || strlen(n) > 6)
        return -1;
    return atoi(n);
}

/* Decide how @p o->path is written, refusing what cannot be (nothing written yet). */
static int out_open(out *o, fdl_error *err)
{
    const char *path = o->path;
    int sfd = std_fd(path);
    if (sfd >= 0) {
        /* the descriptor itself, at its offset and in its mode (O_APPEND), as the shell set it */
        o->fd = fcntl(sfd, F_DUPFD_CLOEXEC, 3);
        if (o->fd < 0)
            return fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot write output: %s",
                              strerror(errno));
        o->kind = OUT_NODE;
        return FDL_OK;
    }
    if (!path[0])
        return fdl__error(err, FDL_EINVAL, path, 0, 0, NULL, "an empty output name");
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot create output: %s",
                              strerror(errno));
        o->kind = OUT_REPLACE; /* a new file */
        return FDL_OK;
    }
    int link = S_ISLNK(st.st_mode);
    if (link && stat(path, &st) != 0)
        return fdl__error(err, FDL_EIO, path, 0, 0, NULL,
                          "cannot write output: a symlink to %s (%s)",
                          errno == ENOENT ? "nothing" : "what cannot be reached",
                          strerror(errno));
    if (S_ISREG(st.st_mode)) {
        o->kind = OUT_REPLACE;
        if (link) {
            /* the symlink stays; its target is replaced, next to itself */
            o->target = realpath(path, NULL);
            if (!o->target)
                return fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot resolve symlink: %s",
                                  strerror(errno));
        }
        return FDL_OK;
    }
    if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
        /* written into, never replaced: /dev/null, a terminal, a FIFO. A FIFO's open waits for a
         * reader: a reader starting at the same time is waited for, a second at most, and a FIFO
         * that nothing reads is refused rather than waited on for ever */
        for (unsigned tries = 0;; tries++) {
            o->fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            if (o->fd >= 0 || errno != ENXIO || !S_ISFIFO(st.st_mode) || tries == 100)
                break;
            struct timespec ms10 = {0, 10000000};
            nanosleep(&ms10, NULL);
        }
        if (o->fd < 0 && errno == ENXIO && S_ISFIFO(st.st_mode))
            return fdl__error(err, FDL_EIO, path, 0, 0, NULL,
                              "cannot write output: a FIFO that no process reads");
        if (o->fd < 0)
            return fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot write output: %s",
                              strerror(errno));
        int fl = fcntl(o->fd, F_GETFL);
        if (fl >= 0)
            (void)fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK); /* then written as any pipe is */
        o->kind = OUT_NODE;
        return FDL_OK;
    }
    return fdl__error(err, FDL_EIO, path, 0, 0, NULL,
                      "cannot write output: is %s%s (fdlink writes regular files, character "
                      "devices and FIFOs)",
                      link ? "a symlink to " : "", fdl__file_type_name((unsigned)st.st_mode));
}

/* OUT_REPLACE: the data, complete and synced, in a temporary next to the target. */
static int out_stage(out *o, const void *data, size_t size, fdl_error *err)
{
    const char *where = o->target ? o->target : o->path;
    fdl__buf dir = {0}, name = {0}, proc = {0};
    int rc = FDL_OK;
    const char *slash = strrchr(where, '/');
    if (slash ? !fdl__buf_printf(&dir, "%.*s", (int)(slash - where + 1), where)
              : !fdl__buf_puts(&dir, ".")) {
        rc = fdl__error(err, FDL_ENOMEM, o->path, 0, 0, NULL, "out of memory");
        goto cleanup;
    }
    uint64_t nonce = fdl__now_ns() ^ ((uint64_t)(uintptr_t)o << 16);
    int e = 0, failed_sync = 0;
#ifdef O_TMPFILE
    /* an unnamed file first: a process killed while writing leaves nothing behind */
    o->fd = open(dir.data, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (o->fd >= 0) {
        e = write_all(o->fd, data, size, 1, &failed_sync);
        if (e)
            goto failed;
        if (!fdl__buf_printf(&proc, "/proc/self/fd/%d", o->fd)) {
            rc = fdl__error(err, FDL_ENOMEM, o->path, 0, 0, NULL, "out of memory");
            goto cleanup;
        }
    }
#endif
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        nonce = nonce * 6364136223846793005u + 1442695040888963407u; /* next, on a collision */
        name.len = 0;
        if (!fdl__buf_printf(&name, "%s.tmp.%ld.%06llx", where, (long)getpid(),
                             (unsigned long long)(nonce >> 40))) {
            rc = fdl__error(err, FDL_ENOMEM, o->path, 0, 0, NULL, "out of memory");
            goto cleanup;
        }
        if (o->fd >= 0) {
            /* name the complete unnamed file; without /proc, fall back to a named one */
            if (linkat(AT_FDCWD, proc.data, AT_FDCWD, name.data, AT_SYMLINK_FOLLOW) == 0) {
                e = 0;
                break;
            }
            if (errno == EEXIST) {
                e = EEXIST;
                continue;
            }
            close(o->fd);
            o->fd = -1;
        }
        e = fdl__write_new_at(AT_FDCWD, name.data, data, size, 1);
        if (e != EEXIST)
            break;
    }
    if (e)
        goto failed;
    o->tmp = name.data;
    name.data = NULL;
    goto cleanup;
failed:
    rc = fdl__error(err, FDL_EIO, o->path, 0, 0, NULL, "%s: %s",
                    failed_sync ? "cannot finish output"
                    : e == EEXIST || e == ENOENT || e == EACCES || e == EROFS || e == ENOTDIR
                        ? "cannot create output"
                        : "write failed",
                    strerror(e));
cleanup:
    if (o->fd >= 0 && o->kind == OUT_REPLACE) {
        close(o->fd);
        o->fd = -1;
    }
    fdl__buf_free(&dir);
    fdl__buf_free(&name);
    fdl__buf_free(&proc);
    return rc;
}

/* OUT_NODE: the data written into the node, which is then closed (a deferred error shows). */
static int out_write_node(out *o, const void *data, size_t size, fdl_error *err)
{
    int failed_sync, e = write_all(o->fd, data, size, 0, &failed_sync);
    int c = close(o->fd);
    o->fd = -1;
    if (!e && c != 0)
        e = errno;
    if (e)
        return fdl__error(err, FDL_EIO, o->path, 0, 0, NULL, "write failed: %s", strerror(e));
    return FDL_OK;
}

static void out_discard(out *o)
{
    if (o->fd >= 0)
        close(o->fd);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->target);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}

void fdl__signals_hold(unsigned char saved[FDL__SIGSET_SIZE])
{
    _Static_assert(sizeof(sigset_t) <= FDL__SIGSET_SIZE, "FDL__SIGSET_SIZE holds a sigset_t");
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigemptyset(&old);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    memcpy(saved, &old, sizeof old);
}

void fdl__signals_release(const unsigned char saved[FDL__SIGSET_SIZE])
{
    sigset_t old;
    memcpy(&old, saved, sizeof old);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int fdl__write_outputs(size_t n, const char *const *paths, const void *const *data,
                       const size_t *sizes, fdl_error *err)
{
    int rc = FDL_OK;
    size_t i;
    out *v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        v[i].path = paths[i];
        v[i].fd = -1;
    }
    /* 1. every output's path judged: what cannot be written is refused before any is written */
    for (i = 0; i < n && rc == FDL_OK; i++)
        rc = out_open(&v[i], err);
    /* the ending signals wait while temporaries have names, unless a node may block */
    int hold = rc == FDL_OK;
    for (i = 0; i < n; i++)
        hold &= v[i].kind == OUT_REPLACE;
    unsigned char saved[FDL__SIGSET_SIZE];
    if (hold)
        fdl__signals_hold(saved);
    /* 2. every replaced file complete in its temporary */
    for (i = 0; i < n && rc == FDL_OK; i++)
        if (v[i].kind == OUT_REPLACE)
            rc = out_stage(&v[i], data[i], sizes[i], err);
    /* 3. the nodes written (a stream cannot be taken back: only once all else is ready) */
    for (i = 0; i < n && rc == FDL_OK; i++)
        if (v[i].kind == OUT_NODE)
            rc = out_write_node(&v[i], data[i], sizes[i], err);
    /* 4. the renames, in the order given (the caller puts the output that build tools watch
     * last); a rename in one folder fails only when the folder changed meanwhile */
    for (i = 0; i < n && rc == FDL_OK; i++) {
        if (v[i].kind != OUT_REPLACE)
            continue;
        const char *where = v[i].target ? v[i].target : v[i].path;
        if (rename(v[i].tmp, where) != 0)
            rc = fdl__error(err, FDL_EIO, v[i].path, 0, 0, NULL, "cannot rename into place: %s",
                            strerror(errno));
        else {
            free(v[i].tmp);
            v[i].tmp = NULL;
            remove_stale(where);
        }
    }
    for (i = 0; i < n; i++)
        out_discard(&v[i]);
    if (hold)
        fdl__signals_release(saved);
    free(v);
    return rc;
}

int fdl__write_atomic(const char *path, const void *data, size_t size, fdl_error *err)
{
    return fdl__write_outputs(1, &path, &data, &size, err);
}
