/**
 * @file fdlink/error.h
 * Status codes and the caller-owned error record shared by every fdlink module.
 *
 * Thread-safety: an fdl_error is a plain value; one thread at a time per record.
 */
#ifndef FDLINK_ERROR_H
#define FDLINK_ERROR_H

#include <stddef.h>

#include "fdlink/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. Values are pinned and never renumbered. */
#define FDL_OK 0           /**< success */
#define FDL_EINVAL (-1)    /**< invalid argument (programmer misuse) */
#define FDL_ENOMEM (-2)    /**< out of memory, or a size computation overflowed */
#define FDL_EIO (-3)       /**< a file could not be read or written */
#define FDL_EPARSE (-4)    /**< malformed input text (signature, declaration, PTX) */
#define FDL_EABI (-5)      /**< compiled code disagrees with its declaration */
#define FDL_ELINK (-6)     /**< the device linker failed (log in fdl_error.log) */
#define FDL_ENOTFOUND (-7) /**< a named thing (symbol, kernel, file) does not exist */
#define FDL_ENODEVICE (-8) /**< no CUDA driver or no CUDA device */
#define FDL_ENOLIB (-9)    /**< a CUDA library could not be loaded at run time */
#define FDL_ECUDA (-10)    /**< a CUDA driver call failed */
#define FDL_ELIMIT (-11)   /**< input exceeds a documented limit (length, depth, count) */
#define FDL_EKIND (-12)    /**< input is of an unknown or unsupported kind */
#define FDL_EVERIFY (-13)  /**< a device result differs from its reference */
#define FDL_EDEVICE (-14)  /**< a device function reported a non-zero status */

/**
 * Exit status of a test program that found no GPU and skipped its launches: ctest reports it as
 * skipped (SKIP_RETURN_CODE, set by fdlink_add_test), like automake's 77.
 */
#define FDL_EXIT_SKIP 77

#define FDL_ERROR_SOURCE_MAX 256
#define FDL_ERROR_SYMBOL_MAX 128
#define FDL_ERROR_MESSAGE_MAX 512

/**
 * Which of an fdl_error's details are set (the bits of fdl_error.fields). A detail is the
 * structure a message names, carried as data so that no caller reads it back out of the words:
 */
#define FDL_ERROR_HAS_RULE 0x01u    /**< `rule`: the ABI rule cited (FDL_EABI) */
#define FDL_ERROR_HAS_DECL 0x02u    /**< `decl_source/_line/_column`: the declaration's place */
#define FDL_ERROR_HAS_LIBRARY 0x04u /**< `library`: the library not loaded (FDL_ENOLIB) */
#define FDL_ERROR_HAS_INDEX 0x08u   /**< `index`: a map's lowest failing index (FDL_EDEVICE) */
#define FDL_ERROR_HAS_PLACE 0x10u   /**< `block`, `thread`: where FDL_CALL failed (FDL_EDEVICE) */
#define FDL_ERROR_HAS_COUNT 0x20u   /**< `count`: how many calls failed (FDL_EDEVICE) */

/**
 * Where and why an operation failed. Caller-owned and fixed-size; pass NULL where the detail is
 * not wanted. Filled by the function that detects the error; unchanged on success.
 *
 * The details after `log` (0.x: added in round 4 of the structure work, which grew the record;
 * the members before them are unchanged, in place and meaning) repeat in fields what the message
 * says in words: `fields` has a FDL_ERROR_HAS_* bit for each one set, and the others are zero.
 * Every function that fills the record clears them first. They change nothing in the message
 * or in fdl_error_format's line.
 *
 * Ownership: the struct is the caller's. `log`, when non-NULL, is borrowed from the handle that
 * produced the error (a link, a module) and stays valid until that handle is destroyed.
 * Thread-safety: one thread at a time per record.
 */
typedef struct fdl_error {
    int code;                              /**< FDL_E* status, FDL_OK when clear */
    int backend_code;                      /**< raw CUresult / nvJitLinkResult / nvrtcResult, or 0 */
    char source[FDL_ERROR_SOURCE_MAX];     /**< input file or name, "" if none */
    unsigned line;                         /**< 1-based line in source, 0 if unknown */
    unsigned column;                       /**< 1-based byte column in source, 0 if unknown */
    char symbol[FDL_ERROR_SYMBOL_MAX];     /**< function, kernel or type concerned, "" if none */
    char message[FDL_ERROR_MESSAGE_MAX];   /**< one line, lower case, no trailing period */
    const char *log;                       /**< whole backend log (borrowed), NULL if none */
    unsigned fields;                       /**< FDL_ERROR_HAS_* bits: the details below set */
    int rule;                              /**< the ABI rule's number (5 for "ABI-5") */
    char decl_source[FDL_ERROR_SOURCE_MAX]; /**< the declaration's file ("lib.decl") */
    unsigned decl_line;                    /**< the declaration's 1-based line */
    unsigned decl_column;                  /**< the declaration's 1-based column */
    char library[FDL_ERROR_SOURCE_MAX];    /**< the library: its file ("libcuda.so.1") or name */
    unsigned long long index;              /**< a map's lowest failing index */
    unsigned block[3];                     /**< the failing call's block (x, y, z) */
    unsigned thread[3];                    /**< the failing call's thread (x, y, z) */
    unsigned long long count;              /**< failures since the last check, at least 1 */
} fdl_error;

/** Static initialiser for an empty error record (every member named, details included). */
#define FDL_ERROR_INIT                                                                        \
    {0, 0, "", 0, 0, "", "", NULL, 0, 0, "", 0, 0, "", 0, {0, 0, 0}, {0, 0, 0}, 0}

/**
 * Reset @p err to the empty state (FDL_ERROR_INIT).
 *
 * @param err  the record; NULL is allowed and ignored
 * Ownership: nothing allocated. Thread-safety: one thread at a time per record.
 */
FDL_API void fdl_error_clear(fdl_error *err);

/**
 * Name of a status code ("FDL_EPARSE"); "FDL_E?" for a value that is not a status.
 *
 * Ownership: a static string. Thread-safety: safe.
 */
FDL_API const char *fdl_status_name(int status);

/**
 * Write the error as one line into @p buf: `source:line:col: symbol: message`, leaving out the
 * parts that are empty, and the symbol when the message already starts with it.
 *
 * @param err   the record; NULL gives 0 and leaves @p buf alone
 * @param buf   receives the line, truncated to fit and NUL-terminated when @p size > 0; may be
 *              NULL when @p size is 0 (to measure)
 * @return the number of characters the full line needs, excluding the NUL (like snprintf)
 * Ownership: nothing allocated. Thread-safety: safe for distinct buffers.
 */
FDL_API size_t fdl_error_format(const fdl_error *err, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_ERROR_H */
