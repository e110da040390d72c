/*
 * Entries of the link cache (entry.c): the codec of an entry's bytes, the checks every reader
 * of an entry makes, and signatures. Used by the tiers (tier_memory.c, tier_dir.c), the memos
 * (memo.c), the chain (cache.c) and the administration (admin.c); it uses none of them.
 * Thread-safety: every function is reentrant (no state).
 */
#ifndef FDLINK_CACHE_ENTRY_H
#define FDLINK_CACHE_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "cacheint.h"

/* The header's size: the payload starts there. */
#define FDL__ENTRY_HEADER 64

/* The whole entry for these sections (malloc'ed, the caller frees it), or NULL when out of
 * memory; *size its length. */
unsigned char *fdl__entry_encode(uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE],
                                 const unsigned char *const *secs, const size_t *lens,
                                 size_t nsecs, size_t *size);
/* Split a payload of @p nsecs sections into @p out; 0 when the lengths disagree (then @p buf is
 * freed). Ownership: takes @p buf, which @p payload points into (or NULL: a view, nothing
 * owned). */
int fdl__entry_split(fdl__cache_sections *out, unsigned char *buf, const unsigned char *payload,
                     size_t n, uint32_t nsecs);
/*
 * Check a whole entry proper (".fdlc": a memo's kind is foreign there): header, @p want_key
 * unless NULL, kind, flags, lengths, checksum, sections, and @p payload's check unless NULL.
 * @return "" when good (then *kind_out is its kind), else the problem (a static string)
 */
const char *fdl__entry_check(const unsigned char *b, size_t n, const unsigned char *want_key,
                             uint32_t *kind_out, fdl__cache_payload_fn payload);
/* The same checks of a memo (kind FDL__CACHE_MEMO only, no payload check). */
const char *fdl__entry_check_memo(const unsigned char *b, size_t n, const unsigned char *want_key);
/* Of a checked entry: the payload's length (without the tag of a signed one), the sections. */
size_t fdl__entry_payload_size(const unsigned char *b, size_t n);
uint32_t fdl__entry_nsecs(const unsigned char *b);
/* The kind in the first @p n bytes of what may be an entry (its magic checked); 0 when they are
 * fewer than 16 or no entry's. */
uint32_t fdl__entry_kind_of(const unsigned char *b, size_t n);
/*
 * Sign a whole entry in place under @p u's key: the flag set, the checksum redone, the tag
 * appended (*b reallocated, *n grows). @return 0 when out of memory or no library computes the
 * tag (then the entry is not to be written)
 */
int fdl__entry_sign(const fdl__cache_use *u, unsigned char **b, size_t *n);
/* With a key in force in @p u, whether a checked entry carries a valid tag; without one, 1. */
int fdl__entry_signed_ok(const fdl__cache_use *u, const unsigned char *b, size_t n);

#endif /* FDLINK_CACHE_ENTRY_H */
