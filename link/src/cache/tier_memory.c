/*
 * The memory tier of the link cache (this process), and the process memos kept in it.
 *
 * Global state: a list under one mutex (statically initialised, so nothing runs at load time;
 * fork handlers, registered once on first use, keep a child's copy unlocked). It is the
 * in-process counterpart of the directory and holds nothing a caller can observe except speed;
 * fdl_cache_clear empties it. It also holds the process memos (cacheint.h), small facts that
 * spare a repeated link its option probe and its PTX scans. (STYLE.md allows global state only
 * for the dlopen tables; the issue asks that a process repeating a link not touch nvJitLink,
 * which needs memory that outlives a link.)
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cacheint.h"
#include "entry.h"
#include "tier_memory.h"

#define MEMORY_MAX ((uint64_t)64 << 20)

typedef struct mem_entry {
    struct mem_entry *next;
    uint32_t kind;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    uint64_t used;
    uint32_t nsecs;
    size_t size;
    unsigned char *payload;
} mem_entry;

static struct {
    pthread_mutex_t lock;
    pthread_once_t fork_once;
    mem_entry *head;
    uint64_t bytes;
    uint64_t tick;
} g_mem = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_ONCE_INIT, NULL, 0, 0};

/* A fork while another thread holds the lock must not leave the child's copy locked. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&g_mem.lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&g_mem.lock);
}

static void register_fork(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
}

static void mem_lock(void)
{
    pthread_once(&g_mem.fork_once, register_fork);
    pthread_mutex_lock(&g_mem.lock);
}

/* Drop @p key's entry of @p kind, if any; g_mem.lock held. */
static void mem_remove_locked(uint32_t kind, const unsigned char *key)
{
    for (mem_entry **pp = &g_mem.head; *pp; pp = &(*pp)->next)
        if ((*pp)->kind == kind && memcmp((*pp)->key, key, FDL__CACHE_KEY_SIZE) == 0) {
            mem_entry *old = *pp;
            *pp = old->next;
            g_mem.bytes -= old->size;
            free(old->payload);
            free(old);
            return;
        }
}

void fdl__cache_mem_forget(uint32_t kind, const unsigned char *key)
{
    mem_lock();
    mem_remove_locked(kind, key);
    pthread_mutex_unlock(&g_mem.lock);
}

int fdl__cache_mem_get(uint32_t kind, const unsigned char *key, fdl__cache_sections *out)
{
    int found = 0;
    mem_lock();
    for (mem_entry *e = g_mem.head; e; e = e->next) {
        if (e->kind != kind || memcmp(e->key, key, FDL__CACHE_KEY_SIZE) != 0)
            continue;
        unsigned char *copy = malloc(e->size ? e->size : 1);
        if (copy) {
            memcpy(copy, e->payload, e->size);
            found = fdl__entry_split(out, copy, copy, e->size, e->nsecs);
            e->used = ++g_mem.tick;
        }
        break;
    }
    pthread_mutex_unlock(&g_mem.lock);
    return found;
}

void fdl__cache_mem_put(uint32_t kind, const unsigned char *key, const unsigned char *payload,
                        size_t size, uint32_t nsecs)
{
    if (size > MEMORY_MAX / 4)
        return;
    mem_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->payload = malloc(size ? size : 1))) {
        free(e);
        return;
    }
    if (size)
        memcpy(e->payload, payload, size);
    e->kind = kind;
    memcpy(e->key, key, FDL__CACHE_KEY_SIZE);
    e->size = size;
    e->nsecs = nsecs;
    mem_lock();
    mem_remove_locked(kind, key); /* an identical result: keep one */
    e->used = ++g_mem.tick;
    e->next = g_mem.head;
    g_mem.head = e;
    g_mem.bytes += size;
    while (g_mem.bytes > MEMORY_MAX) {
        mem_entry **oldest = NULL;
        for (mem_entry **pp = &g_mem.head; *pp; pp = &(*pp)->next)
            if (!oldest || (*pp)->used < (*oldest)->used)
                oldest = pp;
        mem_entry *o = *oldest;
        *oldest = o->next;
        g_mem.bytes -= o->size;
        free(o->payload);
        free(o);
    }
    pthread_mutex_unlock(&g_mem.lock);
}

int fdl__cache_pmemo_known(const unsigned char key[FDL__CACHE_KEY_SIZE])
{
    int found = 0;
    mem_lock();
    for (mem_entry *e = g_mem.head; e; e = e->next)
        if (e->kind == FDL__CACHE_PMEMO && memcmp(e->key, key, FDL__CACHE_KEY_SIZE) == 0) {
            e->used = ++g_mem.tick;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&g_mem.lock);
    return found;
}

void fdl__cache_pmemo_put(const unsigned char key[FDL__CACHE_KEY_SIZE])
{
    fdl__cache_mem_put(FDL__CACHE_PMEMO, key, NULL, 0, 0);
}

void fdl__cache_mem_clear(void)
{
    mem_lock();
    while (g_mem.head) {
        mem_entry *e = g_mem.head;
        g_mem.head = e->next;
        free(e->payload);
        free(e);
    }
    g_mem.bytes = 0;
    pthread_mutex_unlock(&g_mem.lock);
}
