/*
 * Remote stores of the link cache, in ccache's remote_storage syntax and meaning:
 *
 *   redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]     key "fdlink:<32 hex digits>", GET and SET
 *   http://[USER[:PASSWORD]@]HOST[:PORT][/PATH]   GET and PUT of <PATH>/<2 hex>/<30 hex>
 *   https://...                                   (layout=flat: <PATH>/<32 hex>)
 *
 * each followed by attributes `|read-only`, `|connect-timeout=MS` (default 100),
 * `|operation-timeout=MS` (default 10000), `|layout=subdirs|flat` (HTTP), and fdlink's own
 * `|credentials-file=PATH`, whose first line `[USER:]PASSWORD` takes the place of credentials in
 * the URL. Credentials are kept here and given to the client library only: what may be shown of
 * a remote (fdl__remote_display) is its scheme, host, port and path.
 *
 * The clients are opened with dlopen the first time a remote is asked: hiredis (libhiredis.so.1.1.0,
 * .so.1.0.0 or .so.0.14, whose reply structs differ: the layout follows the name that opened)
 * and libcurl (libcurl.so.4, else libcurl-gnutls.so.4). Neither is a dependency of the library.
 *
 * Global state: the two tables of entry points, filled once under pthread_once, read-only after.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "transport.h"

#define DEFAULT_CONNECT_MS 100
#define DEFAULT_OPERATION_MS 10000
#define MAX_REMOTES 16

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

/* ---- libcurl ------------------------------------------------------------------------------- */
typedef struct curl_fn {
    int (*global_init)(long flags);
    void *(*easy_init)(void);
    int (*easy_setopt)(void *h, int option, ...);
    int (*easy_perform)(void *h);
    int (*easy_getinfo)(void *h, int info, ...);
    void (*easy_cleanup)(void *h);
    void (*easy_reset)(void *h);
    const char *(*easy_strerror)(int code);
} curl_fn;

/* curl.h's numbers, stable since they were made */
#define CURLOPT_WRITEDATA 10001
#define CURLOPT_URL 10002
#define CURLOPT_READDATA 10009
#define CURLOPT_WRITEFUNCTION 20011
#define CURLOPT_READFUNCTION 20012
#define CURLOPT_UPLOAD 46
#define CURLOPT_NOSIGNAL 99
#define CURLOPT_PROTOCOLS 181
#define CURLOPT_REDIR_PROTOCOLS 182
#define CURLOPT_TIMEOUT_MS 155
#define CURLOPT_CONNECTTIMEOUT_MS 156
#define CURLOPT_INFILESIZE_LARGE 30115
#define CURLOPT_MAXFILESIZE_LARGE 30117
#define CURLOPT_USERNAME 10173
#define CURLOPT_PASSWORD 10174
#define CURLINFO_RESPONSE_CODE (0x200000 + 2)
#define CURLPROTO_HTTP 1L
#define CURLPROTO_HTTPS 2L
#define CURL_GLOBAL_ALL 3L
#define CURLE_WRITE_ERROR 23

static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    curl_fn fn;
} g_curl = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL}};

static void curl_load(void)
{
    static const char *const names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so", NULL};
    static const fdl__symbol symbols[] = {
        {"curl_global_init", offsetof(curl_fn, global_init), 0},
        {"curl_easy_init", offsetof(curl_fn, easy_init), 0},
        {"curl_easy_setopt", offsetof(curl_fn, easy_setopt), 0},
        {"curl_easy_perform", offsetof(curl_fn, easy_perform), 0},
        {"curl_easy_getinfo", offsetof(curl_fn, easy_getinfo), 0},
        {"curl_easy_cleanup", offsetof(curl_fn, easy_cleanup), 0},
        {"curl_easy_reset", offsetof(curl_fn, easy_reset), 0},
        {"curl_easy_strerror", offsetof(curl_fn, easy_strerror), 0},
    };
    void *h = NULL;
    g_curl.status = fdl__dlopen_table(&h, "FDLINK_LIBCURL", names, "libcurl",
                                      "for an http:// cache remote", symbols,
                                      sizeof symbols / sizeof symbols[0], &g_curl.fn,
                                      &g_curl.error);
    /* once, before any handle: curl_global_init is not thread-safe in older releases */
    if (g_curl.status == FDL_OK && g_curl.fn.global_init(CURL_GLOBAL_ALL) != 0)
        g_curl.status = fdl__fail(&g_curl.error, FDL_ENOLIB, "libcurl failed to initialise");
}

/* ---- the remotes --------------------------------------------------------------------------- */
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

static void remote_free(remote *r)
{
    if (r->conn) {
        if (r->scheme == SCHEME_REDIS)
            g_redis.fn.free_context(r->conn);
        else
            g_curl.fn.easy_cleanup(r->conn);
    }
    free(r->display);
    free(r->host);
    free(r->base);
    if (r->password) /* not left in freed memory */
        memset(r->password, 0, strlen(r->password));
    free(r->user);
    free(r->password);
    memset(r, 0, sizeof *r);
}

void fdl__remotes_free(fdl__remotes *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        remote_free(&r->v[i]);
    free(r);
}

size_t fdl__remotes_count(const fdl__remotes *r)
{
    return r ? r->n : 0;
}

const char *fdl__remote_display(const fdl__remotes *r, size_t i)
{
    return r && i < r->n ? r->v[i].display : "";
}

int fdl__remote_read_only(const fdl__remotes *r, size_t i)
{
    return r && i < r->n && r->v[i].read_only;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                          : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A copy of s[0..n) with %XX decoded (URL userinfo); NULL when out of memory or malformed. */
static char *decode(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi = i + 2 < n ? hexval(s[i + 1]) : -1;
            int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                free(out);
                return NULL;
            }
            out[j++] = (char)(hi << 4 | lo);
            i += 2;
        } else {
            out[j++] = s[i];
        }
    }
    out[j] = '\0';
    return out;
}

static char *dup_n(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* A milliseconds attribute: 1..3600000. */
static int parse_ms(const char *v, long *out)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || n < 1 || n > 3600000)
        return 0;
    *out = n;
    return 1;
}

/* The first line of a credentials file, `[USER:]PASSWORD`. */
static const char *read_credentials(remote *r, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return "its credentials file cannot be opened";
    struct stat st;
    char buf[1024];
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got < 0)
        return "its credentials file is not a readable regular file";
    buf[got] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    char *colon = strchr(buf, ':');
    const char *pass = colon ? colon + 1 : buf;
    free(r->user);
    free(r->password);
    r->user = colon ? dup_n(buf, (size_t)(colon - buf)) : NULL;
    r->password = fdl__strdup(pass);
    memset(buf, 0, sizeof buf);
    if (!r->password || (colon && !r->user))
        return "out of memory";
    if (r->user && !r->user[0]) {
        free(r->user);
        r->user = NULL;
    }
    return NULL;
}

/* Parse one `URL|attr...`; NULL when good, else the problem. */
static const char *parse_one(remote *r, const char *s, size_t len)
{
    const char *bar = memchr(s, '|', len);
    size_t ulen = bar ? (size_t)(bar - s) : len;
    r->connect_ms = DEFAULT_CONNECT_MS;
    r->operation_ms = DEFAULT_OPERATION_MS;
    const char *rest;
    if (ulen > 8 && strncmp(s, "redis://", 8) == 0) {
        r->scheme = SCHEME_REDIS;
        rest = s + 8;
        r->port = 6379;
    } else if (ulen > 7 && strncmp(s, "http://", 7) == 0) {
        r->scheme = SCHEME_HTTP;
        rest = s + 7;
        r->port = 80;
    } else if (ulen > 8 && strncmp(s, "https://", 8) == 0) {
        r->scheme = SCHEME_HTTP;
        rest = s + 8;
        r->port = 443;
    } else {
        return "not a redis://, http:// or https:// URL";
    }
    const char *end = s + ulen;
    const char *slash = memchr(rest, '/', (size_t)(end - rest));
    const char *auth_end = slash ? slash : end;
    const char *at = NULL;
    for (const char *p = rest; p < auth_end; p++)
        if (*p == '@')
            at = p;
    const char *hs = rest;
    if (at) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        if (colon) {
            r->user = colon > rest ? decode(rest, (size_t)(colon - rest)) : NULL;
            r->password = decode(colon + 1, (size_t)(at - colon - 1));
            if ((colon > rest && !r->user) || !r->password)
                return "its user information is malformed";
        } else if (r->scheme == SCHEME_REDIS) {
            /* redis://PASSWORD@host, as ccache reads it */
            if (!(r->password = decode(rest, (size_t)(at - rest))))
                return "its user information is malformed";
        } else if (!(r->user = decode(rest, (size_t)(at - rest)))) {
            return "its user information is malformed";
        }
        hs = at + 1;
    }
    const char *he, *port = NULL;
    if (hs < auth_end && *hs == '[') {
        const char *close = memchr(hs, ']', (size_t)(auth_end - hs));
        if (!close)
            return "its host is malformed";
        he = close + 1;
        if (he < auth_end && *he == ':')
            port = he + 1;
        else if (he != auth_end)
            return "its host is malformed";
    } else {
        const char *colon = memchr(hs, ':', (size_t)(auth_end - hs));
        he = colon ? colon : auth_end;
        port = colon ? colon + 1 : NULL;
    }
    if (he == hs)
        return "it has no host";
    if (port) {
        long p = 0;
        if (port == auth_end)
            return "its port is malformed";
        for (const char *q = port; q < auth_end; q++) {
            if (*q < '0' || *q > '9' || (p = p * 10 + (*q - '0')) > 65535)
                return "its port is malformed";
        }
        if (p == 0)
            return "its port is malformed";
        r->port = (int)p;
    }
    /* hiredis takes [::1] without its brackets */
    int bracket = *hs == '[';
    if (!(r->host = dup_n(hs + bracket, (size_t)(he - hs) - 2 * (size_t)bracket)))
        return "out of memory";
    const char *path = slash ? slash : end;
    size_t plen = (size_t)(end - path);
    while (plen && path[plen - 1] == '/')
        plen--;
    if (r->scheme == SCHEME_REDIS) {
        r->db = 0;
        if (plen > 1) {
            long db = 0;
            for (const char *q = path + 1; q < path + plen; q++)
                if (*q < '0' || *q > '9' || (db = db * 10 + (*q - '0')) > 1000000)
                    return "its database number is malformed";
            r->db = db;
        }
    }
    /* attributes */
    const char *a = bar;
    while (a && a < s + len) {
        a++;
        const char *next = memchr(a, '|', (size_t)(s + len - a));
        size_t alen = next ? (size_t)(next - a) : (size_t)(s + len - a);
        char attr[1100];
        if (alen >= sizeof attr)
            return "an attribute is too long";
        memcpy(attr, a, alen);
        attr[alen] = '\0';
        char *eq = strchr(attr, '=');
        const char *val = eq ? eq + 1 : NULL;
        if (eq)
            *eq = '\0';
        if (strcmp(attr, "read-only") == 0 && (!val || strcmp(val, "true") == 0))
            r->read_only = 1;
        else if (strcmp(attr, "read-only") == 0 && strcmp(val, "false") == 0)
            r->read_only = 0;
        else if (strcmp(attr, "connect-timeout") == 0 && val) {
            if (!parse_ms(val, &r->connect_ms))
                return "connect-timeout is not a number of milliseconds";
        } else if (strcmp(attr, "operation-timeout") == 0 && val) {
            if (!parse_ms(val, &r->operation_ms))
                return "operation-timeout is not a number of milliseconds";
        } else if (strcmp(attr, "layout") == 0 && val && r->scheme == SCHEME_HTTP &&
                   (strcmp(val, "subdirs") == 0 || strcmp(val, "flat") == 0)) {
            r->flat = strcmp(val, "flat") == 0;
        } else if (strcmp(attr, "credentials-file") == 0 && val && val[0]) {
            const char *why = read_credentials(r, val);
            if (why)
                return why;
        } else {
            /* ccache's attributes of no meaning here (e.g. keep-alive) and unknown ones */
            if (strcmp(attr, "keep-alive") != 0 && strcmp(attr, "bearer-token") != 0 &&
                strcmp(attr, "header") != 0)
                return "it has an unknown attribute";
        }
        a = next;
    }
    fdl__buf d = {0};
    int v6 = strchr(r->host, ':') != NULL;
    fdl__buf_printf(&d, "%s://%s%s%s:%d", r->scheme == SCHEME_REDIS ? "redis"
                                          : strncmp(s, "https", 5) == 0 ? "https" : "http",
                    v6 ? "[" : "", r->host, v6 ? "]" : "", r->port);
    if (r->scheme == SCHEME_REDIS)
        fdl__buf_printf(&d, "/%ld", r->db);
    else
        fdl__buf_printf(&d, "%.*s", (int)plen, path);
    if (d.oom)
        return "out of memory";
    r->display = d.data;
    if (r->scheme == SCHEME_HTTP && !(r->base = fdl__strdup(r->display)))
        return "out of memory";
    return NULL;
}

fdl__remotes *fdl__remotes_new(const char *spec, char *warning, size_t wsize)
{
    if (!spec)
        return NULL;
    fdl__remotes *rs = calloc(1, sizeof *rs);
    if (!rs)
        return NULL;
    size_t index = 0;
    for (const char *p = spec; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, " \t\n");
        index++;
        if (rs->n == MAX_REMOTES) {
            if (warning && !warning[0])
                snprintf(warning, wsize, "cache remote %zu not used: at most %d remotes", index,
                         MAX_REMOTES);
            p += len;
            continue;
        }
        remote *r = &rs->v[rs->n];
        const char *why = parse_one(r, p, len);
        if (why) {
            /* the position only: the text may hold a password */
            if (warning && !warning[0])
                snprintf(warning, wsize, "FDLINK_CACHE_REMOTE: remote %zu not used: %s", index,
                         why);
            remote_free(r);
        } else {
            rs->n++;
        }
        p += len;
    }
    if (rs->n == 0) {
        free(rs);
        return NULL;
    }
    return rs;
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

int fdl__remote_is_redis(const fdl__remotes *rs, size_t i)
{
    return rs && i < rs->n && rs->v[i].scheme == SCHEME_REDIS;
}

/* ---- HTTP ---------------------------------------------------------------------------------- */
typedef struct body {
    unsigned char *data;
    size_t n, cap, max;
    int over;
} body;

static size_t on_write(char *p, size_t size, size_t nmemb, void *ctx)
{
    body *b = ctx;
    size_t n = size * nmemb;
    if (n > b->max - b->n) {
        b->over = 1;
        return 0; /* aborts the transfer */
    }
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->n + n)
            cap = cap > b->max / 2 ? b->max : cap * 2;
        unsigned char *grown = realloc(b->data, cap ? cap : 1);
        if (!grown)
            return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->n, p, n);
    b->n += n;
    return n;
}

typedef struct upload {
    const unsigned char *data;
    size_t left;
} upload;

static size_t on_read(char *p, size_t size, size_t nmemb, void *ctx)
{
    upload *u = ctx;
    size_t n = size * nmemb;
    if (n > u->left)
        n = u->left;
    memcpy(p, u->data, n);
    u->data += n;
    u->left -= n;
    return n;
}

static int http_prepare(remote *r, const char *hex, char *why, size_t wsize)
{
    pthread_once(&g_curl.once, curl_load);
    if (g_curl.status != FDL_OK) {
        snprintf(why, wsize, "%s", g_curl.error.message);
        return -1;
    }
    if (!r->conn && !(r->conn = g_curl.fn.easy_init())) {
        snprintf(why, wsize, "libcurl could not make a handle");
        return -1;
    }
    void *h = r->conn;
    g_curl.fn.easy_reset(h); /* keeps the connection, forgets the last request's options */
    fdl__buf url = {0};
    if (r->flat)
        fdl__buf_printf(&url, "%s/%.32s", r->base, hex);
    else
        fdl__buf_printf(&url, "%s/%.2s/%.30s", r->base, hex, hex + 2);
    if (url.oom) {
        fdl__buf_free(&url);
        snprintf(why, wsize, "out of memory");
        return -1;
    }
    g_curl.fn.easy_setopt(h, CURLOPT_URL, url.data); /* libcurl copies it */
    fdl__buf_free(&url);
    g_curl.fn.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    g_curl.fn.easy_setopt(h, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
    g_curl.fn.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, r->connect_ms);
    g_curl.fn.easy_setopt(h, CURLOPT_TIMEOUT_MS, r->operation_ms);
    if (r->user)
        g_curl.fn.easy_setopt(h, CURLOPT_USERNAME, r->user);
    if (r->password)
        g_curl.fn.easy_setopt(h, CURLOPT_PASSWORD, r->password);
    return 1;
}

static int http_done(remote *r, int code, const char *what, long *status, char *why,
                     size_t wsize)
{
    *status = 0;
    if (code != 0) {
        snprintf(why, wsize, "%s failed (%s)", what, g_curl.fn.easy_strerror(code));
        g_curl.fn.easy_cleanup(r->conn); /* a half-read connection is not reused */
        r->conn = NULL;
        return -1;
    }
    g_curl.fn.easy_getinfo(r->conn, CURLINFO_RESPONSE_CODE, status);
    return 1;
}

static int http_get(remote *r, const char *hex, size_t max, unsigned char **data, size_t *size,
                    char *why, size_t wsize)
{
    if (http_prepare(r, hex, why, wsize) < 0)
        return -1;
    body b = {NULL, 0, 0, max, 0};
    g_curl.fn.easy_setopt(r->conn, CURLOPT_WRITEFUNCTION, on_write);
    g_curl.fn.easy_setopt(r->conn, CURLOPT_WRITEDATA, &b);
    g_curl.fn.easy_setopt(r->conn, CURLOPT_MAXFILESIZE_LARGE, (long long)max);
    int code = g_curl.fn.easy_perform(r->conn);
    long status = 0;
    if (b.over && code == CURLE_WRITE_ERROR) {
        snprintf(why, wsize, "GET answered more bytes than an entry may hold");
        g_curl.fn.easy_cleanup(r->conn);
        r->conn = NULL;
        free(b.data);
        return -1;
    }
    if (http_done(r, code, "GET", &status, why, wsize) < 0) {
        free(b.data);
        return -1;
    }
    if (status == 404) {
        free(b.data);
        return 0;
    }
    if (status != 200) {
        snprintf(why, wsize, "GET answered HTTP %ld", status);
        free(b.data);
        return -1;
    }
    *data = b.data ? b.data : malloc(1);
    *size = b.n;
    if (!*data) {
        snprintf(why, wsize, "out of memory");
        return -1;
    }
    return 1;
}

static int http_put(remote *r, const char *hex, const unsigned char *data, size_t size,
                    char *why, size_t wsize)
{
    if (http_prepare(r, hex, why, wsize) < 0)
        return -1;
    upload u = {data, size};
    body sink = {NULL, 0, 0, 65536, 0}; /* the server's answer, read and dropped */
    g_curl.fn.easy_setopt(r->conn, CURLOPT_UPLOAD, 1L);
    g_curl.fn.easy_setopt(r->conn, CURLOPT_READFUNCTION, on_read);
    g_curl.fn.easy_setopt(r->conn, CURLOPT_READDATA, &u);
    g_curl.fn.easy_setopt(r->conn, CURLOPT_INFILESIZE_LARGE, (long long)size);
    g_curl.fn.easy_setopt(r->conn, CURLOPT_WRITEFUNCTION, on_write);
    g_curl.fn.easy_setopt(r->conn, CURLOPT_WRITEDATA, &sink);
    int code = g_curl.fn.easy_perform(r->conn);
    free(sink.data);
    long status = 0;
    if (http_done(r, code, "PUT", &status, why, wsize) < 0)
        return -1;
    if (status < 200 || status > 299) {
        snprintf(why, wsize, "PUT answered HTTP %ld", status);
        return -1;
    }
    return 1;
}

/* ---- get and put --------------------------------------------------------------------------- */
int fdl__remote_get(fdl__remotes *rs, size_t i, const char *hex, size_t max, unsigned char **data,
                    size_t *size, char *why, size_t wsize)
{
    *data = NULL;
    *size = 0;
    if (!rs || i >= rs->n)
        return 0;
    remote *r = &rs->v[i];
    if (r->scheme == SCHEME_HTTP)
        return http_get(r, hex, max, data, size, why, wsize);
    pipe_guard g;
    pipe_block(&g);
    int rc = redis_get(r, hex, max, data, size, why, wsize);
    pipe_restore(&g);
    return rc;
}

int fdl__remote_put(fdl__remotes *rs, size_t i, const char *hex, const unsigned char *data,
                    size_t size, char *why, size_t wsize)
{
    if (!rs || i >= rs->n || rs->v[i].read_only)
        return 1;
    remote *r = &rs->v[i];
    if (r->scheme == SCHEME_HTTP)
        return http_put(r, hex, data, size, why, wsize);
    pipe_guard g;
    pipe_block(&g);
    int rc = redis_put(r, hex, data, size, why, wsize);
    pipe_restore(&g);
    return rc;
}
