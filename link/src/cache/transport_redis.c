/*
 * The Redis remote of the link cache (transport_proto.h): GET and SET of "fdlink:<32 hex
 * digits>" through hiredis, opened with dlopen the first time a redis:// remote is asked
 * (libhiredis.so.1.1.0, .so.1.0.0 or .so.0.14, whose reply structs differ: the layout follows
 * the name that opened), each request under a whole-request deadline; and the leases of keys
 * across machines (transport.h). hiredis is not a dependency of the library.
 *
 * Global state: the table of entry points, filled once under pthread_once, read-only after.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "transport.h"
#include "transport_proto.h"

/* ---- hiredis ------------------------------------------------------------------------------- */
/* The entry points fdlink calls (hiredis.h; the same since 0.13). */
typedef struct redis_fn {
    void *(*connect_with_timeout)(const char *ip, int port, const struct timeval tv);
    int (*set_timeout)(void *c, const struct timeval tv);
    void *(*command_argv)(void *c, int argc, const char **argv, const size_t *argvlen);
    void (*free_reply)(void *reply);
    void (*free_context)(void *c);
} redis_fn;

/* hiredis' redisContext: `int err; char errstr[128]; redisFD fd;` first in 0.13 and 0.14; 1.x
 * put a pointer to its function table before them. */
typedef struct redis_context_head {
    int err;
    char errstr[128];
    int fd;
} redis_context_head;
typedef struct redis_context_head_1 {
    const void *funcs;
    redis_context_head head;
} redis_context_head_1;

/* redisReply: 0.13 and 0.14 ... */
typedef struct reply_014 {
    int type;
    long long integer;
    size_t len;
    char *str;
} reply_014;

/* ... and 1.x, which added a double and a verbatim type between. */
typedef struct reply_1 {
    int type;
    long long integer;
    double dval;
    size_t len;
    char *str;
} reply_1;

#define REPLY_STRING 1
#define REPLY_NIL 4
#define REPLY_STATUS 5
#define REPLY_ERROR 6

static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    int layout_1; /* replies are reply_1 */
    redis_fn fn;
} g_redis = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, 0, {NULL, NULL, NULL, NULL, NULL}};

/* The head of a redisContext of the release that opened. */
static const redis_context_head *redis_head(const void *c)
{
    return g_redis.layout_1 ? &((const redis_context_head_1 *)c)->head
                            : (const redis_context_head *)c;
}

static void redis_load(void)
{
    static const char *const names[] = {"libhiredis.so.1.1.0", "libhiredis.so.1.0.0",
                                        "libhiredis.so.0.14", "libhiredis.so.0.13", NULL};
    static const fdl__symbol symbols[] = {
        {"redisConnectWithTimeout", offsetof(redis_fn, connect_with_timeout), 0},
        {"redisSetTimeout", offsetof(redis_fn, set_timeout), 0},
        {"redisCommandArgv", offsetof(redis_fn, command_argv), 0},
        {"freeReplyObject", offsetof(redis_fn, free_reply), 0},
        {"redisFree", offsetof(redis_fn, free_context), 0},
    };
    const char *override = getenv("FDLINK_LIBHIREDIS");
    void *h = NULL;
    g_redis.status = fdl__dlopen_table(&h, "FDLINK_LIBHIREDIS", names, "hiredis",
                                       "for a redis:// cache remote", symbols,
                                       sizeof symbols / sizeof symbols[0], &g_redis.fn,
                                       &g_redis.error);
    if (g_redis.status != FDL_OK)
        return;
    /* which release opened: its file name (or the override's) says */
    char path[4096] = "";
    if (!fdl__library_of((void (*)(void))g_redis.fn.free_reply, path, sizeof path) && override)
        fdl__strlcpy(path, override, sizeof path);
    g_redis.layout_1 = strstr(path, ".so.1") != NULL;
}

void fdl__transport_redis_close(void *conn)
{
    g_redis.fn.free_context(conn);
}

/* ---- Redis --------------------------------------------------------------------------------- */
static struct timeval ms_tv(long ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    return tv;
}

/*
 * SIGPIPE: hiredis writes with write(), and a server that went away would kill the process. The
 * calling thread blocks it around each call, and takes a SIGPIPE that the call raised.
 */
typedef struct pipe_guard {
    sigset_t old;
    int pending_before;
} pipe_guard;

static void pipe_block(pipe_guard *g)
{
    sigset_t set, pending;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, &g->old);
    sigemptyset(&pending);
    g->pending_before = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

static void pipe_restore(pipe_guard *g)
{
    if (!g->pending_before) {
        sigset_t set, pending;
        sigemptyset(&set);
        sigaddset(&set, SIGPIPE);
        sigemptyset(&pending);
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
            struct timespec zero = {0, 0};
            while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR) {
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

static int reply_type(const void *reply)
{
    return *(const int *)reply;
}

static void reply_str(const void *reply, const char **str, size_t *len)
{
    if (g_redis.layout_1) {
        const reply_1 *r = reply;
        *str = r->str;
        *len = r->len;
    } else {
        const reply_014 *r = reply;
        *str = r->str;
        *len = r->len;
    }
}

/*
 * The whole-request deadline (connect, send and receive together). hiredis bounds each read and
 * write by the operation timeout, not a request: a server that drips its answer, a byte within
 * each timeout, would hold the link for ever. A watchdog thread waits for the request's end until
 * its deadline, and past it shuts the socket down, which ends hiredis' blocking read at once.
 */
typedef struct watchdog {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done, fired, fd;
    struct timespec until;
} watchdog;

static void *watch(void *arg)
{
    watchdog *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->done) {
        if (pthread_cond_timedwait(&w->cond, &w->lock, &w->until) == ETIMEDOUT && !w->done) {
            shutdown(w->fd, SHUT_RDWR);
            w->fired = 1;
            break;
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void deadline_start(remote *r)
{
    clock_gettime(CLOCK_MONOTONIC, &r->deadline);
    long ms = r->operation_ms > 0 ? r->operation_ms : 1;
    r->deadline.tv_sec += ms / 1000;
    r->deadline.tv_nsec += (ms % 1000) * 1000000L;
    if (r->deadline.tv_nsec >= 1000000000L) {
        r->deadline.tv_sec++;
        r->deadline.tv_nsec -= 1000000000L;
    }
    r->expired = 0;
}

/* One command under the request's deadline; the reply, or NULL (then why may say more). */
static void *redis_call(remote *r, int argc, const char **argv, const size_t *lens, char *why,
                        size_t wsize)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec > r->deadline.tv_sec ||
        (now.tv_sec == r->deadline.tv_sec && now.tv_nsec >= r->deadline.tv_nsec)) {
        r->expired = 1;
        return NULL;
    }
    watchdog w;
    memset(&w, 0, sizeof w);
    w.fd = redis_head(r->conn)->fd;
    w.until = r->deadline;
    pthread_condattr_t ca;
    int made = pthread_condattr_init(&ca) == 0;
    made = made && pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
           pthread_cond_init(&w.cond, &ca) == 0;
    if (made && pthread_mutex_init(&w.lock, NULL) != 0) {
        pthread_cond_destroy(&w.cond);
        made = 0;
    }
    pthread_condattr_destroy(&ca);
    pthread_t t;
    int e = made ? pthread_create(&t, NULL, watch, &w) : EAGAIN;
    if (e != 0) {
        /* no request without its bound */
        if (made) {
            pthread_cond_destroy(&w.cond);
            pthread_mutex_destroy(&w.lock);
        }
        snprintf(why, wsize, "cannot bound the request (a thread: %s)", strerror(e));
        return NULL;
    }
    void *reply = g_redis.fn.command_argv(r->conn, argc, argv, lens);
    pthread_mutex_lock(&w.lock);
    w.done = 1;
    pthread_cond_signal(&w.cond);
    pthread_mutex_unlock(&w.lock);
    pthread_join(t, NULL);
    pthread_cond_destroy(&w.cond);
    pthread_mutex_destroy(&w.lock);
    if (w.fired) {
        r->expired = 1;
        if (reply)
            g_redis.fn.free_reply(reply);
        return NULL;
    }
    return reply;
}

static int redis_fail(remote *r, const char *what, char *why, size_t wsize)
{
    const redis_context_head *h = r->conn ? redis_head(r->conn) : NULL;
    /* hiredis' own words name the address and the system's error, never the credentials */
    if (r->expired)
        snprintf(why, wsize, "%s (no whole answer within the operation timeout, %ld ms)", what,
                 r->operation_ms);
    else
        snprintf(why, wsize, "%s (%.120s)", what, h && h->err ? h->errstr : "unexpected reply");
    if (r->conn)
        g_redis.fn.free_context(r->conn);
    r->conn = NULL;
    return -1;
}

/* A command whose reply must be a status or a string; 1 done, -1 failed. */
static int redis_simple(remote *r, int argc, const char **argv, const size_t *lens,
                        const char *what, char *why, size_t wsize)
{
    void *reply = redis_call(r, argc, argv, lens, why, wsize);
    if (!reply)
        return redis_fail(r, what, why, wsize);
    int t = reply_type(reply);
    g_redis.fn.free_reply(reply);
    if (t == REPLY_ERROR) {
        snprintf(why, wsize, "%s (the server answered an error)", what);
        g_redis.fn.free_context(r->conn);
        r->conn = NULL;
        return -1;
    }
    return 1;
}

static int redis_connect(remote *r, char *why, size_t wsize)
{
    if (r->conn)
        return 1;
    pthread_once(&g_redis.once, redis_load);
    if (g_redis.status != FDL_OK) {
        snprintf(why, wsize, "%s", g_redis.error.message);
        return -1;
    }
    r->conn = g_redis.fn.connect_with_timeout(r->host, r->port, ms_tv(r->connect_ms));
    if (!r->conn) {
        snprintf(why, wsize, "cannot connect (out of memory)");
        return -1;
    }
    if (redis_head(r->conn)->err)
        return redis_fail(r, "cannot connect", why, wsize);
    if (g_redis.fn.set_timeout(r->conn, ms_tv(r->operation_ms)) != 0)
        return redis_fail(r, "cannot set its timeout", why, wsize);
    if (r->password) {
        const char *argv[3] = {"AUTH", r->user ? r->user : r->password, r->password};
        size_t lens[3] = {4, strlen(argv[1]), strlen(r->password)};
        if (redis_simple(r, r->user ? 3 : 2, argv, lens, "authentication failed", why,
                         wsize) < 0)
            return -1;
    }
    if (r->db) {
        char db[24];
        snprintf(db, sizeof db, "%ld", r->db);
        const char *argv[2] = {"SELECT", db};
        size_t lens[2] = {6, strlen(db)};
        if (redis_simple(r, 2, argv, lens, "cannot select its database", why, wsize) < 0)
            return -1;
    }
    return 1;
}

static int redis_get(remote *r, const char *hex, size_t max, unsigned char **data, size_t *size,
                     char *why, size_t wsize)
{
    char key[64];
    snprintf(key, sizeof key, "fdlink:%.32s", hex);
    const char *argv[2] = {"GET", key};
    size_t lens[2] = {3, strlen(key)};
    deadline_start(r);
    if (redis_connect(r, why, wsize) < 0)
        return -1;
    void *reply = redis_call(r, 2, argv, lens, why, wsize);
    if (!reply)
        return redis_fail(r, "GET failed", why, wsize);
    int rc = -1;
    int t = reply_type(reply);
    if (t == REPLY_NIL) {
        rc = 0;
    } else if (t == REPLY_STRING) {
        const char *s;
        size_t n;
        reply_str(reply, &s, &n);
        if (n > max) {
            snprintf(why, wsize, "GET answered %zu bytes, more than an entry may hold", n);
        } else if ((*data = malloc(n ? n : 1)) != NULL) {
            if (n)
                memcpy(*data, s, n);
            *size = n;
            rc = 1;
        } else {
            snprintf(why, wsize, "out of memory");
        }
    } else {
        snprintf(why, wsize, "GET answered %s", t == REPLY_ERROR ? "an error" : "no string");
    }
    g_redis.fn.free_reply(reply);
    return rc;
}

static int redis_put(remote *r, const char *hex, const unsigned char *data, size_t size,
                     char *why, size_t wsize)
{
    char key[64];
    snprintf(key, sizeof key, "fdlink:%.32s", hex);
    const char *argv[3] = {"SET", key, (const char *)data};
    size_t lens[3] = {3, strlen(key), size};
    deadline_start(r);
    if (redis_connect(r, why, wsize) < 0)
        return -1;
    /* a full server (maxmemory, noeviction) answers an error: a failure like any other */
    return redis_simple(r, 3, argv, lens, "SET failed", why, wsize);
}

int fdl__transport_redis_get(remote *r, const char *hex, size_t max, unsigned char **data,
                             size_t *size, char *why, size_t wsize)
{
    pipe_guard g;
    pipe_block(&g);
    int rc = redis_get(r, hex, max, data, size, why, wsize);
    pipe_restore(&g);
    return rc;
}

int fdl__transport_redis_put(remote *r, const char *hex, const unsigned char *data, size_t size,
                             char *why, size_t wsize)
{
    pipe_guard g;
    pipe_block(&g);
    int rc = redis_put(r, hex, data, size, why, wsize);
    pipe_restore(&g);
    return rc;
}

/* ---- Redis leases -------------------------------------------------------------------------- */
/*
 * The lease of a key across machines: "fdlink-lease:<32 hex>" set to the holder's token with
 * SET NX PX ttl. While the holder links, a keeper thread of its own (its own connection: a
 * connection is one thread's) pushes the expiry out every third of the time to live, only while
 * the key still holds its token; a holder that is killed (or loses the server) stops refreshing
 * and its lease expires. It is given up with a compare-and-delete: a Lua script through EVAL, or,
 * where scripts are refused, GET then DEL when the token is still its own.
 */
#define REPLY_INTEGER 3

static const char k_release_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
    "else return 0 end";
static const char k_refresh_script[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], "
    "ARGV[2]) else return 0 end";

struct fdl__remote_lease {
    remote conn;           /* a copy of the remote's settings with a connection of its own */
    char key[64], token[96];
    long ttl_ms;
    pthread_t keeper;
    int keeping;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int stop;
};

static void lease_key(const char *hex, char key[64])
{
    snprintf(key, 64, "fdlink-lease:%.32s", hex);
}

/* A command's reply type (and its integer), or -1 when it failed; the connection stays. */
static int redis_ask(remote *r, int argc, const char **argv, const size_t *lens,
                     long long *integer, char *str, size_t strsize, char *why, size_t wsize)
{
    deadline_start(r);
    if (redis_connect(r, why, wsize) < 0)
        return -1;
    void *reply = redis_call(r, argc, argv, lens, why, wsize);
    if (!reply) {
        redis_fail(r, "the lease's command failed", why, wsize);
        return -1;
    }
    int t = reply_type(reply);
    if (integer)
        *integer = g_redis.layout_1 ? ((const reply_1 *)reply)->integer
                                    : ((const reply_014 *)reply)->integer;
    if (str && strsize) {
        const char *s = "";
        size_t n = 0;
        if (t == REPLY_STRING || t == REPLY_STATUS || t == REPLY_ERROR)
            reply_str(reply, &s, &n);
        snprintf(str, strsize, "%.*s", (int)(n < strsize ? n : strsize - 1), s ? s : "");
    }
    g_redis.fn.free_reply(reply);
    return t;
}

/* Run @p script on the key with the token (and @p extra); 1 when it acted, 0 not, -1 failed,
 * -2 the server refuses scripts. */
static int lease_script(remote *r, const char *script, const char *key, const char *token,
                        const char *extra, char *why, size_t wsize)
{
    const char *argv[6] = {"EVAL", script, "1", key, token, extra};
    size_t lens[6] = {4, strlen(script), 1, strlen(key), strlen(token), extra ? strlen(extra) : 0};
    long long n = 0;
    char msg[128] = "";
    int t = redis_ask(r, extra ? 6 : 5, argv, lens, &n, msg, sizeof msg, why, wsize);
    if (t < 0)
        return -1;
    if (t == REPLY_ERROR)
        return -2;
    return t == REPLY_INTEGER && n > 0;
}

/* The same without scripts: GET, and when the token is still ours, DEL or PEXPIRE. */
static int lease_plain(remote *r, const char *key, const char *token, const char *ttl,
                       char *why, size_t wsize)
{
    const char *get[2] = {"GET", key};
    size_t glens[2] = {3, strlen(key)};
    char held[96] = "";
    int t = redis_ask(r, 2, get, glens, NULL, held, sizeof held, why, wsize);
    if (t < 0)
        return -1;
    if (t != REPLY_STRING || strcmp(held, token) != 0)
        return 0;
    const char *act[3] = {ttl ? "PEXPIRE" : "DEL", key, ttl};
    size_t alens[3] = {ttl ? 7u : 3u, strlen(key), ttl ? strlen(ttl) : 0};
    long long n = 0;
    t = redis_ask(r, ttl ? 3 : 2, act, alens, &n, NULL, 0, why, wsize);
    return t < 0 ? -1 : t == REPLY_INTEGER && n > 0;
}

static void *lease_keep(void *arg)
{
    fdl__remote_lease *l = arg;
    char ttl[24], why[300];
    snprintf(ttl, sizeof ttl, "%ld", l->ttl_ms);
    pipe_guard g;
    pipe_block(&g);
    pthread_mutex_lock(&l->lock);
    while (!l->stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        long step = l->ttl_ms / 3 > 0 ? l->ttl_ms / 3 : 1;
        until.tv_sec += step / 1000;
        until.tv_nsec += (step % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!l->stop && pthread_cond_timedwait(&l->cond, &l->lock, &until) != ETIMEDOUT)
            ;
        if (l->stop)
            break;
        pthread_mutex_unlock(&l->lock);
        int rc = lease_script(&l->conn, k_refresh_script, l->key, l->token, ttl, why, sizeof why);
        if (rc == -2)
            rc = lease_plain(&l->conn, l->key, l->token, ttl, why, sizeof why);
        pthread_mutex_lock(&l->lock);
        if (rc == 0)
            break; /* no longer ours (it expired and another took it): nothing to keep */
        /* a failure: tried again next time; the lease expires if the server stays away */
    }
    pthread_mutex_unlock(&l->lock);
    pipe_restore(&g);
    return NULL;
}

int fdl__remote_lease_take(fdl__remotes *rs, size_t i, const char *hex, long ttl_ms,
                           fdl__remote_lease **out, char *why, size_t wsize)
{
    *out = NULL;
    if (!rs || i >= rs->n || rs->v[i].scheme != SCHEME_REDIS || rs->v[i].read_only)
        return -1;
    remote *r = &rs->v[i];
    fdl__remote_lease *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(why, wsize, "out of memory");
        return -1;
    }
    lease_key(hex, l->key);
    /* unique among the machines and processes asking: host, process, clock, address */
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(l->token, sizeof l->token, "%.40s:%ld:%lld.%09ld:%p", host, (long)getpid(),
             (long long)now.tv_sec, now.tv_nsec, (void *)l);
    l->ttl_ms = ttl_ms > 0 ? ttl_ms : 1;
    char ttl[24];
    snprintf(ttl, sizeof ttl, "%ld", l->ttl_ms);
    const char *argv[6] = {"SET", l->key, l->token, "NX", "PX", ttl};
    size_t lens[6] = {3, strlen(l->key), strlen(l->token), 2, 2, strlen(ttl)};
    pipe_guard g;
    pipe_block(&g);
    int t = redis_ask(r, 6, argv, lens, NULL, NULL, 0, why, wsize);
    pipe_restore(&g);
    if (t < 0 || t == REPLY_ERROR) {
        if (t == REPLY_ERROR)
            snprintf(why, wsize, "SET NX of a lease answered an error");
        free(l);
        return -1;
    }
    if (t != REPLY_STATUS) { /* nil: another holds it */
        free(l);
        return 0;
    }
    l->conn = *r;
    l->conn.conn = NULL;
    pthread_mutex_init(&l->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&l->cond, &ca);
    pthread_condattr_destroy(&ca);
    /* no keeper (no thread to be had): the lease lasts its time to live, then expires */
    l->keeping = pthread_create(&l->keeper, NULL, lease_keep, l) == 0;
    *out = l;
    return 1;
}

void fdl__remote_lease_release(fdl__remotes *rs, size_t i, fdl__remote_lease *l)
{
    if (!l)
        return;
    if (l->keeping) {
        pthread_mutex_lock(&l->lock);
        l->stop = 1;
        pthread_cond_signal(&l->cond);
        pthread_mutex_unlock(&l->lock);
        pthread_join(l->keeper, NULL);
    }
    pthread_cond_destroy(&l->cond);
    pthread_mutex_destroy(&l->lock);
    if (l->conn.conn)
        g_redis.fn.free_context(l->conn.conn);
    if (rs && i < rs->n) {
        char why[300];
        pipe_guard g;
        pipe_block(&g);
        if (lease_script(&rs->v[i], k_release_script, l->key, l->token, NULL, why, sizeof why) ==
            -2)
            lease_plain(&rs->v[i], l->key, l->token, NULL, why, sizeof why);
        pipe_restore(&g);
    }
    free(l);
}
