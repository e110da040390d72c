/*
 * Shared libraries loaded at run time: dlopen by the first name that loads, a table of entry
 * points filled by dlsym, and where a loaded function lives (dladdr, for `fdlink doctor`);
 * declared in internal.h.
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* @p name for a message: whole when short, else its start, "...", and its end. */
static const char *short_name(const char *name, char *buf, size_t size)
{
    size_t n = strlen(name);
    if (n < 160 || size < 128)
        return name;
    snprintf(buf, size, "%.80s...%s", name, name + n - 40);
    return buf;
}

/* the library being loaded (internal.h): a pointer, atomic so that a handler reads it whole */
static _Atomic(const char *) g_loading;

const char *fdl__lib_loading(void)
{
    return atomic_load(&g_loading);
}

void fdl__lib_loading_set(const char *name)
{
    atomic_store(&g_loading, name);
}

int fdl__dlopen_first(void **handle, const char *const *names, const char *purpose,
                      fdl_error *err)
{
    *handle = NULL;
    char why[256] = "not found";
    for (size_t i = 0; names[i]; i++) {
        fdl__lib_loading_set(names[i]);
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        fdl__lib_loading_set(NULL);
        if (h) {
            *handle = h;
            return FDL_OK;
        }
        const char *e = dlerror();
        if (i == 0 && e) {
            /* dlerror starts with the name again: said once is enough */
            size_t k = strlen(names[0]);
            if (strncmp(e, names[0], k) == 0 && strncmp(e + k, ": ", 2) == 0)
                e += k + 2;
            fdl__strlcpy(why, e, sizeof why); /* the next dlopen frees e */
        }
    }
    char shortened[160];
    const char *name = short_name(names[0], shortened, sizeof shortened);
    fdl__error(err, FDL_ENOLIB, NULL, 0, 0, name, "cannot load %s, needed %s: %s", name, purpose,
               why);
    fdl__error_library(err, name);
    return FDL_ENOLIB;
}

/* ---- the trial load in a child (FDLINK_PROBE_LIBS, fdlink doctor) ------------------------ */

int fdl__lib_trial_wanted(void)
{
    const char *v = getenv("FDLINK_PROBE_LIBS");
    if (v && v[0])
        return v[0] == '1' && v[1] == '\0';
    /* unset: on under an address-space limit (ulimit -v), where a library's initialiser can run
     * out of memory and abort the process (nvJitLink 13.0's "LLVM ERROR: out of memory" while
     * loading, seen on a 32-core host): the trial's child takes the blow, this process says it */
    struct rlimit r;
    return getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
}

/* The trial's bound: FDLINK_PROBE_LIBS_TIMEOUT_MS, else 30 s. */
static long trial_ms(void)
{
    const char *v = getenv("FDLINK_PROBE_LIBS_TIMEOUT_MS");
    char *end = NULL;
    long ms = v ? strtol(v, &end, 10) : 0;
    return v && end && end != v && *end == '\0' && ms > 0 && ms <= 3600000 ? ms : 30000;
}

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int fdl__lib_trial(const char *env, const char *const *names, const char *what, fdl_error *err)
{
    const char *override = env ? getenv(env) : NULL;
    const char *const only[] = {override, NULL};
    const char *const *tried = override && override[0] ? only : names;
    int fds[2];
    if (pipe(fds) != 0)
        return fdl__fail(err, FDL_EIO, "cannot try loading %s in a child: pipe: %s", what,
                         strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return fdl__fail(err, FDL_EIO, "cannot try loading %s in a child: fork: %s", what,
                         strerror(e));
    }
    if (pid == 0) {
        /* the child: quiet, its crashes its own, each name said before it is tried */
        close(fds[0]);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, STDIN_FILENO);
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
        for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
            signal(fatal[i], SIG_DFL);
        for (size_t i = 0; tried[i]; i++) {
            char line[32];
            int n = snprintf(line, sizeof line, "T%zu\n", i);
            if (write(fds[1], line, (size_t)n) != n)
                _exit(120);
            if (dlopen(tried[i], RTLD_NOW | RTLD_LOCAL)) {
                n = snprintf(line, sizeof line, "O%zu\n", i);
                _exit(write(fds[1], line, (size_t)n) == n ? 0 : 120);
            }
        }
        _exit(write(fds[1], "N\n", 2) == 2 ? 0 : 120); /* none loads: the real load says why */
    }
    close(fds[1]);
    char got[4096];
    size_t n = 0;
    long limit = trial_ms(), start = now_ms();
    int timed_out = 0, read_error = 0;
    for (;;) {
        long left = limit - (now_ms() - start);
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int r = poll(&p, 1, (int)(left > 1000000 ? 1000000 : left));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            read_error = errno;
            break;
        }
        if (r == 0)
            continue;
        ssize_t k = read(fds[0], got + n, sizeof got - 1 - n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || (n += (size_t)k) == sizeof got - 1)
            break;
    }
    close(fds[0]);
    if (timed_out || read_error)
        kill(pid, SIGKILL);
    int status = 0;
    pid_t w;
    do
        w = waitpid(pid, &status, 0);
    while (w < 0 && errno == EINTR);
    got[n] = '\0';
    /* the last name tried, and whether it (or none) was settled */
    long last = -1;
    int settled = 0;
    for (char *l = got; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        if (l[0] == 'T')
            last = strtol(l + 1, NULL, 10);
        else if (l[0] == 'O' || l[0] == 'N')
            settled = 1;
    }
    if (settled && !timed_out && !read_error)
        return FDL_OK;
    size_t count = 0;
    while (tried[count])
        count++;
    char shortened[160];
    const char *name = last >= 0 && (size_t)last < count
                           ? short_name(tried[last], shortened, sizeof shortened)
                           : what;
    if (read_error)
        return fdl__fail(err, FDL_EIO, "cannot try loading %s in a child: poll: %s", what,
                         strerror(read_error));
    if (timed_out)
        fdl__error(err, FDL_ENOLIB, NULL, 0, 0, NULL, "cannot load %s: %s did not finish "
                   "loading within %ld ms (tried in a child)", what, name, limit);
    else if (w == pid && WIFSIGNALED(status))
        fdl__error(err, FDL_ENOLIB, NULL, 0, 0, NULL, "cannot load %s: %s crashed while "
                   "loading: signal %d (%s) (tried in a child)", what, name, WTERMSIG(status),
                   strsignal(WTERMSIG(status)));
    else /* (its exit status is not said: the program's own atexit handlers may have changed it) */
        fdl__error(err, FDL_ENOLIB, NULL, 0, 0, NULL, "cannot load %s: %s ended the process "
                   "while loading (tried in a child)", what, name);
    fdl__error_library(err, name); /* the file that failed (@what when none was tried) */
    return FDL_ENOLIB;
}

int fdl__dlopen_table(void **handle, const char *env, const char *const *names, const char *what,
                      const char *purpose, const fdl__symbol *symbols, size_t nsymbols,
                      void *table, fdl_error *err)
{
    *handle = NULL;
    const char *override = env ? getenv(env) : NULL;
    int rc;
    /* behind FDLINK_PROBE_LIBS=1: a library that exits, crashes or hangs while loading does
     * so in a child, and is a one-line diagnosis here */
    if (fdl__lib_trial_wanted() && (rc = fdl__lib_trial(env, names, what, err)) != FDL_OK)
        return rc;
    if (override && override[0]) {
        const char *const only[] = {override, NULL};
        char why[160];
        snprintf(why, sizeof why, "%.100s (path from %s)", purpose, env);
        rc = fdl__dlopen_first(handle, only, why, err);
    } else {
        rc = fdl__dlopen_first(handle, names, purpose, err);
    }
    if (rc != FDL_OK)
        return rc;
    for (size_t i = 0; i < nsymbols; i++) {
        void *sym = dlsym(*handle, symbols[i].name);
        if (!sym && !symbols[i].optional) {
            fdl__error(err, FDL_ENOLIB, NULL, 0, 0, symbols[i].name,
                       "%s lacks %s (needed %s): the library is too old or not %s", what,
                       symbols[i].name, purpose, what);
            fdl__error_library(err, what);
            return FDL_ENOLIB;
        }
        /* POSIX guarantees that a data pointer from dlsym can hold a function pointer. */
        memcpy((char *)table + symbols[i].offset, &sym, sizeof sym);
    }
    return FDL_OK;
}

int fdl__library_of(void (*fn)(void), char *out, size_t size)
{
    Dl_info info;
    void *p = NULL;
    if (size)
        out[0] = '\0';
    if (!fn || !size)
        return 0;
    /* POSIX: a function pointer fits in a void * (as dlsym's result shows). */
    memcpy(&p, &fn, sizeof p);
    if (!dladdr(p, &info) || !info.dli_fname || !info.dli_fname[0])
        return 0;
    int n = snprintf(out, size, "%s", info.dli_fname);
    return n > 0 && (size_t)n < size;
}
