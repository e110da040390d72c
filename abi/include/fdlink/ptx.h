/**
 * @file fdlink/ptx.h
 * PTX prototype scanner: `.version`, `.target`, `.address_size` and every `.func` / `.entry`
 * prototype with its linkage, return parameter and parameters, each with line and column.
 * Bodies are skipped, not parsed: the scan is linear in the input and never reads past it.
 *
 * Thread-safety: an fdl_ptx is immutable after creation; share it freely.
 */
#ifndef FDLINK_PTX_H
#define FDLINK_PTX_H

#include <stddef.h>

#include "fdlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Longest identifier accepted in a prototype: a limit of fdlink's (a bound on what one name may
 * cost), far above what the toolkit writes (nvcc's mangled names of template instantiations run
 * past 1500 bytes, and ptxas takes them; it was 1024 before issue 22).
 */
#define FDL_PTX_MAX_IDENT 65536
/** Most parameters one prototype may have. */
#define FDL_PTX_MAX_PARAMS 4096

/** Linkage of a PTX function. */
typedef enum fdl_ptx_linkage {
    FDL_PTX_LINK_NONE = 0, /**< no directive: local to the module */
    FDL_PTX_LINK_VISIBLE,  /**< .visible: defined here, visible to the linker */
    FDL_PTX_LINK_WEAK,     /**< .weak */
    FDL_PTX_LINK_EXTERN,   /**< .extern: referenced here, defined elsewhere */
    FDL_PTX_LINK_COMMON    /**< .common */
} fdl_ptx_linkage;

/** One `.param` (or `.reg` in a return list) of a prototype. */
typedef struct fdl_ptx_param {
    char type[8];        /**< the type token without the dot: "b32", "u64", "f32", "b8" */
    unsigned bits;       /**< width of one element in bits (8..128; 1 for .pred) */
    unsigned align;      /**< `.align N` value, 0 when absent */
    size_t array;        /**< element count for `name[N]`, 0 for a scalar */
    size_t bytes;        /**< total size: bits/8, times array when it is one */
    int is_ptr;          /**< `.ptr` qualifier present */
    const char *name;    /**< parameter name (borrowed), "" when absent (declarations may omit) */
    unsigned line;       /**< 1-based position of the `.param` directive */
    unsigned column;
} fdl_ptx_param;

/** One function or kernel prototype. */
typedef struct fdl_ptx_func {
    const char *name;        /**< borrowed */
    fdl_ptx_linkage linkage;
    int is_entry;            /**< `.entry` (kernel) rather than `.func` */
    int is_definition;       /**< a body follows (`{`), rather than `;` */
    int has_return;          /**< a return parameter list is present */
    fdl_ptx_param ret;       /**< the return parameter when has_return */
    size_t nparams;
    const fdl_ptx_param *params; /**< borrowed array of nparams */
    unsigned line;           /**< 1-based position of the function name */
    unsigned column;
    unsigned decl_line;      /**< 1-based position of the first directive (.visible/.func) */
    unsigned decl_column;
} fdl_ptx_func;

/** A scanned PTX module. Opaque. */
typedef struct fdl_ptx fdl_ptx;

/**
 * Scan PTX text.
 *
 * @param out   receives the result (not NULL); *out = NULL on entry and on failure
 * @param text  @p len bytes of PTX (need not be NUL-terminated; NUL bytes are an error)
 * @param name  used in diagnostics and returned by fdl_ptx_source (not NULL)
 * @param err   may be NULL; on failure gets name:line:col and a message
 * @return FDL_OK, FDL_EPARSE (malformed prototype or directive, no `.version`, a NUL byte, an
 *         unterminated comment, string or block), FDL_ELIMIT (identifier longer than
 *         FDL_PTX_MAX_IDENT, more than FDL_PTX_MAX_PARAMS parameters, array too large),
 *         FDL_ENOMEM, FDL_EINVAL (NULL @p out or @p name, NULL @p text with @p len > 0)
 * Ownership: *out belongs to the caller (fdl_ptx_destroy). Only names and prototypes are copied;
 * @p text is not retained.
 * Thread-safety: reentrant.
 */
FDL_API int fdl_ptx_scan(fdl_ptx **out, const char *text, size_t len, const char *name,
                         fdl_error *err);

/**
 * Scan a PTX file (memory-mapped; bodies are never copied).
 *
 * @param path  the file (not NULL); it must not be truncated while it is being scanned
 * @return as fdl_ptx_scan, plus FDL_EIO when the file cannot be opened or mapped (missing, a
 *         directory, not a regular file) and FDL_EPARSE for an empty file
 * Ownership: as fdl_ptx_scan. Thread-safety: reentrant.
 */
FDL_API int fdl_ptx_scan_file(fdl_ptx **out, const char *path, fdl_error *err);

/**
 * Free a scan result and everything borrowed from it. NULL is allowed.
 * Thread-safety: no other thread may be using the result.
 */
FDL_API void fdl_ptx_destroy(fdl_ptx *ptx);

/*
 * Accessors. Each accepts NULL (giving "", 0 or NULL). Ownership: strings and prototypes are
 * borrowed from @p ptx, valid until fdl_ptx_destroy. Thread-safety: safe (the result is
 * immutable).
 */

/** Name given to the scanner (file path for fdl_ptx_scan_file). */
FDL_API const char *fdl_ptx_source(const fdl_ptx *ptx);
/** `.version` as written, e.g. "9.0". */
FDL_API const char *fdl_ptx_version(const fdl_ptx *ptx);
/** `.target` list as written, e.g. "sm_90" or "sm_90a, debug"; "" if absent. */
FDL_API const char *fdl_ptx_target(const fdl_ptx *ptx);
/** `.address_size` (32 or 64); 0 if absent (fdl_abi_check treats that as 32-bit, ABI-12). */
FDL_API unsigned fdl_ptx_address_size(const fdl_ptx *ptx);
/**
 * Position of a module directive: @p directive is ".version", ".target" or ".address_size".
 * @param line, column  receive the 1-based position, 0 when absent (either may be NULL)
 * @return non-zero when the module has the directive, 0 otherwise (and for any other name)
 */
FDL_API int fdl_ptx_directive_location(const fdl_ptx *ptx, const char *directive, unsigned *line,
                                       unsigned *column);
/** Number of prototypes, in file order. */
FDL_API size_t fdl_ptx_count(const fdl_ptx *ptx);
/** Prototype @p i in file order, or NULL when out of range. */
FDL_API const fdl_ptx_func *fdl_ptx_get(const fdl_ptx *ptx, size_t i);
/**
 * First definition named @p name, else the first prototype of that name, or NULL (also for a
 * NULL @p name). Lookups are O(1) on average.
 */
FDL_API const fdl_ptx_func *fdl_ptx_find(const fdl_ptx *ptx, const char *name);

/**
 * What a kernel parameter's type says about the values it takes, as far as the code says it
 * (a C compiler's conversion of an argument to its prototype needs no more): a binding converts a
 * number to a FLOAT parameter as C converts it to float or double, refuses a float for an integer
 * or pointer one, and passes only bytes of exactly the size for BYTES. PTX does not tell a
 * pointer from a 64-bit integer, nor (nvcc writes `.u32` for int and unsigned alike) a signed
 * integer from an unsigned one: UNSIGNED and BITS take either, in two's complement.
 */
typedef enum fdl_param_class {
    FDL_PARAM_UNKNOWN = 0, /**< only the size is known (a cubin from elsewhere) */
    FDL_PARAM_FLOAT,       /**< `.f16`, `.f32`, `.f64` */
    FDL_PARAM_SIGNED,      /**< `.s8` .. `.s64` */
    FDL_PARAM_UNSIGNED,    /**< `.u8` .. `.u64` (nvcc's int, unsigned, size_t, pointers) */
    FDL_PARAM_BITS,        /**< `.b8` .. `.b64`, `.bf16`, `.pred`: an integer or a pointer */
    FDL_PARAM_BYTES        /**< an array of bytes (`.align 8 .b8 s[24]`): a struct by value */
} fdl_param_class;

/** One kernel parameter as code says it: its class and its size in bytes. A plain value. */
typedef struct fdl_param_info {
    fdl_param_class cls;
    size_t size;
} fdl_param_info;

/**
 * The class of a `.param` of an `.entry` prototype (see fdl_param_class). NULL gives
 * FDL_PARAM_UNKNOWN. Thread-safety: safe.
 */
FDL_API fdl_param_class fdl_ptx_param_class(const fdl_ptx_param *param);

/**
 * The class's name: "unknown", "float", "signed", "unsigned", "bits", "bytes" ("unknown" for
 * other values). Ownership: a static string. Thread-safety: safe.
 */
FDL_API const char *fdl_param_class_name(fdl_param_class cls);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_PTX_H */
