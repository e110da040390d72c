/*
 * Remote stores of the link cache (transport.c, and a file per protocol: transport_redis.c,
 * transport_http.c): ccache's remote_storage URLs parsed, and entries got and put by key on
 * Redis (hiredis) and HTTP servers (libcurl), both opened with dlopen the first time a remote is
 * asked. Nothing here knows what an entry holds: cache.c checks what a
 * remote answers, exactly as it checks what the directory holds.
 */
#ifndef FDLINK_TRANSPORT_H
#define FDLINK_TRANSPORT_H

#include <stddef.h>

/* The remotes of one use of the cache. One thread at a time; may move between threads. */
typedef struct fdl__remotes fdl__remotes;

/*
 * Parse @p spec: URLs separated by spaces, each `URL[|attribute[=value]]...` (README, "Remote
 * storage"). A URL that cannot be used is skipped, and the first such problem goes to @p warning
 * (one line, without credentials). @return NULL when there is none to use.
 */
fdl__remotes *fdl__remotes_new(const char *spec, char *warning, size_t wsize);
void fdl__remotes_free(fdl__remotes *r);

size_t fdl__remotes_count(const fdl__remotes *r);
/* The URL as it may be shown: scheme, host, port, path; never a user or a password. */
const char *fdl__remote_display(const fdl__remotes *r, size_t i);
int fdl__remote_read_only(const fdl__remotes *r, size_t i);

/*
 * Ask remote @p i for the entry of @p hex (32 hex digits), at most @p max bytes.
 * @return 1 found (*data malloc'ed, *size), 0 not there, -1 the remote failed (@p why says how:
 *         one line, no credentials)
 */
int fdl__remote_get(fdl__remotes *r, size_t i, const char *hex, size_t max, unsigned char **data,
                    size_t *size, char *why, size_t wsize);
/* Store an entry on remote @p i. @return 1 stored, -1 the remote failed (@p why) */
int fdl__remote_put(fdl__remotes *r, size_t i, const char *hex, const unsigned char *data,
                    size_t size, char *why, size_t wsize);

/*
 * A lease of @p hex on Redis remote @p i (SET "fdlink-lease:<hex>" NX PX @p ttl_ms), kept alive
 * by a thread of its own while held. @return 1 taken (*lease to give back with
 * fdl__remote_lease_release), 0 another holds it, -1 the remote failed or is not a writable
 * Redis (@p why)
 */
typedef struct fdl__remote_lease fdl__remote_lease;
int fdl__remote_lease_take(fdl__remotes *r, size_t i, const char *hex, long ttl_ms,
                           fdl__remote_lease **lease, char *why, size_t wsize);
/* Stop keeping it and delete it while it still holds this holder's token; frees @p lease. */
void fdl__remote_lease_release(fdl__remotes *r, size_t i, fdl__remote_lease *lease);
int fdl__remote_is_redis(const fdl__remotes *r, size_t i);

#endif /* FDLINK_TRANSPORT_H */
