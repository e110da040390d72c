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
 * This file parses the URLs and sends each get and put to its protocol: transport_redis.c
 * (hiredis, and the Redis leases) and transport_http.c (libcurl), a file each
 * (transport_proto.h). No global state here.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "transport.h"
#include "transport_proto.h"

#define DEFAULT_CONNECT_MS 100
#define DEFAULT_OPERATION_MS 10000

/* ---- the remotes --------------------------------------------------------------------------- */
static void remote_free(remote *r)
{
    if (r->conn) {
        if (r->scheme == SCHEME_REDIS)
            fdl__transport_redis_close(r->conn);
        else
            fdl__transport_http_close(r->conn);
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

int fdl__remote_is_redis(const fdl__remotes *rs, size_t i)
{
    return rs && i < rs->n && rs->v[i].scheme == SCHEME_REDIS;
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
        return fdl__transport_http_get(r, hex, max, data, size, why, wsize);
    return fdl__transport_redis_get(r, hex, max, data, size, why, wsize);
}

int fdl__remote_put(fdl__remotes *rs, size_t i, const char *hex, const unsigned char *data,
                    size_t size, char *why, size_t wsize)
{
    if (!rs || i >= rs->n || rs->v[i].read_only)
        return 1;
    remote *r = &rs->v[i];
    if (r->scheme == SCHEME_HTTP)
        return fdl__transport_http_put(r, hex, data, size, why, wsize);
    return fdl__transport_redis_put(r, hex, data, size, why, wsize);
}
