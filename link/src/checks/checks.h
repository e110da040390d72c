/*
 * link/src/checks: what the checks of a link offer (internal to link/): the post-LTO PTX of
 * LTO-IR inputs, undefined symbols said fully, and the checks that fdl_link_complete runs (their
 * interface is core/linkobj.h's fdl__link_check).
 */
#ifndef FDLINK_CHECKS_H
#define FDLINK_CHECKS_H

#include "linkobj.h"

/* ---- postlto.c: the post-LTO PTX of LTO-IR inputs ------------------------------------------- */

/*
 * The post-LTO PTX of @p n inputs' LTO-IR, linked together in one nvJitLink run (with the
 * keeper LTO-IR when @p with_keeper) at -O0, kept with the first of them.
 * @return FDL_OK, FDL_ELINK, FDL_EPARSE, FDL_ENOMEM
 */
int fdl__link_post_lto_joint(fdl_link *link, fdl__link_input **ins, size_t n, int with_keeper,
                             fdl_error *err);
/* The post-LTO PTX of one input's LTO-IR, kept with the input. */
int fdl__link_post_lto(fdl_link *link, fdl__link_input *in, int with_keeper, fdl_error *err);

/* ---- undefined.c ----------------------------------------------------------------------------- */

/*
 * Rewrite @p err (a backend's failure naming @p symbol) as an undefined reference said fully:
 * the input that refers to it and where it is declared, or that it is not.
 */
void fdl__link_undefined_error(fdl_link *link, const char *symbol, fdl_error *err);

/*
 * Advice after a successful link, as warning records (advice.c, issue 34): a cubin mostly of
 * weak variables (--optimize-unused-variables), and with @p prepared (the images were chosen:
 * not a cache hit) a PTX or cubin caller beside large LTO-IR.
 */
void fdl__link_advice(fdl_link *link, int prepared);

/* ---- conflict.c ------------------------------------------------------------------------------ */

/*
 * When NVRTC refused CUDA C input @p name (@p source, @p size bytes; its log @p log) because a
 * definition conflicts with a declared function's force-included prototype, rewrite @p err (the
 * compile's FDL_EPARSE) as that ABI error: FDL_EABI at the definition, the declared name, the
 * definition's types against the declaration, the rule and where it is declared; add the record
 * to the link's diagnostics. @return 1 when rewritten, 0 when @p err is left alone.
 */
int fdl__link_cuda_conflict(fdl_link *link, const char *source, size_t size, const char *name,
                            const char *log, fdl_error *err);

extern const fdl__link_check fdl__check_decls;      /* check_decls.c */
/* The LTO report of a completed link: a note per declared function (ltoreport.c). */
void fdl__lto_report(fdl_link *link);
/* Whether a cubin defines a function @p name, of any binding (ltoreport.c). */
int fdl__lto_cubin_keeps(const void *data, size_t n, const char *name);
/* Whether the declaration check of @p link runs nvJitLink (LTO-IR inputs, declarations given). */
int fdl__check_decls_links(const fdl_link *link);
extern const fdl__link_check fdl__check_duplicates; /* check_dups.c */
/* An LTO-IR or PTX input newer than nvJitLink, named (check_skew.c, issue 40). */
extern const fdl__link_check fdl__check_skew;
/* nvJitLink's NVJITLINK_ERROR_OUTDATED_LIBRARY for @p input, said as the skew check says it. */
int fdl__link_outdated_error(fdl_link *link, const char *input, fdl_error *err);

/* The kernels' parameter classes of a completed link, from the PTX it saw, into link->params
 * (params.c); out of memory leaves them unknown. */
void fdl__link_params_collect(fdl_link *link);

#endif /* FDLINK_CHECKS_H */
