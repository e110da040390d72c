/*
 * Benchmark 6: time to first result, from process start to a verified result.
 *
 * Two programs built from ttfr_app.c do the same work, multiply_vectors on 2^20 elements with
 * every element verified: one carries its cubin (linked at build time from the PTX of
 * device/src and embedded with fdlink_embed), the other links that PTX at run time through
 * fdl_link (declarations checked, nvJitLink). Each sample spawns one program (posix_spawn) and
 * waits for it to exit: the wall time covers exec, dynamic loading, driver initialisation,
 * the context, loading (and linking) the code, the work, the verification and the process's
 * teardown. The programs also report the time from main() to their verified result. The two
 * alternate, after one untimed run of each (to warm the page cache). Children run with
 * CUDA_CACHE_DISABLE=1, although nothing here is compiled by the driver's JIT, and with
 * FDLINK_CACHE=0: every run links afresh (benchmark 7 runs them with a warm link cache).
 * Verified: every run exits 0 having verified all 2^20 products.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { P_EMBEDDED = 0, P_RUNTIME, NPROGRAMS };

static const char *const program_names[NPROGRAMS] = {"embedded cubin", "PTX linked at run time"};
static const char *const program_paths[NPROGRAMS] = {FDL_BENCH_TTFR_EMBEDDED,
                                                     FDL_BENCH_TTFR_RUNTIME};

int bench_ttfr_run(bench_section *s, const char *program, const char *const *env, double *wall,
                   double *inner, char *why, size_t why_size)
{
    char *argv[] = {(char *)program, NULL};
    char out[4096];
    int status = 0;
    if (bench_run_process(argv, env, out, sizeof out, &status, wall) != 0) {
        bench_fail(s, "%s", out);
        return 1;
    }
    if (status == FDL_EXIT_SKIP) {
        char *nl = strchr(out, '\n');
        if (nl)
            *nl = '\0';
        if (why && why_size)
            snprintf(why, why_size, "%s", out);
        return FDL_EXIT_SKIP;
    }
    const char *verified = strstr(out, ": verified ");
    const char *semi = verified ? strstr(verified, "; ") : NULL;
    if (status != 0 || !semi || !strstr(semi, " ms from main to the verified result")) {
        bench_fail(s, "%s exited with status %d: %s", program, status, out);
        return 1;
    }
    *inner = strtod(semi + 2, NULL);
    return 0;
}

/* Run program @p p once, linking afresh: 0 verified, 77 skipped, else failed. */
static int run_once(bench_section *s, int p, double *wall, double *inner)
{
    /* a cold start: benchmark 7 measures the same programs with a warm link cache */
    static const char *const env[] = {"CUDA_CACHE_DISABLE=1", "FDLINK_CACHE=0", NULL};
    char why[512];
    int rc = bench_ttfr_run(s, program_paths[p], env, wall, inner, why, sizeof why);
    if (rc == FDL_EXIT_SKIP)
        bench_skip(s, "%s", why);
    return rc;
}

void bench_ttfr(bench_ctx *ctx, bench_section *s)
{
    const size_t reps = bench_reps(ctx, 2, 10);
    double *wall = calloc(NPROGRAMS * reps, sizeof *wall);
    double *inner = calloc(NPROGRAMS * reps, sizeof *inner);
    if (!wall || !inner) {
        bench_fail(s, "out of memory");
        goto cleanup;
    }
    double w, in;
    for (int p = 0; p < NPROGRAMS; p++)
        if (run_once(s, p, &w, &in) != 0)
            goto cleanup;
    for (size_t r = 0; r < reps; r++)
        for (int j = 0; j < NPROGRAMS; j++) {
            int p = (int)((j + r) % NPROGRAMS);
            if (run_once(s, p, &wall[p * reps + r], &inner[p * reps + r]) != 0)
                goto cleanup;
        }
    s->verified = 1;
    bench_note(s, "verified: each of the %zu runs exited 0 after checking all 2^20 products",
               NPROGRAMS * (reps + 1));
    char name[96];
    for (int p = 0; p < NPROGRAMS; p++) {
        snprintf(name, sizeof name, "%s: process start to exit", program_names[p]);
        if (!bench_figure_add(s, name, "ms", &wall[p * reps], reps))
            goto cleanup;
    }
    for (int p = 0; p < NPROGRAMS; p++) {
        snprintf(name, sizeof name, "%s: main() to verified result", program_names[p]);
        if (!bench_figure_add(s, name, "ms", &inner[p * reps], reps))
            goto cleanup;
    }
    bench_ratio_add(s, "run-time link / embedded, process start to exit", &wall[P_RUNTIME * reps],
                    &wall[P_EMBEDDED * reps], reps, BENCH_GOAL_NONE, 0);
    bench_figure_derived(s, "cost of linking at run time (difference of medians)", "ms",
                         s->figures[P_RUNTIME].st.median - s->figures[P_EMBEDDED].st.median);
    bench_note(s, "each sample is one process, spawned and reaped by the runner (wall clock); "
                  "the programs alternate after one untimed run each");
    s->status = BENCH_OK;
cleanup:
    (void)ctx;
    free(wall);
    free(inner);
}
