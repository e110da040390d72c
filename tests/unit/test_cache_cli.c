/*
 * The cache through the CLI (label cli): `fdlink link -v` says miss then hit with one key, and
 * `fdlink cache stats`, `list`, `verify`, `prune` and `clear` on a directory the test prepares
 * (the golden cases in tests/cli/cases_cache.cmake cover what needs no preparation).
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#define DATA FDL_TEST_DATA "/check"

typedef struct ran {
    int status;
    char *out;
    char *err;
} ran;

static void ran_free(ran *r)
{
    free(r->out);
    free(r->err);
}

/* Run `fdlink <args>` with FDLINK_CACHE_DIR=<cache>; stdout and stderr captured. */
static ran fdlink(const char *scratch, const char *cache, const char *args)
{
    char *o = path_in(scratch, "stdout"), *e = path_in(scratch, "stderr");
    size_t n = strlen(args) + strlen(cache) + strlen(o) + strlen(e) + 256;
    char *cmd = malloc(n);
    snprintf(cmd, n, "FDLINK_CACHE_DIR='%s' '%s' %s >'%s' 2>'%s'", cache, FDL_FDLINK_EXE, args,
             o, e);
    ran r;
    int st = system(cmd);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    size_t size;
    cr_assert_eq(fdl__read_file(o, &r.out, &size, NULL), FDL_OK);
    cr_assert_eq(fdl__read_file(e, &r.err, &size, NULL), FDL_OK);
    free(cmd);
    free(o);
    free(e);
    return r;
}

/* The key after "key " in @p text (33 bytes with the NUL), or "". */
static void key_of(const char *text, char key[33])
{
    const char *k = strstr(text, " key ");
    key[0] = '\0';
    if (k && strlen(k + 5) >= 32) {
        memcpy(key, k + 5, 32);
        key[32] = '\0';
    }
}

Test(cache_cli, link_says_miss_then_hit_with_the_key_and_stats_count_them)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char args[1024];
    snprintf(args, sizeof args, "link -arch=sm_90 -v -o '%s/a.cubin' %s/caller.ptx "
             "%s/conforming.ptx", dir, DATA, DATA);
    ran a = fdlink(dir, cache, args);
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_not_null(strstr(a.err, "fdlink: cache: miss, linked key "), "%s", a.err);
    char ka[33], kb[33];
    key_of(a.err, ka);
    snprintf(args, sizeof args, "link -arch=sm_90 -v -o '%s/b.cubin' %s/caller.ptx "
             "%s/conforming.ptx", dir, DATA, DATA);
    ran b = fdlink(dir, cache, args);
    cr_assert_eq(b.status, 0);
    cr_assert_not_null(strstr(b.err, "fdlink: cache: hit (disk) key "), "%s", b.err);
    key_of(b.err, kb);
    cr_assert_str_eq(ka, kb);
    cr_assert_eq(strlen(ka), 32);
    /* --no-cache: not used */
    snprintf(args, sizeof args, "link -arch=sm_90 -v --no-cache -o '%s/c.cubin' %s/caller.ptx "
             "%s/conforming.ptx", dir, DATA, DATA);
    ran c = fdlink(dir, cache, args);
    cr_assert_not_null(strstr(c.err, "fdlink: cache: not used"), "%s", c.err);
    ran s = fdlink(dir, cache, "cache stats");
    cr_assert_eq(s.status, 0);
    cr_assert_not_null(strstr(s.out, "entries: 1\n"), "%s", s.out);
    cr_assert_not_null(strstr(s.out, "hits: 1\nmisses: 1\ncorrupt entries found: 0\n"), "%s",
                       s.out);
    ran l = fdlink(dir, cache, "cache list");
    cr_assert_not_null(strstr(l.out, "link "), "%s", l.out);
    cr_assert_not_null(strstr(l.out, ka), "%s", l.out);
    ran d = fdlink(dir, cache, "cache dir");
    cr_assert_eq(strncmp(d.out, cache, strlen(cache)), 0, "%s", d.out);
    ran_free(&a);
    ran_free(&b);
    ran_free(&c);
    ran_free(&s);
    ran_free(&l);
    ran_free(&d);
    free(cache);
    free(dir);
}

Test(cache_cli, verify_reports_and_removes_bad_entries_then_prune_and_clear)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char args[1024];
    snprintf(args, sizeof args, "link -arch=sm_90 -v -o '%s/a.cubin' %s/caller.ptx "
             "%s/conforming.ptx", dir, DATA, DATA);
    ran a = fdlink(dir, cache, args);
    cr_assert_eq(a.status, 0, "%s", a.err);
    char key[33];
    key_of(a.err, key);
    char name[64];
    snprintf(name, sizeof name, "%s.fdlc", key);
    char *good = path_in(cache, name);
    size_t n;
    char *bytes = NULL;
    cr_assert_eq(fdl__read_file(good, &bytes, &n, NULL), FDL_OK);
    /* a truncated copy under another key, and a foreign file with an entry's name */
    char *trunc = path_in(cache, "00000000000000000000000000000001.fdlc");
    char *foreign = path_in(cache, "00000000000000000000000000000002.fdlc");
    FILE *f = fopen(trunc, "wb");
    fwrite(bytes, 1, n / 2, f);
    fclose(f);
    f = fopen(foreign, "wb");
    fputs("not an entry\n", f);
    fclose(f);
    ran v = fdlink(dir, cache, "cache verify");
    cr_assert_eq(v.status, 0);
    cr_assert_str_eq(v.out, "removed 00000000000000000000000000000001.fdlc: key differs from its "
                            "file name\n"
                            "removed 00000000000000000000000000000002.fdlc: not an fdlink "
                            "cache entry\n"
                            "checked 3 entries: 2 bad files removed\n");
    ran s = fdlink(dir, cache, "cache stats");
    cr_assert_not_null(strstr(s.out, "entries: 1\n"), "%s", s.out);
    cr_assert_not_null(strstr(s.out, "corrupt entries found: 2\n"), "%s", s.out);
    ran v2 = fdlink(dir, cache, "cache verify");
    cr_assert_str_eq(v2.out, "checked 1 entry: 0 bad files removed\n");
    ran p = fdlink(dir, cache, "cache prune --max-size 1");
    cr_assert_str_eq(p.out, "removed 1 file; 0 entries, 0 bytes left\n");
    ran b = fdlink(dir, cache, args);
    cr_assert_not_null(strstr(b.err, "cache: miss"), "%s", b.err);
    ran c = fdlink(dir, cache, "cache clear");
    cr_assert_eq(c.status, 0);
    cr_assert_not_null(strstr(c.out, "removed 1 file from "), "%s", c.out);
    ran s2 = fdlink(dir, cache, "cache stats");
    cr_assert_not_null(strstr(s2.out, "entries: 0\n"), "%s", s2.out);
    cr_assert_not_null(strstr(s2.out, "hits: 0\nmisses: 0\n"), "%s", s2.out);
    ran *all[] = {&a, &v, &s, &v2, &p, &b, &c, &s2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        ran_free(all[i]);
    free(bytes);
    free(good);
    free(trunc);
    free(foreign);
    free(cache);
    free(dir);
}

/* -Xnvrtc options are part of the NVRTC cache key (issue 34): the same source compiled with
 * another raw option is compiled again, with the first one again it comes from the cache. */
Test(cache_cli, xnvrtc_options_are_part_of_the_compile_key)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    const char *opts[] = {"-default-device", "--device-as-default-execution-space",
                          "-default-device"};
    const char *want[] = {"CUDA C inputs: 0 from the cache, 1 compiled",
                          "CUDA C inputs: 0 from the cache, 1 compiled",
                          "CUDA C inputs: 1 from the cache, 0 compiled"};
    for (int i = 0; i < 3; i++) {
        char args[1024];
        snprintf(args, sizeof args, "link -arch=sm_90 -v -Xnvrtc %s -o '%s/x%d.cubin' "
                 "%s/nvrtc/unannotated.cu", opts[i], dir, i, FDL_TEST_DATA);
        ran r = fdlink(dir, cache, args);
        cr_assert_eq(r.status, 0, "%s", r.err);
        cr_assert_not_null(strstr(r.err, want[i]), "run %d (%s): %s", i, opts[i], r.err);
        ran_free(&r);
    }
    free(cache);
    free(dir);
}

/* A hit says the declaration check's warnings (ABI-13, on LTO-IR inputs only: their post-LTO
 * PTX) again, and -Werror fails on it too. */
Test(cache_cli, a_hit_repeats_the_checks_warnings)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char args[1024];
    const char *cls = FDL_TEST_DATA "/classes";
    const char *lto = FDL_NVCC_FIXTURES "/classes_lto.o";
    snprintf(args, sizeof args, "link -arch=sm_" FDL_NVCC_ARCH " -v --decl %s/wrong.decl "
             "-o '%s/a.cubin' %s",
             cls, dir, lto);
    ran a = fdlink(dir, cache, args);
    cr_assert_eq(a.status, 0, "%s", a.err);
    cr_assert_not_null(strstr(a.err, "fdlink: cache: miss"), "%s", a.err);
    const char *w = "classes_lto.o[post-LTO ptx]:";
    const char *what = ": warning: mulf: parameter 2 is declared float32 but the code reads it as "
                       "u32 (ABI-13; declared at ";
    cr_assert_not_null(strstr(a.err, w), "%s", a.err);
    cr_assert_not_null(strstr(a.err, what), "%s", a.err);
    ran b = fdlink(dir, cache, args);
    cr_assert_eq(b.status, 0, "%s", b.err);
    cr_assert_not_null(strstr(b.err, "fdlink: cache: hit (disk)"), "%s", b.err);
    cr_assert_not_null(strstr(b.err, w), "%s", b.err);
    cr_assert_not_null(strstr(b.err, what), "%s", b.err);
    snprintf(args, sizeof args, "link -arch=sm_" FDL_NVCC_ARCH " -Werror --decl %s/wrong.decl "
             "-o '%s/c.cubin' %s",
             cls, dir, lto);
    ran c = fdlink(dir, cache, args);
    cr_assert_eq(c.status, 1, "%s", c.err);
    cr_assert_not_null(strstr(c.err, "warnings treated as errors (-Werror); nothing linked"),
                       "%s", c.err);
    char *out = path_in(dir, "c.cubin");
    cr_assert_neq(access(out, F_OK), 0, "nothing written");
    ran v = fdlink(dir, cache, "cache verify");
    cr_assert_eq(v.status, 0, "%s%s", v.out, v.err);
    ran_free(&a);
    ran_free(&b);
    ran_free(&c);
    ran_free(&v);
    free(out);
    free(cache);
    free(dir);
}
