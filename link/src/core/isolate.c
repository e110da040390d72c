/*
 * The isolated link (fdl_link_options.isolate, docs/isolation.md): one nvJitLink run in a child
 * process, its cubin or PTX, its result and both logs sent back through a pipe, whatever the
 * linker prints itself captured through a second pipe and kept in the error log, and a child
 * that dies by a signal said as one line naming the linker, the signal and the inputs.
 *
 * Why fork without exec, not posix_spawn of a helper: the child needs the link's inputs and
 * options, which the parent holds in memory (fork shares them for free, a helper would have them
 * serialised), and no helper executable has to be found beside the library wherever a program
 * installs it. What makes fork safe here:
 *   - the child calls only nvJitLink (already loaded by the parent: no dlopen in the child), the
 *     C library's malloc and write, then _exit: never the CUDA driver (a driver initialised before
 *     fork() is unusable in the child, and the parent's context stays the parent's), never stdio
 *     (the parent's unflushed buffers are not written twice), never atexit handlers;
 *   - glibc's fork leaves malloc usable in the child of a multithreaded process;
 *   - the one hazard left: another thread of the parent inside nvJitLink at the moment of fork
 *     may hold a lock of nvJitLink's that the child then waits on for ever. A program that links
 *     on several threads at once should isolate all of them or none (docs/isolation.md).
 * Criterion forks each test too: that is fork of a single-threaded process, and the test's own
 * child is reaped here by its pid only.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "linkobj.h"

int fdl__isolate_wanted(const fdl_link_options *o)
{
    if (o->isolate >= 0)
        return o->isolate;
    /* -split-compile-extended has crashed nvJitLink 13.0 (SIGSEGV) on large programs: a link
     * that asks for it runs isolated unless the caller said otherwise */
    if (o->split_compile_extended != -1 && o->split_compile_extended != 1)
        return 1;
    const char *env = getenv("FDLINK_LINK_ISOLATE");
    return env && env[0] == '1' && env[1] == '\0';
}

/* What the child sends first: the result, then out, info and error bytes of these sizes. */
typedef struct message {
    int32_t rc;      /* fdl__nvjl_link's status in the child */
    int32_t r;       /* nvJitLink's result */
    int64_t refused; /* index of the input refused; -1 none; -2 the extra LTO-IR */
    uint64_t out_size, info_size, error_size;
    uint32_t has_out, has_info, has_error;
    fdl_error err;   /* the child's error (its log pointer is meaningless here) */
} message;

static int write_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        b += w;
        n -= (size_t)w;
    }
    return 1;
}

/*
 * In the child, first: die with the parent. PR_SET_PDEATHSIG sends SIGKILL when the thread that
 * forked ends (it waits in fdl__isolate_nvjl_link until the child is reaped, so: when the parent
 * process dies, whatever kills it); the parent may have died before prctl ran, which getppid then
 * tells. The signals that end a program from outside are back to their default actions and
 * unblocked: a program's own handlers are for the program, not for this copy of it.
 */
static void die_with_parent(pid_t parent)
{
#ifdef __linux__
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        _exit(123);
#endif
    if (getppid() != parent)
        _exit(122);
    static const int ending[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof ending / sizeof *ending; i++) {
        sigaction(ending[i], &dfl, NULL);
        sigaddset(&set, ending[i]);
    }
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* In the child: link, send, _exit. Never returns. */
static void child(int out_fd, int log_fd, fdl__nvjl_link_fn here, const fdl_link *link, int lto,
                  int ptx,
                  fdl__link_input *const *ins, size_t nins, const unsigned char *extra,
                  size_t extra_size)
{
    /* a crash kills the child by its signal: no handler of the program's (or a sanitizer's,
     * which would turn it into an exit status) runs in it */
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
        sigaction(fatal[i], &dfl, NULL);
    /* what nvJitLink prints itself ("error   : ...", "ERROR 9: finish") goes to the log pipe */
    if (dup2(log_fd, STDOUT_FILENO) < 0 || dup2(log_fd, STDERR_FILENO) < 0)
        _exit(125);
    if (log_fd != STDOUT_FILENO && log_fd != STDERR_FILENO)
        close(log_fd);
    fdl__nvjl_run run;
    fdl_error err = FDL_ERROR_INIT;
    message m;
    memset(&m, 0, sizeof m);
    m.rc = here(link, lto, ptx, ins, nins, extra, extra_size, &run, &err);
    m.r = (int32_t)run.r;
    m.refused = -1;
    for (size_t i = 0; run.refused && i < nins; i++)
        if (run.refused == ins[i]->name)
            m.refused = (int64_t)i;
    if (run.refused && m.refused == -1)
        m.refused = -2;
    m.has_out = run.out != NULL;
    m.has_info = run.info != NULL;
    m.has_error = run.error != NULL;
    m.out_size = run.out_size;
    m.info_size = run.info ? strlen(run.info) : 0;
    m.error_size = run.error ? strlen(run.error) : 0;
    m.err = err;
    m.err.log = NULL;
    int ok = write_all(out_fd, &m, sizeof m) &&
             (!run.out || write_all(out_fd, run.out, run.out_size)) &&
             (!run.info || write_all(out_fd, run.info, m.info_size)) &&
             (!run.error || write_all(out_fd, run.error, m.error_size));
    _exit(ok ? 0 : 124);
}

/* A growing buffer of what one pipe gave. */
typedef struct sink {
    unsigned char *p;
    size_t n, cap;
    int fd, oom;
    int error; /* errno of a failed read (the pipe is then closed) */
} sink;

static void sink_read(sink *s)
{
    if (s->cap - s->n < 65536) {
        size_t cap = s->cap ? s->cap * 2 : 65536 * 2;
        unsigned char *grown = cap > s->cap ? realloc(s->p, cap) : NULL;
        if (!grown) {
            s->oom = 1;
            /* keep draining so that the child is never blocked: read into a scratch buffer */
            unsigned char scratch[4096];
            ssize_t r = read(s->fd, scratch, sizeof scratch);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
                if (r < 0)
                    s->error = errno;
                close(s->fd);
                s->fd = -1;
            }
            return;
        }
        s->p = grown;
        s->cap = cap;
    }
    ssize_t r = read(s->fd, s->p + s->n, s->cap - s->n);
    if (r > 0) {
        s->n += (size_t)r;
    } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (r < 0)
            s->error = errno;
        close(s->fd);
        s->fd = -1;
    }
}

/* A NUL-terminated copy of @p n bytes at @p p, or NULL. */
static char *copy_text(const unsigned char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

/* The error log of a run whose child left @p said: what it printed, then @p tail. */
static char *join_logs(const char *log, const unsigned char *said, size_t nsaid, const char *tail)
{
    fdl__buf b = {0};
    if (log && *log) {
        fdl__buf_puts(&b, log);
        if (log[strlen(log) - 1] != '\n')
            fdl__buf_puts(&b, "\n");
    }
    if (nsaid) {
        fdl__buf_puts(&b, "nvJitLink printed:\n");
        fdl__buf_append(&b, (const char *)said, nsaid);
        if (said[nsaid - 1] != '\n')
            fdl__buf_puts(&b, "\n");
    }
    if (tail)
        fdl__buf_puts(&b, tail);
    if (b.oom) {
        free(b.data);
        return NULL;
    }
    return b.data ? b.data : calloc(1, 1);
}

int fdl__isolate_nvjl_link(fdl__nvjl_link_fn here, const fdl_link *link, int lto, int ptx,
                         fdl__link_input *const *ins, size_t nins, const unsigned char *extra,
                         size_t extra_size, fdl__nvjl_run *run, fdl_error *err)
{
    int data[2] = {-1, -1}, logs[2] = {-1, -1}, rc = FDL_OK;
    sink out = {NULL, 0, 0, -1, 0, 0}, said = {NULL, 0, 0, -1, 0, 0};
    int poll_error = 0;
    memset(run, 0, sizeof *run);
    if (pipe(data) != 0 || pipe(logs) != 0) {
        rc = fdl__fail(err, FDL_EIO, "isolated link: cannot make a pipe: %s", strerror(errno));
        goto cleanup;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        rc = fdl__fail(err, FDL_EIO, "isolated link: cannot fork: %s", strerror(errno));
        goto cleanup;
    }
    if (pid == 0) {
        die_with_parent(parent);
        close(data[0]);
        close(logs[0]);
        child(data[1], logs[1], here, link, lto, ptx, ins, nins, extra, extra_size);
    }
    close(data[1]);
    close(logs[1]);
    data[1] = logs[1] = -1;
    out.fd = data[0];
    said.fd = logs[0];
    data[0] = logs[0] = -1;
    /* both pipes at once, so that the child never blocks on a full one */
    while (out.fd >= 0 || said.fd >= 0) {
        struct pollfd fds[2];
        nfds_t nfds = 0;
        if (out.fd >= 0)
            fds[nfds++] = (struct pollfd){out.fd, POLLIN, 0};
        if (said.fd >= 0)
            fds[nfds++] = (struct pollfd){said.fd, POLLIN, 0};
        if (poll(fds, nfds, -1) < 0) {
            if (errno == EINTR)
                continue;
            poll_error = errno;
            break;
        }
        for (nfds_t i = 0; i < nfds; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            sink_read(fds[i].fd == out.fd ? &out : &said);
        }
    }
    if (poll_error || out.error || said.error) {
        /* the child may be blocked on a pipe that is no longer read: it is ended, not waited on
         * for ever, and its death is no verdict on the linker */
        kill(pid, SIGKILL);
    }
    int status = 0;
    pid_t got;
    do
        got = waitpid(pid, &status, 0);
    while (got < 0 && errno == EINTR);
    if (got != pid && errno == ECHILD) {
        /* a program that ignores SIGCHLD has its children reaped for it: how this one ended is
         * not known, what it sent is (a complete answer, or an error below) */
        status = 0;
    } else if (got != pid) {
        rc = fdl__fail(err, FDL_EIO, "isolated link: cannot wait for the child: %s",
                       strerror(errno));
        goto cleanup;
    }
    if (poll_error || out.error || said.error) {
        rc = fdl__fail(err, FDL_EIO, "isolated link: cannot read the child's answer: %s",
                       strerror(poll_error ? poll_error : out.error ? out.error : said.error));
        goto cleanup;
    }
    if (out.oom || said.oom) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory reading the isolated link's output");
        goto cleanup;
    }
    if (got == pid && WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        char tail[128];
        snprintf(tail, sizeof tail, "nvJitLink died of signal %d (%s) in the isolated link\n",
                 sig, strsignal(sig));
        run->r = NVJITLINK_ERROR_INTERNAL;
        run->signal = sig;
        run->error = join_logs(NULL, said.p, said.n, tail);
        run->info = copy_text((const unsigned char *)"", 0);
        if (!run->error || !run->info) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
            goto cleanup;
        }
        rc = FDL_ELINK;
        goto cleanup;
    }
    message m;
    if (out.n < sizeof m) {
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        const char *why = code == 122   ? " (its parent was gone)"
                          : code == 123 ? " (prctl failed)"
                          : code == 124 ? " (it could not write its answer)"
                          : code == 125 ? " (it could not redirect its output)"
                                        : "";
        rc = fdl__fail(err, FDL_ELINK, "isolated link: the child exited with status %d%s "
                       "before saying how the link went", code, why);
        goto cleanup;
    }
    memcpy(&m, out.p, sizeof m);
    uint64_t need = sizeof m;
    if (m.out_size > out.n || m.info_size > out.n || m.error_size > out.n ||
        (need += m.out_size + m.info_size + m.error_size) != out.n) {
        rc = fdl__fail(err, FDL_ELINK, "isolated link: the child's answer is %zu bytes, not the "
                       "%llu it announced", out.n, (unsigned long long)need);
        goto cleanup;
    }
    const unsigned char *at = out.p + sizeof m;
    run->r = (nvJitLinkResult)m.r;
    run->refused = m.refused >= 0 && (uint64_t)m.refused < nins ? ins[m.refused]->name
                   : m.refused == -2                            ? "fdlink-keep"
                                                                : NULL;
    if (m.has_out) {
        if (!(run->out = malloc(m.out_size + 1))) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory copying %llu bytes",
                           (unsigned long long)m.out_size);
            goto cleanup;
        }
        memcpy(run->out, at, m.out_size);
        run->out[m.out_size] = '\0';
        run->out_size = m.out_size;
    }
    at += m.out_size;
    if (m.has_info && !(run->info = copy_text(at, m.info_size))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
        goto cleanup;
    }
    at += m.info_size;
    if (m.has_error || said.n) {
        char *log = m.has_error ? copy_text(at, m.error_size) : NULL;
        run->error = join_logs(log, said.p, said.n, NULL);
        free(log);
        if (!run->error) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
            goto cleanup;
        }
    }
    rc = m.rc;
    if (rc == FDL_OK && (!m.has_out || m.out_size == 0)) {
        rc = fdl__fail(err, FDL_ELINK, "isolated link: the child reported success without a "
                       "result");
        goto cleanup;
    }
    if (rc != FDL_OK && rc != FDL_ELINK && err) {
        *err = m.err;
        err->log = NULL;
    }
cleanup:
    for (int i = 0; i < 2; i++) {
        if (data[i] >= 0)
            close(data[i]);
        if (logs[i] >= 0)
            close(logs[i]);
    }
    if (out.fd >= 0)
        close(out.fd);
    if (said.fd >= 0)
        close(said.fd);
    free(out.p);
    free(said.p);
    return rc;
}

int fdl__isolate_died_error(int sig, const char *linker, fdl__link_input *const *ins, size_t nins,
                            fdl_error *err)
{
    fdl__buf names = {0};
    for (size_t i = 0; i < nins; i++) {
        if (ins[i]->builtin)
            continue;
        fdl__buf_printf(&names, "%s%s", names.len ? ", " : "", ins[i]->name);
    }
    int rc = fdl__fail(err, FDL_ELINK, "%s died of signal %d (%s) linking %s", linker, sig,
                       strsignal(sig), names.data && !names.oom ? names.data : "its inputs");
    if (err) {
        /* one line: the log (what nvJitLink printed before it died) stays with the link */
        err->backend_code = NVJITLINK_ERROR_INTERNAL;
        err->log = NULL;
    }
    free(names.data);
    return rc;
}
