/*
 * An extern device library: a few math functions built by this example as a static device
 * library (nvcc -lib, FORMATS library), linked into a caller at build time through the CMake
 * package, and a kernel that launches a child kernel through libcudadevrt (-lcudadevrt).
 */
#include "example.h"

static float host_smoothstep(float e0, float e1, float x)
{
    float t = (x - e0) / (e1 - e0);
    t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
    return t * t * (3.0f - 2.0f * t);
}

int main(void)
{
    example ex = {"device_library", "static device library (nvcc -lib); child kernel via cudadevrt",
                  NULL, NULL, FDL_ERROR_INIT};
    int rc = example_open(&ex, "device_library.cubin");
    if (rc != 0)
        return rc;
    rc = 1;
    enum { N = 1 << 20, PARENTS = 512 };
    float *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out), *want = malloc(N * sizeof *want);
    unsigned *kids = malloc(PARENTS * 256 * sizeof *kids), *kids_want = malloc(PARENTS * 256 * sizeof *kids_want);
    fdl_buffer *din = NULL, *dout = NULL, *dkids = NULL;
    fdl_kernel *shade = NULL, *parent = NULL;
    if (!in || !out || !want || !kids || !kids_want)
        goto cleanup;
    uint32_t seed = 5;
    for (int i = 0; i < N; i++) {
        in[i] = example_random(&seed, -1.5f, 1.5f);
        want[i] = 10.0f + host_smoothstep(-1.0f, 1.0f, in[i]) * 10.0f;
    }
    for (unsigned i = 0; i < PARENTS * 256; i++)
        kids_want[i] = 2u * i + 1u;
    if (fdl_module_get_kernel(&shade, ex.mod, "shade", &ex.err) != FDL_OK ||
        fdl_module_get_kernel(&parent, ex.mod, "parent", &ex.err) != FDL_OK ||
        fdl_buffer_create(&din, ex.dev, N * sizeof *in, &ex.err) != FDL_OK ||
        fdl_buffer_create(&dout, ex.dev, N * sizeof *out, &ex.err) != FDL_OK ||
        fdl_buffer_create(&dkids, ex.dev, PARENTS * 256 * sizeof *kids, &ex.err) != FDL_OK ||
        fdl_buffer_write(din, 0, in, N * sizeof *in, &ex.err) != FDL_OK ||
        fdl_buffer_zero(dout, &ex.err) != FDL_OK || fdl_buffer_zero(dkids, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    uint64_t po = fdl_buffer_address(dout), pi = fdl_buffer_address(din), pk = fdl_buffer_address(dkids);
    int n = N;
    fdl_arg sargs[] = {FDL_ARG(po), FDL_ARG(pi), FDL_ARG(n)};
    fdl_arg pargs[] = {FDL_ARG(pk)};
    fdl_launch_config scfg = FDL_LAUNCH_CONFIG_INIT, pcfg = FDL_LAUNCH_CONFIG_INIT;
    scfg.grid.x = N / 256;
    scfg.block.x = 256;
    pcfg.grid.x = PARENTS;
    pcfg.block.x = 32;
    double t0 = example_now_ms();
    if (fdl_kernel_launch_ex(shade, &scfg, sargs, 3, &ex.err) != FDL_OK ||
        fdl_kernel_launch_ex(parent, &pcfg, pargs, 1, &ex.err) != FDL_OK ||
        fdl_device_synchronize(ex.dev, &ex.err) != FDL_OK ||
        fdl_buffer_read(dout, 0, out, N * sizeof *out, &ex.err) != FDL_OK ||
        fdl_buffer_read(dkids, 0, kids, PARENTS * 256 * sizeof *kids, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    double ms = example_now_ms() - t0;
    /* the device may contract a*b+c into one FMA: a few ULP from the host's rounding */
    fdl_verify_options vo = FDL_VERIFY_OPTIONS_INIT;
    vo.mode = FDL_VERIFY_ULP;
    vo.max_ulp = 4;
    fdl_verify_report r1, r2;
    char text[1024];
    int s1 = fdl_verify(&r1, FDL_FLOAT32, out, want, N, &vo, &ex.err);
    fdl_verify_options exact = FDL_VERIFY_OPTIONS_INIT;
    int s2 = fdl_verify(&r2, FDL_UINT32, kids, kids_want, PARENTS * 256, &exact, &ex.err);
    fdl_verify_format(&r1, text, sizeof text);
    printf("device_library: shade through smoothstepf/clampf/lerpf (libdevmath.a): %s\n", text);
    fdl_verify_format(&r2, text, sizeof text);
    printf("device_library: %d parent blocks each launched a child grid: %s\n", PARENTS, text);
    int ok = s1 == FDL_OK && s2 == FDL_OK;
    char figure[64];
    snprintf(figure, sizeof figure, "%d + %d results in %.3f ms", N, PARENTS * 256, ms);
    example_summary(&ex, ok ? "yes" : "no", figure);
    rc = ok ? 0 : 1;
cleanup:
    fdl_buffer_destroy(din);
    fdl_buffer_destroy(dout);
    fdl_buffer_destroy(dkids);
    free(in);
    free(out);
    free(want);
    free(kids);
    free(kids_want);
    example_close(&ex);
    return rc;
}
