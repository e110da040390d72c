/*
 * Internals of the input readers (not installed), shared between the files that read one format
 * each. They stack one way: kind.c's table of names, elfread.c and images.c at the bottom; kind.c
 * (detection), fatbin.c and cubin.c over them; archive.c over kind.c and fatbin.c; unpack.c (fdl__unpack, fdl__image_load,
 * inspection) at the top. formats.h holds what the rest of the library uses.
 */
#ifndef FDLINK_UNPACK_H
#define FDLINK_UNPACK_H

#include <stddef.h>

#include "fdlink/link.h"
#include "formats.h"

/* ---- images.c: the image list ---------------------------------------------------------------- */

/*
 * Append an image. @p base names the input ("k.a(k.o)" for a member), @p entry is non-zero for
 * an entry of a fatbin (named "<base>[sm_90 cubin]"), zero for the input itself. *out points
 * into @p im until it grows. @return FDL_OK, FDL_ENOMEM
 */
int fdl__images_add(fdl__images *im, fdl_input_kind kind, size_t unit, const char *base,
                    const char *member, int entry, unsigned arch, const unsigned char *raw,
                    size_t raw_size, fdl__image **out, fdl_error *err);

/*
 * Append the single image that is the input (or member) itself: PTX, a cubin (its arch from the
 * ELF header) or LTO-IR (its arch from the NVVM container header; opaque).
 * @return FDL_OK, FDL_EPARSE (a truncated NVVM container), FDL_ENOMEM
 */
int fdl__images_add_whole(fdl__images *im, fdl_input_kind kind, const unsigned char *p,
                          size_t n, const char *base, const char *member, fdl_error *err);

/*
 * Validate a cubin image once its bytes are at hand (not compressed, or decompressed); other
 * images pass. @return as fdl__elf_check
 */
int fdl__image_validate(fdl__image *img, fdl_error *err);

/* Point the public fields at the image's own storage (after the array moved, or a buffer). */
void fdl__image_fix(fdl__image *img);

/* Set the architecture number and its name ("sm_90", "compute_90", "lto_90" by kind). */
void fdl__image_set_arch(fdl__image *img, unsigned number);

/* ---- kind.c: names and detection -------------------------------------------------------------- */

/* The short name of an image of @p kind inside a container ("ptx", "cubin", "ltoir", "entry"). */
const char *fdl__kind_image_name(fdl_input_kind kind);

/* What some bytes are. */
typedef struct fdl__sniffed {
    fdl_input_kind kind; /* FDL_KIND_AUTO: none of them */
    char what[160];      /* what the bytes are, for messages */
} fdl__sniffed;

/* Sniff @p n bytes at @p p; @p name (may be NULL) breaks the tie for CUDA C by its extension. */
void fdl__sniff(fdl__sniffed *s, const unsigned char *p, size_t n, const char *name);

/* ---- fatbin.c: fatbin containers ------------------------------------------------------------- */

/*
 * Every container in @p n bytes at @p p (a fatbin file, or a fatbin section: several containers,
 * zero padding between them). @p at is the region's offset in the input, for messages; @p input
 * names the input in them, @p base and @p member name the images.
 * @return FDL_OK, FDL_EPARSE (the byte offset of what is malformed), FDL_ENOMEM
 */
int fdl__fatbin_parse(fdl__images *im, const unsigned char *p, size_t n, size_t at,
                      const char *input, const char *base, const char *member, fdl_error *err);

/*
 * The fatbin sections of a host object, as fdl__fatbin_parse.
 * @return FDL_OK, FDL_EPARSE, FDL_EKIND (no fatbin section), FDL_ENOMEM
 */
int fdl__object_parse(fdl__images *im, const unsigned char *p, size_t n, size_t at,
                      const char *input, const char *base, const char *member, fdl_error *err);

/* ---- archive.c: static libraries ------------------------------------------------------------- */

/*
 * The device code of every member of an ar archive, named "<input>(<member>)".
 * @return FDL_OK, FDL_EPARSE (malformed header or member), FDL_ENOMEM
 */
int fdl__archive_parse(fdl__images *im, const unsigned char *p, size_t n, const char *input,
                       fdl_error *err);


/* ---- cubin.c: a cubin's symbols and resources ------------------------------------------------ */

/*
 * Read the (decompressed) cubin of @p img: its symbols, relocatable or not, its arch when not
 * known yet, and per kernel its registers and local, shared and constant memory.
 * @return FDL_OK, FDL_EPARSE (not a valid cubin; malformed symbol table), FDL_ENOMEM
 */
int fdl__cubin_load(fdl__image *img, fdl_error *err);

#endif /* FDLINK_UNPACK_H */
