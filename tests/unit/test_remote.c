/*
 * The cache's remote tier against real servers (label unit): redis-server and nginx with WebDAV,
 * started on free loopback ports and stopped after, plus small servers of this file that answer
 * slowly, with garbage, cut off mid-body, or full. Every link runs the fdlink CLI in its own
 * process, and every cubin it writes must be byte-identical to the one FDLINK_CACHE=0 writes.
 * A test skips when redis-server or nginx is not installed (tests/run.sh installs both).
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include "fdl_test_net.h"
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define DATA FDL_TEST_DATA "/check"

/* ---- helpers ------------------------------------------------------------------------------- */
static char *slurp(const char *path, size_t *size)
{
    char *d = NULL;
    size_t n = 0;
    if (fdl__read_file(path, &d, &n, NULL) != FDL_OK)
        return NULL;
    if (size)
        *size = n;
    return d;
}

static void spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

static int files_equal(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    int eq = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return eq;
}

static int count_in(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)) != NULL; p += strlen(what))
        n++;
    return n;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int have(const char *tool)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    return system(cmd) == 0;
}

/* Remove a scratch folder and free its path. */
static void remove_dir(char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
    free(dir);
}


static void stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* Start a program with its output to @p log; returns its pid. */
static pid_t spawn(const char *log, char *const argv[])
{
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves no server behind */
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

typedef struct server {
    pid_t pid;
    int port;
    char url[256];
    char *dir;
} server;

/* redis-server on a free port, nothing saved; @p password NULL for none. */
static server start_redis(const char *scratch, const char *password, int port)
{
    if (!have("redis-server"))
        cr_skip_test("redis-server is not installed (apt-get install redis-server)");
    server s = {0};
    s.port = port ? port : free_port();
    s.dir = path_in(scratch, "redis");
    mkdir(s.dir, 0700);
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%d", s.port);
    char *log = path_in(scratch, "redis.log");
    char *argv[16] = {"redis-server", "--port", portbuf, "--bind", "127.0.0.1", "--save", "",
                      "--appendonly", "no", "--dir", s.dir, NULL};
    if (password) {
        argv[11] = "--requirepass";
        argv[12] = (char *)password;
        argv[13] = NULL;
    }
    s.pid = spawn(log, argv);
    wait_listening(s.port, s.pid);
    snprintf(s.url, sizeof s.url, "redis://127.0.0.1:%d", s.port);
    free(log);
    return s;
}

/* nginx with WebDAV PUT on a free port, storing under <scratch>/dav. */
static server start_nginx(const char *scratch, int port)
{
    if (!have("nginx"))
        cr_skip_test("nginx is not installed (apt-get install nginx-light)");
    server s = {0};
    s.port = port ? port : free_port();
    s.dir = path_in(scratch, "dav");
    mkdir(s.dir, 0777);
    char *ng = path_in(scratch, "nginx");
    mkdir(ng, 0777);
    char conf[4096];
    int n = snprintf(conf, sizeof conf,
        "%s"
        "master_process off;\nworker_processes 1;\nerror_log %s/error.log;\npid %s/nginx.pid;\n"
        "events { worker_connections 256; }\n"
        "http {\n  access_log off;\n  client_body_temp_path %s/body;\n"
        "  proxy_temp_path %s/proxy;\n  fastcgi_temp_path %s/fastcgi;\n"
        "  uwsgi_temp_path %s/uwsgi;\n  scgi_temp_path %s/scgi;\n"
        "  server {\n    listen 127.0.0.1:%d;\n    root %s;\n    client_max_body_size 0;\n"
        "    location / { dav_methods PUT DELETE; create_full_put_path on; "
        "dav_access user:rw; }\n  }\n}\n",
        geteuid() == 0 ? "user root root;\n" : "", ng, ng, ng, ng, ng, ng, ng, s.port, s.dir);
    cr_assert_lt(n, (int)sizeof conf);
    char *conf_path = path_in(ng, "nginx.conf");
    spit(conf_path, conf, (size_t)n);
    char *log = path_in(scratch, "nginx.log");
    char *argv[] = {"nginx", "-c", conf_path, "-p", ng, "-g", "daemon off;", NULL};
    s.pid = spawn(log, argv);
    wait_listening(s.port, s.pid);
    snprintf(s.url, sizeof s.url, "http://127.0.0.1:%d/cache", s.port);
    free(conf_path);
    free(log);
    free(ng);
    return s;
}

/* kill the whole process group: nginx's workers too */
static void stop_server(server *s)
{
    if (s->pid > 0) {
        kill(-s->pid, SIGKILL);
        stop(s->pid);
    }
    s->pid = 0;
}

static void free_server(server *s)
{
    stop_server(s);
    free(s->dir);
    s->dir = NULL;
}

/* ---- small servers of the tests ------------------------------------------------------------ */
typedef enum fake {
    SLOW, HTTP_GARBAGE, HTTP_CUT, HTTP_FULL, REDIS_GARBAGE, REDIS_CUT, REDIS_DRIP, HTTP_DRIP
} fake;

/* Read what a client sends (until a pause of 50 ms), so that closing does not reset it. */
static void drain(int c)
{
    char buf[65536];
    struct pollfd p = {c, POLLIN, 0};
    while (poll(&p, 1, 50) > 0) {
        ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0)
            break;
    }
}

static void put_all(int c, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(c, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void fake_loop(int ls, fake how)
{
    signal(SIGPIPE, SIG_IGN);
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            continue;
        if (how == SLOW) {
            sleep(120); /* holds the connection, answers nothing */
            close(c);
            continue;
        }
        char req[8] = "";
        struct pollfd p = {c, POLLIN, 0};
        if (poll(&p, 1, 2000) > 0) {
            ssize_t n = recv(c, req, sizeof req - 1, MSG_PEEK);
            if (n > 0)
                req[n] = '\0';
        }
        drain(c);
        static const char noise[] = "\x01\x02garbage\xff\xfe not an entry at all \x00\x7f";
        char resp[1024];
        int n = 0;
        switch (how) {
        case HTTP_GARBAGE:
            n = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
                         "Connection: close\r\n\r\n", sizeof noise);
            put_all(c, resp, (size_t)n);
            put_all(c, noise, sizeof noise);
            break;
        case HTTP_CUT:
            n = snprintf(resp, sizeof resp, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n"
                         "Connection: close\r\n\r\nFDLCACHE");
            put_all(c, resp, (size_t)n);
            break;
        case HTTP_FULL:
            n = snprintf(resp, sizeof resp, "HTTP/1.1 %s\r\nContent-Length: 0\r\n"
                         "Connection: close\r\n\r\n",
                         strncmp(req, "PUT", 3) == 0 ? "507 Insufficient Storage"
                                                     : "404 Not Found");
            put_all(c, resp, (size_t)n);
            break;
        case REDIS_GARBAGE:
            put_all(c, "%%%\x01 garbage\r\n", 14);
            break;
        case REDIS_CUT:
            put_all(c, "$100000\r\nFDLCACHE", 17);
            break;
        case REDIS_DRIP:
        case HTTP_DRIP: {
            /* an answer that never ends: a piece well within every read's timeout, for ever
             * (until the client hangs up) */
            const char *head = how == REDIS_DRIP
                                   ? "*100000000\r\n"
                                   : "HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n";
            const char *piece = how == REDIS_DRIP ? ":1\r\n" : "F";
            put_all(c, head, strlen(head));
            for (;;) {
                struct timespec ms20 = {0, 20000000};
                nanosleep(&ms20, NULL);
                if (write(c, piece, strlen(piece)) <= 0)
                    break;
            }
            break;
        }
        case SLOW:
            break;
        }
        close(c);
    }
}

static server start_fake(fake how)
{
    server s = {0};
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(ls, 0);
    int one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(ls, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    cr_assert_eq(getsockname(ls, (struct sockaddr *)&a, &len), 0);
    cr_assert_eq(listen(ls, 64), 0);
    s.port = ntohs(a.sin_port);
    s.pid = fork();
    cr_assert_geq(s.pid, 0);
    if (s.pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        fake_loop(ls, how);
        _exit(0);
    }
    close(ls);
    int redis = how == REDIS_GARBAGE || how == REDIS_CUT || how == REDIS_DRIP;
    snprintf(s.url, sizeof s.url, "%s://127.0.0.1:%d%s", redis ? "redis" : "http", s.port,
             redis ? "" : "/cache");
    return s;
}

/* ---- running links ------------------------------------------------------------------------- */
typedef struct ran {
    int status;
    char *out;
    char *err;
    double seconds;
} ran;

static void ran_free(ran *r)
{
    free(r->out);
    free(r->err);
}

/*
 * `fdlink <args>` with FDLINK_CACHE_DIR=<cache>, FDLINK_CACHE_REMOTE=<remote> and @p env (more
 * "NAME=value" words, may be ""); output captured under @p tag in @p scratch.
 */
static ran fdlink(const char *scratch, const char *tag, const char *cache, const char *remote,
                  const char *env, const char *args)
{
    char o[512], e[512];
    snprintf(o, sizeof o, "%s/%s.out", scratch, tag);
    snprintf(e, sizeof e, "%s/%s.err", scratch, tag);
    size_t n = strlen(args) + strlen(cache) + strlen(remote) + strlen(env) + 2048;
    char *cmd = malloc(n);
    snprintf(cmd, n, "env -u FDLINK_CACHE -u FDLINK_CACHE_KEY_FILE FDLINK_CACHE_DIR='%s' "
             "FDLINK_CACHE_REMOTE='%s' %s '%s' %s >'%s' 2>'%s'", cache, remote, env,
             FDL_FDLINK_EXE, args, o, e);
    ran r = {0};
    double t0 = now_s();
    int st = system(cmd);
    r.seconds = now_s() - t0;
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(o, NULL);
    r.err = slurp(e, NULL);
    cr_assert_not_null(r.out);
    cr_assert_not_null(r.err);
    free(cmd);
    return r;
}

/* Link arguments writing @p out; @p variant picks one of several keys (--maxrregcount). */
static void link_args(char *buf, size_t size, const char *out, int variant)
{
    snprintf(buf, size, "link -arch=sm_90 -v --maxrregcount %d -o '%s' %s/caller.ptx "
             "%s/conforming.ptx", 32 + variant, out, DATA, DATA);
}

/* The cubin of @p variant with the cache off, at <scratch>/ref<variant>.cubin. */
static char *reference(const char *scratch, int variant)
{
    char name[64], args[2048];
    snprintf(name, sizeof name, "ref%d.cubin", variant);
    char *out = path_in(scratch, name);
    link_args(args, sizeof args, out, variant);
    char *none = path_in(scratch, "no-cache"); /* the cache is off: never made */
    ran r = fdlink(scratch, "ref", none, "", "FDLINK_CACHE=0", args);
    free(none);
    cr_assert_eq(r.status, 0, "%s", r.err);
    ran_free(&r);
    return out;
}

/* One link of @p variant in a fresh cache directory <scratch>/<tag>; checks the output. */
static ran link_fresh(const char *scratch, const char *tag, const char *remote, const char *env,
                      int variant, const char *ref)
{
    char cache[512], out[512], args[2048];
    snprintf(cache, sizeof cache, "%s/%s.cache", scratch, tag);
    snprintf(out, sizeof out, "%s/%s.cubin", scratch, tag);
    link_args(args, sizeof args, out, variant);
    ran r = fdlink(scratch, tag, cache, remote, env, args);
    cr_assert_eq(r.status, 0, "%s: %s", tag, r.err);
    cr_assert(files_equal(out, ref), "%s: the cubin differs from FDLINK_CACHE=0's", tag);
    return r;
}

static char *stats_of(const char *scratch, const char *tag, const char *remote, const char *env)
{
    char cache[512];
    snprintf(cache, sizeof cache, "%s/%s.cache", scratch, tag);
    ran r = fdlink(scratch, "stats", cache, remote, env, "cache stats");
    cr_assert_eq(r.status, 0, "%s", r.err);
    free(r.err);
    return r.out;
}

/* ---- the tests ----------------------------------------------------------------------------- */
static void hit_from(server *srv, const char *scratch)
{
    char *ref = reference(scratch, 0);
    ran a = link_fresh(scratch, "a", srv->url, "", 0, ref);
    cr_assert_not_null(strstr(a.err, "fdlink: cache: miss, linked key "), "%s", a.err);
    ran b = link_fresh(scratch, "b", srv->url, "", 0, ref);
    cr_assert_not_null(strstr(b.err, "fdlink: cache: hit (remote) key "), "%s", b.err);
    ran c = link_fresh(scratch, "b", srv->url, "", 0, ref); /* now on b's disk */
    cr_assert_not_null(strstr(c.err, "fdlink: cache: hit (disk) key "), "%s", c.err);
    char *st = stats_of(scratch, "b", srv->url, "");
    cr_assert_not_null(strstr(st, ": hits 1, misses 0, errors 0, corrupt 0"), "%s", st);
    free(st);
    ran_free(&a);
    ran_free(&b);
    ran_free(&c);
    free(ref);
}

Test(remote, redis_serves_a_link_to_a_fresh_machine, .timeout = 120)
{
    char *dir = make_temp_dir();
    server r = start_redis(dir, NULL, 0);
    hit_from(&r, dir);
    free_server(&r);
    remove_dir(dir);
}

Test(remote, http_webdav_serves_a_link_to_a_fresh_machine, .timeout = 120)
{
    char *dir = make_temp_dir();
    server h = start_nginx(dir, 0);
    hit_from(&h, dir);
    /* ccache's subdirs layout: <path>/<2 hex>/<30 hex> */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "find '%s/cache' -type f | grep -Eq '/cache/[0-9a-f]{2}/[0-9a-f]{30}$'",
             h.dir);
    cr_assert_eq(system(cmd), 0, "no entry in the subdirs layout");
    free_server(&h);
    remove_dir(dir);
}

Test(remote, a_read_only_remote_is_asked_but_never_written, .timeout = 120)
{
    char *dir = make_temp_dir();
    server h = start_nginx(dir, 0);
    char *ref = reference(dir, 1);
    char ro[300];
    snprintf(ro, sizeof ro, "%s|read-only", h.url);
    ran a = link_fresh(dir, "a", ro, "", 1, ref);
    cr_assert_not_null(strstr(a.err, "miss, linked"), "%s", a.err);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -type f)\"", h.dir);
    cr_assert_eq(system(cmd), 0, "a read-only remote was written to");
    char *st = stats_of(dir, "a", ro, "");
    cr_assert_not_null(strstr(st, "(read-only): hits 0, misses 1, errors 0"), "%s", st);
    free(st);
    ran_free(&a);
    free(ref);
    free_server(&h);
    remove_dir(dir);
}

Test(remote, credentials_from_a_file_and_never_in_any_output, .timeout = 120)
{
    char *dir = make_temp_dir();
    server r = start_redis(dir, "s3cret-Pw", 0);
    char *ref = reference(dir, 2);
    /* no password: refused, the link is right, one warning, no secret anywhere */
    char wrong[300], file_url[600];
    snprintf(wrong, sizeof wrong, "redis://:wrong-Pw@127.0.0.1:%d", r.port);
    ran a = link_fresh(dir, "a", wrong, "", 2, ref);
    cr_assert_eq(count_in(a.err, "cache remote redis://127.0.0.1:"), 1, "%s", a.err);
    cr_assert_not_null(strstr(a.err, "authentication failed"), "%s", a.err);
    cr_assert_null(strstr(a.err, "wrong-Pw"), "%s", a.err);
    char *creds = path_in(dir, "creds");
    spit(creds, "s3cret-Pw\n", 10);
    chmod(creds, 0600);
    snprintf(file_url, sizeof file_url, "%s|credentials-file=%s", r.url, creds);
    ran b = link_fresh(dir, "b", file_url, "", 2, ref);
    cr_assert_not_null(strstr(b.err, "miss, linked"), "%s", b.err);
    cr_assert_null(strstr(b.err, "cache remote"), "%s", b.err);
    ran c = link_fresh(dir, "c", file_url, "", 2, ref);
    cr_assert_not_null(strstr(c.err, "hit (remote)"), "%s", c.err);
    /* the password in the URL: shown nowhere, in stats, doctor or doctor --json */
    char in_url[300];
    snprintf(in_url, sizeof in_url, "redis://:s3cret-Pw@127.0.0.1:%d", r.port);
    char cache[512];
    snprintf(cache, sizeof cache, "%s/c.cache", dir);
    const char *cmds[] = {"cache stats", "doctor", "doctor --json"};
    for (size_t i = 0; i < 3; i++) {
        ran d = fdlink(dir, "show", cache, in_url, "", cmds[i]);
        cr_assert_null(strstr(d.out, "s3cret"), "%s: %s", cmds[i], d.out);
        cr_assert_null(strstr(d.err, "s3cret"), "%s: %s", cmds[i], d.err);
        cr_assert_not_null(strstr(d.out, "redis://127.0.0.1:"), "%s: %s", cmds[i], d.out);
        ran_free(&d);
    }
    ran_free(&a);
    ran_free(&b);
    ran_free(&c);
    free(creds);
    free(ref);
    free_server(&r);
    remove_dir(dir);
}

/* A remote that fails: the link is right, in time, with one warning naming it. */
/* Whether the client library of @p url's scheme can be opened here (hiredis, libcurl), as
 * fdlink would open it; tests/run.sh installs both, a GPU host may have neither. */
static int client_available(const char *url)
{
    static const char *const redis[] = {"libhiredis.so.1.1.0", "libhiredis.so.1.0.0",
                                        "libhiredis.so.0.14", "libhiredis.so.0.13", NULL};
    static const char *const curl[] = {"libcurl.so.4", NULL};
    const char *const *names = strncmp(url, "redis://", 8) == 0 ? redis : curl;
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h) {
            dlclose(h);
            return 1;
        }
    }
    return 0;
}

static void survives(server *bad, const char *attrs, const char *says, double within)
{
    if (!client_available(bad->url))
        cr_skip_test("no client library for %.8s here (apt-get install libhiredis0.14 libcurl4)",
                     bad->url);
    char *dir = make_temp_dir();
    char *ref = reference(dir, 3);
    char url[512];
    snprintf(url, sizeof url, "%s%s", bad->url, attrs);
    ran a = link_fresh(dir, "a", url, "", 3, ref);
    cr_assert_lt(a.seconds, within, "took %.1f s", a.seconds);
    cr_assert_eq(count_in(a.err, "fdlink: warning: cache remote "), 1, "%s", a.err);
    cr_assert_not_null(strstr(a.err, "not used again by this process"), "%s", a.err);
    cr_assert_not_null(strstr(a.err, says), "wanted '%s' in: %s", says, a.err);
    char *st = stats_of(dir, "a", url, "");
    cr_assert_not_null(strstr(st, "errors 1"), "%s", st);
    free(st);
    ran_free(&a);
    free(ref);
    remove_dir(dir);
}

Test(remote, a_down_remote_costs_one_warning, .timeout = 60)
{
    server none = {0};
    snprintf(none.url, sizeof none.url, "redis://127.0.0.1:%d", free_port());
    survives(&none, "", "cannot connect", 20);
    snprintf(none.url, sizeof none.url, "http://127.0.0.1:%d/x", free_port());
    survives(&none, "", "GET failed", 20);
}

Test(remote, a_slow_remote_is_cut_off_by_its_timeouts, .timeout = 60)
{
    server s = start_fake(SLOW);
    survives(&s, "|operation-timeout=300", "GET failed", 10);
    snprintf(s.url, sizeof s.url, "redis://127.0.0.1:%d", s.port);
    survives(&s, "|operation-timeout=300", "GET failed", 10);
    stop_server(&s);
}

/*
 * Issue 35: a server that drips its answer, a piece every 20 ms, for ever. Each read's timeout
 * is met; only the whole request's deadline (operation-timeout) ends it. Before, a Redis GET
 * waited without end (HTTP's was bounded by libcurl's CURLOPT_TIMEOUT_MS). The bound of 100 s
 * only keeps a hang from lasting: the drip itself never ends.
 */
Test(remote, a_dripping_remote_is_set_aside_within_its_deadline, .timeout = 300)
{
    server r = start_fake(REDIS_DRIP);
    survives(&r, "|operation-timeout=1000", "no whole answer within the operation timeout", 100);
    stop_server(&r);
    server h = start_fake(HTTP_DRIP);
    survives(&h, "|operation-timeout=1000", "GET failed", 100);
    stop_server(&h);
}

Test(remote, garbage_cut_and_full_answers_leave_links_right, .timeout = 120)
{
    server g = start_fake(HTTP_GARBAGE);
    {
        /* garbage that is a well-formed answer: a bad entry, counted, not a failure */
        char *dir = make_temp_dir();
        char *ref = reference(dir, 4);
        ran a = link_fresh(dir, "a", g.url, "", 4, ref);
        cr_assert_not_null(strstr(a.err, "miss, linked"), "%s", a.err);
        char *st = stats_of(dir, "a", g.url, "");
        cr_assert_not_null(strstr(st, "corrupt 1"), "%s", st);
        free(st);
        ran_free(&a);
        free(ref);
        remove_dir(dir);
    }
    stop_server(&g);
    server c = start_fake(HTTP_CUT);
    survives(&c, "", "GET failed", 20);
    stop_server(&c);
    server f = start_fake(HTTP_FULL);
    survives(&f, "", "PUT answered HTTP 507", 20);
    stop_server(&f);
    server rg = start_fake(REDIS_GARBAGE);
    survives(&rg, "", "GET failed", 20);
    stop_server(&rg);
    server rc = start_fake(REDIS_CUT);
    survives(&rc, "|operation-timeout=500", "GET failed", 20);
    stop_server(&rc);
}

/* The entry stored for @p variant's key on nginx: its file. */
static char *stored_file(const server *h)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "find '%s/cache' -type f | head -1", h->dir);
    FILE *p = popen(cmd, "r");
    char line[1024] = "";
    cr_assert_not_null(fgets(line, sizeof line, p));
    pclose(p);
    line[strcspn(line, "\n")] = '\0';
    return strdup(line);
}

Test(remote, a_tampered_entry_on_the_server_is_a_miss_and_replaced, .timeout = 120)
{
    char *dir = make_temp_dir();
    server h = start_nginx(dir, 0);
    char *ref = reference(dir, 5);
    ran a = link_fresh(dir, "a", h.url, "", 5, ref);
    char *file = stored_file(&h);
    size_t n = 0;
    char *bytes = slurp(file, &n);
    cr_assert_gt(n, 200);
    bytes[n - 100] ^= 0x40; /* a flipped bit inside the cubin */
    spit(file, bytes, n);
    ran b = link_fresh(dir, "b", h.url, "", 5, ref);
    cr_assert_not_null(strstr(b.err, "miss, linked"), "%s", b.err);
    char *st = stats_of(dir, "b", h.url, "");
    cr_assert_not_null(strstr(st, "corrupt 1"), "%s", st);
    free(st);
    /* the link stored its good entry over the bad one */
    ran c = link_fresh(dir, "c", h.url, "", 5, ref);
    cr_assert_not_null(strstr(c.err, "hit (remote)"), "%s", c.err);
    ran_free(&a);
    ran_free(&b);
    ran_free(&c);
    free(bytes);
    free(file);
    free(ref);
    free_server(&h);
    remove_dir(dir);
}

static void write_key(const char *path, char fill)
{
    char key[48];
    memset(key, fill, sizeof key);
    spit(path, key, sizeof key);
    chmod(path, 0600);
}

Test(remote, with_a_key_unsigned_and_forged_entries_are_misses_counted_apart, .timeout = 120)
{
    char *dir = make_temp_dir();
    server r = start_redis(dir, NULL, 0);
    char *ref = reference(dir, 6);
    char *key = path_in(dir, "key"), *other = path_in(dir, "other");
    write_key(key, 'k');
    write_key(other, 'o');
    char with_key[600], with_other[600];
    snprintf(with_key, sizeof with_key, "FDLINK_CACHE_KEY_FILE='%s'", key);
    snprintf(with_other, sizeof with_other, "FDLINK_CACHE_KEY_FILE='%s'", other);
    /* a writer without the key stores an unsigned entry ... */
    ran a = link_fresh(dir, "a", r.url, "", 6, ref);
    cr_assert_not_null(strstr(a.err, "miss, linked"), "%s", a.err);
    /* ... which a reader with the key does not load */
    ran b = link_fresh(dir, "b", r.url, with_key, 6, ref);
    cr_assert_not_null(strstr(b.err, "miss, linked"), "%s", b.err);
    char *st = stats_of(dir, "b", r.url, with_key);
    cr_assert_not_null(strstr(st, "unsigned or forged 1"), "%s", st);
    free(st);
    /* b stored a signed one: another reader with the key loads it */
    ran c = link_fresh(dir, "c", r.url, with_key, 6, ref);
    cr_assert_not_null(strstr(c.err, "hit (remote)"), "%s", c.err);
    /* a reader with another key sees a forgery */
    ran d = link_fresh(dir, "d", r.url, with_other, 6, ref);
    cr_assert_not_null(strstr(d.err, "miss, linked"), "%s", d.err);
    st = stats_of(dir, "d", r.url, with_other);
    cr_assert_not_null(strstr(st, "unsigned or forged 1"), "%s", st);
    free(st);
    /* locally too: c's directory read with the other key */
    char cache[512], out[512], args[2048];
    snprintf(cache, sizeof cache, "%s/c.cache", dir);
    snprintf(out, sizeof out, "%s/e.cubin", dir);
    link_args(args, sizeof args, out, 6);
    ran f = fdlink(dir, "f", cache, "", with_other, args);
    cr_assert_eq(f.status, 0, "%s", f.err);
    cr_assert_not_null(strstr(f.err, "miss, linked"), "%s", f.err);
    cr_assert(files_equal(out, ref));
    ran g = fdlink(dir, "g", cache, "", with_other, "cache stats");
    cr_assert_not_null(strstr(g.out, "unsigned or forged entries: 1"), "%s", g.out);
    /* a key readable by others is refused: the link goes on without the cache */
    chmod(key, 0644);
    ran h = link_fresh(dir, "h", r.url, with_key, 6, ref);
    cr_assert_not_null(strstr(h.err, "readable by no one else"), "%s", h.err);
    cr_assert_not_null(strstr(h.err, "cache: not used"), "%s", h.err);
    ran_free(&a);
    ran_free(&b);
    ran_free(&c);
    ran_free(&d);
    ran_free(&f);
    ran_free(&g);
    ran_free(&h);
    free(key);
    free(other);
    free(ref);
    free_server(&r);
    remove_dir(dir);
}

Test(remote, nvrtc_compiles_are_served_too, .timeout = 120)
{
    char *dir = make_temp_dir();
    server r = start_redis(dir, NULL, 0);
    char *cu = path_in(dir, "plus_one.cu");
    const char src[] = "extern \"C\" __device__ int plus_one(int *ret, int x)\n"
                       "{ *ret = x + 1; return 0; }\n";
    spit(cu, src, sizeof src - 1);
    char args[2048], cache[512];
    snprintf(args, sizeof args, "link -arch=sm_90 -v -o '%s/a.cubin' %s/conforming.ptx '%s'",
             dir, DATA, cu);
    snprintf(cache, sizeof cache, "%s/a.cache", dir);
    ran a = fdlink(dir, "a", cache, r.url, "", args);
    if (a.status != 0 && strstr(a.err, "NVRTC"))
        cr_skip_test("no NVRTC: %s", a.err);
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_not_null(strstr(a.err, "CUDA C inputs: 0 from the cache, 1 compiled"), "%s", a.err);
    /* a fresh machine: the link's entry from the remote, the compile never needed */
    snprintf(cache, sizeof cache, "%s/b.cache", dir);
    snprintf(args, sizeof args, "link -arch=sm_90 -v --maxrregcount 40 -o '%s/b.cubin' "
             "%s/conforming.ptx '%s'", dir, DATA, cu);
    ran b = fdlink(dir, "b", cache, r.url, "", args);
    cr_assert_eq(b.status, 0, "%s", b.err);
    cr_assert_not_null(strstr(b.err, "CUDA C inputs: 1 from the cache, 0 compiled"), "%s", b.err);
    ran_free(&a);
    ran_free(&b);
    free(cu);
    free_server(&r);
    remove_dir(dir);
}

/* ---- many processes, servers killed and restarted ------------------------------------------ */
#define PROCS 6
#define ROUNDS 4

/* PROCS processes, each linking ROUNDS variants into its own fresh directory; all checked. */
static void run_many(const char *dir, const char *remote, const char *tag, char **refs,
                     void (*midway)(void *), void *ctx)
{
    pid_t kids[PROCS];
    for (int p = 0; p < PROCS; p++) {
        kids[p] = fork();
        cr_assert_geq(kids[p], 0);
        if (kids[p] == 0) {
            int bad = 0;
            for (int k = 0; k < ROUNDS; k++) {
                char cache[512], out[512], args[2048], t[64];
                snprintf(cache, sizeof cache, "%s/%s%d.cache", dir, tag, p);
                snprintf(out, sizeof out, "%s/%s%d_%d.cubin", dir, tag, p, k);
                snprintf(t, sizeof t, "%s%d_%d", tag, p, k);
                int variant = (p + k) % ROUNDS;
                link_args(args, sizeof args, out, 7 + variant);
                char o[512], e[512], cmd[4096];
                snprintf(o, sizeof o, "%s/%s.out", dir, t);
                snprintf(e, sizeof e, "%s/%s.err", dir, t);
                snprintf(cmd, sizeof cmd, "env -u FDLINK_CACHE FDLINK_CACHE_DIR='%s' "
                         "FDLINK_CACHE_REMOTE='%s|connect-timeout=200|operation-timeout=2000' "
                         "'%s' %s >'%s' 2>'%s'", cache, remote, FDL_FDLINK_EXE, args, o, e);
                int st = system(cmd);
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !files_equal(out, refs[variant]))
                    bad++;
            }
            _exit(bad ? 1 : 0);
        }
    }
    if (midway)
        midway(ctx);
    for (int p = 0; p < PROCS; p++) {
        int st = 0;
        cr_assert_eq(waitpid(kids[p], &st, 0), kids[p]);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "process %d: a link failed or differed",
                  p);
    }
}

typedef struct restart {
    server *s;
    const char *dir;
    int redis;
} restart;

static void kill_and_restart(void *ctx)
{
    restart *r = ctx;
    usleep(300000);
    int port = r->s->port;
    stop_server(r->s);
    usleep(300000);
    char *keep = r->s->dir;
    r->s->dir = NULL;
    free(keep);
    *r->s = r->redis ? start_redis(r->dir, NULL, port) : start_nginx(r->dir, port);
}

static void many_with(int redis)
{
    char *dir = make_temp_dir();
    server s = redis ? start_redis(dir, NULL, 0) : start_nginx(dir, 0);
    char *refs[ROUNDS];
    for (int k = 0; k < ROUNDS; k++)
        refs[k] = reference(dir, 7 + k);
    /* all at once against a live server */
    run_many(dir, s.url, "p", refs, NULL, NULL);
    /* again, with fresh directories, the server killed and restarted while they run */
    restart r = {&s, dir, redis};
    run_many(dir, s.url, "q", refs, kill_and_restart, &r);
    /* and after: the restarted server serves (nginx kept its files; redis starts empty) */
    ran a = link_fresh(dir, "after1", s.url, "", 7, refs[0]);
    ran b = link_fresh(dir, "after2", s.url, "", 7, refs[0]);
    cr_assert_not_null(strstr(b.err, "hit (remote)"), "%s", b.err);
    ran_free(&a);
    ran_free(&b);
    for (int k = 0; k < ROUNDS; k++)
        free(refs[k]);
    free_server(&s);
    remove_dir(dir);
}

Test(remote_contention, redis_many_processes_and_a_restart, .timeout = 300)
{
    many_with(1);
}

Test(remote_contention, nginx_many_processes_and_a_restart, .timeout = 300)
{
    many_with(0);
}

/* ---- bundles ------------------------------------------------------------------------------- */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* Rewrite a bundle's trailing checksum (after the test changed an entry inside it). */
static void reseal(const char *path)
{
    size_t n = 0;
    char *b = slurp(path, &n);
    cr_assert(b && n > 32);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(b, n - 16));
    memcpy(b + n - 16, c.digest, 16);
    spit(path, b, n);
    free(b);
}

/* The key that `fdlink link -v` printed, into @p key. */
static void key_of(const char *text, char key[33])
{
    const char *k = strstr(text, " key ");
    cr_assert_not_null(k, "%s", text);
    memcpy(key, k + 5, 32);
    key[32] = '\0';
}

Test(bundle, an_imported_bundle_gives_disk_hits_on_a_fresh_machine, .timeout = 120)
{
    char *dir = make_temp_dir();
    char *ref0 = reference(dir, 20), *ref1 = reference(dir, 21);
    ran a = link_fresh(dir, "a", "", "", 20, ref0);
    ran b = link_fresh(dir, "a", "", "", 21, ref1); /* the same directory: two entries */
    char cache[512], cmd[2048], key[33];
    snprintf(cache, sizeof cache, "%s/a.cache", dir);
    key_of(b.err, key);
    /* all entries */
    snprintf(cmd, sizeof cmd, "cache export -o '%s/all.fdlb'", dir);
    ran e = fdlink(dir, "export", cache, "", "", cmd);
    cr_assert_eq(e.status, 0, "%s", e.err);
    cr_assert_not_null(strstr(e.out, "exported 2 entries to "), "%s", e.out);
    ran_free(&e);
    /* those of a key list */
    char *list = path_in(dir, "keys");
    char text[128];
    int tn = snprintf(text, sizeof text, "# the second link\n\n%s\n", key);
    spit(list, text, (size_t)tn);
    snprintf(cmd, sizeof cmd, "cache export -o '%s/one.fdlb' --key-list '%s'", dir, list);
    e = fdlink(dir, "export", cache, "", "", cmd);
    cr_assert_eq(e.status, 0, "%s", e.err);
    cr_assert_not_null(strstr(e.out, "exported 1 entry to "), "%s", e.out);
    ran_free(&e);
    /* a fresh machine: import, then disk hits, byte-identical */
    snprintf(cache, sizeof cache, "%s/f.cache", dir);
    snprintf(cmd, sizeof cmd, "cache import '%s/one.fdlb'", dir);
    ran i = fdlink(dir, "import", cache, "", "", cmd);
    cr_assert_eq(i.status, 0, "%s", i.err);
    cr_assert_not_null(strstr(i.out, "imported 1 entry into "), "%s", i.out);
    cr_assert_not_null(strstr(i.out, "; 0 refused"), "%s", i.out);
    ran f = link_fresh(dir, "f", "", "", 21, ref1);
    cr_assert_not_null(strstr(f.err, "hit (disk)"), "%s", f.err);
    ran g = link_fresh(dir, "f", "", "", 20, ref0); /* not in the key list */
    cr_assert_not_null(strstr(g.err, "miss, linked"), "%s", g.err);
    ran_free(&a);
    ran_free(&b);
    ran_free(&i);
    ran_free(&f);
    ran_free(&g);
    free(list);
    free(ref0);
    free(ref1);
    remove_dir(dir);
}

Test(bundle, each_entry_is_checked_and_a_damaged_bundle_refused, .timeout = 120)
{
    char *dir = make_temp_dir();
    char *ref = reference(dir, 22);
    ran a = link_fresh(dir, "a", "", "", 22, ref);
    char cache[512], cmd[2048];
    snprintf(cache, sizeof cache, "%s/a.cache", dir);
    snprintf(cmd, sizeof cmd, "cache export -o '%s/b.fdlb'", dir);
    ran e = fdlink(dir, "export", cache, "", "", cmd);
    cr_assert_eq(e.status, 0, "%s", e.err);
    char *bundle = path_in(dir, "b.fdlb");
    size_t n = 0;
    char *orig = slurp(bundle, &n);
    /* a flipped byte inside the entry, the bundle's own checksum made right: the entry refused */
    char *bad = malloc(n);
    memcpy(bad, orig, n);
    bad[n - 16 - 200] ^= 0x10;
    spit(bundle, bad, n);
    reseal(bundle);
    snprintf(cache, sizeof cache, "%s/g.cache", dir);
    snprintf(cmd, sizeof cmd, "cache import '%s'", bundle);
    ran i = fdlink(dir, "import", cache, "", "", cmd);
    cr_assert_eq(i.status, 0, "%s", i.err);
    cr_assert_not_null(strstr(i.out, "imported 0 entries into "), "%s", i.out);
    cr_assert_not_null(strstr(i.out, "; 1 refused"), "%s", i.out);
    ran g = link_fresh(dir, "g", "", "", 22, ref);
    cr_assert_not_null(strstr(g.err, "miss, linked"), "%s", g.err);
    /* a truncated bundle: refused whole, naming the byte */
    spit(bundle, orig, n / 2);
    ran t = fdlink(dir, "import", cache, "", "", cmd);
    cr_assert_eq(t.status, 1);
    cr_assert_not_null(strstr(t.err, "error: byte "), "%s", t.err);
    cr_assert_not_null(strstr(t.err, bundle), "%s", t.err);
    /* issue 35: a bundle whose count disagrees with its entries (one more, one fewer), resealed:
     * refused whole before anything is stored (before, the entries ahead of the mismatch were) */
    for (int delta = -1; delta <= 1; delta += 2) {
        char *lie = malloc(n);
        memcpy(lie, orig, n);
        uint32_t count = (uint32_t)(unsigned char)lie[12] | (uint32_t)(unsigned char)lie[13] << 8;
        cr_assert_gt(count, 0);
        count = (uint32_t)((int)count + delta);
        lie[12] = (char)(count & 0xff);
        lie[13] = (char)(count >> 8);
        spit(bundle, lie, n);
        reseal(bundle);
        char fresh[512];
        snprintf(fresh, sizeof fresh, "%s/lie%d.cache", dir, delta + 1);
        ran l = fdlink(dir, "import", fresh, "", "", cmd);
        cr_assert_eq(l.status, 1, "%s", l.err);
        cr_assert_not_null(strstr(l.err, "error: byte "), "%s", l.err);
        char ls[1024];
        snprintf(ls, sizeof ls, "ls '%s' 2>/dev/null | grep -c fdlc", fresh);
        FILE *p = popen(ls, "r");
        char got[32] = "";
        cr_assert_not_null(fgets(got, sizeof got, p));
        pclose(p);
        cr_assert_eq(atoi(got), 0, "a refused bundle stored %s entries", got);
        ran_free(&l);
        free(lie);
    }
    /* not a bundle at all */
    spit(bundle, "hello", 5);
    ran x = fdlink(dir, "import", cache, "", "", cmd);
    cr_assert_eq(x.status, 1);
    cr_assert_not_null(strstr(x.err, "not an fdlink cache bundle"), "%s", x.err);
    ran_free(&a);
    ran_free(&e);
    ran_free(&i);
    ran_free(&g);
    ran_free(&t);
    ran_free(&x);
    free(bad);
    free(orig);
    free(bundle);
    free(ref);
    remove_dir(dir);
}

Test(bundle, with_a_key_unsigned_and_forged_entries_are_refused, .timeout = 120)
{
    char *dir = make_temp_dir();
    char *ref = reference(dir, 23);
    char *key = path_in(dir, "key"), *other = path_in(dir, "other");
    write_key(key, 'k');
    write_key(other, 'o');
    char with_key[600], with_other[600], cache[512], cmd[2048];
    snprintf(with_key, sizeof with_key, "FDLINK_CACHE_KEY_FILE='%s'", key);
    snprintf(with_other, sizeof with_other, "FDLINK_CACHE_KEY_FILE='%s'", other);
    ran u = link_fresh(dir, "u", "", "", 23, ref);       /* unsigned */
    ran s = link_fresh(dir, "s", "", with_key, 23, ref); /* signed */
    snprintf(cache, sizeof cache, "%s/u.cache", dir);
    snprintf(cmd, sizeof cmd, "cache export -o '%s/u.fdlb'", dir);
    ran eu = fdlink(dir, "export", cache, "", "", cmd);
    snprintf(cache, sizeof cache, "%s/s.cache", dir);
    snprintf(cmd, sizeof cmd, "cache export -o '%s/s.fdlb'", dir);
    ran es = fdlink(dir, "export", cache, "", with_key, cmd);
    cr_assert_eq(eu.status, 0, "%s", eu.err);
    cr_assert_eq(es.status, 0, "%s", es.err);
    snprintf(cache, sizeof cache, "%s/n.cache", dir);
    snprintf(cmd, sizeof cmd, "cache import '%s/u.fdlb'", dir);
    ran iu = fdlink(dir, "import", cache, "", with_key, cmd);
    cr_assert_not_null(strstr(iu.out, "imported 0 entries into "), "%s", iu.out);
    cr_assert_not_null(strstr(iu.out, "1 refused (1 unsigned or forged)"), "%s", iu.out);
    snprintf(cmd, sizeof cmd, "cache import '%s/s.fdlb'", dir);
    ran io = fdlink(dir, "import", cache, "", with_other, cmd);
    cr_assert_not_null(strstr(io.out, "1 refused (1 unsigned or forged)"), "%s", io.out);
    ran ik = fdlink(dir, "import", cache, "", with_key, cmd);
    cr_assert_not_null(strstr(ik.out, "imported 1 entry into "), "%s", ik.out);
    ran h = link_fresh(dir, "n", "", with_key, 23, ref);
    cr_assert_not_null(strstr(h.err, "hit (disk)"), "%s", h.err);
    ran_free(&u);
    ran_free(&s);
    ran_free(&eu);
    ran_free(&es);
    ran_free(&iu);
    ran_free(&io);
    ran_free(&ik);
    ran_free(&h);
    free(key);
    free(other);
    free(ref);
    remove_dir(dir);
}
