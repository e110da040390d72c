/*
 * Memos in the cache directory (for libs/libmemo.c): small files "<key>.fdlm" beside the
 * entries, encoded, written and checked as entries are (entry.c, dirfiles.c), but never counted,
 * listed, verified or evicted; fdl_cache_clear removes them (fdl__cache_memos_remove).
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cacheint.h"
#include "dirfiles.h"
#include "entry.h"
#include "internal.h"

int fdl__cache_memo_get(const char *dir, const unsigned char key[FDL__CACHE_KEY_SIZE],
                        fdl__cache_sections *out)
{
    memset(out, 0, sizeof *out);
    if (!dir)
        return 0;
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" FDL__MEMO_SUFFIX, hex);
    int ok = 0;
    unsigned char *b = NULL;
    size_t n = 0;
    const char *what;
    int dfd = fdl__cdir_open(dir);
    if (dfd < 0 || fdl__cdir_read(dfd, name, &b, &n, &what) != 1)
        goto cleanup; /* none, or something that is no memo: the library is loaded instead */
    if (fdl__entry_check_memo(b, n, key)[0]) {
        unlinkat(dfd, name, 0); /* torn or foreign: gone, and the library is loaded instead */
        goto cleanup;
    }
    if (fdl__entry_split(out, b, b + FDL__ENTRY_HEADER, n - FDL__ENTRY_HEADER,
                         fdl__entry_nsecs(b))) {
        b = NULL;
        ok = 1;
    }
cleanup:
    if (dfd >= 0)
        close(dfd);
    free(b);
    return ok;
}

void fdl__cache_memo_put(const char *dir, const unsigned char key[FDL__CACHE_KEY_SIZE],
                         const unsigned char *const *secs, const size_t *lens, size_t nsecs)
{
    if (!dir || fdl__cdir_make(dir) != 1)
        return;
    size_t n = 0;
    unsigned char *b = fdl__entry_encode(FDL__CACHE_MEMO, key, secs, lens, nsecs, &n);
    if (!b)
        return;
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" FDL__MEMO_SUFFIX, hex);
    const char *what;
    fdl__cdir_write(dir, name, b, n, &what); /* best effort: without a memo the library is loaded */
    free(b);
}

static int is_memo_name(const char *name)
{
    size_t n = strlen(name);
    unsigned char key[FDL__CACHE_KEY_SIZE];
    return n == 32 + strlen(FDL__MEMO_SUFFIX) && strcmp(name + 32, FDL__MEMO_SUFFIX) == 0 &&
           fdl__cache_key_from_hex(name, key);
}

int fdl__cache_memos_remove(const char *dir, fdl_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return FDL_OK; /* fdl__cdir_scan has just read it; nothing to add */
    int rc = FDL_OK;
    struct dirent *e;
    while (rc == FDL_OK && (e = readdir(d)) != NULL) {
        if (!is_memo_name(e->d_name))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
            char *path = fdl__cdir_join(dir, e->d_name);
            rc = path ? fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot remove: %s",
                                   strerror(errno))
                      : fdl__fail(err, FDL_ENOMEM, "out of memory");
            free(path);
        }
    }
    closedir(d);
    return rc;
}
