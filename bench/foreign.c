/*
 * Benchmark 1: what a foreign call costs in compute-bound code.
 *
 * The kernels of device/fma_callers.cu run acc = acc * x + 1 `iters` (256) times per element
 * over n (2^24) elements:
 *   (a) fma_call, linked from PTX (caller PTX + fma_step PTX, no LTO): a real call per step;
 *   (b) fma_call, linked from LTO-IR (caller and fma_step LTO-IR, -lto): the call inlined;
 *   (c) fma_inline, the same arithmetic written inline, from the PTX link (nvcc's own code);
 *   (c') fma_inline from the LTO link, to tell code generation apart from the call.
 * All links run here, at run time, through fdl_link for the device's architecture. Each
 * variant is a prepared launch timed with events: a sample is `reps` back-to-back launches
 * (reps chosen so that a sample lasts about 20 ms), and the variants take turns within each
 * repetition, in a rotating order, so that clock drift is shared; ratios are taken per
 * repetition. Verified: the four outputs are bitwise identical, they match a host reference
 * (fmaf) on a sample of elements, no device-side status was recorded, and the post-LTO PTX of
 * (b) has no call to fma_step left.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define NVARIANTS 4
#define ITERS 256

enum { VAR_PTX = 0, VAR_LTO, VAR_INLINE, VAR_INLINE_LTO };

static const char *const variant_names[NVARIANTS] = {
    "(a) call, PTX-linked", "(b) call, LTO-linked", "(c) inline",
    "(c') inline, LTO-linked module"};

typedef struct foreign {
    fdl_launch *launch[NVARIANTS];
} foreign;

typedef struct work {
    fdl_launch *launch;
} work;

static int run_launch(void *arg, fdl_error *err)
{
    return fdl_launch_run(((work *)arg)->launch, err);
}

/* Link @p caller and @p step (PTX or LTO-IR) for @p arch. */
static int link_pair(bench_section *s, fdl_link **out, const char *arch, int lto,
                     const char *caller, const char *step)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = arch;
    opts.backend = FDL_BACKEND_NVJITLINK;
    opts.lto = lto ? FDL_LTO_ON : FDL_LTO_OFF;
    opts.emit_ptx = lto; /* to check that the call was inlined */
    if (fdl_link_create(out, &opts, &err) != FDL_OK ||
        fdl_link_add_file(*out, caller, FDL_KIND_AUTO, &err) != FDL_OK ||
        fdl_link_add_file(*out, step, FDL_KIND_AUTO, &err) != FDL_OK ||
        fdl_link_complete(*out, &err) != FDL_OK)
        return bench_fail_err(s, lto ? "linking LTO-IR" : "linking PTX", &err);
    if (fdl_link_lto(*out) != lto)
        return bench_fail(s, "the %s link ran %s LTO", lto ? "LTO-IR" : "PTX",
                          lto ? "without" : "with");
    return 0;
}

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$';
}

/* Number of PTX call instructions whose target is @p name. */
static size_t count_calls(const char *ptx, const char *name)
{
    size_t count = 0, len = strlen(name);
    for (const char *p = strstr(ptx, "call"); p; p = strstr(p + 4, "call")) {
        if ((p > ptx && is_ident(p[-1])) || (p[4] != '.' && p[4] != ' ' && p[4] != '\t'))
            continue;
        const char *end = strchr(p, ';');
        if (!end)
            break;
        for (const char *q = p; q + len <= end; q++)
            if (memcmp(q, name, len) == 0 && !is_ident(q[-1]) && !is_ident(q[len])) {
                count++;
                break;
            }
    }
    return count;
}

void bench_foreign(bench_ctx *ctx, bench_section *s)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_link *link_ptx = NULL, *link_lto = NULL;
    fdl_module *mod_ptx = NULL, *mod_lto = NULL;
    fdl_buffer *xs_buf = NULL, *out_buf[NVARIANTS] = {NULL, NULL, NULL, NULL};
    fdl_event *start = NULL, *end = NULL;
    float *xs = NULL, *out[NVARIANTS] = {NULL, NULL, NULL, NULL};
    double *samples = NULL;
    foreign f;
    memset(&f, 0, sizeof f);

    const int n = ctx->quick ? 1 << 20 : 1 << 24;
    const int iters = ITERS;
    const size_t reps = bench_reps(ctx, 3, 11);
    const double target_ms = ctx->quick ? 2.0 : 20.0;
    const size_t bytes = (size_t)n * sizeof(float);
    const char *arch = fdl_device_arch(ctx->dev);

    if (link_pair(s, &link_ptx, arch, 0, FDL_BENCH_FMA_CALLERS_PTX, FDL_BENCH_FMA_STEP_PTX) ||
        link_pair(s, &link_lto, arch, 1, FDL_BENCH_FMA_CALLERS_LTOIR, FDL_BENCH_FMA_STEP_LTOIR))
        goto cleanup;
    const char *post_lto = fdl_link_ptx(link_lto, NULL);
    if (!post_lto) {
        bench_fail(s, "the LTO link kept no post-LTO PTX");
        goto cleanup;
    }
    size_t calls_left = count_calls(post_lto, "fma_step");
    if (calls_left) {
        bench_fail(s, "the post-LTO PTX still calls fma_step %zu times: LTO did not inline it",
                   calls_left);
        goto cleanup;
    }
    bench_note(s, "post-LTO PTX of (b): no call to fma_step left (inlined)");
    if (bench_load(s, &mod_ptx, ctx->dev, link_ptx, "fma (PTX link)") ||
        bench_load(s, &mod_lto, ctx->dev, link_lto, "fma (LTO link)"))
        goto cleanup;

    xs = malloc(bytes);
    for (int v = 0; v < NVARIANTS; v++)
        out[v] = malloc(bytes);
    samples = calloc(NVARIANTS * reps, sizeof *samples);
    if (!xs || !out[0] || !out[1] || !out[2] || !out[3] || !samples) {
        bench_fail(s, "out of host memory");
        goto cleanup;
    }
    /* x in [0.998, 1.002]: acc grows by about 1 per step, so every step shows in the result */
    for (int i = 0; i < n; i++)
        xs[i] = 1.0f + (float)((i % 4093) - 2046) * (1.0f / 1048576.0f);
    if (fdl_buffer_create(&xs_buf, ctx->dev, bytes, &err) != FDL_OK ||
        fdl_buffer_write(xs_buf, 0, xs, bytes, &err) != FDL_OK) {
        bench_fail_err(s, "input buffer", &err);
        goto cleanup;
    }
    static const char *const kernel_of[NVARIANTS] = {"fma_call", "fma_call", "fma_inline",
                                                     "fma_inline"};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.grid.x = (unsigned)((n + 255) / 256);
    cfg.block.x = 256;
    for (int v = 0; v < NVARIANTS; v++) {
        fdl_kernel *k = NULL;
        fdl_module *mod = v == VAR_PTX || v == VAR_INLINE ? mod_ptx : mod_lto;
        if (fdl_buffer_create(&out_buf[v], ctx->dev, bytes, &err) != FDL_OK ||
            fdl_buffer_zero(out_buf[v], &err) != FDL_OK) {
            bench_fail_err(s, "output buffer", &err);
            goto cleanup;
        }
        uint64_t o = fdl_buffer_address(out_buf[v]), x = fdl_buffer_address(xs_buf);
        int nn = n, it = iters;
        fdl_arg args[4] = {FDL_ARG(o), FDL_ARG(x), FDL_ARG(nn), FDL_ARG(it)};
        if (fdl_module_get_kernel(&k, mod, kernel_of[v], &err) != FDL_OK ||
            fdl_launch_create(&f.launch[v], k, &cfg, args, 4, &err) != FDL_OK) {
            bench_fail_err(s, variant_names[v], &err);
            goto cleanup;
        }
    }
    if (fdl_event_create(&start, ctx->dev, &err) != FDL_OK ||
        fdl_event_create(&end, ctx->dev, &err) != FDL_OK) {
        bench_fail_err(s, "events", &err);
        goto cleanup;
    }

    /* warm-up (two launches each), then one timed launch each to size the samples */
    long launches[NVARIANTS];
    for (int v = 0; v < NVARIANTS; v++) {
        work w = {f.launch[v]};
        double one = 0;
        if (bench_time_gpu(start, end, run_launch, &w, 2, &one, &err) != FDL_OK ||
            bench_time_gpu(start, end, run_launch, &w, 1, &one, &err) != FDL_OK) {
            bench_fail_err(s, variant_names[v], &err);
            goto cleanup;
        }
        launches[v] = bench_reps_for(one, target_ms, 1000);
    }
    for (size_t r = 0; r < reps; r++)
        for (int j = 0; j < NVARIANTS; j++) {
            int v = (int)((j + r) % NVARIANTS);
            work w = {f.launch[v]};
            if (bench_time_gpu(start, end, run_launch, &w, launches[v],
                               &samples[v * reps + r], &err) != FDL_OK) {
                bench_fail_err(s, variant_names[v], &err);
                goto cleanup;
            }
        }
    /* no call may have failed on the device (FDL_CALL records the first failure) */
    if (fdl_module_check_status(mod_ptx, &err) != FDL_OK ||
        fdl_module_check_status(mod_lto, &err) != FDL_OK) {
        bench_fail_err(s, "device status", &err);
        goto cleanup;
    }

    /* verification: identical floats from all four, and right on a sample of elements */
    for (int v = 0; v < NVARIANTS; v++)
        if (fdl_buffer_read(out_buf[v], 0, out[v], bytes, &err) != FDL_OK) {
            bench_fail_err(s, "reading results", &err);
            goto cleanup;
        }
    fdl_verify_options bitwise = FDL_VERIFY_OPTIONS_INIT;
    bitwise.mode = FDL_VERIFY_BITWISE;
    for (int v = 0; v < NVARIANTS; v++) {
        if (v == VAR_INLINE)
            continue;
        fdl_verify_report rep;
        if (fdl_verify(&rep, FDL_FLOAT32, out[v], out[VAR_INLINE], (size_t)n, &bitwise, &err) !=
            FDL_OK) {
            bench_fail(s, "%s differs from (c) inline: %s", variant_names[v], err.message);
            goto cleanup;
        }
    }
    size_t checked = 0;
    for (int i = 0; i < n; i += n / 4096 > 0 ? n / 4096 : 1) {
        float x = xs[i], acc = x;
        for (int k = 0; k < iters; k++)
            acc = fmaf(acc, x, 1.0f);
        if (memcmp(&acc, &out[VAR_INLINE][i], sizeof acc) != 0) {
            bench_fail(s, "element %d: the GPU computed %.9g, the host %.9g", i,
                       (double)out[VAR_INLINE][i], (double)acc);
            goto cleanup;
        }
        checked++;
    }
    s->verified = 1;
    bench_note(s, "verified: the four outputs are bitwise identical over %d elements, and equal "
                  "to the host's fmaf on %zu of them; no device-side status recorded",
               n, checked);
    bench_note(s, "%d elements x %d steps; launches per sample: (a) %ld, (b) %ld, (c) %ld, "
                  "(c') %ld; GPU time from events",
               n, iters, launches[0], launches[1], launches[2], launches[3]);

    for (int v = 0; v < NVARIANTS; v++) {
        bench_figure *fig = bench_figure_add(s, variant_names[v], "ms", &samples[v * reps], reps);
        if (!fig)
            goto cleanup;
        memcpy(fig->series, "foreign", sizeof "foreign");
        fig->x = v;
    }
    bench_ratio_add(s, "(a)/(c): PTX-linked call vs inline", &samples[VAR_PTX * reps],
                    &samples[VAR_INLINE * reps], reps, BENCH_GOAL_NONE, 0);
    bench_ratio_add(s, "(b)/(c): LTO-linked call vs inline", &samples[VAR_LTO * reps],
                    &samples[VAR_INLINE * reps], reps, BENCH_GOAL_LE, 1.02);
    bench_ratio_add(s, "(b)/(c'): LTO-linked call vs inline in the same module",
                    &samples[VAR_LTO * reps], &samples[VAR_INLINE_LTO * reps], reps,
                    BENCH_GOAL_NONE, 0);
    double c_ms = s->figures[VAR_INLINE].st.median;
    if (c_ms > 0)
        bench_figure_derived(s, "(c) inline: throughput", "GFMA/s",
                             (double)n * iters / (c_ms * 1e6));
    if (s->status != BENCH_FAILED)
        s->status = BENCH_OK;
cleanup:
    for (int v = 0; v < NVARIANTS; v++) {
        fdl_launch_destroy(f.launch[v]);
        fdl_buffer_destroy(out_buf[v]);
        free(out[v]);
    }
    fdl_buffer_destroy(xs_buf);
    fdl_event_destroy(start);
    fdl_event_destroy(end);
    fdl_module_destroy(mod_ptx);
    fdl_module_destroy(mod_lto);
    fdl_link_destroy(link_ptx);
    fdl_link_destroy(link_lto);
    free(xs);
    free(samples);
}
