/*
 * Foreign functions from Numba's documentation, end to end, linked at run time:
 *
 *   declarations -> header -> nvcc -> PTX      (at build time: fdlink_add_device_library)
 *   check -> link -> load -> launch -> verify  (here, at run time, through the library)
 *
 * mul_f32_f32 called from multiply_vectors; sum_reduce(float *ret, float *array, int n) handed a
 * pointer to device data; add_cabi, a C-ABI function (abi=c).
 *
 * usage: foreign_functions [--arch sm_NN] FUNCTIONS.decl FUNCTIONS.cuh INPUT.ptx...
 * Without a GPU it checks and links for --arch (default sm_90), says the launches were skipped and
 * exits 77 (FDL_EXIT_SKIP). Exit status 1 on any failure, including a result that does not verify.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fdlink/fdlink.h"

#define MAX_INPUTS 16

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fail(const fdl_error *err)
{
    char line[1024];
    fdl_error_format(err, line, sizeof line);
    fprintf(stderr, "foreign_functions: error: %s\n", line);
    if (err->log && err->log[0])
        fprintf(stderr, "%s\n", err->log);
    return 1;
}

static void on_diag(void *ctx, const fdl_error *diag)
{
    (void)ctx;
    fail(diag);
}

/* Deterministic, non-trivial test data (xorshift), in [-8, 8). */
static float next_float(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (float)(x >> 8) / (float)(1u << 24) * 16.0f - 8.0f;
}

typedef struct run_ctx {
    fdl_device *dev;
    fdl_module *mod;
    fdl_error err;
    double gbps; /* multiply_vectors' bandwidth, the key figure */
} run_ctx;

#define EXERCISED "Numba FFI: mul_f32_f32, sum_reduce(ptr), add_cabi (abi=c)"

/*
 * Look up @kernel, upload its two inputs of @bytes each and allocate a zeroed output of the same
 * size. On failure prints the error and returns 0; the buffers made so far are the caller's.
 */
static int setup_binary(run_ctx *c, const char *kernel, const void *a, const void *b,
                        size_t bytes, fdl_kernel **k, fdl_buffer **da, fdl_buffer **db,
                        fdl_buffer **dout)
{
    if (fdl_module_get_kernel(k, c->mod, kernel, &c->err) != FDL_OK ||
        fdl_buffer_create(da, c->dev, bytes, &c->err) != FDL_OK ||
        fdl_buffer_create(db, c->dev, bytes, &c->err) != FDL_OK ||
        fdl_buffer_create(dout, c->dev, bytes, &c->err) != FDL_OK ||
        fdl_buffer_write(*da, 0, a, bytes, &c->err) != FDL_OK ||
        fdl_buffer_write(*db, 0, b, bytes, &c->err) != FDL_OK ||
        fdl_buffer_zero(*dout, &c->err) != FDL_OK) {
        fail(&c->err);
        return 0;
    }
    return 1;
}

/* Launch, wait, and put the time both took (host clock) in *ms; 0 on failure, error in c->err. */
static int launch_sync(run_ctx *c, fdl_kernel *k, fdl_dim3 grid, fdl_dim3 block, void **args,
                       size_t nargs, double *ms)
{
    double t0 = now_ms();
    if (fdl_kernel_launch(k, grid, block, 0, args, nargs, &c->err) != FDL_OK ||
        fdl_device_synchronize(c->dev, &c->err) != FDL_OK)
        return 0;
    *ms = now_ms() - t0;
    return 1;
}

/* multiply_vectors: out[i] = mul_f32_f32(a[i], b[i]) over 2^24 elements, verified exactly. */
static int run_multiply(run_ctx *c)
{
    const int n = 1 << 24;
    const size_t bytes = (size_t)n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *out = malloc(bytes);
    fdl_buffer *da = NULL, *db = NULL, *dout = NULL;
    fdl_kernel *k = NULL;
    int ok = 0;
    if (!a || !b || !out) {
        fprintf(stderr, "foreign_functions: error: out of host memory\n");
        goto cleanup;
    }
    uint32_t seed = 12345;
    for (int i = 0; i < n; i++) {
        a[i] = next_float(&seed);
        b[i] = next_float(&seed);
    }
    if (!setup_binary(c, "multiply_vectors", a, b, bytes, &k, &da, &db, &dout))
        goto cleanup;
    uint64_t pout = fdl_buffer_address(dout), pa = fdl_buffer_address(da),
             pb = fdl_buffer_address(db);
    int nn = n;
    void *args[] = {&pout, &pa, &pb, &nn};
    fdl_dim3 block = {256, 1, 1}, grid = {(unsigned)((n + 255) / 256), 1, 1};
    double ms = 0, best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        if (!launch_sync(c, k, grid, block, args, 4, &ms)) {
            fail(&c->err);
            goto cleanup;
        }
        if (ms < best)
            best = ms;
    }
    if (fdl_buffer_read(dout, 0, out, bytes, &c->err) != FDL_OK) {
        fail(&c->err);
        goto cleanup;
    }
    size_t bad = 0, first = 0;
    for (int i = 0; i < n; i++)
        if (out[i] != a[i] * b[i] && bad++ == 0)
            first = (size_t)i;
    if (bad) {
        printf("  %-17s %d elements: %zu mismatches, first at %zu: got %.9g expected %.9g\n",
               "multiply_vectors", n, bad, first, out[first], a[first] * b[first]);
        goto cleanup;
    }
    c->gbps = 3.0 * (double)bytes / (best * 1e6);
    printf("  %-17s %8d elements  verified exactly   %.3f ms  %.0f GB/s\n", "multiply_vectors", n,
           best, c->gbps);
    ok = 1;
cleanup:
    fdl_buffer_destroy(da);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(dout);
    free(a);
    free(b);
    free(out);
    return ok;
}

/* sum_rows: sums[r] = sum_reduce(&data[r * len], len): a pointer into device memory. */
static int run_sum_rows(run_ctx *c)
{
    const int rows = 8192, len = 1000;
    const size_t count = (size_t)rows * (size_t)len;
    float *data = malloc(count * sizeof(float)), *sums = malloc((size_t)rows * sizeof(float));
    fdl_buffer *ddata = NULL, *dsums = NULL;
    fdl_kernel *k = NULL;
    int ok = 0;
    if (!data || !sums) {
        fprintf(stderr, "foreign_functions: error: out of host memory\n");
        goto cleanup;
    }
    uint32_t seed = 777;
    for (size_t i = 0; i < count; i++)
        data[i] = next_float(&seed);
    if (fdl_module_get_kernel(&k, c->mod, "sum_rows", &c->err) != FDL_OK ||
        fdl_buffer_create(&ddata, c->dev, count * sizeof(float), &c->err) != FDL_OK ||
        fdl_buffer_create(&dsums, c->dev, (size_t)rows * sizeof(float), &c->err) != FDL_OK ||
        fdl_buffer_write(ddata, 0, data, count * sizeof(float), &c->err) != FDL_OK ||
        fdl_buffer_zero(dsums, &c->err) != FDL_OK) {
        fail(&c->err);
        goto cleanup;
    }
    uint64_t ps = fdl_buffer_address(dsums), pd = fdl_buffer_address(ddata);
    int r = rows, l = len;
    void *args[] = {&ps, &pd, &r, &l};
    fdl_dim3 block = {128, 1, 1}, grid = {(unsigned)((rows + 127) / 128), 1, 1};
    double ms = 0;
    if (!launch_sync(c, k, grid, block, args, 4, &ms) ||
        fdl_buffer_read(dsums, 0, sums, (size_t)rows * sizeof(float), &c->err) != FDL_OK) {
        fail(&c->err);
        goto cleanup;
    }
    size_t bad = 0;
    for (int row = 0; row < rows; row++) {
        /* same order of float additions as sum_reduce: the result must be bit-identical */
        float ref = 0.0f;
        for (int i = 0; i < len; i++)
            ref += data[(size_t)row * (size_t)len + (size_t)i];
        if (sums[row] != ref && bad++ == 0)
            printf("  %-17s row %d: got %.9g expected %.9g\n", "sum_rows", row, sums[row], ref);
    }
    if (bad) {
        printf("  %-17s %zu of %d rows differ\n", "sum_rows", bad, rows);
        goto cleanup;
    }
    printf("  %-17s %8d rows      verified exactly   %.3f ms  (%d floats per row)\n", "sum_rows",
           rows, ms, len);
    ok = 1;
cleanup:
    fdl_buffer_destroy(ddata);
    fdl_buffer_destroy(dsums);
    free(data);
    free(sums);
    return ok;
}

/* add_vectors_u32: out[i] = add_cabi(a[i], b[i]), a C-ABI foreign function (wrapping add). */
static int run_add_cabi(run_ctx *c)
{
    const int n = 1 << 20;
    const size_t bytes = (size_t)n * sizeof(uint32_t);
    uint32_t *a = malloc(bytes), *b = malloc(bytes), *out = malloc(bytes);
    fdl_buffer *da = NULL, *db = NULL, *dout = NULL;
    fdl_kernel *k = NULL;
    int ok = 0;
    if (!a || !b || !out) {
        fprintf(stderr, "foreign_functions: error: out of host memory\n");
        goto cleanup;
    }
    uint32_t seed = 99;
    for (int i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
        a[i] = seed;
        seed ^= seed << 13, seed ^= seed >> 17, seed ^= seed << 5;
        b[i] = seed;
    }
    if (!setup_binary(c, "add_vectors_u32", a, b, bytes, &k, &da, &db, &dout))
        goto cleanup;
    uint64_t pout = fdl_buffer_address(dout), pa = fdl_buffer_address(da),
             pb = fdl_buffer_address(db);
    int nn = n;
    void *args[] = {&pout, &pa, &pb, &nn};
    fdl_dim3 block = {256, 1, 1}, grid = {(unsigned)((n + 255) / 256), 1, 1};
    double ms = 0;
    if (!launch_sync(c, k, grid, block, args, 4, &ms) ||
        fdl_buffer_read(dout, 0, out, bytes, &c->err) != FDL_OK) {
        fail(&c->err);
        goto cleanup;
    }
    size_t bad = 0;
    for (int i = 0; i < n; i++)
        if (out[i] != (uint32_t)(a[i] + b[i]) && bad++ == 0)
            printf("  %-17s element %d: got %u expected %u\n", "add_vectors_u32", i, out[i],
                   (uint32_t)(a[i] + b[i]));
    if (bad) {
        printf("  %-17s %zu of %d elements differ\n", "add_vectors_u32", bad, n);
        goto cleanup;
    }
    printf("  %-17s %8d elements  verified exactly   %.3f ms  (abi=c)\n", "add_vectors_u32", n,
           ms);
    ok = 1;
cleanup:
    fdl_buffer_destroy(da);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(dout);
    free(a);
    free(b);
    free(out);
    return ok;
}

int main(int argc, char **argv)
{
    const char *arch_default = "sm_90";
    const char *decl_path = NULL, *header_path = NULL;
    const char *inputs[MAX_INPUTS];
    size_t ninputs = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc)
            arch_default = argv[++i];
        else if (!decl_path)
            decl_path = argv[i];
        else if (!header_path)
            header_path = argv[i];
        else if (ninputs < MAX_INPUTS)
            inputs[ninputs++] = argv[i];
    }
    if (!decl_path || !header_path || ninputs == 0) {
        fprintf(stderr, "usage: foreign_functions [--arch sm_NN] FUNCTIONS.decl FUNCTIONS.cuh "
                        "INPUT.ptx...\n");
        return 2;
    }

    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL;
    fdl_ptx *ptx[MAX_INPUTS] = {0};
    fdl_link *link = NULL;
    run_ctx c = {NULL, NULL, FDL_ERROR_INIT, 0.0};
    int rc = 1;

    printf("fdlink %s: foreign functions, declared, compiled, checked, linked and run\n", fdl_version());
    /* 1. declarations */
    if (fdl_decls_load(&decls, decl_path, &err) != FDL_OK) {
        fail(&err);
        goto cleanup;
    }
    printf("  %-17s %s: %zu functions\n", "declare", decl_path, fdl_decls_count(decls));
    for (size_t i = 0; i < fdl_decls_count(decls); i++) {
        const fdl_decl *d = fdl_decls_get(decls, i);
        char sig[256];
        fdl_sig_format(&d->sig, sig, sizeof sig);
        printf("  %-17s   %s: %s%s\n", "", d->name, sig, d->abi == FDL_ABI_C ? " abi=c" : "");
    }
    printf("  %-17s %s (generated at build time, force-included by nvcc)\n", "header",
           header_path);

    /* 2. check the compiled PTX against the declarations */
    double t0 = now_ms();
    for (size_t i = 0; i < ninputs; i++)
        if (fdl_ptx_scan_file(&ptx[i], inputs[i], &err) != FDL_OK) {
            fail(&err);
            goto cleanup;
        }
    fdl_check_options copts = FDL_CHECK_OPTIONS_INIT;
    copts.on_diag = on_diag;
    size_t ndiags = 0;
    if (fdl_abi_check(&ndiags, decls, (const fdl_ptx *const *)ptx, ninputs, &copts, &err) !=
        FDL_OK) {
        fprintf(stderr, "foreign_functions: %zu ABI errors\n", ndiags);
        goto cleanup;
    }
    printf("  %-17s %zu declarations conform in %zu PTX inputs (%.2f ms)\n", "check",
           fdl_decls_count(decls), ninputs, now_ms() - t0);

    /* 3. is there a GPU? its architecture is the link target */
    int ndev = 0;
    int st = fdl_device_count(&ndev, &c.err);
    const char *arch = arch_default;
    if (st == FDL_OK && ndev > 0) {
        if (fdl_device_open(&c.dev, -1, &c.err) != FDL_OK) {
            fail(&c.err);
            goto cleanup;
        }
        arch = fdl_device_arch(c.dev);
    }

    /* 4. link with nvJitLink */
    fdl_link_options lopts = FDL_LINK_OPTIONS_INIT;
    lopts.arch = arch;
    if (fdl_link_create(&link, &lopts, &err) != FDL_OK ||
        fdl_link_add_decls(link, decls, &err) != FDL_OK) {
        fail(&err);
        goto cleanup;
    }
    for (size_t i = 0; i < ninputs; i++)
        if (fdl_link_add_file(link, inputs[i], FDL_KIND_PTX, &err) != FDL_OK) {
            fail(&err);
            goto cleanup;
        }
    if (fdl_link_complete(link, &err) != FDL_OK) {
        fail(&err);
        goto cleanup;
    }
    size_t cubin_size = 0;
    const void *cubin = fdl_link_cubin(link, &cubin_size);
    unsigned jl_major = 0, jl_minor = 0;
    fdl_link_backend_version(&jl_major, &jl_minor, NULL);
    printf("  %-17s nvJitLink %u.%u, %s: %zu inputs -> %zu-byte cubin in %.1f ms\n", "link",
           jl_major, jl_minor, arch, ninputs, cubin_size, fdl_link_wall_ms(link));

    if (!c.dev) {
        printf("  %-17s none (%s)\n", "device", c.err.message[0] ? c.err.message : "0 devices");
        printf("result: declared, compiled, checked and linked; no GPU, so load, launch and "
               "verify were skipped\n");
        printf("fdlink-example: foreign_functions | %s | verified skipped | link %.1f ms\n",
               EXERCISED, fdl_link_wall_ms(link));
        rc = FDL_EXIT_SKIP;
        goto cleanup;
    }

    /* 5. load, launch, verify */
    int dv = fdl_device_driver_version(c.dev);
    printf("  %-17s %s (%s), driver %d.%d\n", "device", fdl_device_name(c.dev),
           fdl_device_arch(c.dev), dv / 1000, (dv % 1000) / 10);
    if (fdl_module_load_data(&c.mod, c.dev, cubin, cubin_size, "showcase.cubin", &c.err) !=
        FDL_OK) {
        fail(&c.err);
        goto cleanup;
    }
    int ok = run_multiply(&c);
    ok = run_sum_rows(&c) && ok;
    ok = run_add_cabi(&c) && ok;
    printf("result: %s\n", ok ? "all results verified on the GPU" : "VERIFICATION FAILED");
    printf("fdlink-example: foreign_functions | %s | verified %s | %.0f GB/s, link %.1f ms\n",
           EXERCISED, ok ? "yes" : "no", c.gbps, fdl_link_wall_ms(link));
    rc = ok ? 0 : 1;
cleanup:
    fdl_module_destroy(c.mod);
    fdl_device_destroy(c.dev);
    fdl_link_destroy(link);
    for (size_t i = 0; i < ninputs; i++)
        fdl_ptx_destroy(ptx[i]);
    fdl_decls_destroy(decls);
    return rc;
}
