/*
 * Benchmark 3: what a launch costs through fdlink, against raw cuLaunchKernel of the same kernel
 * in the same process (issue 4's goal: a prepared launch within 10% of raw).
 *
 * For each kernel of kernels.cu (no arguments; four arguments) and each method (raw
 * cuLaunchKernel through the driver's own entry point, fdl_launch_run of a prepared launch,
 * fdl_kernel_launch_ex checking geometry and arguments every time), after a warm-up: repetitions
 * of N (100k) one-thread launches on the default stream and one synchronisation, timed on the
 * host; the per-launch figure is the repetition's time over N. Methods alternate within each
 * repetition, in a rotating order, so that drift (clocks, queue state) is shared. Ratios are
 * taken per repetition. Verified: every launch returned success and the device reported no
 * error at the synchronisation after each repetition.
 *
 * The raw baseline calls cuLaunchKernel through the same table of driver entry points fdlink
 * uses (host/src/driver.h), with the CUfunction of fdlink's kernel (fdl__kernel_function), so
 * both sides pay the same indirection.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "driver.h" /* the driver's entry points, for the raw baseline */
#include "internal.h"

#define NMETHODS 3
#define NKERNELS 2

static const char *const method_names[NMETHODS] = {"raw cuLaunchKernel", "prepared",
                                                   "checked"};
static const char *const kernel_names[NKERNELS] = {"empty", "empty_args"};

typedef struct launch_bench {
    fdl_device *dev;
    const fdl__cuda *cu;
    fdl_kernel *kernel[NKERNELS];
    CUfunction fn[NKERNELS];
    fdl_launch *prepared[NKERNELS];
    fdl_arg args[4];
    void *params[4];
    size_t nargs[NKERNELS];
    fdl_launch_config cfg;
    fdl_error err;
    const char *what; /* the failing step */
} launch_bench;

/* @p n launches of kernel @p k by method @p m, then one synchronisation; seconds. */
static int run(launch_bench *b, int m, int k, long n, double *seconds)
{
    uint64_t t0 = fdl__now_ns();
    if (m == 0) {
        void **params = b->nargs[k] ? b->params : NULL;
        for (long i = 0; i < n; i++) {
            CUresult r = b->cu->launch_kernel(b->fn[k], 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
            if (r != CUDA_SUCCESS) {
                fdl__cu_error(&b->err, b->cu, r, "cuLaunchKernel", NULL);
                b->what = "raw launch";
                return 1;
            }
        }
    } else if (m == 1) {
        for (long i = 0; i < n; i++)
            if (fdl_launch_run(b->prepared[k], &b->err) != FDL_OK) {
                b->what = "prepared launch";
                return 1;
            }
    } else {
        for (long i = 0; i < n; i++)
            if (fdl_kernel_launch_ex(b->kernel[k], &b->cfg, b->nargs[k] ? b->args : NULL,
                                     b->nargs[k], &b->err) != FDL_OK) {
                b->what = "checked launch";
                return 1;
            }
    }
    if (fdl_device_synchronize(b->dev, &b->err) != FDL_OK) {
        b->what = "synchronize";
        return 1;
    }
    *seconds = (double)(fdl__now_ns() - t0) * 1e-9;
    return 0;
}

void bench_launch(bench_ctx *ctx, bench_section *s)
{
    const long launches = ctx->launches > 0 ? ctx->launches : ctx->quick ? 2000 : 100000;
    const size_t reps = bench_reps(ctx, 3, 7);
    const long warmup = ctx->quick ? 200 : 2000;
    fdl_module *mod = NULL;
    double *samples = NULL;
    launch_bench b;
    memset(&b, 0, sizeof b);
    fdl_error_clear(&b.err);
    b.dev = ctx->dev;

    if (fdl__cuda_get(&b.cu, &b.err) != FDL_OK) {
        bench_fail_err(s, "driver", &b.err);
        goto cleanup;
    }
    if (fdl_module_load_file(&mod, b.dev, FDL_BENCH_KERNELS, &b.err) != FDL_OK) {
        bench_fail_err(s, "loading the launch kernels", &b.err);
        goto cleanup;
    }
    /* empty_args(float *out, const float *a, const float *b, int n): never dereferenced */
    static uint64_t out_p, a_p, b_p;
    static int n_arg = 1;
    out_p = a_p = b_p = 0;
    b.args[0] = FDL_ARG(out_p);
    b.args[1] = FDL_ARG(a_p);
    b.args[2] = FDL_ARG(b_p);
    b.args[3] = FDL_ARG(n_arg);
    for (int i = 0; i < 4; i++)
        b.params[i] = (void *)(uintptr_t)b.args[i].value;
    b.nargs[0] = 0;
    b.nargs[1] = 4;
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    b.cfg = cfg;
    for (int k = 0; k < NKERNELS; k++) {
        if (fdl_module_get_kernel(&b.kernel[k], mod, kernel_names[k], &b.err) != FDL_OK ||
            fdl_launch_create(&b.prepared[k], b.kernel[k], &b.cfg, b.nargs[k] ? b.args : NULL,
                              b.nargs[k], &b.err) != FDL_OK) {
            bench_fail_err(s, kernel_names[k], &b.err);
            goto cleanup;
        }
        b.fn[k] = fdl__kernel_function(b.kernel[k]);
    }

    samples = calloc(NKERNELS * NMETHODS * reps, sizeof *samples);
    if (!samples) {
        bench_fail(s, "out of memory");
        goto cleanup;
    }
#define SAMPLE(k, m, r) samples[((size_t)(k) * NMETHODS + (size_t)(m)) * reps + (r)]
    double seconds;
    for (int k = 0; k < NKERNELS; k++)
        for (int m = 0; m < NMETHODS; m++)
            if (warmup && run(&b, m, k, warmup, &seconds)) {
                bench_fail_err(s, b.what, &b.err);
                goto cleanup;
            }
    for (size_t r = 0; r < reps; r++)
        for (int k = 0; k < NKERNELS; k++)
            for (int j = 0; j < NMETHODS; j++) {
                int m = (int)((j + r) % NMETHODS);
                if (run(&b, m, k, launches, &seconds)) {
                    bench_fail_err(s, b.what, &b.err);
                    goto cleanup;
                }
                SAMPLE(k, m, r) = seconds / (double)launches * 1e6;
            }
    s->verified = 1;
    bench_note(s, "verified: every launch succeeded and each repetition synchronised without "
                  "error");
    bench_note(s, "%ld one-thread launches per sample on the default stream, then one "
                  "synchronisation; host wall clock",
               launches);

    for (int k = 0; k < NKERNELS; k++)
        for (int m = 0; m < NMETHODS; m++) {
            char name[96];
            snprintf(name, sizeof name, "%s: %s", kernel_names[k], method_names[m]);
            if (!bench_figure_add(s, name, "us/launch", &SAMPLE(k, m, 0), reps))
                goto cleanup;
        }
    bench_ratio_add(s, "empty: prepared / raw", &SAMPLE(0, 1, 0), &SAMPLE(0, 0, 0), reps,
                    BENCH_GOAL_LE, 1.10);
    bench_ratio_add(s, "empty_args (4 arguments): prepared / raw", &SAMPLE(1, 1, 0),
                    &SAMPLE(1, 0, 0), reps, BENCH_GOAL_LE, 1.10);
    bench_ratio_add(s, "empty: checked / raw", &SAMPLE(0, 2, 0), &SAMPLE(0, 0, 0), reps,
                    BENCH_GOAL_NONE, 0);
    bench_ratio_add(s, "empty_args (4 arguments): checked / raw", &SAMPLE(1, 2, 0),
                    &SAMPLE(1, 0, 0), reps, BENCH_GOAL_NONE, 0);
#undef SAMPLE
    if (s->status != BENCH_FAILED)
        s->status = BENCH_OK;
cleanup:
    free(samples);
    fdl_module_destroy(mod); /* and with it the prepared launches */
}
