/*
 * Helpers shared by the Criterion tests: guarded copies (bytes that end right before an
 * unreadable page, so that a parser reading one byte past its input faults at once instead of
 * passing by luck) and scratch folders.
 */
#ifndef FDLINK_TESTS_FDL_TEST_H
#define FDLINK_TESTS_FDL_TEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A new scratch folder under /tmp; the caller frees the returned path. */
static inline char *make_temp_dir(void)
{
    char tmpl[] = "/tmp/fdl_test.XXXXXX";
    char *dir = mkdtemp(tmpl);
    cr_assert_not_null(dir);
    return strdup(dir);
}

/* "dir/name", malloc'ed. */
static inline char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    cr_assert_not_null(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

#endif /* FDLINK_TESTS_FDL_TEST_H */
