/*
 * Matrix multiply, float64, 1024 x 1024: a naive kernel and a shared-memory tiled kernel whose
 * BLOCK_SIZE and N are chosen by this program, once ahead of time (nvcc -D, linked at build time,
 * embedded) and once at run time (matmul.cu, embedded as text, compiled with NVRTC with the values
 * this program picks, then linked and loaded). Timed with events; verified against a host
 * reference (every entry: the inputs are small integers, so every sum is exact in any order).
 * A block of 33 x 33 threads is refused with fdlink's geometry error.
 *
 * Under compute-sanitizer, whose racecheck takes minutes for one tiled launch at 1024^2, the same
 * source is checked at 256^2 instead; N is built into the ahead-of-time cubin, so there every
 * kernel (naive, tiled at BLOCK_SIZE 16 and 32) is compiled at run time with NVRTC.
 */
#include "example.h"

#define N 1024          /* as compiled ahead of time: see CMakeLists.txt */
#define AOT_BLOCK 16    /* as compiled ahead of time */
#define RT_BLOCK 32     /* chosen now, at run time */
#define N_SANITIZED 256 /* the edge under compute-sanitizer, every kernel compiled at run time */

typedef struct run {
    const char *what;
    fdl_kernel *kernel;
    unsigned block;
    double ms, gflops;
} run;

static int time_kernel(example *ex, run *r, int n, fdl_buffer *dc, fdl_buffer *da, fdl_buffer *db,
                       const double *ref, double *c)
{
    uint64_t pc = fdl_buffer_address(dc), pa = fdl_buffer_address(da), pb = fdl_buffer_address(db);
    fdl_arg args[] = {FDL_ARG(pc), FDL_ARG(pa), FDL_ARG(pb)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.block = (fdl_dim3){r->block, r->block, 1};
    cfg.grid = (fdl_dim3){n / r->block, n / r->block, 1};
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
    r->gflops = 2.0 * n * (double)n * n / (best * 1e6);
    if (fdl_buffer_read(dc, 0, c, sizeof(double) * n * n, &ex->err) != FDL_OK)
        goto cleanup;
    fdl_verify_report rep;
    fdl_verify_options vo = FDL_VERIFY_OPTIONS_INIT; /* exact */
    int st = fdl_verify(&rep, FDL_FLOAT64, c, ref, (size_t)n * n, &vo, &ex->err);
    if (st == FDL_EVERIFY) {
        char text[1024];
        fdl_verify_format(&rep, text, sizeof text);
        fprintf(stderr, "matmul: %s: %s\n", r->what, text);
        goto cleanup;
    }
    if (st != FDL_OK)
        goto cleanup;
    printf("matmul: %-34s block %2ux%-2u  %7.3f ms  %7.1f GFLOP/s  all %d entries exact\n",
           r->what, r->block, r->block, r->ms, r->gflops, n * n);
    ok = 1;
cleanup:
    fdl_event_destroy(start);
    fdl_event_destroy(stop);
    return ok;
}

/*
 * matmul.cu (embedded as text) compiled with NVRTC with this program's BLOCK_SIZE (@block) and
 * N (@n), then linked for @arch. On success *link holds the cubin.
 */
static int compile_at_run_time(example *ex, const char *arch, int block, int n, fdl_link **link)
{
    const void *src = NULL;
    size_t src_size = 0;
    char def_block[32], def_n[32];
    snprintf(def_block, sizeof def_block, "BLOCK_SIZE=%d", block);
    snprintf(def_n, sizeof def_n, "N=%d", n);
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

/* compile_at_run_time() for this GPU, then load the cubin into *mod. */
static int load_at_run_time(example *ex, int block, int n, fdl_link **link, fdl_module **mod)
{
    int st = compile_at_run_time(ex, fdl_device_arch(ex->dev), block, n, link);
    if (st != FDL_OK)
        return st;
    size_t size = 0;
    const void *cubin = fdl_link_cubin(*link, &size);
    return fdl_module_load_data(mod, ex->dev, cubin, size, "matmul (NVRTC)", &ex->err);
}

int main(void)
{
    example ex = {"matmul", "float64 1024^2 naive+tiled; BLOCK_SIZE by nvcc -D and NVRTC",
                  NULL, NULL, FDL_ERROR_INIT};
    int rc = example_open(&ex, "matmul_aot.cubin");
    if (rc == FDL_EXIT_SKIP) {
        /* no GPU: the run-time compile and link still work, for the architecture built for */
        fdl_link *link = NULL;
        if (compile_at_run_time(&ex, FDLINK_EXAMPLES_SM, RT_BLOCK, N, &link) != FDL_OK)
            rc = example_fail(&ex, NULL);
        fdl_link_destroy(link);
        return rc;
    }
    if (rc != 0)
        return rc;
    rc = 1;
    /* under compute-sanitizer: the same source at 256^2, every kernel compiled at run time */
    const int sanitized = example_under_sanitizer();
    const int n = sanitized ? N_SANITIZED : N;
    const size_t bytes = sizeof(double) * n * n;
    double *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes), *ref = calloc(1, bytes);
    fdl_buffer *da = NULL, *db = NULL, *dc = NULL;
    fdl_link *link = NULL, *link16 = NULL;
    fdl_module *rt_mod = NULL, *rt_mod16 = NULL;
    run runs[3] = {{"naive (ahead of time)", NULL, AOT_BLOCK, 0, 0},
                   {"tiled, BLOCK_SIZE=16 (nvcc -D)", NULL, AOT_BLOCK, 0, 0},
                   {"tiled, BLOCK_SIZE=32 (NVRTC, run time)", NULL, RT_BLOCK, 0, 0}};
    if (sanitized) {
        ex.exercised = "float64 256^2 naive+tiled under compute-sanitizer; BLOCK_SIZE by NVRTC";
        runs[0].what = "naive (NVRTC, run time)";
        runs[1].what = "tiled, BLOCK_SIZE=16 (NVRTC, run time)";
        printf("matmul: under compute-sanitizer: N=%d, not %d, every kernel compiled with NVRTC\n",
               n, N);
    }
    if (!a || !b || !c || !ref)
        goto cleanup;
    uint32_t seed = 1;
    for (size_t i = 0; i < (size_t)n * n; i++) {
        a[i] = (double)((int)(example_random(&seed, 0.0f, 9.0f)) - 4);
        b[i] = (double)((int)(example_random(&seed, 0.0f, 9.0f)) - 4);
    }
    /* host reference, i-k-j order: exact, since every partial sum is a small integer */
    for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++) {
            double aik = a[(size_t)i * n + k];
            const double *brow = b + (size_t)k * n;
            double *crow = ref + (size_t)i * n;
            for (int j = 0; j < n; j++)
                crow[j] += aik * brow[j];
        }

    /* the run-time variant: this program's own choice of BLOCK_SIZE, compiled with NVRTC (and,
       under compute-sanitizer, BLOCK_SIZE 16 too, in place of the ahead-of-time cubin) */
    if (load_at_run_time(&ex, RT_BLOCK, n, &link, &rt_mod) != FDL_OK ||
        (sanitized && load_at_run_time(&ex, AOT_BLOCK, n, &link16, &rt_mod16) != FDL_OK)) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    fdl_module *mod16 = sanitized ? rt_mod16 : ex.mod;

    if (fdl_module_get_kernel(&runs[0].kernel, mod16, "matmul_naive", &ex.err) != FDL_OK ||
        fdl_module_get_kernel(&runs[1].kernel, mod16, "matmul_tiled", &ex.err) != FDL_OK ||
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
        if (!time_kernel(&ex, &runs[i], n, dc, da, db, ref, c)) {
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
    if (sanitized)
        snprintf(figure, sizeof figure, "N=%d under compute-sanitizer: checked, not benchmarked", n);
    else
        snprintf(figure, sizeof figure, "%.0f GFLOP/s tiled (NVRTC), %.0f naive", runs[2].gflops,
                 runs[0].gflops);
    example_summary(&ex, "yes", figure);
    rc = 0;
cleanup:
    fdl_buffer_destroy(da);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(dc);
    fdl_module_destroy(rt_mod);
    fdl_module_destroy(rt_mod16);
    fdl_link_destroy(link);
    fdl_link_destroy(link16);
    free(a);
    free(b);
    free(c);
    free(ref);
    example_close(&ex);
    return rc;
}
