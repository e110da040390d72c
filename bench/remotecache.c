/*
 * Benchmark 7, the cache across machines (issue 26): rows added to benchmark 7 by
 * bench_cache_remote, kept apart from linkcache.c's.
 *
 *   (e) a remote hit in a fresh process with an empty local cache, on loopback, from Redis and
 *       from HTTP (nginx with WebDAV), against a disk hit and a first link in fresh processes
 *       (the children of (a): `fdlink-bench --child-cache link DIR`, with FDLINK_CACHE_REMOTE).
 *       Reported: remote hit / disk hit, first link / remote hit, and what the remote adds per
 *       hit (remote - disk, sample by sample).
 *   (f) time to first result (benchmark 6's programs) with an empty local cache and a warm
 *       Redis, against the embedded cubin. Needs a GPU.
 *   (g) time to first result right after `fdl_cache_import` of a bundle into an empty cache
 *       (the import untimed: it is the install step), against the embedded cubin. Goal <= 1.05.
 *       Needs a GPU.
 *
 * The servers: redis-server and nginx from FDLINK_BENCH_SERVERS (a folder where
 * bench/servers.sh's packages were unpacked with dpkg -x: <prefix>/usr/bin/redis-server,
 * <prefix>/usr/sbin/nginx, their libraries under <prefix>/usr/lib/x86_64-linux-gnu), else from
 * PATH; started on free loopback ports in the benchmark's temporary folder and killed after.
 * Rows whose server is missing are skipped with a note saying so. When this process cannot open
 * hiredis or libcurl, the children are pointed at the prefix's (FDLINK_LIBHIREDIS,
 * FDLINK_LIBCURL).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "fdlink/cache.h"
#include "internal.h"

extern char **environ;

#define LIBDIR "/usr/lib/x86_64-linux-gnu"

typedef struct srv {
    pid_t pid;
    int port;
    char url[256];
    const char *name;
} srv;

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int port = -1;
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    if (s >= 0)
        close(s);
    return port;
}

static int listening(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    if (s >= 0)
        close(s);
    return ok;
}

/* A server program: <prefix><rel> when FDLINK_BENCH_SERVERS is set and it exists, else PATH's. */
static int find_program(const char *rel, const char *name, char *out, size_t size)
{
    const char *prefix = getenv("FDLINK_BENCH_SERVERS");
    if (prefix && prefix[0]) {
        snprintf(out, size, "%s%s", prefix, rel);
        return access(out, X_OK) == 0;
    }
    const char *path = getenv("PATH");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path ? path : "/usr/bin:/bin:/usr/sbin:/sbin");
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, size, "%.900s/%s", d, name);
        if (access(out, X_OK) == 0)
            return 1;
    }
    snprintf(out, size, "/usr/sbin/%s", name);
    return access(out, X_OK) == 0;
}

/* Start @p argv with the prefix's libraries; wait until it listens on @p port (5 s). */
static int start(srv *s, char *const argv[], const char *log)
{
    const char *prefix = getenv("FDLINK_BENCH_SERVERS");
    char ld[4200] = "";
    if (prefix && prefix[0])
        snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s" LIBDIR ":%s/lib/x86_64-linux-gnu", prefix,
                 prefix);
    size_t n = 0;
    while (environ[n])
        n++;
    char **envp = calloc(n + 2, sizeof *envp);
    if (!envp)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (!ld[0] || strncmp(environ[i], "LD_LIBRARY_PATH=", 16) != 0)
            envp[k++] = environ[i];
    if (ld[0])
        envp[k++] = ld;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    int rc = posix_spawn(&s->pid, argv[0], &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    if (rc != 0) {
        s->pid = 0;
        return -1;
    }
    for (int i = 0; i < 500; i++) {
        if (listening(s->port))
            return 0;
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
            s->pid = 0;
            return -1;
        }
        usleep(10000);
    }
    return -1;
}

static void stop(srv *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
    }
    s->pid = 0;
}

static int start_redis(srv *s, const char *dir, char *why, size_t wsize)
{
    char prog[4096];
    s->name = "redis";
    if (!find_program("/usr/bin/redis-server", "redis-server", prog, sizeof prog)) {
        snprintf(why, wsize, "no redis-server (FDLINK_BENCH_SERVERS: a prefix unpacked from "
                 "bench/servers.sh's packages; else PATH)");
        return -1;
    }
    s->port = free_port();
    char port[16], log[1200];
    snprintf(port, sizeof port, "%d", s->port);
    snprintf(log, sizeof log, "%.900s/redis.log", dir);
    char *argv[] = {prog, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly",
                    "no", "--dir", (char *)dir, NULL};
    if (s->port < 0 || start(s, argv, log) != 0) {
        snprintf(why, wsize, "%.200s did not start (see its log, %.300s)", prog, log);
        return -1;
    }
    snprintf(s->url, sizeof s->url, "redis://127.0.0.1:%d", s->port);
    return 0;
}

static int start_nginx(srv *s, const char *dir, char *why, size_t wsize)
{
    char prog[4096];
    s->name = "http";
    if (!find_program("/usr/sbin/nginx", "nginx", prog, sizeof prog)) {
        snprintf(why, wsize, "no nginx (FDLINK_BENCH_SERVERS: a prefix unpacked from "
                 "bench/servers.sh's packages; else PATH)");
        return -1;
    }
    s->port = free_port();
    char conf[1200], log[1200], store[1200];
    snprintf(conf, sizeof conf, "%.900s/nginx.conf", dir);
    snprintf(log, sizeof log, "%.900s/nginx.log", dir);
    snprintf(store, sizeof store, "%.900s/dav", dir);
    mkdir(store, 0777);
    FILE *f = fopen(conf, "w");
    if (!f) {
        snprintf(why, wsize, "cannot write %.400s", conf);
        return -1;
    }
    fprintf(f, "%smaster_process off;\nerror_log %s/nginx-error.log;\npid %s/nginx.pid;\n"
            "events { worker_connections 256; }\n"
            "http {\n  access_log off;\n  client_body_temp_path %s/body;\n"
            "  proxy_temp_path %s/proxy;\n  fastcgi_temp_path %s/fastcgi;\n"
            "  uwsgi_temp_path %s/uwsgi;\n  scgi_temp_path %s/scgi;\n"
            "  server {\n    listen 127.0.0.1:%d;\n    root %s;\n    client_max_body_size 0;\n"
            "    location / { dav_methods PUT; create_full_put_path on; dav_access user:rw; }\n"
            "  }\n}\n",
            geteuid() == 0 ? "user root root;\n" : "", dir, dir, dir, dir, dir, dir, dir,
            s->port, store);
    fclose(f);
    char *argv[] = {prog, "-e", "stderr", "-c", conf, "-p", (char *)dir, "-g", "daemon off;",
                    NULL};
    if (s->port < 0 || start(s, argv, log) != 0) {
        snprintf(why, wsize, "%.200s did not start (see its log, %.300s)", prog, log);
        return -1;
    }
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d/cache", s->port);
    return 0;
}

/* ---- children ------------------------------------------------------------------------------- */
typedef struct child_env {
    char remote[400];
    char hiredis[4200];
    char curl[4200];
    char ld[4200];
    const char *v[6];
} child_env;

/* The children's environment: CUDA's JIT cache off, @p remote ("" for none), client libraries. */
static void child_env_init(child_env *e, const char *remote)
{
    size_t k = 0;
    e->v[k++] = "CUDA_CACHE_DISABLE=1";
    snprintf(e->remote, sizeof e->remote, "FDLINK_CACHE_REMOTE=%s", remote);
    e->v[k++] = e->remote;
    const char *prefix = getenv("FDLINK_BENCH_SERVERS");
    if (prefix && prefix[0]) {
        void *h = dlopen("libhiredis.so.0.14", RTLD_NOW);
        if (!h)
            h = dlopen("libhiredis.so.1.1.0", RTLD_NOW);
        if (h) {
            dlclose(h);
        } else {
            snprintf(e->hiredis, sizeof e->hiredis, "FDLINK_LIBHIREDIS=%s" LIBDIR
                     "/libhiredis.so.0.14", prefix);
            e->v[k++] = e->hiredis;
        }
        h = dlopen("libcurl.so.4", RTLD_NOW);
        if (h) {
            dlclose(h);
        } else {
            snprintf(e->curl, sizeof e->curl, "FDLINK_LIBCURL=%s" LIBDIR "/libcurl.so.4",
                     prefix);
            snprintf(e->ld, sizeof e->ld, "LD_LIBRARY_PATH=%s" LIBDIR, prefix);
            e->v[k++] = e->curl;
            e->v[k++] = e->ld;
        }
    }
    e->v[k] = NULL;
}

typedef struct result {
    double ms;
    int loaded;
    char where[16];
    uint64_t hash;
} result;

static int child(bench_section *s, const bench_ctx *ctx, const char *dir, const char *remote,
                 const char *want, uint64_t ref_hash, result *r)
{
    char *argv[] = {(char *)ctx->self, "--child-cache", "link", (char *)dir, NULL};
    child_env e;
    child_env_init(&e, remote);
    char out[2048];
    int status = 0;
    double wall = 0;
    if (bench_run_process(argv, e.v, out, sizeof out, &status, &wall) != 0 || status != 0)
        return bench_fail(s, "--child-cache link (remote %s) failed (exit status %d): %s",
                          remote[0] ? remote : "none", status, out);
    const char *line = strstr(out, "cache-child ");
    unsigned long long h = 0;
    size_t size = 0;
    if (!line || sscanf(line, "cache-child %lf %d %15s %zu %llx", &r->ms, &r->loaded, r->where,
                        &size, &h) != 5)
        return bench_fail(s, "--child-cache link: unexpected output: %s", out);
    r->hash = (uint64_t)h;
    if (strcmp(r->where, want) != 0)
        return bench_fail(s, "(e) %s: expected a %s, got %s: %s", remote, want, r->where, out);
    if (r->hash != ref_hash)
        return bench_fail(s, "(e) %s: the %s's cubin differs from the uncached link's", remote,
                          want);
    return 0;
}

/* ---- the rows ------------------------------------------------------------------------------- */
static double median_of(double *v, size_t n)
{
    double *c = malloc(n * sizeof *c);
    if (!c)
        return 0;
    memcpy(c, v, n * sizeof *c);
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && c[j - 1] > c[j]; j--) {
            double t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
        }
    double m = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    free(c);
    return m;
}

/*
 * Remove the entries of @p dir but not the memos of the libraries' versions: a machine that has
 * linked before, without this link's entry. (On a machine that never ran fdlink, the first hit
 * of any tier loads nvJitLink once to learn its version: (f) measures that case.)
 */
static void clear_entries(const char *dir)
{
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "rm -f '%.1200s'/*.fdlc", dir);
    if (system(cmd) != 0)
        return;
}

/* (e) for one server; 0 done, 1 failed. */
static int remote_hits(bench_ctx *ctx, bench_section *s, const srv *v, const char *tmp,
                       uint64_t ref_hash)
{
    const size_t reps = bench_reps(ctx, 3, 10);
    char dir[1200];
    snprintf(dir, sizeof dir, "%.900s/%s-local", tmp, v->name);
    double *first = calloc(reps, sizeof *first), *remote = calloc(reps, sizeof *remote);
    double *disk = calloc(reps, sizeof *disk), *added = calloc(reps, sizeof *added);
    int rc = 1;
    result r;
    if (!first || !remote || !disk || !added) {
        bench_fail(s, "out of memory");
        goto cleanup;
    }
    /* warm the remote: one link that misses everywhere and stores */
    fdl_cache_clear(dir, NULL, NULL);
    if (child(s, ctx, dir, v->url, "miss", ref_hash, &r))
        goto cleanup;
    for (size_t i = 0; i < reps; i++) {
        fdl_cache_clear(dir, NULL, NULL);
        if (child(s, ctx, dir, "", "miss", ref_hash, &r))
            goto cleanup;
        first[i] = r.ms; /* this run leaves the memo of nvJitLink's version */
        /* the remote's entry, on a machine without it (but whose nvJitLink fdlink has seen) */
        clear_entries(dir);
        if (child(s, ctx, dir, v->url, "remote", ref_hash, &r))
            goto cleanup;
        remote[i] = r.ms;
        if (r.loaded) {
            bench_fail(s, "(e) %s: the remote hit loaded nvJitLink", v->name);
            goto cleanup;
        }
        if (child(s, ctx, dir, v->url, "disk", ref_hash, &r)) /* now stored locally */
            goto cleanup;
        disk[i] = r.ms;
        added[i] = remote[i] - disk[i];
    }
    char name[160];
    snprintf(name, sizeof name, "(e) %s remote hit, fresh process, entry not on disk", v->name);
    if (!bench_figure_add(s, name, "ms", remote, reps))
        goto cleanup;
    snprintf(name, sizeof name, "(e) %s: disk hit, fresh process (same runs)", v->name);
    if (!bench_figure_add(s, name, "ms", disk, reps))
        goto cleanup;
    snprintf(name, sizeof name, "(e) %s: first link, fresh process (same runs)", v->name);
    if (!bench_figure_add(s, name, "ms", first, reps))
        goto cleanup;
    snprintf(name, sizeof name, "(e) %s: what the remote adds per hit (remote - disk)", v->name);
    if (!bench_figure_add(s, name, "ms", added, reps))
        goto cleanup;
    snprintf(name, sizeof name, "(e) %s remote hit / disk hit", v->name);
    bench_ratio_add(s, name, remote, disk, reps, BENCH_GOAL_NONE, 0);
    snprintf(name, sizeof name, "(e) first link / %s remote hit", v->name);
    bench_ratio_add(s, name, first, remote, reps, BENCH_GOAL_NONE, 0);
    bench_note(s, "(e) %s on loopback adds %.3f ms per hit (median of remote - disk)", v->name,
               median_of(added, reps));
    rc = 0;
cleanup:
    fdl_cache_clear(dir, NULL, NULL);
    rmdir(dir);
    free(first);
    free(remote);
    free(disk);
    free(added);
    return rc;
}

/* One ttfr run with the cache in @p dir and the remote @p remote; FDL_EXIT_SKIP without a GPU. */
static int ttfr_once(bench_section *s, const char *program, const char *dir, const char *remote,
                     double *wall)
{
    char env_dir[1300];
    snprintf(env_dir, sizeof env_dir, "FDLINK_CACHE_DIR=%s", dir);
    child_env e;
    child_env_init(&e, remote);
    const char *env[8];
    size_t k = 0;
    for (size_t i = 0; e.v[i]; i++)
        env[k++] = e.v[i];
    env[k++] = env_dir;
    env[k] = NULL;
    double inner = 0;
    return bench_ttfr_run(s, program, env, wall, &inner, NULL, 0);
}

/* (f) and (g): 0 done or skipped, 1 failed. */
static int ttfr_rows(bench_ctx *ctx, bench_section *s, const srv *redis, const char *tmp)
{
    const size_t pairs = bench_reps(ctx, 3, 40);
    char dir[1200], bundle[1200];
    snprintf(dir, sizeof dir, "%.900s/ttfr-local", tmp);
    snprintf(bundle, sizeof bundle, "%.900s/ttfr.fdlb", tmp);
    double *rt = calloc(pairs, sizeof *rt), *emb = calloc(pairs, sizeof *emb);
    double *brt = calloc(pairs, sizeof *brt), *bemb = calloc(pairs, sizeof *bemb);
    fdl_error err = FDL_ERROR_INIT;
    int rc = 1;
    double w = 0;
    if (!rt || !emb || !brt || !bemb) {
        bench_fail(s, "out of memory");
        goto cleanup;
    }
    /* warm: the remote (when there is one) and a local cache to export */
    fdl_cache_clear(dir, NULL, NULL);
    int r = ttfr_once(s, FDL_BENCH_TTFR_RUNTIME, dir, redis ? redis->url : "", &w);
    if (r == FDL_EXIT_SKIP) {
        bench_note(s, "(f), (g) skipped: no GPU");
        rc = 0;
        goto cleanup;
    }
    if (r != 0 || ttfr_once(s, FDL_BENCH_TTFR_EMBEDDED, dir, "", &w) != 0)
        goto cleanup;
    size_t n = 0;
    if (fdl_cache_export(dir, bundle, NULL, &n, &err) != FDL_OK) {
        bench_fail(s, "(g) exporting the bundle: %s", err.message);
        goto cleanup;
    }
    for (size_t i = 0; i < pairs; i++) {
        for (int j = 0; j < 2; j++) {
            int runtime = (int)((i + (size_t)j) % 2);
            if (runtime) {
                if (redis) {
                    fdl_cache_clear(dir, NULL, NULL);
                    if (ttfr_once(s, FDL_BENCH_TTFR_RUNTIME, dir, redis->url, &rt[i]) != 0)
                        goto cleanup;
                }
                fdl_cache_clear(dir, NULL, NULL);
                size_t added = 0;
                if (fdl_cache_import(dir, bundle, &added, NULL, NULL, &err) != FDL_OK ||
                    added != n) {
                    bench_fail(s, "(g) importing the bundle: %s", err.message);
                    goto cleanup;
                }
                if (ttfr_once(s, FDL_BENCH_TTFR_RUNTIME, dir, "", &brt[i]) != 0)
                    goto cleanup;
            } else {
                if (ttfr_once(s, FDL_BENCH_TTFR_EMBEDDED, dir, "", &emb[i]) != 0)
                    goto cleanup;
                bemb[i] = emb[i];
            }
        }
    }
    if (redis) {
        if (!bench_figure_add(s, "(f) ttfr, empty local cache, warm Redis", "ms", rt, pairs))
            goto cleanup;
        bench_ratio_add(s, "(f) ttfr, empty local cache + warm Redis / embedded", rt, emb, pairs,
                        BENCH_GOAL_NONE, 0);
    } else {
        bench_note(s, "(f) skipped: no Redis server");
    }
    if (!bench_figure_add(s, "(g) ttfr right after importing a bundle", "ms", brt, pairs) ||
        !bench_figure_add(s, "(f), (g) ttfr, embedded cubin (same runs)", "ms", bemb, pairs))
        goto cleanup;
    bench_ratio_add(s, "(g) ttfr after a bundle import / embedded", brt, bemb, pairs,
                    BENCH_GOAL_LE, 1.05);
    bench_note(s, "(g) the bundle holds %zu entries; each sample clears the local cache and "
                  "imports it (untimed: the install step) before the run-time program", n);
    rc = 0;
cleanup:
    fdl_cache_clear(dir, NULL, NULL);
    rmdir(dir);
    unlink(bundle);
    free(rt);
    free(emb);
    free(brt);
    free(bemb);
    return rc;
}

int bench_cache_remote(bench_ctx *ctx, bench_section *s, const char *tmp, uint64_t ref_hash)
{
    srv redis = {0}, http = {0};
    char why[600] = "", sub[1200];
    int rc = 1;
    snprintf(sub, sizeof sub, "%.900s/servers", tmp);
    mkdir(sub, 0700);
    int have_redis = start_redis(&redis, sub, why, sizeof why) == 0;
    if (!have_redis)
        bench_note(s, "(e) redis rows skipped: %s", why);
    int have_http = start_nginx(&http, sub, why, sizeof why) == 0;
    if (!have_http)
        bench_note(s, "(e) http rows skipped: %s", why);
    if (have_redis && remote_hits(ctx, s, &redis, tmp, ref_hash))
        goto cleanup;
    if (have_http && remote_hits(ctx, s, &http, tmp, ref_hash))
        goto cleanup;
    if (ttfr_rows(ctx, s, have_redis ? &redis : NULL, tmp))
        goto cleanup;
    rc = 0;
cleanup:
    stop(&redis);
    stop(&http);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sub);
    if (system(cmd) != 0)
        bench_note(s, "could not remove %s", sub);
    return rc;
}
