/*
 * Structures: an array of struct Point { float x, y; } transformed on the device (x *= 2,
 * y += 1). The host and device layouts are asserted identical at compile time on both sides
 * (point.h) and compared at run time.
 */
#include "example.h"
#include "point.h"

int main(void)
{
    example ex = {"structs", "struct Point array; host and device layouts compared", NULL, NULL,
                  FDL_ERROR_INIT};
    int rc = example_open(&ex, "structs.cubin");
    if (rc != 0)
        return rc;
    rc = 1;
    const int n = 1 << 20;
    Point *pts = malloc((size_t)n * sizeof *pts), *out = malloc((size_t)n * sizeof *out);
    fdl_buffer *dpts = NULL, *dlayout = NULL;
    fdl_kernel *transform = NULL, *layout = NULL;
    if (!pts || !out) {
        fprintf(stderr, "structs: out of host memory\n");
        goto cleanup;
    }
    uint32_t seed = 7;
    for (int i = 0; i < n; i++) {
        pts[i].x = example_random(&seed, -100.0f, 100.0f);
        pts[i].y = example_random(&seed, -100.0f, 100.0f);
    }
    /* 1. the device's view of the layout */
    unsigned host_layout[4] = {sizeof(Point), offsetof(Point, x), offsetof(Point, y),
                               _Alignof(Point)};
    unsigned dev_layout[4] = {0, 0, 0, 0};
    if (fdl_module_get_kernel(&layout, ex.mod, "point_layout", &ex.err) != FDL_OK ||
        fdl_module_get_kernel(&transform, ex.mod, "transform_points", &ex.err) != FDL_OK ||
        fdl_buffer_create(&dlayout, ex.dev, sizeof dev_layout, &ex.err) != FDL_OK ||
        fdl_buffer_zero(dlayout, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    uint64_t pl = fdl_buffer_address(dlayout);
    void *largs[] = {&pl};
    fdl_dim3 one = {1, 1, 1};
    if (fdl_kernel_launch(layout, one, one, 0, largs, 1, &ex.err) != FDL_OK ||
        fdl_buffer_read(dlayout, 0, dev_layout, sizeof dev_layout, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    printf("structs: Point on the host: size %u, x at %u, y at %u, align %u; on the device: "
           "size %u, x at %u, y at %u, align %u\n",
           host_layout[0], host_layout[1], host_layout[2], host_layout[3], dev_layout[0],
           dev_layout[1], dev_layout[2], dev_layout[3]);
    if (memcmp(host_layout, dev_layout, sizeof host_layout) != 0) {
        fprintf(stderr, "structs: the host and device layouts of Point differ\n");
        example_summary(&ex, "no", "layouts differ");
        goto cleanup;
    }
    /* 2. transform the array */
    if (fdl_buffer_create(&dpts, ex.dev, (size_t)n * sizeof *pts, &ex.err) != FDL_OK ||
        fdl_buffer_write(dpts, 0, pts, (size_t)n * sizeof *pts, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    uint64_t pp = fdl_buffer_address(dpts);
    int nn = n;
    void *args[] = {&pp, &nn};
    fdl_dim3 grid = {(unsigned)((n + 255) / 256), 1, 1}, block = {256, 1, 1};
    double t0 = example_now_ms();
    if (fdl_kernel_launch(transform, grid, block, 0, args, 2, &ex.err) != FDL_OK ||
        fdl_device_synchronize(ex.dev, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    double ms = example_now_ms() - t0;
    if (fdl_buffer_read(dpts, 0, out, (size_t)n * sizeof *out, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    size_t bad = 0;
    for (int i = 0; i < n; i++)
        if ((out[i].x != pts[i].x * 2.0f || out[i].y != pts[i].y + 1.0f) && bad++ < 3)
            fprintf(stderr, "structs: point %d = (%g, %g), expected (%g, %g)\n", i, out[i].x,
                    out[i].y, pts[i].x * 2.0f, pts[i].y + 1.0f);
    char figure[64];
    snprintf(figure, sizeof figure, "%d points in %.3f ms", n, ms);
    printf("structs: %d points transformed, %zu mismatches\n", n, bad);
    example_summary(&ex, bad ? "no" : "yes", figure);
    rc = bad ? 1 : 0;
cleanup:
    fdl_buffer_destroy(dpts);
    fdl_buffer_destroy(dlayout);
    free(pts);
    free(out);
    example_close(&ex);
    return rc;
}
