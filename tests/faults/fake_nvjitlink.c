/*
 * A stand-in for libnvJitLink that misbehaves on purpose (issue 35), for faults tests:
 *   FDL_FAKE_INIT=exit|abort|segv|sleep  its initialiser exits 0, aborts, crashes or never ends
 *                                        (a library that takes its loader with it);
 *   FDL_FAKE_HANG_FD=N                   nvJitLinkComplete writes its process id and a newline to
 *                                        file descriptor N, then waits for ever (a linker that
 *                                        runs long: the test signals fdlink meanwhile and watches
 *                                        N's pipe for the end of every process holding it).
 *   FDL_FAKE_STDERR=create|complete      nvJitLinkCreate (the option probe, in fdlink's process) or
 *                                        nvJitLinkComplete writes to the process's standard error,
 *                                        through stdio and through fd 2, then fails (issue 38: what
 *                                        a library writes comes after fdlink's message, as its log).
 *   FDL_FAKE_ABORT=create                nvJitLinkCreate writes LLVM's "LLVM ERROR: out of memory" to
 *                                        fd 2 and aborts, as nvJitLink 13.0 does when it runs out of
 *                                        address space in its option probe (seen on a 32-core host
 *                                        under `ulimit -v`).
 * Otherwise it says version 13.0, accepts a handle, options and inputs, and fails the link.
 */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void misbehave(void)
{
    const char *how = getenv("FDL_FAKE_INIT");
    if (!how)
        return;
    if (strcmp(how, "exit") == 0)
        exit(0);
    if (strcmp(how, "abort") == 0)
        abort();
    if (strcmp(how, "segv") == 0)
        raise(SIGSEGV);
    if (strcmp(how, "sleep") == 0)
        for (;;)
            pause();
}

static int handle_storage;

/* FDL_FAKE_STDERR=@p when: nvJitLink's own words on stderr, as it writes them when it runs out
 * of memory; 1 when it did (the call then fails). */
static int say_on_stderr(const char *when)
{
    const char *how = getenv("FDL_FAKE_STDERR");
    if (!how || strcmp(how, when) != 0)
        return 0;
    fprintf(stderr, "fatal   : Memory allocation failure\n");
    fflush(stderr);
    static const char raw[] = "nvJitLink (fake): written to fd 2\n";
    return write(2, raw, sizeof raw - 1) >= 0 || 1;
}

int nvJitLinkCreate(void **h, unsigned n, const char **opts);
int nvJitLinkCreate(void **h, unsigned n, const char **opts)
{
    (void)n;
    (void)opts;
    *h = NULL;
    const char *abort_at = getenv("FDL_FAKE_ABORT");
    if (abort_at && strcmp(abort_at, "create") == 0) {
        static const char llvm[] = "LLVM ERROR: out of memory\n";
        if (write(2, llvm, sizeof llvm - 1) < 0)
            _exit(1);
        abort();
    }
    if (say_on_stderr("create"))
        return 6; /* NVJITLINK_ERROR_INTERNAL */
    *h = &handle_storage;
    return 0;
}

int nvJitLinkDestroy(void **h);
int nvJitLinkDestroy(void **h)
{
    *h = NULL;
    return 0;
}

int nvJitLinkAddData(void *h, int type, const void *data, size_t size, const char *name);
int nvJitLinkAddData(void *h, int type, const void *data, size_t size, const char *name)
{
    (void)h, (void)type, (void)data, (void)size, (void)name;
    return 0;
}

int nvJitLinkComplete(void *h);
int nvJitLinkComplete(void *h)
{
    (void)h;
    if (say_on_stderr("complete"))
        return 6;
    const char *fd = getenv("FDL_FAKE_HANG_FD");
    if (fd) {
        char line[32];
        int n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
        if (write(atoi(fd), line, (size_t)n) != n)
            return 6;
        for (;;)
            pause();
    }
    return 6; /* NVJITLINK_ERROR_INTERNAL */
}

#define SIZE0(name)                                                                                \
    int name(void *h, size_t *size);                                                               \
    int name(void *h, size_t *size)                                                                \
    {                                                                                              \
        (void)h;                                                                                   \
        *size = 0;                                                                                 \
        return 0;                                                                                  \
    }
#define NOTHING(name)                                                                              \
    int name(void *h, void *out);                                                                  \
    int name(void *h, void *out)                                                                   \
    {                                                                                              \
        (void)h;                                                                                   \
        (void)out;                                                                                 \
        return 6;                                                                                  \
    }
SIZE0(nvJitLinkGetErrorLogSize)
SIZE0(nvJitLinkGetInfoLogSize)
SIZE0(nvJitLinkGetLinkedCubinSize)
SIZE0(nvJitLinkGetLinkedPtxSize)
NOTHING(nvJitLinkGetErrorLog)
NOTHING(nvJitLinkGetInfoLog)
NOTHING(nvJitLinkGetLinkedCubin)
NOTHING(nvJitLinkGetLinkedPtx)

int nvJitLinkVersion(unsigned *major, unsigned *minor);
int nvJitLinkVersion(unsigned *major, unsigned *minor)
{
    *major = 13;
    *minor = 0;
    return 0;
}
