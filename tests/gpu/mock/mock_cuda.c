/*
 * A mock CUDA driver for machines without a GPU: the driver API entry points fdlink uses,
 * simulated in host memory, with host implementations of the kernels of tests/gpu/src (and the
 * link fixtures, and two maps that gen/ generates for `fdlink run --map`), so that the GPU tests
 * and the host runtime's logic run anywhere through
 * FDLINK_LIBCUDA=<this library>. It models what fdlink relies on and checks: one device with the
 * limits of an H100, a primary context that must be current, device memory that is bounds-checked
 * (a bad address in a kernel poisons the context, as on a GPU), launch checks, parameter info,
 * kernel enumeration, the device status record of fdlink/device.h, streams and events.
 *
 * Not a driver: every call completes before it returns, and one thread at a time may call it
 * (each test process has one). Environment:
 *   MOCK_CUDA_DRIVER_VERSION  what cuDriverGetVersion says (default 13000); below 12040 the
 *                             CUDA 12.4 entry points are absent
 *   MOCK_CUDA_NO_GPA          cuGetProcAddress finds nothing (fdlink falls back to dlsym)
 *   MOCK_CUDA_DEVICES         device count (default 1; 0 makes cuInit fail with NO_DEVICE)
 *   MOCK_CUDA_STREAM_CTX_OTHER cuStreamGetCtx says every stream is of another context
 *   MOCK_CUDA_CAPTURING       cuStreamIsCapturing says every stream but the default ones is
 *                             being captured into a CUDA graph (in the driver's global mode), and
 *                             then waiting for one (cuStreamSynchronize, cuCtxSynchronize),
 *                             cuMemFree, and cuMemAlloc unless the thread's capture mode is
 *                             relaxed (cuThreadExchangeStreamCaptureMode), fail as the driver's
 *                             do (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; such a call would
 *                             invalidate the capture: they are counted). "implicit": a stream
 *                             that synchronises with the legacy default stream, and that fdlink
 *                             does not know, is being captured: cuStreamIsCapturing of the legacy
 *                             stream says CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, of any other none
 * mock_cuda_last_params(out, max) gives the parameter bytes of the last launch (each as the kernel
 * reads it), for tests of argument packing.
 * mock_cuda_live(kind) reports what is still allocated, for leak checks; mock_cuda_live(-2) counts
 * the calls refused for an index or a name that does not exist (what compute-sanitizer reports as
 * API errors); mock_cuda_live(-3) the calls refused during a capture (each would have invalidated
 * it); mock_cuda_live(-4) the calling thread's capture mode (CUstreamCaptureMode).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#define EXPORT __attribute__((visibility("default")))

/* ---- state ---------------------------------------------------------------------------------- */

static int g_initialised;
static CUresult g_sticky = CUDA_SUCCESS;
static struct mock_ctx {
    int retains;
} g_ctx;
static _Thread_local void *g_current;

static int env_int(const char *name, int fallback)
{
    const char *s = getenv(name);
    return s && s[0] ? atoi(s) : fallback;
}

static int driver_version(void)
{
    return env_int("MOCK_CUDA_DRIVER_VERSION", 13000);
}

/* Device memory and other live objects, for bounds checks and leak counts. */
typedef enum live_kind { LIVE_DEVICE = 0, LIVE_HOST, LIVE_MODULE, LIVE_STREAM, LIVE_EVENT,
                         LIVE_GLOBAL, LIVE_KINDS } live_kind;

typedef struct alloc {
    struct alloc *next;
    live_kind kind;
    unsigned char *ptr;
    size_t size;
} alloc;

static alloc *g_allocs;
static long g_live[LIVE_KINDS];
static long g_refused;
static long g_capture_refused;
static _Thread_local CUstreamCaptureMode g_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* MOCK_CUDA_CAPTURING: 0 no capture, 1 every created stream is captured, 2 an unknown stream
 * that synchronises with the legacy stream is ("implicit") */
static int capturing(void)
{
    const char *v = getenv("MOCK_CUDA_CAPTURING");
    if (!v)
        return 0;
    return strcmp(v, "implicit") == 0 ? 2 : 1;
}

/* A call that a capture in global mode prohibits (what the driver refuses, invalidating it). */
static CUresult capture_refuses(void)
{
    g_capture_refused++;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

EXPORT long mock_cuda_live(int kind);
EXPORT long mock_cuda_live(int kind)
{
    if (kind == -1)
        return g_ctx.retains;
    if (kind == -2)
        return g_refused;
    if (kind == -3)
        return g_capture_refused;
    if (kind == -4)
        return (long)g_capture_mode;
    return kind >= 0 && kind < LIVE_KINDS ? g_live[kind] : -1;
}

static void *track(live_kind kind, size_t size, int fill)
{
    alloc *a = calloc(1, sizeof *a);
    unsigned char *p = malloc(size ? size : 1);
    if (!a || !p) {
        free(a);
        free(p);
        return NULL;
    }
    memset(p, fill, size ? size : 1);
    a->kind = kind;
    a->ptr = p;
    a->size = size;
    a->next = g_allocs;
    g_allocs = a;
    g_live[kind]++;
    return p;
}

static int untrack(live_kind kind, void *p)
{
    for (alloc **pp = &g_allocs; *pp; pp = &(*pp)->next) {
        if ((*pp)->ptr == p && (*pp)->kind == kind) {
            alloc *a = *pp;
            *pp = a->next;
            free(a->ptr);
            free(a);
            g_live[kind]--;
            return 1;
        }
    }
    return 0;
}

/* Host pointer for [addr, addr + len) of device memory, or NULL when it is not all allocated. */
static unsigned char *device_range(uint64_t addr, size_t len)
{
    for (alloc *a = g_allocs; a; a = a->next) {
        if (a->kind != LIVE_DEVICE && a->kind != LIVE_GLOBAL)
            continue;
        uint64_t base = (uint64_t)(uintptr_t)a->ptr;
        if (addr >= base && addr - base <= a->size && len <= a->size - (addr - base))
            return a->ptr + (addr - base);
    }
    return NULL;
}

/* Calls that need a current context, and that fail once the context is poisoned. */
static CUresult ready(void)
{
    if (!g_initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (g_current != &g_ctx || g_ctx.retains <= 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    return g_sticky;
}

/* ---- kernels -------------------------------------------------------------------------------- */

typedef struct launch {
    unsigned grid[3], block[3];
    unsigned shared;
    void **params;
    const struct func *fn;
    int cooperative; /* launched with cuLaunchCooperativeKernel */
} launch;

typedef struct kernel_def {
    const char *name;
    int nparams;
    size_t sizes[8];
    unsigned max_threads;
    size_t static_shared;
    void (*run)(const launch *L);
} kernel_def;

typedef struct func {
    const kernel_def *def;
    struct module *mod;
    int max_dynamic;
} func;

#define MAX_FUNCS 16

typedef struct module {
    func funcs[MAX_FUNCS];
    int nfuncs;
    unsigned char *status; /* the 112-byte fdl_status_v1, or NULL */
    unsigned char *fn_ptr; /* triple_ptr of tests/data/run/fn_table.cu: 8 bytes, or NULL */
} module;

/* What the mock's triple_ptr holds: the "address" of triple_i32, which call_through knows. */
#define MOCK_TRIPLE_ADDRESS 0x7f00c0ffee000040ull

/* fdl_status_record of fdlink/device.h */
typedef struct status_record {
    uint64_t failures;
    uint32_t claimed;
    int32_t status;
    uint32_t line;
    uint32_t block[3];
    uint32_t thread[3];
    char function[64];
} status_record;

static uint64_t arg_u64(const launch *L, int i)
{
    uint64_t v = 0;
    memcpy(&v, L->params[i], 8);
    return v;
}

static uint32_t arg_u32(const launch *L, int i)
{
    uint32_t v = 0;
    memcpy(&v, L->params[i], 4);
    return v;
}

static float arg_f32(const launch *L, int i)
{
    float v = 0;
    memcpy(&v, L->params[i], 4);
    return v;
}

/* Device memory for a kernel; a bad address poisons the context, as on a GPU. */
static unsigned char *dmem(uint64_t addr, size_t len)
{
    unsigned char *p = device_range(addr, len);
    if (!p)
        g_sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    return p;
}

#define FOR_THREADS_1D(L, i)                                                                  \
    for (unsigned bx_ = 0; bx_ < (L)->grid[0]; bx_++)                                         \
        for (unsigned tx_ = 0; tx_ < (L)->block[0]; tx_++)                                    \
            for (uint64_t i = (uint64_t)bx_ * (L)->block[0] + tx_, once_ = 1; once_; once_ = 0)

static void k_fill(const launch *L)
{
    uint64_t out = arg_u64(L, 0);
    uint32_t value = arg_u32(L, 1), n = arg_u32(L, 2);
    FOR_THREADS_1D(L, i)
    {
        if (i < n) {
            unsigned char *p = dmem(out + 4 * i, 4);
            if (!p)
                return;
            memcpy(p, &value, 4);
        }
    }
}

static void k_iota(const launch *L)
{
    uint64_t out = arg_u64(L, 0);
    uint32_t n = arg_u32(L, 1);
    FOR_THREADS_1D(L, i)
    {
        if (i < n) {
            uint32_t v = 3u * (uint32_t)i + 1u;
            unsigned char *p = dmem(out + 4 * i, 4);
            if (!p)
                return;
            memcpy(p, &v, 4);
        }
    }
}

static void k_add_one(const launch *L)
{
    uint64_t ptr = arg_u64(L, 0);
    uint32_t n = arg_u32(L, 1);
    FOR_THREADS_1D(L, i)
    {
        if (i < n) {
            unsigned char *p = dmem(ptr + 4 * i, 4);
            if (!p)
                return;
            uint32_t v;
            memcpy(&v, p, 4);
            v++;
            memcpy(p, &v, 4);
        }
    }
}

static void k_saxpy(const launch *L)
{
    uint64_t y = arg_u64(L, 0), x = arg_u64(L, 1);
    float a = arg_f32(L, 2);
    int32_t n = (int32_t)arg_u32(L, 3);
    FOR_THREADS_1D(L, i)
    {
        if ((int64_t)i < n) {
            unsigned char *py = dmem(y + 4 * i, 4), *px = dmem(x + 4 * i, 4);
            if (!py || !px)
                return;
            float fy, fx;
            memcpy(&fy, py, 4);
            memcpy(&fx, px, 4);
            fy = fmaf(a, fx, fy);
            memcpy(py, &fy, 4);
        }
    }
}

/* bench/device/mul_v4_callers.cu: four floats per thread */
static void k_multiply_vectors_v4(const launch *L)
{
    uint64_t out = arg_u64(L, 0), a = arg_u64(L, 1), b = arg_u64(L, 2);
    int32_t n4 = (int32_t)arg_u32(L, 3);
    FOR_THREADS_1D(L, i)
    {
        if ((int64_t)i < n4) {
            unsigned char *po = dmem(out + 16 * i, 16), *pa = dmem(a + 16 * i, 16),
                          *pb = dmem(b + 16 * i, 16);
            if (!po || !pa || !pb)
                return;
            for (int k = 0; k < 4; k++) {
                float fa, fb;
                memcpy(&fa, pa + 4 * k, 4);
                memcpy(&fb, pb + 4 * k, 4);
                float r = fa * fb;
                memcpy(po + 4 * k, &r, 4);
            }
        }
    }
}

static void k_multiply_vectors(const launch *L)
{
    uint64_t out = arg_u64(L, 0), a = arg_u64(L, 1), b = arg_u64(L, 2);
    int32_t n = (int32_t)arg_u32(L, 3);
    FOR_THREADS_1D(L, i)
    {
        if ((int64_t)i < n) {
            unsigned char *po = dmem(out + 4 * i, 4), *pa = dmem(a + 4 * i, 4),
                          *pb = dmem(b + 4 * i, 4);
            if (!po || !pa || !pb)
                return;
            float fa, fb;
            memcpy(&fa, pa, 4);
            memcpy(&fb, pb, 4);
            float r = fa * fb;
            memcpy(po, &r, 4);
        }
    }
}

/*
 * examples/matmul/matmul.cu, naive and tiled alike: c = a * b, float64, N x N with N the grid's
 * extent (every N the example compiles is a multiple of the block edge).
 */
static void k_matmul(const launch *L)
{
    uint64_t n = (uint64_t)L->grid[0] * L->block[0], bytes = 8 * n * n;
    unsigned char *pc = dmem(arg_u64(L, 0), bytes), *pa = dmem(arg_u64(L, 1), bytes),
                  *pb = dmem(arg_u64(L, 2), bytes);
    if (!pc || !pa || !pb || n != (uint64_t)L->grid[1] * L->block[1])
        return;
    const double *a = (const double *)(void *)pa, *b = (const double *)(void *)pb;
    double *c = (double *)(void *)pc;
    for (uint64_t i = 0; i < n; i++)
        for (uint64_t j = 0; j < n; j++) {
            double sum = 0.0;
            for (uint64_t k = 0; k < n; k++)
                sum += a[i * n + k] * b[k * n + j];
            c[i * n + j] = sum;
        }
}

static void k_mm(const launch *L)
{
    uint64_t c = arg_u64(L, 0), a = arg_u64(L, 1), b = arg_u64(L, 2);
    int32_t n = (int32_t)arg_u32(L, 3);
    for (unsigned by = 0; by < L->grid[1]; by++)
        for (unsigned bx = 0; bx < L->grid[0]; bx++)
            for (unsigned ty = 0; ty < L->block[1]; ty++)
                for (unsigned tx = 0; tx < L->block[0]; tx++) {
                    int64_t row = (int64_t)by * 16 + ty, col = (int64_t)bx * 16 + tx;
                    float sum = 0.0f;
                    for (int64_t k = 0; k < n; k++) {
                        unsigned char *pa = dmem(a + 4 * (uint64_t)(row * n + k), 4);
                        unsigned char *pb = dmem(b + 4 * (uint64_t)(k * n + col), 4);
                        if (!pa || !pb)
                            return;
                        float fa, fb;
                        memcpy(&fa, pa, 4);
                        memcpy(&fb, pb, 4);
                        sum += fa * fb;
                    }
                    unsigned char *pc = dmem(c + 4 * (uint64_t)(row * n + col), 4);
                    if (!pc)
                        return;
                    memcpy(pc, &sum, 4);
                }
}

static void k_bounded(const launch *L)
{
    uint64_t out = arg_u64(L, 0);
    FOR_THREADS_1D(L, i)
    {
        uint32_t v = 7;
        unsigned char *p = dmem(out + 4 * i, 4);
        if (!p)
            return;
        memcpy(p, &v, 4);
    }
}

static void k_static_shared(const launch *L)
{
    uint64_t out = arg_u64(L, 0);
    for (unsigned t = 0; t < L->block[0] && t < 256; t++) {
        uint32_t v = (255u - t) * (255u - t);
        unsigned char *p = dmem(out + 4 * (uint64_t)t, 4);
        if (!p)
            return;
        memcpy(p, &v, 4);
    }
}

static void k_params_mixed(const launch *L)
{
    uint64_t out = arg_u64(L, 0);
    signed char a;
    double b;
    uint64_t p;
    struct {
        int32_t a, b;
        double c;
        int64_t d;
    } s;
    int16_t h;
    memcpy(&a, L->params[1], 1);
    memcpy(&b, L->params[2], 8);
    memcpy(&p, L->params[3], 8);
    memcpy(&s, L->params[4], 24);
    memcpy(&h, L->params[5], 2);
    uint64_t v[8];
    v[0] = (uint64_t)(int64_t)a;
    memcpy(&v[1], &b, 8);
    v[2] = p;
    v[3] = (uint64_t)(int64_t)s.a;
    v[4] = (uint64_t)(int64_t)s.b;
    memcpy(&v[5], &s.c, 8);
    v[6] = (uint64_t)s.d;
    v[7] = (uint64_t)(int64_t)h;
    unsigned char *po = dmem(out, sizeof v);
    if (po)
        memcpy(po, v, sizeof v);
}

static void k_shared_probe(const launch *L)
{
    uint64_t out = arg_u64(L, 0);
    uint32_t bytes = arg_u32(L, 1);
    if (bytes > L->shared) {
        g_sticky = CUDA_ERROR_ILLEGAL_ADDRESS; /* past the block's shared memory */
        return;
    }
    for (unsigned b = 0; b < L->grid[0]; b++) {
        uint32_t sum = 0;
        for (uint32_t i = 0; i < bytes; i++)
            sum += (unsigned char)(i * 7u + 3u);
        unsigned char *p = dmem(out + 4 * (uint64_t)b, 4);
        if (!p)
            return;
        memcpy(p, &sum, 4);
    }
}

static void k_coop_exchange(const launch *L)
{
    uint64_t slots = arg_u64(L, 0), arrived = arg_u64(L, 1), out = arg_u64(L, 2);
    unsigned n = L->grid[0];
    for (unsigned b = 0; b < n; b++) {
        uint32_t v = b * 2u + 5u;
        unsigned char *p = dmem(slots + 4 * (uint64_t)b, 4);
        if (!p)
            return;
        memcpy(p, &v, 4);
    }
    unsigned char *pa = dmem(arrived, 4);
    if (!pa)
        return;
    memcpy(pa, &n, 4);
    for (unsigned b = 0; b < n; b++) {
        unsigned char *src = dmem(slots + 4 * (uint64_t)((b + 1) % n), 4),
                      *dst = dmem(out + 4 * (uint64_t)b, 4);
        if (!src || !dst)
            return;
        memcpy(dst, src, 4);
    }
}

static void k_spin(const launch *L)
{
    uint64_t ns = arg_u64(L, 0), done = arg_u64(L, 1);
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
    uint32_t one = 1;
    unsigned char *p = dmem(done, 4);
    if (p)
        memcpy(p, &one, 4);
}

static void k_empty(const launch *L)
{
    (void)L;
}

/* FDL_CALL's record in the launched kernel's module. */
static void record_failure(const launch *L, int status, const unsigned block[3],
                           const unsigned thread[3])
{
    unsigned char *p = L->fn->mod->status;
    if (!p) {
        g_sticky = CUDA_ERROR_ILLEGAL_ADDRESS; /* no record: the link would have failed */
        return;
    }
    status_record r;
    memcpy(&r, p, sizeof r);
    r.failures++;
    if (!r.claimed) {
        r.claimed = 1;
        r.status = status;
        r.line = 15;
        memcpy(r.block, block, sizeof r.block);
        memcpy(r.thread, thread, sizeof r.thread);
        memset(r.function, 0, sizeof r.function);
        memcpy(r.function, "safe_sqrt", 9);
    }
    memcpy(p, &r, sizeof r);
}

static int safe_sqrt(float *ret, float x)
{
    if (x != x)
        return 2;
    if (x < 0.0f)
        return 1;
    *ret = sqrtf(x);
    return 0;
}

static void k_sqrt_all(const launch *L)
{
    uint64_t out = arg_u64(L, 0), in = arg_u64(L, 1);
    int32_t n = (int32_t)arg_u32(L, 2);
    for (unsigned bx = 0; bx < L->grid[0]; bx++)
        for (unsigned tx = 0; tx < L->block[0]; tx++) {
            int64_t i = (int64_t)bx * L->block[0] + tx;
            if (i >= n)
                continue;
            unsigned char *pi = dmem(in + 4 * (uint64_t)i, 4);
            if (!pi)
                return;
            float x, r;
            memcpy(&x, pi, 4);
            int st = safe_sqrt(&r, x);
            if (st) {
                unsigned b[3] = {bx, 0, 0}, t[3] = {tx, 0, 0};
                record_failure(L, st, b, t);
                continue;
            }
            unsigned char *po = dmem(out + 4 * (uint64_t)i, 4);
            if (!po)
                return;
            memcpy(po, &r, 4);
        }
}

static void k_sqrt_twice_2d(const launch *L)
{
    uint64_t out = arg_u64(L, 0), in = arg_u64(L, 1);
    int32_t w = (int32_t)arg_u32(L, 2), h = (int32_t)arg_u32(L, 3);
    for (unsigned by = 0; by < L->grid[1]; by++)
        for (unsigned bx = 0; bx < L->grid[0]; bx++)
            for (unsigned ty = 0; ty < L->block[1]; ty++)
                for (unsigned tx = 0; tx < L->block[0]; tx++) {
                    int64_t x = (int64_t)bx * L->block[0] + tx, y = (int64_t)by * L->block[1] + ty;
                    if (x >= w || y >= h)
                        continue;
                    int64_t i = y * w + x;
                    unsigned char *pi = dmem(in + 4 * (uint64_t)i, 4);
                    if (!pi)
                        return;
                    float v, r, s;
                    memcpy(&v, pi, 4);
                    unsigned b[3] = {bx, by, 0}, t[3] = {tx, ty, 0};
                    int st = safe_sqrt(&r, v);
                    if (!st)
                        st = safe_sqrt(&s, r);
                    if (st) {
                        record_failure(L, st, b, t);
                        continue;
                    }
                    unsigned char *po = dmem(out + 4 * (uint64_t)i, 4);
                    if (!po)
                        return;
                    memcpy(po, &s, 4);
                }
}

/*
 * Maps that gen/ generates (fdlink/gen.h), as `fdlink run --map` makes them: out, the
 * parameters (an array's address, or a broadcast scalar), then n, vec and the failure record.
 * The mock's parameter sizes are fixed, so each is modelled for one choice of modes. Every index
 * below n is computed once, whatever the grid: the generated kernel's loop is grid-stride.
 */

/* fdl_gen_fail of gen/src/source.c: the lowest failing index, its status and function. */
static void map_failed(uint64_t fail, uint64_t i, const char *function, int status)
{
    unsigned char *p = dmem(fail, 88);
    if (!p)
        return;
    uint64_t index, failures;
    memcpy(&index, p + 8, 8);
    memcpy(&failures, p + 16, 8);
    failures++;
    memcpy(p + 16, &failures, 8);
    if (i < index) {
        int32_t st = status;
        memcpy(p + 4, &st, 4);
        memcpy(p + 8, &i, 8);
        memset(p + 24, 0, 64);
        memcpy(p + 24, function, strlen(function));
    }
}

/* mul_f32_f32 with modes "as": out[i] = a[i] * s */
static void k_map_mul_f32_f32(const launch *L)
{
    uint64_t out = arg_u64(L, 0), a = arg_u64(L, 1), n = arg_u64(L, 3);
    float s = arg_f32(L, 2);
    for (uint64_t i = 0; i < n; i++) {
        unsigned char *po = dmem(out + 4 * i, 4), *pa = dmem(a + 4 * i, 4);
        if (!po || !pa)
            return;
        float fa, r;
        memcpy(&fa, pa, 4);
        r = fa * s;
        memcpy(po, &r, 4);
    }
}

/* safe_sqrt with modes "a": out[i] = sqrt(x[i]); a failure leaves out[i] zero and is recorded
 * (in the map's record, and through FDL_CALL in the module's) */
static void k_map_safe_sqrt(const launch *L)
{
    uint64_t out = arg_u64(L, 0), x = arg_u64(L, 1), n = arg_u64(L, 2), fail = arg_u64(L, 4);
    for (uint64_t i = 0; i < n; i++) {
        unsigned char *po = dmem(out + 4 * i, 4), *px = dmem(x + 4 * i, 4);
        if (!po || !px)
            return;
        float v, r = 0.0f;
        memcpy(&v, px, 4);
        int st = safe_sqrt(&r, v);
        if (st) {
            unsigned b[3] = {(unsigned)(i / L->block[0]), 0, 0},
                     t[3] = {(unsigned)(i % L->block[0]), 0, 0};
            record_failure(L, st, b, t);
            map_failed(fail, i, "safe_sqrt", st);
            r = 0.0f;
        }
        memcpy(po, &r, 4);
    }
}

/* grid_sum_kernel (tests/data/run/grid_sum*.cu): out[0] = the sum of in[0..n) when launched
 * cooperatively; otherwise its grid sync cannot work and grid_sum fails: out[0] = ~0 */
static void k_grid_sum(const launch *L)
{
    uint64_t out = arg_u64(L, 0), in = arg_u64(L, 1);
    uint32_t n = arg_u32(L, 2);
    uint64_t total = 0;
    for (uint32_t i = 0; L->cooperative && i < n; i++) {
        unsigned char *p = dmem(in + 4 * (uint64_t)i, 4);
        uint32_t v;
        if (!p)
            return;
        memcpy(&v, p, 4);
        total += v;
    }
    if (!L->cooperative)
        total = ~(uint64_t)0;
    unsigned char *po = dmem(out, 8);
    if (po)
        memcpy(po, &total, 8);
}

/* call_through (tests/data/run/call_through.cu): out[i] = f(i), f the pointer passed; the mock
 * knows one function, triple_i32 at MOCK_TRIPLE_ADDRESS (any other pointer: -1) */
static void k_call_through(const launch *L)
{
    uint64_t out = arg_u64(L, 0), f = arg_u64(L, 1);
    int32_t n = (int32_t)arg_u32(L, 2);
    for (int32_t i = 0; i < n; i++) {
        unsigned char *po = dmem(out + 4 * (uint64_t)i, 4);
        int32_t v = f == MOCK_TRIPLE_ADDRESS ? 3 * i : -1;
        if (!po)
            return;
        memcpy(po, &v, 4);
    }
}

static const kernel_def g_kernels[] = {
    {"call_through", 3, {8, 8, 4}, 1024, 0, k_call_through},
    {"grid_sum_kernel", 4, {8, 8, 4, 8}, 1024, 0, k_grid_sum},
    {"fill", 3, {8, 4, 4}, 1024, 0, k_fill},
    {"fill_u32", 3, {8, 4, 4}, 1024, 0, k_fill},
    {"iota_u32", 2, {8, 4}, 1024, 0, k_iota},
    {"add_one", 2, {8, 4}, 1024, 0, k_add_one},
    {"saxpy", 4, {8, 8, 4, 4}, 1024, 0, k_saxpy},
    {"mm", 4, {8, 8, 8, 4}, 1024, 2048, k_mm},
    {"bounded", 1, {8}, 128, 0, k_bounded},
    {"static_shared", 1, {8}, 1024, 1024, k_static_shared},
    {"params_mixed", 6, {8, 1, 8, 8, 24, 2}, 1024, 0, k_params_mixed},
    {"shared_probe", 2, {8, 4}, 1024, 0, k_shared_probe},
    {"coop_exchange", 3, {8, 8, 8}, 1024, 0, k_coop_exchange},
    {"spin", 2, {8, 8}, 1024, 0, k_spin},
    {"empty", 0, {0}, 1024, 0, k_empty},
    {"empty_args", 4, {8, 8, 8, 4}, 1024, 0, k_empty}, /* bench/kernels.cu */
    {"fdlink_doctor_probe", 0, {0}, 1024, 0, k_empty}, /* fdlink doctor's launch test */
    {"multiply_vectors", 4, {8, 8, 8, 4}, 1024, 0, k_multiply_vectors},
    {"multiply_vectors_v4", 4, {8, 8, 8, 4}, 1024, 0, k_multiply_vectors_v4},
    {"sqrt_all", 3, {8, 8, 4}, 1024, 0, k_sqrt_all},
    {"sqrt_whole", 3, {8, 8, 4}, 1024, 0, k_sqrt_all},
    {"sqrt_twice_2d", 4, {8, 8, 4, 4}, 1024, 0, k_sqrt_twice_2d},
    {"fdl_map_mul_f32_f32", 6, {8, 8, 4, 8, 4, 8}, 256, 0, k_map_mul_f32_f32},
    {"fdl_map_safe_sqrt", 5, {8, 8, 8, 4, 8}, 256, 0, k_map_safe_sqrt},
    {"matmul_naive", 3, {8, 8, 8}, 1024, 0, k_matmul},         /* examples/matmul */
    {"matmul_tiled", 3, {8, 8, 8}, 1024, 16384, k_matmul},
};

/* ---- images --------------------------------------------------------------------------------- */

static uint64_t rd(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The image's size from its own headers (the driver is given no size either). */
static size_t image_size(const unsigned char *p)
{
    if (memcmp(p, "\x7f" "ELF", 4) == 0) {
        uint64_t end = rd(p + 40, 8) + rd(p + 58, 2) * rd(p + 60, 2);
        uint64_t shoff = rd(p + 40, 8), shentsize = rd(p + 58, 2), shnum = rd(p + 60, 2);
        for (uint64_t i = 0; i < shnum; i++) {
            const unsigned char *sh = p + shoff + i * shentsize;
            if (rd(sh + 4, 4) != 8 && rd(sh + 24, 8) + rd(sh + 32, 8) > end)
                end = rd(sh + 24, 8) + rd(sh + 32, 8);
        }
        return (size_t)end;
    }
    if (rd(p, 4) == 0xBA55ED50u)
        return (size_t)(rd(p + 6, 2) + rd(p + 8, 8));
    return strlen((const char *)p);
}

static int ident_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$';
}

/* Non-zero when @p name occurs in the image as a whole identifier. */
static int mentions(const unsigned char *p, size_t size, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i + n <= size; i++) {
        if (memcmp(p + i, name, n) != 0)
            continue;
        if ((i == 0 || !ident_char(p[i - 1])) && (i + n == size || !ident_char(p[i + n])))
            return 1;
    }
    return 0;
}

/* Kernel names seen in an image: symbols with the entry flag, or `.entry NAME` in PTX. */
typedef struct seen {
    const char *names[64];
    size_t lens[64];
    int n;
} seen;

static void see(seen *s, const char *name, size_t len)
{
    if (s->n < 64) {
        s->names[s->n] = name;
        s->lens[s->n++] = len;
    }
}

static void elf_entries(seen *s, const unsigned char *p, size_t size)
{
    if (size < 64 || p[4] != 2)
        return;
    uint64_t shoff = rd(p + 40, 8), shentsize = rd(p + 58, 2), shnum = rd(p + 60, 2);
    if (shentsize < 64 || shoff > size || shnum * shentsize > size - shoff)
        return;
    for (uint64_t i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + i * shentsize;
        if (rd(sh + 4, 4) != 2 /* SHT_SYMTAB */)
            continue;
        uint64_t off = rd(sh + 24, 8), len = rd(sh + 32, 8), link = rd(sh + 40, 4);
        if (link >= shnum || off > size || len > size - off)
            continue;
        const unsigned char *st = p + shoff + link * shentsize;
        uint64_t stroff = rd(st + 24, 8), strsize = rd(st + 32, 8);
        if (stroff > size || strsize > size - stroff)
            continue;
        for (uint64_t e = 0; e + 24 <= len; e += 24) {
            const unsigned char *sym = p + off + e;
            uint64_t name = rd(sym, 4);
            if ((sym[4] & 0xf) == 2 && (sym[5] & 0x10) && rd(sym + 6, 2) != 0 &&
                name < strsize) {
                const char *text = (const char *)p + stroff + name;
                const char *nul = memchr(text, 0, (size_t)(strsize - name));
                if (nul)
                    see(s, text, (size_t)(nul - text));
            }
        }
    }
}

static void ptx_entries(seen *s, const unsigned char *p, size_t size)
{
    for (size_t i = 0; i + 7 < size; i++) {
        if (memcmp(p + i, ".entry", 6) != 0 || (p[i + 6] != ' ' && p[i + 6] != '\t'))
            continue;
        size_t a = i + 6;
        while (a < size && (p[a] == ' ' || p[a] == '\t'))
            a++;
        size_t b = a;
        while (b < size && ident_char(p[b]))
            b++;
        if (b > a)
            see(s, (const char *)p + a, b - a);
    }
}

static void image_entries(seen *s, const unsigned char *p, size_t size)
{
    if (memcmp(p, "\x7f" "ELF", 4) == 0) {
        elf_entries(s, p, size);
        return;
    }
    if (rd(p, 4) == 0xBA55ED50u) {
        /* the cubins a fatbin carries uncompressed, else the PTX text it carries */
        for (size_t i = 16; i + 64 <= size; i++)
            if (memcmp(p + i, "\x7f" "ELF", 4) == 0)
                elf_entries(s, p + i, size - i);
        if (s->n == 0)
            ptx_entries(s, p, size);
        return;
    }
    ptx_entries(s, p, size);
}

static int was_seen(const seen *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (s->lens[i] == strlen(name) && memcmp(s->names[i], name, s->lens[i]) == 0)
            return 1;
    return 0;
}

/* ---- the API -------------------------------------------------------------------------------- */

EXPORT CUresult cuInit(unsigned int flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (env_int("MOCK_CUDA_DEVICES", 1) <= 0)
        return CUDA_ERROR_NO_DEVICE;
    g_initialised = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = driver_version();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!g_initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    *count = env_int("MOCK_CUDA_DEVICES", 1);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!g_initialised)
        return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= env_int("MOCK_CUDA_DEVICES", 1))
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    (void)d;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Mock H100 (fdlink tests)");
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: *v = 1; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
    (void)d;
    *bytes = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice d)
{
    (void)d;
    g_ctx.retains++;
    *ctx = (CUcontext)(void *)&g_ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d)
{
    (void)d;
    CUresult r = g_ctx.retains > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (g_ctx.retains > 0 && --g_ctx.retains == 0)
        g_sticky = CUDA_SUCCESS; /* a fresh context next time */
    return r;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (ctx && (void *)ctx != (void *)&g_ctx)
        return CUDA_ERROR_INVALID_CONTEXT;
    g_current = (void *)ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    if (capturing())
        return capture_refuses();
    return ready();
}

/* The calling thread's capture mode: what a capture in global mode prohibits is allowed in a
 * relaxed thread (cuMemAlloc here). */
EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (!mode || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = g_capture_mode;
    g_capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

static CUresult module_load(CUmodule *out, const void *image, unsigned n, CUjit_option *opts,
                            void **values)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    if (!out || !image)
        return CUDA_ERROR_INVALID_VALUE;
    char *info = NULL, *error = NULL;
    size_t info_size = 0, error_size = 0;
    for (unsigned i = 0; i < n; i++) {
        if (opts[i] == CU_JIT_INFO_LOG_BUFFER)
            info = values[i];
        else if (opts[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES)
            info_size = (size_t)(uintptr_t)values[i];
        else if (opts[i] == CU_JIT_ERROR_LOG_BUFFER)
            error = values[i];
        else if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            error_size = (size_t)(uintptr_t)values[i];
    }
    const unsigned char *p = image;
    size_t size = image_size(p);
    int binary = memcmp(p, "\x7f" "ELF", 4) == 0 || rd(p, 4) == 0xBA55ED50u;
    if (!binary && (mentions(p, size, "no_such_instruction") || !mentions(p, size, "version"))) {
        if (error && error_size)
            snprintf(error, error_size,
                     "ptxas application ptx input, line 6; error   : Not a name of any known "
                     "instruction: 'no_such_instruction'\nptxas fatal   : Ptx assembly aborted "
                     "due to errors\n");
        return CUDA_ERROR_INVALID_PTX;
    }
    module *m = track(LIVE_MODULE, sizeof *m, 0);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    seen found;
    found.n = 0;
    image_entries(&found, p, size);
    for (size_t k = 0; k < sizeof g_kernels / sizeof g_kernels[0]; k++) {
        if (m->nfuncs < MAX_FUNCS && was_seen(&found, g_kernels[k].name)) {
            func *f = &m->funcs[m->nfuncs++];
            f->def = &g_kernels[k];
            f->mod = m;
            f->max_dynamic = 49152 - (int)g_kernels[k].static_shared;
        }
    }
    if (mentions(p, size, "fdl_status_v1"))
        m->status = track(LIVE_GLOBAL, sizeof(status_record), 0);
    if (mentions(p, size, "triple_ptr") && (m->fn_ptr = track(LIVE_GLOBAL, 8, 0)) != NULL) {
        uint64_t v = MOCK_TRIPLE_ADDRESS;
        memcpy(m->fn_ptr, &v, 8);
    }
    if (info && info_size)
        snprintf(info, info_size, "mock: loaded %d kernels\n", m->nfuncs);
    *out = (CUmodule)(void *)m;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned int n,
                                   CUjit_option *opts, void **values)
{
    return module_load(out, image, n, opts, values);
}

static CUresult module_unload(CUmodule mod)
{
    CUresult r = ready();
    module *m = (module *)(void *)mod;
    if (r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_NOT_INITIALIZED)
        return r;
    if (m && m->status)
        untrack(LIVE_GLOBAL, m->status);
    if (m && m->fn_ptr)
        untrack(LIVE_GLOBAL, m->fn_ptr);
    if (!m || !untrack(LIVE_MODULE, m))
        return CUDA_ERROR_INVALID_HANDLE;
    return r;
}

EXPORT CUresult cuModuleUnload(CUmodule mod)
{
    return module_unload(mod);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    module *m = (module *)(void *)mod;
    for (int i = 0; i < m->nfuncs; i++) {
        if (strcmp(m->funcs[i].def->name, name) == 0) {
            *fn = (CUfunction)(void *)&m->funcs[i];
            return CUDA_SUCCESS;
        }
    }
    g_refused++;
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *ptr, size_t *bytes, CUmodule mod,
                                     const char *name)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    module *m = (module *)(void *)mod;
    if (strcmp(name, "triple_ptr") == 0 && m->fn_ptr) {
        *ptr = (CUdeviceptr)(uintptr_t)m->fn_ptr;
        *bytes = 8;
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "fdl_status_v1") != 0 || !m->status) {
        g_refused++;
        return CUDA_ERROR_NOT_FOUND;
    }
    *ptr = (CUdeviceptr)(uintptr_t)m->status;
    *bytes = sizeof(status_record);
    return CUDA_SUCCESS;
}

/* CUDA 12.3 and 12.4: reached only through cuGetProcAddress, and only for those versions. */
static CUresult mock_module_get_function_count(unsigned int *count, CUmodule mod)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    *count = (unsigned)((module *)(void *)mod)->nfuncs;
    return CUDA_SUCCESS;
}

static CUresult mock_module_enumerate_functions(CUfunction *fns, unsigned int n, CUmodule mod)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    module *m = (module *)(void *)mod;
    /* in reverse, so that the caller has to sort */
    for (unsigned i = 0; i < n && (int)i < m->nfuncs; i++)
        fns[i] = (CUfunction)(void *)&m->funcs[m->nfuncs - 1 - (int)i];
    return CUDA_SUCCESS;
}

static CUresult mock_func_get_name(const char **name, CUfunction fn)
{
    if (!name || !fn)
        return CUDA_ERROR_INVALID_VALUE;
    *name = ((func *)(void *)fn)->def->name;
    return CUDA_SUCCESS;
}

static CUresult mock_func_get_param_info(CUfunction fn, size_t index, size_t *offset,
                                         size_t *size)
{
    const kernel_def *d = ((func *)(void *)fn)->def;
    if ((int)index >= d->nparams) {
        g_refused++;
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t at = 0;
    for (size_t i = 0;; i++) {
        size_t s = d->sizes[i], align = s >= 8 ? 8 : s;
        at = (at + align - 1) / align * align;
        if (i == index) {
            if (offset)
                *offset = at;
            if (size)
                *size = s;
            return CUDA_SUCCESS;
        }
        at += s;
    }
}

EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction fn)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    const func *f = (const func *)(void *)fn;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = 16; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = (int)f->def->static_shared; break;
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = (int)f->def->max_threads; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dynamic; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = 75; break;
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = 90; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncSetAttribute(CUfunction fn, CUfunction_attribute a, int v)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    func *f = (func *)(void *)fn;
    if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || v < 0 ||
        (size_t)v + f->def->static_shared > 232448)
        return CUDA_ERROR_INVALID_VALUE;
    f->max_dynamic = v;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction fn,
                                                            int block_size, size_t dynamic)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    (void)fn;
    if (block_size <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    int n = 2048 / block_size;
    if (dynamic)
        n = n < (int)(233472 / (dynamic + 1024)) ? n : (int)(233472 / (dynamic + 1024));
    *blocks = n > 32 ? 32 : n;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t size)
{
    CUresult r = ready();
    if (r == CUDA_SUCCESS && !size)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && size > ((size_t)1 << 34))
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS && capturing() && g_capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return capture_refuses();
    void *p = r == CUDA_SUCCESS ? track(LIVE_DEVICE, size, 0xcd) : NULL;
    if (r == CUDA_SUCCESS && !p)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (p)
        *ptr = (CUdeviceptr)(uintptr_t)p;
    return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr)
{
    CUresult r = ready();
    if (r == CUDA_SUCCESS && capturing())
        return capture_refuses();
    if (r != CUDA_ERROR_INVALID_CONTEXT && r != CUDA_ERROR_NOT_INITIALIZED &&
        !untrack(LIVE_DEVICE, (void *)(uintptr_t)ptr))
        r = CUDA_ERROR_INVALID_VALUE;
    return r;
}

EXPORT CUresult cuMemHostAlloc(void **p, size_t size, unsigned int flags)
{
    CUresult r = ready();
    if (r == CUDA_SUCCESS && (!size || flags > 7))
        r = CUDA_ERROR_INVALID_VALUE;
    void *q = r == CUDA_SUCCESS ? track(LIVE_HOST, size, 0xab) : NULL;
    if (r == CUDA_SUCCESS && !q)
        r = CUDA_ERROR_OUT_OF_MEMORY;
    if (q)
        *p = q;
    return r;
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    CUresult r = ready();
    if (r != CUDA_ERROR_INVALID_CONTEXT && r != CUDA_ERROR_NOT_INITIALIZED &&
        !untrack(LIVE_HOST, p))
        r = CUDA_ERROR_INVALID_VALUE;
    return r;
}

static CUresult copy(uint64_t dst_dev, void *dst_host, uint64_t src_dev, const void *src_host,
                     size_t n)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    unsigned char *d = dst_host ? dst_host : device_range(dst_dev, n);
    const unsigned char *s = src_host ? src_host : device_range(src_dev, n);
    if (!d || !s)
        return CUDA_ERROR_INVALID_VALUE;
    memmove(d, s, n);
    return CUDA_SUCCESS;
}

static CUresult stream_ok(CUstream s);

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return copy(dst, NULL, 0, src, n);
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return copy(0, dst, src, NULL, n);
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy(dst, NULL, src, NULL, n);
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    return stream_ok(s) ? stream_ok(s) : copy(dst, NULL, 0, src, n);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return stream_ok(s) ? stream_ok(s) : copy(0, dst, src, NULL, n);
}

EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return stream_ok(s) ? stream_ok(s) : copy(dst, NULL, src, NULL, n);
}

static CUresult set(uint64_t dst, unsigned char v, size_t n)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    unsigned char *d = device_range(dst, n);
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    memset(d, v, n);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
    return set(dst, v, n);
}

EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s)
{
    return stream_ok(s) ? stream_ok(s) : set(dst, v, n);
}

/*
 * The parameters of the last launch, each read for the size the kernel's table gives it and
 * laid end to end: mock_cuda_last_params copies up to @p max of them into @p out and returns
 * how many there are (tests of a binding's argument packing read them through ctypes).
 */
static unsigned char g_last_params[4096];
static size_t g_last_params_len;
EXPORT size_t mock_cuda_last_params(void *out, size_t max);
EXPORT size_t mock_cuda_last_params(void *out, size_t max)
{
    if (out)
        memcpy(out, g_last_params, max < g_last_params_len ? max : g_last_params_len);
    return g_last_params_len;
}

static CUresult do_launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                          unsigned by, unsigned bz, unsigned shared, CUstream s, void **params,
                          int cooperative)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = stream_ok(s)) != CUDA_SUCCESS)
        return r;
    const func *f = (const func *)(void *)fn;
    if (!f)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t threads = (uint64_t)bx * by * bz;
    if (!gx || !gy || !gz || !bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 ||
        gy > 65535 || gz > 65535 || gx > 2147483647u || threads > 1024 ||
        shared > (unsigned)f->max_dynamic || (f->def->nparams && !params))
        return CUDA_ERROR_INVALID_VALUE;
    if (threads > f->def->max_threads)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    for (int i = 0; i < f->def->nparams; i++)
        if (!params[i])
            return CUDA_ERROR_INVALID_VALUE;
    if (cooperative) {
        int per_sm = 0;
        int n = 2048 / (int)threads;
        if (shared)
            n = n < (int)(233472 / (shared + 1024)) ? n : (int)(233472 / (shared + 1024));
        per_sm = n > 32 ? 32 : n;
        if ((uint64_t)gx * gy * gz > (uint64_t)per_sm * 132)
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    /* the parameter bytes as the kernel reads them, for tests of argument packing */
    g_last_params_len = 0;
    for (int i = 0; i < f->def->nparams; i++) {
        size_t n = f->def->sizes[i];
        if (g_last_params_len + n <= sizeof g_last_params) {
            memcpy(g_last_params + g_last_params_len, params[i], n);
            g_last_params_len += n;
        }
    }
    launch L = {{gx, gy, gz}, {bx, by, bz}, shared, params, f, cooperative};
    f->def->run(&L);
    return CUDA_SUCCESS; /* faults show up later, as on a GPU */
}

EXPORT CUresult cuLaunchKernel(CUfunction fn, unsigned int gx, unsigned int gy, unsigned int gz,
                               unsigned int bx, unsigned int by, unsigned int bz,
                               unsigned int shared, CUstream s, void **params, void **extra)
{
    if (extra)
        return CUDA_ERROR_INVALID_VALUE;
    return do_launch(fn, gx, gy, gz, bx, by, bz, shared, s, params, 0);
}

EXPORT CUresult cuLaunchCooperativeKernel(CUfunction fn, unsigned int gx, unsigned int gy,
                                          unsigned int gz, unsigned int bx, unsigned int by,
                                          unsigned int bz, unsigned int shared, CUstream s,
                                          void **params)
{
    return do_launch(fn, gx, gy, gz, bx, by, bz, shared, s, params, 1);
}

/*
 * Streams are tracked allocations of one byte; NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * are the default streams (the mock runs everything at once, so they are all one).
 */
static CUresult stream_ok(CUstream s)
{
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return CUDA_SUCCESS;
    for (alloc *a = g_allocs; a; a = a->next)
        if (a->kind == LIVE_STREAM && (void *)a->ptr == (void *)s)
            return CUDA_SUCCESS;
    return CUDA_ERROR_INVALID_HANDLE;
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
    CUresult r = ready();
    if (r == CUDA_SUCCESS && flags > 1)
        r = CUDA_ERROR_INVALID_VALUE;
    void *p = r == CUDA_SUCCESS ? track(LIVE_STREAM, 1, 0) : NULL;
    if (p)
        *s = (CUstream)p;
    return r;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    CUresult r = ready();
    if (r != CUDA_ERROR_INVALID_CONTEXT && !untrack(LIVE_STREAM, (void *)s))
        r = CUDA_ERROR_INVALID_HANDLE;
    return r;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    int c = capturing();
    if ((c == 1 && s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD) ||
        (c == 2 && (!s || s == CU_STREAM_LEGACY)))
        return capture_refuses();
    return ready() ? ready() : stream_ok(s);
}

/* MOCK_CUDA_CAPTURING: every stream but the default ones is being captured; "implicit": the
 * legacy stream says a stream that synchronises with it is */
EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ready() ? ready() : stream_ok(s);
    if (r != CUDA_SUCCESS)
        return r;
    int c = capturing();
    *st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (c == 2 && (!s || s == CU_STREAM_LEGACY))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (c == 1 && s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD)
        *st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

/* The one context for every stream the mock knows (the default streams included). */
EXPORT CUresult cuStreamGetCtx(CUstream s, CUcontext *ctx)
{
    CUresult r = ready();
    if (r == CUDA_SUCCESS && !ctx)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        r = stream_ok(s);
    /* MOCK_CUDA_STREAM_CTX_OTHER: as if the stream were made in a context of its own */
    static char other_ctx;
    if (r == CUDA_SUCCESS)
        *ctx = getenv("MOCK_CUDA_STREAM_CTX_OTHER") ? (CUcontext)(void *)&other_ctx
                                                    : (CUcontext)(void *)&g_ctx;
    return r;
}

typedef struct event {
    int recorded;
    uint64_t ns;
} event;

static int event_ok(CUevent e)
{
    for (alloc *a = g_allocs; a; a = a->next)
        if (a->kind == LIVE_EVENT && (void *)a->ptr == (void *)e)
            return 1;
    return 0;
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
    CUresult r = ready();
    if (r == CUDA_SUCCESS && flags != 0)
        r = CUDA_ERROR_INVALID_VALUE;
    void *p = r == CUDA_SUCCESS ? track(LIVE_EVENT, sizeof(event), 0) : NULL;
    if (p)
        *e = (CUevent)p;
    return r;
}

EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    CUresult r = ready();
    if (r != CUDA_ERROR_INVALID_CONTEXT && !untrack(LIVE_EVENT, (void *)e))
        r = CUDA_ERROR_INVALID_HANDLE;
    return r;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static CUresult event_record(CUevent e, CUstream s)
{
    CUresult r = ready();
    if (r == CUDA_SUCCESS)
        r = stream_ok(s);
    if (r == CUDA_SUCCESS && !event_ok(e))
        r = CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS) {
        event *ev = (event *)(void *)e;
        ev->recorded = 1;
        ev->ns = now_ns();
    }
    return r;
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    return event_record(e, s);
}

/* Everything has run by the time a call returns: a wait only checks its handles. */
EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
    CUresult r = ready();
    if (r == CUDA_SUCCESS)
        r = stream_ok(s);
    if (r == CUDA_SUCCESS && (!event_ok(e) || flags > 1))
        r = !event_ok(e) ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_VALUE;
    return r;
}

EXPORT CUresult cuEventSynchronize(CUevent e)
{
    return ready() ? ready() : event_ok(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    CUresult r = ready();
    if (r != CUDA_SUCCESS)
        return r;
    if (!event_ok(a) || !event_ok(b))
        return CUDA_ERROR_INVALID_HANDLE;
    const event *ea = (const event *)(void *)a, *eb = (const event *)(void *)b;
    if (!ea->recorded || !eb->recorded)
        return CUDA_ERROR_INVALID_HANDLE;
    *ms = (float)((double)((int64_t)(eb->ns - ea->ns)) / 1e6);
    return CUDA_SUCCESS;
}

#undef cuEventElapsedTime
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b);
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    return elapsed(ms, a, b);
}

static const struct {
    CUresult code;
    const char *name, *text;
} g_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
     "too many blocks in cooperative launch"},
};

EXPORT CUresult cuGetErrorName(CUresult e, const char **s)
{
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == e) {
            *s = g_errors[i].name;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **s)
{
    for (size_t i = 0; i < sizeof g_errors / sizeof g_errors[0]; i++)
        if (g_errors[i].code == e) {
            *s = g_errors[i].text;
            return CUDA_SUCCESS;
        }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- cuGetProcAddress ----------------------------------------------------------------------- */

typedef struct proc {
    const char *name;
    int since; /* the CUDA version that introduced it */
    void (*fn)(void);
} proc;

#define P(name, since, fn) {name, since, (void (*)(void))(fn)}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *status);
EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    const proc procs[] = {
        P("cuInit", 2000, cuInit),
        P("cuDriverGetVersion", 2020, cuDriverGetVersion),
        P("cuDeviceGetCount", 2000, cuDeviceGetCount),
        P("cuDeviceGet", 2000, cuDeviceGet),
        P("cuDeviceGetName", 2000, cuDeviceGetName),
        P("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
        P("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
        P("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
        P("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
        P("cuCtxSetCurrent", 4000, cuCtxSetCurrent),
        P("cuCtxSynchronize", 2000, cuCtxSynchronize),
        P("cuModuleLoadDataEx", 2010, cuModuleLoadDataEx),
        P("cuModuleUnload", 2000, cuModuleUnload),
        P("cuModuleGetFunction", 2000, cuModuleGetFunction),
        P("cuModuleGetGlobal", 3020, cuModuleGetGlobal_v2),
        P("cuModuleGetFunctionCount", 12040, mock_module_get_function_count),
        P("cuModuleEnumerateFunctions", 12040, mock_module_enumerate_functions),
        P("cuFuncGetName", 12030, mock_func_get_name),
        P("cuFuncGetParamInfo", 12040, mock_func_get_param_info),
        P("cuFuncGetAttribute", 2020, cuFuncGetAttribute),
        P("cuFuncSetAttribute", 9000, cuFuncSetAttribute),
        P("cuOccupancyMaxActiveBlocksPerMultiprocessor", 6050,
          cuOccupancyMaxActiveBlocksPerMultiprocessor),
        P("cuMemAlloc", 3020, cuMemAlloc_v2),
        P("cuMemFree", 3020, cuMemFree_v2),
        P("cuMemHostAlloc", 2020, cuMemHostAlloc),
        P("cuMemFreeHost", 2000, cuMemFreeHost),
        P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2),
        P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2),
        P("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2),
        P("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2),
        P("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2),
        P("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2),
        P("cuMemsetD8", 3020, cuMemsetD8_v2),
        P("cuMemsetD8Async", 3020, cuMemsetD8Async),
        P("cuLaunchKernel", 4000, cuLaunchKernel),
        P("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel),
        P("cuStreamCreate", 2000, cuStreamCreate),
        P("cuStreamDestroy", 4000, cuStreamDestroy_v2),
        P("cuStreamSynchronize", 2000, cuStreamSynchronize),
        P("cuStreamGetCtx", 9020, cuStreamGetCtx),
        P("cuStreamIsCapturing", 10000, cuStreamIsCapturing),
        P("cuThreadExchangeStreamCaptureMode", 10010, cuThreadExchangeStreamCaptureMode),
        P("cuStreamWaitEvent", 3020, cuStreamWaitEvent),
        P("cuEventCreate", 2000, cuEventCreate),
        P("cuEventDestroy", 4000, cuEventDestroy_v2),
        P("cuEventRecord", 2000, cuEventRecord),
        P("cuEventSynchronize", 2000, cuEventSynchronize),
        P("cuEventElapsedTime", 2000, cuEventElapsedTime),
        P("cuGetErrorName", 6000, cuGetErrorName),
        P("cuGetErrorString", 6000, cuGetErrorString),
    };
    if (!symbol || !pfn || flags > 4)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (getenv("MOCK_CUDA_NO_GPA"))
        return CUDA_ERROR_NOT_FOUND;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        if (strcmp(procs[i].name, symbol) != 0)
            continue;
        if (procs[i].since > driver_version())
            return CUDA_ERROR_NOT_FOUND; /* this driver has no such function */
        if (procs[i].since > version) {
            if (status)
                *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
            return CUDA_ERROR_NOT_FOUND;
        }
        /* POSIX: a function pointer fits in a void * (as dlsym returns them) */
        memcpy(pfn, &procs[i].fn, sizeof *pfn);
        if (status)
            *status = CU_GET_PROC_ADDRESS_SUCCESS;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_NOT_FOUND;
}
