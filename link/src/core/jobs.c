/*
 * The build's job slots: a link's split-compilation threads taken from the GNU make or ninja
 * jobserver it runs under (MAKEFLAGS' --jobserver-auth=fifo:PATH, or R,W file descriptors; the
 * older --jobserver-fds=R,W), one implicit and more as tokens are free, each token given back
 * when the link is over; without a jobserver, FDLINK_JOBS bounds them. So N links of a `make -j`
 * ask for about the build's slots, not N x every processor (issue 32). Either way, a memory
 * budget bounds them too: the memory free to this process (MemAvailable, and the cgroup v2
 * limit where one is set; FDLINK_MEMORY_BUDGET in its place) over an estimate per thread.
 *
 * Tokens are taken without waiting (a free one now, or none): a link never stalls for slots, it
 * runs on fewer threads. The pipe of the descriptor form is read through a description of its
 * own (/proc/self/fd/R opened O_NONBLOCK), so that make's own stays as make set it.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdlink/cache.h"
#include "internal.h"
#include "linkobj.h"

/* The jobserver of @p makeflags: *rfd and *wfd opened for this process (to close), 1; 0 none. */
static int jobserver_open(const char *makeflags, int *rfd, int *wfd)
{
    *rfd = *wfd = -1;
    if (!makeflags)
        return 0;
    /* the last --jobserver-auth= (make puts the one in force last), else --jobserver-fds= */
    const char *auth = NULL, *p = makeflags;
    while ((p = strstr(p, "--jobserver-auth=")))
        auth = p += strlen("--jobserver-auth=");
    if (!auth && (p = strstr(makeflags, "--jobserver-fds=")))
        auth = p + strlen("--jobserver-fds=");
    if (!auth)
        return 0;
    size_t len = strcspn(auth, " ");
    char word[4096];
    if (len == 0 || len >= sizeof word)
        return 0;
    memcpy(word, auth, len);
    word[len] = '\0';
    if (strncmp(word, "fifo:", 5) == 0) {
        int fd = open(word + 5, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            return 0;
        *rfd = *wfd = fd;
        return 1;
    }
    char *end = NULL;
    errno = 0;
    long r = strtol(word, &end, 10);
    if (errno || !end || *end != ',' || r < 0 || r > 65535)
        return 0;
    long w = strtol(end + 1, &end, 10);
    if (errno || !end || *end != '\0' || w < 0 || w > 65535)
        return 0;
    /* make passes the descriptors only to commands it knows run make (+ or $(MAKE)): others
     * find them closed, or something else there */
    if (fcntl((int)r, F_GETFD) < 0 || fcntl((int)w, F_GETFD) < 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%ld", r);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int wd = fcntl((int)w, F_DUPFD_CLOEXEC, 0);
    if (wd < 0) {
        close(fd);
        return 0;
    }
    *rfd = fd;
    *wfd = wd;
    return 1;
}

/* FDLINK_JOBS as a count of threads, or 0 when unset or not a count. */
static int jobs_env(void)
{
    const char *env = getenv("FDLINK_JOBS");
    if (!env || !*env)
        return 0;
    char *end = NULL;
    errno = 0;
    long v = strtol(env, &end, 10);
    return errno == 0 && end && *end == '\0' && v >= 1 && v <= 4096 ? (int)v : 0;
}

/* A whole count of bytes from a file's first line ("max" and what is not a count: 0). */
static uint64_t read_bytes(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    char line[64] = "";
    uint64_t v = 0;
    if (fgets(line, sizeof line, f)) {
        char *end = NULL;
        errno = 0;
        unsigned long long n = strtoull(line, &end, 10);
        if (errno == 0 && end != line && (*end == '\n' || *end == '\0'))
            v = (uint64_t)n;
    }
    fclose(f);
    return v;
}

/* What the cgroup v2 of this process may still take (memory.max less memory.current), 0 when
 * no limit is set or it cannot be read. */
static uint64_t cgroup_room(void)
{
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return 0;
    char line[4096], path[4200] = "";
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "0::", 3) == 0) { /* the unified hierarchy's line */
            line[strcspn(line, "\n")] = '\0';
            snprintf(path, sizeof path, "/sys/fs/cgroup%s", line + 3);
            break;
        }
    }
    fclose(f);
    if (!path[0])
        return 0;
    char file[4300];
    snprintf(file, sizeof file, "%s/memory.max", path);
    uint64_t max = read_bytes(file);
    if (!max)
        return 0;
    snprintf(file, sizeof file, "%s/memory.current", path);
    uint64_t cur = read_bytes(file);
    return max > cur ? max - cur : 1;
}

/* /proc/meminfo's MemAvailable in bytes, 0 when it cannot be read. */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return 0;
    char line[256];
    uint64_t v = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            v = (uint64_t)kb * 1024u;
            break;
        }
    }
    fclose(f);
    return v;
}

int fdl__jobs_memory_threads(uint64_t code_bytes, uint64_t *budget)
{
    uint64_t b = 0;
    const char *env = getenv("FDLINK_MEMORY_BUDGET");
    if (env && *env) {
        if (!fdl_cache_parse_size(env, &b))
            b = 0; /* not a size: as FDLINK_JOBS, set aside (the machine's figures decide) */
    }
    if (!b) {
        uint64_t avail = mem_available(), room = cgroup_room();
        b = avail && room ? (avail < room ? avail : room) : avail ? avail : room;
    }
    if (budget)
        *budget = b;
    if (!b)
        return 0;
    uint64_t per = FDL__THREAD_MEMORY + code_bytes;
    uint64_t n = b / per;
    return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}

int fdl__jobs_take(fdl_link *link, int want)
{
    fdl__jobs_give_back(link);
    link->jobs.threads = link->jobs.taken = link->jobs.had_server = 0;
    link->jobs.memory_bound = 0;
    if (want <= 1)
        return 0;
    int cap = link->opts.jobs > 0 ? link->opts.jobs : jobs_env();
    if (cap && cap < want)
        want = cap;
    /* the memory each thread may take (ptxas and the optimiser hold a part of the program
     * each): no more threads than the budget holds, jobserver or not */
    uint64_t code = 0;
    for (size_t i = 0; i < link->ninputs; i++)
        if (!link->inputs[i].builtin)
            code += link->inputs[i].size;
    int mem = fdl__jobs_memory_threads(code, NULL);
    if (mem && mem < want) {
        want = cap = mem;
        link->jobs.memory_bound = 1;
        if (want == 1) {
            link->jobs.threads = 1; /* one thread: no split, no token */
            return 1;
        }
    }
    int rfd, wfd;
    if (!jobserver_open(getenv("MAKEFLAGS"), &rfd, &wfd)) {
        link->jobs.threads = cap ? want : 0; /* no jobserver: FDLINK_JOBS, else every processor */
        return link->jobs.threads;
    }
    link->jobs.rfd = rfd;
    link->jobs.wfd = wfd;
    link->jobs.ntokens = 0;
    /* one slot is this process's own; the others as tokens are free now */
    while (link->jobs.ntokens + 1 < (size_t)want && link->jobs.ntokens < sizeof link->jobs.tokens) {
        char c;
        ssize_t got = read(rfd, &c, 1);
        if (got != 1)
            break; /* EAGAIN: none free; 0: make has gone */
        link->jobs.tokens[link->jobs.ntokens++] = c;
    }
    link->jobs.server = 1;
    link->jobs.had_server = 1;
    link->jobs.taken = (int)link->jobs.ntokens;
    /* at least two: a split of one thread is no split, and nvJitLink lays its code out
     * otherwise (benchmark 9's program: 1,192 bytes differ), where two or more threads give the
     * code of every processor's split (only ptxas's note of its command line differs) */
    link->jobs.threads = link->jobs.ntokens + 1 < 2 ? 2 : (int)link->jobs.ntokens + 1;
    return link->jobs.threads;
}

void fdl__jobs_give_back(fdl_link *link)
{
    if (!link->jobs.server)
        return;
    for (size_t i = 0; i < link->jobs.ntokens; i++) {
        ssize_t put;
        do
            put = write(link->jobs.wfd, &link->jobs.tokens[i], 1);
        while (put < 0 && errno == EINTR);
    }
    link->jobs.ntokens = 0;
    if (link->jobs.wfd != link->jobs.rfd)
        close(link->jobs.wfd);
    close(link->jobs.rfd);
    link->jobs.rfd = link->jobs.wfd = -1;
    link->jobs.server = 0;
}

int fdl__slots_take(fdl__slots *s, int want, int jobs)
{
    memset(s, 0, sizeof *s);
    s->rfd = s->wfd = -1;
    int cap = jobs > 0 ? jobs : jobs_env();
    if (cap && cap < want)
        want = cap;
    if (want <= 1)
        return 1;
    int rfd, wfd;
    if (!jobserver_open(getenv("MAKEFLAGS"), &rfd, &wfd)) {
        if (!cap) { /* neither a bound nor a jobserver: the processors */
            long nproc = sysconf(_SC_NPROCESSORS_ONLN);
            if (nproc >= 1 && nproc < want)
                want = (int)nproc;
        }
        return want;
    }
    s->rfd = rfd;
    s->wfd = wfd;
    s->server = 1;
    /* this process's own slot, and the tokens free now (never waiting for one) */
    while (s->ntokens + 1 < (size_t)want && s->ntokens < sizeof s->tokens) {
        char c;
        if (read(rfd, &c, 1) != 1)
            break;
        s->tokens[s->ntokens++] = c;
    }
    return (int)s->ntokens + 1;
}

void fdl__slots_give_back(fdl__slots *s)
{
    if (!s->server)
        return;
    for (size_t i = 0; i < s->ntokens; i++) {
        ssize_t put;
        do
            put = write(s->wfd, &s->tokens[i], 1);
        while (put < 0 && errno == EINTR);
    }
    s->ntokens = 0;
    if (s->wfd != s->rfd)
        close(s->wfd);
    close(s->rfd);
    s->rfd = s->wfd = -1;
    s->server = 0;
}
