/*
 * Vector add: allocate, copy in, launch, copy out, verify, on 2^24 float32 elements.
 * The kernel was compiled and linked at build time and is embedded in this program.
 */
#include "example.h"

int main(void)
{
    example ex = {"vector_add", "buffers, copies, launch of 2^24 float32 adds", NULL, NULL,
                  FDL_ERROR_INIT};
    int rc = example_open(&ex, "vector_add.cubin");
    if (rc != 0)
        return rc;
    rc = 1;
    const int n = 1 << 24;
    const size_t bytes = (size_t)n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    fdl_buffer *da = NULL, *db = NULL, *dc = NULL;
    fdl_kernel *k = NULL;
    if (!a || !b || !c) {
        fprintf(stderr, "vector_add: out of host memory\n");
        goto cleanup;
    }
    uint32_t seed = 2024;
    for (int i = 0; i < n; i++) {
        a[i] = example_random(&seed, -1000.0f, 1000.0f);
        b[i] = example_random(&seed, -1000.0f, 1000.0f);
    }
    if (fdl_module_get_kernel(&k, ex.mod, "vector_add", &ex.err) != FDL_OK ||
        fdl_buffer_create(&da, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_create(&db, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_create(&dc, ex.dev, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_write(da, 0, a, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_write(db, 0, b, bytes, &ex.err) != FDL_OK ||
        fdl_buffer_zero(dc, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    uint64_t pc = fdl_buffer_address(dc), pa = fdl_buffer_address(da), pb = fdl_buffer_address(db);
    int nn = n;
    void *args[] = {&pc, &pa, &pb, &nn};
    fdl_dim3 grid = {(unsigned)((n + 255) / 256), 1, 1}, block = {256, 1, 1};
    double best = 1e30;
    for (int rep = 0; rep < example_repeats(10); rep++) {
        double t0 = example_now_ms();
        if (fdl_kernel_launch(k, grid, block, 0, args, 4, &ex.err) != FDL_OK ||
            fdl_device_synchronize(ex.dev, &ex.err) != FDL_OK) {
            rc = example_fail(&ex, NULL);
            goto cleanup;
        }
        double ms = example_now_ms() - t0;
        if (ms < best)
            best = ms;
    }
    if (fdl_buffer_read(dc, 0, c, bytes, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    size_t bad = 0;
    for (int i = 0; i < n; i++)
        if (c[i] != a[i] + b[i] && bad++ < 3)
            fprintf(stderr, "vector_add: c[%d] = %.9g, expected %.9g\n", i, c[i], a[i] + b[i]);
    char figure[64];
    snprintf(figure, sizeof figure, "%.0f GB/s", 3.0 * (double)bytes / (best * 1e6));
    printf("vector_add: %d elements on %s, %zu mismatches, best of 10: %.3f ms (%s)\n", n,
           fdl_device_name(ex.dev), bad, best, figure);
    example_summary(&ex, bad ? "no" : "yes", figure);
    rc = bad ? 1 : 0;
cleanup:
    fdl_buffer_destroy(da);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(dc);
    free(a);
    free(b);
    free(c);
    example_close(&ex);
    return rc;
}
