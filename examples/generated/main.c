/*
 * Kernels without writing kernels (fdlink/gen.h): the seed's multiply_vectors replaced by a
 * one-call map of the declared mul_f32_f32, PyCUDA's `a_gpu *= 2` as an expression, and a float32
 * sum as a reduction. fdlink writes each kernel, compiles it with NVRTC, links it with the
 * function's LTO-IR (the call is inlined) and loads it; every result is verified.
 *
 * usage: generated [--arch sm_NN] [-v] FUNCTIONS.decl FUNCTIONS.ltoir
 * Without a GPU it generates, compiles and links every kernel for --arch (default sm_90), says
 * the launches were skipped and exits 77 (FDL_EXIT_SKIP). -v prints the generated map's source.
 */
#include "example.h"

#define N (1 << 24)
#define REPS 20

static int fail(example *ex, const fdl_error *err)
{
    if (err->log && err->log[0])
        fprintf(stderr, "%s\n", err->log);
    return example_fail(ex, err);
}

/* Milliseconds per launch of @what, timed over REPS launches with events. */
static int time_ms(example *ex, float *ms, int (*launch)(void *ctx, fdl_error *err), void *ctx)
{
    fdl_event *start = NULL, *stop = NULL;
    int rc = FDL_OK;
    if ((rc = fdl_event_create(&start, ex->dev, &ex->err)) != FDL_OK ||
        (rc = fdl_event_create(&stop, ex->dev, &ex->err)) != FDL_OK ||
        (rc = launch(ctx, &ex->err)) != FDL_OK || /* warm-up */
        (rc = fdl_event_record(start, NULL, &ex->err)) != FDL_OK)
        goto cleanup;
    for (int i = 0; i < REPS && rc == FDL_OK; i++)
        rc = launch(ctx, &ex->err);
    if (rc != FDL_OK || (rc = fdl_event_record(stop, NULL, &ex->err)) != FDL_OK ||
        (rc = fdl_event_elapsed_ms(ms, start, stop, &ex->err)) != FDL_OK)
        goto cleanup;
    *ms /= REPS;
cleanup:
    fdl_event_destroy(start);
    fdl_event_destroy(stop);
    return rc;
}

typedef struct map_ctx {
    fdl_map *map;
    const fdl_gen_arg *args;
    size_t nargs;
} map_ctx;

static int launch_map(void *ctx, fdl_error *err)
{
    map_ctx *c = ctx;
    return fdl_map_launch(c->map, N, c->args, c->nargs, err);
}

typedef struct red_ctx {
    fdl_reduction *red;
    const fdl_gen_arg *args;
} red_ctx;

static int launch_red(void *ctx, fdl_error *err)
{
    red_ctx *c = ctx;
    return fdl_reduction_launch(c->red, N, c->args, 1, err);
}

int main(int argc, char **argv)
{
    example ex = {"generated", "map mul_f32_f32, a *= 2, sum: no kernel written", NULL, NULL,
                  FDL_ERROR_INIT};
    const char *arch = "sm_90", *decl_path = NULL, *ltoir = NULL;
    int verbose = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc)
            arch = argv[++i];
        else if (strcmp(argv[i], "-v") == 0)
            verbose = 1;
        else if (!decl_path)
            decl_path = argv[i];
        else
            ltoir = argv[i];
    }
    if (!decl_path || !ltoir) {
        fprintf(stderr, "usage: generated [--arch sm_NN] [-v] FUNCTIONS.decl FUNCTIONS.ltoir\n");
        return 2;
    }
    int rc = 1, count = 0;
    fdl_error probe = FDL_ERROR_INIT;
    int have_gpu = fdl_device_count(&count, &probe) == FDL_OK && count > 0;
    fdl_decls *decls = NULL;
    fdl_gen *gen = NULL;
    fdl_map *mul = NULL, *twice = NULL;
    fdl_reduction *sum = NULL;
    fdl_buffer *da = NULL, *db = NULL, *dout = NULL;
    float *a = NULL, *b = NULL, *out = NULL;

    /* one generator: the declarations, the functions' code, the device (or an arch) */
    const char *const inputs[] = {ltoir, NULL};
    fdl_gen_options go = FDL_GEN_OPTIONS_INIT;
    go.decls = NULL;
    go.inputs = inputs;
    go.arch = have_gpu ? NULL : arch;
    if (fdl_decls_load(&decls, decl_path, &ex.err) != FDL_OK)
        goto fail;
    go.decls = decls;
    if (have_gpu && fdl_device_open(&ex.dev, -1, &ex.err) != FDL_OK)
        goto fail;
    double t0 = example_now_ms();
    if (fdl_gen_create(&gen, ex.dev, &go, &ex.err) != FDL_OK ||
        /* out[i] = mul_f32_f32(a[i], b[i]): the seed's multiply_vectors, in one call */
        fdl_map_create(&mul, gen, "mul_f32_f32", "aa", &ex.err) != FDL_OK ||
        /* PyCUDA's a_gpu *= 2 */
        fdl_elementwise_create(&twice, gen, "float *a", "a[i] *= 2", &ex.err) != FDL_OK)
        goto fail;
    fdl_reduction_spec rs = FDL_REDUCTION_SPEC_INIT;
    rs.type = "float32";
    rs.arguments = "const float *x";
    rs.map = "x[i]";
    rs.reduce = "sum";
    if (fdl_reduction_create(&sum, gen, &rs, &ex.err) != FDL_OK)
        goto fail;
    double gen_ms = example_now_ms() - t0;
    if (verbose)
        printf("%s\n", fdl_map_source(mul));
    printf("generated: 3 kernels generated, compiled and linked for %s in %.0f ms "
           "(map: %u floats an access)\n", fdl_gen_arch(gen), gen_ms,
           fdl_map_vector_width(mul));
    if (!have_gpu) {
        printf("generated: no GPU (%s): launches skipped\n",
               probe.message[0] ? probe.message : "0 devices");
        char figure[64];
        snprintf(figure, sizeof figure, "3 kernels generated+linked, %.0f ms", gen_ms);
        example_summary(&ex, "skipped", figure);
        rc = FDL_EXIT_SKIP;
        goto cleanup;
    }

    size_t bytes = (size_t)N * sizeof(float);
    a = malloc(bytes);
    b = malloc(bytes);
    out = malloc(bytes);
    if (!a || !b || !out) {
        fprintf(stderr, "generated: out of memory\n");
        goto cleanup;
    }
    uint32_t state = 2024;
    double ref = 0;
    for (size_t i = 0; i < N; i++) {
        a[i] = example_random(&state, -8.0f, 8.0f);
        b[i] = example_random(&state, -8.0f, 8.0f);
    }
    if (fdl_buffer_create(&da, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_create(&db, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_create(&dout, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_write(da, 0, a, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_write(db, 0, b, bytes, &ex.err) != FDL_OK)
        goto fail;

    /* the map */
    fdl_gen_arg margs[] = {fdl_gen_buffer(dout), fdl_gen_buffer(da), fdl_gen_buffer(db)};
    float map_ms = 0;
    map_ctx mc = {mul, margs, 3};
    if (fdl_map_run(mul, N, margs, 3, &ex.err) != FDL_OK ||
        fdl_buffer_read(dout, 0, out, bytes, &ex.err) != FDL_OK)
        goto fail;
    for (size_t i = 0; i < N; i++)
        if (out[i] != a[i] * b[i]) {
            fprintf(stderr, "generated: out[%zu] = %g, want %g\n", i, out[i], a[i] * b[i]);
            example_summary(&ex, "no", "map result wrong");
            goto cleanup;
        }
    if (time_ms(&ex, &map_ms, launch_map, &mc) != FDL_OK || fdl_map_check(mul, &ex.err) != FDL_OK)
        goto fail;
    printf("  %-22s %d elements  verified exactly  %.3f ms  %.0f GB/s\n", "map mul_f32_f32", N,
           map_ms, 3.0 * bytes / (map_ms * 1e6));

    /* a_gpu *= 2 */
    fdl_gen_arg targs[] = {fdl_gen_buffer(da)};
    if (fdl_map_run(twice, N, targs, 1, &ex.err) != FDL_OK ||
        fdl_buffer_read(da, 0, out, bytes, &ex.err) != FDL_OK)
        goto fail;
    for (size_t i = 0; i < N; i++)
        if (out[i] != 2.0f * a[i]) {
            fprintf(stderr, "generated: a[%zu] = %g, want %g\n", i, out[i], 2.0f * a[i]);
            example_summary(&ex, "no", "a *= 2 wrong");
            goto cleanup;
        }
    printf("  %-22s %d elements  verified exactly\n", "a[i] *= 2", N);

    /* the sum of b, against a double-precision sum on the host */
    for (size_t i = 0; i < N; i++)
        ref += b[i];
    float got = 0, sum_ms = 0;
    fdl_gen_arg sargs[] = {fdl_gen_buffer(db)};
    red_ctx rc_ = {sum, sargs};
    if (fdl_reduction_run(sum, &got, sizeof got, N, sargs, 1, &ex.err) != FDL_OK)
        goto fail;
    if (fabs(got - ref) > 1e-3 * sqrt((double)N)) {
        fprintf(stderr, "generated: sum %.9g, want %.9g\n", got, ref);
        example_summary(&ex, "no", "sum wrong");
        goto cleanup;
    }
    if (time_ms(&ex, &sum_ms, launch_red, &rc_) != FDL_OK ||
        fdl_reduction_result(sum, &got, sizeof got, &ex.err) != FDL_OK)
        goto fail;
    printf("  %-22s %d elements  %.6g (double: %.6g)  %.3f ms  %.0f GB/s\n", "sum", N, got, ref,
           sum_ms, (double)bytes / (sum_ms * 1e6));
    char figure[128];
    snprintf(figure, sizeof figure, "map %.0f GB/s, sum %.0f GB/s", 3.0 * bytes / (map_ms * 1e6),
             (double)bytes / (sum_ms * 1e6));
    example_summary(&ex, "yes", figure);
    rc = 0;
    goto cleanup;
fail:
    fail(&ex, &ex.err);
    rc = 1;
cleanup:
    free(a);
    free(b);
    free(out);
    fdl_buffer_destroy(da);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(dout);
    fdl_map_destroy(mul);
    fdl_map_destroy(twice);
    fdl_reduction_destroy(sum);
    fdl_gen_destroy(gen);
    fdl_device_destroy(ex.dev);
    fdl_decls_destroy(decls);
    return rc;
}
