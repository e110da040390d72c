/*
 * The link cache as a link sees it: the use (what the options and the environment decide: on or
 * off, the directory, its bound, the remotes, the signing key) and the chain over the tiers,
 * memory (tier_memory.c), then the directory (tier_dir.c), then the remotes (tier_remote.c); a
 * new entry goes to all three. The entries' format is entry.c's, the keys key.c's, the
 * administration of fdlink/cache.h admin.c's.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cacheint.h"
#include "entry.h"
#include "fdlink/cache.h"
#include "internal.h"
#include "sign.h"
#include "tier_dir.h"
#include "tier_memory.h"
#include "tier_remote.h"
#include "transport.h"

#define DEFAULT_MAX_SIZE ((uint64_t)512 << 20)

/* ---- the use ----------------------------------------------------------------------------- */
const char *fdl_cache_result_name(fdl_cache_result result)
{
    switch (result) {
    case FDL_CACHE_UNUSED: return "unused";
    case FDL_CACHE_MISS: return "miss";
    case FDL_CACHE_HIT_MEMORY: return "memory";
    case FDL_CACHE_HIT_DISK: return "disk";
    case FDL_CACHE_HIT_REMOTE: return "remote";
    }
    return "unknown";
}

int fdl_cache_enabled(void)
{
    const char *v = getenv("FDLINK_CACHE");
    if (!v)
        return 1;
    return !(strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "no") == 0 ||
             strcmp(v, "false") == 0 || strcmp(v, "OFF") == 0);
}

int fdl_cache_dir(char *buf, size_t size, fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf) || size == 0)
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_dir: buf is NULL or size 0");
    buf[0] = '\0';
    const char *d = getenv("FDLINK_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (d && d[0])
        n = snprintf(buf, size, "%s", d);
    else if (xdg && xdg[0] == '/')
        n = snprintf(buf, size, "%s/fdlink", xdg);
    else if (home && home[0])
        n = snprintf(buf, size, "%s/.cache/fdlink", home);
    else
        return fdl__fail(err, FDL_ENOTFOUND, "no cache directory: set FDLINK_CACHE_DIR, "
                                             "XDG_CACHE_HOME or HOME");
    if (n < 0 || (size_t)n >= size) {
        buf[0] = '\0';
        return fdl__fail(err, FDL_ELIMIT, "the cache directory's path is longer than %zu bytes",
                         size - 1);
    }
    return FDL_OK;
}

int fdl_cache_parse_size(const char *text, uint64_t *bytes)
{
    if (!text || !bytes || !text[0] || text[0] == '-' || text[0] == '+')
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || end == text)
        return 0;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end || n > (UINT64_MAX >> shift))
        return 0;
    *bytes = (uint64_t)n << shift;
    return 1;
}

int fdl__cache_max_size_env(uint64_t *out, fdl_error *err)
{
    const char *v = getenv("FDLINK_CACHE_MAX_SIZE");
    *out = DEFAULT_MAX_SIZE;
    if (!v || !v[0])
        return 1;
    uint64_t n = 0;
    if (fdl_cache_parse_size(v, &n)) {
        *out = n;
        return 1;
    }
    fdl__fail(err, FDL_EINVAL, "FDLINK_CACHE_MAX_SIZE='%.40s%s' is not a size (bytes, or with K, "
              "M or G: e.g. 512M, 2G)", v, strlen(v) > 40 ? "..." : "");
    return 0;
}

void fdl__cache_use_init(fdl__cache_use *u, fdl_cache_mode mode, const char *dir,
                         const char *remote)
{
    memset(u, 0, sizeof *u);
    u->on = mode == FDL_CACHE_ON || (mode == FDL_CACHE_AUTO && fdl_cache_enabled());
    if (!u->on)
        return;
    const char *key_file = getenv("FDLINK_CACHE_KEY_FILE");
    if (key_file && key_file[0]) {
        char why[400];
        if (!fdl__sign_key_load(key_file, &u->sign_key, &u->sign_key_len, why, sizeof why)) {
            /* neither trust unsigned entries nor write any: no cache at all */
            snprintf(u->warning, sizeof u->warning, "cache not used: %s", why);
            u->on = 0;
            return;
        }
    }
    u->remotes = fdl__remotes_new(remote ? remote : getenv("FDLINK_CACHE_REMOTE"), u->warning,
                                  sizeof u->warning);
    fdl_error bad = FDL_ERROR_INIT;
    if (!fdl__cache_max_size_env(&u->max_size, &bad)) {
        /* a bound that cannot be read is not guessed at: no cache, said once */
        snprintf(u->warning, sizeof u->warning, "cache not used: %.400s", bad.message);
        u->on = 0;
        return;
    }
    char path[4096];
    fdl_error e = FDL_ERROR_INIT;
    if (dir && dir[0])
        u->dir = fdl__strdup(dir);
    else if (fdl_cache_dir(path, sizeof path, &e) == FDL_OK)
        u->dir = fdl__strdup(path);
    else
        snprintf(u->warning, sizeof u->warning, "cache not used: %.400s", e.message);
}

void fdl__cache_use_free(fdl__cache_use *u)
{
    free(u->dir);
    u->dir = NULL;
    fdl__remotes_free(u->remotes);
    u->remotes = NULL;
    if (u->sign_key)
        memset(u->sign_key, 0, u->sign_key_len);
    free(u->sign_key);
    u->sign_key = NULL;
}


/* ---- the chain over the tiers ------------------------------------------------------------ */
fdl_cache_result fdl__cache_get(fdl__cache_use *u, uint32_t kind,
                                const unsigned char key[FDL__CACHE_KEY_SIZE],
                                fdl__cache_sections *out)
{
    memset(out, 0, sizeof *out);
    if (!u->on)
        return FDL_CACHE_MISS;
    if (fdl__cache_mem_get(kind, key, out))
        return FDL_CACHE_HIT_MEMORY;
    fdl_cache_result r = fdl__cache_dir_get(u, kind, key, out);
    /* no directory: the remotes; a miss there too, unless this is a second look under a lease
     * (fdl__cache_lease_take: the directory only) */
    if (r == FDL_CACHE_UNUSED || (r == FDL_CACHE_MISS && !u->quiet_misses))
        r = fdl__cache_remote_get(u, kind, key, out);
    return r;
}

void fdl__cache_put(fdl__cache_use *u, uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE],
                    const unsigned char *const *secs, const size_t *lens, size_t nsecs)
{
    if (!u->on || nsecs > FDL__CACHE_MAX_SECTIONS)
        return;
    /* never stored what would not be served */
    fdl__cache_sections view;
    memset(&view, 0, sizeof view);
    view.n = nsecs;
    for (size_t i = 0; i < nsecs; i++) {
        view.p[i] = secs[i];
        view.len[i] = lens[i];
    }
    if (u->payload && u->payload(kind, &view)[0])
        return;
    size_t n = 0;
    unsigned char *b = fdl__entry_encode(kind, key, secs, lens, nsecs, &n);
    if (!b)
        return;
    fdl__cache_mem_put(kind, key, b + FDL__ENTRY_HEADER, n - FDL__ENTRY_HEADER, (uint32_t)nsecs);
    if (!u->sign_key || fdl__entry_sign(u, &b, &n)) { /* never written unsigned under a key */
        fdl__cache_remote_put(u, key, b, n);
        fdl__cache_dir_put(u, key, b, n);
    }
    free(b);
}

void fdl__cache_forget(const char *dir, uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE])
{
    fdl__cache_mem_forget(kind, key);
    if (dir)
        fdl__cache_dir_forget(dir, key);
}
