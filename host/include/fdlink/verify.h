/**
 * @file fdlink/verify.h
 * Verification: compare a device result with a host reference, element by element, exactly,
 * bit for bit, within an absolute/relative tolerance, or within a distance in units in the last
 * place (ULP), for integers of 8 to 64 bits (signed and unsigned), bool, float16, float32 and
 * float64. The outcome is a report (counts, the worst errors, the first few mismatches with
 * index, got, expected and error measures) and a formatter; nothing is printed.
 *
 * Thread-safety: every function is reentrant; reports and options are plain values.
 */
#ifndef FDLINK_VERIFY_H
#define FDLINK_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/error.h"
#include "fdlink/host.h"
#include "fdlink/sig.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How elements are compared. */
typedef enum fdl_verify_mode {
    /** Equal values: -0.0 equals +0.0; NaN equals NaN when nan_equal is set. */
    FDL_VERIFY_EXACT = 0,
    /** Identical bits (floats: -0.0 differs from +0.0, NaN payloads matter). */
    FDL_VERIFY_BITWISE,
    /**
     * |got - expected| <= abs_tol + rel_tol * |expected| (as numpy.isclose); infinities must be
     * equal. Integers are compared by their exact difference.
     */
    FDL_VERIFY_TOLERANCE,
    /**
     * Floats: at most max_ulp representable values apart (+0.0 and -0.0 are 0 apart; NaN is
     * never within any distance unless nan_equal and both are NaN). Integers: |got - expected|
     * <= max_ulp.
     */
    FDL_VERIFY_ULP
} fdl_verify_mode;

#define FDL_VERIFY_OPTIONS_VERSION 1u

/** Options of a comparison. */
typedef struct fdl_verify_options {
    unsigned version;     /**< FDL_VERIFY_OPTIONS_VERSION */
    fdl_verify_mode mode; /**< FDL_VERIFY_EXACT by default */
    double abs_tol;       /**< FDL_VERIFY_TOLERANCE: absolute tolerance, >= 0 */
    double rel_tol;       /**< FDL_VERIFY_TOLERANCE: relative tolerance, >= 0 */
    uint64_t max_ulp;     /**< FDL_VERIFY_ULP: largest distance accepted */
    int nan_equal;        /**< non-zero: a NaN matches a NaN (default 1) */
} fdl_verify_options;

/** Exact comparison, NaN matching NaN. */
#define FDL_VERIFY_OPTIONS_INIT {FDL_VERIFY_OPTIONS_VERSION, FDL_VERIFY_EXACT, 0.0, 0.0, 0, 1}

/** Mismatches described in a report, at most. */
#define FDL_VERIFY_SHOW_MAX 8

/**
 * One element's value: `i` for signed integers, `u` for unsigned integers and bool, `f` for
 * floats (float16 and float32 widened exactly).
 */
typedef union fdl_value {
    int64_t i;
    uint64_t u;
    double f;
} fdl_value;

/** One mismatching element. */
typedef struct fdl_verify_mismatch {
    size_t index;       /**< element index */
    fdl_value got;      /**< the device's value */
    fdl_value expected; /**< the reference value */
    double abs_error;   /**< |got - expected| (inf, or NaN where a NaN is involved) */
    double rel_error;   /**< abs_error / |expected| (inf when expected is 0 and got is not) */
    uint64_t ulp;       /**< ULP distance (floats; UINT64_MAX with NaN); |got - expected| (ints) */
} fdl_verify_mismatch;

/** The outcome of a comparison. */
typedef struct fdl_verify_report {
    fdl_scalar type;            /**< element type compared */
    fdl_verify_options options; /**< as given */
    size_t count;               /**< elements compared */
    size_t mismatches;          /**< elements that did not match */
    size_t shown;               /**< entries of first[] filled: min(mismatches, SHOW_MAX) */
    fdl_verify_mismatch first[FDL_VERIFY_SHOW_MAX]; /**< the first mismatches, by index */
    double max_abs_error;       /**< largest abs_error over all elements (NaN ignored) */
    double max_rel_error;       /**< largest rel_error over all elements (NaN ignored) */
    uint64_t max_ulp;           /**< largest ulp over all elements */
    size_t max_ulp_index;       /**< where max_ulp was first reached */
} fdl_verify_report;

/**
 * Compare @p count elements of @p type at @p got (the device's result) with @p expected.
 * Integer types: FDL_BOOL (compared as bytes), FDL_INT8 .. FDL_UINT64, FDL_INTP, FDL_UINTP.
 * Floats: FDL_FLOAT16 (IEEE binary16 bits), FDL_FLOAT32, FDL_FLOAT64. The arrays need no
 * particular alignment.
 *
 * @param report filled in every case but FDL_EINVAL (not NULL)
 * @param opts   NULL for FDL_VERIFY_OPTIONS_INIT
 * @param err    may be NULL; for FDL_EVERIFY gets one line: `3 of 1000 float32 values differ
 *               (ulp <= 2); first at index 17: got 1.5, expected 1.25 (abs error 0.25,
 *               rel error 0.2, 2097152 ulp)`
 * @return FDL_OK (every element matches), FDL_EVERIFY (some do not), FDL_EINVAL (NULL array with
 *         a non-zero count, FDL_VOID, negative or NaN tolerances, unknown mode or version)
 * Ownership: nothing allocated. Thread-safety: reentrant.
 */
FDL_API int fdl_verify(fdl_verify_report *report, fdl_scalar type, const void *got,
                       const void *expected, size_t count, const fdl_verify_options *opts,
                       fdl_error *err);

/**
 * Copy @p count elements of @p type from the buffer at @p offset to the host and compare them
 * with @p expected, as fdl_verify.
 * @return as fdl_verify, plus FDL_ECUDA and FDL_EINVAL (range outside the buffer) from the copy,
 *         and FDL_ENOMEM
 */
FDL_API int fdl_buffer_verify(fdl_verify_report *report, const fdl_buffer *buf, size_t offset,
                              fdl_scalar type, const void *expected, size_t count,
                              const fdl_verify_options *opts, fdl_error *err);

/**
 * Write the report as text: a summary line, then one line per mismatch shown:
 *
 *     float32: 3 of 1000 values differ (ulp <= 2); max abs error 0.25, max ulp 2097152
 *       [17] got 1.5, expected 1.25 (abs error 0.25, rel error 0.2, 2097152 ulp)
 *       ... and 1 more
 *
 * or `float32: all 1000 values match (ulp <= 2)`. Lines end with '\n'.
 * @return the number of characters the full text needs (like snprintf); always NUL-terminates
 *         when @p size > 0; 0 for NULL @p report
 */
FDL_API size_t fdl_verify_format(const fdl_verify_report *report, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_VERIFY_H */
