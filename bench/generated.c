/*
 * Benchmark 8: kernels fdlink generates (gen/, fdlink/gen.h) at memory speed.
 *
 * (a) the map of the declared mul_f32_f32 over two float32 arrays of 2^26 elements (the
 *     function's LTO-IR from device/src/functions.cu, LTO-linked with the generated kernel);
 * (b) the float32 sum of 2^26 elements, one launch (per-block partials, the last block folds
 *     them);
 * against a device-to-device copy in the same run (as benchmark 2: 6 bytes per element copied,
 * 12 moved, so GB/s = bytes read + written over event time). The map moves 12 bytes per element,
 * the sum reads 4. And CuPy's `cupy.sum` of the same values, timed the same way by
 * bench/cupy_sum.py run from here (python3, or FDL_BENCH_PYTHON), with CuPy's own copy.
 * Verified: every product exact; the sums (fdlink's and CuPy's) against a double-precision sum.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "fdlink/gen.h"

typedef struct copy_work {
    fdl_buffer *dst, *src;
    size_t size;
} copy_work;

static int run_copy(void *arg, fdl_error *err)
{
    copy_work *c = arg;
    return fdl_buffer_copy_async(c->dst, 0, c->src, 0, c->size, NULL, err);
}

typedef struct map_work {
    fdl_map *map;
    size_t n;
    fdl_gen_arg args[3];
} map_work;

static int run_map(void *arg, fdl_error *err)
{
    map_work *w = arg;
    return fdl_map_launch(w->map, w->n, w->args, 3, err);
}

typedef struct sum_work {
    fdl_reduction *red;
    size_t n;
    fdl_gen_arg args[1];
} sum_work;

static int run_sum(void *arg, fdl_error *err)
{
    sum_work *w = arg;
    return fdl_reduction_launch(w->red, w->n, w->args, 1, err);
}

/* CuPy's figures, from bench/cupy_sum.py; 0 when not measured (the reason in a note). */
static size_t run_cupy(bench_section *s, size_t n, size_t reps, double *sum_gbs, double *copy_gbs,
                       double *value)
{
    const char *python = getenv("FDL_BENCH_PYTHON");
    char cmd[1024], line[256];
    snprintf(cmd, sizeof cmd, "'%s' '%s' %zu %zu 2>&1", python ? python : "python3",
             FDL_BENCH_CUPY_SCRIPT, n, reps);
    FILE *p = popen(cmd, "r");
    if (!p) {
        bench_note(s, "CuPy: not measured (cannot run %s)", python ? python : "python3");
        return 0;
    }
    size_t got = 0;
    char version[64] = "?", error[200] = "";
    while (fgets(line, sizeof line, p)) {
        double a = 0, b = 0;
        if (sscanf(line, "sample %lf %lf", &a, &b) == 2 && got < reps) {
            sum_gbs[got] = a;
            copy_gbs[got] = b;
            got++;
        } else if (sscanf(line, "value %lf", value) == 1) {
        } else if (sscanf(line, "cupy %63s", version) == 1) {
        } else if (!error[0]) {
            snprintf(error, sizeof error, "%.199s", line);
            error[strcspn(error, "\n")] = '\0';
        }
    }
    int status = pclose(p);
    if (status != 0 || got != reps) {
        bench_note(s, "CuPy: not measured (%s exited with %d: %s)", python ? python : "python3",
                   status, error[0] ? error : "no output");
        return 0;
    }
    bench_note(s, "CuPy %s: cupy.sum and a cudaMemcpy device-to-device copy, timed by "
                  "bench/cupy_sum.py with CUDA events in a child process of this run", version);
    return got;
}

void bench_generated(bench_ctx *ctx, bench_section *s)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL;
    fdl_gen *gen = NULL;
    fdl_map *map = NULL;
    fdl_reduction *sum = NULL;
    fdl_buffer *a_buf = NULL, *b_buf = NULL, *out_buf = NULL, *src_buf = NULL, *dst_buf = NULL;
    fdl_event *start = NULL, *end = NULL;
    float *a = NULL, *b = NULL, *expected = NULL;
    double *ms = NULL, *gbs = NULL, *cupy = NULL;

    const size_t n = ctx->quick ? (size_t)1 << 20 : (size_t)1 << 26;
    const size_t reps = bench_reps(ctx, 3, 15);
    const double target_ms = ctx->quick ? 2.0 : 20.0;
    const size_t bytes = n * sizeof(float);
    const size_t copy_size = n * 6; /* read 6 + write 6 bytes per element */

    /* benchmarks 4-6 close the device: open it again */
    if (!ctx->dev && fdl_device_open(&ctx->dev, -1, &err) != FDL_OK) {
        bench_fail_err(s, "opening the device", &err);
        goto cleanup;
    }
    const char *const inputs[] = {FDL_BENCH_MUL_FUNCTIONS_LTOIR, NULL};
    fdl_gen_options go = FDL_GEN_OPTIONS_INIT;
    go.inputs = inputs;
    double t0 = bench_now_ms();
    if (fdl_decls_load(&decls, FDL_BENCH_DECL, &err) != FDL_OK) {
        bench_fail_err(s, "declarations", &err);
        goto cleanup;
    }
    go.decls = decls;
    fdl_reduction_spec rs = FDL_REDUCTION_SPEC_INIT;
    rs.type = "float32";
    rs.arguments = "const float *x";
    rs.map = "x[i]";
    rs.reduce = "sum";
    if (fdl_gen_create(&gen, ctx->dev, &go, &err) != FDL_OK ||
        fdl_map_create(&map, gen, "mul_f32_f32", "aa", &err) != FDL_OK ||
        fdl_reduction_create(&sum, gen, &rs, &err) != FDL_OK) {
        bench_fail_err(s, "generating the map and the sum", &err);
        goto cleanup;
    }
    double gen_ms = bench_now_ms() - t0;

    a = malloc(bytes);
    b = malloc(bytes);
    expected = malloc(bytes);
    ms = calloc(3 * reps, sizeof *ms);
    gbs = calloc(3 * reps, sizeof *gbs);
    cupy = calloc(2 * reps, sizeof *cupy);
    if (!a || !b || !expected || !ms || !gbs || !cupy) {
        bench_fail(s, "out of host memory");
        goto cleanup;
    }
    unsigned seed = 777;
    double ref = 0;
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(bench_rand(&seed) % 2000001u) / 1000.0f - 1000.0f;
        b[i] = (float)(i % 1000) / 1000.0f - 0.5f; /* the values cupy_sum.py sums */
        expected[i] = a[i] * b[i];
        ref += b[i];
    }
    if (fdl_buffer_create(&a_buf, ctx->dev, bytes, &err) != FDL_OK ||
        fdl_buffer_create(&b_buf, ctx->dev, bytes, &err) != FDL_OK ||
        fdl_buffer_create(&out_buf, ctx->dev, bytes, &err) != FDL_OK ||
        fdl_buffer_create(&src_buf, ctx->dev, copy_size, &err) != FDL_OK ||
        fdl_buffer_create(&dst_buf, ctx->dev, copy_size, &err) != FDL_OK ||
        fdl_buffer_write(a_buf, 0, a, bytes, &err) != FDL_OK ||
        fdl_buffer_write(b_buf, 0, b, bytes, &err) != FDL_OK ||
        fdl_buffer_zero(out_buf, &err) != FDL_OK || fdl_buffer_zero(src_buf, &err) != FDL_OK ||
        fdl_event_create(&start, ctx->dev, &err) != FDL_OK ||
        fdl_event_create(&end, ctx->dev, &err) != FDL_OK) {
        bench_fail_err(s, "buffers", &err);
        goto cleanup;
    }
    map_work mw = {map, n, {fdl_gen_buffer(out_buf), fdl_gen_buffer(a_buf), fdl_gen_buffer(b_buf)}};
    sum_work sw = {sum, n, {fdl_gen_buffer(b_buf)}};
    copy_work cw = {dst_buf, src_buf, copy_size};
    bench_work_fn fns[3] = {run_map, run_sum, run_copy};
    void *fn_args[3] = {&mw, &sw, &cw};
    static const char *const what[3] = {"map mul_f32_f32", "float32 sum",
                                        "device-to-device copy"};
    long count[3];
    for (int m = 0; m < 3; m++) {
        double one = 0;
        if (bench_time_gpu(start, end, fns[m], fn_args[m], 2, &one, &err) != FDL_OK ||
            bench_time_gpu(start, end, fns[m], fn_args[m], 1, &one, &err) != FDL_OK) {
            bench_fail_err(s, what[m], &err);
            goto cleanup;
        }
        count[m] = bench_reps_for(one, target_ms, 1000);
    }
    for (size_t r = 0; r < reps; r++)
        for (int j = 0; j < 3; j++) {
            int m = (int)((j + r) % 3);
            if (bench_time_gpu(start, end, fns[m], fn_args[m], count[m], &ms[m * reps + r],
                               &err) != FDL_OK) {
                bench_fail_err(s, what[m], &err);
                goto cleanup;
            }
        }

    /* verification: the map from a zeroed output; the sum's last result */
    float got = 0;
    fdl_verify_report rep;
    if (fdl_map_check(map, &err) != FDL_OK || fdl_reduction_result(sum, &got, 4, &err) != FDL_OK ||
        fdl_buffer_zero(out_buf, &err) != FDL_OK ||
        fdl_map_run(map, n, mw.args, 3, &err) != FDL_OK ||
        fdl_buffer_verify(&rep, out_buf, 0, FDL_FLOAT32, expected, n, NULL, &err) != FDL_OK) {
        bench_fail_err(s, "verifying", &err);
        goto cleanup;
    }
    if (!(fabs(got - ref) <= 1e-3 * sqrt((double)n))) {
        bench_fail(s, "the float32 sum is %.9g, but the double-precision sum is %.9g", got, ref);
        goto cleanup;
    }
    double cupy_value = NAN;
    size_t ncupy = ctx->quick ? 0 : run_cupy(s, n, reps, cupy, cupy + reps, &cupy_value);
    if (ctx->quick)
        bench_note(s, "CuPy: not measured in --quick runs");
    if (ncupy && !(fabs(cupy_value - ref) <= 1e-3 * sqrt((double)n))) {
        bench_fail(s, "CuPy's sum is %.9g, but the double-precision sum is %.9g", cupy_value,
                   ref);
        goto cleanup;
    }
    s->verified = 1;
    bench_note(s, "generated, compiled (NVRTC) and LTO-linked the map and the sum in %.0f ms; "
                  "the map moves %u floats an access", gen_ms, fdl_map_vector_width(map));
    bench_note(s, "verified: all %zu products exact; sum %.9g against %.9g (double)%s", n,
               (double)got, ref, ncupy ? "; CuPy's sum too" : "");
    bench_note(s, "bytes: map 12 per element (a, b, out), sum 4 (reads), copy 12 (6 bytes per "
                  "element copied); operations per sample: map %ld, sum %ld, copy %ld",
               count[0], count[1], count[2]);
    for (size_t i = 0; i < reps; i++) {
        gbs[i] = ms[i] > 0 ? 12.0 * (double)n / (ms[i] * 1e6) : 0.0;
        gbs[reps + i] = ms[reps + i] > 0 ? 4.0 * (double)n / (ms[reps + i] * 1e6) : 0.0;
        gbs[2 * reps + i] = ms[2 * reps + i] > 0 ? 12.0 * (double)n / (ms[2 * reps + i] * 1e6)
                                                 : 0.0;
    }
    bench_figure_add(s, "map mul_f32_f32 (generated, LTO)", "GB/s", gbs, reps);
    bench_figure_add(s, "float32 sum (generated)", "GB/s", gbs + reps, reps);
    bench_figure_add(s, "device-to-device copy", "GB/s", gbs + 2 * reps, reps);
    bench_ratio_add(s, "map / copy bandwidth", gbs, gbs + 2 * reps, reps, BENCH_GOAL_GE, 0.95);
    bench_ratio_add(s, "sum / copy bandwidth", gbs + reps, gbs + 2 * reps, reps, BENCH_GOAL_GE,
                    0.9);
    if (ncupy) {
        bench_figure_add(s, "CuPy cupy.sum", "GB/s", cupy, ncupy);
        bench_figure_add(s, "CuPy device-to-device copy", "GB/s", cupy + reps, ncupy);
        bench_ratio_add(s, "fdlink sum / CuPy sum", gbs + reps, cupy, ncupy, BENCH_GOAL_NONE,
                        0.0);
        bench_ratio_add(s, "CuPy sum / CuPy copy", cupy, cupy + reps, ncupy, BENCH_GOAL_NONE,
                        0.0);
    }
    if (s->status != BENCH_FAILED)
        s->status = BENCH_OK;
cleanup:
    fdl_event_destroy(start);
    fdl_event_destroy(end);
    fdl_buffer_destroy(a_buf);
    fdl_buffer_destroy(b_buf);
    fdl_buffer_destroy(out_buf);
    fdl_buffer_destroy(src_buf);
    fdl_buffer_destroy(dst_buf);
    fdl_map_destroy(map);
    fdl_reduction_destroy(sum);
    fdl_gen_destroy(gen);
    fdl_decls_destroy(decls);
    free(a);
    free(b);
    free(expected);
    free(ms);
    free(gbs);
    free(cupy);
}
