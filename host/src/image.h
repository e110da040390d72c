/* What a module image (cubin, fatbin, PTX) says of its kernels, read without the driver: the
 * kernels' names and parameters. No <cuda.h>: the CLI checks `fdlink run` arguments with it on
 * machines without a GPU or the toolkit's headers. */
#ifndef FDLINK_IMAGE_H
#define FDLINK_IMAGE_H

#include <stddef.h>

#include "fdlink/ptx.h"

/* Kernels of an image and how many parameters each takes. */
typedef struct fdl__kparam {
    char *name;
    size_t count;
    int coop;     /* its .nv.info lists cooperative-groups instructions (EIATTR 0x28) */
    size_t *sizes; /* count bytes, each parameter's (.nv.info EIATTR_KPARAM_INFO); NULL when the
                    * image does not say (PTX: fdl_ptx_param.bytes says) */
    fdl_param_info *info; /* count classes and sizes from a PTX `.entry`; NULL otherwise */
} fdl__kparam;

typedef struct fdl__kparams {
    fdl__kparam *v;
    size_t n, cap;
} fdl__kparams;

/*
 * Kernel names from a module image when the driver cannot enumerate them: the STT_FUNC symbols
 * with the CUDA entry flag of an ELF cubin, or the `.entry` definitions of PTX. Fatbins and
 * anything else give *known = 0.
 * @return FDL_OK, FDL_ENOMEM
 * Ownership: *names (sorted, *count of them) is the caller's: free each and the array.
 */
int fdl__image_kernel_names(char ***names, size_t *count, int *known, const void *image,
                            size_t size);

/*
 * The parameter count of each kernel of a module image, read from the image: the
 * EIATTR_KPARAM_INFO attributes of a cubin's .nv.info.<kernel> sections, the parameter list of
 * each PTX `.entry`, and for a fatbin those of every member that can be read (decompressed
 * where needed). A kernel the image says nothing about is absent.
 * @return FDL_OK, FDL_ENOMEM
 * Ownership: *out is the caller's (fdl__kparams_free).
 */
int fdl__image_param_counts(fdl__kparams *out, const void *image, size_t size);

/* The count of kernel @p name: 1 and *count, or 0 when the image did not say. */
int fdl__kparams_find(const fdl__kparams *l, const char *name, size_t *count);

/* Whether the image says kernel @p name holds cooperative-groups instructions (0: not said). */
int fdl__kparams_coop(const fdl__kparams *l, const char *name);

void fdl__kparams_free(fdl__kparams *l);

/* Whether some member of a fatbin may hold the @p len bytes of @p needle (a symbol name): 0 only
 * when every member was read (decompressed where needed) and none does. */
int fdl__fatbin_may_contain(const void *image, size_t size, const char *needle, size_t len);

#endif /* FDLINK_IMAGE_H */
