/*
 * What `fdlink doctor` asks of the library (internal, not installed): where each library that
 * fdlink opens at run time was found and its version, where the toolkit is, and what fdlink was
 * built with. Each probe loads its library if needed (as a first use would) and never fails: the
 * outcome, and why a library is unusable, are in the result.
 *
 * Ownership: results are plain values in caller-owned structs; nothing is allocated.
 * Thread-safety: every probe is safe from any thread (the loads happen once, under pthread_once).
 */
#ifndef FDLINK_PROBE_H
#define FDLINK_PROBE_H

#include <stddef.h>

#include "fdlink/error.h"
#include "fdlink/link.h"
#include "internal.h"

#define FDL__PROBE_PATH_MAX 1024

/** A library opened at run time, as found. A plain value; Thread-safety: share freely. */
typedef struct fdl__lib_probe {
    int status;                     /**< FDL_OK when usable, else why not (error) */
    fdl_error error;                /**< the reason when status is not FDL_OK */
    char path[FDL__PROBE_PATH_MAX]; /**< the file loaded, "" when none or unknown */
    int major, minor;               /**< its version; -1 when it does not say */
} fdl__lib_probe;

/**
 * The CUDA toolkit found (FDLINK_CUDA_ROOT, CUDA_PATH, the build's, /usr/local/cuda): the first
 * of those folders with include/cuda.h. A plain value; Thread-safety: share freely.
 */
typedef struct fdl__toolkit_probe {
    char root[FDL__PROBE_PATH_MAX]; /**< "" when no toolkit was found */
    char nvcc[FDL__PROBE_PATH_MAX]; /**< <root>/bin/nvcc, "" when absent */
    int version;                    /**< CUDA_VERSION of <root>/include/cuda.h, 0 unknown */
    /** the folders NVRTC compiles search after the user's -I, in order (nvcc's: nvcc.profile) */
    char include[8][FDL__PROBE_PATH_MAX];
    size_t ninclude;
    char include_from[FDL__PROBE_PATH_MAX]; /**< the nvcc.profile read, "" when none */
} fdl__toolkit_probe;

/* fdl__library_of (where a loaded function lives) is internal.h's, with the loaders. */

/* nvJitLink (nvJitLinkVersion), NVRTC (nvrtcVersion), libzstd (ZSTD_versionNumber). */
void fdl__probe_nvjl(fdl__lib_probe *out);
void fdl__probe_nvrtc(fdl__lib_probe *out);
void fdl__probe_zstd(fdl__lib_probe *out);
/* libcudadevrt.a of the toolkit (its version is the toolkit's, from @p tk). */
void fdl__probe_cudadevrt(fdl__lib_probe *out, const fdl__toolkit_probe *tk);
void fdl__probe_toolkit(fdl__toolkit_probe *out);

/*
 * The newest PTX ISA that CUDA @p cuda_version (12040 for 12.4) knows: what its nvcc writes and
 * what a driver of that version can JIT, as major * 10 + minor (84 for ISA 8.4); 0 for a version
 * older than the table. Versions newer than the table get the newest known (a lower bound).
 */
int fdl__ptx_isa_of_cuda(int cuda_version);

/* CUDA_VERSION of the headers fdlink was built with (13000), and the toolkit root it knew. */
int fdl__build_cuda_version(void);
const char *fdl__build_cuda_root(void);

#endif /* FDLINK_PROBE_H */
