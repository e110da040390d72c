/*
 * The build's job slots: a link's split-compilation threads taken from the GNU make or ninja
 * jobserver it runs under (MAKEFLAGS' --jobserver-auth=fifo:PATH, or R,W file descriptors; the
 * older --jobserver-fds=R,W), one implicit and more as tokens are free, each token given back
 * when the link is over; without a jobserver, FDLINK_JOBS bounds them. So N links of a `make -j`
 * ask for about the build's slots, not N x every processor (issue 32).
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

int fdl__jobs_take(fdl_link *link, int want)
{
    fdl__jobs_give_back(link);
    link->jobs.threads = link->jobs.taken = link->jobs.had_server = 0;
    if (want <= 1)
        return 0;
    int cap = link->opts.jobs > 0 ? link->opts.jobs : jobs_env();
    if (cap && cap < want)
        want = cap;
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
