/**
 * @file fdlink/sig.h
 * The signature language: Numba-style signature strings such as `float32(float32, float32)` or
 * `float32(CPointer(float32), int32)`, parsed into values and printed back canonically.
 *
 * Thread-safety: all functions are reentrant; fdl_type and fdl_sig are plain values.
 */
#ifndef FDLINK_SIG_H
#define FDLINK_SIG_H

#include <stddef.h>

#include "fdlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Longest signature string accepted, in bytes. It exceeds the longest canonical signature (5783
 * bytes: a return type and 64 parameters, each under 8 levels of CPointer), so that every text
 * fdl_sig_format prints parses back.
 */
#define FDL_SIG_MAX_LENGTH 6144
/** Most parameters a signature may have. */
#define FDL_SIG_MAX_PARAMS 64
/** Deepest `CPointer(...)` nesting accepted. */
#define FDL_SIG_MAX_DEPTH 8

/** Scalar base types. Values are pinned. */
typedef enum fdl_scalar {
    FDL_VOID = 0, /**< only as a return type, or under CPointer (same as voidptr) */
    FDL_BOOL,     /**< boolean / bool_ */
    FDL_INT8,
    FDL_INT16,
    FDL_INT32,
    FDL_INT64,
    FDL_UINT8,
    FDL_UINT16,
    FDL_UINT32,
    FDL_UINT64,
    FDL_INTP,     /**< pointer-sized signed integer (64-bit on every CUDA target) */
    FDL_UINTP,    /**< pointer-sized unsigned integer */
    FDL_FLOAT16,
    FDL_FLOAT32,
    FDL_FLOAT64,
    FDL_SCALAR_COUNT
} fdl_scalar;

/**
 * A type: a scalar under @c depth levels of pointer. `voidptr` is {FDL_VOID, 1};
 * `CPointer(CPointer(float32))` is {FDL_FLOAT32, 2}; `void` is {FDL_VOID, 0}.
 */
typedef struct fdl_type {
    fdl_scalar base;
    unsigned depth;
} fdl_type;

/** A parsed signature: return type and parameters. */
typedef struct fdl_sig {
    fdl_type ret;
    size_t nparams;
    fdl_type params[FDL_SIG_MAX_PARAMS];
} fdl_sig;

/**
 * Parse a signature string.
 *
 * @param out   receives the signature (not NULL); zeroed on failure
 * @param text  the signature text, @p len bytes, need not be NUL-terminated (NULL only if len 0)
 * @param len   length of @p text in bytes
 * @param err   may be NULL; on failure gets the 1-based byte column in `column` and a message that
 *              says what to write instead where there is a known replacement
 * @return FDL_OK, FDL_EPARSE (syntax, unknown or unsupported type), FDL_ELIMIT (length, depth or
 *         parameter count), FDL_EINVAL (NULL @p out)
 * Ownership: nothing allocated. Thread-safety: reentrant.
 */
FDL_API int fdl_sig_parse(fdl_sig *out, const char *text, size_t len, fdl_error *err);

/**
 * Print a signature canonically: `float32(CPointer(float32), int32)`; a pointer to void prints as
 * `voidptr`. fdl_sig_parse of the result gives back an equal signature.
 *
 * @param sig   the signature; NULL prints nothing and returns 0
 * @param buf   receives the text, truncated to fit and NUL-terminated when @p size > 0; may be
 *              NULL when @p size is 0 (to measure)
 * @return characters the full text needs, excluding the NUL (like snprintf)
 * Ownership: nothing allocated. Thread-safety: reentrant.
 */
FDL_API size_t fdl_sig_format(const fdl_sig *sig, char *buf, size_t size);

/**
 * Print one type canonically (`CPointer(float32)`, `voidptr`); same contract as fdl_sig_format.
 * Ownership: nothing allocated. Thread-safety: reentrant.
 */
FDL_API size_t fdl_type_format(fdl_type type, char *buf, size_t size);

/**
 * Non-zero when the two signatures are equal: the same return type and parameters (voidptr and
 * CPointer(void) are the same type). Two NULLs are equal; NULL and a signature are not.
 * Ownership: nothing allocated. Thread-safety: reentrant.
 */
FDL_API int fdl_sig_equal(const fdl_sig *a, const fdl_sig *b);

/**
 * Size in bytes of a value of @p type on a CUDA device: pointers 8 (ABI-12), void 0, and 0 for a
 * base that is not an fdl_scalar.
 * Thread-safety: reentrant.
 */
FDL_API size_t fdl_type_size(fdl_type type);

/**
 * Canonical name of a scalar ("float32"), or "invalid" for a value that is not an fdl_scalar.
 * Ownership: a static string. Thread-safety: reentrant.
 */
FDL_API const char *fdl_scalar_name(fdl_scalar s);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_SIG_H */
