/*
 * link/src/libs: the libraries fdlink opens at run time for links, as the folders above use them:
 * the fatbin payload decompressors (decompress.c: liblz4, libzstd), NVRTC (nvrtc.c) and the
 * toolkit's places, the driver's cuLink (culink.c). nvJitLink's entry points are nvjl.h's,
 * the version memos libmemo.h's, doctor's probes probe.h's. Not installed.
 */
#ifndef FDLINK_LIBS_H
#define FDLINK_LIBS_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/link.h"

/* Largest decompressed fatbin entry accepted (a header cannot make us allocate more). */
#define FDL__MAX_IMAGE ((uint64_t)1 << 30)

/* Compression of a fatbin entry's payload (flags of the entry header). */
#define FDL__FATBIN_FLAG_LZ4 0x2000u
#define FDL__FATBIN_FLAG_ZSTD 0x8000u

/* ---- decompression --------------------------------------------------------------------------- */

/*
 * The readable form of the C++ name @p name ("_Z...") into @p out (@p cap bytes, truncated):
 * __cxa_demangle of libstdc++ or libc++abi, opened once with dlopen (FDLINK_LIBCXXABI names
 * another). 1 when demangled; 0 (out "") when the name is not mangled, does not demangle, or no
 * C++ runtime is here. Thread-safety: any thread.
 */
int fdl__demangle(const char *name, char *out, size_t cap);

/*
 * Decompress a fatbin payload (LZ4 block format through liblz4.so.1, or zstd through
 * libzstd.so.1, each loaded on first use; FDLINK_LIBLZ4 and FDLINK_LIBZSTD name other paths)
 * into exactly @p out_size bytes.
 * @return FDL_OK, FDL_EPARSE (corrupt data or a size that disagrees), FDL_ENOLIB (no liblz4 or
 *         libzstd), FDL_ENOMEM. *out is malloc'ed, the caller's.
 */
int fdl__decompress(unsigned char **out, size_t out_size, const unsigned char *in, size_t in_size,
                    unsigned flags, fdl_error *err);

/* ---- libNVVM -------------------------------------------------------------------------------- */

/* Whether @p p (@p n bytes) is LLVM bitcode: 'BC' 0xC0DE, or the wrapper 0x0B17C0DE. */
int fdl__is_bitcode(const unsigned char *p, size_t n);

/*
 * Compile NVVM bitcode @p bc (@p n bytes, input @p name) for @p arch ("compute_90") with
 * libNVVM, opened once at run time (FDLINK_NVVM names another): into LTO-IR (-gen-lto) with
 * @p ltoir, else PTX. *out (malloc'ed, the caller's; NUL after *out_size bytes) and *log
 * (libNVVM's log or NULL, the caller's) on return, whatever the outcome.
 * @return FDL_OK, FDL_ENOLIB (no libNVVM), FDL_EPARSE (libNVVM refused it: its first log line),
 *         FDL_ENOMEM. Thread-safety: any thread.
 */
int fdl__nvvm_compile(unsigned char **out, size_t *out_size, char **log, const unsigned char *bc,
                      size_t n, const char *name, const char *arch, int ltoir, fdl_error *err);

/*
 * libNVVM's version (nvvmVersion) from its memo in @p dir (libmemo.h), without loading it; only
 * while this process has not loaded it. @return 1 when the memo holds, else 0 (ask
 * fdl__nvvm_remember)
 */
int fdl__nvvm_quick_version(const char *dir, int *major, int *minor);

/*
 * libNVVM's version, loading it if needed, memoed in @p dir.
 * @return FDL_OK, FDL_ENOLIB (no libNVVM, or one that does not say its version)
 */
int fdl__nvvm_remember(const char *dir, int *major, int *minor);

/* ---- NVRTC ----------------------------------------------------------------------------------- */

/* One header handed to NVRTC in memory. */
typedef struct fdl__nvrtc_header {
    const char *name;
    const char *text;
} fdl__nvrtc_header;

/*
 * Compile CUDA C with NVRTC: @p options as given (NULL-terminated), @p headers in memory.
 * On success *out (malloc'ed, NUL-terminated after *out_size bytes) holds PTX or, with @p ltoir,
 * LTO-IR; *log (malloc'ed, may be NULL) the compiler's log either way.
 * @return FDL_OK, FDL_EPARSE (compile error: err->source @p name, err->line, the first error's
 *         text), FDL_EINVAL (NVRTC refused an option), FDL_ENOLIB, FDL_ENOMEM
 */
int fdl__nvrtc_compile(unsigned char **out, size_t *out_size, char **log, const char *source,
                       size_t size, const char *name, const char *const *options,
                       const fdl__nvrtc_header *headers, size_t nheaders, int ltoir,
                       fdl_error *err);

/* NVRTC's version, loading it if needed. @return FDL_OK, FDL_ENOLIB */
int fdl__nvrtc_version(int *major, int *minor, fdl_error *err);

/*
 * NVRTC's version from its memo in @p dir (libmemo.h), without loading it; only while this
 * process has not loaded it. @return 1 when the memo holds, else 0 (ask fdl__nvrtc_remember)
 */
int fdl__nvrtc_quick_version(const char *dir, int *major, int *minor);

/* NVRTC's version, loading it if needed, memoed in @p dir. @return FDL_OK, FDL_ENOLIB */
int fdl__nvrtc_remember(const char *dir, int *major, int *minor);

/*
 * The places a CUDA toolkit may be, in order: $FDLINK_CUDA_ROOT, $CUDA_PATH, the toolkit fdlink
 * was built with, /usr/local/cuda (empty and repeated ones left out). @return how many
 * (at most @p max); the strings are static or the environment's.
 */
size_t fdl__cuda_roots(const char **roots, size_t max);

/* "<root>/<rel>" of the first root where that file exists; 0 when none. */
int fdl__cuda_find(char *out, size_t size, const char *rel);

#define FDL__CUDA_PATH_MAX 1024
#define FDL__CUDA_INCLUDE_MAX 8
/*
 * The toolkit's include folders as nvcc searches them after the user's -I: the INCLUDES (-I)
 * then the SYSTEM_INCLUDES (-isystem) of <root>/bin/nvcc.profile, variables expanded as nvcc does
 * ($(TOP), $(_TARGET_DIR_), ...), of the first root with include/cuda.h; without a profile,
 * <root>/include alone. Only folders that exist, each once, "x/.." collapsed; into @p dirs (at
 * most @p max). @p from (may be of size 0) gets the profile's path, or "" when none was read.
 * @return how many. Thread-safety: reads the environment and files only.
 */
size_t fdl__cuda_include_dirs(char (*dirs)[FDL__CUDA_PATH_MAX], size_t max, char *from,
                              size_t from_size);

/* ---- the driver (cuLink) --------------------------------------------------------------------- */

/* Opaque driver handles, as in cuda.h. */
typedef struct fdl__culink_state fdl__culink_state;

/*
 * The compute capability (major * 10 + minor) of the calling thread's current context's device.
 * @return FDL_OK, FDL_ENOLIB (no driver), FDL_ENODEVICE (no current context), FDL_ECUDA
 */
int fdl__cu_current_cc(int *cc, fdl_error *err);

/* FDL_OK when the calling thread has a current context, else FDL_EINVAL with the culink message. */
int fdl__cu_require_context(fdl_error *err);

/* Load the driver's cuLink entry points. @return FDL_OK, FDL_ENOLIB */
int fdl__cu_load(fdl_error *err);

/* cuLink input types, as CUjitInputType. */
enum {
    FDL__CU_INPUT_CUBIN = 0,
    FDL__CU_INPUT_PTX = 1,
    FDL__CU_INPUT_FATBIN = 2,
    FDL__CU_INPUT_OBJECT = 3,
    FDL__CU_INPUT_LIBRARY = 4
};

/* Options of a cuLink state, turned into CUjit_option arrays by fdl__culink_create. */
typedef struct fdl__culink_options {
    unsigned target;   /* CUjit_target: the arch number, + 0x10000 for 'a', + 0x20000 for 'f' */
    int opt_level;     /* -1: default */
    int debug;
    int lineinfo;
    int verbose;
    int maxrregcount;  /* 0: none */
} fdl__culink_options;

/*
 * A cuLink state whose option arrays and log buffers live in it until fdl__culink_destroy
 * (after cuLinkDestroy).
 */
int fdl__culink_create(fdl__culink_state **out, const fdl__culink_options *opts, fdl_error *err);
int fdl__culink_add(fdl__culink_state *st, int type, const void *data, size_t size,
                    const char *name, int *cu_result);
/* Complete; the cubin is copied into *cubin (malloc'ed) before anything can free it. */
int fdl__culink_complete(fdl__culink_state *st, unsigned char **cubin, size_t *size,
                         int *cu_result);
const char *fdl__culink_info_log(const fdl__culink_state *st);
const char *fdl__culink_error_log(const fdl__culink_state *st);
void fdl__culink_destroy(fdl__culink_state *st);
/* Name of a CUresult ("CUDA_ERROR_INVALID_PTX"), or "CUDA_ERROR_<n>". */
const char *fdl__cu_result_name(int result, char *buf, size_t size);

#endif /* FDLINK_LIBS_H */
