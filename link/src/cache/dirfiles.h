/*
 * The files of the cache directory (dirfiles.c), every name there handled as hostile: never
 * followed through a symlink, no FIFO waited on, no device opened, written only by an exclusive
 * temporary renamed over the name. Used by the directory tier (tier_dir.c), the memos (memo.c)
 * and the administration (admin.c); it uses only abi's helpers.
 * Thread-safety: every function is reentrant; concurrent processes are the directory's concern
 * (rename is the only atomic step relied on).
 */
#ifndef FDLINK_CACHE_DIRFILES_H
#define FDLINK_CACHE_DIRFILES_H

#include <stddef.h>
#include <stdint.h>

/* The names fdlink gives its files there: "<32 hex digits>" and a suffix; a temporary is
 * "<name>" FDL__TEMP_MARK "<host>.<pid>.<nonce>". */
#define FDL__ENTRY_SUFFIX ".fdlc"
#define FDL__MEMO_SUFFIX ".fdlm"
#define FDL__TEMP_MARK ".fdlc.tmp."

/* mkdir -p: 1 done, 0 cannot be created (errno), -1 exists and is no folder. */
int fdl__cdir_make(const char *dir);
/* "<dir>/<name>" (malloc'ed), NULL when out of memory. */
char *fdl__cdir_join(const char *dir, const char *name);
/* The cache directory opened for the *at calls; -1 with errno. */
int fdl__cdir_open(const char *dir);
/* What stands at @p name when it is something fdlink does not touch there ("" otherwise). */
const char *fdl__cdir_foreign(int dfd, const char *name);
/*
 * Open the regular file @p name of @p dfd for reading: 1 and *fd (the caller closes it); 0 when
 * there is none (or it went away); -1 when something else is there (*what says what), which is
 * left alone.
 */
int fdl__cdir_open_file(int dfd, const char *name, int *fd, const char **what);
/* Read the regular file @p name of @p dfd whole (at most 1 GiB) into *out (malloc'ed); returns
 * as fdl__cdir_open_file, and -1 for a file larger than any entry. */
int fdl__cdir_read(int dfd, const char *name, unsigned char **out, size_t *size,
                   const char **what);
/*
 * Write @p data to @p name in @p dir: a temporary created exclusively beside it (not synced: an
 * entry torn by a crash fails its checksum and is computed afresh), renamed over the name. 1
 * done; 0 with errno on failure; -1 when something fdlink does not replace stands at the name (a
 * directory), *what saying what; -2 when the temporary vanished before its rename.
 */
int fdl__cdir_write(const char *dir, const char *name, const unsigned char *data, size_t n,
                    const char **what);
/*
 * Append @p n bytes to @p name in the cache directory @p dir in one write(2) (O_APPEND: lines
 * never mix, no lock): never through a symlink, into a FIFO or device, or over anything but a
 * regular file. 0 done or not possible; -1 when something other than a regular file stands at
 * @p name.
 */
int fdl__cache_append(const char *dir, const char *name, const void *data, size_t n);
/* Remove the name @p name of @p dir (never what a symlink there points to); unlink's result. */
int fdl__cdir_unlink(const char *dir, const char *name);

/* A directory's entries and temporaries, as fdl__cdir_scan found them. */
typedef struct fdl__cdir_item {
    char *name;
    uint64_t size;
    int64_t mtime_ns;
    int temp;
} fdl__cdir_item;

typedef struct fdl__cdir_listing {
    fdl__cdir_item *v;
    size_t n, cap;
    uint64_t bytes;
    size_t entries, temps;
    size_t ignored; /* names fdlink uses that hold no regular file */
} fdl__cdir_listing;
/* Entries and temporary files of @p dir (regular files only; the others counted as ignored) into
 * @p s (owned: fdl__cdir_scan_free); a missing directory is empty. 0 with errno. */
int fdl__cdir_scan(const char *dir, fdl__cdir_listing *s);
void fdl__cdir_scan_free(fdl__cdir_listing *s);
/* Remove least recently used entries until at most @p max bytes remain (@p s sorted by age and
 * updated); returns how many. */
size_t fdl__cdir_evict(const char *dir, fdl__cdir_listing *s, uint64_t max);
/* Whether a temporary file's writer is gone: its process is not running here, or it is old. */
int fdl__cdir_temp_is_stale(const fdl__cdir_item *it);

#endif /* FDLINK_CACHE_DIRFILES_H */
