/*
 * Test helper: a copy of some bytes that ends right before an unreadable page, so that a parser
 * reading one byte past its input faults at once instead of passing by luck.
 */
#ifndef FDLINK_TESTS_GUARDED_H
#define FDLINK_TESTS_GUARDED_H

#include <criterion/criterion.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct guarded {
    char *map;
    size_t maplen;
    char *text;
} guarded;

/* Copy @len bytes of @s to the end of a mapping followed by a PROT_NONE page; returns the copy. */
static inline char *guard_copy(guarded *g, const char *s, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (len + page - 1) / page + 1;
    g->maplen = pages * page;
    g->map = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(g->map != MAP_FAILED);
    cr_assert_eq(mprotect(g->map + (pages - 1) * page, page, PROT_NONE), 0);
    g->text = g->map + (pages - 1) * page - len;
    if (len)
        memcpy(g->text, s, len);
    return g->text;
}

static inline void guard_free(guarded *g)
{
    munmap(g->map, g->maplen);
}

#endif /* FDLINK_TESTS_GUARDED_H */
