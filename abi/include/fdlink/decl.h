/**
 * @file fdlink/decl.h
 * Declaration files (`*.decl`): one foreign device function per line,
 *
 *     # comment
 *     mul_f32_f32: float32(float32, float32)
 *     add_cabi: uint32(uint32, uint32) abi=c
 *
 * Thread-safety: an fdl_decls is immutable after creation; share it freely between threads.
 */
#ifndef FDLINK_DECL_H
#define FDLINK_DECL_H

#include <stddef.h>

#include "fdlink/error.h"
#include "fdlink/sig.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest function name accepted (a C identifier). */
#define FDL_DECL_MAX_NAME 127
/** Longest declaration line accepted, in bytes. */
#define FDL_DECL_MAX_LINE 8192
/** Most declarations one set may hold. */
#define FDL_DECL_MAX_COUNT 1000000

/** Calling convention of a declared function (see abi/ABI.md). */
typedef enum fdl_abi {
    FDL_ABI_NUMBA = 0, /**< int name(T *return_value, args...), 0 = success (ABI-1) */
    FDL_ABI_C = 1      /**< T name(args...), a plain C function (ABI-9) */
} fdl_abi;

/** One declaration. All pointers are borrowed from the owning fdl_decls. */
typedef struct fdl_decl {
    const char *name;   /**< function name, NUL-terminated */
    fdl_sig sig;        /**< declared signature */
    fdl_abi abi;        /**< calling convention */
    const char *source; /**< declaration file name (as given to the loader) */
    unsigned line;      /**< 1-based line of the declaration */
    unsigned column;    /**< 1-based column of the name */
    unsigned sig_column;/**< 1-based column where the signature starts */
} fdl_decl;

/** A set of declarations, in file order. Opaque. */
typedef struct fdl_decls fdl_decls;

/**
 * Parse declarations from memory.
 *
 * @param out   receives the new set (not NULL); *out = NULL on entry and on failure
 * @param text  @p len bytes of declaration text (need not be NUL-terminated)
 * @param name  name used in diagnostics and in fdl_decl.source (not NULL)
 * @param err   may be NULL; gets `name:line:col` and the offending symbol on failure
 * @return FDL_OK, FDL_EPARSE (bad line, bad name, bad signature, duplicate name, unknown option),
 *         FDL_ELIMIT (line, name or signature too long, too many declarations or lines),
 *         FDL_ENOMEM, FDL_EINVAL (NULL @p out or @p name, NULL @p text with @p len > 0)
 * Ownership: *out belongs to the caller; free with fdl_decls_destroy. Names are copied; @p text
 * is not retained.
 * Thread-safety: reentrant.
 */
FDL_API int fdl_decls_parse(fdl_decls **out, const char *text, size_t len, const char *name,
                            fdl_error *err);

/**
 * Load a declaration file. Same as fdl_decls_parse on the file's contents with its path as name.
 *
 * @param path  the file (not NULL)
 * @return as fdl_decls_parse, plus FDL_EIO when the file cannot be read (missing, a directory,
 *         not a regular file)
 * Ownership: as fdl_decls_parse. Thread-safety: reentrant.
 */
FDL_API int fdl_decls_load(fdl_decls **out, const char *path, fdl_error *err);

/**
 * Free a set and everything borrowed from it. NULL is allowed.
 * Thread-safety: no other thread may be using the set.
 */
FDL_API void fdl_decls_destroy(fdl_decls *decls);

/**
 * Number of declarations in the set (0 for NULL).
 * Thread-safety: safe (the set is immutable).
 */
FDL_API size_t fdl_decls_count(const fdl_decls *decls);

/**
 * Declaration @p i in file order, or NULL when out of range or @p decls is NULL.
 * Ownership: borrowed from @p decls. Thread-safety: safe (the set is immutable).
 */
FDL_API const fdl_decl *fdl_decls_get(const fdl_decls *decls, size_t i);

/**
 * Declaration named @p name (exactly; names are case-sensitive), or NULL when there is none or
 * either argument is NULL. O(1) on average.
 * Ownership: borrowed from @p decls. Thread-safety: safe (the set is immutable).
 */
FDL_API const fdl_decl *fdl_decls_find(const fdl_decls *decls, const char *name);

/**
 * The name given when the set was parsed (the file path for fdl_decls_load); NULL for NULL.
 * Ownership: borrowed from @p decls. Thread-safety: safe (the set is immutable).
 */
FDL_API const char *fdl_decls_source(const fdl_decls *decls);

/**
 * Generate a CUDA header (`.cuh`) with one `extern "C" __device__` prototype per declaration,
 * include guards and a comment naming the declaration file. Including it in the implementation
 * makes any disagreement in type a compile error; including it in callers gives them the
 * prototypes.
 *
 * @param out   receives a NUL-terminated buffer (not NULL); *out = NULL on entry and on failure
 * @param len   receives the length without the NUL (may be NULL)
 * @param decls the declarations (not NULL)
 * @param guard include-guard macro, or NULL to derive one from the source name
 * @param err   may be NULL
 * @return FDL_OK, FDL_ENOMEM, FDL_EINVAL (NULL @p out or @p decls, @p guard not a C identifier)
 * Ownership: *out belongs to the caller; free with free().
 * Thread-safety: reentrant; @p decls is only read.
 */
FDL_API int fdl_header_generate(char **out, size_t *len, const fdl_decls *decls, const char *guard,
                                fdl_error *err);

/**
 * Generate the header (with the derived guard) and write it to @p path atomically (a temporary
 * file in the same directory, then rename): on failure nothing is left behind and an existing
 * file at @p path is untouched.
 *
 * @param decls the declarations (not NULL)
 * @param path  the output file (not NULL)
 * @return as fdl_header_generate, plus FDL_EIO when the file cannot be written
 * Ownership: nothing allocated that outlives the call.
 * Thread-safety: reentrant; @p decls is only read.
 */
FDL_API int fdl_header_write(const fdl_decls *decls, const char *path, fdl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_DECL_H */
