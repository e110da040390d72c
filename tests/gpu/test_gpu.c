/*
 * GPU tests: link the fixtures of tests/data/link for the device's own architecture, load, launch
 * and check results exactly; modules, kernels, buffers and the errors of each on a real device.
 *
 * Every test skips where fdl_device_count finds no driver or no device. Criterion runs each test
 * in its own process, so CUDA is initialised afresh in each (never before the fork), and the test
 * that poisons its context with an illegal address harms no other.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fdlink/host.h"
#include "fdlink/link.h"

#define LINK_DATA FDL_LINK_FIXTURES

/* A float that no kernel here computes: a NaN with a payload. */
#define SENTINEL 0x7fbadbadu

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static fdl_device *open_or_skip(void)
{
    int count = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_count(&count, &err);
    if (rc == FDL_ENOLIB || rc == FDL_ENODEVICE) {
        if (starts_with(err.message, "no CUDA device"))
            cr_skip_test("%s", err.message);
        cr_skip_test("no CUDA device: %s", err.message);
    }
    cr_assert_eq(rc, FDL_OK, "fdl_device_count: %s %s", fdl_status_name(rc), err.message);
    cr_assert_gt(count, 0);
    fdl_device *dev = NULL;
    rc = fdl_device_open(&dev, 0, &err);
    cr_assert_eq(rc, FDL_OK, "fdl_device_open: %s %s", fdl_status_name(rc), err.message);
    cr_assert_not_null(dev);
    return dev;
}

/* mul.ptx + caller.ptx linked for the device's architecture. */
static fdl_link *link_for(const fdl_device *dev)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(dev);
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s: %s", opts.arch, err.message);
    cr_assert_eq(fdl_link_add_file(link, LINK_DATA "/mul.ptx", FDL_KIND_AUTO, &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_link_add_file(link, LINK_DATA "/caller.ptx", FDL_KIND_AUTO, &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    return link;
}

static fdl_module *load_linked(fdl_device *dev, const fdl_link *link)
{
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    cr_assert_not_null(cubin);
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_module_load_data(&mod, dev, cubin, size, "showcase.cubin", &err);
    cr_assert_eq(rc, FDL_OK, "%s %s", fdl_status_name(rc), err.message);
    return mod;
}

static fdl_buffer *new_buffer(fdl_device *dev, size_t size)
{
    fdl_buffer *buf = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_buffer_create(&buf, dev, size, &err), FDL_OK, "%s", err.message);
    return buf;
}

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
typedef struct guarded {
    char *map;
    size_t maplen;
    char *text;
} guarded;

static char *guard_copy(guarded *g, const char *s, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t pages = (len + page - 1) / page + 1;
    g->maplen = pages * page;
    g->map = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(g->map != MAP_FAILED);
    cr_assert_eq(mprotect(g->map + (pages - 1) * page, page, PROT_NONE), 0);
    g->text = g->map + (pages - 1) * page - len;
    memcpy(g->text, s, len);
    return g->text;
}

static void guard_free(guarded *g)
{
    munmap(g->map, g->maplen);
}

/* ------------------------------------------------------------------------------------------ */
/* Devices                                                                                     */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_device, describes_itself)
{
    fdl_device *dev = open_or_skip();
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
    cr_assert_eq(fdl_device_open(&again, 0, &err), FDL_OK, "%s", err.message);
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
    cr_assert_eq(setenv("FDLINK_DEVICE", "0", 1), 0);
    cr_assert_eq(fdl_device_open(&other, -1, &err), FDL_OK, "%s", err.message);
    cr_assert_str_eq(fdl_device_name(other), fdl_device_name(dev));
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
    /* the driver refuses a block larger than any device allows */
    cr_assert_eq(fdl_kernel_launch(fill, (fdl_dim3){1, 1, 1}, (fdl_dim3){4096, 1, 1}, 0, args, 3,
                                   &err),
                 FDL_ECUDA);
    cr_assert(starts_with(err.message, "cuLaunchKernel for kernel 'fill' failed: CUDA_ERROR_"),
              "%s", err.message);
    cr_assert_str_eq(err.symbol, "fill");
    cr_assert_neq(err.backend_code, 0);
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
    cr_assert_str_eq(err.message, "kernel 'multiply_vector' not found in module showcase.cubin");
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
    char expect[700];
    snprintf(expect, sizeof expect, "kernel 'nope' not found in module %s", path);
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

Test(gpu_module, bad_images_are_errors)
{
    fdl_device *dev = open_or_skip();
    fdl_error err = FDL_ERROR_INIT;
    fdl_module *mod = NULL;

    /* garbage: not ELF, not a fatbin, so the driver takes it for PTX and refuses it */
    unsigned char garbage[4096];
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < sizeof garbage; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        garbage[i] = (unsigned char)x;
    }
    garbage[0] = 0x13;
    int rc = fdl_module_load_data(&mod, dev, garbage, sizeof garbage, "garbage.bin", &err);
    cr_assert_eq(rc, FDL_ECUDA, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert_null(mod);
    cr_assert_str_eq(err.source, "garbage.bin");
    cr_assert(starts_with(err.message, "cuModuleLoadDataEx failed: CUDA_ERROR_"), "%s",
              err.message);
    cr_assert_neq(err.backend_code, 0);

    /* PTX with an error: the message quotes the JIT log */
    static const char broken[] = ".version 7.0\n.target sm_75\n.address_size 64\n"
                                 ".visible .entry k()\n{\n    no_such_instruction;\n    ret;\n}\n";
    rc = fdl_module_load_data(&mod, dev, broken, sizeof broken - 1, "broken.ptx", &err);
    cr_assert_eq(rc, FDL_ECUDA, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert(starts_with(err.message, "cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX"),
              "%s", err.message);
    cr_assert(strstr(err.message, "; jit log: "), "no JIT log quoted: %s", err.message);
    cr_assert_eq(err.backend_code, 218 /* CUDA_ERROR_INVALID_PTX */);

    /* a truncated cubin is caught before the driver reads past it */
    fdl_link *link = link_for(dev);
    size_t size;
    const void *cubin = fdl_link_cubin(link, &size);
    rc = fdl_module_load_data(&mod, dev, cubin, size / 2, "half.cubin", &err);
    cr_assert_eq(rc, FDL_EINVAL, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert(strstr(err.message, "truncated ELF image"), "%s", err.message);
    cr_assert_str_eq(err.source, "half.cubin");
    rc = fdl_module_load_data(&mod, dev, cubin, 0, "empty.cubin", &err);
    cr_assert_eq(rc, FDL_EINVAL);
    fdl_link_destroy(link);
    /* the context is still usable */
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
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
/* Asynchronous errors (this poisons the context: it must stay in a test of its own)           */
/* ------------------------------------------------------------------------------------------ */

Test(gpu_async, illegal_address_is_reported_by_synchronize_naming_the_kernel)
{
    fdl_device *dev = open_or_skip();
    fdl_link *link = link_for(dev);
    fdl_module *mod = load_linked(dev, link);
    fdl_kernel *kernel = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_get_kernel(&kernel, mod, "multiply_vectors", &err), FDL_OK, "%s",
                 err.message);
    enum { N = 256 };
    fdl_buffer *a = new_buffer(dev, N * sizeof(float));
    cr_assert_eq(fdl_buffer_zero(a, &err), FDL_OK, "%s", err.message);
    uint64_t bad = 0x8; /* out = an address no allocation has */
    uint64_t pa = fdl_buffer_address(a);
    int n = N;
    void *args[] = {&bad, &pa, &pa, &n};
    /* the launch itself is accepted: the fault happens on the device, later */
    cr_assert_eq(fdl_kernel_launch(kernel, (fdl_dim3){1, 1, 1}, (fdl_dim3){N, 1, 1}, 0, args, 4,
                                   &err),
                 FDL_OK, "%s", err.message);
    int rc = fdl_device_synchronize(dev, &err);
    cr_assert_eq(rc, FDL_ECUDA, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert(starts_with(err.message, "an earlier launch failed: CUDA_ERROR_ILLEGAL_ADDRESS ("),
              "%s", err.message);
    cr_assert(strstr(err.message, "the last kernel launched was 'multiply_vectors'"), "%s",
              err.message);
    cr_assert_str_eq(err.symbol, "multiply_vectors");
    cr_assert_eq(err.backend_code, 700 /* CUDA_ERROR_ILLEGAL_ADDRESS */);
    /* the error is sticky: later calls say so too */
    float host[N];
    rc = fdl_buffer_read(a, 0, host, sizeof host, &err);
    cr_assert_eq(rc, FDL_ECUDA);
    cr_assert(starts_with(err.message, "an earlier launch failed: "), "%s", err.message);
    /* and tearing down a poisoned context does not crash */
    fdl_buffer_destroy(a);
    fdl_module_destroy(mod);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}
