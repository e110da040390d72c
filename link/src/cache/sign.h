/*
 * Signed cache entries (sign.c): the key file and HMAC-SHA256 through libcrypto or libsodium,
 * opened at run time. Where the tag goes in an entry is cache.c's.
 */
#ifndef FDLINK_SIGN_H
#define FDLINK_SIGN_H

#include <stddef.h>

#define FDL__TAG_SIZE 32

/*
 * Read the signing key at @p path: a regular file of 32 to 4096 bytes that belongs to this user
 * and that no one else may read. Also loads the library that computes tags.
 * @return 1 and *key (malloc'ed) and *len, else 0 and @p why (one line, never the key's bytes)
 */
int fdl__sign_key_load(const char *path, unsigned char **key, size_t *len, char *why,
                       size_t wsize);
/* 1 when a library that computes tags loads (else @p why, which may be NULL). */
int fdl__sign_ready(char *why, size_t wsize);
/* HMAC-SHA256 of @p data under @p key; 0 when no library computes it. */
int fdl__hmac_sha256(const unsigned char *key, size_t keylen, const unsigned char *data,
                     size_t n, unsigned char out[FDL__TAG_SIZE]);
/* Tags compared in constant time. */
int fdl__tag_equal(const unsigned char a[FDL__TAG_SIZE], const unsigned char b[FDL__TAG_SIZE]);

#endif /* FDLINK_SIGN_H */
