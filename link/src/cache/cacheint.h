/*
 * Internals of the link cache (cache.c), used by link.c for links and NVRTC compiles: keys
 * built from labelled, length-prefixed fields, entries of sections, the memory and disk tiers.
 */
#ifndef FDLINK_CACHEINT_H
#define FDLINK_CACHEINT_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/cache.h"
#include "fdlink/error.h"

/* The on-disk format; a change of layout or of what a key means takes a new number. */
#define FDL__CACHE_FORMAT 1u

/* Kinds of entries. */
#define FDL__CACHE_LINK 1u
#define FDL__CACHE_NVRTC 2u
#define FDL__CACHE_CHECK 3u /* the post-LTO PTX of the declaration check */
#define FDL__CACHE_MEMO 4u  /* a memo (libmemo.c): "<key>.fdlm", not an entry */
#define FDL__CACHE_PMEMO 5u /* a process memo (fdl__cache_pmemo_*): memory only, never on disk */
#define FDL__CACHE_NVVM 6u  /* a libNVVM compile of an NVVM bitcode input */

#define FDL__CACHE_KEY_SIZE 16
#define FDL__CACHE_MAX_SECTIONS 8

/*
 * A key being built. Every field is hashed as (tag, length, bytes), all little-endian, so that
 * no two different sequences of fields give the same byte stream.
 */
typedef struct fdl__keyb fdl__keyb;

/* A new key of @p kind; its first fields are the format, the kind and the fdlink version. */
fdl__keyb *fdl__keyb_new(uint32_t kind);
void fdl__keyb_bytes(fdl__keyb *k, uint32_t tag, const void *data, size_t size);
/* A string; NULL is a field of its own, distinct from "". */
void fdl__keyb_str(fdl__keyb *k, uint32_t tag, const char *s);
void fdl__keyb_u64(fdl__keyb *k, uint32_t tag, uint64_t v);
/* The key, and the builder freed. @return 0 when out of memory at any point (no key) */
int fdl__keyb_finish(fdl__keyb *k, unsigned char key[FDL__CACHE_KEY_SIZE]);
void fdl__keyb_free(fdl__keyb *k);

/* "<32 hex digits>" of a key. */
void fdl__cache_key_hex(const unsigned char key[FDL__CACHE_KEY_SIZE], char hex[33]);
/* The key of 32 hex digits at @p hex (key.c). @return 1, or 0 when they are not hex */
int fdl__cache_key_from_hex(const char *hex, unsigned char key[FDL__CACHE_KEY_SIZE]);

/* The sections of an entry read back (owned buffer; p[i] point into it). */
typedef struct fdl__cache_sections {
    unsigned char *buf;
    size_t n;
    const unsigned char *p[FDL__CACHE_MAX_SECTIONS];
    size_t len[FDL__CACHE_MAX_SECTIONS];
} fdl__cache_sections;

void fdl__cache_sections_free(fdl__cache_sections *s);

/* One use of the cache: what the options and the environment decided. */
/*
 * The payload of an entry of @p kind, checked as what it stands for: "" when good, else the
 * problem (a static string). The cache folder knows sections, not cubins: the link (core,
 * fdl__cache_payload_problem) hands its check down through fdl__cache_use.payload and the
 * administration's entry points, so that the cache serves only what it would accept as input.
 * Thread-safety: such a function must be safe to call from any thread.
 */
typedef const char *(*fdl__cache_payload_fn)(uint32_t kind, const fdl__cache_sections *s);

typedef struct fdl__cache_use {
    int on;             /* look up and store at all */
    char *dir;          /* the directory, NULL when there is none */
    uint64_t max_size;
    char warning[512];  /* why the directory (or a remote) cannot be used, "" when it can */
    struct fdl__remotes *remotes; /* remote stores (transport.h), NULL for none */
    unsigned char *sign_key;      /* FDLINK_CACHE_KEY_FILE's bytes, NULL for none */
    size_t sign_key_len;
    int quiet_misses;             /* a second look (lease.c): memory and directory only, misses
                                     not counted */
    fdl__cache_payload_fn payload; /* each payload's check (NULL: structure only) */
} fdl__cache_use;

/*
 * Decide: @p mode, the environment, @p dir (NULL: the default location), @p remote (NULL:
 * FDLINK_CACHE_REMOTE; "": none). A signing key that is set but cannot be used turns the cache
 * off (with a warning): entries are then neither trusted nor written unsigned.
 */
void fdl__cache_use_init(fdl__cache_use *u, fdl_cache_mode mode, const char *dir,
                         const char *remote);
void fdl__cache_use_free(fdl__cache_use *u);

/*
 * Look @p key up: memory first, then disk (a disk hit is kept in memory too). A bad entry is
 * removed and counted and is a miss. @return FDL_CACHE_MISS, FDL_CACHE_HIT_MEMORY or
 * FDL_CACHE_HIT_DISK (then *out holds the sections)
 */
fdl_cache_result fdl__cache_get(fdl__cache_use *u, uint32_t kind,
                                const unsigned char key[FDL__CACHE_KEY_SIZE],
                                fdl__cache_sections *out);

/*
 * Store sections under @p key, in memory and on disk (temporary file, rename), then evict down to
 * the bound. A directory that cannot be used fills u->warning (once) and is left alone.
 */
void fdl__cache_put(fdl__cache_use *u, uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE],
                    const unsigned char *const *secs, const size_t *lens, size_t nsecs);

/*
 * Drop the entry of @p kind and @p key from this process's memory and from @p dir (NULL: memory
 * only), as an eviction would: the benchmarks' way to time a link whose own entry is gone while
 * the entries it uses (the declaration check's) stay. Best effort; an absent entry is no error.
 * Thread-safety: safe from any thread.
 */
void fdl__cache_forget(const char *dir, uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE]);

/*
 * The lease of a key (lease.c): one process of those sharing a cache directory links a key that
 * they all miss; the others wait for its entry. A lease is an flock(2) held on "<key>.lease" in
 * the directory, so that it ends with its holder however the holder ends (killed included).
 */
typedef struct fdl__cache_lease {
    int fd;     /* the lease file, locked; -1 when no lease is held */
    int waited; /* another process held the key's lease when this one asked */
    struct fdl__remote_lease *remote; /* the lease on a Redis remote, NULL when none is held */
    size_t remote_i;                  /* which remote holds it */
} fdl__cache_lease;

/* The time to live of a lease on a Redis remote; its holder refreshes it every third of it. */
#define FDL__REMOTE_LEASE_TTL_MS 5000L

/*
 * The lease of @p key on the first writable Redis remote not set aside (tier_remote.c): taken
 * with SET NX PX, waited for until @p deadline_ns (fdl__now_ns) while another machine holds it,
 * the remote's entry looked at after each try. @return FDL_CACHE_HIT_REMOTE (*out) or
 * FDL_CACHE_MISS (lease->remote set when this process holds the lease and links)
 */
fdl_cache_result fdl__cache_remote_lease(fdl__cache_use *u, uint32_t kind,
                                         const unsigned char key[FDL__CACHE_KEY_SIZE],
                                         uint64_t deadline_ns, fdl__cache_lease *lease,
                                         fdl__cache_sections *out);
void fdl__cache_remote_unlease(fdl__cache_use *u, fdl__cache_lease *lease);

/*
 * Look @p key up again under its lease: take the lease, waiting while another process holds it
 * (at most @p timeout_ms), and look again once it is free. @return FDL_CACHE_HIT_* (*out holds
 * the entry the holder stored; no lease held) or FDL_CACHE_MISS (lease->fd >= 0: the caller
 * links and then calls fdl__cache_lease_release; -1: no lease could be had, within the time or
 * at all, and the caller links all the same)
 */
fdl_cache_result fdl__cache_lease_take(fdl__cache_use *u, uint32_t kind,
                                       const unsigned char key[FDL__CACHE_KEY_SIZE],
                                       long timeout_ms, fdl__cache_lease *lease,
                                       fdl__cache_sections *out);
/* Give the lease up (its file removed first, so that a waiter looks at the entry). */
void fdl__cache_lease_release(fdl__cache_use *u, const unsigned char key[FDL__CACHE_KEY_SIZE],
                              fdl__cache_lease *lease);

/*
 * An entry from elsewhere (a remote store, a bundle), whole as it was stored: checked as the
 * directory's entries are (header, @p want_key unless NULL, @p kind unless 0, lengths,
 * checksum, and with a key in force its tag), then written to the directory (and kept in memory).
 * @return 'g' good (then *out holds the sections when @p out is not NULL), 'c' bad, 'u' unsigned
 *         or forged, 'w' good but the directory could not take it
 */
int fdl__cache_adopt(fdl__cache_use *u, uint32_t kind, const unsigned char *want_key,
                     const unsigned char *b, size_t n, fdl__cache_sections *out);
/* Check a whole entry (the directory's checks, @p payload's too unless NULL): "" when good, else
 * the problem. */
const char *fdl__cache_check(const unsigned char *b, size_t n,
                             const unsigned char want_key[FDL__CACHE_KEY_SIZE],
                             fdl__cache_payload_fn payload);
/* fdl_cache_verify, each entry's payload checked by @p payload too unless NULL. */
int fdl__cache_verify(const char *dir, fdl__cache_payload_fn payload, fdl_cache_entry_fn fn,
                      void *ctx, size_t *bad, fdl_error *err);
/* The key of a whole entry's header (0 when it is too short to have one). */
int fdl__cache_entry_key(const unsigned char *b, size_t n, unsigned char key[FDL__CACHE_KEY_SIZE]);

/*
 * The remote tier (tier_remote.c), below the directory: a miss there asks the remotes in order,
 * and a hit is adopted; a new entry (whole, as written) goes to every writable remote. A remote
 * that fails is set aside for the rest of the process (one warning, in u->warning).
 */
fdl_cache_result fdl__cache_remote_get(fdl__cache_use *u, uint32_t kind,
                                       const unsigned char key[FDL__CACHE_KEY_SIZE],
                                       fdl__cache_sections *out);
void fdl__cache_remote_put(fdl__cache_use *u, const unsigned char key[FDL__CACHE_KEY_SIZE],
                           const unsigned char *entry, size_t n);
/* The directory the administration functions work on: @p dir, or the default (fdl_cache_dir).
 * @return FDL_OK, FDL_ELIMIT (longer than @p size), fdl_cache_dir's errors */
int fdl__cache_admin_dir(const char *dir, char *buf, size_t size, fdl_error *err);

/* Count an event of a remote in "<dir>/remote-stats" (tier_remote.c). */
#define FDL__REMOTE_STATS "remote-stats"
void fdl__cache_remote_count(const char *dir, const char *display, char event);
/*
 * Append @p n bytes to @p name in the cache directory @p dir in one write: never through a
 * symlink, into a FIFO or device, or over anything but a regular file (cache.c). 0 done or not
 * possible; -1 when something other than a regular file stands at @p name.
 */
int fdl__cache_append(const char *dir, const char *name, const void *data, size_t n);

/*
 * Memos (libmemo.c): small files "<key>.fdlm" beside the entries, written the same way
 * (temporary file, rename) and checked the same way (header, checksum), but never counted,
 * listed, verified or evicted; fdl_cache_clear removes them. A bad memo is removed.
 * @return 1 and *out when @p dir holds a good memo of @p key, else 0
 */
int fdl__cache_memo_get(const char *dir, const unsigned char key[FDL__CACHE_KEY_SIZE],
                        fdl__cache_sections *out);
/* Store a memo, best effort (nothing is reported). */
void fdl__cache_memo_put(const char *dir, const unsigned char key[FDL__CACHE_KEY_SIZE],
                         const unsigned char *const *secs, const size_t *lens, size_t nsecs);

/*
 * Process memos: facts that hold for the life of the process whatever the cache mode (options
 * the loaded nvJitLink accepted, bytes that fdl_ptx_scan accepted), kept in the memory tier as
 * entries of kind FDL__CACHE_PMEMO with no sections: never written to disk, evicted like any
 * other entry, emptied by fdl_cache_clear. Losing one costs the work it saved, nothing else.
 * @return 1 when @p key (of kind FDL__CACHE_PMEMO) is known
 */
int fdl__cache_pmemo_known(const unsigned char key[FDL__CACHE_KEY_SIZE]);
/* Remember @p key (best effort: out of memory forgets it). */
void fdl__cache_pmemo_put(const unsigned char key[FDL__CACHE_KEY_SIZE]);

#endif /* FDLINK_CACHEINT_H */
