/* A program that carries its device code: the cubin and the fatbin (sm_80, sm_90, PTX) linked at
 * build time are embedded in it, and it runs the kernel from each. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <fdlink/embed.h>
#include <fdlink/fdlink.h>

static int fail(const fdl_error *err)
{
    char line[1024];
    fdl_error_format(err, line, sizeof line);
    fprintf(stderr, "consumer: error: %s\n", line);
    return 1;
}

/* Runs scale_offset from one embedded image (a cubin, or a fatbin whose image for this GPU the
 * driver picks) and verifies every result. */
static int run_image(fdl_device *dev, const char *name)
{
    const void *image = NULL;
    size_t size = 0;
    if (fdl_embedded_find(name, &image, &size) != FDL_OK) {
        fprintf(stderr, "consumer: %s is not embedded\n", name);
        return 1;
    }
    fdl_error err = FDL_ERROR_INIT;
    enum { N = 1 << 16 };
    float *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    fdl_module *mod = NULL;
    fdl_kernel *k = NULL;
    fdl_buffer *din = NULL, *dout = NULL;
    int rc = 1;
    if (!in || !out)
        goto cleanup;
    for (int i = 0; i < N; i++)
        in[i] = (float)(i % 1000) * 0.25f - 100.0f;
    if (fdl_module_load_data(&mod, dev, image, size, name, &err) != FDL_OK ||
        fdl_module_get_kernel(&k, mod, "scale_offset", &err) != FDL_OK ||
        fdl_buffer_create(&din, dev, N * sizeof *in, &err) != FDL_OK ||
        fdl_buffer_create(&dout, dev, N * sizeof *out, &err) != FDL_OK ||
        fdl_buffer_write(din, 0, in, N * sizeof *in, &err) != FDL_OK ||
        fdl_buffer_zero(dout, &err) != FDL_OK) {
        fail(&err);
        goto cleanup;
    }
    uint64_t po = fdl_buffer_address(dout), pi = fdl_buffer_address(din);
    float kk = 3.0f, dd = 0.5f;
    int n = N;
    void *args[] = {&po, &pi, &kk, &dd, &n};
    fdl_dim3 grid = {N / 256, 1, 1}, block = {256, 1, 1};
    if (fdl_kernel_launch(k, grid, block, 0, args, 5, &err) != FDL_OK ||
        fdl_device_synchronize(dev, &err) != FDL_OK ||
        fdl_buffer_read(dout, 0, out, N * sizeof *out, &err) != FDL_OK) {
        fail(&err);
        goto cleanup;
    }
    size_t bad = 0;
    for (int i = 0; i < N; i++) {
        float want = in[i] * kk + dd; /* exact: the values are small multiples of 1/4 */
        if (out[i] != want && bad++ < 3)
            fprintf(stderr, "consumer: %s: out[%d] = %g, expected %g\n", name, i, out[i], want);
    }
    if (bad) {
        fprintf(stderr, "consumer: %s: %zu of %d results differ\n", name, bad, N);
        goto cleanup;
    }
    printf("scale_offset from %s (%zu bytes) on %s (%s): %d results verified\n", name, size,
           fdl_device_name(dev), fdl_device_arch(dev), N);
    rc = 0;
cleanup:
    fdl_buffer_destroy(din);
    fdl_buffer_destroy(dout);
    fdl_module_destroy(mod);
    free(in);
    free(out);
    return rc;
}

int main(void)
{
    const void *cubin = NULL, *fatbin = NULL;
    size_t size = 0, fsize = 0;
    if (fdl_embedded_find("app.cubin", &cubin, &size) != FDL_OK ||
        fdl_embedded_find("app.fatbin", &fatbin, &fsize) != FDL_OK) {
        fprintf(stderr, "consumer: app.cubin or app.fatbin is not embedded\n");
        return 1;
    }
    if (size < 64 || memcmp(cubin, "\177ELF", 4) != 0 || ((const unsigned char *)cubin)[18] != 190) {
        fprintf(stderr, "consumer: the embedded app.cubin is not a cubin\n");
        return 1;
    }
    static const unsigned char fatbin_magic[4] = {0x50, 0xed, 0x55, 0xba};
    if (fsize < 16 || memcmp(fatbin, fatbin_magic, 4) != 0) {
        fprintf(stderr, "consumer: the embedded app.fatbin is not a fatbin\n");
        return 1;
    }
    printf("embedded app.cubin: %zu bytes, app.fatbin: %zu bytes\n", size, fsize);

    fdl_error err = FDL_ERROR_INIT;
    int ndev = 0;
    if (fdl_device_count(&ndev, &err) != FDL_OK || ndev == 0) {
        printf("no GPU (%s): launch skipped\n", err.message[0] ? err.message : "0 devices");
        return FDL_EXIT_SKIP;
    }
    fdl_device *dev = NULL;
    if (fdl_device_open(&dev, -1, &err) != FDL_OK)
        return fail(&err);
    int rc = run_image(dev, "app.cubin") || run_image(dev, "app.fatbin");
    fdl_device_destroy(dev);
    return rc;
}
