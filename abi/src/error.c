/* Error records, status names and the internal helpers every module shares. */
#define _POSIX_C_SOURCE 200809L
#ifdef __linux__
#define _GNU_SOURCE /* O_TMPFILE */
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

void fdl_error_clear(fdl_error *err)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
}

const char *fdl_status_name(int status)
{
    static const char *const names[] = {
        "FDL_OK",     "FDL_EINVAL", "FDL_ENOMEM",  "FDL_EIO",       "FDL_EPARSE",
        "FDL_EABI",   "FDL_ELINK",  "FDL_ENOTFOUND", "FDL_ENODEVICE", "FDL_ENOLIB",
        "FDL_ECUDA",  "FDL_ELIMIT", "FDL_EKIND",   "FDL_EVERIFY",   "FDL_EDEVICE",
    };
    /* compared as int, so that no negation can overflow */
    if (status > 0 || status <= -(int)(sizeof names / sizeof names[0]))
        return "FDL_E?";
    return names[-status];
}

const char *fdl__quote(char *buf, size_t size, const char *s, size_t n, size_t max)
{
    if (!size)
        return buf;
    size_t keep = n < max ? n : max;
    if (keep > size - 1)
        keep = size - 1;
    /* shortened: make room for "..." when the buffer has any */
    if (keep < n && size > 4 && keep > size - 4)
        keep = size - 4;
    for (size_t i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    buf[keep] = '\0';
    if (keep < n)
        fdl__strlcpy(buf + keep, "...", size - keep);
    return buf;
}

int fdl__is_identifier(const char *s, size_t n)
{
    if (!n || !fdl__is_ident_start((unsigned char)s[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!fdl__is_ident_char((unsigned char)s[i]))
            return 0;
    return 1;
}

int fdl__message_names(const char *message, const char *symbol)
{
    size_t n = strlen(symbol);
    return n && strncmp(message, symbol, n) == 0 && (message[n] == ':' || message[n] == ' ');
}

size_t fdl_error_format(const fdl_error *err, char *buf, size_t size)
{
    if (!err)
        return 0;
    char loc[FDL_ERROR_SOURCE_MAX + 32] = "";
    if (err->source[0] && err->line && err->column)
        snprintf(loc, sizeof loc, "%s:%u:%u: ", err->source, err->line, err->column);
    else if (err->source[0] && err->line)
        snprintf(loc, sizeof loc, "%s:%u: ", err->source, err->line);
    else if (err->source[0])
        snprintf(loc, sizeof loc, "%s: ", err->source);
    int with_symbol = err->symbol[0] && !fdl__message_names(err->message, err->symbol);
    int n = snprintf(buf, size, "%s%s%s%s", loc, with_symbol ? err->symbol : "",
                     with_symbol ? ": " : "", err->message);
    return n < 0 ? 0 : (size_t)n;
}

int fdl__verror(fdl_error *err, int code, const char *source, unsigned line, unsigned column,
                const char *symbol, const char *fmt, va_list ap)
{
    if (!err)
        return code;
    err->code = code;
    err->backend_code = 0;
    err->log = NULL;
    fdl__strlcpy(err->source, source ? source : "", sizeof err->source);
    err->line = line;
    err->column = column;
    fdl__strlcpy(err->symbol, symbol ? symbol : "", sizeof err->symbol);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    return code;
}

int fdl__error(fdl_error *err, int code, const char *source, unsigned line, unsigned column,
               const char *symbol, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdl__verror(err, code, source, line, column, symbol, fmt, ap);
    va_end(ap);
    return code;
}

int fdl__fail(fdl_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdl__verror(err, code, NULL, 0, 0, NULL, fmt, ap);
    va_end(ap);
    return code;
}

int fdl__size_add(size_t *out, size_t a, size_t b)
{
    if (a > SIZE_MAX - b)
        return 0;
    *out = a + b;
    return 1;
}

int fdl__size_mul(size_t *out, size_t a, size_t b)
{
    if (b && a > SIZE_MAX / b)
        return 0;
    *out = a * b;
    return 1;
}

char *fdl__strndup(const char *s, size_t n)
{
    size_t len = 0;
    while (len < n && s[len])
        len++;
    char *p = malloc(len + 1);
    if (!p)
        return NULL;
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *fdl__strdup(const char *s)
{
    return fdl__strndup(s, strlen(s));
}

void fdl__strlcpy(char *dst, const char *src, size_t size)
{
    if (!size)
        return;
    size_t n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

void *fdl__grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap && arr)
        return arr;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return NULL;
        ncap *= 2;
    }
    size_t bytes;
    if (!fdl__size_mul(&bytes, ncap, elem))
        return NULL;
    void *p = realloc(arr, bytes ? bytes : 1);
    if (!p)
        return NULL;
    *cap = ncap;
    return p;
}

static int buf_reserve(fdl__buf *b, size_t extra)
{
    size_t need;
    if (b->oom || !fdl__size_add(&need, b->len, extra) || !fdl__size_add(&need, need, 1)) {
        b->oom = 1;
        return 0;
    }
    if (need <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    char *p = realloc(b->data, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->data = p;
    b->cap = cap;
    return 1;
}

int fdl__buf_append(fdl__buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return 0;
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 1;
}

int fdl__buf_puts(fdl__buf *b, const char *s)
{
    return fdl__buf_append(b, s, strlen(s));
}

int fdl__buf_printf(fdl__buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    int ok = 0;
    if (n >= 0 && buf_reserve(b, (size_t)n)) {
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
        ok = 1;
    } else {
        b->oom = 1;
    }
    va_end(ap2);
    return ok;
}

void fdl__buf_free(fdl__buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

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

uint64_t fdl__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int fdl__dlopen_first(void **handle, const char *const *names, const char *purpose,
                      fdl_error *err)
{
    *handle = NULL;
    char why[256] = "not found";
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            *handle = h;
            return FDL_OK;
        }
        const char *e = dlerror();
        if (i == 0 && e)
            fdl__strlcpy(why, e, sizeof why); /* the next dlopen frees e */
    }
    return fdl__error(err, FDL_ENOLIB, NULL, 0, 0, names[0], "cannot load %s, needed %s: %s",
                      names[0], purpose, why);
}

int fdl__dlopen_table(void **handle, const char *env, const char *const *names, const char *what,
                      const char *purpose, const fdl__symbol *symbols, size_t nsymbols,
                      void *table, fdl_error *err)
{
    *handle = NULL;
    const char *override = env ? getenv(env) : NULL;
    int rc;
    if (override && override[0]) {
        const char *const only[] = {override, NULL};
        char why[160];
        snprintf(why, sizeof why, "%s (path from %s)", purpose, env);
        rc = fdl__dlopen_first(handle, only, why, err);
    } else {
        rc = fdl__dlopen_first(handle, names, purpose, err);
    }
    if (rc != FDL_OK)
        return rc;
    for (size_t i = 0; i < nsymbols; i++) {
        void *sym = dlsym(*handle, symbols[i].name);
        if (!sym && !symbols[i].optional)
            return fdl__error(err, FDL_ENOLIB, NULL, 0, 0, symbols[i].name,
                              "%s lacks %s (needed %s): the library is too old or not %s", what,
                              symbols[i].name, purpose, what);
        /* POSIX guarantees that a data pointer from dlsym can hold a function pointer. */
        memcpy((char *)table + symbols[i].offset, &sym, sizeof sym);
    }
    return FDL_OK;
}
