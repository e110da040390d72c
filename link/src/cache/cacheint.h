/*
 * The link cache's interface to the rest of the library (core/, libs/libmemo.c, bundles): keys
 * built from labelled, length-prefixed fields (key.c), the sections of an entry, the use and the
 * chain over the tiers (cache.c), leases (lease.c), entries adopted and checked (tier_dir.c,
 * entry.c), verification (admin.c), memos (memo.c) and process memos (tier_memory.c). The
 * cache's own files talk through their headers: entry.h, dirfiles.h, tier_memory.h,
 * tier_dir.h, tier_remote.h, transport.h, sign.h.
 */
#ifndef FDLINK_CACHEINT_H
#define FDLINK_CACHEINT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

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

/* Little-endian fields of keys (key.c) and entries (entry.c). */
static inline void fdl__cache_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline void fdl__cache_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t fdl__cache_get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fdl__cache_get64(const unsigned char *p)
{
    return (uint64_t)fdl__cache_get32(p) | (uint64_t)fdl__cache_get32(p + 4) << 32;
}

/* Sleep @p ms milliseconds, a signal notwithstanding (the leases' polls: lease.c, tier_remote.c). */
static inline void fdl__cache_pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

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
 * Look @p key up: memory first, then the directory (a hit is kept in memory too), then the
 * remotes (a hit is adopted into the directory). A bad entry is removed and counted and is a
 * miss. @return FDL_CACHE_MISS, or FDL_CACHE_HIT_MEMORY, _DISK or _REMOTE (then *out holds the
 * sections, owned: fdl__cache_sections_free)
 */
fdl_cache_result fdl__cache_get(fdl__cache_use *u, uint32_t kind,
                                const unsigned char key[FDL__CACHE_KEY_SIZE],
                                fdl__cache_sections *out);

/*
 * Store sections under @p key, in memory, on every writable remote and in the directory
 * (temporary file, rename), then evict down to the bound. A directory that cannot be used fills
 * u->warning (once) and is left alone.
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
    int dfd;    /* the cache directory, open while the lease is held (its release then needs no
                 * new descriptor: under a file limit it still removes the file); -1 */
    int waited; /* another process held the key's lease when this one asked */
    struct fdl__remote_lease *remote; /* the lease on a Redis remote, NULL when none is held */
    size_t remote_i;                  /* which remote holds it */
} fdl__cache_lease;

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
/* Whether @p name is a lease file's name ("<32 hex digits>.lease"). */
int fdl__cache_lease_is_name(const char *name);
/*
 * Remove the lease files of @p dir that no process holds (their holder was killed, or its store
 * failed) or, where locks are not to be had, whose holder's words name a process of this boot of
 * this host that is gone; each reported to @p fn (may be NULL) as kind "lease". Leases held stay.
 * Returns how many were removed (issue 40: `fdlink cache prune`, `clear` and `verify`).
 */
size_t fdl__cache_leases_sweep(const char *dir, fdl_cache_entry_fn fn, void *ctx);
/* Give the lease up (its file removed first, so that a waiter looks at the entry). */
void fdl__cache_lease_release(fdl__cache_use *u, const unsigned char key[FDL__CACHE_KEY_SIZE],
                              fdl__cache_lease *lease);

/*
 * An entry from elsewhere (a remote store, a bundle; tier_dir.c), whole as it was stored:
 * checked as the directory's entries are (header, @p want_key unless NULL, @p kind unless 0,
 * lengths, checksum, and with a key in force its tag), then written to the directory (and kept
 * in memory).
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
/* fdl_cache_verify, each entry's payload checked by @p payload too unless NULL (admin.c). */
int fdl__cache_verify(const char *dir, fdl__cache_payload_fn payload, fdl_cache_entry_fn fn,
                      void *ctx, size_t *bad, fdl_error *err);
/* The key of a whole entry's header (0 when it is too short to have one; entry.c). */
int fdl__cache_entry_key(const unsigned char *b, size_t n, unsigned char key[FDL__CACHE_KEY_SIZE]);

/* The directory the administration functions work on: @p dir, or the default (fdl_cache_dir).
 * @return FDL_OK, FDL_ELIMIT (longer than @p size), fdl_cache_dir's errors (admin.c) */
int fdl__cache_admin_dir(const char *dir, char *buf, size_t size, fdl_error *err);
/* FDLINK_CACHE_MAX_SIZE (fdl_cache_parse_size), the default when unset or empty: 1, or 0 when
 * it is set to what is no size (then *out is the default and @p err, unless NULL, says so). */
int fdl__cache_max_size_env(uint64_t *out, fdl_error *err);

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
/* Remove the memos of @p dir (fdl_cache_clear). @return FDL_OK, FDL_EIO or FDL_ENOMEM */
int fdl__cache_memos_remove(const char *dir, fdl_error *err);

/*
 * Process memos (tier_memory.c): facts that hold for the life of the process whatever the cache
 * mode (options the loaded nvJitLink accepted, bytes that fdl_ptx_scan accepted), kept in the
 * memory tier as entries of kind FDL__CACHE_PMEMO with no sections: never written to disk,
 * evicted like any other entry, emptied by fdl_cache_clear. Losing one costs the work it saved,
 * nothing else.
 * @return 1 when @p key (of kind FDL__CACHE_PMEMO) is known
 */
int fdl__cache_pmemo_known(const unsigned char key[FDL__CACHE_KEY_SIZE]);
/* Remember @p key (best effort: out of memory forgets it). */
void fdl__cache_pmemo_put(const unsigned char key[FDL__CACHE_KEY_SIZE]);

#endif /* FDLINK_CACHEINT_H */
