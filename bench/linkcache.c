/*
 * Benchmark 7: the link cache (issue 10). Four comparisons, each in one run:
 *
 *   (a) the first link in a fresh process (empty cache) against a disk-cache hit in a fresh
 *       process: children `fdlink-bench --child-cache link DIR`, the cache cleared before each
 *       cold sample; the inputs are benchmark 4's (caller + 16 functions, PTX). Goal: the hit
 *       >= 50x faster (process-internal time from before fdl_link_create to the cubin, whatever
 *       fdlink loads included). The cold child must have loaded nvJitLink and the hit must not
 *       have (its version comes from the memo in the cache directory).
 *   (b) a repeated identical link in one process, from the memory cache, against a raw
 *       nvJitLink relink of the same inputs (this program opens nvJitLink itself). Goal <= 0.1.
 *   (c) time to first result (benchmark 6's programs) with a warm cache: run-time link /
 *       embedded cubin, process start to exit. Goal <= 1.05. Needs a GPU (skipped otherwise).
 *   (d) matmul's NVRTC compile (examples/matmul/matmul.cu, BLOCK_SIZE=16, N=1024), cold against
 *       warm, in fresh processes (`--child-cache nvrtc DIR`); the warm one must not load NVRTC.
 *
 * Every cubin is compared with an uncached link's; every child reports where its result came
 * from, and a sample that did not hit or miss as intended fails the benchmark. The caches live
 * in a temporary directory that is removed afterwards.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "fdlink/cache.h"
#include "internal.h"

typedef struct two_inputs {
    char *data[2];
    size_t size[2];
} two_inputs;

static int read_inputs(two_inputs *in, fdl_error *err)
{
    memset(in, 0, sizeof *in);
    const char *paths[2] = {FDL_BENCH_LINK_CALLERS_PTX, FDL_BENCH_LINK_FUNCTIONS_PTX};
    for (int i = 0; i < 2; i++) {
        int rc = fdl__read_file(paths[i], &in->data[i], &in->size[i], err);
        if (rc != FDL_OK)
            return rc;
    }
    return FDL_OK;
}

static void free_inputs(two_inputs *in)
{
    free(in->data[0]);
    free(in->data[1]);
}

/* One fdlink link of the inputs with @p mode in @p dir. */
static int cached_link(const two_inputs *in, fdl_cache_mode mode, const char *dir,
                       fdl_link **out, fdl_error *err)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = FDL_BENCH_LINK_ARCH;
    opts.cache = mode;
    opts.cache_dir = dir;
    static const char *const names[2] = {"link16_callers.ptx", "link16_functions.ptx"};
    int rc = fdl_link_create(out, &opts, err);
    for (int i = 0; rc == FDL_OK && i < 2; i++)
        rc = fdl_link_add_data(*out, in->data[i], in->size[i], names[i], FDL_KIND_PTX, err);
    if (rc == FDL_OK)
        rc = fdl_link_complete(*out, err);
    return rc;
}

/* matmul.cu through NVRTC with the cache in @p dir; the compile's time in *ms. */
static int nvrtc_link(const char *dir, fdl_link **out, double *ms, fdl_error *err)
{
    char *src = NULL;
    size_t size = 0;
    int rc = fdl__read_file(FDL_BENCH_MATMUL_CU, &src, &size, err);
    if (rc != FDL_OK)
        return rc;
    const char *defines[] = {"BLOCK_SIZE=16", "N=1024", NULL};
    fdl_nvrtc_options nv = FDL_NVRTC_OPTIONS_INIT;
    nv.defines = defines;
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = FDL_BENCH_LINK_ARCH;
    opts.cache = FDL_CACHE_ON;
    opts.cache_dir = dir;
    rc = fdl_link_create(out, &opts, err);
    double t0 = bench_now_ms();
    if (rc == FDL_OK)
        rc = fdl_link_add_cuda(*out, src, size, "matmul.cu", &nv, err);
    *ms = bench_now_ms() - t0;
    if (rc == FDL_OK)
        rc = fdl_link_complete(*out, err);
    free(src);
    return rc;
}

/* ---- the child: one link or compile in a fresh process ------------------------------------ */

static int mapped_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    return info->dlpi_name && strstr(info->dlpi_name, (const char *)data) != NULL;
}

/* Is a library whose path contains @p part mapped in this process? */
static int mapped(const char *part)
{
    return dl_iterate_phdr(mapped_cb, (void *)part) != 0;
}

int bench_cache_child(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[2], "link") != 0 && strcmp(argv[2], "nvrtc") != 0)) {
        fprintf(stderr, "usage: fdlink-bench --child-cache link|nvrtc DIR\n");
        return 2;
    }
    fdl_error err = FDL_ERROR_INIT;
    fdl_link *link = NULL;
    int status = 1;
    double t0 = bench_now_ms(), total = 0;
    int loaded = 0; /* nvJitLink (link) or NVRTC (nvrtc) is mapped in this process */
    const char *where = "unused";
    size_t size = 0;
    uint64_t hash = 0;
    if (strcmp(argv[2], "link") == 0) {
        two_inputs in;
        if (read_inputs(&in, &err) != FDL_OK) {
            fprintf(stderr, "fdlink-bench: error: %s\n", err.message);
            return 1;
        }
        t0 = bench_now_ms();
        int rc = cached_link(&in, FDL_CACHE_ON, argv[3], &link, &err);
        total = bench_now_ms() - t0;
        loaded = mapped("libnvJitLink");
        free_inputs(&in);
        if (rc != FDL_OK) {
            fprintf(stderr, "fdlink-bench: error: %s\n", err.message);
            goto cleanup;
        }
        where = fdl_cache_result_name(fdl_link_cache_result(link, NULL));
    } else {
        if (nvrtc_link(argv[3], &link, &total, &err) != FDL_OK) {
            fprintf(stderr, "fdlink-bench: error: %s\n", err.message);
            goto cleanup;
        }
        size_t hits = 0, compiled = 0;
        fdl_link_nvrtc_cache(link, &hits, &compiled);
        loaded = mapped("libnvrtc");
        where = hits ? "hit" : compiled ? "compiled" : "none";
    }
    const void *cubin = fdl_link_cubin(link, &size);
    hash = fdl__hash((const char *)cubin, size);
    printf("cache-child %.6f %d %s %zu %016" PRIx64 "\n", total, loaded, where, size, hash);
    status = 0;
cleanup:
    fdl_link_destroy(link);
    return status;
}

typedef struct child_out {
    double total;
    int loaded;
    char where[16];
    size_t size;
    uint64_t hash;
} child_out;

static int run_child(bench_section *s, const bench_ctx *ctx, const char *what, const char *dir,
                     child_out *o)
{
    char *argv[] = {(char *)ctx->self, "--child-cache", (char *)what, (char *)dir, NULL};
    static const char *const env[] = {"CUDA_CACHE_DISABLE=1", NULL};
    char out[2048];
    int status = 0;
    double wall = 0;
    if (bench_run_process(argv, env, out, sizeof out, &status, &wall) != 0 || status != 0) {
        bench_fail(s, "--child-cache %s failed (exit status %d): %s", what, status, out);
        return 1;
    }
    const char *line = strstr(out, "cache-child ");
    unsigned long long h = 0;
    if (!line || sscanf(line, "cache-child %lf %d %15s %zu %llx", &o->total, &o->loaded, o->where,
                        &o->size, &h) != 5) {
        bench_fail(s, "--child-cache %s: unexpected output: %s", what, out);
        return 1;
    }
    o->hash = (uint64_t)h;
    return 0;
}

/* ---- raw nvJitLink, for (b) --------------------------------------------------------------- */

typedef int (*jl_create_fn)(void **h, uint32_t n, const char **opts);
typedef int (*jl_destroy_fn)(void **h);
typedef int (*jl_add_fn)(void *h, int type, const void *data, size_t size, const char *name);
typedef int (*jl_complete_fn)(void *h);
typedef int (*jl_size_fn)(void *h, size_t *size);
typedef int (*jl_cubin_fn)(void *h, void *cubin);

typedef struct raw {
    void *lib;
    jl_create_fn create;
    jl_destroy_fn destroy;
    jl_add_fn add;
    jl_complete_fn complete;
    jl_size_fn size;
    jl_cubin_fn cubin;
} raw;

static int raw_open(raw *r)
{
    char path[512];
    memset(r, 0, sizeof *r);
    if (bench_nvjitlink_path(path, sizeof path) != 0 || !(r->lib = dlopen(path, RTLD_NOW)))
        return -1;
    /* POSIX: a function pointer may be converted from dlsym's void * this way */
    *(void **)&r->create = dlsym(r->lib, "nvJitLinkCreate");
    *(void **)&r->destroy = dlsym(r->lib, "nvJitLinkDestroy");
    *(void **)&r->add = dlsym(r->lib, "nvJitLinkAddData");
    *(void **)&r->complete = dlsym(r->lib, "nvJitLinkComplete");
    *(void **)&r->size = dlsym(r->lib, "nvJitLinkGetLinkedCubinSize");
    *(void **)&r->cubin = dlsym(r->lib, "nvJitLinkGetLinkedCubin");
    return r->create && r->destroy && r->add && r->complete && r->size && r->cubin ? 0 : -1;
}

/* One raw link; 0 and the cubin's hash, or -1. */
static int raw_relink(const raw *r, const two_inputs *in, uint64_t *hash)
{
    const char *opts[] = {"-arch=" FDL_BENCH_LINK_ARCH};
    void *h = NULL;
    int ok = r->create(&h, 1, opts) == 0 && r->add(h, 2 /* NVJITLINK_INPUT_PTX */, in->data[0], in->size[0],
                                                    "link16_callers.ptx") == 0 &&
             r->add(h, 2, in->data[1], in->size[1], "link16_functions.ptx") == 0 &&
             r->complete(h) == 0;
    size_t size = 0;
    unsigned char *c = NULL;
    if (ok && r->size(h, &size) == 0 && (c = malloc(size ? size : 1)) && r->cubin(h, c) == 0)
        *hash = fdl__hash((const char *)c, size);
    else
        ok = 0;
    free(c);
    if (h)
        r->destroy(&h);
    return ok ? 0 : -1;
}

/* ---- the benchmark ------------------------------------------------------------------------ */

/*
 * One run of a benchmark 6 program with the cache in @p dir: 0 verified, FDL_EXIT_SKIP without a
 * GPU (*skipped set), else 1 (the section failed).
 */
static int run_ttfr(bench_section *s, const char *program, const char *dir, double *wall,
                    double *inner, int *skipped)
{
    char env_dir[1024];
    snprintf(env_dir, sizeof env_dir, "FDLINK_CACHE_DIR=%s", dir);
    const char *const env[] = {"CUDA_CACHE_DISABLE=1", env_dir, NULL};
    int rc = bench_ttfr_run(s, program, env, wall, inner, NULL, 0);
    if (rc == FDL_EXIT_SKIP) {
        *skipped = 1;
        return 0;
    }
    return rc;
}

/*
 * (a') nvJitLink's own cache (issue 25): benchmark 4's raw first-link child (`--child-link ptx
 * raw`, no fdlink) twice in fresh processes with nvJitLink's cache on, in an empty folder of its
 * own (CUDA_CACHE_PATH): the first fills it, the second is nvJitLink's warm cache, the baseline
 * beside fdlink's disk hit. Every cubin must be @p ref_hash. 0, or -1 after bench_fail.
 */
/* Entries under @p path, one level down included (the compute cache's index and its folders). */
static size_t count_entries(const char *path)
{
    size_t n = 0;
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        n++;
        char sub[1600];
        if ((size_t)snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= sizeof sub)
            continue;
        DIR *d2 = opendir(sub);
        struct dirent *e2;
        while (d2 && (e2 = readdir(d2)))
            n += e2->d_name[0] != '.';
        if (d2)
            closedir(d2);
    }
    if (d)
        closedir(d);
    return n;
}

static int jl_cache_pair(bench_section *s, const bench_ctx *ctx, const char *dir, size_t rep,
                         uint64_t ref_hash, double *cold, double *warm, size_t *files)
{
    char path[1200], env_path[1300];
    snprintf(path, sizeof path, "%s/nvjitlink-%zu", dir, rep);
    if (mkdir(path, 0700) != 0) {
        bench_fail(s, "(a'): cannot make %s", path);
        return -1;
    }
    snprintf(env_path, sizeof env_path, "CUDA_CACHE_PATH=%s", path);
    const char *const env[] = {"CUDA_CACHE_DISABLE=0", env_path, "FDLINK_CACHE=0", NULL};
    char *argv[] = {(char *)ctx->self, "--child-link", "ptx", "raw", NULL};
    for (int i = 0; i < 2; i++) {
        char out[2048];
        int status = 0;
        double wall = 0, total = 0, load = 0;
        size_t size = 0;
        unsigned long long hash = 0;
        const char *line;
        if (bench_run_process(argv, env, out, sizeof out, &status, &wall) != 0 || status != 0 ||
            !(line = strstr(out, "first-link ")) ||
            sscanf(line, "first-link %lf %lf %zu %llx", &total, &load, &size, &hash) != 4) {
            bench_fail(s, "(a'): the raw nvJitLink child failed (exit status %d): %s", status,
                       out);
            return -1;
        }
        if ((uint64_t)hash != ref_hash) {
            bench_fail(s, "(a'): nvJitLink's cache gave a different cubin");
            return -1;
        }
        *(i ? warm : cold) = total;
    }
    *files = count_entries(path);
    return 0;
}

/* (a') for @p reps pairs, and its figures and ratio against fdlink's disk hits @p hits. */
static int jl_cache_baseline(bench_section *s, const bench_ctx *ctx, const char *dir,
                             size_t reps, uint64_t ref_hash, const double *hits)
{
    double *jl_cold = calloc(reps, sizeof *jl_cold), *jl_warm = calloc(reps, sizeof *jl_warm);
    int rc = -1;
    if (!jl_cold || !jl_warm) {
        bench_fail(s, "out of memory");
        goto cleanup;
    }
    size_t files = 0;
    for (size_t i = 0; i < reps; i++)
        if (jl_cache_pair(s, ctx, dir, i, ref_hash, &jl_cold[i], &jl_warm[i], &files) != 0)
            goto cleanup;
    if (!bench_figure_add(s, "(a') raw nvJitLink, fresh process, its own cache empty", "ms",
                          jl_cold, reps) ||
        !bench_figure_add(s, "(a') raw nvJitLink, fresh process, its own cache warm", "ms",
                          jl_warm, reps))
        goto cleanup;
    bench_ratio_add(s, "(a') fdlink disk hit / nvJitLink's warm cache", hits, jl_warm, reps,
                    BENCH_GOAL_NONE, 0.0);
    bench_note(s, "(a') nvJitLink caches across processes unless -no-cache or CUDA_CACHE_DISABLE=1 "
                  "(in the driver's compute cache, CUDA_CACHE_PATH): benchmark 4's raw child run "
                  "twice with it on, in an empty folder of its own each time; the warm run still "
                  "loads nvJitLink, which fdlink's disk hit does not; the cache folder held %zu "
                  "entries after the pair (nvJitLink 13.0 writes none where no CUDA driver is "
                  "installed)", files);
    rc = 0;
cleanup:
    free(jl_cold);
    free(jl_warm);
    return rc;
}

void bench_cache(bench_ctx *ctx, bench_section *s)
{
    const size_t reps = bench_reps(ctx, 3, 10);
    const size_t relinks = bench_reps(ctx, 5, 30);
    /* (c): a process's start and teardown vary by tens of ms (IQR ~30 ms of ~200): more pairs */
    const size_t pairs = bench_reps(ctx, 3, 40);
    char tmpl[] = "/tmp/fdlink-bench-cache.XXXXXX";
    char *dir = mkdtemp(tmpl);
    double *cold = calloc(reps, sizeof *cold), *warm = calloc(reps, sizeof *warm);
    double *mem = calloc(relinks, sizeof *mem), *rawt = calloc(relinks, sizeof *rawt);
    double *ttfr_rt = calloc(pairs, sizeof *ttfr_rt), *ttfr_emb = calloc(pairs, sizeof *ttfr_emb);
    double *main_rt = calloc(pairs, sizeof *main_rt), *main_emb = calloc(pairs, sizeof *main_emb);
    double *nv_cold = calloc(reps, sizeof *nv_cold), *nv_warm = calloc(reps, sizeof *nv_warm);
    two_inputs in;
    memset(&in, 0, sizeof in);
    raw r;
    memset(&r, 0, sizeof r);
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    char sub[1100];
    if (!dir || !cold || !warm || !mem || !rawt || !ttfr_rt || !ttfr_emb || !main_rt ||
        !main_emb || !nv_cold || !nv_warm) {
        bench_fail(s, "out of memory or no temporary directory");
        goto cleanup;
    }
    if (read_inputs(&in, &err) != FDL_OK) {
        bench_fail_err(s, "reading the link inputs", &err);
        goto cleanup;
    }
    /* the reference: an uncached link */
    if (cached_link(&in, FDL_CACHE_OFF, NULL, &link, &err) != FDL_OK) {
        bench_fail_err(s, "the uncached link", &err);
        goto cleanup;
    }
    size_t ref_size = 0;
    const void *ref = fdl_link_cubin(link, &ref_size);
    uint64_t ref_hash = fdl__hash((const char *)ref, ref_size);
    fdl_link_destroy(link);
    link = NULL;

    /* (a) first link vs disk hit, fresh processes */
    snprintf(sub, sizeof sub, "%s/links", dir);
    for (size_t i = 0; i < reps; i++) {
        child_out c, w;
        fdl_cache_clear(sub, NULL, NULL);
        if (run_child(s, ctx, "link", sub, &c) || run_child(s, ctx, "link", sub, &w))
            goto cleanup;
        if (strcmp(c.where, "miss") != 0 || strcmp(w.where, "disk") != 0) {
            bench_fail(s, "(a): expected a miss then a disk hit, got %s then %s", c.where,
                       w.where);
            goto cleanup;
        }
        if (c.size != ref_size || c.hash != ref_hash || w.size != ref_size || w.hash != ref_hash) {
            bench_fail(s, "(a): a cubin differs from the uncached link's");
            goto cleanup;
        }
        if (!c.loaded || w.loaded) {
            bench_fail(s, "(a): nvJitLink was %sloaded by the first link and %sloaded by the hit",
                       c.loaded ? "" : "not ", w.loaded ? "" : "not ");
            goto cleanup;
        }
        cold[i] = c.total;
        warm[i] = w.total;
    }
    if (!bench_figure_add(s, "(a) first link, fresh process, empty cache", "ms", cold, reps) ||
        !bench_figure_add(s, "(a) disk hit, fresh process", "ms", warm, reps))
        goto cleanup;
    bench_ratio_add(s, "(a) first link / disk hit in a fresh process", cold, warm, reps,
                    BENCH_GOAL_GE, 50.0);
    bench_note(s, "(a) the hit loads no nvJitLink (checked in every sample): its version comes "
                  "from the memo in the cache directory");
    if (jl_cache_baseline(s, ctx, dir, reps, ref_hash, warm) != 0)
        goto cleanup;

    /* (b) memory hit vs raw relink, one process */
    if (raw_open(&r) != 0) {
        bench_fail(s, "(b): cannot open nvJitLink for the raw baseline");
        goto cleanup;
    }
    snprintf(sub, sizeof sub, "%s/memory", dir);
    uint64_t h = 0;
    if (raw_relink(&r, &in, &h) != 0 || h != ref_hash) { /* warm-up and check */
        bench_fail(s, "(b): the raw link failed or differs");
        goto cleanup;
    }
    if (cached_link(&in, FDL_CACHE_ON, sub, &link, &err) != FDL_OK) {
        bench_fail_err(s, "(b) the first cached link", &err);
        goto cleanup;
    }
    fdl_link_destroy(link);
    link = NULL;
    for (size_t i = 0; i < relinks; i++) {
        double t0 = bench_now_ms();
        if (cached_link(&in, FDL_CACHE_ON, sub, &link, &err) != FDL_OK) {
            bench_fail_err(s, "(b) a repeated link", &err);
            goto cleanup;
        }
        mem[i] = bench_now_ms() - t0;
        size_t size = 0;
        const void *cubin = fdl_link_cubin(link, &size);
        if (fdl_link_cache_result(link, NULL) != FDL_CACHE_HIT_MEMORY || size != ref_size ||
            fdl__hash((const char *)cubin, size) != ref_hash) {
            bench_fail(s, "(b): a repeated link was not a memory hit with the same cubin");
            goto cleanup;
        }
        fdl_link_destroy(link);
        link = NULL;
        t0 = bench_now_ms();
        if (raw_relink(&r, &in, &h) != 0 || h != ref_hash) {
            bench_fail(s, "(b): the raw link failed or differs");
            goto cleanup;
        }
        rawt[i] = bench_now_ms() - t0;
    }
    if (!bench_figure_add(s, "(b) repeated link, memory hit", "ms", mem, relinks) ||
        !bench_figure_add(s, "(b) raw nvJitLink relink", "ms", rawt, relinks))
        goto cleanup;
    bench_ratio_add(s, "(b) memory hit / raw nvJitLink relink", mem, rawt, relinks,
                    BENCH_GOAL_LE, 0.1);

    /* (d) matmul's NVRTC compile, cold vs warm, fresh processes */
    snprintf(sub, sizeof sub, "%s/nvrtc", dir);
    for (size_t i = 0; i < reps; i++) {
        child_out c, w;
        fdl_cache_clear(sub, NULL, NULL);
        if (run_child(s, ctx, "nvrtc", sub, &c) || run_child(s, ctx, "nvrtc", sub, &w))
            goto cleanup;
        if (strcmp(c.where, "compiled") != 0 || strcmp(w.where, "hit") != 0 ||
            c.hash != w.hash || !c.loaded || w.loaded) {
            bench_fail(s, "(d): expected a compile (NVRTC loaded) then a hit (NVRTC not loaded) "
                       "with the same cubin, got %s (%s), %s (%s)", c.where,
                       c.loaded ? "loaded" : "not loaded", w.where,
                       w.loaded ? "loaded" : "not loaded");
            goto cleanup;
        }
        nv_cold[i] = c.total;
        nv_warm[i] = w.total;
    }
    if (!bench_figure_add(s, "(d) matmul.cu NVRTC compile, cold", "ms", nv_cold, reps) ||
        !bench_figure_add(s, "(d) matmul.cu NVRTC compile, warm (disk hit)", "ms", nv_warm,
                          reps))
        goto cleanup;
    bench_ratio_add(s, "(d) matmul NVRTC compile: warm / cold", nv_warm, nv_cold, reps,
                    BENCH_GOAL_NONE, 0);

    /* (c) time to first result with a warm cache */
    snprintf(sub, sizeof sub, "%s/ttfr", dir);
    int skipped = 0;
    double w0, m0;
    if (run_ttfr(s, FDL_BENCH_TTFR_RUNTIME, sub, &w0, &m0, &skipped) ||
        (!skipped && run_ttfr(s, FDL_BENCH_TTFR_EMBEDDED, sub, &w0, &m0, &skipped)))
        goto cleanup;
    if (skipped) {
        bench_note(s, "(c) skipped: no GPU");
    } else {
        for (size_t i = 0; i < pairs; i++)
            for (int j = 0; j < 2; j++) {
                int runtime = (int)((i + (size_t)j) % 2);
                if (run_ttfr(s, runtime ? FDL_BENCH_TTFR_RUNTIME : FDL_BENCH_TTFR_EMBEDDED, sub,
                             runtime ? &ttfr_rt[i] : &ttfr_emb[i],
                             runtime ? &main_rt[i] : &main_emb[i], &skipped))
                    goto cleanup;
            }
        if (!bench_figure_add(s, "(c) ttfr, run-time link, warm cache", "ms", ttfr_rt, pairs) ||
            !bench_figure_add(s, "(c) ttfr, embedded cubin", "ms", ttfr_emb, pairs) ||
            !bench_figure_add(s, "(c) main() to result, run-time link, warm cache", "ms", main_rt,
                              pairs) ||
            !bench_figure_add(s, "(c) main() to result, embedded cubin", "ms", main_emb, pairs))
            goto cleanup;
        bench_ratio_add(s, "(c) ttfr warm cache: run-time link / embedded", ttfr_rt, ttfr_emb,
                        pairs, BENCH_GOAL_LE, 1.05);
        bench_ratio_add(s, "(c) main() to result, warm cache: run-time link / embedded", main_rt,
                        main_emb, pairs, BENCH_GOAL_NONE, 0);
        bench_note(s, "(c) %zu pairs of fresh processes, the two programs alternating, the cache "
                      "warmed by one untimed run of each", pairs);
    }
    /* (e), (f), (g): remote stores and bundles (remotecache.c) */
    if (bench_cache_remote(ctx, s, dir, ref_hash))
        goto cleanup;
    s->verified = 1;
    bench_note(s, "verified: every cubin equals an uncached link's; every child hit or missed "
                  "as intended");
    bench_note(s, "(a) and (d): each sample is a pair of fresh processes, the cache cleared "
                  "before the first; (b): one process, alternating memory hit and raw relink");
    s->status = BENCH_OK;
cleanup:
    fdl_link_destroy(link);
    if (r.lib)
        dlclose(r.lib);
    free_inputs(&in);
    if (dir) {
        const char *subs[] = {"links", "memory", "nvrtc", "ttfr"};
        for (size_t i = 0; i < 4; i++) {
            snprintf(sub, sizeof sub, "%s/%s", dir, subs[i]);
            fdl_cache_clear(sub, NULL, NULL);
            rmdir(sub);
        }
        rmdir(dir);
    }
    free(cold);
    free(warm);
    free(mem);
    free(rawt);
    free(ttfr_rt);
    free(ttfr_emb);
    free(main_rt);
    free(main_emb);
    free(nv_cold);
    free(nv_warm);
}
