/*
 * The HTTP remote of the link cache (transport_proto.h): GET and PUT of <PATH>/<2 hex>/<30 hex>
 * (layout=flat: <PATH>/<32 hex>) through libcurl, opened with dlopen the first time an http://
 * or https:// remote is asked (libcurl.so.4, else libcurl-gnutls.so.4). libcurl is not a
 * dependency of the library.
 *
 * Global state: the table of entry points, filled once under pthread_once, read-only after.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "transport.h"
#include "transport_proto.h"

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
    if (g_curl.status == FDL_OK && g_curl.fn.global_init(CURL_GLOBAL_ALL) != 0) {
        g_curl.status = fdl__fail(&g_curl.error, FDL_ENOLIB, "libcurl failed to initialise");
        fdl__error_library(&g_curl.error, "libcurl");
    }
}

void fdl__transport_http_close(void *conn)
{
    g_curl.fn.easy_cleanup(conn);
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

int fdl__transport_http_get(remote *r, const char *hex, size_t max, unsigned char **data,
                            size_t *size, char *why, size_t wsize)
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

int fdl__transport_http_put(remote *r, const char *hex, const unsigned char *data, size_t size,
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
