/* Internal helpers shared by every fdlink module (not installed). */
#ifndef FDLINK_INTERNAL_H
#define FDLINK_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "fdlink/error.h"

#if defined(__GNUC__)
#  define FDL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define FDL__PRINTF(f, a)
#endif

/* Programmer misuse: asserts in debug builds, FDL_EINVAL in release. */
#ifdef NDEBUG
#  define FDL__CHECK_ARG(cond) ((cond) ? 1 : 0)
#else
#  include <assert.h>
#  define FDL__CHECK_ARG(cond) (assert(cond), 1)
#endif

/*
 * Fill @err (if not NULL) and return @code. @source, @symbol may be NULL. The message is formatted
 * with vsnprintf and truncated to fit.
 */
int fdl__error(fdl_error *err, int code, const char *source, unsigned line, unsigned column,
               const char *symbol, const char *fmt, ...) FDL__PRINTF(7, 8);

/* As fdl__error with a va_list. */
int fdl__verror(fdl_error *err, int code, const char *source, unsigned line, unsigned column,
                const char *symbol, const char *fmt, va_list ap);

/*
 * Non-zero when @message already starts with @symbol as a word ("f: ..." or "f ..."), in which
 * case a formatter does not print the symbol again.
 */
int fdl__message_names(const char *message, const char *symbol);

/* Shorthand for errors with no location: fdl__error(err, code, NULL, 0, 0, NULL, fmt, ...). */
int fdl__fail(fdl_error *err, int code, const char *fmt, ...) FDL__PRINTF(3, 4);

/* Checked arithmetic: return 0 on overflow, 1 otherwise. */
int fdl__size_add(size_t *out, size_t a, size_t b);
int fdl__size_mul(size_t *out, size_t a, size_t b);

/* Duplicate at most @n bytes of @s as a NUL-terminated string; NULL when out of memory. */
char *fdl__strndup(const char *s, size_t n);
char *fdl__strdup(const char *s);

/* Copy @src into @dst of @size bytes, truncating; always NUL-terminates when size > 0. */
void fdl__strlcpy(char *dst, const char *src, size_t size);

/* Growable byte buffer. All functions keep data NUL-terminated. */
typedef struct fdl__buf {
    char *data;
    size_t len;
    size_t cap;
    int oom; /* sticky: set when an append failed */
} fdl__buf;

int fdl__buf_append(fdl__buf *b, const char *s, size_t n);
int fdl__buf_puts(fdl__buf *b, const char *s);
int fdl__buf_printf(fdl__buf *b, const char *fmt, ...) FDL__PRINTF(2, 3);
void fdl__buf_free(fdl__buf *b);

/*
 * Read a whole regular file into a malloc'ed, NUL-terminated buffer. A directory, a missing file or
 * a read error is FDL_EIO naming @path. *data = NULL on failure. Ownership: *data is the caller's.
 */
int fdl__read_file(const char *path, char **data, size_t *size, fdl_error *err);

/*
 * Write @size bytes to @path atomically: a temporary file in the same directory, fsync'ed, then
 * renamed over @path. On any failure the temporary is removed and @path is left untouched.
 */
int fdl__write_atomic(const char *path, const void *data, size_t size, fdl_error *err);

/* Monotonic clock in nanoseconds. */
uint64_t fdl__now_ns(void);

/*
 * Open a shared library by the first name in @names (NULL-terminated) that dlopen accepts.
 * On failure: FDL_ENOLIB naming @what (the first name) and @purpose, with dlerror's text.
 */
int fdl__dlopen_first(void **handle, const char *const *names, const char *purpose,
                      fdl_error *err);

#endif /* FDLINK_INTERNAL_H */
