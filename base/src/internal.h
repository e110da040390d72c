/*
 * Internal helpers shared by every fdlink module (not installed), in sections named for the file
 * that defines them: error records (error.c), strings and buffers (strbuf.c), character classes
 * (here), name indexes (index.c), files (file.c), the clock (clock.c), shared libraries
 * (sharedlib.c). The ABI module's own are in abi/src/abi_internal.h.
 */
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

/* ---- error.c: error records ------------------------------------------------------------------ */

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
 * Non-zero when @message already names @symbol: it starts with it as a word ("f: ..." or
 * "f ..."), or holds it as "[f]" (a demangled name with its mangled form); a formatter then does
 * not print the symbol again.
 */
int fdl__message_names(const char *message, const char *symbol);

/* Shorthand for errors with no location: fdl__error(err, code, NULL, 0, 0, NULL, fmt, ...). */
int fdl__fail(fdl_error *err, int code, const char *fmt, ...) FDL__PRINTF(3, 4);

/*
 * The details of a record fdl__error has just filled (error.h's FDL_ERROR_HAS_*), each setting
 * its bit; @err NULL is ignored. Set where the message that names them is written, with the same
 * values. fdl__error_decl: the declaration's place (@source NULL: ""); fdl__error_place: the
 * block and thread of a failed FDL_CALL.
 */
void fdl__error_rule(fdl_error *err, int rule);
void fdl__error_decl(fdl_error *err, const char *source, unsigned line, unsigned column);
void fdl__error_library(fdl_error *err, const char *library);
void fdl__error_index(fdl_error *err, unsigned long long index);
void fdl__error_place(fdl_error *err, const unsigned block[3], const unsigned thread[3]);
void fdl__error_count(fdl_error *err, unsigned long long count);

/* ---- strbuf.c: strings, checked sizes, buffers ----------------------------------------------- */

/* Checked arithmetic: return 0 on overflow, 1 otherwise. */
int fdl__size_add(size_t *out, size_t a, size_t b);
int fdl__size_mul(size_t *out, size_t a, size_t b);

/* Duplicate at most @n bytes of @s as a NUL-terminated string; NULL when out of memory. */
char *fdl__strndup(const char *s, size_t n);
char *fdl__strdup(const char *s);

/* Copy @src into @dst of @size bytes, truncating; always NUL-terminates when size > 0. */
void fdl__strlcpy(char *dst, const char *src, size_t size);

/*
 * Grow an array of @elem-byte elements whose capacity is *cap to hold at least @need (> 0)
 * elements; the capacity doubles, from 16, until it does. Returns the array (moved or not) and
 * updates *cap; returns NULL when out of memory or when the size overflows, leaving @arr valid and
 * *cap unchanged.
 */
void *fdl__grow(void *arr, size_t *cap, size_t need, size_t elem);

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
 * Write s[0..n) into @buf of @size bytes for quoting in a message: at most @max bytes of the input,
 * every byte outside printable ASCII as '?', and "..." when shortened, so that a message stays one
 * printable line whatever the input holds. Always NUL-terminates when size > 0. Returns buf.
 */
const char *fdl__quote(char *buf, size_t size, const char *s, size_t n, size_t max);

/* ---- character classes (the table is in strbuf.c) ------------------------------------------ */

/* Bits of fdl__char_class: white space, identifier start, identifier character. */
#define FDL__CC_SPACE 1
#define FDL__CC_IDENT_START 2
#define FDL__CC_IDENT_CHAR 4

/* One lookup per byte instead of a chain of compares; immutable, shared by every thread. */
extern const unsigned char fdl__char_class[256];

/* White space of every fdlink text format: space, TAB, LF, CR, VT, FF (not the locale's). */
static inline int fdl__is_space(unsigned char c)
{
    return fdl__char_class[c] & FDL__CC_SPACE;
}

/* C identifiers: [A-Za-z_][A-Za-z0-9_]* (ASCII only). */
static inline int fdl__is_ident_start(unsigned char c)
{
    return fdl__char_class[c] & FDL__CC_IDENT_START;
}

static inline int fdl__is_ident_char(unsigned char c)
{
    return fdl__char_class[c] & FDL__CC_IDENT_CHAR;
}

/* Non-zero when s[0..n) is a C identifier (not checked against keywords). */
int fdl__is_identifier(const char *s, size_t n);

/* ---- index.c: name indexes ------------------------------------------------------------------- */

/* FNV-1a, 64-bit, of s[0..n). */
uint64_t fdl__hash(const char *s, size_t n);

/*
 * The hash of the name s[0..n) that the name indexes use: eight bytes at a time, for short keys
 * (not FNV-1a: its values are not kept anywhere, and may differ between byte orders).
 */
uint64_t fdl__name_hash(const char *s, size_t n);

/*
 * An open-addressing hash index of names (fdl__name_hash): the owner keeps the entries (an array
 * of anything with a name); the index maps a name to the entry's position. @key gives the
 * NUL-terminated name of entry @index of @owner. Each slot keeps 32 bits of its name's hash
 * beside the entry, so that a probe reads a name only when those agree, and growing needs no
 * name at all. The index is kept at most half full, so probes stay short and lookups are O(1) on
 * average. At most UINT32_MAX - 1 entries. A zeroed fdl__index is empty and valid.
 */
typedef const char *(*fdl__key_fn)(const void *owner, size_t index);

typedef struct fdl__index {
    uint64_t *slots; /* 0 = empty, else (hash bits << 32) | (entry index + 1) */
    size_t mask;     /* slot count - 1; the count is a power of two (0 slots when slots is NULL) */
} fdl__index;

/*
 * Make room for @count entries, moving those already in the index. Returns 0 when out of memory
 * or when the size overflows or exceeds the limit (the index is then unchanged), 1 otherwise.
 */
int fdl__index_reserve(fdl__index *ix, size_t count);

/*
 * The slot of the entry named s[0..n) (s need not be NUL-terminated), or the empty slot where it
 * would go, and in *tag what to put there with an entry: `*slot = *tag | (index + 1)` inserts
 * (or replaces) entry @index. The index must have room (fdl__index_reserve).
 */
uint64_t *fdl__index_slot(const fdl__index *ix, const char *s, size_t n, fdl__key_fn key,
                          const void *owner, uint64_t *tag);

/* The entry index in slot value @v, SIZE_MAX for an empty slot. */
static inline size_t fdl__index_entry(uint64_t v)
{
    return v ? (size_t)(v & 0xFFFFFFFFu) - 1 : SIZE_MAX;
}

/* Index of the entry named s[0..n), or SIZE_MAX when absent (also for an empty index). */
size_t fdl__index_find(const fdl__index *ix, const char *s, size_t n, fdl__key_fn key,
                       const void *owner);

void fdl__index_free(fdl__index *ix);

/* ---- file.c: files --------------------------------------------------------------------------- */

/* "a regular file", "a directory", "a FIFO", "a character device", ... for a st_mode. */
const char *fdl__file_type_name(unsigned mode);

/* Flags of fdl__open_at and fdl__read_at. */
#define FDL__FILE_NOFOLLOW 1 /* a symlink as the last component is refused, not followed */

/*
 * Open @name (relative to @dfd, or AT_FDCWD) for reading without blocking (O_NONBLOCK: a FIFO
 * with no writer does not hang) and check, on the open descriptor, that it is a regular file:
 * FDL_EIO naming @name for a missing file, a symlink under FDL__FILE_NOFOLLOW, a directory, a
 * FIFO, a device, a socket; FDL_ENOMEM when its size does not fit a size_t. On success *fd is
 * open (the caller closes it) and *size (may be NULL) is st_size, which a /proc file sets to 0:
 * read to the end, never by it.
 */
int fdl__open_at(int dfd, const char *name, int flags, int *fd, size_t *size, fdl_error *err);
int fdl__open_file(const char *path, int *fd, size_t *size, fdl_error *err); /* AT_FDCWD, 0 */

/* A bound on what fdl__read_fd reads: @max bytes (a NULL limit: none), said as "larger than <what>". */
typedef struct fdl__read_limit {
    size_t max;
    const char *what; /* e.g. "fdlink's limit of 1 GiB for embedded files (FDLINK_...)" */
} fdl__read_limit;

/*
 * Read @fd to its end into a malloc'ed, NUL-terminated buffer (@hint: the expected size, as a
 * start). FDL_ELIMIT beyond @limit (may be NULL), FDL_EIO on a read error, FDL_ENOMEM; each names
 * @name. *data = NULL on failure. Ownership: *data is the caller's.
 */
int fdl__read_fd(int fd, const char *name, size_t hint, const fdl__read_limit *limit, char **data,
                 size_t *size, fdl_error *err);

/* fdl__open_at then fdl__read_fd: the one way fdlink reads a whole file. */
int fdl__read_at(int dfd, const char *name, int flags, const fdl__read_limit *limit, char **data,
                 size_t *size, fdl_error *err);

/* fdl__read_at(AT_FDCWD, @path, 0, no limit, ...). */
int fdl__read_file(const char *path, char **data, size_t *size, fdl_error *err);

/*
 * Create @name (relative to @dfd) exclusively (O_EXCL | O_NOFOLLOW: never through a name planted
 * there), write @size bytes, fsync when @sync, close; on failure it is removed. The one writer of
 * temporaries: fdl__write_outputs' and the cache's. @return 0 or an errno value.
 */
int fdl__write_new_at(int dfd, const char *name, const void *data, size_t size, int sync);

/*
 * Write @n outputs, all or none. What is at each path decides how: nothing or a regular file is
 * replaced atomically (a temporary in the same folder, fsync'ed, renamed); a symlink to a regular
 * file has its target replaced (the symlink stays); a character device or a FIFO is written into
 * (/dev/null, a terminal, a pipe); /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N are
 * the descriptor itself; a directory, a block device, a socket or a dangling symlink is refused,
 * FDL_EIO naming the path. Every path is judged and every replaced file staged complete before
 * any node is written, and the renames come last, in the order given (put the output build tools
 * watch last). On failure nothing was renamed or written unless a rename itself failed (the folder
 * changed meanwhile).
 */
int fdl__write_outputs(size_t n, const char *const *paths, const void *const *data,
                       const size_t *sizes, fdl_error *err);

/* fdl__write_outputs of one output. */
int fdl__write_atomic(const char *path, const void *data, size_t size, fdl_error *err);

/*
 * The signals that end a program from outside (SIGINT, SIGTERM, SIGHUP, SIGQUIT) held back in the
 * calling thread while a named temporary file exists (a cache entry's, an output's before its
 * rename), so that a program ended by one leaves no temporary behind: the signal is delivered
 * when they are let go. Never held around what may block (a FIFO, a terminal).
 * @p saved receives the thread's mask (an opaque buffer of FDL__SIGSET_SIZE bytes).
 * Thread-safety: affects the calling thread only.
 */
#define FDL__SIGSET_SIZE 128
void fdl__signals_hold(unsigned char saved[FDL__SIGSET_SIZE]);
void fdl__signals_release(const unsigned char saved[FDL__SIGSET_SIZE]);

/* ---- half.c: binary16 (__half) ------------------------------------------------------------- */

/* @d rounded to the nearest binary16 (ties to even), with overflow to infinity and NaN kept. */
uint16_t fdl__half_from_double(double d);
/* A binary16's value, exactly. */
double fdl__half_to_double(uint16_t h);

/* ---- clock.c --------------------------------------------------------------------------------- */

/* Monotonic clock in nanoseconds. */
uint64_t fdl__now_ns(void);

/* ---- sharedlib.c: shared libraries loaded at run time ---------------------------------------- */

/* One entry point of a dynamically loaded library: where its pointer goes in a table. */
typedef struct fdl__symbol {
    const char *name;
    size_t offset;  /* offsetof in the table (a struct of function pointers) */
    int optional;   /* a missing optional symbol leaves its pointer NULL */
} fdl__symbol;

/*
 * Open a shared library (a CUDA library, liblz4) and fill a table of its entry points. When the
 * environment variable @env is set, its value is the only path tried (falling back would hide the
 * mistake); else the names in @names (NULL-terminated) in order. @what names the
 * library in messages ("nvJitLink"), @purpose says what needs it ("to link device code").
 * A missing required symbol is FDL_ENOLIB naming it; the handle then stays open (a library that
 * was mapped may have run initialisers). On success *handle is the library and @table is full.
 */
int fdl__dlopen_table(void **handle, const char *env, const char *const *names, const char *what,
                      const char *purpose, const fdl__symbol *symbols, size_t nsymbols,
                      void *table, fdl_error *err);

/*
 * The library whose dlopen is under way in this process (its name or path as given to dlopen), or
 * NULL: a program's exit guard or signal handler can name the library whose initialiser ended or
 * stalled the process (the CLI's, issue 40). Set around each dlopen of fdl__dlopen_first and of
 * the driver's load; async-signal-safe to read. Global state, with the tables of entry points:
 * one pointer, two stores a load (nothing measurable on a warm start).
 */
const char *fdl__lib_loading(void);
void fdl__lib_loading_set(const char *name);

/*
 * Try loading a library in a child process first, as fdl__dlopen_table would (@env's path, else
 * @names in order): a library whose initialiser exits, crashes or does not finish within
 * FDLINK_PROBE_LIBS_TIMEOUT_MS (default 30 s) is FDL_ENOLIB with one line naming it and what it
 * did; FDL_OK when it loads or none is found (the real load then says why); FDL_EIO when no child
 * can be made. fdl__dlopen_table runs it first when fdl__lib_trial_wanted (FDLINK_PROBE_LIBS=1;
 * `fdlink doctor` sets it; unset, under an address-space limit: `ulimit -v`). Thread-safety: as fork(2) in the calling program.
 */
int fdl__lib_trial(const char *env, const char *const *names, const char *what, fdl_error *err);
int fdl__lib_trial_wanted(void);

/*
 * Open a shared library by the first name in @names (NULL-terminated) that dlopen accepts.
 * On failure: FDL_ENOLIB naming @what (the first name) and @purpose, with dlerror's text.
 */
int fdl__dlopen_first(void **handle, const char *const *names, const char *purpose,
                      fdl_error *err);

/*
 * The file that defines the function at @p fn (dladdr), into @p out; 0 when unknown.
 * Thread-safety: safe.
 */
int fdl__library_of(void (*fn)(void), char *out, size_t size);

#endif /* FDLINK_INTERNAL_H */
