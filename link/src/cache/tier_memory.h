/*
 * The memory tier of the link cache (tier_memory.c): payloads of entries kept in this process,
 * least recently used dropped beyond 64 MiB. The process memos (fdl__cache_pmemo_*, cacheint.h)
 * live in it too. Uses entry.c only.
 * Thread-safety: every function may be called from any thread (one mutex; fork-safe).
 */
#ifndef FDLINK_CACHE_TIER_MEMORY_H
#define FDLINK_CACHE_TIER_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "cacheint.h"

/* The sections of @p key's entry of @p kind, copied into @p out (owned). @return 1 found, 0 not
 * (or out of memory) */
int fdl__cache_mem_get(uint32_t kind, const unsigned char *key, fdl__cache_sections *out);
/* Keep a payload of @p nsecs sections (copied; best effort), dropping the least recently used
 * beyond the bound; an entry of the same kind and key is replaced. */
void fdl__cache_mem_put(uint32_t kind, const unsigned char *key, const unsigned char *payload,
                        size_t size, uint32_t nsecs);
/* Drop @p key's entry of @p kind, if there is one. */
void fdl__cache_mem_forget(uint32_t kind, const unsigned char *key);
/* Forget everything, process memos included (fdl_cache_clear). */
void fdl__cache_mem_clear(void);

#endif /* FDLINK_CACHE_TIER_MEMORY_H */
