/*
 * Device-side status: safe_sqrt returns status 1 for a negative input. One negative value is
 * planted at a known index; the host learns which function failed, with which status, at which
 * block and thread, and checks that it is the planted one.
 */
#include "example.h"

int main(void)
{
    example ex = {"device_status", "a foreign function's non-zero status reported by the host",
                  NULL, NULL, FDL_ERROR_INIT};
    int rc = example_open(&ex, "device_status.cubin");
    if (rc != 0)
        return rc;
    rc = 1;
    enum { N = 1 << 16, BLOCK = 128, BAD = 3 * BLOCK + 17 }; /* block (3,0,0) thread (17,0,0) */
    float *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    fdl_buffer *din = NULL, *dout = NULL;
    fdl_kernel *k = NULL;
    if (!in || !out)
        goto cleanup;
    for (int i = 0; i < N; i++)
        in[i] = (float)(i % 1024) * 0.5f;
    in[BAD] = -4.0f;
    if (fdl_module_get_kernel(&k, ex.mod, "sqrt_all", &ex.err) != FDL_OK ||
        fdl_buffer_create(&din, ex.dev, N * sizeof *in, &ex.err) != FDL_OK ||
        fdl_buffer_create(&dout, ex.dev, N * sizeof *out, &ex.err) != FDL_OK ||
        fdl_buffer_write(din, 0, in, N * sizeof *in, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    uint64_t po = fdl_buffer_address(dout), pi = fdl_buffer_address(din);
    int n = N;
    fdl_arg args[] = {FDL_ARG(po), FDL_ARG(pi), FDL_ARG(n)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.grid.x = N / BLOCK;
    cfg.block.x = BLOCK;
    cfg.flags = FDL_LAUNCH_SYNC; /* wait, then read and clear the status record */
    fdl_error err = FDL_ERROR_INIT;
    int st = fdl_kernel_launch_ex(k, &cfg, args, 3, &err);
    if (st != FDL_EDEVICE) {
        fprintf(stderr, "device_status: expected the launch to report safe_sqrt's status, got %s%s%s\n",
                fdl_status_name(st), st ? ": " : "", err.message);
        example_summary(&ex, "no", "status not reported");
        goto cleanup;
    }
    char line[1024];
    fdl_error_format(&err, line, sizeof line);
    printf("device_status: the launch reported: %s\n", line);
    char want[128];
    snprintf(want, sizeof want, "device function safe_sqrt returned status 1 at block (%d,0,0) thread (%d,0,0)",
             BAD / BLOCK, BAD % BLOCK);
    int located = strstr(err.message, want) != NULL && strcmp(err.symbol, "safe_sqrt") == 0 &&
                  err.backend_code == 1;
    /* the other results are still right: every valid input got its square root */
    if (fdl_buffer_read(dout, 0, out, N * sizeof *out, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    size_t bad = 0;
    for (int i = 0; i < N; i++) {
        float want_v = i == BAD ? -1.0f : sqrtf(in[i]);
        if (out[i] != want_v && bad++ < 3)
            fprintf(stderr, "device_status: out[%d] = %g, expected %g\n", i, out[i], want_v);
    }
    /* a clean launch afterwards reports nothing: the record was cleared */
    in[BAD] = 4.0f;
    if (fdl_buffer_write(din, 0, in, N * sizeof *in, &ex.err) != FDL_OK ||
        fdl_kernel_launch_ex(k, &cfg, args, 3, &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    int ok = located && bad == 0;
    example_summary(&ex, ok ? "yes" : "no",
                    ok ? "safe_sqrt status 1 at block (3,0,0) thread (17,0,0)" : "wrong report");
    rc = ok ? 0 : 1;
cleanup:
    fdl_buffer_destroy(din);
    fdl_buffer_destroy(dout);
    free(in);
    free(out);
    example_close(&ex);
    return rc;
}
