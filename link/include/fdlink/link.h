/**
 * @file fdlink/link.h
 * Linking device code into a cubin with nvJitLink, which is loaded at run time (dlopen) the first
 * time a link is created. No GPU and no driver are needed to link.
 *
 * Thread-safety: an fdl_link is used by one thread at a time and may move between threads;
 * distinct links may run concurrently.
 */
#ifndef FDLINK_LINK_H
#define FDLINK_LINK_H

#include <stddef.h>

#include "fdlink/abi.h"
#include "fdlink/decl.h"
#include "fdlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Kind of a link input. Values are pinned. */
typedef enum fdl_input_kind {
    FDL_KIND_AUTO = 0, /**< detect from content */
    FDL_KIND_PTX = 1,
    FDL_KIND_CUBIN = 2,
    FDL_KIND_FATBIN = 3,
    FDL_KIND_LTOIR = 4,
    FDL_KIND_OBJECT = 5,
    FDL_KIND_LIBRARY = 6,
    FDL_KIND_CUDA = 7
} fdl_input_kind;

/** Name of a kind ("ptx", "cubin", ...); static string. */
FDL_API const char *fdl_input_kind_name(fdl_input_kind kind);

/** Options of a link. Start from FDL_LINK_OPTIONS_INIT. */
typedef struct fdl_link_options {
    unsigned version;        /**< FDL_LINK_OPTIONS_VERSION */
    const char *arch;        /**< "sm_90", "sm_90a", ...; required */
    int opt_level;           /**< -O level 0..3; -1 for the backend's default */
    int debug;               /**< -g */
    int lineinfo;            /**< -lineinfo */
    int verbose;             /**< -verbose: the backend writes details to the info log */
    const char *const *extra; /**< NULL-terminated raw backend options, or NULL */
} fdl_link_options;

#define FDL_LINK_OPTIONS_VERSION 1
#define FDL_LINK_OPTIONS_INIT {FDL_LINK_OPTIONS_VERSION, NULL, -1, 0, 0, 0, NULL}

/** A link in progress. Opaque. */
typedef struct fdl_link fdl_link;

/**
 * Create a link. Loads nvJitLink on first use.
 *
 * @param out  receives the link (not NULL); *out = NULL on entry and on failure
 * @param opts not NULL; copied. arch is required: `sm_NN`, `sm_NNa` or `sm_NNf` (two to four
 *             digits, checked here because nvJitLink ends the process on a one-digit arch)
 * @return FDL_OK, FDL_EINVAL (bad options: the message names the option), FDL_ENOLIB (nvJitLink
 *         cannot be loaded), FDL_ELINK (the backend refused the options), FDL_ENOMEM
 * Ownership: *out belongs to the caller; free with fdl_link_destroy.
 */
FDL_API int fdl_link_create(fdl_link **out, const fdl_link_options *opts, fdl_error *err);

/** Destroy a link and every buffer it owns. NULL is allowed. */
FDL_API void fdl_link_destroy(fdl_link *link);

/**
 * Check every PTX input against these declarations before linking (see fdlink/abi.h); the
 * diagnostics go to the callback set with fdl_link_set_diag, if any. The set is borrowed and
 * must outlive the link. A second call replaces the set.
 * @return FDL_OK, FDL_EINVAL
 */
FDL_API int fdl_link_add_decls(fdl_link *link, const fdl_decls *decls, fdl_error *err);

/**
 * Receive every diagnostic of the declaration check run by fdl_link_complete (see fdl_diag_fn);
 * err of fdl_link_complete still gets the first. @p fn NULL turns it off. @p ctx is passed back.
 * @return FDL_OK, FDL_EINVAL (NULL link)
 */
FDL_API int fdl_link_set_diag(fdl_link *link, fdl_diag_fn fn, void *ctx);

/**
 * Add an input from memory. The bytes are copied; @p name is used in every diagnostic. The
 * backend sees the inputs in fdl_link_complete, after the declaration check, so an input it
 * refuses is reported there (FDL_ELINK naming the input).
 * @param kind FDL_KIND_AUTO to detect from content
 * @return FDL_OK, FDL_EKIND (unrecognised or unsupported content: the message says what was
 *         found; empty input), FDL_EPARSE (PTX that cannot be scanned), FDL_ENOMEM, FDL_EINVAL
 */
FDL_API int fdl_link_add_data(fdl_link *link, const void *data, size_t size, const char *name,
                              fdl_input_kind kind, fdl_error *err);

/** Add an input file. As fdl_link_add_data, plus FDL_EIO. */
FDL_API int fdl_link_add_file(fdl_link *link, const char *path, fdl_input_kind kind,
                              fdl_error *err);

/**
 * Run the declaration check (if declarations were added) and the link.
 * @return FDL_OK, FDL_EABI (a PTX input disagrees with a declaration), FDL_ELINK (the backend
 *         refused an input, err->source naming it, or the link failed, e.g. an undefined symbol,
 *         err->symbol naming it: the message quotes the log, err->log holds it whole, borrowed
 *         from the link), FDL_EINVAL (no inputs, or already completed), FDL_ENOMEM
 */
FDL_API int fdl_link_complete(fdl_link *link, fdl_error *err);

/**
 * The linked cubin after a successful fdl_link_complete, else NULL.
 * Ownership: borrowed; valid until the link is destroyed.
 */
FDL_API const void *fdl_link_cubin(const fdl_link *link, size_t *size);

/** Write the linked cubin to @p path atomically. @return FDL_OK, FDL_EINVAL, FDL_EIO */
FDL_API int fdl_link_write(const fdl_link *link, const char *path, fdl_error *err);

/** The backend's info log ("" when empty). Borrowed; valid until the link is destroyed. */
FDL_API const char *fdl_link_info_log(const fdl_link *link);

/** The backend's error log ("" when empty). Borrowed; valid until the link is destroyed. */
FDL_API const char *fdl_link_error_log(const fdl_link *link);

/**
 * Wall time of the backend's part of fdl_link_complete (compiling the inputs and linking), in
 * milliseconds; 0 until the backend ran (also when the declaration check failed).
 */
FDL_API double fdl_link_wall_ms(const fdl_link *link);

/**
 * Version of the nvJitLink library in use, loading it if needed.
 * @return FDL_OK, FDL_ENOLIB
 */
FDL_API int fdl_link_backend_version(unsigned *major, unsigned *minor, fdl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_LINK_H */
