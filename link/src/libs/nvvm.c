/*
 * NVVM bitcode inputs (issue 34): LLVM bitcode for NVPTX, as the toolkit ships libdevice
 * (nvvm/libdevice/libdevice.10.bc) and NVSHMEM its libnvshmem_device_sm_XX.bc, compiled through
 * libNVVM, opened at run time like the other CUDA libraries, into LTO-IR (-gen-lto) that joins a
 * link with link-time optimisation, or into PTX without. nvJitLink takes neither bitcode itself.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "libmemo.h"
#include "libs.h"

#ifndef FDLINK_CUDA_ROOT
#  define FDLINK_CUDA_ROOT "/usr/local/cuda"
#endif

/* libNVVM's API (nvvm.h), declared here: only the types of what fdlink calls. */
typedef struct fdl__nvvm_prog *nvvm_program;
typedef struct nvvm_fn {
    int (*create)(nvvm_program *prog);
    int (*destroy)(nvvm_program *prog);
    int (*add_module)(nvvm_program prog, const char *buf, size_t size, const char *name);
    int (*compile)(nvvm_program prog, int nopts, const char **opts);
    int (*result_size)(nvvm_program prog, size_t *size);
    int (*result)(nvvm_program prog, char *buf);
    int (*log_size)(nvvm_program prog, size_t *size);
    int (*log)(nvvm_program prog, char *buf);
    const char *(*error_string)(int result);
    int (*version)(int *major, int *minor);
} nvvm_fn;

/* Global state: the entry points, filled once under pthread_once and read-only after. */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    nvvm_fn fn;
    int64_t load_start_ns; /* CLOCK_REALTIME when the load began (libmemo.h) */
    atomic_int tried;      /* the load has run (whatever its outcome) */
} g_nvvm = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {0}, 0, 0};

/* libNVVM lives in <toolkit>/nvvm/lib64 (some packagings put it in lib64 too) */
static const char *const nvvm_names[] = {
    "libnvvm.so.4", "libnvvm.so",
    sizeof FDLINK_CUDA_ROOT > 1 ? FDLINK_CUDA_ROOT "/nvvm/lib64/libnvvm.so.4" : NULL,
    sizeof FDLINK_CUDA_ROOT > 1 ? FDLINK_CUDA_ROOT "/lib64/libnvvm.so.4" : NULL,
    "/usr/local/cuda/nvvm/lib64/libnvvm.so.4", "/usr/local/cuda/lib64/libnvvm.so.4", NULL};

/* What this process knows of libNVVM's version without loading it (libmemo.h). */
static fdl__libmemo_mem g_nvvm_memo = FDL__LIBMEMO_MEM_INIT;
static const fdl__libspec nvvm_spec = {"libNVVM", "FDLINK_NVVM", nvvm_names, &g_nvvm_memo};

static void nvvm_load(void)
{
    static const fdl__symbol symbols[] = {
        {"nvvmCreateProgram", offsetof(nvvm_fn, create), 0},
        {"nvvmDestroyProgram", offsetof(nvvm_fn, destroy), 0},
        {"nvvmAddModuleToProgram", offsetof(nvvm_fn, add_module), 0},
        {"nvvmCompileProgram", offsetof(nvvm_fn, compile), 0},
        {"nvvmGetCompiledResultSize", offsetof(nvvm_fn, result_size), 0},
        {"nvvmGetCompiledResult", offsetof(nvvm_fn, result), 0},
        {"nvvmGetProgramLogSize", offsetof(nvvm_fn, log_size), 0},
        {"nvvmGetProgramLog", offsetof(nvvm_fn, log), 0},
        {"nvvmGetErrorString", offsetof(nvvm_fn, error_string), 0},
        {"nvvmVersion", offsetof(nvvm_fn, version), 1},
    };
    void *h = NULL;
    g_nvvm.load_start_ns = fdl__libmemo_now();
    g_nvvm.status = fdl__dlopen_table(&h, "FDLINK_NVVM", nvvm_names, "libNVVM",
                                      "to compile NVVM bitcode inputs (.bc)", symbols,
                                      sizeof symbols / sizeof symbols[0], &g_nvvm.fn,
                                      &g_nvvm.error);
    atomic_store(&g_nvvm.tried, 1);
}

int fdl__nvvm_quick_version(const char *dir, int *major, int *minor)
{
    *major = *minor = 0;
    unsigned a = 0, b = 0;
    unsigned char id[FDL__LIBMEMO_ID_SIZE];
    if (atomic_load(&g_nvvm.tried) || !fdl__libmemo_lookup(&nvvm_spec, dir, &a, &b, id) ||
        a > 100000u || b > 100000u)
        return 0;
    *major = (int)a;
    *minor = (int)b;
    return 1;
}

int fdl__nvvm_remember(const char *dir, int *major, int *minor)
{
    *major = *minor = 0;
    pthread_once(&g_nvvm.once, nvvm_load);
    if (g_nvvm.status != FDL_OK)
        return g_nvvm.status;
    /* without nvvmVersion there is no version to key a compile with: no caching */
    if (!g_nvvm.fn.version || g_nvvm.fn.version(major, minor) != 0 || *major < 0 || *minor < 0)
        return FDL_ENOLIB;
    void *sym = NULL; /* POSIX: a data pointer can hold a function's address */
    memcpy(&sym, &g_nvvm.fn.create, sizeof sym);
    fdl__libmemo_record(&nvvm_spec, dir, sym, g_nvvm.load_start_ns, (unsigned)*major,
                        (unsigned)*minor, NULL);
    return FDL_OK;
}

int fdl__is_bitcode(const unsigned char *p, size_t n)
{
    return n >= 4 && ((p[0] == 'B' && p[1] == 'C' && p[2] == 0xc0 && p[3] == 0xde) ||
                      (p[0] == 0xde && p[1] == 0xc0 && p[2] == 0x17 && p[3] == 0x0b));
}

int fdl__nvvm_compile(unsigned char **out, size_t *out_size, char **log, const unsigned char *bc,
                      size_t n, const char *name, const char *arch, int ltoir, fdl_error *err)
{
    *out = NULL;
    *out_size = 0;
    *log = NULL;
    pthread_once(&g_nvvm.once, nvvm_load);
    if (g_nvvm.status != FDL_OK) {
        if (err) {
            *err = g_nvvm.error;
            fdl__strlcpy(err->source, name, sizeof err->source);
        }
        return g_nvvm.status;
    }
    const nvvm_fn *fn = &g_nvvm.fn;
    nvvm_program prog = NULL;
    char archopt[48];
    const char *opts[2] = {archopt, "-gen-lto"};
    int rc = FDL_OK, r;
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    if ((r = fn->create(&prog)) != 0) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "nvvmCreateProgram failed: %s",
                        fn->error_string(r));
        goto cleanup;
    }
    if ((r = fn->add_module(prog, (const char *)bc, n, name)) != 0) {
        rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "libNVVM does not take it as a "
                        "module: %s", fn->error_string(r));
        goto cleanup;
    }
    int compiled = fn->compile(prog, ltoir ? 2 : 1, opts);
    size_t lsize = 0;
    if (fn->log_size(prog, &lsize) == 0 && lsize > 1) {
        *log = calloc(lsize + 1, 1);
        if (*log && fn->log(prog, *log) != 0)
            (*log)[0] = '\0';
    }
    if (compiled != 0) {
        /* the first line of libNVVM's log says what is wrong */
        char first[300] = "";
        if (*log) {
            size_t k = strcspn(*log, "\n");
            snprintf(first, sizeof first, ": %.*s", (int)(k < 280 ? k : 280), *log);
        }
        /* bitcode of a newer LLVM than libNVVM reads: "parse ... (Producer: 'LLVM22.1.8'
         * Reader: 'LLVM 7.0.1')". libNVVM 13.0 reads LLVM 7.0.1 for compute_75 to compute_90a
         * and LLVM 20 for compute_100 and later; NVSHMEM 3.8's .bc are LLVM 22's, made by clang
         * for LLVM-based compilers (Triton), and nothing in the toolkit takes them (nvJitLink
         * takes no bitcode; nvvmLazyAddModuleToProgram fails worse: libNVVM aborts the
         * process compiling such a module; no libNVVM option changes the reader): say what to
         * link instead */
        const char *producer = *log ? strstr(*log, "Producer: 'LLVM") : NULL;
        const char *reader = producer ? strstr(producer, "Reader: 'LLVM ") : NULL;
        if (producer && reader) {
            long major = strtol(producer + strlen("Producer: 'LLVM"), NULL, 10);
            const char *rv = reader + strlen("Reader: 'LLVM ");
            long reads = strtol(rv, NULL, 10);
            size_t rlen = strcspn(rv, "'\n");
            if (major > reads && reads > 0) {
                rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL,
                                "LLVM %d bitcode, newer than libNVVM reads for %s (LLVM %.*s), "
                                "and nvJitLink takes no bitcode: it is for LLVM-based compilers "
                                "such as Triton; link the library's static library (.a), cubins "
                                "or fatbin instead, or its LTO-IR (.ltoir) for link-time "
                                "optimisation", (int)major, arch, (int)(rlen < 16 ? rlen : 16),
                                rv);
                if (err)
                    err->backend_code = compiled;
                goto cleanup;
            }
        }
        rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "libNVVM cannot compile it for %s "
                        "(%s)%s", arch, fn->error_string(compiled), first);
        if (err)
            err->backend_code = compiled;
        goto cleanup;
    }
    size_t size = 0;
    if ((r = fn->result_size(prog, &size)) != 0 || size == 0) {
        rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "libNVVM produced nothing: %s",
                        r ? fn->error_string(r) : "empty output");
        goto cleanup;
    }
    unsigned char *buf = malloc(size + 1);
    if (!buf) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
        goto cleanup;
    }
    if ((r = fn->result(prog, (char *)buf)) != 0) {
        free(buf);
        rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "cannot fetch libNVVM's output: %s",
                        fn->error_string(r));
        goto cleanup;
    }
    buf[size] = '\0';
    if (!ltoir) /* PTX comes with its NUL */
        while (size && buf[size - 1] == '\0')
            size--;
    *out = buf;
    *out_size = size;
cleanup:
    if (prog)
        fn->destroy(&prog);
    return rc;
}
