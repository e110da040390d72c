/*
 * A mixed project: one foreign function shipped only as a cubin (no source in the build), one as
 * PTX, one as LTO-IR, linked together into one caller kernel and verified, both ahead of time
 * (fdlink_link at build time, the cubin embedded) and at run time (the same four inputs, embedded,
 * linked here by the library with the declarations checked).
 */
#include "example.h"

static const char *const parts[] = {"caller.sm_90.ltoir", "square.sm_90.ltoir",
                                    "offset.compute_90.ptx", "scale.sm_90.cubin"};
#define NPARTS (sizeof parts / sizeof parts[0])

/* Link the embedded parts at run time for @arch, checking them against mixed.decl. */
static int link_at_run_time(example *ex, const char *arch, fdl_link **link, fdl_decls **decls)
{
    const void *data = NULL;
    size_t size = 0;
    fdl_link_options lo = FDL_LINK_OPTIONS_INIT;
    lo.arch = arch;
    int st;
    if ((st = fdl_embedded_find("mixed.decl", &data, &size)) != FDL_OK ||
        (st = fdl_decls_parse(decls, data, size, "mixed.decl", &ex->err)) != FDL_OK ||
        (st = fdl_link_create(link, &lo, &ex->err)) != FDL_OK ||
        (st = fdl_link_add_decls(*link, *decls, &ex->err)) != FDL_OK)
        return st ? st : FDL_ENOTFOUND;
    for (size_t i = 0; i < NPARTS; i++) {
        if ((st = fdl_embedded_find(parts[i], &data, &size)) != FDL_OK)
            return st;
        if ((st = fdl_link_add_data(*link, data, size, parts[i], FDL_KIND_AUTO, &ex->err)) != FDL_OK)
            return st;
    }
    if ((st = fdl_link_complete(*link, &ex->err)) != FDL_OK)
        return st;
    fdl_link_cubin(*link, &size);
    printf("mixed: at run time: %zu inputs (LTO-IR, LTO-IR, PTX, cubin) checked against "
           "mixed.decl and linked for %s with LTO %s: %zu-byte cubin in %.1f ms\n",
           NPARTS, arch, fdl_link_lto(*link) ? "on" : "off", size, fdl_link_wall_ms(*link));
    return FDL_OK;
}

static int run(example *ex, fdl_module *mod, const char *how, const float *in, float *out,
               const float *want, int n)
{
    fdl_kernel *k = NULL;
    fdl_buffer *din = NULL, *dout = NULL;
    int ok = 0;
    if (fdl_module_get_kernel(&k, mod, "mixed", &ex->err) != FDL_OK ||
        fdl_buffer_create(&din, ex->dev, (size_t)n * sizeof *in, &ex->err) != FDL_OK ||
        fdl_buffer_create(&dout, ex->dev, (size_t)n * sizeof *out, &ex->err) != FDL_OK ||
        fdl_buffer_write(din, 0, in, (size_t)n * sizeof *in, &ex->err) != FDL_OK ||
        fdl_buffer_zero(dout, &ex->err) != FDL_OK)
        goto cleanup;
    uint64_t po = fdl_buffer_address(dout), pi = fdl_buffer_address(din);
    float kk = 3.0f, dd = 0.5f;
    fdl_arg args[] = {FDL_ARG(po), FDL_ARG(pi), FDL_ARG(kk), FDL_ARG(dd), FDL_ARG(n)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.grid.x = (unsigned)(n / 256);
    cfg.block.x = 256;
    cfg.flags = FDL_LAUNCH_SYNC;
    if (fdl_kernel_launch_ex(k, &cfg, args, 5, &ex->err) != FDL_OK ||
        fdl_buffer_read(dout, 0, out, (size_t)n * sizeof *out, &ex->err) != FDL_OK)
        goto cleanup;
    fdl_verify_report rep;
    fdl_verify_options vo = FDL_VERIFY_OPTIONS_INIT; /* exact: small multiples of 1/4 */
    int st = fdl_verify(&rep, FDL_FLOAT32, out, want, (size_t)n, &vo, &ex->err);
    char text[1024];
    fdl_verify_format(&rep, text, sizeof text);
    printf("mixed: %s: %s\n", how, text);
    ok = st == FDL_OK;
cleanup:
    fdl_buffer_destroy(din);
    fdl_buffer_destroy(dout);
    return ok;
}

int main(void)
{
    example ex = {"mixed", "one kernel from cubin + PTX + LTO-IR; AOT and run time",
                  NULL, NULL, FDL_ERROR_INIT};
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    fdl_module *rt_mod = NULL;
    int rc = example_open(&ex, "mixed.cubin");
    if (rc == FDL_EXIT_SKIP) {
        if (link_at_run_time(&ex, FDLINK_EXAMPLES_SM, &link, &decls) != FDL_OK)
            rc = example_fail(&ex, NULL);
        goto cleanup;
    }
    if (rc != 0)
        goto cleanup;
    rc = 1;
    enum { N = 1 << 20 };
    float *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out), *want = malloc(N * sizeof *want);
    if (!in || !out || !want)
        goto free_data;
    for (int i = 0; i < N; i++) {
        in[i] = (float)(i % 64) * 0.25f - 8.0f;
        want[i] = in[i] * in[i] * 3.0f + 0.5f;
    }
    if (link_at_run_time(&ex, fdl_device_arch(ex.dev), &link, &decls) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto free_data;
    }
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    if (fdl_module_load_data(&rt_mod, ex.dev, cubin, size, "mixed (run time)", &ex.err) != FDL_OK) {
        rc = example_fail(&ex, NULL);
        goto free_data;
    }
    int ok = run(&ex, ex.mod, "linked ahead of time", in, out, want, N);
    ok = ok && run(&ex, rt_mod, "linked at run time", in, out, want, N);
    if (!ok && ex.err.code) {
        rc = example_fail(&ex, NULL);
        goto free_data;
    }
    example_summary(&ex, ok ? "yes" : "no", ok ? "both links verified" : "wrong results");
    rc = ok ? 0 : 1;
free_data:
    free(in);
    free(out);
    free(want);
cleanup:
    fdl_module_destroy(rt_mod);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    example_close(&ex);
    return rc;
}
