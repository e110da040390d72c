/*
 * Files: opening and reading a whole regular file, and writing one atomically (complete or not
 * at all, under concurrent writers and killed processes) (internal.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
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

int fdl__write_atomic(const char *path, const void *data, size_t size, fdl_error *err)
{
    int fd = -1;
    fdl__buf tmp = {0};
    int created = 0; /* the temporary is ours to remove */
    int rc = create_temp(path, &tmp, &fd, err);
    if (rc != FDL_OK)
        goto cleanup;
    created = 1;
    const char *p = data;
    size_t left = size;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "write failed: %s", strerror(errno));
            goto cleanup;
        }
        p += n;
        left -= (size_t)n;
    }
    if (fsync(fd) != 0) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot finish output: %s",
                        strerror(errno));
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
    return rc;
}
