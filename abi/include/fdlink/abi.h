/**
 * @file fdlink/abi.h
 * Conformance of compiled code to declarations (rules in abi/ABI.md).
 *
 * Thread-safety: fdl_abi_check is reentrant; its inputs are only read.
 */
#ifndef FDLINK_ABI_H
#define FDLINK_ABI_H

#include <stddef.h>

#include "fdlink/decl.h"
#include "fdlink/error.h"
#include "fdlink/ptx.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Receives each diagnostic of a check, in a stable order (declaration order, then input order).
 * @p diag is valid only during the call. The location is the compiled code's (PTX file, line,
 * column), the symbol the function's name; the message also names the declaration's location.
 */
typedef void (*fdl_diag_fn)(void *ctx, const fdl_error *diag);

/** Options of a conformance check. */
typedef struct fdl_check_options {
    unsigned version;         /**< FDL_CHECK_OPTIONS_VERSION */
    int allow_undefined;      /**< a declared function only referenced (.extern) is not an error */
    int check_externs;        /**< check `.extern .func` references against declarations (ABI-8) */
    fdl_diag_fn on_diag;      /**< called for every diagnostic; may be NULL */
    void *ctx;                /**< passed to on_diag */
} fdl_check_options;

#define FDL_CHECK_OPTIONS_VERSION 1
#define FDL_CHECK_OPTIONS_INIT {FDL_CHECK_OPTIONS_VERSION, 0, 1, NULL, NULL}

/**
 * Check every declaration against a set of scanned PTX modules that together make up a link.
 * For each declared function: defined exactly once with `.visible` linkage (unless
 * allow_undefined), not present only under a C++-mangled name, and its prototype matches the
 * declaration under its ABI (ABI-2..ABI-9). With check_externs, every `.extern .func` reference
 * to a declared name must match too.
 *
 * Every module must be 64-bit (ABI-12): one without `.address_size 64`, including one with no
 * `.address_size` at all, gets a diagnostic of its own.
 *
 * @param ndiags  receives the number of diagnostics (may be NULL)
 * @param decls   the declarations (not NULL)
 * @param ptx     @p nptx scanned modules (not NULL unless @p nptx is 0; no element NULL)
 * @param opts    may be NULL for the defaults; its version must be FDL_CHECK_OPTIONS_VERSION
 * @param err     may be NULL; gets the first diagnostic
 * @return FDL_OK when everything conforms, FDL_EABI when any diagnostic was produced,
 *         FDL_ENOMEM, FDL_EINVAL (a NULL argument, an unsupported options version)
 * Ownership: nothing allocated that outlives the call.
 * Thread-safety: reentrant; the inputs are only read, and on_diag is called on the calling
 * thread.
 */
FDL_API int fdl_abi_check(size_t *ndiags, const fdl_decls *decls, const fdl_ptx *const *ptx,
                          size_t nptx, const fdl_check_options *opts, fdl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_ABI_H */
