/*
 * Signed cache entries: the signing key (FDLINK_CACHE_KEY_FILE) and HMAC-SHA256, computed by
 * OpenSSL's libcrypto (libcrypto.so.3, .so.1.1) or else libsodium (libsodium.so.23), opened with
 * dlopen the first time a key is in force. No user without a key loads either.
 *
 * Global state: the table of entry points, filled once under pthread_once, read-only after.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "sign.h"

#define MIN_KEY 32
#define MAX_KEY 4096

typedef struct crypto_fn {
    /* libcrypto */
    const void *(*evp_sha256)(void);
    unsigned char *(*hmac)(const void *md, const void *key, int key_len, const unsigned char *d,
                           size_t n, unsigned char *out, unsigned int *out_len);
    int (*memcmp_ct)(const void *a, const void *b, size_t n);
    /* libsodium */
    int (*sodium_init)(void);
    size_t (*state_bytes)(void);
    int (*init)(void *state, const unsigned char *key, size_t keylen);
    int (*update)(void *state, const unsigned char *in, unsigned long long n);
    int (*final)(void *state, unsigned char *out);
    int (*sodium_memcmp)(const void *a, const void *b, size_t n);
} crypto_fn;

static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    int sodium;
    crypto_fn fn;
} g_crypto = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, 0, {0}};

static void crypto_load(void)
{
    static const char *const ssl[] = {"libcrypto.so.3", "libcrypto.so.1.1", NULL};
    static const fdl__symbol ssl_symbols[] = {
        {"EVP_sha256", offsetof(crypto_fn, evp_sha256), 0},
        {"HMAC", offsetof(crypto_fn, hmac), 0},
        {"CRYPTO_memcmp", offsetof(crypto_fn, memcmp_ct), 0},
    };
    void *h = NULL;
    fdl_error e = FDL_ERROR_INIT;
    g_crypto.status = fdl__dlopen_table(&h, "FDLINK_LIBCRYPTO", ssl, "libcrypto",
                                        "to sign cache entries", ssl_symbols,
                                        sizeof ssl_symbols / sizeof ssl_symbols[0], &g_crypto.fn,
                                        &e);
    if (g_crypto.status == FDL_OK)
        return;
    static const char *const sodium[] = {"libsodium.so.23", "libsodium.so", NULL};
    static const fdl__symbol sodium_symbols[] = {
        {"sodium_init", offsetof(crypto_fn, sodium_init), 0},
        {"crypto_auth_hmacsha256_statebytes", offsetof(crypto_fn, state_bytes), 0},
        {"crypto_auth_hmacsha256_init", offsetof(crypto_fn, init), 0},
        {"crypto_auth_hmacsha256_update", offsetof(crypto_fn, update), 0},
        {"crypto_auth_hmacsha256_final", offsetof(crypto_fn, final), 0},
        {"sodium_memcmp", offsetof(crypto_fn, sodium_memcmp), 0},
    };
    h = NULL;
    g_crypto.status = fdl__dlopen_table(&h, NULL, sodium, "libsodium", "to sign cache entries",
                                        sodium_symbols,
                                        sizeof sodium_symbols / sizeof sodium_symbols[0],
                                        &g_crypto.fn, &g_crypto.error);
    if (g_crypto.status == FDL_OK) {
        g_crypto.sodium = 1;
        if (g_crypto.fn.sodium_init() < 0) {
            g_crypto.status = fdl__fail(&g_crypto.error, FDL_ENOLIB,
                                        "libsodium failed to initialise");
            fdl__error_library(&g_crypto.error, "libsodium");
        }
    } else {
        g_crypto.error = e;
        fdl__fail(&g_crypto.error, FDL_ENOLIB, "signing cache entries needs OpenSSL's libcrypto "
                  "(libcrypto.so.3) or libsodium (libsodium.so.23); neither loads");
    }
}

int fdl__sign_ready(char *why, size_t wsize)
{
    pthread_once(&g_crypto.once, crypto_load);
    if (g_crypto.status != FDL_OK && why)
        snprintf(why, wsize, "%s", g_crypto.error.message);
    return g_crypto.status == FDL_OK;
}

int fdl__hmac_sha256(const unsigned char *key, size_t keylen, const unsigned char *data,
                     size_t n, unsigned char out[FDL__TAG_SIZE])
{
    if (!fdl__sign_ready(NULL, 0) || keylen > MAX_KEY)
        return 0;
    if (!g_crypto.sodium) {
        unsigned int len = 0;
        return g_crypto.fn.hmac(g_crypto.fn.evp_sha256(), key, (int)keylen, data, n, out, &len) &&
               len == FDL__TAG_SIZE;
    }
    size_t sb = g_crypto.fn.state_bytes();
    void *st = malloc(sb ? sb : 1);
    if (!st)
        return 0;
    int ok = g_crypto.fn.init(st, key, keylen) == 0 &&
             g_crypto.fn.update(st, data, (unsigned long long)n) == 0 &&
             g_crypto.fn.final(st, out) == 0;
    memset(st, 0, sb);
    free(st);
    return ok;
}

int fdl__tag_equal(const unsigned char a[FDL__TAG_SIZE], const unsigned char b[FDL__TAG_SIZE])
{
    if (!fdl__sign_ready(NULL, 0))
        return 0;
    return g_crypto.sodium ? g_crypto.fn.sodium_memcmp(a, b, FDL__TAG_SIZE) == 0
                           : g_crypto.fn.memcmp_ct(a, b, FDL__TAG_SIZE) == 0;
}

int fdl__sign_key_load(const char *path, unsigned char **key, size_t *len, char *why,
                       size_t wsize)
{
    *key = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        snprintf(why, wsize, "signing key %.300s cannot be opened (%s)", path, strerror(errno));
        return 0;
    }
    struct stat st;
    int ok = 0;
    unsigned char *b = NULL;
    size_t got = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, wsize, "signing key %.300s is not a regular file", path);
        goto cleanup;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 077)) {
        snprintf(why, wsize, "signing key %.300s must belong to this user and be readable by "
                 "no one else (chmod 600)", path);
        goto cleanup;
    }
    /* read to its end through the one reader, bounded just past the largest key */
    static const fdl__read_limit limit = {MAX_KEY, "the largest signing key"};
    if (fdl__read_fd(fd, path, (size_t)st.st_size, &limit, (char **)&b, &got, NULL) != FDL_OK ||
        got < MIN_KEY) {
        if (b) {
            memset(b, 0, got);
            free(b);
            b = NULL;
        }
        snprintf(why, wsize, "signing key %.300s must hold %d to %d bytes", path, MIN_KEY,
                 MAX_KEY);
        goto cleanup;
    }
    if (!fdl__sign_ready(why, wsize))
        goto cleanup;
    *key = b;
    *len = got;
    b = NULL;
    ok = 1;
cleanup:
    if (b) {
        memset(b, 0, got);
        free(b);
    }
    close(fd);
    return ok;
}
