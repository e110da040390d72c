/*
 * Files: opening and reading a whole regular file, and writing one atomically (complete or not
 * at all, under concurrent writers and killed processes) (internal.h).
 */
#define _POSIX_C_SOURCE 200809L
#ifdef __linux__
#define _GNU_SOURCE /* O_TMPFILE */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int fdl__open_file(const char *path, int *fd, size_t *size, fdl_error *err)
{
    *fd = -1;
    *size = 0;
    int rc = FDL_OK;
    int f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot stat: %s", strerror(errno));
        goto cleanup;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "is a directory, not a file");
        goto cleanup;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "is not a regular file");
        goto cleanup;
    }
    if (st.st_size < 0 || (uintmax_t)st.st_size >= SIZE_MAX) {
        rc = fdl__error(err, FDL_ENOMEM, path, 0, 0, NULL, "file too large to read");
        goto cleanup;
    }
    *size = (size_t)st.st_size;
    *fd = f;
    f = -1;
cleanup:
    if (f >= 0)
        close(f);
    return rc;
}

int fdl__read_file(const char *path, char **data, size_t *size, fdl_error *err)
{
    *data = NULL;
    if (size)
        *size = 0;
    char *buf = NULL;
    int fd;
    size_t cap;
    int rc = fdl__open_file(path, &fd, &cap, err);
    if (rc != FDL_OK)
        return rc;
    buf = malloc(cap + 1);
    if (!buf) {
        rc = fdl__error(err, FDL_ENOMEM, path, 0, 0, NULL, "out of memory reading %zu bytes", cap);
        goto cleanup;
    }
    size_t got = 0;
    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "read failed: %s", strerror(errno));
            goto cleanup;
        }
        if (n == 0)
            break; /* file shrank while reading: keep what is there */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *data = buf;
    buf = NULL;
    if (size)
        *size = got;
cleanup:
    free(buf);
    close(fd);
    return rc;
}

/*
 * Create a new temporary file next to @path, named "<path>.tmp.<pid>.<nonce>", with mode 0666
 * less the umask (as any new file gets). The umask is applied by open() and never changed:
 * changing it, even for a moment, would race with every other thread of the process.
 */
static int create_temp(const char *path, fdl__buf *name, int *fd, fdl_error *err)
{
    uint64_t nonce = fdl__now_ns() ^ ((uint64_t)(uintptr_t)name << 16);
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        nonce = nonce * 6364136223846793005u + 1442695040888963407u; /* next, on a collision */
        name->len = 0;
        if (!fdl__buf_printf(name, "%s.tmp.%ld.%06llx", path, (long)getpid(),
                             (unsigned long long)(nonce >> 40)))
            return fdl__error(err, FDL_ENOMEM, path, 0, 0, NULL, "out of memory");
        *fd = open(name->data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (*fd >= 0)
            return FDL_OK;
        if (errno != EEXIST)
            break;
    }
    return fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot create output: %s",
                      strerror(errno));
}

/* All of @p size bytes of @p data to @p fd, then fsync. @return 0, or an errno value. */
static int write_all(int fd, const void *data, size_t size, int *failed_sync)
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
    if (fsync(fd) != 0) {
        *failed_sync = 1;
        return errno;
    }
    return 0;
}

/*
 * Remove what a writer of @p path that was killed may have left: "<path>.tmp.<pid>.<nonce>" of a
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

#ifdef O_TMPFILE
/*
 * Write @p data into an unnamed file in the output's folder (O_TMPFILE), give it a temporary
 * name only once it is complete and synced, then rename it into place. A process killed while
 * writing leaves nothing behind; one killed between the two calls that name and rename leaves a
 * complete temporary file, which the next write of the same output removes (remove_stale).
 * @return FDL_OK, FDL_EIO, FDL_ENOMEM; 1 when O_TMPFILE cannot be used here (the caller falls
 * back to a named temporary file, which gives the same errors for a missing or read-only folder)
 */
static int write_unnamed(const char *path, const void *data, size_t size, fdl_error *err)
{
    const char *slash = strrchr(path, '/');
    fdl__buf dir = {0}, proc = {0}, tmp = {0};
    int fd = -1, rc = 1;
    if (slash ? !fdl__buf_printf(&dir, "%.*s", (int)(slash - path + 1), path)
              : !fdl__buf_puts(&dir, "."))
        goto cleanup;
    fd = open(dir.data, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        goto cleanup; /* not supported here, or the folder is missing or read-only: fall back */
    int failed_sync, e = write_all(fd, data, size, &failed_sync);
    if (e) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "%s: %s",
                        failed_sync ? "cannot finish output" : "write failed", strerror(e));
        goto cleanup;
    }
    uint64_t nonce = fdl__now_ns() ^ ((uint64_t)(uintptr_t)&dir << 16);
    if (!fdl__buf_printf(&proc, "/proc/self/fd/%d", fd)) {
        rc = fdl__error(err, FDL_ENOMEM, path, 0, 0, NULL, "out of memory");
        goto cleanup;
    }
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        nonce = nonce * 6364136223846793005u + 1442695040888963407u;
        tmp.len = 0;
        if (!fdl__buf_printf(&tmp, "%s.tmp.%ld.%06llx", path, (long)getpid(),
                             (unsigned long long)(nonce >> 40))) {
            rc = fdl__error(err, FDL_ENOMEM, path, 0, 0, NULL, "out of memory");
            goto cleanup;
        }
        if (linkat(AT_FDCWD, proc.data, AT_FDCWD, tmp.data, AT_SYMLINK_FOLLOW) == 0) {
            if (rename(tmp.data, path) != 0) {
                rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot rename into place: %s",
                                strerror(errno));
                unlink(tmp.data);
                goto cleanup;
            }
            rc = FDL_OK;
            goto cleanup;
        }
        if (errno != EEXIST)
            break; /* no /proc, say: fall back to a named temporary file */
    }
cleanup:
    if (fd >= 0)
        close(fd);
    fdl__buf_free(&dir);
    fdl__buf_free(&proc);
    fdl__buf_free(&tmp);
    return rc;
}
#endif

int fdl__write_atomic(const char *path, const void *data, size_t size, fdl_error *err)
{
#ifdef O_TMPFILE
    int unnamed = write_unnamed(path, data, size, err);
    if (unnamed != 1) {
        if (unnamed == FDL_OK)
            remove_stale(path);
        return unnamed;
    }
#endif
    int fd = -1;
    fdl__buf tmp = {0};
    int created = 0; /* the temporary is ours to remove */
    int rc = create_temp(path, &tmp, &fd, err);
    if (rc != FDL_OK)
        goto cleanup;
    created = 1;
    int failed_sync, e = write_all(fd, data, size, &failed_sync);
    if (e) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "%s: %s",
                        failed_sync ? "cannot finish output" : "write failed", strerror(e));
        goto cleanup;
    }
    if (close(fd) != 0) {
        fd = -1;
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "close failed: %s", strerror(errno));
        goto cleanup;
    }
    fd = -1;
    if (rename(tmp.data, path) != 0) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot rename into place: %s",
                        strerror(errno));
        goto cleanup;
    }
cleanup:
    if (fd >= 0)
        close(fd);
    if (rc != FDL_OK && created)
        unlink(tmp.data);
    fdl__buf_free(&tmp);
    if (rc == FDL_OK)
        remove_stale(path);
    return rc;
}
