/*
 * Internal helpers of the ABI module (not installed), for abi/ and the modules above it, in
 * sections named for the file that defines them: the declarations' name index (decl.c), the PTX
 * bodies' typed accesses and ABI-13's warnings (ptx_body.c, check.c), the C types of the ABI
 * (header.c). The runtime every module shares is base/src/internal.h, included here.
 */
#ifndef FDLINK_ABI_INTERNAL_H
#define FDLINK_ABI_INTERNAL_H

#include <stddef.h>

#include "fdlink/abi.h"
#include "fdlink/ptx.h"
#include "internal.h"

/* ---- decl.c: the declarations' name index ---------------------------------------------------- */

/*
 * Position (file order) of the declaration named s[0..n) in @decls (s need not be
 * NUL-terminated), or SIZE_MAX. O(1) on average. Defined in decl.c.
 */
struct fdl_decls;
size_t fdl__decls_index(const struct fdl_decls *decls, const char *s, size_t n);

/* ---- ptx_body.c: what the bodies of .visible .func definitions do with their parameters ----- */

/* The classes of typed accesses (fdl__ptx_use.classes): .f and .bf types, .u and .s types. */
#define FDL__USE_FLOAT 1u
#define FDL__USE_INT 2u

/*
 * The typed accesses of one parameter of a definition's body (ABI-13): its `ld.param.<type>`
 * loads (no offset, no vector), or, for the return slot, the `st.<type>` stores through the
 * pointer loaded from parameter 0 (followed through cvta and mov; a store of a value loaded
 * from a parameter as it is, a bit copy, is no evidence). `.b` accesses are no evidence.
 */
typedef struct fdl__ptx_use {
    size_t func;            /* the function's index (fdl_ptx_get) */
    size_t slot;            /* 0: stores through the return slot; k + 1: loads of parameter k */
    unsigned classes;       /* FDL__USE_FLOAT | FDL__USE_INT seen */
    char type[2][8];        /* the first access of each class: "f32", "u32" */
    unsigned line[2];       /* its position: [0] the float class's, [1] the integer class's */
    unsigned column[2];
} fdl__ptx_use;

/*
 * fdl_ptx_scan, and the bodies of the .visible .func definitions read as well for
 * fdl__ptx_use_of (ABI-13). Only for PTX that fdlink made itself at -O0 from LTO-IR (the
 * post-LTO check): nvJitLink's fast instruction selection loads a parameter with its IR type,
 * the C type, whereas an optimised build (nvcc -O3) folds a bit cast such as __int_as_float into
 * the load (an int parameter read by ld.param.f32), so a user's PTX is no evidence. fdl_ptx_scan
 * itself never reads a body. Ownership and thread-safety: as fdl_ptx_scan.
 */
int fdl__ptx_scan_bodies(fdl_ptx **out, const char *text, size_t len, const char *name,
                         fdl_error *err);

/*
 * fdl_abi_check, and ABI-13's warnings to @p on_warning (with opts->ctx; NULL: none looked for)
 * for the modules scanned by fdl__ptx_scan_bodies: a declared float32/float64 parameter that the
 * definition loads only with integer types, an integer one loaded only as .f, a declared integer
 * return value (numba ABI) stored through the return slot only as .f. A warning is counted
 * nowhere, goes to neither on_diag nor @p err, and never changes the result; its fdl_error's
 * code is FDL_EABI. Ownership and thread-safety: as fdl_abi_check.
 */
int fdl__abi_check_warn(size_t *ndiags, const fdl_decls *decls, const fdl_ptx *const *ptx,
                        size_t nptx, const fdl_check_options *opts, fdl_diag_fn on_warning,
                        fdl_error *err);

/*
 * The accesses of @p slot (0 the return slot's stores, k + 1 parameter k's loads) in the body of
 * @p fn (a prototype of @p ptx), or NULL when there are none with a type, or the body was not
 * looked at (a declaration, a kernel, a function without .visible, a module scanned by
 * fdl_ptx_scan). Borrowed from @p ptx.
 */
const fdl__ptx_use *fdl__ptx_use_of(const fdl_ptx *ptx, const fdl_ptx_func *fn, size_t slot);

/* ---- header.c: the C types of the ABI ------------------------------------------------------- */

/*
 * ABI-5: the C type of scalar @p scalar (an fdl_scalar) as the generated prototypes header spells
 * it ("float", "__half", ...); "void" for a value outside the enum. A static string.
 */
const char *fdl__abi_c_type(int scalar);

#endif /* FDLINK_ABI_INTERNAL_H */
