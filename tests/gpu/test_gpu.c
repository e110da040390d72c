/*
 * GPU tests of the host runtime (fdlink/host.h, fdlink/verify.h, fdlink/device.h): devices,
 * modules of every kind (cubin, fatbin, PTX; kernels of tests/gpu/src compiled by nvcc at build
 * time, and the fixtures of tests/data/link linked at run time), kernel lookup, attributes and
 * parameters, checked, cooperative and prepared launches, buffers, streams, events,
 * verification and the device status record, each checked by its results on a real device:
 * outputs start as sentinels, so a kernel that never ran cannot pass.
 *
 * Every test skips where fdl_device_count finds no driver or no device. Criterion runs each test
 * in its own process, so CUDA is initialised afresh in each (never before the fork). Nothing here
 * faults or makes a driver call that fails on purpose, so that the whole binary runs clean under
 * compute-sanitizer: those tests are in test_gpu_fault.c (label fault).
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdlink/decl.h"
#include "fdlink/host.h"
#include "fdlink/link.h"
#include "fdlink/verify.h"

#define LINK_DATA FDL_LINK_FIXTURES
/* kernels.{cubin,fatbin,ptx} and status_*.ptx, built by tests/gpu/CMakeLists.txt */
#define KERNELS FDL_GPU_KERNELS

/* A float that no kernel here computes: a NaN with a payload. */
#define SENTINEL 0x7fbadbadu

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

#include "gpu_common.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* A kernel in PTX, for loading PTX through the driver's JIT: out[i] = value for i < n. */
static const char fill_ptx[] =
    "//\n// fill: out[i] = value for i < n\n//\n"
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    "\n"
    ".visible .entry fill(.param .u64 out, .param .u32 value, .param .u32 n)\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b32 %r<7>;\n"
    "    .reg .b64 %rd<5>;\n"
    "    ld.param.u64 %rd1, [out];\n"
    "    ld.param.u32 %r1, [value];\n"
    "    ld.param.u32 %r2, [n];\n"
    "    mov.u32 %r3, %ctaid.x;\n"
    "    mov.u32 %r4, %ntid.x;\n"
    "    mov.u32 %r5, %tid.x;\n"
    "    mad.lo.s32 %r6, %r3, %r4, %r5;\n"
    "    setp.ge.u32 %p1, %r6, %r2;\n"
    "    @%p1 bra DONE;\n"
    "    cvta.to.global.u64 %rd2, %rd1;\n"
    "    mul.wide.u32 %rd3, %r6, 4;\n"
    "    add.s64 %rd4, %rd2, %rd3;\n"
    "    st.global.u32 [%rd4], %r1;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

/* @p len bytes of @p s placed to end right before an unreadable page (no NUL after them). */

/* ------------------------------------------------------------------------------------------ */
/* Devices                                                                                     */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_device, describes_itself)
{
    fdl_device *dev = open_or_skip();
    /* which GPU this run got: under ctest --resource-spec-file, the one ctest assigned */
    const char *assigned = getenv("CTEST_RESOURCE_GROUP_0_GPUS");
    fprintf(stderr, "test_gpu: fdl_device_open(-1) opened GPU %d, %s (ctest assigned: %s)\n",
            fdl_device_ordinal(dev), fdl_device_name(dev), assigned ? assigned : "none");
    cr_assert_str_not_empty(fdl_device_name(dev));
    int cc = fdl_device_cc(dev);
    cr_assert_geq(cc, 50);
    char arch[16];
    snprintf(arch, sizeof arch, "sm_%d", cc);
    cr_assert_str_eq(fdl_device_arch(dev), arch);
    cr_assert_geq(fdl_device_driver_version(dev), 11000);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    /* a second handle on the same device shares the primary context */
    fdl_device *again = NULL;
    cr_assert_eq(fdl_device_open(&again, fdl_device_ordinal(dev), &err), FDL_OK, "%s",
                 err.message);
    cr_assert_str_eq(fdl_device_name(again), fdl_device_name(dev));
    fdl_device_destroy(again);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    fdl_device_destroy(dev);
}

Test(gpu_device, ordinal_from_environment_and_out_of_range)
{
    fdl_device *dev = open_or_skip();
    int count = 0;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_count(&count, &err), FDL_OK);
    fdl_device *other = NULL;
    /* under ctest's resource allocation the assigned GPU comes first; FDLINK_DEVICE without it */
    const char *assigned = getenv("CTEST_RESOURCE_GROUP_0_GPUS");
    if (assigned) {
        char expect[32];
        snprintf(expect, sizeof expect, "id:%d,", fdl_device_ordinal(dev));
        cr_assert(strncmp(assigned, expect, strlen(expect)) == 0,
                  "ctest assigned %s but fdl_device_open(-1) opened device %d", assigned,
                  fdl_device_ordinal(dev));
    }
    cr_assert_eq(unsetenv("CTEST_RESOURCE_GROUP_COUNT"), 0);
    cr_assert_eq(setenv("FDLINK_DEVICE", "0", 1), 0);
    cr_assert_eq(fdl_device_open(&other, -1, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_device_ordinal(other), 0);
    fdl_device_destroy(other);
    other = NULL;

    char ordinal[16], expect[128];
    snprintf(ordinal, sizeof ordinal, "%d", count);
    snprintf(expect, sizeof expect, "no CUDA device %d: the driver reports %d device%s (0..%d)",
             count, count, count == 1 ? "" : "s", count - 1);
    cr_assert_eq(setenv("FDLINK_DEVICE", ordinal, 1), 0);
    cr_assert_eq(fdl_device_open(&other, -1, &err), FDL_ENODEVICE);
    cr_assert_str_eq(err.message, expect);
    cr_assert_null(other);
    cr_assert_eq(fdl_device_open(&other, count, &err), FDL_ENODEVICE);
    cr_assert_str_eq(err.message, expect);
    fdl_device_destroy(dev);
}

/* One thread's work in one_link_runs_on_every_gpu_from_a_thread_each. */
typedef struct gpu_thread {
    int ordinal;        /* the GPU this thread opens */
    const char *arch;   /* the architecture the cubin was linked for */
    const void *cubin;  /* the one link's cubin, read by every thread */
    size_t cubin_size;
    int n;
    int seed;
    int skipped;        /* a GPU of another architecture */
    size_t wrong;
    fdl_error err;
    int rc;
} gpu_thread;

/*
 * Open the GPU (a family of this thread's own), load the shared cubin, compute n products and
 * compare them with the host's, bit for bit. Criterion asserts only in the test's thread: the
 * outcome goes back in the struct.
 */
static void *gpu_thread_run(void *arg)
{
    gpu_thread *t = arg;
    fdl_device *dev = NULL;
    fdl_module *mod = NULL;
    fdl_kernel *kernel = NULL;
    fdl_buffer *da = NULL, *db = NULL, *dout = NULL;
    size_t bytes = (size_t)t->n * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes);
    uint32_t *out = malloc(bytes);
    t->rc = FDL_ENOMEM;
    if (!a || !b || !out)
        goto cleanup;
    for (int i = 0; i < t->n; i++) {
        a[i] = (float)((i * 7 + t->seed) % 1999 - 999) * 0.125f + 1.0f / (float)(i + t->seed + 3);
        b[i] = ldexpf(1.0f + (float)((i + t->seed) % 613) / 613.0f, (i % 37) - 18);
        out[i] = SENTINEL;
    }
    if ((t->rc = fdl_device_open(&dev, t->ordinal, &t->err)) != FDL_OK)
        goto cleanup;
    if (strcmp(fdl_device_arch(dev), t->arch) != 0) {
        t->skipped = 1;
        goto cleanup;
    }
    uint64_t pout, pa, pb;
    int n = t->n;
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.block.x = 256;
    cfg.grid.x = (unsigned)((n + 255) / 256);
    cfg.flags = FDL_LAUNCH_SYNC;
    if ((t->rc = fdl_module_load_data(&mod, dev, t->cubin, t->cubin_size, "one_link.cubin",
                                      &t->err)) != FDL_OK ||
        (t->rc = fdl_module_get_kernel(&kernel, mod, "multiply_vectors", &t->err)) != FDL_OK ||
        (t->rc = fdl_buffer_create(&da, dev, bytes, &t->err)) != FDL_OK ||
        (t->rc = fdl_buffer_create(&db, dev, bytes, &t->err)) != FDL_OK ||
        (t->rc = fdl_buffer_create(&dout, dev, bytes, &t->err)) != FDL_OK ||
        (t->rc = fdl_buffer_write(da, 0, a, bytes, &t->err)) != FDL_OK ||
        (t->rc = fdl_buffer_write(db, 0, b, bytes, &t->err)) != FDL_OK ||
        (t->rc = fdl_buffer_write(dout, 0, out, bytes, &t->err)) != FDL_OK)
        goto cleanup;
    pout = fdl_buffer_address(dout);
    pa = fdl_buffer_address(da);
    pb = fdl_buffer_address(db);
    fdl_arg args[] = {FDL_ARG(pout), FDL_ARG(pa), FDL_ARG(pb), FDL_ARG(n)};
    if ((t->rc = fdl_kernel_launch_ex(kernel, &cfg, args, 4, &t->err)) != FDL_OK ||
        (t->rc = fdl_buffer_read(dout, 0, out, bytes, &t->err)) != FDL_OK)
        goto cleanup;
    for (int i = 0; i < n; i++)
        if (out[i] != bits_of(a[i] * b[i]))
            t->wrong++;
cleanup:
    fdl_device_destroy(dev); /* and the module and buffers with it */
    free(a);
    free(b);
    free(out);
    return NULL;
}

Test(gpu_device, one_link_runs_on_every_gpu_from_a_thread_each)
{
    fdl_device *dev = open_or_skip();
    const char *lib = getenv("FDLINK_LIBCUDA");
    if (lib && strstr(lib, "mock"))
        cr_skip_test("the mock driver serves one thread at a time");
    int count = 0;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_count(&count, &err), FDL_OK, "%s", err.message);
    /* one link, made here; its cubin is read by every thread (fdlink/host.h) */
    fdl_link *link = link_for(dev);
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    /* a thread for every GPU, and a second on this test's own GPU: two handles of one GPU are
     * two families, used at once */
    enum { MAX_THREADS = 17 };
    int nthreads = count + 1 > MAX_THREADS ? MAX_THREADS : count + 1;
    gpu_thread t[MAX_THREADS];
    pthread_t threads[MAX_THREADS];
    memset(t, 0, sizeof t);
    for (int i = 0; i < nthreads; i++) {
        t[i].ordinal = i < count ? i : fdl_device_ordinal(dev);
        t[i].arch = fdl_device_arch(dev);
        t[i].cubin = cubin;
        t[i].cubin_size = size;
        t[i].n = (1 << 18) + i * 1000;
        t[i].seed = i * 101;
        cr_assert_eq(pthread_create(&threads[i], NULL, gpu_thread_run, &t[i]), 0);
    }
    for (int i = 0; i < nthreads; i++)
        cr_assert_eq(pthread_join(threads[i], NULL), 0);
    int ran = 0;
    for (int i = 0; i < nthreads; i++) {
        cr_assert_eq(t[i].rc, FDL_OK, "thread %d on GPU %d: %s: %s", i, t[i].ordinal,
                     fdl_status_name(t[i].rc), t[i].err.message);
        cr_assert_eq(t[i].wrong, 0, "thread %d on GPU %d: %zu of %d products differ", i,
                     t[i].ordinal, t[i].wrong, t[i].n);
        ran += !t[i].skipped;
    }
    cr_assert_geq(ran, 2, "fewer than two threads ran (GPUs of other architectures: %d)",
                  nthreads - ran);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Link, load, launch                                                                          */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_launch, multiply_vectors_matches_the_host_exactly)
{
    fdl_device *dev = open_or_skip();
    fdl_link *link = link_for(dev);
    fdl_module *mod = load_linked(dev, link);
    fdl_kernel *kernel = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_get_kernel(&kernel, mod, "multiply_vectors", &err), FDL_OK, "%s",
                 err.message);
    cr_assert_str_eq(fdl_kernel_name(kernel), "multiply_vectors");

    const int n = 1 << 20;
    const size_t pad = 64; /* past n: the kernel must leave these alone */
    const size_t total = (size_t)n + pad;
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    float *expect = malloc((size_t)n * sizeof *expect);
    uint32_t *out = malloc(total * sizeof *out);
    cr_assert(a && b && expect && out);
    for (int i = 0; i < n; i++) {
        /* many signs, exponents and inexact products; no overflow, no subnormals */
        a[i] = (float)((i % 2001) - 1000) * 0.3125f + 1.0f / (float)(i + 3);
        b[i] = ldexpf(1.0f + (float)(i % 977) / 977.0f, (i % 41) - 20);
        expect[i] = a[i] * b[i];
    }
    fdl_buffer *da = new_buffer(dev, (size_t)n * sizeof(float));
    fdl_buffer *db = new_buffer(dev, (size_t)n * sizeof(float));
    fdl_buffer *dout = new_buffer(dev, total * sizeof(uint32_t));
    cr_assert_eq(fdl_buffer_write(da, 0, a, (size_t)n * sizeof(float), &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_buffer_write(db, 0, b, (size_t)n * sizeof(float), &err), FDL_OK, "%s",
                 err.message);
    /* the output starts as sentinels, so a kernel that never ran cannot pass */
    for (size_t i = 0; i < total; i++)
        out[i] = SENTINEL;
    cr_assert_eq(fdl_buffer_write(dout, 0, out, total * sizeof(uint32_t), &err), FDL_OK, "%s",
                 err.message);
    memset(out, 0, total * sizeof *out);
    cr_assert_eq(fdl_buffer_read(dout, 0, out, total * sizeof(uint32_t), &err), FDL_OK, "%s",
                 err.message);
    for (size_t i = 0; i < total; i++)
        cr_assert_eq(out[i], SENTINEL, "sentinel not in place at %zu", i);

    uint64_t pout = fdl_buffer_address(dout), pa = fdl_buffer_address(da),
             pb = fdl_buffer_address(db);
    int count = n;
    void *args[] = {&pout, &pa, &pb, &count};
    fdl_dim3 block = {256, 1, 1}, grid = {(unsigned)((n + 255) / 256), 1, 1};
    cr_assert_eq(fdl_kernel_launch(kernel, grid, block, 0, args, 4, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read(dout, 0, out, total * sizeof(uint32_t), &err), FDL_OK, "%s",
                 err.message);

    size_t wrong = 0, first = 0;
    for (size_t i = 0; i < (size_t)n; i++) {
        if (out[i] != bits_of(expect[i])) {
            if (!wrong)
                first = i;
            wrong++;
        }
    }
    float got;
    memcpy(&got, &out[first], sizeof got);
    cr_assert_eq(wrong, 0, "%zu of %d products differ; first at %zu: %a * %a = %a on the host, "
                 "%a (bits %08x) on the device", wrong, n, first, (double)a[first],
                 (double)b[first], (double)expect[first], (double)got, out[first]);
    for (size_t i = (size_t)n; i < total; i++)
        cr_assert_eq(out[i], SENTINEL, "the kernel wrote past n, at %zu", i);

    fdl_buffer_destroy(dout);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(da);
    fdl_module_destroy(mod);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
    free(out);
    free(expect);
    free(b);
    free(a);
}

Test(gpu_launch, ptx_module_without_nul_is_jit_compiled)
{
    fdl_device *dev = open_or_skip();
    guarded g;
    const char *text = guard_copy(&g, fill_ptx, sizeof fill_ptx - 1);
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_module_load_data(&mod, dev, text, sizeof fill_ptx - 1, "fill.ptx", &err);
    cr_assert_eq(rc, FDL_OK, "%s %s", fdl_status_name(rc), err.message);
    cr_assert_not_null(fdl_module_info_log(mod));
    fdl_kernel *fill = NULL;
    cr_assert_eq(fdl_module_get_kernel(&fill, mod, "fill", &err), FDL_OK, "%s", err.message);
    fdl_kernel *same = NULL;
    cr_assert_eq(fdl_module_get_kernel(&same, mod, "fill", &err), FDL_OK);
    cr_assert_eq(same, fill, "kernels are not cached");

    enum { N = 1000, WORDS = 1024 };
    fdl_buffer *buf = new_buffer(dev, WORDS * sizeof(uint32_t));
    cr_assert_eq(fdl_buffer_zero(buf, &err), FDL_OK, "%s", err.message);
    uint64_t p = fdl_buffer_address(buf);
    uint32_t value = 0xc0ffee42u, n = N;
    void *args[] = {&p, &value, &n};
    cr_assert_eq(fdl_kernel_launch(fill, (fdl_dim3){4, 1, 1}, (fdl_dim3){256, 1, 1}, 0, args, 3,
                                   &err),
                 FDL_OK, "%s", err.message);
    uint32_t host[WORDS];
    cr_assert_eq(fdl_buffer_read(buf, 0, host, sizeof host, &err), FDL_OK, "%s", err.message);
    for (size_t i = 0; i < WORDS; i++)
        cr_assert_eq(host[i], i < N ? value : 0u, "word %zu is %08x", i, host[i]);

    /* launch checks */
    cr_assert_eq(fdl_kernel_launch(fill, (fdl_dim3){4, 0, 1}, (fdl_dim3){256, 1, 1}, 0, args, 3,
                                   &err),
                 FDL_EINVAL);
    cr_assert_str_eq(err.message, "grid.y is 0 in the launch of kernel 'fill' (every dimension "
                                  "must be at least 1)");
    cr_assert_eq(fdl_kernel_launch(fill, (fdl_dim3){1, 1, 1}, (fdl_dim3){1, 1, 0}, 0, args, 3,
                                   &err),
                 FDL_EINVAL);
    cr_assert(strstr(err.message, "block.z is 0"), "%s", err.message);
    void *holes[] = {&p, NULL, &n};
    cr_assert_eq(fdl_kernel_launch(fill, (fdl_dim3){1, 1, 1}, (fdl_dim3){1, 1, 1}, 0, holes, 3,
                                   &err),
                 FDL_EINVAL);
    cr_assert(strstr(err.message, "argument 1 of kernel 'fill' is NULL"), "%s", err.message);
    /* a block larger than any kernel allows is refused before the driver sees it */
    cr_assert_eq(fdl_kernel_launch(fill, (fdl_dim3){1, 1, 1}, (fdl_dim3){4096, 1, 1}, 0, args, 3,
                                   &err),
                 FDL_EINVAL);
    fdl_kernel_attrs attrs;
    cr_assert_eq(fdl_kernel_get_attrs(fill, &attrs, &err), FDL_OK);
    char expect[200];
    snprintf(expect, sizeof expect,
             "block (4096,1,1) = 4096 threads exceeds the %u that kernel fill allows",
             attrs.max_threads_per_block);
    cr_assert_str_eq(err.message, expect);
    cr_assert_str_eq(err.symbol, "fill");
    /* and so is a wrong argument count, where the driver reports parameters */
    if (attrs.params_known) {
        cr_assert_eq(attrs.nparams, 3);
        cr_assert_eq(fdl_kernel_launch(fill, (fdl_dim3){1, 1, 1}, (fdl_dim3){1, 1, 1}, 0, args, 2,
                                       &err),
                     FDL_EINVAL);
        cr_assert_str_eq(err.message, "kernel fill takes 3 parameters, but 2 arguments were given");
    }
    /* none of the refused launches ran */
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read(buf, 0, host, sizeof host, &err), FDL_OK, "%s", err.message);
    for (size_t i = 0; i < WORDS; i++)
        cr_assert_eq(host[i], i < N ? value : 0u, "word %zu is %08x", i, host[i]);
    /* that refusal leaves the context usable */
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);

    fdl_buffer_destroy(buf);
    fdl_module_destroy(mod);
    guard_free(&g);
    fdl_device_destroy(dev);
}

Test(gpu_module, kernel_lookup_errors_name_the_module)
{
    fdl_device *dev = open_or_skip();
    fdl_link *link = link_for(dev);
    fdl_module *mod = load_linked(dev, link);
    fdl_kernel *k = (fdl_kernel *)&k;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "multiply_vector", &err), FDL_ENOTFOUND);
    cr_assert_null(k);
    cr_assert_str_eq(err.message, "kernel 'multiply_vector' not found in module showcase.cubin, "
                                  "which defines 1 kernel: multiply_vectors");
    cr_assert_str_eq(err.symbol, "multiply_vector");
    cr_assert_eq(err.backend_code, 500 /* CUDA_ERROR_NOT_FOUND */);
    /* a failed lookup caches nothing: the right name still resolves */
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "multiply_vectors", &err), FDL_OK, "%s",
                 err.message);
    cr_assert_str_eq(fdl_kernel_name(k), "multiply_vectors");
    fdl_module_destroy(mod);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}

Test(gpu_module, load_file_written_by_the_link)
{
    fdl_device *dev = open_or_skip();
    fdl_link *link = link_for(dev);
    char dir[] = "/tmp/fdlink-test-gpu-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[600];
    snprintf(path, sizeof path, "%s/showcase.cubin", dir);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_write(link, path, &err), FDL_OK, "%s", err.message);
    fdl_module *mod = NULL;
    cr_assert_eq(fdl_module_load_file(&mod, dev, path, &err), FDL_OK, "%s", err.message);
    fdl_kernel *k = NULL;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "multiply_vectors", &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "nope", &err), FDL_ENOTFOUND);
    char expect[800];
    snprintf(expect, sizeof expect,
             "kernel 'nope' not found in module %s, which defines 1 kernel: multiply_vectors",
             path);
    cr_assert_str_eq(err.message, expect);
    fdl_module_destroy(mod);
    unlink(path);
    rmdir(dir);
    mod = (fdl_module *)&mod;
    cr_assert_eq(fdl_module_load_file(&mod, dev, path, &err), FDL_EIO);
    cr_assert_null(mod);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_buffer, round_trip_zero_and_range_checks)
{
    fdl_device *dev = open_or_skip();
    fdl_error err = FDL_ERROR_INIT;
    fdl_buffer *buf = NULL;
    cr_assert_eq(fdl_buffer_create(&buf, dev, 0, &err), FDL_EINVAL);
    cr_assert_null(buf);
    buf = new_buffer(dev, 64);
    cr_assert_eq(fdl_buffer_size(buf), 64);
    cr_assert_neq(fdl_buffer_address(buf), 0);

    unsigned char in[64], back[64];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (unsigned char)(i * 7 + 3);
    cr_assert_eq(fdl_buffer_write(buf, 0, in, sizeof in, &err), FDL_OK, "%s", err.message);
    memset(back, 0, sizeof back);
    cr_assert_eq(fdl_buffer_read(buf, 0, back, sizeof back, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(memcmp(in, back, sizeof in), 0);

    /* partial copies land at their offset */
    static const unsigned char mark[4] = {0xde, 0xad, 0xbe, 0xef};
    cr_assert_eq(fdl_buffer_write(buf, 60, mark, 4, &err), FDL_OK, "%s", err.message);
    unsigned char tail[8];
    cr_assert_eq(fdl_buffer_read(buf, 56, tail, 8, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(memcmp(tail, in + 56, 4), 0);
    cr_assert_eq(memcmp(tail + 4, mark, 4), 0);

    /* out of range, and overflowing offset + size: nothing is copied */
    unsigned char big[100] = {0};
    cr_assert_eq(fdl_buffer_write(buf, 8, big, 100, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "copy of 100 bytes at offset 8 exceeds buffer of 64 bytes");
    cr_assert_eq(fdl_buffer_read(buf, 64, back, 1, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "copy of 1 bytes at offset 64 exceeds buffer of 64 bytes");
    cr_assert_eq(fdl_buffer_read(buf, SIZE_MAX, back, 2, &err), FDL_EINVAL);
    cr_assert_eq(fdl_buffer_write(buf, 2, big, SIZE_MAX, &err), FDL_EINVAL);
    cr_assert_eq(fdl_buffer_read(buf, 65, back, 0, &err), FDL_EINVAL);
    cr_assert_eq(fdl_buffer_read(buf, 64, back, 0, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read(buf, 0, back, sizeof back, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(memcmp(back, in, 60), 0, "a refused copy changed the buffer");

    cr_assert_eq(fdl_buffer_zero(buf, &err), FDL_OK, "%s", err.message);
    memset(back, 0xff, sizeof back);
    cr_assert_eq(fdl_buffer_read(buf, 0, back, sizeof back, &err), FDL_OK, "%s", err.message);
    for (size_t i = 0; i < sizeof back; i++)
        cr_assert_eq(back[i], 0, "byte %zu not zeroed", i);
    fdl_buffer_destroy(buf);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Helpers for the kernels of tests/gpu/src                                                    */
/* ------------------------------------------------------------------------------------------ */

/* The kernels of kernels.cu, sorted by name, as the module must list them. */
static const char *const kernel_names[] = {
    "add_one",      "bounded",      "coop_exchange", "empty",  "fill_u32", "iota_u32",
    "mm",           "params_mixed", "saxpy",         "shared_probe", "spin", "static_shared",
};
#define NKERNELS (sizeof kernel_names / sizeof kernel_names[0])

static fdl_module *load_file_or_fail(fdl_device *dev, const char *path)
{
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_module_load_file(&mod, dev, path, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s %s", path, fdl_status_name(rc), err.message);
    cr_assert_not_null(mod);
    return mod;
}

/* kernels.fatbin: loads on any device (its PTX is JIT-compiled where its cubin does not fit). */
static fdl_module *load_kernels(fdl_device *dev)
{
    return load_file_or_fail(dev, KERNELS "/kernels.fatbin");
}

static fdl_kernel *kernel_or_fail(fdl_module *mod, const char *name)
{
    fdl_kernel *k = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_module_get_kernel(&k, mod, name, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s %s", name, fdl_status_name(rc), err.message);
    return k;
}

/* A buffer of @p words 32-bit words, each SENTINEL. */
static fdl_buffer *sentinel_buffer(fdl_device *dev, size_t words)
{
    fdl_buffer *buf = new_buffer(dev, words * sizeof(uint32_t));
    uint32_t *host = malloc(words * sizeof *host);
    cr_assert_not_null(host);
    for (size_t i = 0; i < words; i++)
        host[i] = SENTINEL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_buffer_write(buf, 0, host, words * sizeof *host, &err), FDL_OK, "%s",
                 err.message);
    free(host);
    return buf;
}

static uint32_t *read_words(const fdl_buffer *buf, size_t words)
{
    uint32_t *host = malloc(words * sizeof *host);
    cr_assert_not_null(host);
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_buffer_read(buf, 0, host, words * sizeof *host, &err), FDL_OK, "%s",
                 err.message);
    return host;
}

static void assert_all_sentinels(const fdl_buffer *buf, size_t words, const char *why)
{
    uint32_t *host = read_words(buf, words);
    for (size_t i = 0; i < words; i++)
        cr_assert_eq(host[i], SENTINEL, "%s: word %zu is %08x", why, i, host[i]);
    free(host);
}

static fdl_launch_config config(fdl_dim3 grid, fdl_dim3 block)
{
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.grid = grid;
    cfg.block = block;
    return cfg;
}

/* ------------------------------------------------------------------------------------------ */
/* Devices: description, ownership                                                             */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_device, info_agrees_with_the_getters_and_the_driver)
{
    fdl_device *dev = open_or_skip();
    fdl_error err = FDL_ERROR_INIT;
    fdl_device_info info;
    cr_assert_eq(fdl_device_get_info(dev, &info, &err), FDL_OK);
    int expect_ordinal = -1;
    cr_assert_eq(fdl_device_default_ordinal(&expect_ordinal, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(info.ordinal, expect_ordinal);
    cr_assert_eq(fdl_device_ordinal(dev), expect_ordinal);
    cr_assert_str_eq(info.name, fdl_device_name(dev));
    cr_assert_str_eq(info.arch, fdl_device_arch(dev));
    cr_assert_eq(info.cc, fdl_device_cc(dev));
    cr_assert_eq(info.sm_count, fdl_device_sm_count(dev));
    cr_assert_gt(info.sm_count, 0);
    cr_assert_eq(info.total_memory, fdl_device_total_memory(dev));
    cr_assert_gt(info.total_memory, (size_t)1 << 30, "%zu bytes", info.total_memory);
    cr_assert_eq(info.warp_size, 32);
    cr_assert_eq(info.max_threads_per_block, 1024);
    cr_assert_eq(info.max_block.x, 1024);
    cr_assert_eq(info.max_block.y, 1024);
    cr_assert_eq(info.max_block.z, 64);
    cr_assert_eq(info.max_grid.x, 2147483647u);
    cr_assert_eq(info.max_grid.y, 65535);
    cr_assert_eq(info.max_grid.z, 65535);
    cr_assert_eq(info.max_shared_per_block, 48 * 1024);
    cr_assert_geq(info.max_shared_per_block_optin, info.max_shared_per_block);
    int version = 0;
    cr_assert_eq(fdl_driver_version(&version, &err), FDL_OK, "%s", err.message);
    cr_assert_geq(version, FDL_DRIVER_MIN_VERSION);
    cr_assert_eq(info.driver_version, version);
    cr_assert_eq(fdl_device_driver_version(dev), version);
    fdl_device_destroy(dev);
}

Test(gpu_device, destroy_frees_what_the_user_left)
{
    fdl_device *dev = open_or_skip();
    fdl_error err = FDL_ERROR_INIT;
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *fill = kernel_or_fail(mod, "fill_u32");
    fdl_buffer *buf = sentinel_buffer(dev, 256);
    fdl_host_buffer *host = NULL;
    cr_assert_eq(fdl_host_buffer_create(&host, dev, 4096, &err), FDL_OK, "%s", err.message);
    fdl_stream *stream = NULL;
    cr_assert_eq(fdl_stream_create(&stream, dev, &err), FDL_OK, "%s", err.message);
    fdl_event *event = NULL;
    cr_assert_eq(fdl_event_create(&event, dev, &err), FDL_OK, "%s", err.message);
    uint64_t p = fdl_buffer_address(buf);
    uint32_t value = 11, n = 256;
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(value), FDL_ARG(n)};
    fdl_launch_config cfg = config((fdl_dim3){1, 1, 1}, (fdl_dim3){256, 1, 1});
    cfg.stream = stream;
    fdl_launch *launch = NULL;
    cr_assert_eq(fdl_launch_create(&launch, fill, &cfg, args, 3, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_launch_run(launch, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_record(event, stream, &err), FDL_OK, "%s", err.message);
    /* a second handle of the same GPU is a family of its own and outlives the first */
    fdl_device *other = NULL;
    cr_assert_eq(fdl_device_open(&other, fdl_device_ordinal(dev), &err), FDL_OK, "%s",
                 err.message);
    fdl_buffer *kept = sentinel_buffer(other, 16);
    /* everything of dev (module, kernel, launch, buffers, stream, event) goes with it */
    fdl_device_destroy(dev);
    assert_all_sentinels(kept, 16, "a buffer of another handle");
    fdl_device_destroy(other);
}

/* ------------------------------------------------------------------------------------------ */
/* Modules of every kind; kernel lookup                                                        */
/* ------------------------------------------------------------------------------------------ */

/* iota_u32 through @p mod: out[i] = 3i + 1 for i < n, checked with fdl_buffer_verify. */
static void run_iota(fdl_device *dev, fdl_module *mod, const char *what)
{
    enum { N = 1000, WORDS = 1024 };
    fdl_kernel *k = kernel_or_fail(mod, "iota_u32");
    fdl_buffer *out = sentinel_buffer(dev, WORDS);
    uint64_t p = fdl_buffer_address(out);
    uint32_t n = N;
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(n)};
    fdl_launch_config cfg = config((fdl_dim3){4, 1, 1}, (fdl_dim3){256, 1, 1});
    cfg.flags = FDL_LAUNCH_SYNC;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 2, &err), FDL_OK, "%s: %s", what,
                 err.message);
    uint32_t expect[WORDS];
    for (uint32_t i = 0; i < WORDS; i++)
        expect[i] = i < N ? 3u * i + 1u : SENTINEL;
    fdl_verify_report report;
    int rc = fdl_buffer_verify(&report, out, 0, FDL_UINT32, expect, WORDS, NULL, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s", what, err.message);
    cr_assert_eq(report.count, WORDS);
    fdl_buffer_destroy(out);
}

static void assert_lists_every_kernel(const fdl_module *mod, const char *what)
{
    cr_assert_eq(fdl_module_kernel_count(mod), NKERNELS, "%s: %zu kernels", what,
                 fdl_module_kernel_count(mod));
    for (size_t i = 0; i < NKERNELS; i++)
        cr_assert_str_eq(fdl_module_kernel_name(mod, i), kernel_names[i], "%s: kernel %zu", what,
                         i);
    cr_assert_null(fdl_module_kernel_name(mod, NKERNELS));
}

Test(gpu_module, every_kind_loads_lists_its_kernels_and_runs)
{
    fdl_device *dev = open_or_skip();
    static const char *const files[] = {KERNELS "/kernels.fatbin", KERNELS "/kernels.ptx",
                                        KERNELS "/kernels.cubin"};
    for (size_t f = 0; f < 3; f++) {
        if (f == 2 && strcmp(fdl_device_arch(dev), FDL_GPU_CUBIN_ARCH) != 0) {
            /* the cubin is for FDLINK_LINK_ARCH only: it must be refused elsewhere */
            fdl_module *mod = NULL;
            fdl_error err = FDL_ERROR_INIT;
            cr_assert_eq(fdl_module_load_file(&mod, dev, files[f], &err), FDL_ECUDA);
            cr_assert_null(mod);
            continue;
        }
        fdl_module *mod = load_file_or_fail(dev, files[f]);
        cr_assert_str_eq(fdl_module_name(mod), files[f]);
        cr_assert_eq(fdl_module_device(mod), dev);
        cr_assert_not_null(fdl_module_info_log(mod));
        cr_assert_eq(fdl_module_has_status(mod), 0);
        assert_lists_every_kernel(mod, files[f]);
        run_iota(dev, mod, files[f]);
        fdl_module_destroy(mod);
    }
    /* from memory too: the fatbin's bytes */
    FILE *fp = fopen(KERNELS "/kernels.fatbin", "rb");
    cr_assert_not_null(fp);
    static unsigned char image[1 << 20];
    size_t size = fread(image, 1, sizeof image, fp);
    fclose(fp);
    cr_assert_gt(size, 0);
    cr_assert_lt(size, sizeof image);
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_load_data(&mod, dev, image, size, "kernels (memory)", &err), FDL_OK,
                 "%s", err.message);
    assert_lists_every_kernel(mod, "kernels (memory)");
    run_iota(dev, mod, "kernels (memory)");
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

Test(gpu_module, a_missing_kernel_lists_those_the_module_defines)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *k = (fdl_kernel *)&k;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "iota", &err), FDL_ENOTFOUND);
    cr_assert_null(k);
    cr_assert_str_eq(err.message,
                     "kernel 'iota' not found in module " KERNELS "/kernels.fatbin, which defines "
                     "12 kernels: add_one, bounded, coop_exchange, empty, fill_u32, iota_u32, mm, "
                     "params_mixed, saxpy, shared_probe, spin, static_shared");
    cr_assert_str_eq(err.symbol, "iota");
    cr_assert_eq(err.backend_code, 500 /* CUDA_ERROR_NOT_FOUND */);
    /* a kernel found once is the same handle the next time */
    fdl_kernel *a = kernel_or_fail(mod, "iota_u32"), *b = kernel_or_fail(mod, "iota_u32");
    cr_assert_eq(a, b);
    cr_assert_eq(fdl_kernel_module(a), mod);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Kernels: attributes and parameters                                                          */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_kernel, attributes_and_parameter_layout)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_error err = FDL_ERROR_INIT;
    fdl_kernel_attrs a;

    cr_assert_eq(fdl_kernel_get_attrs(kernel_or_fail(mod, "bounded"), &a, &err), FDL_OK);
    cr_assert_eq(a.max_threads_per_block, 128, "__launch_bounds__(128): %u",
                 a.max_threads_per_block);
    cr_assert_gt(a.registers, 0);
    cr_assert_eq(a.static_shared, 0);
    cr_assert_gt(a.binary_version, 0);

    cr_assert_eq(fdl_kernel_get_attrs(kernel_or_fail(mod, "static_shared"), &a, &err), FDL_OK);
    cr_assert_eq(a.static_shared, 256 * sizeof(unsigned));
    cr_assert_eq(fdl_kernel_get_attrs(kernel_or_fail(mod, "mm"), &a, &err), FDL_OK);
    cr_assert_eq(a.static_shared, 2 * 16 * 16 * sizeof(float));
    cr_assert_eq(a.max_threads_per_block, 1024);
    /* the default: 48 KiB less the static shared memory (at most 48 KiB in any case) */
    cr_assert_leq(a.max_dynamic_shared, 48 * 1024);
    cr_assert_geq(a.max_dynamic_shared, 48 * 1024 - a.static_shared);

    fdl_kernel *k = kernel_or_fail(mod, "params_mixed");
    cr_assert_eq(fdl_kernel_get_attrs(k, &a, &err), FDL_OK);
    if (!a.params_known) {
        cr_assert_lt(fdl_device_driver_version(dev), 12040);
        cr_assert_eq(fdl_kernel_param(k, 0, NULL, NULL, &err), FDL_ENOTFOUND);
        cr_skip_test("driver %d reports no parameters", fdl_device_driver_version(dev));
    }
    /* (u64 out, int8 a, double b, const void *p, struct s24 s, short h) */
    static const size_t offsets[] = {0, 8, 16, 24, 32, 56}, sizes[] = {8, 1, 8, 8, 24, 2};
    cr_assert_eq(a.nparams, 6);
    for (size_t i = 0; i < 6; i++) {
        size_t offset = 99, size = 99;
        cr_assert_eq(fdl_kernel_param(k, i, &offset, &size, &err), FDL_OK, "%s", err.message);
        cr_assert_eq(offset, offsets[i], "parameter %zu at %zu", i, offset);
        cr_assert_eq(size, sizes[i], "parameter %zu of %zu bytes", i, size);
    }
    cr_assert_eq(fdl_kernel_param(k, 6, NULL, NULL, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "kernel 'params_mixed' has no parameter 6 (it takes 6)");
    /* all the sizes at once, as fdl_kernel_param gives them */
    size_t count = 99;
    const size_t *all = fdl_kernel_param_sizes(k, &count);
    cr_assert_not_null(all);
    cr_assert_eq(count, 6);
    for (size_t i = 0; i < 6; i++)
        cr_assert_eq(all[i], sizes[i], "parameter %zu of %zu bytes", i, all[i]);
    cr_assert_eq(fdl_kernel_get_attrs(kernel_or_fail(mod, "empty"), &a, &err), FDL_OK);
    cr_assert_eq(a.nparams, 0);
    count = 99;
    cr_assert_not_null(fdl_kernel_param_sizes(kernel_or_fail(mod, "empty"), &count));
    cr_assert_eq(count, 0);
    cr_assert_null(fdl_kernel_param_sizes(NULL, &count));
    cr_assert_eq(count, 0);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Launches: arguments, geometry, shared memory, cooperative, prepared                         */
/* ------------------------------------------------------------------------------------------ */

struct s24 {
    int32_t a;
    int32_t b;
    double c;
    int64_t d;
};

Test(gpu_launch, arguments_are_checked_against_the_parameters)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *k = kernel_or_fail(mod, "params_mixed");
    fdl_kernel_attrs attrs;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_kernel_get_attrs(k, &attrs, &err), FDL_OK);
    if (!attrs.params_known)
        cr_skip_test("driver %d reports no parameters", fdl_device_driver_version(dev));
    fdl_buffer *out = sentinel_buffer(dev, 16); /* 8 u64 */
    uint64_t p = fdl_buffer_address(out);
    int8_t a = -7;
    double b = -1.0 / 3.0;
    uint64_t ptr = 0x123456789abcdef0ull; /* passed as a void *, never dereferenced */
    struct s24 s = {-5, 6, 2.5, -((int64_t)1 << 40)};
    int16_t h = -1234;
    fdl_launch_config cfg = config((fdl_dim3){1, 1, 1}, (fdl_dim3){1, 1, 1});
    cfg.flags = FDL_LAUNCH_SYNC;

    /* wrong count, wrong size, NULL value: refused before the driver sees them */
    fdl_arg five[] = {FDL_ARG(p), FDL_ARG(a), FDL_ARG(b), FDL_ARG(ptr), FDL_ARG(s)};
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, five, 5, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message,
                     "kernel params_mixed takes 6 parameters, but 5 arguments were given");
    cr_assert_str_eq(err.symbol, "params_mixed");
    int wide = -7; /* an int where the kernel takes a signed char */
    fdl_arg sized[] = {FDL_ARG(p), FDL_ARG(wide), FDL_ARG(b), FDL_ARG(ptr), FDL_ARG(s), FDL_ARG(h)};
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, sized, 6, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message,
                     "kernel params_mixed: argument 1 has 4 bytes, but parameter 1 takes 1");
    float narrow = 1.0f; /* a float where the kernel takes a double */
    fdl_arg sized2[] = {FDL_ARG(p),  FDL_ARG(a),  FDL_ARG(narrow),
                        FDL_ARG(ptr), FDL_ARG(s), FDL_ARG(h)};
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, sized2, 6, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message,
                     "kernel params_mixed: argument 2 has 4 bytes, but parameter 2 takes 8");
    fdl_arg holes[] = {FDL_ARG(p), FDL_ARG(a), FDL_ARG(b), {NULL, 8}, FDL_ARG(s), FDL_ARG(h)};
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, holes, 6, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "argument 3 of kernel 'params_mixed' is NULL (expected a "
                                  "pointer to the value)");
    /* the pointer-array form checks the count */
    void *raw[] = {&p, &a, &b, &ptr, &s};
    cr_assert_eq(fdl_kernel_launch(k, (fdl_dim3){1, 1, 1}, (fdl_dim3){1, 1, 1}, 0, raw, 5, &err),
                 FDL_EINVAL);
    cr_assert_str_eq(err.message,
                     "kernel params_mixed takes 6 parameters, but 5 arguments were given");
    fdl_launch *l = (fdl_launch *)&l;
    cr_assert_eq(fdl_launch_create(&l, k, &(fdl_launch_config)FDL_LAUNCH_CONFIG_INIT, sized, 6,
                                   &err),
                 FDL_EINVAL);
    cr_assert_null(l);
    cr_assert_str_eq(err.message,
                     "kernel params_mixed: argument 1 has 4 bytes, but parameter 1 takes 1");
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    assert_all_sentinels(out, 16, "after refused launches");

    /* the right arguments arrive intact */
    fdl_arg good[] = {FDL_ARG(p), FDL_ARG(a), FDL_ARG(b), FDL_ARG(ptr), FDL_ARG(s), FDL_ARG(h)};
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, good, 6, &err), FDL_OK, "%s", err.message);
    uint64_t got[8];
    cr_assert_eq(fdl_buffer_read(out, 0, got, sizeof got, &err), FDL_OK, "%s", err.message);
    uint64_t bits_b, bits_c;
    memcpy(&bits_b, &b, sizeof bits_b);
    memcpy(&bits_c, &s.c, sizeof bits_c);
    cr_assert_eq(got[0], (uint64_t)(int64_t)a);
    cr_assert_eq(got[1], bits_b);
    cr_assert_eq(got[2], ptr);
    cr_assert_eq(got[3], (uint64_t)(int64_t)s.a);
    cr_assert_eq(got[4], (uint64_t)(int64_t)s.b);
    cr_assert_eq(got[5], bits_c);
    cr_assert_eq(got[6], (uint64_t)s.d);
    cr_assert_eq(got[7], (uint64_t)(int64_t)h);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

Test(gpu_launch, geometry_and_shared_memory_are_checked_with_exact_messages)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_device_info info;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_get_info(dev, &info, &err), FDL_OK);
    fdl_kernel *mm = kernel_or_fail(mod, "mm");
    enum { N = 64 };
    fdl_buffer *dc = sentinel_buffer(dev, N * N);
    float a[N * N], b[N * N], c[N * N];
    for (int i = 0; i < N * N; i++) {
        a[i] = (float)(i % 7);
        b[i] = (float)((i * 5) % 8);
    }
    fdl_buffer *da = new_buffer(dev, sizeof a), *db = new_buffer(dev, sizeof b);
    cr_assert_eq(fdl_buffer_write(da, 0, a, sizeof a, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_write(db, 0, b, sizeof b, &err), FDL_OK);
    uint64_t pc = fdl_buffer_address(dc), pa = fdl_buffer_address(da), pb = fdl_buffer_address(db);
    int n = N;
    fdl_arg args[] = {FDL_ARG(pc), FDL_ARG(pa), FDL_ARG(pb), FDL_ARG(n)};
    char expect[300];

    fdl_launch_config cfg = config((fdl_dim3){4, 4, 1}, (fdl_dim3){33, 33, 1});
    cr_assert_eq(fdl_kernel_launch_ex(mm, &cfg, args, 4, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "block (33,33,1) = 1089 threads exceeds the 1024 that kernel mm "
                                  "allows");
    cr_assert_str_eq(err.symbol, "mm");
    cfg.block = (fdl_dim3){1, 1, info.max_block.z + 1};
    cr_assert_eq(fdl_kernel_launch_ex(mm, &cfg, args, 4, &err), FDL_EINVAL);
    snprintf(expect, sizeof expect,
             "block.z = %u exceeds the %u that the device allows, launching kernel mm",
             info.max_block.z + 1, info.max_block.z);
    cr_assert_str_eq(err.message, expect);
    cfg.block = (fdl_dim3){16, 16, 1};
    cfg.grid = (fdl_dim3){1, info.max_grid.y + 1, 1};
    cr_assert_eq(fdl_kernel_launch_ex(mm, &cfg, args, 4, &err), FDL_EINVAL);
    snprintf(expect, sizeof expect,
             "grid.y = %u exceeds the %u that the device allows, launching kernel mm",
             info.max_grid.y + 1, info.max_grid.y);
    cr_assert_str_eq(err.message, expect);
    cfg.grid = (fdl_dim3){info.max_grid.x + 1u, 1, 1};
    cr_assert_eq(fdl_kernel_launch_ex(mm, &cfg, args, 4, &err), FDL_EINVAL);
    cr_assert(starts_with(err.message, "grid.x = 2147483648 exceeds the 2147483647 that"), "%s",
              err.message);
    cfg.grid = (fdl_dim3){4, 0, 1};
    cr_assert_eq(fdl_kernel_launch_ex(mm, &cfg, args, 4, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "grid.y is 0 in the launch of kernel 'mm' (every dimension must "
                                  "be at least 1)");
    fdl_kernel *bounded = kernel_or_fail(mod, "bounded");
    fdl_arg one[] = {FDL_ARG(pc)};
    fdl_launch_config b256 = config((fdl_dim3){1, 1, 1}, (fdl_dim3){256, 1, 1});
    cr_assert_eq(fdl_kernel_launch_ex(bounded, &b256, one, 1, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "block (256,1,1) = 256 threads exceeds the 128 that kernel "
                                  "bounded allows");
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    assert_all_sentinels(dc, N * N, "after refused launches");

    /* the right geometry computes c = a b exactly (small integers: every sum is exact) */
    cfg.grid = (fdl_dim3){N / 16, N / 16, 1};
    cfg.block = (fdl_dim3){16, 16, 1};
    cfg.flags = FDL_LAUNCH_SYNC;
    cr_assert_eq(fdl_kernel_launch_ex(mm, &cfg, args, 4, &err), FDL_OK, "%s", err.message);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < N; k++)
                sum += a[i * N + k] * b[k * N + j];
            c[i * N + j] = sum;
        }
    fdl_verify_report report;
    cr_assert_eq(fdl_buffer_verify(&report, dc, 0, FDL_FLOAT32, c, N * N, NULL, &err), FDL_OK,
                 "%s", err.message);

    /* dynamic shared memory: the default limit, then raised */
    fdl_kernel *probe = kernel_or_fail(mod, "shared_probe");
    fdl_kernel_attrs probe_attrs;
    cr_assert_eq(fdl_kernel_get_attrs(probe, &probe_attrs, &err), FDL_OK);
    size_t most = info.max_shared_per_block_optin - probe_attrs.static_shared;
    fdl_buffer *sums = sentinel_buffer(dev, 1);
    uint64_t ps = fdl_buffer_address(sums);
    unsigned bytes = (unsigned)probe_attrs.max_dynamic_shared + 1;
    fdl_arg pargs[] = {FDL_ARG(ps), FDL_ARG(bytes)};
    fdl_launch_config sc = config((fdl_dim3){1, 1, 1}, (fdl_dim3){32, 1, 1});
    sc.shared_bytes = bytes;
    cr_assert_eq(fdl_kernel_launch_ex(probe, &sc, pargs, 2, &err), FDL_EINVAL);
    if (most > probe_attrs.max_dynamic_shared)
        snprintf(expect, sizeof expect,
                 "dynamic shared memory of %u bytes exceeds the %zu that kernel shared_probe "
                 "allows (fdl_kernel_set_max_dynamic_shared can raise that to %zu)",
                 bytes, probe_attrs.max_dynamic_shared, most);
    else
        snprintf(expect, sizeof expect,
                 "dynamic shared memory of %u bytes exceeds the %zu that kernel shared_probe "
                 "allows",
                 bytes, probe_attrs.max_dynamic_shared);
    cr_assert_str_eq(err.message, expect);
    cr_assert_eq(fdl_kernel_set_max_dynamic_shared(probe, most + 1, &err), FDL_EINVAL);
    char on_device[64];
    snprintf(on_device, sizeof on_device, "that kernel shared_probe can have on device %d",
             fdl_device_ordinal(dev));
    cr_assert(strstr(err.message, on_device), "%s", err.message);
    if (most >= 64 * 1024) {
        cr_assert_eq(fdl_kernel_set_max_dynamic_shared(probe, 64 * 1024, &err), FDL_OK, "%s",
                     err.message);
        bytes = 64 * 1024;
        sc.shared_bytes = bytes;
        sc.flags = FDL_LAUNCH_SYNC;
        cr_assert_eq(fdl_kernel_launch_ex(probe, &sc, pargs, 2, &err), FDL_OK, "%s", err.message);
        uint32_t sum = 0, expect_sum = 0;
        for (unsigned i = 0; i < bytes; i++)
            expect_sum += (unsigned char)(i * 7u + 3u);
        cr_assert_eq(fdl_buffer_read(sums, 0, &sum, sizeof sum, &err), FDL_OK);
        cr_assert_eq(sum, expect_sum);
    }
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

Test(gpu_launch, cooperative_launch_runs_and_is_checked)
{
    fdl_device *dev = open_or_skip();
    fdl_device_info info;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_get_info(dev, &info, &err), FDL_OK);
    if (!info.cooperative_launch)
        cr_skip_test("%s does not support cooperative launches", info.name);
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *k = kernel_or_fail(mod, "coop_exchange");
    unsigned blocks = (unsigned)info.sm_count;
    fdl_buffer *slots = sentinel_buffer(dev, blocks), *out = sentinel_buffer(dev, blocks);
    fdl_buffer *arrived = new_buffer(dev, sizeof(uint32_t));
    cr_assert_eq(fdl_buffer_zero(arrived, &err), FDL_OK);
    uint64_t ps = fdl_buffer_address(slots), pa = fdl_buffer_address(arrived),
             po = fdl_buffer_address(out);
    fdl_arg args[] = {FDL_ARG(ps), FDL_ARG(pa), FDL_ARG(po)};
    fdl_launch_config cfg = config((fdl_dim3){blocks, 1, 1}, (fdl_dim3){32, 1, 1});
    cfg.flags = FDL_LAUNCH_COOPERATIVE | FDL_LAUNCH_SYNC;
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 3, &err), FDL_OK, "%s", err.message);
    uint32_t *got = read_words(out, blocks);
    for (unsigned b = 0; b < blocks; b++)
        cr_assert_eq(got[b], ((b + 1) % blocks) * 2u + 5u, "block %u read %08x", b, got[b]);
    free(got);

    /* more blocks than can be resident at once */
    cfg.grid = (fdl_dim3){1u << 20, 1, 1};
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 3, &err), FDL_EINVAL);
    cr_assert(starts_with(err.message, "cooperative launch of 1048576 blocks exceeds the "), "%s",
              err.message);
    cr_assert(strstr(err.message, " that can be resident at once for kernel coop_exchange ("),
              "%s", err.message);
    char tail[64];
    snprintf(tail, sizeof tail, " per SM on %d SMs)", info.sm_count);
    cr_assert(strstr(err.message, tail), "%s", err.message);
    fdl_launch *l = NULL;
    cfg.flags = FDL_LAUNCH_COOPERATIVE;
    cr_assert_eq(fdl_launch_create(&l, k, &cfg, args, 3, &err), FDL_EINVAL);
    cr_assert(starts_with(err.message, "cooperative launch of 1048576 blocks"), "%s",
              err.message);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

Test(gpu_launch, prepared_launch_runs_repeatedly)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *k = kernel_or_fail(mod, "add_one");
    enum { N = 1000, WORDS = 1024, RUNS = 1000 };
    fdl_buffer *buf = new_buffer(dev, WORDS * sizeof(uint32_t));
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_buffer_zero(buf, &err), FDL_OK);
    uint64_t p = fdl_buffer_address(buf);
    uint32_t n = N;
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(n)};
    fdl_launch_config cfg = config((fdl_dim3){4, 1, 1}, (fdl_dim3){256, 1, 1});
    fdl_launch *l = NULL;
    cr_assert_eq(fdl_launch_create(&l, k, &cfg, args, 2, &err), FDL_OK, "%s", err.message);
    n = 7; /* the values were copied: changing the variable changes nothing */
    for (int i = 0; i < RUNS; i++)
        cr_assert_eq(fdl_launch_run(l, &err), FDL_OK, "run %d: %s", i, err.message);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    uint32_t *got = read_words(buf, WORDS);
    for (size_t i = 0; i < WORDS; i++)
        cr_assert_eq(got[i], i < N ? (uint32_t)RUNS : 0u, "word %zu is %u", i, got[i]);
    free(got);

    /* a new value for one argument */
    uint32_t half = N / 2;
    cr_assert_eq(fdl_launch_set_arg(l, 1, &half, sizeof half, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_launch_run(l, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    got = read_words(buf, WORDS);
    for (size_t i = 0; i < WORDS; i++)
        cr_assert_eq(got[i], i < N / 2 ? RUNS + 1u : i < N ? (uint32_t)RUNS : 0u, "word %zu", i);
    free(got);
    uint64_t wide = 5;
    cr_assert_eq(fdl_launch_set_arg(l, 1, &wide, sizeof wide, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message,
                     "kernel add_one: argument 1 has 8 bytes, but it was prepared with 4");
    cr_assert_eq(fdl_launch_set_arg(l, 2, &half, sizeof half, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "kernel add_one: no argument 2 in a launch prepared with 2");
    fdl_launch_destroy(l);

    /* on a stream; this one is left for the module to free */
    fdl_stream *stream = NULL;
    cr_assert_eq(fdl_stream_create(&stream, dev, &err), FDL_OK, "%s", err.message);
    fdl_kernel *fill = kernel_or_fail(mod, "fill_u32");
    uint32_t value = 0xfeedf00du, count = WORDS;
    fdl_arg fargs[] = {FDL_ARG(p), FDL_ARG(value), FDL_ARG(count)};
    cfg.stream = stream;
    cr_assert_eq(fdl_launch_create(&l, fill, &cfg, fargs, 3, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_launch_run(l, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_stream_synchronize(stream, &err), FDL_OK, "%s", err.message);
    got = read_words(buf, WORDS);
    for (size_t i = 0; i < WORDS; i++)
        cr_assert_eq(got[i], value, "word %zu", i);
    free(got);
    cfg.flags = FDL_LAUNCH_SYNC;
    fdl_launch *refused = (fdl_launch *)&refused;
    cr_assert_eq(fdl_launch_create(&refused, fill, &cfg, fargs, 3, &err), FDL_EINVAL);
    cr_assert_null(refused);
    fdl_module_destroy(mod);
    fdl_stream_destroy(stream);
    fdl_device_destroy(dev);
}

/*
 * The driver fdlink loaded, for making streams as another library would (without <cuda.h>: a
 * CUstream is a pointer, CUDA_SUCCESS 0, CU_STREAM_NON_BLOCKING 1).
 */
typedef struct foreign_driver {
    void *lib;
    int (*create)(void **stream, unsigned flags); /* cuStreamCreate */
    int (*destroy)(void *stream);                 /* cuStreamDestroy_v2 */
    int (*sync)(void *stream);                    /* cuStreamSynchronize */
} foreign_driver;

static foreign_driver foreign_open(void)
{
    const char *path = getenv("FDLINK_LIBCUDA");
    foreign_driver d = {0};
    d.lib = dlopen(path && path[0] ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(d.lib, "%s", dlerror());
    void *c = dlsym(d.lib, "cuStreamCreate"), *x = dlsym(d.lib, "cuStreamDestroy_v2"),
         *y = dlsym(d.lib, "cuStreamSynchronize");
    cr_assert(c && x && y);
    /* POSIX: a function pointer fits in a void * (as dlsym returns them) */
    memcpy(&d.create, &c, sizeof c);
    memcpy(&d.destroy, &x, sizeof x);
    memcpy(&d.sync, &y, sizeof y);
    return d;
}

/* fill_u32 of @p value over @p words words with @p blocks blocks of 256 threads, on @p s. */
static void fill_on(fdl_kernel *fill, fdl_buffer *buf, uint32_t value, uint32_t words,
                    unsigned blocks, fdl_stream *s)
{
    uint64_t p = fdl_buffer_address(buf);
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(value), FDL_ARG(words)};
    fdl_launch_config cfg = config((fdl_dim3){blocks, 1, 1}, (fdl_dim3){256, 1, 1});
    cfg.stream = s;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_kernel_launch_ex(fill, &cfg, args, 3, &err), FDL_OK, "%s", err.message);
}

static void expect_words(const fdl_buffer *buf, size_t words, uint32_t value, size_t upto,
                         uint32_t rest)
{
    uint32_t *got = read_words(buf, words);
    for (size_t i = 0; i < words; i++)
        cr_assert_eq(got[i], i < upto ? value : rest, "word %zu is 0x%x", i, got[i]);
    free(got);
}

Test(gpu_stream, a_foreign_stream_is_wrapped_used_and_left_alive)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *fill = kernel_or_fail(mod, "fill_u32");
    enum { WORDS = 1024 };
    fdl_buffer *buf = new_buffer(dev, WORDS * sizeof(uint32_t));
    fdl_error err = FDL_ERROR_INIT;
    foreign_driver d = foreign_open();
    void *theirs = NULL;
    cr_assert_eq(d.create(&theirs, 1 /* CU_STREAM_NON_BLOCKING */), 0);

    fdl_stream *s = (fdl_stream *)&s;
    cr_assert_eq(fdl_stream_wrap(&s, dev, theirs, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_stream_handle(s), theirs);
    cr_assert_eq(fdl_stream_device(s), dev);
    cr_assert_eq(fdl_stream_owned(s), 0);
    fill_on(fill, buf, 0xa11ce5u, WORDS, 4, s);
    cr_assert_eq(fdl_stream_synchronize(s, &err), FDL_OK, "%s", err.message);
    expect_words(buf, WORDS, 0xa11ce5u, WORDS, 0);

    /* a prepared launch moved onto it, its grid changed: 1 block, then 4 */
    fdl_stream *mine = NULL;
    cr_assert_eq(fdl_stream_create(&mine, dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_stream_owned(mine), 1);
    cr_assert_not_null(fdl_stream_handle(mine));
    uint64_t p = fdl_buffer_address(buf);
    uint32_t value = 0xbeefu, words = WORDS;
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(value), FDL_ARG(words)};
    fdl_launch_config cfg = config((fdl_dim3){1, 1, 1}, (fdl_dim3){256, 1, 1});
    cfg.stream = mine;
    fdl_launch *l = NULL;
    cr_assert_eq(fdl_launch_create(&l, fill, &cfg, args, 3, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_launch_set_stream(l, s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_launch_run(l, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_stream_synchronize(s, &err), FDL_OK, "%s", err.message);
    expect_words(buf, WORDS, 0xbeefu, 256, 0xa11ce5u);
    cr_assert_eq(fdl_launch_set_geometry(l, (fdl_dim3){4, 1, 1}, (fdl_dim3){256, 1, 1}, 0, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_launch_run(l, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_stream_synchronize(s, &err), FDL_OK, "%s", err.message);
    expect_words(buf, WORDS, 0xbeefu, WORDS, 0);
    /* a geometry refused is not taken: the launch still runs 4 blocks */
    cr_assert_eq(fdl_launch_set_geometry(l, (fdl_dim3){4, 0, 1}, (fdl_dim3){256, 1, 1}, 0, &err),
                 FDL_EINVAL);
    cr_assert_str_eq(err.message, "grid.y is 0 in the launch of kernel 'fill_u32' (every "
                                  "dimension must be at least 1)");
    cr_assert_eq(fdl_launch_set_geometry(l, (fdl_dim3){1, 1, 1}, (fdl_dim3){2048, 1, 1}, 0, &err),
                 FDL_EINVAL);
    cr_assert_str_eq(err.message, "block (2048,1,1) = 2048 threads exceeds the 1024 that kernel "
                                  "fill_u32 allows");
    value = 0x5eedu;
    cr_assert_eq(fdl_launch_set_arg(l, 1, &value, sizeof value, &err), FDL_OK, "%s", err.message);
    /* back to the default stream */
    cr_assert_eq(fdl_launch_set_stream(l, NULL, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_launch_run(l, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    expect_words(buf, WORDS, 0x5eedu, WORDS, 0);
    fdl_launch_destroy(l);
    fdl_stream_destroy(mine);

    /* the wrapper goes, the stream stays: theirs to use and to destroy */
    fdl_stream_destroy(s);
    cr_assert_eq(d.sync(theirs), 0);
    /*
     * A second wrapper is freed with the device, and the stream stays again. The other library
     * holds the primary context as long as its stream lives (a context's streams go with it):
     * here a second device handle holds it.
     */
    fdl_device *holder = NULL;
    cr_assert_eq(fdl_device_open(&holder, fdl_device_ordinal(dev), &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_stream_wrap(&s, dev, theirs, &err), FDL_OK, "%s", err.message);
    fdl_buffer_destroy(buf);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
    cr_assert_eq(d.sync(theirs), 0);
    cr_assert_eq(d.destroy(theirs), 0);
    fdl_device_destroy(holder);
    dlclose(d.lib);
}

Test(gpu_stream, a_stream_waits_for_an_event_of_another)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *fill = kernel_or_fail(mod, "fill_u32"), *add = kernel_or_fail(mod, "add_one");
    enum { WORDS = 1 << 20 };
    fdl_buffer *buf = new_buffer(dev, WORDS * sizeof(uint32_t));
    fdl_error err = FDL_ERROR_INIT;
    foreign_driver d = foreign_open();
    void *theirs = NULL;
    cr_assert_eq(d.create(&theirs, 1 /* CU_STREAM_NON_BLOCKING */), 0);
    fdl_stream *a = NULL, *b = NULL;
    fdl_event *done = NULL;
    cr_assert_eq(fdl_stream_wrap(&a, dev, theirs, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_stream_create(&b, dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_create(&done, dev, &err), FDL_OK, "%s", err.message);
    /* an event never recorded is no wait, as for the driver */
    cr_assert_eq(fdl_stream_wait_event(b, done, &err), FDL_OK, "%s", err.message);
    for (uint32_t round = 1; round <= 5; round++) {
        /* a (non-blocking, theirs): fill; b (fdlink's): after it, add one */
        fill_on(fill, buf, 1000u * round, WORDS, WORDS / 256, a);
        cr_assert_eq(fdl_event_record(done, a, &err), FDL_OK, "%s", err.message);
        cr_assert_eq(fdl_stream_wait_event(b, done, &err), FDL_OK, "%s", err.message);
        uint64_t p = fdl_buffer_address(buf);
        uint32_t n = WORDS;
        fdl_arg args[] = {FDL_ARG(p), FDL_ARG(n)};
        fdl_launch_config cfg = config((fdl_dim3){WORDS / 256, 1, 1}, (fdl_dim3){256, 1, 1});
        cfg.stream = b;
        cr_assert_eq(fdl_kernel_launch_ex(add, &cfg, args, 2, &err), FDL_OK, "%s", err.message);
        cr_assert_eq(fdl_stream_synchronize(b, &err), FDL_OK, "%s", err.message);
        cr_assert_eq(fdl_stream_synchronize(a, &err), FDL_OK, "%s", err.message);
        expect_words(buf, WORDS, 1000u * round + 1u, WORDS, 0);
    }
#ifdef NDEBUG /* a NULL handle asserts in debug builds */
    cr_assert_eq(fdl_stream_wait_event(b, NULL, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "fdl_stream_wait_event: event is NULL");
#endif
    /* the default stream waits too */
    cr_assert_eq(fdl_stream_wait_event(NULL, done, &err), FDL_OK, "%s", err.message);
    fdl_stream_destroy(a);
    fdl_stream_destroy(b);
    fdl_event_destroy(done);
    cr_assert_eq(d.destroy(theirs), 0);
    fdl_buffer_destroy(buf);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
    dlclose(d.lib);
}

Test(gpu_stream, the_default_stream_handles_are_wrapped_as_given)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *fill = kernel_or_fail(mod, "fill_u32");
    enum { WORDS = 512 };
    fdl_buffer *buf = new_buffer(dev, WORDS * sizeof(uint32_t));
    fdl_error err = FDL_ERROR_INIT;
    void *const handles[] = {NULL, FDL_STREAM_LEGACY, FDL_STREAM_PER_THREAD};
    for (size_t i = 0; i < 3; i++) {
        fdl_stream *s = NULL;
        cr_assert_eq(fdl_stream_wrap(&s, dev, handles[i], &err), FDL_OK, "%zu: %s", i,
                     err.message);
        cr_assert_eq(fdl_stream_handle(s), handles[i]);
        cr_assert_eq(fdl_stream_owned(s), 0);
        fill_on(fill, buf, 0x100u + (uint32_t)i, WORDS, 2, s);
        cr_assert_eq(fdl_stream_synchronize(s, &err), FDL_OK, "%zu: %s", i, err.message);
        expect_words(buf, WORDS, 0x100u + (uint32_t)i, WORDS, 0);
        fdl_stream_destroy(s);
    }
#ifdef NDEBUG /* a NULL handle asserts in debug builds */
    fdl_stream *s = (fdl_stream *)&s;
    cr_assert_eq(fdl_stream_wrap(&s, NULL, NULL, &err), FDL_EINVAL);
    cr_assert_null(s);
    cr_assert_str_eq(err.message, "fdl_stream_wrap: dev is NULL");
#endif
    cr_assert_null(fdl_stream_handle(NULL));
    cr_assert_null(fdl_stream_device(NULL));
    fdl_buffer_destroy(buf);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers: device to device, asynchronous, page-locked                                        */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_buffer, device_to_device_async_and_pinned_round_trips)
{
    fdl_device *dev = open_or_skip();
    enum { BYTES = 1 << 20 };
    fdl_error err = FDL_ERROR_INIT;
    fdl_buffer *a = new_buffer(dev, BYTES), *b = new_buffer(dev, BYTES);
    cr_assert_eq(fdl_buffer_device(a), dev);
    unsigned char *pattern = malloc(BYTES), *back = malloc(BYTES);
    cr_assert(pattern && back);
    for (size_t i = 0; i < BYTES; i++)
        pattern[i] = (unsigned char)(i * 131u + (i >> 9));
    cr_assert_eq(fdl_buffer_write(a, 0, pattern, BYTES, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_zero(b, &err), FDL_OK, "%s", err.message);
    /* device to device, at offsets */
    cr_assert_eq(fdl_buffer_copy(b, 4096, a, 100, 65536, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read(b, 0, back, BYTES, &err), FDL_OK, "%s", err.message);
    for (size_t i = 0; i < BYTES; i++) {
        unsigned char want = i >= 4096 && i < 4096 + 65536 ? pattern[i - 4096 + 100] : 0;
        cr_assert_eq(back[i], want, "byte %zu", i);
    }
    /* refused copies */
    cr_assert_eq(fdl_buffer_copy(b, 0, a, BYTES, 64, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message,
                     "copy of 64 bytes at offset 1048576 exceeds source buffer of 1048576 bytes");
    cr_assert_eq(fdl_buffer_copy(b, BYTES - 8, a, 0, 64, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "copy of 64 bytes at offset 1048568 exceeds destination buffer "
                                  "of 1048576 bytes");
    cr_assert_eq(fdl_buffer_copy(a, 32, a, 0, 64, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message,
                     "overlapping copy of 64 bytes within one buffer (from offset 0 to offset 32)");
    cr_assert_eq(fdl_buffer_copy(a, 64, a, 0, 64, &err), FDL_OK, "%s", err.message);

    /* page-locked host memory, asynchronous copies on a stream */
    fdl_host_buffer *hin = NULL, *hout = NULL;
    cr_assert_eq(fdl_host_buffer_create(&hin, dev, BYTES, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_host_buffer_create(&hout, dev, BYTES, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_host_buffer_size(hin), BYTES);
    unsigned char *in = fdl_host_buffer_data(hin), *outp = fdl_host_buffer_data(hout);
    cr_assert(in && outp);
    for (size_t i = 0; i < BYTES; i++)
        in[i] = (unsigned char)~pattern[i];
    memset(outp, 0x5a, BYTES);
    fdl_stream *s = NULL;
    cr_assert_eq(fdl_stream_create(&s, dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_write_async(a, 0, in, BYTES, s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_zero_async(b, s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_copy_async(b, 0, a, 0, BYTES, s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read_async(b, 0, outp, BYTES, s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_stream_synchronize(s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(memcmp(in, outp, BYTES), 0, "async round trip differs");
    cr_assert_eq(fdl_buffer_zero_async(b, NULL, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read_async(b, 0, outp, BYTES, NULL, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    for (size_t i = 0; i < BYTES; i++)
        cr_assert_eq(outp[i], 0, "byte %zu not zeroed", i);
    cr_assert_eq(fdl_buffer_read_async(b, 1, outp, BYTES, s, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "copy of 1048576 bytes at offset 1 exceeds buffer of 1048576 "
                                  "bytes");
    fdl_host_buffer *empty = (fdl_host_buffer *)&empty;
    cr_assert_eq(fdl_host_buffer_create(&empty, dev, 0, &err), FDL_EINVAL);
    cr_assert_null(empty);
    fdl_stream_destroy(s);
    fdl_host_buffer_destroy(hin);
    fdl_host_buffer_destroy(hout);
    fdl_buffer_destroy(a);
    fdl_buffer_destroy(b);
    free(pattern);
    free(back);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Events                                                                                      */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_event, events_time_a_kernel)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_kernel *spin = kernel_or_fail(mod, "spin");
    fdl_error err = FDL_ERROR_INIT;
    fdl_event *start = NULL, *end = NULL;
    cr_assert_eq(fdl_event_create(&start, dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_create(&end, dev, &err), FDL_OK, "%s", err.message);
    float ms = -1.0f;
    cr_assert_eq(fdl_event_elapsed_ms(&ms, start, end, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "the start event was never recorded");
    cr_assert_eq(fdl_event_synchronize(end, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "the event was never recorded");
    fdl_buffer *done = sentinel_buffer(dev, 1);
    uint64_t pd = fdl_buffer_address(done);
    uint64_t ns = 20 * 1000 * 1000; /* 20 ms on the device's global timer */
    fdl_arg args[] = {FDL_ARG(ns), FDL_ARG(pd)};
    fdl_stream *s = NULL;
    cr_assert_eq(fdl_stream_create(&s, dev, &err), FDL_OK, "%s", err.message);
    fdl_launch_config cfg = config((fdl_dim3){1, 1, 1}, (fdl_dim3){1, 1, 1});
    cfg.stream = s;
    cr_assert_eq(fdl_event_record(start, s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_elapsed_ms(&ms, start, end, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "the end event was never recorded");
    cr_assert_eq(fdl_kernel_launch_ex(spin, &cfg, args, 2, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_record(end, s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_elapsed_ms(&ms, start, end, &err), FDL_OK, "%s", err.message);
    cr_assert(ms >= 19.0f && ms < 5000.0f, "the 20 ms kernel took %g ms", (double)ms);
    cr_assert_eq(fdl_event_synchronize(end, &err), FDL_OK, "%s", err.message);
    uint32_t flag = 0;
    cr_assert_eq(fdl_buffer_read(done, 0, &flag, sizeof flag, &err), FDL_OK);
    cr_assert_eq(flag, 1u);
    /* back to back on the default stream: close to nothing */
    cr_assert_eq(fdl_event_record(start, NULL, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_record(end, NULL, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_elapsed_ms(&ms, start, end, &err), FDL_OK, "%s", err.message);
    cr_assert(ms >= 0.0f && ms < 19.0f, "%g ms between two events", (double)ms);
    fdl_event_destroy(start);
    fdl_event_destroy(end);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Verification                                                                                */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_verify, a_planted_mismatch_is_found_and_reported)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_kernels(dev);
    fdl_error err = FDL_ERROR_INIT;
    enum { N = 4096 };

    /* integers, exactly */
    fdl_buffer *out = sentinel_buffer(dev, N);
    uint64_t p = fdl_buffer_address(out);
    uint32_t n = N;
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(n)};
    fdl_launch_config cfg = config((fdl_dim3){N / 256, 1, 1}, (fdl_dim3){256, 1, 1});
    cfg.flags = FDL_LAUNCH_SYNC;
    cr_assert_eq(fdl_kernel_launch_ex(kernel_or_fail(mod, "iota_u32"), &cfg, args, 2, &err),
                 FDL_OK, "%s", err.message);
    static uint32_t expect[N];
    for (uint32_t i = 0; i < N; i++)
        expect[i] = 3u * i + 1u;
    fdl_verify_report r;
    cr_assert_eq(fdl_buffer_verify(&r, out, 0, FDL_UINT32, expect, N, NULL, &err), FDL_OK, "%s",
                 err.message);
    expect[1234] += 1;
    cr_assert_eq(fdl_buffer_verify(&r, out, 0, FDL_UINT32, expect, N, NULL, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 1);
    cr_assert_eq(r.shown, 1);
    cr_assert_eq(r.first[0].index, 1234);
    cr_assert_eq(r.first[0].got.u, 3703);
    cr_assert_eq(r.first[0].expected.u, 3704);
    cr_assert_str_eq(err.message, "1 of 4096 uint32 values differ (exact); first at index 1234: "
                                  "got 3703, expected 3704 (difference 1)");
    char text[512];
    fdl_verify_format(&r, text, sizeof text);
    cr_assert_str_eq(text, "uint32: 1 of 4096 values differ (exact); max difference 1\n"
                           "  [1234] got 3703, expected 3704 (difference 1)\n");

    /* floats: one value a unit in the last place away */
    fdl_kernel *saxpy = kernel_or_fail(mod, "saxpy");
    static float x[N], y[N], ref[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i * 0.25f;
        y[i] = 1.0f + (float)i;
        ref[i] = 2.0f * x[i] + y[i]; /* exact: small multiples of 1/4 */
    }
    fdl_buffer *dx = new_buffer(dev, sizeof x), *dy = new_buffer(dev, sizeof y);
    cr_assert_eq(fdl_buffer_write(dx, 0, x, sizeof x, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_write(dy, 0, y, sizeof y, &err), FDL_OK);
    uint64_t px = fdl_buffer_address(dx), py = fdl_buffer_address(dy);
    float a = 2.0f;
    int nn = N;
    fdl_arg sargs[] = {FDL_ARG(py), FDL_ARG(px), FDL_ARG(a), FDL_ARG(nn)};
    cr_assert_eq(fdl_kernel_launch_ex(saxpy, &cfg, sargs, 4, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_verify(&r, dy, 0, FDL_FLOAT32, ref, N, NULL, &err), FDL_OK, "%s",
                 err.message);
    ref[7] = nextafterf(ref[7], INFINITY);
    fdl_verify_options ulp0 = FDL_VERIFY_OPTIONS_INIT;
    ulp0.mode = FDL_VERIFY_ULP;
    cr_assert_eq(fdl_buffer_verify(&r, dy, 0, FDL_FLOAT32, ref, N, &ulp0, &err), FDL_EVERIFY);
    cr_assert_eq(r.mismatches, 1);
    cr_assert_eq(r.first[0].index, 7);
    cr_assert_eq(r.first[0].ulp, 1);
    cr_assert_eq(r.max_ulp, 1);
    cr_assert_eq(r.max_ulp_index, 7);
    cr_assert(starts_with(err.message, "1 of 4096 float32 values differ (ulp <= 0); first at index "
                                       "7: got 11.5, expected 11.500001 (abs error 9.53674e-07, "),
              "%s", err.message);
    fdl_verify_options ulp1 = ulp0;
    ulp1.max_ulp = 1;
    cr_assert_eq(fdl_buffer_verify(&r, dy, 0, FDL_FLOAT32, ref, N, &ulp1, &err), FDL_OK, "%s",
                 err.message);
    fdl_verify_options tol = FDL_VERIFY_OPTIONS_INIT;
    tol.mode = FDL_VERIFY_TOLERANCE;
    tol.rel_tol = 1e-6;
    cr_assert_eq(fdl_buffer_verify(&r, dy, 0, FDL_FLOAT32, ref, N, &tol, &err), FDL_OK, "%s",
                 err.message);
    fdl_module_destroy(mod);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* Device status (fdlink/device.h): safe_sqrt fails for negative input and for NaN             */
/* ------------------------------------------------------------------------------------------ */

/* status_functions + status_caller_a + status_caller_b linked for the device: two callers of
 * safe_sqrt including fdlink/device.h, one status record. */
static fdl_module *load_status_module(fdl_device *dev, fdl_link **link_out)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(dev);
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    static const char decl[] = "safe_sqrt: float32(float32)\n";
    cr_assert_eq(fdl_decls_parse(&decls, decl, sizeof decl - 1, "status.decl", &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK, "%s", err.message);
    static const char *const inputs[] = {KERNELS "/status_functions.ptx",
                                         KERNELS "/status_caller_a.ptx",
                                         KERNELS "/status_caller_b.ptx"};
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(fdl_link_add_file(link, inputs[i], FDL_KIND_AUTO, &err), FDL_OK, "%s: %s",
                     inputs[i], err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    fdl_decls_destroy(decls);
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    fdl_module *mod = NULL;
    cr_assert_eq(fdl_module_load_data(&mod, dev, cubin, size, "status.cubin", &err), FDL_OK,
                 "%s", err.message);
    *link_out = link;
    return mod;
}

Test(gpu_status, a_failing_device_function_is_reported_with_block_and_thread)
{
    fdl_device *dev = open_or_skip();
    fdl_link *link = NULL;
    fdl_module *mod = load_status_module(dev, &link);
    cr_assert_neq(fdl_module_has_status(mod), 0, "the callers' status record was not found");
    fdl_error err = FDL_ERROR_INIT;
    fdl_kernel *all = kernel_or_fail(mod, "sqrt_all");
    fdl_kernel *twice = kernel_or_fail(mod, "sqrt_twice_2d");

    /* sqrt_all: element 3 * 128 + 17 is negative: block (3,0,0) thread (17,0,0) */
    enum { N = 4096, BAD = 3 * 128 + 17 };
    static float in[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)i;
    in[BAD] = -1.0f;
    fdl_buffer *din = new_buffer(dev, sizeof in), *dout = sentinel_buffer(dev, N);
    cr_assert_eq(fdl_buffer_write(din, 0, in, sizeof in, &err), FDL_OK);
    uint64_t po = fdl_buffer_address(dout), pi = fdl_buffer_address(din);
    int n = N;
    fdl_arg args[] = {FDL_ARG(po), FDL_ARG(pi), FDL_ARG(n)};
    fdl_launch_config cfg = config((fdl_dim3){N / 128, 1, 1}, (fdl_dim3){128, 1, 1});
    cfg.flags = FDL_LAUNCH_SYNC;
    int rc = fdl_kernel_launch_ex(all, &cfg, args, 3, &err);
    cr_assert_eq(rc, FDL_EDEVICE, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert_str_eq(err.message, "device function safe_sqrt returned status 1 at block (3,0,0) "
                                  "thread (17,0,0) in kernel 'sqrt_all'");
    cr_assert_str_eq(err.symbol, "safe_sqrt");
    cr_assert_eq(err.backend_code, 1);
    /* the place and the count as fields (no map index) */
    cr_assert_eq(err.fields, FDL_ERROR_HAS_PLACE | FDL_ERROR_HAS_COUNT);
    cr_assert_eq(err.block[0], 3);
    cr_assert_eq(err.block[1] + err.block[2], 0);
    cr_assert_eq(err.thread[0], 17);
    cr_assert_eq(err.thread[1] + err.thread[2], 0);
    cr_assert_eq(err.count, 1);
    uint32_t *got = read_words(dout, N);
    for (int i = 0; i < N; i++) {
        uint32_t want = i == BAD ? SENTINEL : bits_of(sqrtf(in[i]));
        cr_assert_eq(got[i], want, "element %d: %08x", i, got[i]);
    }
    free(got);
    /* the record was cleared: a clean launch reports nothing */
    in[BAD] = 4.0f;
    cr_assert_eq(fdl_buffer_write(din, 0, in, sizeof in, &err), FDL_OK);
    cr_assert_eq(fdl_kernel_launch_ex(all, &cfg, args, 3, &err), FDL_OK, "%s", err.message);
    fdl_device_status st;
    cr_assert_eq(fdl_module_read_status(mod, &st, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(st.status, 0);

    /* sqrt_twice_2d (the other caller unit), 2-D: NaN at (37, 29) of 64 x 48 in 16 x 8 blocks:
     * block (2,3,0) thread (5,5,0), status 2, found by fdl_device_synchronize */
    enum { W = 64, H = 48 };
    static float grid_in[W * H];
    for (int i = 0; i < W * H; i++)
        grid_in[i] = (float)(i + 1);
    grid_in[29 * W + 37] = NAN;
    fdl_buffer *gin = new_buffer(dev, sizeof grid_in), *gout = sentinel_buffer(dev, W * H);
    cr_assert_eq(fdl_buffer_write(gin, 0, grid_in, sizeof grid_in, &err), FDL_OK);
    uint64_t pgo = fdl_buffer_address(gout), pgi = fdl_buffer_address(gin);
    int w = W, h = H;
    fdl_arg gargs[] = {FDL_ARG(pgo), FDL_ARG(pgi), FDL_ARG(w), FDL_ARG(h)};
    fdl_launch_config gcfg = config((fdl_dim3){W / 16, H / 8, 1}, (fdl_dim3){16, 8, 1});
    cr_assert_eq(fdl_kernel_launch_ex(twice, &gcfg, gargs, 4, &err), FDL_OK, "%s", err.message);
    rc = fdl_device_synchronize(dev, &err);
    cr_assert_eq(rc, FDL_EDEVICE, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert_str_eq(err.message, "device function safe_sqrt returned status 2 at block (2,3,0) "
                                  "thread (5,5,0) in kernel 'sqrt_twice_2d'");
    const unsigned block_2d[3] = {2, 3, 0}, thread_2d[3] = {5, 5, 0};
    cr_assert_eq(err.fields, FDL_ERROR_HAS_PLACE | FDL_ERROR_HAS_COUNT);
    cr_assert_arr_eq(err.block, block_2d, sizeof block_2d);
    cr_assert_arr_eq(err.thread, thread_2d, sizeof thread_2d);
    cr_assert_eq(err.count, 1);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "reported twice: %s", err.message);

    /* many failures over two launches: the first is kept, every one is counted */
    for (int i = 0; i < N; i++)
        in[i] = -1.0f - (float)i;
    cr_assert_eq(fdl_buffer_write(din, 0, in, sizeof in, &err), FDL_OK);
    cfg.flags = 0;
    cr_assert_eq(fdl_kernel_launch_ex(all, &cfg, args, 3, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_kernel_launch_ex(all, &cfg, args, 3, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_module_read_status(mod, &st, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(st.status, 1);
    cr_assert_str_eq(st.function, "safe_sqrt");
    cr_assert_eq(st.failures, 2 * N);
    cr_assert_lt(st.block.x, N / 128);
    cr_assert_lt(st.thread.x, 128);
    cr_assert_eq(st.block.y + st.block.z + st.thread.y + st.thread.z, 0);
    cr_assert_gt(st.line, 0);
    cr_assert_eq(fdl_kernel_launch_ex(all, &cfg, args, 3, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_kernel_launch_ex(all, &cfg, args, 3, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_module_check_status(mod, &err), FDL_EDEVICE);
    cr_assert(starts_with(err.message, "device function safe_sqrt returned status 1 at block ("),
              "%s", err.message);
    static const char tail[] = ") (first of 8192 failures)";
    size_t len = strlen(err.message);
    cr_assert(len > sizeof tail && strcmp(err.message + len - (sizeof tail - 1), tail) == 0, "%s",
              err.message);
    cr_assert_null(strstr(err.message, "in kernel"), "two launches: %s", err.message);
    /* the fields say what the message says: the first failure's place, every failure counted */
    cr_assert_eq(err.count, 2 * N);
    cr_assert_lt(err.block[0], N / 128);
    cr_assert_lt(err.thread[0], 128);
    char place[96];
    snprintf(place, sizeof place, "at block (%u,0,0) thread (%u,0,0) (first of 8192 failures)",
             err.block[0], err.thread[0]);
    cr_assert_not_null(strstr(err.message, place), "%s: %s", place, err.message);
    cr_assert_eq(fdl_module_check_status(mod, &err), FDL_OK, "%s", err.message);

    /* a module without the record has nothing to report */
    fdl_module *plain = load_kernels(dev);
    cr_assert_eq(fdl_module_has_status(plain), 0);
    cr_assert_eq(fdl_module_check_status(plain, &err), FDL_OK, "%s", err.message);
    fdl_device_destroy(dev); /* frees both modules and the buffers */
    fdl_link_destroy(link);
}

Test(gpu_status, whole_program_compilation_has_its_own_record)
{
    fdl_device *dev = open_or_skip();
    fdl_module *mod = load_file_or_fail(dev, KERNELS "/status_whole.fatbin");
    cr_assert_neq(fdl_module_has_status(mod), 0, "no record found in a whole-program unit");
    fdl_kernel *k = kernel_or_fail(mod, "sqrt_whole");
    enum { N = 1024 };
    static float in[N];
    for (int i = 0; i < N; i++)
        in[i] = (float)(i * i);
    in[5 * 64 + 63] = -4.0f; /* block (5,0,0) thread (63,0,0) */
    fdl_error err = FDL_ERROR_INIT;
    fdl_buffer *din = new_buffer(dev, sizeof in), *dout = sentinel_buffer(dev, N);
    cr_assert_eq(fdl_buffer_write(din, 0, in, sizeof in, &err), FDL_OK);
    uint64_t po = fdl_buffer_address(dout), pi = fdl_buffer_address(din);
    int n = N;
    fdl_arg args[] = {FDL_ARG(po), FDL_ARG(pi), FDL_ARG(n)};
    fdl_launch_config cfg = config((fdl_dim3){N / 64, 1, 1}, (fdl_dim3){64, 1, 1});
    cfg.flags = FDL_LAUNCH_SYNC;
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 3, &err), FDL_EDEVICE, "%s", err.message);
    cr_assert_str_eq(err.message, "device function safe_sqrt returned status 1 at block (5,0,0) "
                                  "thread (63,0,0) in kernel 'sqrt_whole'");
    uint32_t *got = read_words(dout, N);
    for (int i = 0; i < N; i++)
        cr_assert_eq(got[i], i == 5 * 64 + 63 ? SENTINEL : bits_of((float)i), "element %d", i);
    free(got);
    fdl_device_destroy(dev);
}
