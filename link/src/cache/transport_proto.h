/*
 * What the remote stores' files share (private to them): a remote as transport.c parses it from
 * its URL, and the get, put and close of each protocol, one file each: transport_redis.c
 * (hiredis, and the Redis leases of transport.h) and transport_http.c (libcurl). transport.c
 * parses the URLs and sends each get and put to its protocol's file; the protocol files call
 * nothing in transport.c.
 */
#ifndef FDLINK_TRANSPORT_PROTO_H
#define FDLINK_TRANSPORT_PROTO_H

#include <stddef.h>
#include <time.h>

#include "transport.h"

#define MAX_REMOTES 16

enum { SCHEME_REDIS, SCHEME_HTTP };

typedef struct remote {
    int scheme;
    char *display;  /* scheme://host:port/path, no credentials */
    char *host;     /* redis: host name or address */
    int port;
    long db;        /* redis */
    char *base;     /* http: scheme://host[:port]/path without a trailing '/' or credentials */
    char *user, *password;
    int read_only, flat;
    long connect_ms, operation_ms;
    void *conn;     /* a redisContext or a CURL easy handle, kept while the remotes live */
    struct timespec deadline; /* redis: of the request under way (CLOCK_MONOTONIC) */
    int expired;    /* redis: the request ran past its deadline (the watchdog cut it off) */
} remote;

struct fdl__remotes {
    remote v[MAX_REMOTES];
    size_t n;
};

/* ---- transport_redis.c ----------------------------------------------------------------------- */
/* fdl__remote_get and fdl__remote_put of a redis:// remote (SIGPIPE blocked around the call). */
int fdl__transport_redis_get(remote *r, const char *hex, size_t max, unsigned char **data,
                             size_t *size, char *why, size_t wsize);
int fdl__transport_redis_put(remote *r, const char *hex, const unsigned char *data, size_t size,
                             char *why, size_t wsize);
/* Free a connection (a redisContext) that a get, put or lease made. */
void fdl__transport_redis_close(void *conn);

/* ---- transport_http.c ------------------------------------------------------------------------ */
/* fdl__remote_get and fdl__remote_put of an http:// or https:// remote. */
int fdl__transport_http_get(remote *r, const char *hex, size_t max, unsigned char **data,
                            size_t *size, char *why, size_t wsize);
int fdl__transport_http_put(remote *r, const char *hex, const unsigned char *data, size_t size,
                            char *why, size_t wsize);
/* Free a connection (a CURL easy handle) that a get or put made. */
void fdl__transport_http_close(void *conn);

#endif /* FDLINK_TRANSPORT_PROTO_H */
