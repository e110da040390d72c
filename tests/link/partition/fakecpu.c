/*
 * The partitioned link's test (run.sh) under oversubscription: preloaded (LD_PRELOAD), every
 * processor count that fdlink and nvJitLink read (sysconf, get_nprocs, CPU_COUNT of an affinity
 * mask) says FAKE_NCPU, so that ptxas's --split-compile=0 starts that many threads on the
 * machine's few cores (or on one, with --jobs 1). Each thread created appends one byte to
 * FAKE_THREADS_LOG (O_APPEND: the links run nvJitLink in a child process, which leaves by _exit,
 * so a count kept in memory would be lost), for run.sh to check that the threads were started.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

static int ncpu(void)
{
    const char *s = getenv("FAKE_NCPU");
    int n = s ? atoi(s) : 0;
    return n > 0 ? n : 32;
}

int get_nprocs(void)
{
    return ncpu();
}

int get_nprocs_conf(void)
{
    return ncpu();
}

long sysconf(int name)
{
    static long (*real)(int);
    if (name == _SC_NPROCESSORS_ONLN || name == _SC_NPROCESSORS_CONF)
        return ncpu();
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "sysconf");
    return real ? real(name) : -1;
}

int __sched_cpucount(size_t size, const cpu_set_t *set)
{
    (void)size;
    (void)set;
    return ncpu();
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg)
{
    static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_create");
    const char *log = getenv("FAKE_THREADS_LOG");
    if (log) {
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
        if (fd >= 0) {
            if (write(fd, "t", 1) != 1) {
                /* a count short by one: run.sh's check is a lower bound */
            }
            close(fd);
        }
    }
    return real ? real(t, a, f, arg) : 11; /* EAGAIN */
}
