/*
 * Benchmark 4: what a link costs through fdlink, against direct calls of the nvJitLink API on
 * the same bytes with the same options.
 *
 * The inputs: a caller (device/link16_callers.cu, one kernel calling 16 foreign functions) and
 * the 16 functions (device/link16_functions.cu), compiled by nvcc at build time to PTX and to
 * LTO-IR. For each kind:
 *   - raw: this program opens libnvJitLink itself (dlopen, the same names fdlink tries, in the
 *     same order) and calls nvJitLinkCreate (-arch=sm_NN, plus -lto for LTO-IR),
 *     nvJitLinkAddData for each input, nvJitLinkComplete, nvJitLinkGetLinkedCubinSize /
 *     nvJitLinkGetLinkedCubin, nvJitLinkDestroy;
 *   - fdlink: fdl_link_create (default options but the arch), fdl_link_add_data for each input
 *     (kind detected from the bytes), fdl_link_complete, fdl_link_cubin;
 *   - fdlink + declaration check: the same with fdl_link_add_decls (link16.decl) first; for
 *     LTO-IR that check runs an extra link to see the post-LTO PTX, beside the link's own run
 *     (issue 32: goal <= 1.1x the link without the check, first and later links);
 *   - fdlink, isolated link: fdlink with fdl_link_options.isolate = 1 (nvJitLink's link in a
 *     forked child, the cubin back through a pipe), against the in-process fdlink link in the
 *     same run: the isolation's cost on a miss of the cache (a hit never links).
 * Every method above runs with fdlink's cache off (the link's own cost), so the check's -O0 run
 * runs in every one of those links. Its result for unchanged inputs is remembered through the
 * cache (docs/cache.md, "What is cached"), which FDL_CACHE_OFF turns off, memory included; so
 * later links are measured a second way, as a program with the cache on meets them when a link
 * misses for another reason (its entry evicted, an option that only the link sees changed):
 *   - fdlink, cache on, and fdlink + declaration check, cache on: the cache on in a directory of
 *     this run's own, and before each sample the link's own entry dropped from memory and
 *     directory (fdl__cache_forget, untimed), so that every such link misses, runs nvJitLink
 *     and stores its result, while the check's entry (the post-LTO PTX) stays. Each such link
 *     is verified to be a miss; both pay the same lookup, lease and store.
 * Timed: from the first linker call to the cubin in hand, with the linker's handle destroyed
 * (fdlink destroys its nvJitLink handle within fdl_link_complete); reading the inputs is not.
 *
 * The first link in a process is measured apart: every such sample is a fresh process (this
 * program run as `fdlink-bench --child-link KIND METHOD`, spawned with posix_spawn, so nothing is
 * inherited), which times its one link including the loading of nvJitLink, and reports the
 * cubin's size and hash. Later links are timed in this process after a warm-up. Methods take
 * turns in a rotating order; ratios are taken per repetition (per pair of processes for first
 * links). Verified: raw and fdlink produce byte-identical cubins, in this process and in every
 * child, and the cubin defines the kernel (and, from PTX, the 16 functions).
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Only the types: the header's inline wrappers call versioned symbols. */
#define NVJITLINK_NO_INLINE
#include <nvJitLink.h>

#include "bench.h"
#include "cacheint.h"
#include "internal.h"

#define NFUNCS 16

/* ---- the raw baseline ----------------------------------------------------------------------- */

typedef struct raw_jl {
    void *handle;
    nvJitLinkResult (*create)(nvJitLinkHandle *handle, uint32_t n, const char **options);
    nvJitLinkResult (*destroy)(nvJitLinkHandle *handle);
    nvJitLinkResult (*add_data)(nvJitLinkHandle handle, nvJitLinkInputType type,
                                const void *data, size_t size, const char *name);
    nvJitLinkResult (*complete)(nvJitLinkHandle handle);
    nvJitLinkResult (*cubin_size)(nvJitLinkHandle handle, size_t *size);
    nvJitLinkResult (*cubin)(nvJitLinkHandle handle, void *cubin);
    char path[512];
} raw_jl;

/*
 * Open nvJitLink as fdlink does: FDLINK_NVJITLINK alone when set, else the usual names, then the
 * toolkit's copy (fdlink's FDLINK_CUDA_ROOT/lib64, then CMake's CUDAToolkit_LIBRARY_DIR).
 */
static int raw_load(raw_jl *jl, char *why, size_t why_size)
{
    memset(jl, 0, sizeof *jl);
    const char *override = getenv("FDLINK_NVJITLINK");
    const char *names[] = {"libnvJitLink.so.13", "libnvJitLink.so", FDL_BENCH_NVJITLINK_ROOT,
                           FDL_BENCH_NVJITLINK_LIBDIR, NULL};
    if (override && override[0]) {
        names[0] = override;
        names[1] = NULL;
    }
    for (size_t i = 0; names[i] && !jl->handle; i++)
        jl->handle = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!jl->handle) {
        const char *e = dlerror();
        snprintf(why, why_size, "cannot open libnvJitLink: %s", e ? e : "not found");
        return -1;
    }
    static const char *const symbols[] = {
        "nvJitLinkCreate", "nvJitLinkDestroy", "nvJitLinkAddData", "nvJitLinkComplete",
        "nvJitLinkGetLinkedCubinSize", "nvJitLinkGetLinkedCubin"};
    void *found[6];
    for (size_t i = 0; i < 6; i++) {
        found[i] = dlsym(jl->handle, symbols[i]);
        if (!found[i]) {
            snprintf(why, why_size, "libnvJitLink lacks %s", symbols[i]);
            return -1;
        }
    }
    /* POSIX guarantees that a data pointer from dlsym can hold a function pointer */
    memcpy(&jl->create, &found[0], sizeof found[0]);
    memcpy(&jl->destroy, &found[1], sizeof found[1]);
    memcpy(&jl->add_data, &found[2], sizeof found[2]);
    memcpy(&jl->complete, &found[3], sizeof found[3]);
    memcpy(&jl->cubin_size, &found[4], sizeof found[4]);
    memcpy(&jl->cubin, &found[5], sizeof found[5]);
    Dl_info info;
    if (dladdr(found[0], &info) && info.dli_fname)
        fdl__strlcpy(jl->path, info.dli_fname, sizeof jl->path);
    return 0;
}

int bench_nvjitlink_path(char *out, size_t size)
{
    raw_jl jl;
    char why[512];
    if (raw_load(&jl, why, sizeof why) != 0)
        return -1;
    fdl__strlcpy(out, jl.path, size);
    return 0;
}

typedef struct input {
    char *data;
    size_t size;
    const char *name;
} input;

typedef struct inputs {
    int lto;
    input in[2]; /* caller, functions */
} inputs;

static const char *arch_option(void)
{
    return "-arch=" FDL_BENCH_LINK_ARCH;
}

/* One raw link; the cubin (malloc'ed) goes to @p cubin. */
static int raw_link(const raw_jl *jl, const inputs *ins, unsigned char **cubin, size_t *size,
                    char *why, size_t why_size)
{
    const char *options[2] = {arch_option(), "-lto"};
    nvJitLinkHandle h = NULL;
    *cubin = NULL;
    *size = 0;
    nvJitLinkResult r = jl->create(&h, ins->lto ? 2 : 1, options);
    for (int i = 0; r == NVJITLINK_SUCCESS && i < 2; i++)
        r = jl->add_data(h, ins->lto ? NVJITLINK_INPUT_LTOIR : NVJITLINK_INPUT_PTX,
                         ins->in[i].data, ins->in[i].size, ins->in[i].name);
    if (r == NVJITLINK_SUCCESS)
        r = jl->complete(h);
    if (r == NVJITLINK_SUCCESS)
        r = jl->cubin_size(h, size);
    if (r == NVJITLINK_SUCCESS && !(*cubin = malloc(*size ? *size : 1)))
        r = NVJITLINK_ERROR_INTERNAL;
    if (r == NVJITLINK_SUCCESS)
        r = jl->cubin(h, *cubin);
    if (h)
        jl->destroy(&h);
    if (r != NVJITLINK_SUCCESS) {
        free(*cubin);
        *cubin = NULL;
        snprintf(why, why_size, "raw nvJitLink link failed: nvJitLinkResult %d", (int)r);
        return -1;
    }
    return 0;
}

/* One fdlink link (with @p decls checked when not NULL; in a child process with @p isolate;
 * with the cache on in @p cache_dir when not NULL, else off). */
static int fdlink_link(const inputs *ins, const fdl_decls *decls, int isolate,
                       const char *cache_dir, fdl_link **out, fdl_error *err)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = FDL_BENCH_LINK_ARCH;
    opts.isolate = isolate;
    /* off: the link's own cost (benchmark 7 measures the cache); on: the check's result
     * remembered while the link itself misses (the later links' second measure) */
    opts.cache = cache_dir ? FDL_CACHE_ON : FDL_CACHE_OFF;
    opts.cache_dir = cache_dir;
    int rc = fdl_link_create(out, &opts, err);
    if (rc == FDL_OK && decls)
        rc = fdl_link_add_decls(*out, decls, err);
    for (int i = 0; rc == FDL_OK && i < 2; i++)
        rc = fdl_link_add_data(*out, ins->in[i].data, ins->in[i].size, ins->in[i].name,
                               FDL_KIND_AUTO, err);
    if (rc == FDL_OK)
        rc = fdl_link_complete(*out, err);
    return rc;
}

static void inputs_free(inputs *ins)
{
    for (int i = 0; i < 2; i++)
        free(ins->in[i].data);
    memset(ins, 0, sizeof *ins);
}

static int inputs_read(inputs *ins, int lto, fdl_error *err)
{
    memset(ins, 0, sizeof *ins);
    ins->lto = lto;
    const char *paths[2] = {lto ? FDL_BENCH_LINK_CALLERS_LTOIR : FDL_BENCH_LINK_CALLERS_PTX,
                            lto ? FDL_BENCH_LINK_FUNCTIONS_LTOIR : FDL_BENCH_LINK_FUNCTIONS_PTX};
    ins->in[0].name = lto ? "link16_callers.ltoir" : "link16_callers.ptx";
    ins->in[1].name = lto ? "link16_functions.ltoir" : "link16_functions.ptx";
    for (int i = 0; i < 2; i++) {
        int rc = fdl__read_file(paths[i], &ins->in[i].data, &ins->in[i].size, err);
        if (rc != FDL_OK) {
            inputs_free(ins);
            return rc;
        }
    }
    return FDL_OK;
}

/* ---- the child: one first link in a fresh process ------------------------------------------ */

int bench_link_child(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[2], "ptx") != 0 && strcmp(argv[2], "ltoir") != 0) ||
        (strcmp(argv[3], "raw") != 0 && strcmp(argv[3], "fdlink") != 0 &&
         strcmp(argv[3], "checked") != 0)) {
        fprintf(stderr, "usage: fdlink-bench --child-link ptx|ltoir raw|fdlink|checked\n");
        return 2;
    }
    int lto = strcmp(argv[2], "ltoir") == 0, raw = strcmp(argv[3], "raw") == 0;
    int checked = strcmp(argv[3], "checked") == 0;
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    inputs ins;
    if (inputs_read(&ins, lto, &err) != FDL_OK) {
        fprintf(stderr, "fdlink-bench: error: %s\n", err.message);
        return 1;
    }
    int status = 1;
    unsigned char *cubin = NULL;
    fdl_link *link = NULL;
    size_t size = 0;
    char why[512];
    raw_jl jl;
    memset(&jl, 0, sizeof jl);
    double t0 = bench_now_ms(), t1 = 0, t2 = 0;
    if (raw) {
        if (raw_load(&jl, why, sizeof why) != 0) {
            fprintf(stderr, "fdlink-bench: error: %s\n", why);
            goto cleanup;
        }
        t1 = bench_now_ms();
        if (raw_link(&jl, &ins, &cubin, &size, why, sizeof why) != 0) {
            fprintf(stderr, "fdlink-bench: error: %s\n", why);
            goto cleanup;
        }
        t2 = bench_now_ms();
    } else {
        unsigned major, minor;
        if (fdl_link_backend_version(&major, &minor, &err) != FDL_OK) {
            fprintf(stderr, "fdlink-bench: error: %s\n", err.message);
            goto cleanup;
        }
        if (checked && fdl_decls_load(&decls, FDL_BENCH_LINK_DECL, &err) != FDL_OK) {
            fprintf(stderr, "fdlink-bench: error: %s\n", err.message);
            goto cleanup;
        }
        t1 = bench_now_ms();
        if (fdlink_link(&ins, decls, 0, NULL, &link, &err) != FDL_OK) {
            fprintf(stderr, "fdlink-bench: error: %s\n", err.message);
            goto cleanup;
        }
        t2 = bench_now_ms();
        const void *c = fdl_link_cubin(link, &size);
        cubin = malloc(size ? size : 1);
        if (!cubin)
            goto cleanup;
        memcpy(cubin, c, size);
    }
    printf("first-link %.6f %.6f %zu %016" PRIx64 "\n", t2 - t0, t1 - t0, size,
           fdl__hash((const char *)cubin, size));
    status = 0;
cleanup:
    free(cubin);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    inputs_free(&ins);
    return status;
}

/* ---- the section ------------------------------------------------------------------------------ */

enum { M_RAW = 0, M_FDLINK, M_CHECKED, M_ISOLATED, M_CACHED, M_CACHED_CHECKED, NMETHODS };

static const char *const method_names[NMETHODS] = {
    "raw nvJitLink", "fdlink", "fdlink + declaration check", "fdlink, isolated link",
    "fdlink, cache on", "fdlink + declaration check, cache on"};

/* The methods with the cache on, whose link's own entry is dropped before each sample. */
static int cached_method(int m)
{
    return m == M_CACHED || m == M_CACHED_CHECKED;
}

static int checked_method(int m)
{
    return m == M_CHECKED || m == M_CACHED_CHECKED;
}

/*
 * After a link of a cache-on method: it must have missed (and so run nvJitLink); its own entry
 * is then dropped from memory and @p dir, so that the next sample misses too, while the check's
 * entry stays. @return 0, or -1 (reported) when the link did not miss.
 */
static int drop_link_entry(bench_section *s, const char *kind, int m, const fdl_link *link,
                           const char *dir)
{
    const char *hex = NULL;
    fdl_cache_result r = fdl_link_cache_result(link, &hex);
    unsigned char key[FDL__CACHE_KEY_SIZE];
    if (r != FDL_CACHE_MISS || !hex || !fdl__cache_key_from_hex(hex, key)) {
        bench_fail(s, "%s: %s was no miss of the cache (%s): the link did not run", kind,
                   method_names[m], fdl_cache_result_name(r));
        return -1;
    }
    fdl__cache_forget(dir, FDL__CACHE_LINK, key);
    return 0;
}

/* Check that @p cubin defines the kernel and (from PTX) every function. */
static int check_cubin(bench_section *s, const char *kind, const void *cubin, size_t size,
                       int lto, size_t *functions)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_inspection *ins = NULL;
    int rc = 1;
    if (fdl_inspect_data(&ins, cubin, size, "linked.cubin", FDL_KIND_CUBIN, &err) != FDL_OK) {
        bench_fail_err(s, "inspecting the linked cubin", &err);
        goto cleanup;
    }
    int kernel = 0;
    *functions = 0;
    for (size_t i = 0; i < fdl_inspection_count(ins); i++) {
        const fdl_image *img = fdl_inspection_image(ins, i);
        for (size_t j = 0; img && j < img->nsymbols; j++) {
            const fdl_symbol *sym = &img->symbols[j];
            if (!sym->defined)
                continue;
            if (sym->kind == FDL_SYMBOL_KERNEL && strcmp(sym->name, "link_chain") == 0)
                kernel = 1;
            if (sym->kind == FDL_SYMBOL_FUNCTION && strncmp(sym->name, "link_f", 6) == 0)
                (*functions)++;
        }
    }
    if (!kernel) {
        bench_fail(s, "%s: the linked cubin does not define the kernel link_chain", kind);
        goto cleanup;
    }
    if (!lto && *functions != NFUNCS) {
        bench_fail(s, "%s: the linked cubin defines %zu of the %d functions", kind, *functions,
                   NFUNCS);
        goto cleanup;
    }
    rc = 0;
cleanup:
    fdl_inspection_destroy(ins);
    return rc;
}

/* Parse a child's "first-link TOTAL LOAD SIZE HASH" line. */
static int parse_child(const char *out, double *total, double *load, size_t *size,
                       uint64_t *hash)
{
    const char *p = strstr(out, "first-link ");
    if (!p)
        return -1;
    char *end = NULL;
    p += strlen("first-link ");
    *total = strtod(p, &end);
    if (end == p)
        return -1;
    p = end;
    *load = strtod(p, &end);
    if (end == p)
        return -1;
    p = end;
    unsigned long long sz = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    p = end;
    *size = (size_t)sz;
    *hash = strtoull(p, &end, 16);
    return end == p ? -1 : 0;
}

/* One kind (PTX or LTO-IR): first links in child processes, then later links here. */
static int bench_kind(bench_ctx *ctx, bench_section *s, int lto, const raw_jl *jl,
                      const fdl_decls *decls)
{
    const char *kind = lto ? "LTO-IR" : "PTX";
    const size_t firsts = bench_reps(ctx, 3, 9), reps = bench_reps(ctx, 3, 21);
    fdl_error err = FDL_ERROR_INIT;
    inputs ins;
    memset(&ins, 0, sizeof ins);
    unsigned char *raw_cubin = NULL;
    size_t raw_size = 0;
    fdl_link *link = NULL;
    char tmpl[] = "/tmp/fdlink-bench-linkcost.XXXXXX";
    char *dir = mkdtemp(tmpl);
    /* first links: raw, fdlink, and fdlink with the declaration check */
    enum { NFIRST = 3 };
    double *first = calloc(NFIRST * firsts, sizeof *first);
    double *load = calloc(NFIRST * firsts, sizeof *load);
    double *later = calloc(NMETHODS * reps, sizeof *later);
    int rc = 1;
    char why[1024];
    if (!first || !load || !later || !dir) {
        bench_fail(s, "out of memory or no temporary directory");
        goto cleanup;
    }
    if (inputs_read(&ins, lto, &err) != FDL_OK) {
        bench_fail_err(s, "reading the link inputs", &err);
        goto cleanup;
    }

    /* the reference: one raw link, whose cubin every other link must reproduce */
    if (raw_link(jl, &ins, &raw_cubin, &raw_size, why, sizeof why) != 0) {
        bench_fail(s, "%s: %s", kind, why);
        goto cleanup;
    }
    uint64_t raw_hash = fdl__hash((const char *)raw_cubin, raw_size);
    size_t functions = 0;
    if (check_cubin(s, kind, raw_cubin, raw_size, lto, &functions))
        goto cleanup;

    /* first links: one fresh process per sample, raw and fdlink taking turns */
    static const char *const env[] = {"CUDA_CACHE_DISABLE=1", "FDLINK_CACHE=0", NULL};
    char order[256] = "";
    size_t order_len = 0;
    for (size_t r = 0; r < firsts; r++)
        for (int j = 0; j < NFIRST; j++) {
            int m = (int)((j + r) % NFIRST); /* M_RAW, M_FDLINK, M_CHECKED */
            char *argv[] = {(char *)ctx->self, "--child-link", lto ? "ltoir" : "ptx",
                            m == M_RAW ? "raw" : m == M_FDLINK ? "fdlink" : "checked", NULL};
            char out[2048];
            int status = 0;
            double wall = 0, total = 0, ld = 0;
            size_t size = 0;
            uint64_t hash = 0;
            if (bench_run_process(argv, env, out, sizeof out, &status, &wall) != 0 ||
                status != 0 || parse_child(out, &total, &ld, &size, &hash) != 0) {
                bench_fail(s, "%s: first-link child (%s) failed (exit status %d): %s", kind,
                           method_names[m], status, out);
                goto cleanup;
            }
            if (size != raw_size || hash != raw_hash) {
                bench_fail(s, "%s: the first-link child (%s) made a different cubin (%zu bytes, "
                              "hash %016" PRIx64 "; expected %zu bytes, hash %016" PRIx64 ")",
                           kind, method_names[m], size, hash, raw_size, raw_hash);
                goto cleanup;
            }
            first[m * firsts + r] = total;
            load[m * firsts + r] = ld;
            if (order_len + 16 < sizeof order)
                order_len += (size_t)snprintf(order + order_len, sizeof order - order_len,
                                              "%s%.1f", order_len ? " " : "", total);
        }

    /* later links: a warm-up of each method (checking its cubin), then the samples */
    for (int m = 0; m < NMETHODS; m++) {
        if (m == M_RAW)
            continue;
        if (fdlink_link(&ins, checked_method(m) ? decls : NULL, m == M_ISOLATED,
                        cached_method(m) ? dir : NULL, &link, &err) != FDL_OK) {
            bench_fail_err(s, method_names[m], &err);
            goto cleanup;
        }
        if (cached_method(m) && drop_link_entry(s, kind, m, link, dir) != 0)
            goto cleanup;
        size_t size = 0;
        const void *cubin = fdl_link_cubin(link, &size);
        if (!cubin || size != raw_size || memcmp(cubin, raw_cubin, size) != 0) {
            bench_fail(s, "%s: %s made a cubin that differs from raw nvJitLink's (%zu bytes, "
                          "raw %zu)", kind, method_names[m], size, raw_size);
            goto cleanup;
        }
        fdl_link_destroy(link);
        link = NULL;
    }
    for (size_t r = 0; r < reps; r++)
        for (int j = 0; j < NMETHODS; j++) {
            int m = (int)((j + r) % NMETHODS);
            double t0 = bench_now_ms(), t1;
            if (m == M_RAW) {
                unsigned char *cubin = NULL;
                size_t size = 0;
                if (raw_link(jl, &ins, &cubin, &size, why, sizeof why) != 0) {
                    bench_fail(s, "%s: %s", kind, why);
                    goto cleanup;
                }
                t1 = bench_now_ms();
                int same = size == raw_size && memcmp(cubin, raw_cubin, size) == 0;
                free(cubin);
                if (!same) {
                    bench_fail(s, "%s: raw nvJitLink made a different cubin on repetition %zu",
                               kind, r);
                    goto cleanup;
                }
            } else {
                if (fdlink_link(&ins, checked_method(m) ? decls : NULL, m == M_ISOLATED,
                                cached_method(m) ? dir : NULL, &link, &err) != FDL_OK) {
                    bench_fail_err(s, method_names[m], &err);
                    goto cleanup;
                }
                t1 = bench_now_ms();
                if (cached_method(m) && drop_link_entry(s, kind, m, link, dir) != 0)
                    goto cleanup;
                fdl_link_destroy(link);
                link = NULL;
            }
            later[m * reps + r] = t1 - t0;
        }

    char name[96];
    for (int m = 0; m < NFIRST; m++) {
        snprintf(name, sizeof name, "%s: first link in a process, %s", kind, method_names[m]);
        if (!bench_figure_add(s, name, "ms", &first[m * firsts], firsts))
            goto cleanup;
    }
    for (int m = 0; m < NMETHODS; m++) {
        snprintf(name, sizeof name, "%s: later links, %s", kind, method_names[m]);
        if (!bench_figure_add(s, name, "ms", &later[m * reps], reps))
            goto cleanup;
    }
    snprintf(name, sizeof name, "%s: fdlink / raw, first link", kind);
    bench_ratio_add(s, name, &first[M_FDLINK * firsts], &first[M_RAW * firsts], firsts,
                    BENCH_GOAL_LE, 1.05);
    snprintf(name, sizeof name, "%s: fdlink / raw, later links", kind);
    bench_ratio_add(s, name, &later[M_FDLINK * reps], &later[M_RAW * reps], reps,
                    BENCH_GOAL_LE, 1.05);
    snprintf(name, sizeof name, "%s: fdlink + declaration check / raw, later links", kind);
    bench_ratio_add(s, name, &later[M_CHECKED * reps], &later[M_RAW * reps], reps,
                    BENCH_GOAL_NONE, 0);
    /* issue 32: the check beside the link (its nvJitLink run on a thread of the link's own):
     * the checked link within 1.1x of the link without it, first and later links */
    snprintf(name, sizeof name, "%s: fdlink + declaration check / fdlink, first link", kind);
    bench_ratio_add(s, name, &first[M_CHECKED * firsts], &first[M_FDLINK * firsts], firsts,
                    BENCH_GOAL_LE, 1.1);
    /* later links with the cache off run the check's -O0 link every time (FDL_CACHE_OFF: no
     * result remembered, memory included): a figure, not the goal's measure */
    snprintf(name, sizeof name, "%s: fdlink + declaration check / fdlink, later links, cache off",
             kind);
    bench_ratio_add(s, name, &later[M_CHECKED * reps], &later[M_FDLINK * reps], reps,
                    BENCH_GOAL_NONE, 0);
    /* the goal's: later links whose own result is not in the cache (so nvJitLink links) while
     * the check's result for the unchanged inputs is */
    snprintf(name, sizeof name, "%s: fdlink + declaration check / fdlink, later links", kind);
    bench_ratio_add(s, name, &later[M_CACHED_CHECKED * reps], &later[M_CACHED * reps], reps,
                    BENCH_GOAL_LE, 1.1);
    snprintf(name, sizeof name, "%s: fdlink, cache on, link missing / cache off, later links",
             kind);
    bench_ratio_add(s, name, &later[M_CACHED * reps], &later[M_FDLINK * reps], reps,
                    BENCH_GOAL_NONE, 0);
    /* the isolated link (a fork, the link in the child, the cubin back through a pipe) against
     * the in-process link, both misses of the cache (a hit never links) */
    snprintf(name, sizeof name, "%s: isolated / in-process fdlink, later links", kind);
    bench_ratio_add(s, name, &later[M_ISOLATED * reps], &later[M_FDLINK * reps], reps,
                    BENCH_GOAL_NONE, 0);
    bench_stats lr = bench_summarise(&load[M_RAW * firsts], firsts);
    bench_stats lf = bench_summarise(&load[M_FDLINK * firsts], firsts);
    bench_note(s, "%s: first links, of which loading nvJitLink (median): raw %.1f ms, fdlink "
                  "%.1f ms; in spawn order (ms): %s",
               kind, lr.median, lf.median, order);
    /* a cache across processes would show as a slow first process and fast later ones */
    bench_stats all = bench_summarise(first, 2 * firsts);
    if (first[0] > 3.0 * all.median || all.min * 3.0 < all.median)
        bench_note(s, "%s: first links vary more than threefold across processes (min %.1f, "
                      "median %.1f, max %.1f ms): look for a cache across processes",
                   kind, all.min, all.median, all.max);
    bench_note(s, "%s: %d foreign functions + caller; raw and fdlink cubins byte-identical "
                  "(%zu bytes) in this process and in all %zu child processes; %zu of the "
                  "functions left as symbols",
               kind, NFUNCS, raw_size, 2 * firsts, functions);
    rc = 0;
cleanup:
    fdl_link_destroy(link);
    if (dir) {
        fdl_cache_clear(dir, NULL, NULL);
        rmdir(dir);
    }
    free(raw_cubin);
    free(first);
    free(load);
    free(later);
    inputs_free(&ins);
    return rc;
}

void bench_link(bench_ctx *ctx, bench_section *s)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL;
    raw_jl jl;
    char why[512];
    unsigned major = 0, minor = 0;
    if (fdl_link_backend_version(&major, &minor, &err) != FDL_OK) {
        bench_skip(s, "nvJitLink cannot be loaded: %s", err.message);
        return;
    }
    if (raw_load(&jl, why, sizeof why) != 0) {
        bench_fail(s, "%s", why);
        return;
    }
    if (fdl_decls_load(&decls, FDL_BENCH_LINK_DECL, &err) != FDL_OK) {
        bench_fail_err(s, "declarations", &err);
        return;
    }
    if (bench_kind(ctx, s, 0, &jl, decls) == 0 && bench_kind(ctx, s, 1, &jl, decls) == 0) {
        s->verified = 1;
        s->status = BENCH_OK;
        bench_note(s, "nvJitLink %u.%u (%s) for %s; child processes run with "
                      "CUDA_CACHE_DISABLE=1, which turns off nvJitLink's own cache across processes "
                      "(it has one: -no-cache or CUDA_CACHE_DISABLE=1 turn it off; benchmark 7 "
                      "(a') measures it), so every first link here is a real one",
                   major, minor, jl.path, FDL_BENCH_LINK_ARCH);
    }
    fdl_decls_destroy(decls);
}
