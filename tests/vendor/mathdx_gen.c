/*
 * libmathdx's generated device functions for the vendor tests (issue 34): a cuSolverDx Cholesky
 * factorisation (POTRF) with cuSolverDx's universal fatbin, and a cuFFTDx complex FFT, both as
 * LTO-IR, generated through libmathdx's C API as its own samples do (a descriptor, its operators,
 * commondxFinalizeCode, the LTO-IR and the traits). libmathdx is opened at run time (dlopen),
 * from the path given, as fdlink opens every CUDA library.
 *
 *   mathdx_gen LIBMATHDX OUTDIR SM
 *
 * writes OUTDIR/potrf.ltoir, OUTDIR/cusolverdx.fatbin, OUTDIR/fft.ltoir and OUTDIR/traits.sh (the
 * traits a caller needs, as shell assignments: symbol names, block sizes, shared memory, the FFT's
 * elements per thread and stride). Exit 77 where libmathdx cannot be opened (ctest: skipped),
 * 1 on any other failure, with libmathdx's own message.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libmathdx 0.4's C API (libcommondx.h, libcusolverdx.h, libcufftdx.h): handles are long long,
 * every call returns a status, 0 success; the enum values used below are the headers'. */
typedef long long mdx_handle;
typedef int (*create_fn)(mdx_handle *);
typedef int (*destroy_fn)(mdx_handle);
typedef int (*set_i64_fn)(mdx_handle, int, long long);
typedef int (*set_i64s_fn)(mdx_handle, int, size_t, const long long *);
typedef int (*set_str_fn)(mdx_handle, int, const char *);
typedef int (*finalize_fn)(mdx_handle code, mdx_handle desc);
typedef int (*size_fn)(mdx_handle, size_t *);
typedef int (*get_fn)(mdx_handle, size_t, void *);
typedef int (*trait_i64_fn)(mdx_handle, int, long long *);
typedef int (*trait_i64s_fn)(mdx_handle, int, size_t, long long *);
typedef int (*trait_str_size_fn)(mdx_handle, int, size_t *);
typedef int (*trait_str_fn)(mdx_handle, int, size_t, char *);
typedef int (*version_fn)(int *, int *, int *);
typedef int (*last_error_size_fn)(size_t *);
typedef int (*last_error_fn)(int *, size_t, char *);

enum {
    COMMONDX_OPTION_SYMBOL_NAME = 0,
    COMMONDX_OPTION_TARGET_SM = 1,
    COMMONDX_EXECUTION_BLOCK = 1,
    COMMONDX_PRECISION_F64 = 6,
    /* cuSolverDx */
    CUSOLVERDX_OPERATOR_SIZE = 0,
    CUSOLVERDX_OPERATOR_TYPE = 1,
    CUSOLVERDX_OPERATOR_PRECISION = 2,
    CUSOLVERDX_OPERATOR_SM = 3,
    CUSOLVERDX_OPERATOR_EXECUTION = 4,
    CUSOLVERDX_OPERATOR_BLOCK_DIM = 5,
    CUSOLVERDX_OPERATOR_API = 6,
    CUSOLVERDX_OPERATOR_FUNCTION = 7,
    CUSOLVERDX_OPERATOR_ARRANGEMENT = 8,
    CUSOLVERDX_OPERATOR_FILL_MODE = 9,
    CUSOLVERDX_TYPE_REAL = 0,
    CUSOLVERDX_API_SMEM = 0,
    CUSOLVERDX_FUNCTION_POTRF = 2,
    CUSOLVERDX_ARRANGEMENT_COL_MAJOR = 0,
    CUSOLVERDX_FILL_MODE_LOWER = 1,
    CUSOLVERDX_TRAIT_SYMBOL_NAME = 2,
    CUSOLVERDX_TRAIT_BLOCK_DIM = 3,
    /* cuFFTDx */
    CUFFTDX_OPERATOR_SIZE = 0,
    CUFFTDX_OPERATOR_DIRECTION = 1,
    CUFFTDX_OPERATOR_TYPE = 2,
    CUFFTDX_OPERATOR_PRECISION = 3,
    CUFFTDX_OPERATOR_SM = 4,
    CUFFTDX_OPERATOR_EXECUTION = 5,
    CUFFTDX_OPERATOR_FFTS_PER_BLOCK = 6,
    CUFFTDX_OPERATOR_ELEMENTS_PER_THREAD = 7,
    CUFFTDX_OPERATOR_API = 10,
    CUFFTDX_API_LMEM = 0,
    CUFFTDX_TYPE_C2C = 0,
    CUFFTDX_DIRECTION_FORWARD = 0,
    CUFFTDX_TRAIT_ELEMENTS_PER_THREAD = 4,
    CUFFTDX_TRAIT_STORAGE_SIZE = 5,
    CUFFTDX_TRAIT_STRIDE = 6,
    CUFFTDX_TRAIT_BLOCK_DIM = 7,
    CUFFTDX_TRAIT_SHARED_MEMORY_SIZE = 8,
    CUFFTDX_TRAIT_SYMBOL_NAME = 10,
};

/* the problems: a 32x32 double Cholesky factorisation on 64 threads; a 64-point double complex
 * forward FFT, 8 elements per thread, one FFT per block */
#define POTRF_N 32
#define POTRF_THREADS 64
#define FFT_N 64
#define FFT_EPT 8

static void *lib;

/* a function of libmathdx, as a generic function pointer (cast to its type by the caller);
 * NULL, said once, where libmathdx lacks it */
typedef void (*any_fn)(void);
static any_fn sym(const char *name)
{
    void *p = dlsym(lib, name);
    any_fn f = NULL;
    if (!p)
        fprintf(stderr, "mathdx_gen: libmathdx lacks %s\n", name);
    else /* POSIX guarantees that a data pointer from dlsym can hold a function pointer */
        memcpy(&f, &p, sizeof f);
    return f;
}

/* one libmathdx call's status: 0 passes; otherwise its message, and the caller stops */
static int check(int status, const char *what)
{
    if (status == 0)
        return 0;
    char msg[1024] = "";
    last_error_size_fn esize = (last_error_size_fn)sym("commondxGetLastErrorStrSize");
    last_error_fn estr = (last_error_fn)sym("commondxGetLastErrorStr");
    size_t n = 0;
    int code = 0;
    if (esize && estr && esize(&n) == 0 && n > 0 && n <= sizeof msg)
        estr(&code, n, msg);
    fprintf(stderr, "mathdx_gen: %s failed (status %d)%s%s\n", what, status, msg[0] ? ": " : "",
            msg);
    return 1;
}

static int write_file(const char *dir, const char *name, const void *data, size_t size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "mathdx_gen: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* the code's LTO-IR, compiled for sm, written to dir/name */
static int finalize(finalize_fn fin, mdx_handle desc, long long sm, const char *dir,
                    const char *name)
{
    create_fn create = (create_fn)sym("commondxCreateCode");
    destroy_fn destroy = (destroy_fn)sym("commondxDestroyCode");
    set_i64_fn set = (set_i64_fn)sym("commondxSetCodeOptionInt64");
    size_fn lto_size = (size_fn)sym("commondxGetCodeLTOIRSize");
    get_fn lto = (get_fn)sym("commondxGetCodeLTOIR");
    if (!create || !destroy || !set || !lto_size || !lto)
        return 1;
    mdx_handle code = 0;
    size_t size = 0;
    void *bytes = NULL;
    int rc = 1;
    if (check(create(&code), "commondxCreateCode"))
        return 1;
    if (check(set(code, COMMONDX_OPTION_TARGET_SM, sm), "the code's target SM") ||
        check(fin(code, desc), "finalizing the code") ||
        check(lto_size(code, &size), "the LTO-IR's size"))
        goto cleanup;
    bytes = malloc(size ? size : 1);
    if (!bytes || check(lto(code, size, bytes), "the LTO-IR"))
        goto cleanup;
    rc = write_file(dir, name, bytes, size);
cleanup:
    free(bytes);
    destroy(code);
    return rc;
}

static int trait_str(trait_str_size_fn tsize, trait_str_fn tstr, mdx_handle desc, int trait,
                     char *out, size_t cap)
{
    size_t n = 0;
    if (check(tsize(desc, trait, &n), "a string trait's size"))
        return 1;
    if (n == 0 || n > cap) {
        fprintf(stderr, "mathdx_gen: a string trait of %zu bytes\n", n);
        return 1;
    }
    return check(tstr(desc, trait, n, out), "a string trait");
}

static int solver(const char *dir, long long sm, FILE *traits)
{
    create_fn create = (create_fn)sym("cusolverdxCreateDescriptor");
    destroy_fn destroy = (destroy_fn)sym("cusolverdxDestroyDescriptor");
    set_i64_fn op = (set_i64_fn)sym("cusolverdxSetOperatorInt64");
    set_i64s_fn ops = (set_i64s_fn)sym("cusolverdxSetOperatorInt64s");
    set_str_fn opt = (set_str_fn)sym("cusolverdxSetOptionStr");
    finalize_fn fin = (finalize_fn)sym("cusolverdxFinalizeCode");
    size_fn fb_size = (size_fn)sym("cusolverdxGetUniversalFATBINSize");
    get_fn fb = (get_fn)sym("cusolverdxGetUniversalFATBIN");
    trait_i64s_fn ti64s = (trait_i64s_fn)sym("cusolverdxGetTraitInt64s");
    trait_str_size_fn tsize = (trait_str_size_fn)sym("cusolverdxGetTraitStrSize");
    trait_str_fn tstr = (trait_str_fn)sym("cusolverdxGetTraitStr");
    version_fn version = (version_fn)sym("cusolverdxGetVersion");
    if (!create || !destroy || !op || !ops || !opt || !fin || !fb_size || !fb || !ti64s ||
        !tsize || !tstr || !version)
        return 1;
    mdx_handle h = 0;
    void *fatbin = NULL;
    int rc = 1;
    if (check(create(&h), "cusolverdxCreateDescriptor"))
        return 1;
    const long long size[1] = {POTRF_N};
    const long long block[3] = {POTRF_THREADS, 1, 1};
    if (check(ops(h, CUSOLVERDX_OPERATOR_SIZE, 1, size), "cuSolverDx size") ||
        check(ops(h, CUSOLVERDX_OPERATOR_BLOCK_DIM, 3, block), "cuSolverDx block dim") ||
        check(op(h, CUSOLVERDX_OPERATOR_TYPE, CUSOLVERDX_TYPE_REAL), "cuSolverDx type") ||
        check(op(h, CUSOLVERDX_OPERATOR_API, CUSOLVERDX_API_SMEM), "cuSolverDx API") ||
        check(op(h, CUSOLVERDX_OPERATOR_FUNCTION, CUSOLVERDX_FUNCTION_POTRF), "cuSolverDx POTRF") ||
        check(op(h, CUSOLVERDX_OPERATOR_EXECUTION, COMMONDX_EXECUTION_BLOCK), "cuSolverDx block") ||
        check(op(h, CUSOLVERDX_OPERATOR_PRECISION, COMMONDX_PRECISION_F64), "cuSolverDx f64") ||
        check(op(h, CUSOLVERDX_OPERATOR_ARRANGEMENT, CUSOLVERDX_ARRANGEMENT_COL_MAJOR),
              "cuSolverDx arrangement") ||
        check(op(h, CUSOLVERDX_OPERATOR_FILL_MODE, CUSOLVERDX_FILL_MODE_LOWER), "cuSolverDx fill") ||
        check(op(h, CUSOLVERDX_OPERATOR_SM, sm * 10), "cuSolverDx SM") ||
        check(opt(h, COMMONDX_OPTION_SYMBOL_NAME, "dx_potrf"), "cuSolverDx symbol name") ||
        finalize(fin, h, sm * 10, dir, "potrf.ltoir"))
        goto cleanup;
    size_t fsize = 0;
    if (check(fb_size(h, &fsize), "the universal fatbin's size"))
        goto cleanup;
    fatbin = malloc(fsize ? fsize : 1);
    if (!fatbin || check(fb(h, fsize, fatbin), "the universal fatbin") ||
        write_file(dir, "cusolverdx.fatbin", fatbin, fsize))
        goto cleanup;
    char name[256];
    long long dim[3] = {0, 0, 0};
    int major = 0, minor = 0, patch = 0;
    if (trait_str(tsize, tstr, h, CUSOLVERDX_TRAIT_SYMBOL_NAME, name, sizeof name) ||
        check(ti64s(h, CUSOLVERDX_TRAIT_BLOCK_DIM, 3, dim), "cuSolverDx block dim trait") ||
        check(version(&major, &minor, &patch), "cusolverdxGetVersion"))
        goto cleanup;
    fprintf(traits,
            "potrf_symbol=%s\npotrf_n=%d\npotrf_block=%lld\npotrf_shared=%d\n"
            "cusolverdx_version=%d.%d.%d\n",
            name, POTRF_N, dim[0] * dim[1] * dim[2], POTRF_N * POTRF_N * 8, major, minor, patch);
    rc = 0;
cleanup:
    free(fatbin);
    destroy(h);
    return rc;
}

static int fft(const char *dir, long long sm, FILE *traits)
{
    create_fn create = (create_fn)sym("cufftdxCreateDescriptor");
    destroy_fn destroy = (destroy_fn)sym("cufftdxDestroyDescriptor");
    set_i64_fn op = (set_i64_fn)sym("cufftdxSetOperatorInt64");
    set_str_fn opt = (set_str_fn)sym("cufftdxSetOptionStr");
    finalize_fn fin = (finalize_fn)sym("cufftdxFinalizeCode");
    trait_i64_fn ti64 = (trait_i64_fn)sym("cufftdxGetTraitInt64");
    trait_i64s_fn ti64s = (trait_i64s_fn)sym("cufftdxGetTraitInt64s");
    trait_str_size_fn tsize = (trait_str_size_fn)sym("cufftdxGetTraitStrSize");
    trait_str_fn tstr = (trait_str_fn)sym("cufftdxGetTraitStr");
    version_fn version = (version_fn)sym("cufftdxGetVersion");
    if (!create || !destroy || !op || !opt || !fin || !ti64 || !ti64s || !tsize || !tstr ||
        !version)
        return 1;
    mdx_handle h = 0;
    int rc = 1;
    if (check(create(&h), "cufftdxCreateDescriptor"))
        return 1;
    if (check(op(h, CUFFTDX_OPERATOR_API, CUFFTDX_API_LMEM), "cuFFTDx API") ||
        check(op(h, CUFFTDX_OPERATOR_EXECUTION, COMMONDX_EXECUTION_BLOCK), "cuFFTDx block") ||
        check(op(h, CUFFTDX_OPERATOR_SIZE, FFT_N), "cuFFTDx size") ||
        check(op(h, CUFFTDX_OPERATOR_TYPE, CUFFTDX_TYPE_C2C), "cuFFTDx C2C") ||
        check(op(h, CUFFTDX_OPERATOR_DIRECTION, CUFFTDX_DIRECTION_FORWARD), "cuFFTDx forward") ||
        check(op(h, CUFFTDX_OPERATOR_PRECISION, COMMONDX_PRECISION_F64), "cuFFTDx f64") ||
        check(op(h, CUFFTDX_OPERATOR_SM, sm * 10), "cuFFTDx SM") ||
        check(op(h, CUFFTDX_OPERATOR_ELEMENTS_PER_THREAD, FFT_EPT), "cuFFTDx elements/thread") ||
        check(op(h, CUFFTDX_OPERATOR_FFTS_PER_BLOCK, 1), "cuFFTDx FFTs per block") ||
        check(opt(h, COMMONDX_OPTION_SYMBOL_NAME, "dx_fft"), "cuFFTDx symbol name") ||
        finalize(fin, h, sm * 10, dir, "fft.ltoir"))
        goto cleanup;
    char name[256];
    long long dim[3] = {0, 0, 0}, shared = 0, storage = 0, stride = 0, ept = 0;
    int major = 0, minor = 0, patch = 0;
    if (trait_str(tsize, tstr, h, CUFFTDX_TRAIT_SYMBOL_NAME, name, sizeof name) ||
        check(ti64s(h, CUFFTDX_TRAIT_BLOCK_DIM, 3, dim), "cuFFTDx block dim trait") ||
        check(ti64(h, CUFFTDX_TRAIT_SHARED_MEMORY_SIZE, &shared), "cuFFTDx shared memory") ||
        check(ti64(h, CUFFTDX_TRAIT_STORAGE_SIZE, &storage), "cuFFTDx storage size") ||
        check(ti64(h, CUFFTDX_TRAIT_STRIDE, &stride), "cuFFTDx stride") ||
        check(ti64(h, CUFFTDX_TRAIT_ELEMENTS_PER_THREAD, &ept), "cuFFTDx elements per thread") ||
        check(version(&major, &minor, &patch), "cufftdxGetVersion"))
        goto cleanup;
    fprintf(traits,
            "fft_symbol=%s\nfft_n=%d\nfft_block=%lld,%lld,%lld\nfft_shared=%lld\n"
            "fft_storage=%lld\nfft_stride=%lld\nfft_ept=%lld\ncufftdx_version=%d.%d.%d\n",
            name, FFT_N, dim[0], dim[1], dim[2], shared, storage, stride, ept, major, minor, patch);
    rc = 0;
cleanup:
    destroy(h);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: mathdx_gen LIBMATHDX OUTDIR SM (e.g. 90)\n");
        return 2;
    }
    char *end = NULL;
    long long sm = strtoll(argv[3], &end, 10);
    if (!end || *end || sm < 50 || sm > 200) {
        fprintf(stderr, "mathdx_gen: %s is no SM number (e.g. 90)\n", argv[3]);
        return 2;
    }
    lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "SKIP: cannot open libmathdx: %s\n", dlerror());
        return 77;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/traits.sh", argv[2]);
    FILE *traits = fopen(path, "w");
    if (!traits) {
        fprintf(stderr, "mathdx_gen: cannot write %s\n", path);
        return 1;
    }
    int rc = solver(argv[2], sm, traits) || fft(argv[2], sm, traits);
    if (fclose(traits) != 0)
        rc = 1;
    /* libmathdx is left open: its own destructors run at exit */
    return rc;
}
