/*
 * GPU tests of links (label gpu): every input kind x {LTO, no LTO} x {nvJitLink, cuLink where
 * valid}, each linked for the device's own architecture, loaded, launched and checked exactly;
 * CUDA C specialised at run time (-DBLOCK_SIZE); a kernel that launches a kernel through
 * libcudadevrt. Fixtures: tests/link/CMakeLists.txt (cubins for sm_90, a fatbin for sm_80 and
 * sm_90, LTO-IR for lto_90); a cell whose fixture has no code for the device is skipped, saying so.
 *
 * Every test skips where fdl_device_count finds no driver or no device. Criterion runs each test
 * in its own process, so CUDA is initialised afresh in each, never before the fork. Outputs are
 * filled with a sentinel first, so a kernel that never ran cannot pass.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/host.h"
#include "fdlink/link.h"

#define FX FDL_LINK_FIXTURES
#define SENTINEL 0x7fbadbadu /* a NaN no kernel here computes */

/* ------------------------------------------------------------------------------------------ */
/* Helpers                                                                                     */
/* ------------------------------------------------------------------------------------------ */

static fdl_device *open_or_skip(void)
{
    int count = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_count(&count, &err);
    if (rc == FDL_ENOLIB || rc == FDL_ENODEVICE)
        cr_skip_test("no CUDA device: %s", err.message);
    cr_assert_eq(rc, FDL_OK, "fdl_device_count: %s %s", fdl_status_name(rc), err.message);
    if (count == 0)
        cr_skip_test("no CUDA device");
    fdl_device *dev = NULL;
    rc = fdl_device_open(&dev, -1, &err); /* the GPU ctest assigned, else FDLINK_DEVICE or 0 */
    cr_assert_eq(rc, FDL_OK, "fdl_device_open: %s %s", fdl_status_name(rc), err.message);
    return dev;
}

static const char *fx(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", FX, name);
    return p;
}

/* Skip when a fixture has no code for this device (they target sm_80/sm_90 and lto_90). */
static void skip_if_other_arch(const fdl_device *dev, const fdl_error *err)
{
    if (strcmp(fdl_device_arch(dev), "sm_90") != 0 &&
        (strstr(err->message, "no code for") || strstr(err->message, "cannot be linked for") ||
         err->code == FDL_ELINK))
        cr_skip_test("fixture built for sm_90, device is %s: %s", fdl_device_arch(dev),
                     err->message);
}

static fdl_buffer *new_buffer(fdl_device *dev, size_t size)
{
    fdl_buffer *buf = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_buffer_create(&buf, dev, size, &err), FDL_OK, "%s", err.message);
    return buf;
}

/* Fill a buffer with the sentinel and check that it is there. */
static void fill_sentinel(fdl_buffer *buf, size_t words)
{
    uint32_t *host = malloc(words * sizeof *host);
    cr_assert_not_null(host);
    for (size_t i = 0; i < words; i++)
        host[i] = SENTINEL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_buffer_write(buf, 0, host, words * sizeof *host, &err), FDL_OK, "%s",
                 err.message);
    memset(host, 0, words * sizeof *host);
    cr_assert_eq(fdl_buffer_read(buf, 0, host, words * sizeof *host, &err), FDL_OK, "%s",
                 err.message);
    for (size_t i = 0; i < words; i++)
        cr_assert_eq(host[i], SENTINEL, "sentinel not in place at %zu", i);
    free(host);
}

static fdl_module *load(fdl_device *dev, const fdl_link *link)
{
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    cr_assert_not_null(cubin);
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_module_load_data(&mod, dev, cubin, size, "linked.cubin", &err);
    cr_assert_eq(rc, FDL_OK, "load: %s %s", fdl_status_name(rc), err.message);
    return mod;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/*
 * Launch multiply_vectors(out, a, b, n) of the linked cubin and compare every product with the
 * host's, bit for bit; the words past n keep the sentinel.
 */
static void check_multiply(fdl_device *dev, const fdl_link *link)
{
    enum { N = 100003, PAD = 61 };
    fdl_module *mod = load(dev, link);
    fdl_kernel *kernel = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_get_kernel(&kernel, mod, "multiply_vectors", &err), FDL_OK, "%s",
                 err.message);
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    uint32_t *out = malloc((N + PAD) * sizeof *out);
    cr_assert(a && b && out);
    for (int i = 0; i < N; i++) {
        a[i] = (float)((i % 2001) - 1000) * 0.3125f + 1.0f / (float)(i + 3);
        b[i] = (float)(1 + i % 977) / 977.0f * (float)(1 << (i % 9));
    }
    fdl_buffer *da = new_buffer(dev, N * sizeof(float));
    fdl_buffer *db = new_buffer(dev, N * sizeof(float));
    fdl_buffer *dout = new_buffer(dev, (N + PAD) * sizeof(uint32_t));
    cr_assert_eq(fdl_buffer_write(da, 0, a, N * sizeof(float), &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_write(db, 0, b, N * sizeof(float), &err), FDL_OK, "%s", err.message);
    fill_sentinel(dout, N + PAD);
    uint64_t pout = fdl_buffer_address(dout), pa = fdl_buffer_address(da),
             pb = fdl_buffer_address(db);
    int n = N;
    void *args[] = {&pout, &pa, &pb, &n};
    fdl_dim3 block = {256, 1, 1}, grid = {(N + 255) / 256, 1, 1};
    cr_assert_eq(fdl_kernel_launch(kernel, grid, block, 0, args, 4, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read(dout, 0, out, (N + PAD) * sizeof(uint32_t), &err), FDL_OK, "%s",
                 err.message);
    for (int i = 0; i < N; i++)
        cr_assert_eq(out[i], bits_of(a[i] * b[i]), "product %d: %a * %a gave bits %08x, the "
                     "host %08x", i, (double)a[i], (double)b[i], out[i], bits_of(a[i] * b[i]));
    for (int i = N; i < N + PAD; i++)
        cr_assert_eq(out[i], SENTINEL, "the kernel wrote past n, at %d", i);
    fdl_buffer_destroy(dout);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(da);
    fdl_module_destroy(mod);
    free(out);
    free(b);
    free(a);
}

/* ------------------------------------------------------------------------------------------ */
/* The matrix                                                                                  */
/* ------------------------------------------------------------------------------------------ */

enum expect { LINKS, REFUSED_AT_CREATE, REFUSED_AT_ADD };

/*
 * Link @p caller and @p callee for the device with @p backend and @p lto; as expected, either
 * launch and check the result, or check the refusal and its message.
 */
static void cell(const char *caller, const char *callee, fdl_lto_mode lto,
                 fdl_link_backend backend, enum expect expect, const char *refusal)
{
    fdl_device *dev = open_or_skip();
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(dev);
    opts.lto = lto;
    opts.backend = backend;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_link_create(&link, &opts, &err);
    if (expect == REFUSED_AT_CREATE) {
        cr_assert_eq(rc, FDL_EINVAL, "got %s: %s", fdl_status_name(rc), err.message);
        cr_assert_str_eq(err.message, refusal);
        cr_assert_null(link);
        fdl_device_destroy(dev);
        return;
    }
    cr_assert_eq(rc, FDL_OK, "fdl_link_create: %s %s", fdl_status_name(rc), err.message);
    cr_assert_eq(fdl_link_get_backend(link), backend);
    rc = fdl_link_add_file(link, fx(caller), FDL_KIND_AUTO, &err);
    if (rc != FDL_OK)
        skip_if_other_arch(dev, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s %s", caller, fdl_status_name(rc), err.message);
    rc = fdl_link_add_file(link, fx(callee), FDL_KIND_AUTO, &err);
    if (expect == REFUSED_AT_ADD) {
        cr_assert_eq(rc, FDL_EKIND, "got %s: %s", fdl_status_name(rc), err.message);
        cr_assert_str_eq(err.message, refusal);
        fdl_link_destroy(link);
        fdl_device_destroy(dev);
        return;
    }
    if (rc != FDL_OK)
        skip_if_other_arch(dev, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s %s", callee, fdl_status_name(rc), err.message);
    rc = fdl_link_complete(link, &err);
    if (rc != FDL_OK)
        skip_if_other_arch(dev, &err);
    cr_assert_eq(rc, FDL_OK, "%s + %s: %s %s\n%s", caller, callee, fdl_status_name(rc),
                 err.message, err.log ? err.log : "");
    cr_assert_eq(fdl_link_lto(link), lto != FDL_LTO_OFF, "LTO %d", fdl_link_lto(link));
    check_multiply(dev, link);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}

#define LTO_REFUSED "LTO needs the nvjitlink backend: cuLink cannot link LTO-IR"
#define LTOIR_OFF "LTO-IR can only be linked with link-time optimisation, and LTO is off"
#define LTOIR_CULINK "LTO-IR cannot be linked by the culink backend; use nvjitlink"

#define NV FDL_BACKEND_NVJITLINK
#define CU FDL_BACKEND_CULINK
#define OFF FDL_LTO_OFF
#define ON FDL_LTO_ON

/* no LTO: a PTX caller, every kind of callee (CUDA C compiled to PTX) */
Test(gpu_matrix, ptx_nolto_nvjitlink) { cell("caller.ptx", "mul.ptx", OFF, NV, LINKS, NULL); }
Test(gpu_matrix, cubin_nolto_nvjitlink) { cell("caller.ptx", "mul.cubin", OFF, NV, LINKS, NULL); }
Test(gpu_matrix, fatbin_nolto_nvjitlink) { cell("caller.ptx", "mul.fatbin", OFF, NV, LINKS, NULL); }
Test(gpu_matrix, object_nolto_nvjitlink) { cell("caller.ptx", "mul.o", OFF, NV, LINKS, NULL); }
Test(gpu_matrix, library_nolto_nvjitlink) { cell("caller.ptx", "libmul.a", OFF, NV, LINKS, NULL); }
Test(gpu_matrix, cuda_nolto_nvjitlink) { cell("caller.ptx", "mul.cu", OFF, NV, LINKS, NULL); }
Test(gpu_matrix, ltoir_nolto_nvjitlink) { cell("caller.ptx", "mul.ltoir", OFF, NV, REFUSED_AT_ADD, LTOIR_OFF); }

Test(gpu_matrix, ptx_nolto_culink) { cell("caller.ptx", "mul.ptx", OFF, CU, LINKS, NULL); }
Test(gpu_matrix, cubin_nolto_culink) { cell("caller.ptx", "mul.cubin", OFF, CU, LINKS, NULL); }
Test(gpu_matrix, fatbin_nolto_culink) { cell("caller.ptx", "mul.fatbin", OFF, CU, LINKS, NULL); }
Test(gpu_matrix, object_nolto_culink) { cell("caller.ptx", "mul.o", OFF, CU, LINKS, NULL); }
Test(gpu_matrix, library_nolto_culink) { cell("caller.ptx", "libmul.a", OFF, CU, LINKS, NULL); }
Test(gpu_matrix, cuda_nolto_culink) { cell("caller.ptx", "mul.cu", OFF, CU, LINKS, NULL); }
Test(gpu_matrix, ltoir_nolto_culink) { cell("caller.ptx", "mul.ltoir", OFF, CU, REFUSED_AT_ADD, LTOIR_CULINK); }

/* LTO: an LTO-IR caller, every kind of callee (CUDA C compiled to LTO-IR) */
Test(gpu_matrix, ptx_lto_nvjitlink) { cell("caller.ltoir", "mul.ptx", ON, NV, LINKS, NULL); }
Test(gpu_matrix, cubin_lto_nvjitlink) { cell("caller.ltoir", "mul.cubin", ON, NV, LINKS, NULL); }
Test(gpu_matrix, fatbin_lto_nvjitlink) { cell("caller.ltoir", "mul.fatbin", ON, NV, LINKS, NULL); }
Test(gpu_matrix, object_lto_nvjitlink) { cell("caller.ltoir", "mul.o", ON, NV, LINKS, NULL); }
Test(gpu_matrix, library_lto_nvjitlink) { cell("caller.ltoir", "libmul.a", ON, NV, LINKS, NULL); }
Test(gpu_matrix, cuda_lto_nvjitlink) { cell("caller.ltoir", "mul.cu", ON, NV, LINKS, NULL); }
Test(gpu_matrix, ltoir_lto_nvjitlink) { cell("caller.ltoir", "mul.ltoir", ON, NV, LINKS, NULL); }
/* LTO-IR inside fatbins, objects and libraries, with a PTX caller */
Test(gpu_matrix, ltoir_fatbin_lto_nvjitlink) { cell("caller.ptx", "mul_lto.fatbin", ON, NV, LINKS, NULL); }
Test(gpu_matrix, ltoir_object_lto_nvjitlink) { cell("caller.ptx", "mul_lto.o", ON, NV, LINKS, NULL); }
Test(gpu_matrix, ltoir_library_lto_nvjitlink) { cell("caller.ptx", "libmul_lto.a", ON, NV, LINKS, NULL); }

/* cuLink links no LTO-IR: refused before anything runs */
Test(gpu_matrix, ptx_lto_culink) { cell("caller.ltoir", "mul.ptx", ON, CU, REFUSED_AT_CREATE, LTO_REFUSED); }
Test(gpu_matrix, cubin_lto_culink) { cell("caller.ltoir", "mul.cubin", ON, CU, REFUSED_AT_CREATE, LTO_REFUSED); }
Test(gpu_matrix, fatbin_lto_culink) { cell("caller.ltoir", "mul.fatbin", ON, CU, REFUSED_AT_CREATE, LTO_REFUSED); }
Test(gpu_matrix, object_lto_culink) { cell("caller.ltoir", "mul.o", ON, CU, REFUSED_AT_CREATE, LTO_REFUSED); }
Test(gpu_matrix, library_lto_culink) { cell("caller.ltoir", "libmul.a", ON, CU, REFUSED_AT_CREATE, LTO_REFUSED); }
Test(gpu_matrix, cuda_lto_culink) { cell("caller.ltoir", "mul.cu", ON, CU, REFUSED_AT_CREATE, LTO_REFUSED); }
Test(gpu_matrix, ltoir_lto_culink) { cell("caller.ltoir", "mul.ltoir", ON, CU, REFUSED_AT_CREATE, LTO_REFUSED); }

Test(gpu_matrix, native_arch_is_the_device)
{
    fdl_device *dev = open_or_skip();
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT; /* arch NULL: the current context's device */
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_str_eq(fdl_link_arch(link), fdl_device_arch(dev));
    cr_assert_eq(fdl_link_add_file(link, fx("caller.ptx"), FDL_KIND_AUTO, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_file(link, fx("mul.ptx"), FDL_KIND_AUTO, &err), FDL_OK);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    check_multiply(dev, link);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}

/* ------------------------------------------------------------------------------------------ */
/* CUDA C specialised at run time                                                              */
/* ------------------------------------------------------------------------------------------ */

/*
 * block_sum.cu with -DBLOCK_SIZE=@p block, launched with blocks of that size: out[b] is
 * block * (the sum of block b's inputs). Another BLOCK_SIZE gives other sums, so the results
 * prove the value the compiler saw.
 */
static void block_sum(fdl_link_backend backend, int block)
{
    enum { BLOCKS = 37 };
    fdl_device *dev = open_or_skip();
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(dev);
    opts.backend = backend;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    char define[32];
    snprintf(define, sizeof define, "BLOCK_SIZE=%d", block);
    const char *defines[] = {define, NULL};
    fdl_nvrtc_options o = FDL_NVRTC_OPTIONS_INIT;
    o.defines = defines;
    o.std = "c++17";
    FILE *f = fopen(fx("block_sum.cu"), "rb");
    cr_assert_not_null(f);
    char src[8192];
    size_t n = fread(src, 1, sizeof src, f);
    fclose(f);
    cr_assert_eq(fdl_link_add_cuda(link, src, n, "block_sum.cu", &o, &err), FDL_OK, "%s\n%s",
                 err.message, err.log ? err.log : "");
    cr_assert_eq(fdl_link_add_file(link, fx("mul.ptx"), FDL_KIND_AUTO, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_lto(link), backend == FDL_BACKEND_NVJITLINK);

    size_t count = (size_t)BLOCKS * (size_t)block;
    float *in = malloc(count * sizeof *in);
    uint32_t out[BLOCKS + 3];
    cr_assert_not_null(in);
    for (size_t i = 0; i < count; i++)
        in[i] = (float)(1 + (i * 7) % 13); /* small integers: every sum is exact */
    fdl_module *mod = load(dev, link);
    fdl_kernel *kernel = NULL;
    cr_assert_eq(fdl_module_get_kernel(&kernel, mod, "block_sum", &err), FDL_OK, "%s",
                 err.message);
    fdl_buffer *din = new_buffer(dev, count * sizeof(float));
    fdl_buffer *dout = new_buffer(dev, sizeof out);
    cr_assert_eq(fdl_buffer_write(din, 0, in, count * sizeof(float), &err), FDL_OK);
    fill_sentinel(dout, BLOCKS + 3);
    uint64_t pout = fdl_buffer_address(dout), pin = fdl_buffer_address(din);
    void *args[] = {&pout, &pin};
    cr_assert_eq(fdl_kernel_launch(kernel, (fdl_dim3){BLOCKS, 1, 1},
                                   (fdl_dim3){(unsigned)block, 1, 1}, 0, args, 2, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read(dout, 0, out, sizeof out, &err), FDL_OK);
    for (int b = 0; b < BLOCKS; b++) {
        float sum = 0.0f;
        for (int i = 0; i < block; i++)
            sum += in[(size_t)b * (size_t)block + (size_t)i];
        float want = sum * (float)block;
        cr_assert_eq(out[b], bits_of(want), "block %d: got bits %08x, want %g (BLOCK_SIZE %d)", b,
                     out[b], (double)want, block);
    }
    for (int b = BLOCKS; b < BLOCKS + 3; b++)
        cr_assert_eq(out[b], SENTINEL);
    fdl_buffer_destroy(dout);
    fdl_buffer_destroy(din);
    fdl_module_destroy(mod);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
    free(in);
}

Test(gpu_cuda, block_size_64_nvjitlink) { block_sum(FDL_BACKEND_NVJITLINK, 64); }
Test(gpu_cuda, block_size_256_nvjitlink) { block_sum(FDL_BACKEND_NVJITLINK, 256); }
Test(gpu_cuda, block_size_128_culink) { block_sum(FDL_BACKEND_CULINK, 128); }

/* ------------------------------------------------------------------------------------------ */
/* A kernel that launches a kernel (libcudadevrt)                                              */
/* ------------------------------------------------------------------------------------------ */

static void launch_child(fdl_link_backend backend, const char *input)
{
    enum { BLOCKS = 41, N = BLOCKS * 32 - 5, WORDS = BLOCKS * 32 + 8 };
    fdl_device *dev = open_or_skip();
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(dev);
    opts.backend = backend;
    opts.cudadevrt = 1;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    int rc = fdl_link_add_file(link, fx(input), FDL_KIND_AUTO, &err);
    if (rc != FDL_OK)
        skip_if_other_arch(dev, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s", input, err.message);
    rc = fdl_link_complete(link, &err);
    cr_assert_eq(rc, FDL_OK, "%s %s\n%s", fdl_status_name(rc), err.message,
                 err.log ? err.log : "");
    fdl_module *mod = load(dev, link);
    fdl_kernel *kernel = NULL;
    cr_assert_eq(fdl_module_get_kernel(&kernel, mod, "launch_child", &err), FDL_OK, "%s",
                 err.message);
    fdl_buffer *dout = new_buffer(dev, WORDS * sizeof(uint32_t));
    fill_sentinel(dout, WORDS);
    uint64_t pout = fdl_buffer_address(dout);
    int n = N;
    void *args[] = {&pout, &n};
    cr_assert_eq(fdl_kernel_launch(kernel, (fdl_dim3){BLOCKS, 1, 1}, (fdl_dim3){32, 1, 1}, 0,
                                   args, 2, &err),
                 FDL_OK, "%s", err.message);
    /* the host waits for the child grids too */
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    uint32_t out[WORDS];
    cr_assert_eq(fdl_buffer_read(dout, 0, out, sizeof out, &err), FDL_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(out[i], (uint32_t)(3 * i + 1), "element %d is %08x: its child did not run",
                     i, out[i]);
    for (int i = N; i < WORDS; i++)
        cr_assert_eq(out[i], SENTINEL, "element %d past n was written", i);
    fdl_buffer_destroy(dout);
    fdl_module_destroy(mod);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}

Test(gpu_devrt, cuda_source_nvjitlink) { launch_child(FDL_BACKEND_NVJITLINK, "launch_child.cu"); }
Test(gpu_devrt, cubin_nvjitlink) { launch_child(FDL_BACKEND_NVJITLINK, "launch_child.cubin"); }
Test(gpu_devrt, cubin_culink) { launch_child(FDL_BACKEND_CULINK, "launch_child.cubin"); }
Test(gpu_devrt, cuda_source_culink) { launch_child(FDL_BACKEND_CULINK, "launch_child.cu"); }

/* ------------------------------------------------------------------------------------------ */
/* CUDA C including CUDA 13's headers: NVRTC's compile runs and agrees with nvcc's             */
/* ------------------------------------------------------------------------------------------ */

enum { C13_BLOCKS = 4, C13_THREADS = 128, C13_N = C13_BLOCKS * C13_THREADS - 12,
       C13_WORDS = C13_N + 8 };

/* Run kernel @p name of @p mod over C13_BLOCKS x C13_THREADS into a fresh buffer; malloc'ed. */
static uint32_t *c13_run(fdl_device *dev, fdl_module *mod, const char *name)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_kernel *kernel = NULL;
    cr_assert_eq(fdl_module_get_kernel(&kernel, mod, name, &err), FDL_OK, "%s", err.message);
    fdl_buffer *dout = new_buffer(dev, C13_WORDS * sizeof(uint32_t));
    fill_sentinel(dout, C13_WORDS);
    uint64_t pout = fdl_buffer_address(dout);
    unsigned n = C13_N;
    void *args[] = {&pout, &n};
    cr_assert_eq(fdl_kernel_launch(kernel, (fdl_dim3){C13_BLOCKS, 1, 1},
                                   (fdl_dim3){C13_THREADS, 1, 1}, 0, args, 2, &err),
                 FDL_OK, "%s: %s", name, err.message);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s: %s", name, err.message);
    uint32_t *out = malloc(C13_WORDS * sizeof *out);
    cr_assert_not_null(out);
    cr_assert_eq(fdl_buffer_read(dout, 0, out, C13_WORDS * sizeof *out, &err), FDL_OK);
    fdl_buffer_destroy(dout);
    return out;
}

/* What each kernel writes at i < n (curand's draws are compared with nvcc's only). */
static int c13_expected(const char *name, unsigned i, uint32_t *want)
{
    unsigned b = i / C13_THREADS, t = i % C13_THREADS;
    if (strcmp(name, "cg_tile_sum") == 0)
        *want = 32u * (i / 32u * 32u) + 496u;
    else if (strcmp(name, "barrier_rotate") == 0)
        *want = 3u * ((t + 1u) % C13_THREADS) + b;
    else if (strcmp(name, "traits_values") == 0)
        *want = (i % 3 == 0 ? 6u : i % 3 == 1 ? 3u : 1u) * 1000u + i;
    else if (strcmp(name, "cub_block_sum") == 0)
        *want = 3u * (C13_THREADS * b * C13_THREADS + C13_THREADS * (C13_THREADS - 1) / 2) +
                C13_THREADS;
    else
        return 0;
    return 1;
}

static void cuda13_runs(const char *name)
{
    fdl_device *dev = open_or_skip();
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = fdl_device_arch(dev);
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    char path[512];
    snprintf(path, sizeof path, "%s/cuda13/%s.cu", FDL_LINK_SOURCES, name);
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_file(link, path, FDL_KIND_AUTO, &err), FDL_OK, "%s: %s\n%s", name,
                 err.message, err.log ? err.log : "");
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s: %s", name, err.message);
    fdl_module *mod = load(dev, link);
    uint32_t *got = c13_run(dev, mod, name);
    for (unsigned i = 0; i < C13_N; i++) {
        uint32_t want;
        if (c13_expected(name, i, &want))
            cr_assert_eq(got[i], want, "%s: element %u is %u, want %u", name, i, got[i], want);
    }
    if (strcmp(name, "curand_draws") == 0) { /* uniform 32-bit draws: mean near 2^31, distinct */
        double mean = 0;
        for (unsigned i = 0; i < C13_N; i++)
            mean += got[i] / 4294967296.0 / C13_N;
        cr_assert(mean > 0.4 && mean < 0.6, "curand_draws: mean %g", mean);
        for (unsigned i = 1; i < C13_N; i++)
            cr_assert_neq(got[i], got[i - 1], "curand_draws: %u repeats", i);
    }
    if (strcmp(name, "traits_values") == 0)
        cr_assert_geq(got[C13_N], 201703u, "__cplusplus is %u", got[C13_N]);
    for (unsigned i = C13_N + (strcmp(name, "traits_values") == 0); i < C13_WORDS; i++)
        cr_assert_eq(got[i], SENTINEL, "%s: element %u past n was written", name, i);
    /* nvcc's compile of the same source (sm_90 fixture) computes the same, __cplusplus included */
    char cubin[64];
    snprintf(cubin, sizeof cubin, "cuda13_%s.cubin", name);
    if (strcmp(fdl_device_arch(dev), "sm_90") == 0) {
        fdl_module *ref = NULL;
        cr_assert_eq(fdl_module_load_file(&ref, dev, fx(cubin), &err), FDL_OK, "%s",
                     err.message);
        uint32_t *want = c13_run(dev, ref, name);
        for (unsigned i = 0; i < C13_WORDS; i++)
            cr_assert_eq(got[i], want[i], "%s: element %u: NVRTC's %u, nvcc's %u", name, i,
                         got[i], want[i]);
        free(want);
        fdl_module_destroy(ref);
    }
    free(got);
    fdl_module_destroy(mod);
    fdl_link_destroy(link);
    fdl_device_destroy(dev);
}

Test(gpu_cuda13, cooperative_groups) { cuda13_runs("cg_tile_sum"); }
Test(gpu_cuda13, cuda_barrier) { cuda13_runs("barrier_rotate"); }
Test(gpu_cuda13, cuda_std_type_traits) { cuda13_runs("traits_values"); }
Test(gpu_cuda13, cub_block_reduce) { cuda13_runs("cub_block_sum"); }
Test(gpu_cuda13, curand_kernel) { cuda13_runs("curand_draws"); }
