/*
 * The remote tier of the link cache (tier_remote.c), below the directory, over the remote
 * stores' transport (transport.c). Uses the directory tier (a hit is adopted), the memory
 * tier's process memos (a remote set aside), dirfiles.c (its counters) and the keys; the chain
 * (cache.c) and the leases (lease.c) use it.
 * Thread-safety: as the caller's fdl__cache_use; the set-aside memos are process-wide.
 */
#ifndef FDLINK_CACHE_TIER_REMOTE_H
#define FDLINK_CACHE_TIER_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "cacheint.h"

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

/* Count an event of a remote in "<dir>/remote-stats" (tier_remote.c). */
#define FDL__REMOTE_STATS "remote-stats"
void fdl__cache_remote_count(const char *dir, const char *display, char event);

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

#endif /* FDLINK_CACHE_TIER_REMOTE_H */
