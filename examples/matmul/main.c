/*
 * Matrix multiply, float64, 1024 x 1024: a naive kernel and a shared-memory tiled kernel whose
 * BLOCK_SIZE and N are chosen by this program, once ahead of time (nvcc -D, linked at build time,
 * embedded) and once at run time (matmul.cu, embedded as text, compiled with NVRTC with the values
 * this program picks, then linked and loaded). Timed with events; verified against a host
 * reference (every entry: the inputs are small integers, so every sum is exact in any order).
 * A block of 33 x 33 threads is refused with fdlink's geometry error.
 */
#include "example.h"

#define N 1024
#define AOT_BLOCK 16 /* as compiled ahead of time: see CMakeLists.txt */
#define RT_BLOCK 32  /* chosen now, at run time */

typedef struct run {
    const char *what;
    fdl_kernel *kernel;
    unsigned block;
    double ms, gflops;
} run;

static int time_kernel(example *ex, run *r, fdl_buffer *dc, fdl_buffer *da, fdl_buffer *db,
                       const double *ref, double *c)
{
    uint64_t pc = fdl_buffer_address(dc), pa = fdl_buffer_address(da), pb = fdl_buffer_address(db);
    fdl_arg args[] = {FDL_ARG(pc), FDL_ARG(pa), FDL_ARG(pb)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.block = (fdl_dim3){r->block, r->block, 1};
    cfg.grid = (fdl_dim3){N / r->block, N / r->block, 1};
    fdl_event *start = NULL, *stop = NULL;
    int ok = 0;
    if (fdl_buffer_zero(dc, &ex->err) != FDL_OK ||
        fdl_event_create(&start, ex->dev, &ex->err) != FDL_OK ||
        fdl_event_create(&stop, ex->dev, &ex->err) != FDL_OK)
        goto cleanup;
    const int repeats = example_repeats(5); /* 1 under compute-sanitizer: no warm-up either */
    if (repeats > 1 && fdl_kernel_launch_ex(r->kernel, &cfg, args, 3, &ex->err) != FDL_OK)
        goto cleanup; /* warm-up */
    float best = 1e30f;
    for (int rep = 0; rep < repeats; rep++) {
        float ms = 0;
        if (fdl_event_record(start, NULL, &ex->err) != FDL_OK ||
            fdl_kernel_launch_ex(r->kernel, &cfg, args, 3, &ex->err) != FDL_OK ||
            fdl_event_record(stop, NULL, &ex->err) != FDL_OK ||
            fdl_event_synchronize(stop, &ex->err) != FDL_OK ||
            fdl_event_elapsed_ms(&ms, start, stop, &ex->err) != FDL_OK)
            goto cleanup;
        if (ms < best)
            best = ms;
    }
    r->ms = best;
    r->gflops = 2.0 * N * (double)N * N / (best * 1e6);
    if (fdl_buffer_read(dc, 0, c, sizeof(double) * N * N, &ex->err) != FDL_OK)
        goto cleanup;
    fdl_verify_report rep;
    fdl_verify_options vo = FDL_VERIFY_OPTIONS_INIT; /* exact */
    int st = fdl_verify(&rep, FDL_FLOAT64, c, ref, (size_t)N * N, &vo, &ex->err);
    if (st == FDL_EVERIFY) {
        char text[1024];
        fdl_verify_format(&rep, text, sizeof text);
        fprintf(stderr, "matmul: %s: %s\n", r->what, text);
        goto cleanup;
    }
    if (st != FDL_OK)
        goto cleanup;
    printf("matmul: %-34s block %2ux%-2u  %7.3f ms  %7.1f GFLOP/s  all %d entries exact\n",
           r->what, r->block, r->block, r->ms, r->gflops, N * N);
    ok = 1;
cleanup:
    fdl_event_destroy(start);
    fdl_event_destroy(stop);
    return ok;
}

/*
 * matmul.cu (embedded as text) compiled with NVRTC with this program's BLOCK_SIZE and N, then
 * linked for @arch. On success *link holds the cubin.
 */
static int compile_at_run_time(example *ex, const char *arch, fdl_link **link)
{
    const void *src = NULL;
    size_t src_size = 0;
    char def_block[32], def_n[32];
    snprintf(def_block, sizeof def_block, "BLOCK_SIZE=%d", RT_BLOCK);
    snprintf(def_n, sizeof def_n, "N=%d", N);
    const char *defines[] = {def_block, def_n, NULL};
    fdl_nvrtc_options nv = FDL_NVRTC_OPTIONS_INIT;
    nv.defines = defines;
    fdl_link_options lo = FDL_LINK_OPTIONS_INIT;
    lo.arch = arch;
    double t0 = example_now_ms();
    int st = fdl_embedded_find("matmul.cu", &src, &src_size);
    if (st != FDL_OK) {
        fdl_error e = FDL_ERROR_INIT;
        snprintf(e.message, sizeof e.message, "matmul.cu is not embedded");
        ex->err = e;
        return FDL_ENOTFOUND;
    }
    if ((st = fdl_link_create(link, &lo, &ex->err)) != FDL_OK ||
        (st = fdl_link_add_cuda(*link, src, src_size, "matmul.cu", &nv, &ex->err)) != FDL_OK ||
        (st = fdl_link_complete(*link, &ex->err)) != FDL_OK)
        return st;
    size_t size = 0;
    fdl_link_cubin(*link, &size);
    printf("matmul: matmul.cu compiled with NVRTC (-D%s -D%s) and linked for %s: %zu-byte cubin "
           "in %.1f ms\n", def_block, def_n, arch, size, example_now_ms() - t0);
    return FDL_OK;
}

int main(void)
{
    example ex = {"matmul", "float64 1024^2 naive+tiled; BLOCK_SIZE by nvcc -D and NVRTC",
                  NULL, NULL, FDL_ERROR_INIT};
    int rc = example_open(&ex, "matmul_aot.cubin");
    if (rc == FDL_EXIT_SKIP) {
        /* no GPU: the run-time compile and link still work, for the architecture built for */
        fdl_link *link = NULL;
        if (compile_at_run_time(&ex, FDLINK_EXAMPLES_SM, &link) != FDL_OK)
            rc = example_fail(&ex, NULL);
        fdl_link_destroy(link);
        return rc;
    }
    if (rc != 0)
        return rc;
    rc = 1;
    const size_t bytes = sizeof(double) * N * N;
    double *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes), *ref = calloc(1, bytes);
    fdl_buffer *da = NULL, *db = NULL, *dc = NULL;
    fdl_link *link = NULL;
    fdl_module *rt_mod = NULL;
    run runs[3] = {{"naive (ahead of time)", NULL, AOT_BLOCK, 0, 0},
                   {"tiled, BLOCK_SIZE=16 (nvcc -D)", NULL, AOT_BLOCK, 0, 0},
                   {"tiled, BLOCK_SIZE=32 (NVRTC, run time)", NULL, RT_BLOCK, 0, 0}};
    if (!a || !b || !c || !ref)
        goto cleanup;
    uint32_t seed = 1;
    for (size_t i = 0; i < (size_t)N * N; i++) {
        a[i] = (double)((int)(example_random(&seed, 0.0f, 9.0f)) - 4);
        b[i] = (double)((int)(example_random(&seed, 0.0f, 9.0f)) - 4);
    }
    /* host reference, i-k-j order: exact, since every partial sum is a small integer */
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++) {
            double aik = a[(size_t)i * N + k];
            const double *brow = b + (size_t)k * N;
            double *crow = ref + (size_t)i * N;
            for (int j = 0; j < N; j++)
                crow[j] += aik * brow[j];
        }

    /* the run-time variant: this program's own choice of BLOCK_SIZE, compiled with NVRTC */
    if (compile_at_run_time(&ex, fdl_device_arch(ex.dev), &link) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    size_t cubin_size = 0;
    const void *cubin = fdl_link_cubin(link, &cubin_size);
    if (fdl_module_load_data(&rt_mod, ex.dev, cubin, cubin_size, "matmul (NVRTC)", &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }

    if (fdl_module_get_kernel(&runs[0].kernel, ex.mod, "matmul_naive", &ex.err) != FDL_OK ||
        fdl_module_get_kernel(&runs[1].kernel, ex.mod, "matmul_tiled", &ex.err) != FDL_OK ||
        fdl_module_get_kernel(&runs[2].kernel, rt_mod, "matmul_tiled", &ex.err) != FDL_OK ||
        fdl_buffer_create(&da, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_create(&db, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_create(&dc, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_write(da, 0, a, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_write(db, 0, b, bytes, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    for (int i = 0; i < 3; i++)
        if (!time_kernel(&ex, &runs[i], dc, da, db, ref, c)) {
            if (ex.err.code)
                rc = example_fail(&ex, NULL);
            else
                example_summary(&ex, "no", "wrong result");
            goto cleanup;
        }

    /* a block of 33 x 33 = 1089 threads: refused before the driver sees it */
    uint64_t pc = fdl_buffer_address(dc), pa = fdl_buffer_address(da), pb = fdl_buffer_address(db);
    fdl_arg args[] = {FDL_ARG(pc), FDL_ARG(pa), FDL_ARG(pb)};
    fdl_launch_config bad = FDL_LAUNCH_CONFIG_INIT;
    bad.block = (fdl_dim3){33, 33, 1};
    bad.grid = (fdl_dim3){32, 32, 1};
    fdl_error gerr = FDL_ERROR_INIT;
    int st = fdl_kernel_launch_ex(runs[0].kernel, &bad, args, 3, &gerr);
    char line[1024];
    fdl_error_format(&gerr, line, sizeof line);
    printf("matmul: block 33x33: %s (%s)\n", st == FDL_EINVAL ? "refused" : "NOT refused", line);
    if (st != FDL_EINVAL || !strstr(gerr.message, "block (33,33,1) = 1089 threads exceeds")) {
        example_summary(&ex, "no", "33x33 block not refused");
        goto cleanup;
    }
    char figure[96];
    snprintf(figure, sizeof figure, "%.0f GFLOP/s tiled (NVRTC), %.0f naive", runs[2].gflops,
             runs[0].gflops);
    example_summary(&ex, "yes", figure);
    rc = 0;
cleanup:
    fdl_buffer_destroy(da);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(dc);
    fdl_module_destroy(rt_mod);
    fdl_link_destroy(link);
    free(a);
    free(b);
    free(c);
    free(ref);
    example_close(&ex);
    return rc;
}
