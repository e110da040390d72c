/*
 * The directory tier of the link cache (tier_dir.c): the cache directory's entries, looked up,
 * stored and adopted, and its counters. Uses dirfiles.c, entry.c and the memory tier (a hit is
 * kept there); the chain (cache.c), the remote tier and the administration use it.
 * Thread-safety: as the caller's fdl__cache_use (one per link); the directory is shared by
 * processes, rename being the only atomic step relied on.
 */
#ifndef FDLINK_CACHE_TIER_DIR_H
#define FDLINK_CACHE_TIER_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "cacheint.h"

/* The counters of the directory's tier: one byte per event. */
#define FDL__CACHE_STATS "stats"

/*
 * Look @p key (of @p kind) up in @p u's directory. A bad entry is removed and counted, and is a
 * miss; an unsigned one under a key is kept and is a miss. A directory that cannot be used fills
 * u->warning (once) and is dropped from @p u. @return FDL_CACHE_HIT_DISK (*out holds the
 * sections, owned; the payload kept in memory too), FDL_CACHE_MISS, or FDL_CACHE_UNUSED when
 * there is no directory to look in
 */
fdl_cache_result fdl__cache_dir_get(fdl__cache_use *u, uint32_t kind,
                                    const unsigned char key[FDL__CACHE_KEY_SIZE],
                                    fdl__cache_sections *out);
/* Store a whole entry @p b (as encoded, signed when a key is in force) under @p key, then evict
 * down to the bound; as fdl__cache_dir_get for a directory that cannot be used. */
void fdl__cache_dir_put(fdl__cache_use *u, const unsigned char key[FDL__CACHE_KEY_SIZE],
                        const unsigned char *b, size_t n);
/* One event into "<dir>/stats": 'h' hit, 'm' miss, 'c' corrupt, 'u' unsigned or forged.
 * @return fdl__cache_append's */
int fdl__cache_count(const char *dir, char event);
/* Remove @p key's entry file from @p dir; an absent one is no error (fdl__cache_forget). */
void fdl__cache_dir_forget(const char *dir, const unsigned char key[FDL__CACHE_KEY_SIZE]);

#endif /* FDLINK_CACHE_TIER_DIR_H */
