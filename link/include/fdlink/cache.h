/**
 * @file fdlink/cache.h
 * The persistent cache of links and NVRTC compiles (docs/cache.md).
 *
 * fdl_link_complete and CUDA C inputs consult it by default: a link whose key (every input's kind
 * and bytes in order, the options in canonical form, the architecture, the backend and its
 * version, the declarations' canonical text, the fdlink version and the cache format) was made
 * before comes back from memory (the same process) or from disk, without running nvJitLink or
 * NVRTC. Where: FDLINK_CACHE_DIR, else $XDG_CACHE_HOME/fdlink, else ~/.cache/fdlink. Off:
 * FDLINK_CACHE=0, or the cache field of fdl_link_options. Bound: FDLINK_CACHE_MAX_SIZE (bytes,
 * or with a K, M or G suffix for KiB, MiB, GiB; default 512M), least recently used entries
 * removed first.
 *
 * Remote stores (Redis, HTTP) behind the directory: FDLINK_CACHE_REMOTE, or the cache_remote
 * field of fdl_link_options, in ccache's remote_storage syntax (README, "Remote storage"). Signed
 * entries: FDLINK_CACHE_KEY_FILE (README, "Signed entries").
 *
 * Each entry is one file, `<32 hex digits>.fdlc`: a header (magic, format version, kind, key,
 * lengths) and an XXH3-128 checksum of header and payload; written to a temporary file in the
 * directory and renamed into place, so that readers see a whole entry or none. An entry that
 * fails any check is a miss: it is removed and counted. No lock is taken: the directory may be
 * shared by processes and machines.
 *
 * The functions here administer a cache directory: @p dir NULL means the default location above.
 *
 * Thread-safety: every function may be called from any thread at any time, also while other
 * processes use the same directory.
 */
#ifndef FDLINK_CACHE_H
#define FDLINK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/error.h"
#include "fdlink/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Whether a link uses the cache (fdl_link_options.cache). Values are pinned. */
typedef enum fdl_cache_mode {
    FDL_CACHE_AUTO = 0, /**< on, unless the environment says FDLINK_CACHE=0 */
    FDL_CACHE_ON = 1,   /**< on, whatever the environment says */
    FDL_CACHE_OFF = 2   /**< off: neither looked up nor stored, memory or disk */
} fdl_cache_mode;

/** Where a link's result came from (fdl_link_cache_result). Values are pinned. */
typedef enum fdl_cache_result {
    FDL_CACHE_UNUSED = 0,     /**< the cache was off, or the link has not completed */
    FDL_CACHE_MISS = 1,       /**< linked afresh (and stored, when the cache was usable) */
    FDL_CACHE_HIT_MEMORY = 2, /**< from this process's memory */
    FDL_CACHE_HIT_DISK = 3,   /**< from the cache directory */
    FDL_CACHE_HIT_REMOTE = 4  /**< from a remote store (FDLINK_CACHE_REMOTE), now also on disk */
} fdl_cache_result;

/** Name of a result ("unused", "miss", "memory", "disk", "remote"); static string. */
FDL_API const char *fdl_cache_result_name(fdl_cache_result result);

/** What fdl_cache_stats reports. */
typedef struct fdl_cache_stats {
    size_t entries;      /**< entry files */
    uint64_t bytes;      /**< their total size */
    uint64_t max_size;   /**< the bound (FDLINK_CACHE_MAX_SIZE or the default) */
    size_t temporaries;  /**< temporary files of writers (running, or killed) */
    uint64_t hits;       /**< lookups answered from disk, since the last clear */
    uint64_t misses;     /**< lookups that found no entry */
    uint64_t corrupt;    /**< entries found bad (and removed) */
    uint64_t unsigned_forged; /**< with a signing key: entries without a valid tag (misses) */
} fdl_cache_stats;

/** One entry or temporary file, as fdl_cache_list and fdl_cache_verify report it. */
typedef struct fdl_cache_entry {
    const char *name;    /**< file name in the directory */
    const char *kind;    /**< "link", "nvrtc", "check", "temporary", "lease" or "unknown" */
    uint64_t size;       /**< bytes of the file */
    int64_t mtime;       /**< last use, seconds since the epoch */
    const char *problem; /**< fdl_cache_verify: why it is bad (then removed), else NULL */
} fdl_cache_entry;

/** Called once per entry; @p entry is valid during the call only. */
typedef void (*fdl_cache_entry_fn)(void *ctx, const fdl_cache_entry *entry);

/**
 * The cache directory in use: FDLINK_CACHE_DIR, else $XDG_CACHE_HOME/fdlink (an absolute
 * XDG_CACHE_HOME only), else $HOME/.cache/fdlink. It may not exist yet.
 * @param buf receives the path, NUL-terminated
 * @return FDL_OK, FDL_ENOTFOUND (none of the variables is set), FDL_ELIMIT (longer than @p size),
 *         FDL_EINVAL (NULL buf)
 * Ownership: the caller's buffer.
 */
FDL_API int fdl_cache_dir(char *buf, size_t size, fdl_error *err);

/**
 * Parse a cache size as FDLINK_CACHE_MAX_SIZE and `fdlink cache prune --max-size` take it:
 * bytes, or with a K, M or G suffix (KiB, MiB, GiB; "KiB", "B" also accepted), e.g. "512M".
 * @param text the size (NULL allowed: not a size)
 * @param bytes receives the size in bytes
 * @return 1 when @p text is a size, else 0 (and @p bytes is unchanged)
 * Ownership: nothing is allocated. Thread-safety: safe from any thread.
 */
FDL_API int fdl_cache_parse_size(const char *text, uint64_t *bytes);

/**
 * Non-zero unless the environment turns the cache off (FDLINK_CACHE=0, "off", "no", "false").
 * Ownership: nothing is allocated.
 */
FDL_API int fdl_cache_enabled(void);

/**
 * Count the entries of @p dir and read its counters. A missing directory has none.
 * @return FDL_OK, FDL_EIO (unreadable directory), FDL_ENOTFOUND (no default location), FDL_EINVAL
 * Ownership: @p out is the caller's.
 */
FDL_API int fdl_cache_stats_get(fdl_cache_stats *out, const char *dir, fdl_error *err);

/**
 * Call @p fn for every entry and temporary file of @p dir, in no particular order.
 * @return FDL_OK, FDL_EIO, FDL_ENOTFOUND, FDL_EINVAL (NULL fn)
 * Ownership: each fdl_cache_entry is borrowed for the duration of its call.
 */
FDL_API int fdl_cache_list(const char *dir, fdl_cache_entry_fn fn, void *ctx, fdl_error *err);

/**
 * Remove every entry, counter and stale temporary file of @p dir (the directory stays), and the
 * leases no process holds, and empty this process's memory cache. A temporary file of a writer
 * that still runs on this host, or of another host's writer, younger than an hour, stays: its
 * writer renames it into place; so does a lease that a process holds.
 * @param removed receives how many files were removed (may be NULL)
 * @return FDL_OK, FDL_EIO (a file could not be removed), FDL_ENOTFOUND, FDL_EINVAL
 * Ownership: nothing is allocated for the caller.
 */
FDL_API int fdl_cache_clear(const char *dir, size_t *removed, fdl_error *err);

/**
 * Remove least recently used entries until @p dir holds at most @p max_size bytes (0: the bound
 * in force, FDLINK_CACHE_MAX_SIZE or 512 MiB), temporary files whose writer is gone (its
 * process no longer runs on this host, or the file is older than an hour) and the leases
 * ("<key>.lease") that no process holds (a killed link's, or one whose store failed).
 * @param removed receives how many files were removed (may be NULL)
 * @return FDL_OK, FDL_EIO, FDL_ENOTFOUND, FDL_EINVAL
 * Ownership: nothing is allocated for the caller.
 */
FDL_API int fdl_cache_prune(const char *dir, uint64_t max_size, size_t *removed, fdl_error *err);

/**
 * Read and check every entry of @p dir (header, key, lengths, checksum), remove the bad ones,
 * the temporary files whose writer is gone and the leases no process holds, and report each one
 * to @p fn (may be NULL) with its problem.
 * @param bad receives how many bad files were found (may be NULL)
 * @return FDL_OK (also when bad entries were found and removed), FDL_EIO, FDL_ENOTFOUND,
 *         FDL_EINVAL
 * Ownership: each fdl_cache_entry given to @p fn is borrowed for the duration of its call.
 */
FDL_API int fdl_cache_verify(const char *dir, fdl_cache_entry_fn fn, void *ctx, size_t *bad,
                             fdl_error *err);

/**
 * Write the entries of @p dir as one bundle file at @p path (a temporary file, renamed): all of
 * them, or those of @p keys. Each entry is checked first; with all entries, a bad one is left
 * out; with @p keys, a key without a good entry is an error.
 * @param keys NULL-terminated keys (32 lower-case hex digits, as fdl_link_cache_result gives
 *        them), or NULL for every entry
 * @param exported receives how many entries the bundle holds (may be NULL)
 * @return FDL_OK, FDL_EINVAL (NULL path, a malformed key), FDL_ENOTFOUND (a key without a good
 *         entry), FDL_EIO (the directory or @p path), FDL_ENOMEM
 * Ownership: nothing is allocated for the caller.
 */
FDL_API int fdl_cache_export(const char *dir, const char *path, const char *const *keys,
                             size_t *exported, fdl_error *err);

/**
 * Add the entries of the bundle at @p path to @p dir. The bundle's checksum is checked, then each
 * entry as the directory's own are (header, lengths, checksum) and, with a signing key in force
 * (FDLINK_CACHE_KEY_FILE), its tag: an entry that fails is not added, and counted.
 * @param imported, rejected, unsigned_forged receive how many entries were added, refused in all,
 *        and refused for want of a valid tag (each may be NULL)
 * @return FDL_OK (also when entries were refused), FDL_EPARSE (not a bundle, damaged or
 *         truncated: the message gives the byte), FDL_EIO (@p path unreadable, the directory
 *         unwritable, an unusable signing key), FDL_EINVAL, FDL_ENOMEM
 * Ownership: nothing is allocated for the caller.
 */
FDL_API int fdl_cache_import(const char *dir, const char *path, size_t *imported,
                             size_t *rejected, size_t *unsigned_forged, fdl_error *err);

/** One remote store of the cache, as fdl_cache_remotes reports it. */
typedef struct fdl_cache_remote {
    const char *url;          /**< scheme, host, port and path: never a user or a password */
    int read_only;            /**< `|read-only`: looked up, never written */
    uint64_t hits;            /**< lookups it answered with a good entry */
    uint64_t misses;          /**< lookups it had no (good) entry for */
    uint64_t errors;          /**< failures (each set it aside for the rest of its process) */
    uint64_t corrupt;         /**< entries it served that failed their checks */
    uint64_t unsigned_forged; /**< with a signing key: entries it served without a valid tag */
} fdl_cache_remote;

/** Called once per remote; @p remote is valid during the call only. */
typedef void (*fdl_cache_remote_fn)(void *ctx, const fdl_cache_remote *remote);

/**
 * The remote stores of @p spec (NULL: FDLINK_CACHE_REMOTE) in order, with what the processes
 * that used the cache directory @p dir (NULL: the default) counted of each. Nothing is asked of
 * the servers.
 * @return FDL_OK, FDL_EINVAL (NULL fn, or a URL of @p spec that cannot be used: the message says
 *         which, by position, and why; the good ones are still reported), FDL_ENOTFOUND
 * Ownership: each fdl_cache_remote is borrowed for the duration of its call.
 */
FDL_API int fdl_cache_remotes(const char *dir, const char *spec, fdl_cache_remote_fn fn,
                              void *ctx, fdl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_CACHE_H */
