/*
 * Benchmark 2: what a foreign call costs in memory-bound code.
 *
 * multiply_vectors (device/src/callers.cu: out[i] = a[i] * b[i] through the foreign function
 * mul_f32_f32 of device/src/functions.cu, one float per thread) and multiply_vectors_v4
 * (bench/device/mul_v4_callers.cu: the same call on four floats per thread, 16-byte accesses),
 * compiled to LTO-IR and LTO-linked here through fdl_link, against a device-to-device copy
 * (cuMemcpyDtoDAsync through fdl_buffer_copy_async) on the same stream: the memory system's
 * practical limit. The goal is the v4 kernel's; the scalar one shows what access width costs.
 *
 * Bytes are counted as DRAM traffic, reads plus writes: the kernel reads a and b and writes out,
 * 12 bytes per element; the copy reads and writes its size. The copy is given 6 bytes per
 * element, so that both move the same 12 bytes per element and their times compare directly;
 * effective bandwidth = bytes read + bytes written over the event-timed GPU time. Each sample is
 * `reps` back-to-back operations (about 20 ms); kernel and copy alternate. Verified: every
 * output element equals a[i] * b[i] exactly, and the copy's destination equals its source.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct copy_work {
    fdl_buffer *dst, *src;
    size_t size;
} copy_work;

static int run_copy(void *arg, fdl_error *err)
{
    copy_work *c = arg;
    return fdl_buffer_copy_async(c->dst, 0, c->src, 0, c->size, NULL, err);
}

static int run_launch(void *arg, fdl_error *err)
{
    return fdl_launch_run(arg, err);
}

void bench_memory(bench_ctx *ctx, bench_section *s)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_link *link = NULL;
    fdl_module *mod = NULL;
    fdl_kernel *k = NULL, *k4 = NULL;
    fdl_launch *launch = NULL, *launch4 = NULL;
    fdl_buffer *a_buf = NULL, *b_buf = NULL, *out_buf = NULL, *src_buf = NULL, *dst_buf = NULL;
    fdl_event *start = NULL, *end = NULL;
    float *a = NULL, *b = NULL, *expected = NULL;
    unsigned char *pattern = NULL, *back = NULL;
    double *ms = NULL;

    const int n = ctx->quick ? 1 << 20 : 1 << 26; /* a multiple of 4 */
    const size_t reps = bench_reps(ctx, 3, 15);
    const double target_ms = ctx->quick ? 2.0 : 20.0;
    const size_t bytes = (size_t)n * sizeof(float);
    const size_t copy_size = (size_t)n * 6;         /* read 6 + write 6 bytes per element */
    const double moved = 12.0 * (double)n;          /* both: bytes read + bytes written */

    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(ctx->dev);
    opts.backend = FDL_BACKEND_NVJITLINK;
    opts.lto = FDL_LTO_ON;
    if (fdl_link_create(&link, &opts, &err) != FDL_OK ||
        fdl_link_add_file(link, FDL_BENCH_MUL_CALLERS_LTOIR, FDL_KIND_AUTO, &err) != FDL_OK ||
        fdl_link_add_file(link, FDL_BENCH_MULV4_CALLERS_LTOIR, FDL_KIND_AUTO, &err) != FDL_OK ||
        fdl_link_add_file(link, FDL_BENCH_MUL_FUNCTIONS_LTOIR, FDL_KIND_AUTO, &err) != FDL_OK ||
        fdl_link_complete(link, &err) != FDL_OK) {
        bench_fail_err(s, "linking multiply_vectors (LTO-IR)", &err);
        goto cleanup;
    }
    if (!fdl_link_lto(link)) {
        bench_fail(s, "the link of multiply_vectors ran without LTO");
        goto cleanup;
    }
    if (bench_load(s, &mod, ctx->dev, link, "multiply_vectors (LTO link)"))
        goto cleanup;

    a = malloc(bytes);
    b = malloc(bytes);
    expected = malloc(bytes);
    pattern = malloc(copy_size);
    back = malloc(copy_size);
    ms = calloc(3 * reps, sizeof *ms);
    if (!a || !b || !expected || !pattern || !back || !ms) {
        bench_fail(s, "out of host memory");
        goto cleanup;
    }
    unsigned seed = 12345;
    for (int i = 0; i < n; i++) {
        a[i] = (float)(bench_rand(&seed) % 2000001u) / 1000.0f - 1000.0f;
        b[i] = (float)(bench_rand(&seed) % 2000001u) / 1000.0f - 1000.0f;
        expected[i] = a[i] * b[i];
    }
    for (size_t i = 0; i < copy_size; i += 4) {
        unsigned v = bench_rand(&seed);
        memcpy(pattern + i, &v, copy_size - i < 4 ? copy_size - i : 4);
    }
    if (fdl_buffer_create(&a_buf, ctx->dev, bytes, &err) != FDL_OK ||
        fdl_buffer_create(&b_buf, ctx->dev, bytes, &err) != FDL_OK ||
        fdl_buffer_create(&out_buf, ctx->dev, bytes, &err) != FDL_OK ||
        fdl_buffer_create(&src_buf, ctx->dev, copy_size, &err) != FDL_OK ||
        fdl_buffer_create(&dst_buf, ctx->dev, copy_size, &err) != FDL_OK ||
        fdl_buffer_write(a_buf, 0, a, bytes, &err) != FDL_OK ||
        fdl_buffer_write(b_buf, 0, b, bytes, &err) != FDL_OK ||
        fdl_buffer_zero(out_buf, &err) != FDL_OK ||
        fdl_buffer_write(src_buf, 0, pattern, copy_size, &err) != FDL_OK ||
        fdl_buffer_zero(dst_buf, &err) != FDL_OK) {
        bench_fail_err(s, "buffers", &err);
        goto cleanup;
    }
    uint64_t po = fdl_buffer_address(out_buf), pa = fdl_buffer_address(a_buf),
             pb = fdl_buffer_address(b_buf);
    int nn = n;
    fdl_arg args[4] = {FDL_ARG(po), FDL_ARG(pa), FDL_ARG(pb), FDL_ARG(nn)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.grid.x = (unsigned)((n + 255) / 256);
    cfg.block.x = 256;
    int n4 = n / 4;
    fdl_arg args4[4] = {FDL_ARG(po), FDL_ARG(pa), FDL_ARG(pb), FDL_ARG(n4)};
    fdl_launch_config cfg4 = FDL_LAUNCH_CONFIG_INIT;
    cfg4.grid.x = (unsigned)((n4 + 255) / 256);
    cfg4.block.x = 256;
    if (fdl_module_get_kernel(&k, mod, "multiply_vectors", &err) != FDL_OK ||
        fdl_module_get_kernel(&k4, mod, "multiply_vectors_v4", &err) != FDL_OK ||
        fdl_launch_create(&launch, k, &cfg, args, 4, &err) != FDL_OK ||
        fdl_launch_create(&launch4, k4, &cfg4, args4, 4, &err) != FDL_OK ||
        fdl_event_create(&start, ctx->dev, &err) != FDL_OK ||
        fdl_event_create(&end, ctx->dev, &err) != FDL_OK) {
        bench_fail_err(s, "multiply_vectors", &err);
        goto cleanup;
    }
    copy_work cw = {dst_buf, src_buf, copy_size};
    bench_work_fn fns[3] = {run_launch, run_launch, run_copy};
    void *fn_args[3] = {launch, launch4, &cw};
    static const char *const what[3] = {"multiply_vectors", "multiply_vectors_v4",
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
    if (fdl_module_check_status(mod, &err) != FDL_OK) {
        bench_fail_err(s, "device status", &err);
        goto cleanup;
    }

    /* verification: each kernel's output on its own, from a zeroed buffer */
    for (int m = 0; m < 2; m++) {
        fdl_verify_report rep;
        if (fdl_buffer_zero(out_buf, &err) != FDL_OK ||
            fdl_launch_run(m ? launch4 : launch, &err) != FDL_OK ||
            fdl_device_synchronize(ctx->dev, &err) != FDL_OK ||
            fdl_buffer_verify(&rep, out_buf, 0, FDL_FLOAT32, expected, (size_t)n, NULL, &err) !=
                FDL_OK) {
            bench_fail_err(s, m ? "multiply_vectors_v4 result" : "multiply_vectors result", &err);
            goto cleanup;
        }
    }
    if (fdl_buffer_read(dst_buf, 0, back, copy_size, &err) != FDL_OK) {
        bench_fail_err(s, "reading the copy", &err);
        goto cleanup;
    }
    if (memcmp(back, pattern, copy_size) != 0) {
        size_t i = 0;
        while (back[i] == pattern[i])
            i++;
        bench_fail(s, "the copy's destination differs from its source at byte %zu", i);
        goto cleanup;
    }
    s->verified = 1;
    bench_note(s, "verified: all %d products of each kernel equal a[i] * b[i] exactly; the "
                  "%zu-byte copy equals its source", n, copy_size);
    bench_note(s, "bytes = reads + writes: the kernel 12 per element (a, b, out), the copy of "
                  "6 bytes per element the same 12; %d elements = %.0f MB moved per operation",
               n, moved / 1e6);
    bench_note(s, "operations per sample: scalar kernel %ld, v4 kernel %ld, copy %ld; GPU time "
                  "from events", count[0], count[1], count[2]);

    double *gbs = malloc(3 * reps * sizeof *gbs);
    if (!gbs) {
        bench_fail(s, "out of host memory");
        goto cleanup;
    }
    for (size_t i = 0; i < 3 * reps; i++)
        gbs[i] = ms[i] > 0 ? moved / (ms[i] * 1e6) : 0.0;
    bench_figure_add(s, "multiply_vectors_v4 (4 floats/thread), LTO-linked", "GB/s", gbs + reps,
                     reps);
    bench_figure_add(s, "multiply_vectors (1 float/thread), LTO-linked", "GB/s", gbs, reps);
    bench_figure_add(s, "device-to-device copy", "GB/s", gbs + 2 * reps, reps);
    bench_figure_add(s, "multiply_vectors_v4: time", "ms", ms + reps, reps);
    bench_figure_add(s, "multiply_vectors: time", "ms", ms, reps);
    bench_figure_add(s, "device-to-device copy: time", "ms", ms + 2 * reps, reps);
    bench_ratio_add(s, "v4 kernel / copy bandwidth", gbs + reps, gbs + 2 * reps, reps,
                    BENCH_GOAL_GE, 0.95);
    bench_ratio_add(s, "scalar kernel / copy bandwidth", gbs, gbs + 2 * reps, reps,
                    BENCH_GOAL_NONE, 0.0);
    free(gbs);
    if (s->status != BENCH_FAILED)
        s->status = BENCH_OK;
cleanup:
    fdl_launch_destroy(launch);
    fdl_launch_destroy(launch4);
    fdl_event_destroy(start);
    fdl_event_destroy(end);
    fdl_buffer_destroy(a_buf);
    fdl_buffer_destroy(b_buf);
    fdl_buffer_destroy(out_buf);
    fdl_buffer_destroy(src_buf);
    fdl_buffer_destroy(dst_buf);
    fdl_module_destroy(mod);
    fdl_link_destroy(link);
    free(a);
    free(b);
    free(expected);
    free(pattern);
    free(back);
    free(ms);
}
