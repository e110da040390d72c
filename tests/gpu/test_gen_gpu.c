/*
 * gen/ on a GPU (label gpu; skipped without one): maps over declared functions for every type,
 * with arrays and broadcast scalars, aligned (vector accesses) and not; pointers passed through;
 * statuses reported by their lowest failing index; functions from NVRTC, PTX and LTO-IR inputs;
 * elementwise expressions; reductions at n = 0, 1, small primes, past a block and a grid, and
 * 2^31 + 13 where the device has the memory (not under compute-sanitizer: too slow there).
 */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/decl.h"
#include "fdlink/gen.h"
#include "fdlink/host.h"

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int under_sanitizer(void)
{
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    const char *pre = getenv("LD_PRELOAD");
    return getenv("FDLINK_UNDER_SANITIZER") || (inj && strstr(inj, "sanitizer")) ||
           (pre && strstr(pre, "sanitizer")) || getenv("NV_SANITIZER_INJECTION_TRANSPORT_TYPE");
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
    cr_assert_eq(rc, FDL_OK, "fdl_device_count: %s", err.message);
    fdl_device *dev = NULL;
    /* -1: the GPU ctest assigned (ctest --resource-spec-file), else FDLINK_DEVICE, else 0 */
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_OK, "%s", err.message);
    return dev;
}

static void fail_with(const char *what, const fdl_error *err)
{
    char line[1024];
    fdl_error_format(err, line, sizeof line);
    cr_assert_fail("%s: %s\n%s", what, line, err->log ? err->log : "");
}

#define OK(call, what)                                                                            \
    do {                                                                                          \
        fdl_error e_ = FDL_ERROR_INIT;                                                            \
        fdl_error *err_ = &e_;                                                                    \
        if ((call) != FDL_OK)                                                                     \
            fail_with(what, err_);                                                                \
    } while (0)

typedef struct fixture {
    fdl_device *dev;
    fdl_decls *decls;
    fdl_gen *gen;
} fixture;

/* A generator on the device for @decl_text, with @code (CUDA C) and @files as device code. */
static fixture make(fdl_device *dev, const char *decl_text, const char *code,
                    const char *const *files)
{
    fixture f = {dev, NULL, NULL};
    OK(fdl_decls_parse(&f.decls, decl_text, strlen(decl_text), "gpu.decl", err_), "decls");
    fdl_gen_options o = FDL_GEN_OPTIONS_INIT;
    o.decls = f.decls;
    o.inputs = files;
    OK(fdl_gen_create(&f.gen, dev, &o, err_), "fdl_gen_create");
    if (code)
        OK(fdl_gen_add_data(f.gen, code, strlen(code), "gpu.cu", FDL_KIND_CUDA, err_), "code");
    return f;
}

static void done(fixture *f)
{
    fdl_gen_destroy(f->gen);
    fdl_decls_destroy(f->decls);
    fdl_device_destroy(f->dev);
}

static fdl_buffer *buffer(fdl_device *dev, size_t size)
{
    fdl_buffer *b = NULL;
    OK(fdl_buffer_create(&b, dev, size ? size : 1, err_), "fdl_buffer_create");
    return b;
}

static fdl_buffer *upload(fdl_device *dev, const void *data, size_t size)
{
    fdl_buffer *b = buffer(dev, size);
    if (size)
        OK(fdl_buffer_write(b, 0, data, size, err_), "fdl_buffer_write");
    return b;
}

static void *download(const fdl_buffer *b, size_t offset, size_t size)
{
    void *p = malloc(size ? size : 1);
    cr_assert_not_null(p);
    if (size)
        OK(fdl_buffer_read(b, offset, p, size, err_), "fdl_buffer_read");
    return p;
}

/* ---- every type ---------------------------------------------------------------------------- */

typedef struct scalar_case {
    fdl_scalar s;
    const char *name, *c_type;
} scalar_case;

static const scalar_case scalars[] = {
    {FDL_BOOL, "boolean", "bool"},
    {FDL_INT8, "int8", "signed char"},
    {FDL_INT16, "int16", "short"},
    {FDL_INT32, "int32", "int"},
    {FDL_INT64, "int64", "long long"},
    {FDL_UINT8, "uint8", "unsigned char"},
    {FDL_UINT16, "uint16", "unsigned short"},
    {FDL_UINT32, "uint32", "unsigned int"},
    {FDL_UINT64, "uint64", "unsigned long long"},
    {FDL_INTP, "intp", "long long"},
    {FDL_UINTP, "uintp", "unsigned long long"},
    {FDL_FLOAT16, "float16", "__half"},
    {FDL_FLOAT32, "float32", "float"},
    {FDL_FLOAT64, "float64", "double"},
};
#define NSCALARS (sizeof scalars / sizeof scalars[0])

/* float16 bits of a small integer (|k| < 2048: exact). */
static uint16_t half_of(int k)
{
    if (!k)
        return 0;
    uint16_t sign = k < 0 ? 0x8000u : 0;
    unsigned m = (unsigned)(k < 0 ? -k : k);
    int e = 0;
    while ((m >> (e + 1)) != 0)
        e++;
    return (uint16_t)(sign | (unsigned)(e + 15) << 10 | ((m << (10 - e)) & 0x3ffu));
}

static double half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f;
    unsigned m = h & 0x3ffu;
    double v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
    return h & 0x8000u ? -v : v;
}

/* Store the small integer @k as element @i of an array of @s. */
static void put(void *a, fdl_scalar s, size_t i, long long k)
{
    switch (s) {
    case FDL_BOOL: ((unsigned char *)a)[i] = k != 0; break;
    case FDL_INT8: ((int8_t *)a)[i] = (int8_t)k; break;
    case FDL_UINT8: ((uint8_t *)a)[i] = (uint8_t)k; break;
    case FDL_INT16: ((int16_t *)a)[i] = (int16_t)k; break;
    case FDL_UINT16: ((uint16_t *)a)[i] = (uint16_t)k; break;
    case FDL_INT32: ((int32_t *)a)[i] = (int32_t)k; break;
    case FDL_UINT32: ((uint32_t *)a)[i] = (uint32_t)k; break;
    case FDL_INT64: case FDL_INTP: ((int64_t *)a)[i] = k; break;
    case FDL_UINT64: case FDL_UINTP: ((uint64_t *)a)[i] = (uint64_t)k; break;
    case FDL_FLOAT16: ((uint16_t *)a)[i] = half_of((int)k); break;
    case FDL_FLOAT32: ((float *)a)[i] = (float)k; break;
    case FDL_FLOAT64: ((double *)a)[i] = (double)k; break;
    default: cr_assert_fail("type %d", (int)s);
    }
}

static double get(const void *a, fdl_scalar s, size_t i)
{
    switch (s) {
    case FDL_BOOL: return ((const unsigned char *)a)[i];
    case FDL_INT8: return ((const int8_t *)a)[i];
    case FDL_UINT8: return ((const uint8_t *)a)[i];
    case FDL_INT16: return ((const int16_t *)a)[i];
    case FDL_UINT16: return ((const uint16_t *)a)[i];
    case FDL_INT32: return ((const int32_t *)a)[i];
    case FDL_UINT32: return ((const uint32_t *)a)[i];
    case FDL_INT64: case FDL_INTP: return (double)((const int64_t *)a)[i];
    case FDL_UINT64: case FDL_UINTP: return (double)((const uint64_t *)a)[i];
    case FDL_FLOAT16: return half_value(((const uint16_t *)a)[i]);
    case FDL_FLOAT32: return ((const float *)a)[i];
    case FDL_FLOAT64: return ((const double *)a)[i];
    default: cr_assert_fail("type %d", (int)s);
    }
    return 0;
}

static size_t size_of(fdl_scalar s)
{
    fdl_type t = {s, 0};
    return fdl_type_size(t);
}

/* add_T: T(T, T), *r = a + b; for every type. */
static void every_type_sources(char *decl, size_t dsize, char *code, size_t csize)
{
    size_t d = 0, c = 0;
    c += (size_t)snprintf(code + c, csize - c, "#include <cuda_fp16.h>\n");
    for (size_t i = 0; i < NSCALARS; i++) {
        const char *n = scalars[i].name, *t = scalars[i].c_type;
        d += (size_t)snprintf(decl + d, dsize - d, "add_%s: %s(%s, %s)\n", n, n, n, n);
        c += (size_t)snprintf(code + c, csize - c,
                              "extern \"C\" __device__ int add_%s(%s *r, %s a, %s b) "
                              "{ *r = (%s)(a + b); return 0; }\n", n, t, t, t, t);
    }
}

/*
 * out[i] = add(a[i], 3) over @n elements, with the arrays @skew elements past an aligned start
 * (skew 1 turns vector accesses off); every element checked.
 */
static void check_add(fixture *f, fdl_map *m, const scalar_case *sc, size_t n, size_t skew)
{
    size_t es = size_of(sc->s), bytes = (n + skew) * es;
    unsigned char *a = calloc(n + skew + 1, es), *three = calloc(1, 8);
    cr_assert(a && three);
    for (size_t i = 0; i < n; i++)
        put(a, sc->s, i + skew, sc->s == FDL_BOOL ? (long long)(i % 2) : (long long)(i % 50));
    put(three, sc->s, 0, sc->s == FDL_BOOL ? 0 : 3);
    fdl_buffer *da = upload(f->dev, a, bytes), *dout = buffer(f->dev, bytes);
    fdl_gen_arg args[] = {fdl_gen_array(fdl_buffer_address(dout) + skew * es, n * es),
                          fdl_gen_array(fdl_buffer_address(da) + skew * es, n * es),
                          fdl_gen_scalar(three, es)};
    OK(fdl_map_run(m, n, args, 3, err_), sc->name);
    unsigned char *out = download(dout, skew * es, n * es);
    for (size_t i = 0; i < n; i++) {
        double want = sc->s == FDL_BOOL ? (double)(i % 2) : (double)(i % 50 + 3);
        double got = get(out, sc->s, i);
        if (got != want)
            cr_assert_fail("%s, n = %zu, skew %zu: out[%zu] = %g, want %g", sc->name, n, skew, i,
                           got, want);
    }
    free(out);
    free(a);
    free(three);
    fdl_buffer_destroy(da);
    fdl_buffer_destroy(dout);
}

Test(gpu_gen_map, every_type_with_arrays_and_broadcast_scalars, .timeout = 900)
{
    fdl_device *dev = open_or_skip();
    char decl[4096], code[8192];
    every_type_sources(decl, sizeof decl, code, sizeof code);
    fixture f = make(dev, decl, code, NULL);
    for (size_t i = 0; i < NSCALARS; i++) {
        char name[32];
        snprintf(name, sizeof name, "add_%s", scalars[i].name);
        fdl_map *m = NULL;
        OK(fdl_map_create(&m, f.gen, name, "as", err_), name);
        static const size_t sizes[] = {0, 1, 7, 31, 1000003};
        for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++)
            check_add(&f, m, &scalars[i], sizes[j], 0);
        check_add(&f, m, &scalars[i], 1000003, 1); /* misaligned: element by element */
        fdl_map_destroy(m);
    }
    done(&f);
}

/* ---- the showcase's functions, from PTX and from LTO-IR ------------------------------------- */

static void check_showcase_functions(const char *input)
{
    fdl_device *dev = open_or_skip();
    const char *const files[] = {input, NULL};
    fdl_decls *decls = NULL;
    OK(fdl_decls_load(&decls, FDL_DEVICE_DECL, err_), "functions.decl");
    fdl_gen_options o = FDL_GEN_OPTIONS_INIT;
    o.decls = decls;
    o.inputs = files;
    fdl_gen *gen = NULL;
    OK(fdl_gen_create(&gen, dev, &o, err_), input);
    size_t n = (1u << 20) + 3;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(i % 1000) * 0.25f;
        b[i] = (float)(i % 7) - 3.0f;
    }
    fdl_buffer *da = upload(dev, a, n * 4), *db = upload(dev, b, n * 4), *dout = buffer(dev, n * 4);
    /* mul_f32_f32 over two arrays: the seed's multiply_vectors */
    fdl_map *mul = NULL;
    OK(fdl_map_create(&mul, gen, "mul_f32_f32", NULL, err_), "mul_f32_f32");
    cr_assert_eq(fdl_map_vector_width(mul), 4);
    fdl_gen_arg args[] = {fdl_gen_buffer(dout), fdl_gen_buffer(da), fdl_gen_buffer(db)};
    OK(fdl_map_run(mul, n, args, 3, err_), "mul_f32_f32");
    float *out = download(dout, 0, n * 4);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(out[i], a[i] * b[i], "%s: out[%zu] = %g, want %g", input, i, out[i],
                     a[i] * b[i]);
    free(out);
    /* sum_reduce(CPointer(float32), int32): the pointer passed through to every call */
    fdl_map *sum = NULL;
    OK(fdl_map_create(&sum, gen, "sum_reduce", "ss", err_), "sum_reduce");
    uint64_t ptr = fdl_buffer_address(db);
    int32_t count = 100;
    fdl_gen_arg sargs[] = {fdl_gen_array(fdl_buffer_address(dout), 1000 * 4), FDL_GEN_VALUE(ptr),
                           FDL_GEN_VALUE(count)};
    OK(fdl_map_run(sum, 1000, sargs, 3, err_), "sum_reduce");
    float want = 0;
    for (int i = 0; i < count; i++)
        want += b[i];
    out = download(dout, 0, 1000 * 4);
    for (size_t i = 0; i < 1000; i++)
        cr_assert_eq(out[i], want, "sum_reduce at %zu: %g, want %g", i, out[i], want);
    free(out);
    /* add_cabi, abi=c: no status */
    fdl_map *add = NULL;
    OK(fdl_map_create(&add, gen, "add_cabi", "as", err_), "add_cabi");
    uint32_t *u = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        u[i] = (uint32_t)(i * 2654435761u);
    fdl_buffer *du = upload(dev, u, n * 4);
    uint32_t seven = 7;
    fdl_gen_arg cargs[] = {fdl_gen_buffer(dout), fdl_gen_buffer(du), FDL_GEN_VALUE(seven)};
    OK(fdl_map_run(add, n, cargs, 3, err_), "add_cabi");
    uint32_t *uo = download(dout, 0, n * 4);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(uo[i], u[i] + 7u, "add_cabi at %zu", i);
    free(uo);
    free(u);
    free(a);
    free(b);
    fdl_map_destroy(mul);
    fdl_map_destroy(sum);
    fdl_map_destroy(add);
    fdl_gen_destroy(gen);
    fdl_decls_destroy(decls);
    fdl_device_destroy(dev);
}

Test(gpu_gen_map, showcase_functions_from_ptx)
{
    check_showcase_functions(FDL_GEN_KERNELS "/gen_functions.ptx");
}

Test(gpu_gen_map, showcase_functions_from_ltoir)
{
    check_showcase_functions(FDL_GEN_KERNELS "/gen_functions.ltoir");
}

/* ---- pointers and statuses --------------------------------------------------------------------- */

static const char status_decl[] =
    "twice_pos: float32(float32)\n"
    "scaled: float32(CPointer(float32), float32)\n"
    "deref: int32(CPointer(int32))\n";
static const char status_code[] =
    "extern \"C\" __device__ int twice_pos(float *r, float x)\n"
    "{ if (x < 0.0f) return 7; *r = 2.0f * x; return 0; }\n"
    "extern \"C\" __device__ int scaled(float *r, float *k, float x) { *r = *k * x; return 0; }\n"
    "extern \"C\" __device__ int deref(int *r, int *p) { *r = *p; return p == 0; }\n";

Test(gpu_gen_map, pointers_are_passed_through_as_given)
{
    fdl_device *dev = open_or_skip();
    fixture f = make(dev, status_decl, status_code, NULL);
    size_t n = 4099;
    float k = 2.5f, *x = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)i;
    fdl_buffer *dk = upload(dev, &k, 4), *dx = upload(dev, x, n * 4), *dout = buffer(dev, n * 4);
    fdl_map *m = NULL;
    OK(fdl_map_create(&m, f.gen, "scaled", "sa", err_), "scaled");
    uint64_t kp = fdl_buffer_address(dk);
    fdl_gen_arg args[] = {fdl_gen_buffer(dout), FDL_GEN_VALUE(kp), fdl_gen_buffer(dx)};
    OK(fdl_map_run(m, n, args, 3, err_), "scaled");
    float *out = download(dout, 0, n * 4);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(out[i], 2.5f * x[i], "scaled at %zu", i);
    free(out);
    fdl_map_destroy(m);
    /* an array of pointers: each index its own */
    int32_t vals[3] = {11, 22, 33};
    fdl_buffer *dv = upload(dev, vals, sizeof vals);
    uint64_t ptrs[5];
    for (size_t i = 0; i < 5; i++)
        ptrs[i] = fdl_buffer_address(dv) + 4 * ((i * 2) % 3);
    fdl_buffer *dp = upload(dev, ptrs, sizeof ptrs), *di = buffer(dev, 5 * 4);
    OK(fdl_map_create(&m, f.gen, "deref", "a", err_), "deref");
    fdl_gen_arg pargs[] = {fdl_gen_buffer(di), fdl_gen_buffer(dp)};
    OK(fdl_map_run(m, 5, pargs, 2, err_), "deref");
    int32_t *got = download(di, 0, 5 * 4);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(got[i], vals[(i * 2) % 3], "deref at %zu", i);
    free(got);
    fdl_map_destroy(m);
    free(x);
    done(&f);
}

Test(gpu_gen_map, statuses_are_reported_by_the_lowest_failing_index)
{
    fdl_device *dev = open_or_skip();
    fixture f = make(dev, status_decl, status_code, NULL);
    size_t n = 100003;
    float *x = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 100);
    x[99001] = -1.0f;
    x[77] = -2.0f;
    x[5000] = -3.0f;
    fdl_buffer *dx = upload(dev, x, n * 4), *dout = buffer(dev, n * 4);
    fdl_map *m = NULL;
    OK(fdl_map_create(&m, f.gen, "twice_pos", NULL, err_), "twice_pos");
    fdl_gen_arg args[] = {fdl_gen_buffer(dout), fdl_gen_buffer(dx)};
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_map_run(m, n, args, 2, &err), FDL_EDEVICE, "%s", err.message);
    cr_assert_str_eq(err.message, "device function twice_pos returned status 7 at index 77 in "
                                  "map 'twice_pos' (first of 3 failures)");
    cr_assert_str_eq(err.symbol, "twice_pos");
    cr_assert_eq(err.backend_code, 7);
    cr_assert_eq(err.fields, FDL_ERROR_HAS_INDEX | FDL_ERROR_HAS_COUNT);
    cr_assert_eq(err.index, 77);
    cr_assert_eq(err.count, 3);
    float *out = download(dout, 0, n * 4);
    for (size_t i = 0; i < n; i++) {
        float want = x[i] < 0 ? 0.0f : 2.0f * x[i];
        cr_assert_eq(out[i], want, "out[%zu] = %g, want %g", i, out[i], want);
    }
    free(out);
    /* the records were read and cleared: the module's FDL_CALL record too */
    OK(fdl_device_synchronize(dev, err_), "synchronize after the check");
    x[77] = x[5000] = x[99001] = 1.0f;
    OK(fdl_buffer_write(dx, 0, x, n * 4, err_), "write");
    OK(fdl_map_run(m, n, args, 2, err_), "a clean run after a failed one");
    /* one failure: no count */
    x[n - 1] = -5.0f;
    OK(fdl_buffer_write(dx, 0, x, n * 4, err_), "write");
    cr_assert_eq(fdl_map_run(m, n, args, 2, &err), FDL_EDEVICE);
    cr_assert_str_eq(err.message, "device function twice_pos returned status 7 at index 100002 "
                                  "in map 'twice_pos'");
    cr_assert_eq(err.index, 100002);
    cr_assert_eq(err.count, 1);
    /* an elementwise kernel calling it through FDL_MAP_CALL */
    fdl_map *ew = NULL;
    OK(fdl_elementwise_create(&ew, f.gen, "const float *x, float *y",
                              "float r; if (FDL_MAP_CALL(twice_pos, &r, x[i]) == 0) y[i] = r",
                              err_), "elementwise");
    fdl_gen_arg eargs[] = {fdl_gen_buffer(dx), fdl_gen_buffer(dout)};
    cr_assert_eq(fdl_map_run(ew, n, eargs, 2, &err), FDL_EDEVICE);
    cr_assert(starts_with(err.message, "device function twice_pos returned status 7 at index "
                                       "100002 in elementwise kernel"), "%s", err.message);
    cr_assert_eq(err.index, 100002);
    fdl_map_destroy(ew);
    fdl_map_destroy(m);
    free(x);
    done(&f);
}

/* ---- expressions ------------------------------------------------------------------------------ */

Test(gpu_gen_elementwise, scale_in_place_and_axpy)
{
    fdl_device *dev = open_or_skip();
    fixture f = make(dev, "", NULL, NULL);
    size_t n = 1000037;
    float *a = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++) {
        a[i] = (float)(i % 1024) - 512.0f;
        y[i] = (float)(i % 3);
    }
    fdl_buffer *da = upload(dev, a, n * 4), *dy = upload(dev, y, n * 4);
    /* a_gpu *= 2 */
    fdl_map *scale = NULL;
    OK(fdl_elementwise_create(&scale, f.gen, "float *a", "a[i] *= 2", err_), "a *= 2");
    fdl_gen_arg sargs[] = {fdl_gen_buffer(da)};
    OK(fdl_map_run(scale, n, sargs, 1, err_), "a *= 2");
    float *got = download(da, 0, n * 4);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], 2.0f * a[i], "a[%zu]", i);
    free(got);
    /* y = alpha x + y, PyCUDA's example */
    fdl_map *axpy = NULL;
    OK(fdl_elementwise_create(&axpy, f.gen, "float alpha, const float *x, float *y",
                              "y[i] = alpha * x[i] + y[i]", err_), "axpy");
    float alpha = 0.5f;
    fdl_gen_arg xargs[] = {FDL_GEN_VALUE(alpha), fdl_gen_buffer(da), fdl_gen_buffer(dy)};
    OK(fdl_map_run(axpy, n, xargs, 3, err_), "axpy");
    got = download(dy, 0, n * 4);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(got[i], 0.5f * (2.0f * a[i]) + y[i], "y[%zu]", i);
    free(got);
    /* the same source again: found, not compiled */
    size_t compiled = fdl_gen_compiled_count(f.gen);
    fdl_map *again = NULL;
    OK(fdl_elementwise_create(&again, f.gen, "float *a", "a[i] *= 2", err_), "again");
    cr_assert_eq(fdl_gen_compiled_count(f.gen), compiled);
    OK(fdl_map_run(again, 0, sargs, 1, err_), "n = 0");
    fdl_map_destroy(again);
    fdl_map_destroy(scale);
    fdl_map_destroy(axpy);
    free(a);
    free(y);
    done(&f);
}

/* ---- reductions --------------------------------------------------------------------------------- */

static fdl_reduction *reduction(fixture *f, const char *type, const char *args, const char *map,
                                const char *reduce, const char *neutral)
{
    fdl_reduction_spec s = FDL_REDUCTION_SPEC_INIT;
    s.type = type;
    s.arguments = args;
    s.map = map;
    s.reduce = reduce;
    s.neutral = neutral;
    fdl_reduction *r = NULL;
    OK(fdl_reduction_create(&r, f->gen, &s, err_), reduce);
    return r;
}

Test(gpu_gen_reduction, edge_sizes_sum_min_max_product_and_custom, .timeout = 600)
{
    fdl_device *dev = open_or_skip();
    fixture f = make(dev, "", NULL, NULL);
    size_t most = 16777259; /* a prime past 2^24 */
    int32_t *x = malloc(most * 4);
    for (size_t i = 0; i < most; i++)
        x[i] = (int32_t)(i % 7) - 3 + (i % 1000 == 999 ? (int32_t)(i % 5000) : 0);
    fdl_buffer *dx = upload(dev, x, most * 4);
    float *xf = malloc(most * 4);
    for (size_t i = 0; i < most; i++)
        xf[i] = (float)((int)(i % 7) - 3);
    fdl_buffer *dxf = upload(dev, xf, most * 4);
    fdl_reduction *sum = reduction(&f, "int64", "const int *x", "x[i]", "sum", NULL);
    fdl_reduction *mn = reduction(&f, "int32", "const int *x", "x[i]", "min", NULL);
    fdl_reduction *mx = reduction(&f, "int32", "const int *x", "x[i]", "max", NULL);
    fdl_reduction *cmax = reduction(&f, "int32", "const int *x", "x[i]", "a > b ? a : b",
                                    "-2147483647 - 1");
    fdl_reduction *fsum = reduction(&f, "float32", "const float *x", "x[i]", "sum", NULL);
    fdl_reduction *prod = reduction(&f, "int64", "const int *x",
                                    "(long long)(x[i] == 3 && i % 8 == 3 ? -1 : 1) * "
                                    "(i == 5 || i == 1000001 ? 2 : 1)", "product", NULL);
    static const size_t sizes[] = {0, 1, 2, 3, 7, 13, 255, 256, 257, 1021, 65537, 1000003,
                                   16777259};
    for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
        size_t n = sizes[j];
        long long want_sum = 0, want_prod = 1;
        int want_min = INT32_MAX, want_max = INT32_MIN;
        float want_fsum = 0;
        for (size_t i = 0; i < n; i++) {
            want_sum += x[i];
            want_min = x[i] < want_min ? x[i] : want_min;
            want_max = x[i] > want_max ? x[i] : want_max;
            want_fsum += xf[i]; /* small integers: exact in any order */
            want_prod *= (long long)(x[i] == 3 && i % 8 == 3 ? -1 : 1) * (i == 5 || i == 1000001 ? 2 : 1);
        }
        fdl_gen_arg args[] = {fdl_gen_array(fdl_buffer_address(dx), n * 4)};
        fdl_gen_arg fargs[] = {fdl_gen_array(fdl_buffer_address(dxf), n * 4)};
        long long s64 = -1, p64 = -1;
        int32_t lo = 0, hi = 0, chi = 0;
        float fs = -1;
        OK(fdl_reduction_run(sum, &s64, 8, n, args, 1, err_), "sum");
        OK(fdl_reduction_run(mn, &lo, 4, n, args, 1, err_), "min");
        OK(fdl_reduction_run(mx, &hi, 4, n, args, 1, err_), "max");
        OK(fdl_reduction_run(cmax, &chi, 4, n, args, 1, err_), "custom max");
        OK(fdl_reduction_run(fsum, &fs, 4, n, fargs, 1, err_), "float sum");
        OK(fdl_reduction_run(prod, &p64, 8, n, args, 1, err_), "product");
        cr_assert_eq(s64, want_sum, "sum, n = %zu: %lld, want %lld", n, s64, want_sum);
        cr_assert_eq(lo, want_min, "min, n = %zu: %d, want %d", n, lo, want_min);
        cr_assert_eq(hi, want_max, "max, n = %zu: %d, want %d", n, hi, want_max);
        cr_assert_eq(chi, want_max, "custom max, n = %zu", n);
        cr_assert_eq(fs, want_fsum, "float sum, n = %zu: %g, want %g", n, fs, want_fsum);
        cr_assert_eq(p64, want_prod, "product, n = %zu: %lld, want %lld", n, p64, want_prod);
        /* from element 1: not aligned for vector accesses, the element-by-element path */
        if (n + 1 <= most) {
            /* x[1] .. x[n]: the sum of 0 elements is 0 */
            long long want_shift = n ? want_sum - x[0] + (long long)x[n] : 0;
            fdl_gen_arg shifted[] = {fdl_gen_array(fdl_buffer_address(dx) + 4, n * 4)};
            OK(fdl_reduction_run(sum, &s64, 8, n, shifted, 1, err_), "sum from element 1");
            cr_assert_eq(s64, want_shift, "sum from element 1, n = %zu: %lld, want %lld", n, s64,
                         want_shift);
        }
    }
    fdl_reduction_destroy(sum);
    fdl_reduction_destroy(mn);
    fdl_reduction_destroy(mx);
    fdl_reduction_destroy(cmax);
    fdl_reduction_destroy(fsum);
    fdl_reduction_destroy(prod);
    free(x);
    free(xf);
    done(&f);
}

/*
 * Work chained on one stream with no host wait between: an expression, a reduction, its result
 * copied into device memory, and an expression that reads it; the stream is a wrapped one, as
 * another library's would be.
 */
Test(gpu_gen_reduction, launches_and_results_chain_on_a_stream)
{
    fdl_device *dev = open_or_skip();
    fixture f = make(dev, "", NULL, NULL);
    size_t n = 1000003;
    int32_t *x = malloc(n * 4);
    long long want = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = (int32_t)(i % 11) - 5;
        want += x[i] + 1;
    }
    /* the result lands in element 0 of r; the expression over 16 indices takes 16 of each */
    fdl_buffer *dx = upload(dev, x, n * 4), *dres = buffer(dev, 16 * 8), *dy = buffer(dev, 16 * 8);
    OK(fdl_buffer_zero(dres, err_), "zero");
    fdl_stream *own = NULL, *s = NULL;
    OK(fdl_stream_create(&own, dev, err_), "fdl_stream_create");
    OK(fdl_stream_wrap(&s, dev, fdl_stream_handle(own), err_), "fdl_stream_wrap");
    fdl_map *inc = NULL, *use = NULL;
    OK(fdl_elementwise_create(&inc, f.gen, "int *x", "x[i] += 1", err_), "x += 1");
    OK(fdl_elementwise_create(&use, f.gen, "const long long *r, long long *y",
                              "y[i] = r[0] * 2 + (long long)i", err_), "y = 2 r + i");
    fdl_reduction *sum = reduction(&f, "int64", "const int *x", "x[i]", "sum", NULL);
    fdl_gen_arg xa[] = {fdl_gen_buffer(dx)};
    fdl_gen_arg ya[] = {fdl_gen_buffer(dres), fdl_gen_buffer(dy)};
    OK(fdl_map_launch_async(inc, n, xa, 1, s, err_), "x += 1 on the stream");
    OK(fdl_reduction_launch_async(sum, n, xa, 1, s, err_), "sum on the stream");
    OK(fdl_reduction_result_async(sum, fdl_buffer_address(dres), 8, s, err_), "result");
    OK(fdl_map_launch_async(use, 16, ya, 2, s, err_), "y = 2 r + i on the stream");
    OK(fdl_stream_synchronize(s, err_), "fdl_stream_synchronize");
    long long *y = download(dy, 0, 16 * 8), *r = download(dres, 0, 8);
    cr_assert_eq(r[0], want, "sum %lld, want %lld", r[0], want);
    for (size_t i = 0; i < 16; i++)
        cr_assert_eq(y[i], 2 * want + (long long)i, "y[%zu] = %lld", i, y[i]);
    OK(fdl_reduction_check(sum, err_), "fdl_reduction_check");
    OK(fdl_map_check(use, err_), "fdl_map_check");
    /* the synchronous result agrees with the asynchronous one */
    long long again = 0;
    OK(fdl_reduction_result(sum, &again, 8, err_), "fdl_reduction_result");
    cr_assert_eq(again, want);
    /* the default stream too (NULL), and a refused request leaves nothing queued */
    OK(fdl_reduction_launch_async(sum, 0, xa, 1, NULL, err_), "n = 0 on the default stream");
    OK(fdl_reduction_result_async(sum, fdl_buffer_address(dres), 8, NULL, err_), "result");
    fdl_error e = FDL_ERROR_INIT;
    cr_assert_eq(fdl_reduction_result_async(sum, 0, 8, s, &e), FDL_EINVAL);
    cr_assert_str_eq(e.message, "reduction 'sum of x[i]': the result's device address is NULL");
    OK(fdl_device_synchronize(dev, err_), "fdl_device_synchronize");
    free(r);
    r = download(dres, 0, 8);
    cr_assert_eq(r[0], 0, "the sum of nothing is %lld", r[0]);
    free(r);
    free(y);
    fdl_map_destroy(inc);
    fdl_map_destroy(use);
    fdl_reduction_destroy(sum);
    fdl_stream_destroy(s);
    fdl_stream_destroy(own);
    free(x);
    done(&f);
}

Test(gpu_gen_reduction, float_sums_are_accurate_and_the_same_every_run)
{
    fdl_device *dev = open_or_skip();
    fixture f = make(dev, "", NULL, NULL);
    size_t n = (1u << 24) + 17;
    float *x = malloc(n * 4);
    uint32_t state = 12345;
    double ref = 0;
    for (size_t i = 0; i < n; i++) {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        x[i] = (float)(state >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
        ref += x[i];
    }
    fdl_buffer *dx = upload(dev, x, n * 4);
    fdl_reduction *sum = reduction(&f, "float", "const float *x", "x[i]", "sum", NULL);
    fdl_gen_arg args[] = {fdl_gen_buffer(dx)};
    float first = 0, again = 0;
    OK(fdl_reduction_run(sum, &first, 4, n, args, 1, err_), "sum");
    for (int k = 0; k < 5; k++) {
        OK(fdl_reduction_run(sum, &again, 4, n, args, 1, err_), "sum again");
        cr_assert_eq(memcmp(&first, &again, 4), 0, "run %d: %.9g, then %.9g", k, first, again);
    }
    /* a pairwise-like order: far better than a running float sum (error ~ n * eps) */
    cr_assert(fabs(first - ref) < 1e-3 * sqrt((double)n), "%.9g against %.9g", first, ref);
    fdl_reduction_destroy(sum);
    free(x);
    done(&f);
}

Test(gpu_gen_reduction, past_two_to_the_31, .timeout = 900)
{
    fdl_device *dev = open_or_skip();
    /* after a CUDA call: compute-sanitizer fails a process that ends before its first one */
    if (under_sanitizer()) {
        fdl_device_destroy(dev);
        cr_skip_test("under compute-sanitizer: 2^31 elements take too long there");
    }
    size_t n = (1ull << 31) + 13;
    /* 2 GiB of bytes in and out, and 8.6 GB of floats */
    if (fdl_device_total_memory(dev) < n * 4 + n * 2 + (1ull << 30)) {
        fdl_device_destroy(dev);
        cr_skip_test("the device has too little memory for 2^31 + 13 elements");
    }
    char decl[4096], code[8192];
    every_type_sources(decl, sizeof decl, code, sizeof code);
    fixture f = make(dev, decl, code, NULL);
    fdl_buffer *bytes = buffer(dev, n), *bytes3 = buffer(dev, n), *floats = buffer(dev, n * 4);
    fdl_map *fill = NULL, *ffill = NULL, *add = NULL;
    OK(fdl_elementwise_create(&fill, f.gen, "unsigned char *x", "x[i] = (unsigned char)(i % 251)",
                              err_), "fill");
    OK(fdl_elementwise_create(&ffill, f.gen, "float *x", "x[i] = (float)(i % 3)", err_),
       "float fill");
    OK(fdl_map_create(&add, f.gen, "add_uint8", "as", err_), "add_uint8");
    fdl_gen_arg fa[] = {fdl_gen_buffer(bytes)}, ffa[] = {fdl_gen_buffer(floats)};
    OK(fdl_map_run(fill, n, fa, 1, err_), "fill");
    OK(fdl_map_run(ffill, n, ffa, 1, err_), "float fill");
    uint8_t three = 3;
    fdl_gen_arg aa[] = {fdl_gen_buffer(bytes3), fdl_gen_buffer(bytes), FDL_GEN_VALUE(three)};
    OK(fdl_map_run(add, n, aa, 3, err_), "add_uint8 over 2^31 + 13");
    fdl_reduction *sum = reduction(&f, "uint64", "const unsigned char *x",
                                   "(unsigned long long)x[i]", "sum", NULL);
    fdl_reduction *mx = reduction(&f, "uint8", "const unsigned char *x", "x[i]", "max", NULL);
    fdl_reduction *dsum = reduction(&f, "float64", "const float *x", "(double)x[i]", "sum", NULL);
    unsigned long long s = 0, s3 = 0;
    uint8_t top = 0;
    double d = 0;
    OK(fdl_reduction_run(sum, &s, 8, n, fa, 1, err_), "sum");
    fdl_gen_arg a3[] = {fdl_gen_buffer(bytes3)};
    OK(fdl_reduction_run(sum, &s3, 8, n, a3, 1, err_), "sum + 3");
    OK(fdl_reduction_run(mx, &top, 1, n, fa, 1, err_), "max");
    OK(fdl_reduction_run(dsum, &d, 8, n, ffa, 1, err_), "double sum of floats");
    unsigned long long full = n / 251, rem = n % 251;
    unsigned long long want = full * (250ull * 251 / 2) + rem * (rem - 1) / 2;
    cr_assert_eq(s, want, "sum of 2^31 + 13 bytes: %llu, want %llu", s, want);
    cr_assert_eq(s3, want + 3ull * n, "sum after the map: %llu, want %llu", s3, want + 3ull * n);
    cr_assert_eq(top, 250);
    unsigned long long f3 = n / 3, r3 = n % 3;
    double want_d = (double)(f3 * 3 + r3 * (r3 - 1) / 2);
    cr_assert_eq(d, want_d, "double sum: %.17g, want %.17g", d, want_d);
    /* the last elements, past 2^31 */
    uint8_t *tail = download(bytes3, n - 16, 16);
    for (size_t i = 0; i < 16; i++)
        cr_assert_eq(tail[i], (uint8_t)((n - 16 + i) % 251 + 3), "element %zu", n - 16 + i);
    free(tail);
    fdl_reduction_destroy(sum);
    fdl_reduction_destroy(mx);
    fdl_reduction_destroy(dsum);
    fdl_map_destroy(fill);
    fdl_map_destroy(ffill);
    fdl_map_destroy(add);
    done(&f);
}
