/*
 * link/src/formats: the input kinds and their code images, what the rest of the library (the
 * folders above, host/, gen/) uses of them: kind detection (kind.c), the code images of an input
 * (unpack.c, over the readers of unpack.h), the little-endian byte readers. Not installed.
 */
#ifndef FDLINK_FORMATS_H
#define FDLINK_FORMATS_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/link.h"
#include "libs.h" /* fdl__decompress and the fatbin compression flags */

/* Magic numbers of the input kinds (DESIGN.md, "Content, not names"). */
#define FDL__FATBIN_MAGIC 0xBA55ED50u /* fatbin container, little-endian u32 */
#define FDL__NVVM_MAGIC 0x7F4E43EDu   /* NVVM container (LTO-IR), little-endian u32 */
#define FDL__EM_CUDA 190              /* ELF e_machine of a cubin */

/* ---- little-endian reads (callers check the bounds) ---------------------------------------- */

static inline uint16_t fdl__le16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t fdl__le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t fdl__le64(const unsigned char *p)
{
    return (uint64_t)fdl__le32(p) | (uint64_t)fdl__le32(p + 4) << 32;
}

/* ---- code images ----------------------------------------------------------------------------- */

/* One code image of an input; `pub` is what fdl_inspection_image shows. */
typedef struct fdl__image {
    fdl_image pub;
    size_t unit;           /* images of one compilation unit (one fatbin container) share it */
    int loaded;            /* fdl__image_load ran */
    int opaque;            /* the content is not known (LTO-IR; no decompressor) */
    int validated;         /* a cubin whose ELF passed fdl__elf_validate */
    const unsigned char *raw; /* the payload as stored (compressed or not): into the input */
    size_t raw_size;
    uint64_t full_size;    /* the decompressed size the header states */
    unsigned flags;        /* FDL__FATBIN_FLAG_* */
    const unsigned char *bytes; /* the payload, decompressed: raw or owned */
    size_t nbytes;
    unsigned char *owned;
    fdl_ptx *ptx;
    fdl_symbol *syms;
    size_t nsyms;
    char *name_buf;
    char *member_buf;
    char *note_buf;
    char arch_buf[24];
    char version_buf[16];
} fdl__image;

typedef struct fdl__images {
    fdl__image *v;
    size_t n;
    size_t cap;
    size_t nunits;
    unsigned link_arch;    /* set by a link (fdl__unpack_for_link): its architecture number */
} fdl__images;

/*
 * Validate the ELF file of @p n bytes at @p p whole (fdl__elf_validate, images.c), before any
 * linker or the driver sees it. @p what is "cubin" or "host object"; @p at is its offset in the
 * input named @p name.
 * @return FDL_OK, FDL_EPARSE ("NAME: malformed cubin: WHAT IS WRONG (at byte N)"), FDL_ENOMEM
 */
int fdl__elf_check(const unsigned char *p, size_t n, const char *name, const char *what,
                   uint64_t at, fdl_error *err);

/*
 * Recognise an input's kind (fdl_input_detect). @p stated is the caller's kind or FDL_KIND_AUTO;
 * a stated binary kind must carry its magic, stated PTX must look like PTX. Errors name @p name.
 */
int fdl__detect(fdl_input_kind *out, const unsigned char *p, size_t n, const char *name,
                fdl_input_kind stated, fdl_error *err);

/*
 * Break an input of a known kind into its images, without decompressing or scanning them (see
 * fdl__image_load). The images point into @p p, which must outlive them. A CUDA input has none.
 * @return FDL_OK, FDL_EPARSE (malformed container: the byte offset), FDL_EKIND, FDL_ENOMEM
 */
int fdl__unpack(fdl__images *out, const unsigned char *p, size_t n, const char *name,
                fdl_input_kind kind, fdl_error *err);

/*
 * fdl__unpack for a link for architecture @p arch (a number, 90 for sm_90; 0: none known): a
 * container's cubin for another architecture is validated no more strictly than the linker
 * needs (issue 34): nvJitLink reads only the member it links, so a malformed one for another
 * architecture becomes an opaque image with a note, never chosen, instead of an error.
 */
int fdl__unpack_for_link(fdl__images *out, const unsigned char *p, size_t n, const char *name,
                         fdl_input_kind kind, unsigned arch, fdl_error *err);

/*
 * Decompress and scan an image once: PTX is scanned, a cubin's symbols and resources read. An
 * image that cannot be decompressed here (no libzstd) becomes opaque with a note.
 * @return FDL_OK, FDL_EPARSE (corrupt payload, malformed ELF, PTX that does not scan), FDL_ENOMEM
 */
int fdl__image_load(fdl__image *img, fdl_error *err);

void fdl__images_free(fdl__images *im);

/* "sm_90" -> 90, "sm_100f" -> 100 (also compute_ and lto_); 0 when not of that form. */
unsigned fdl__arch_number(const char *arch);

/* ---- .nv.info (cubin.c; host/'s parameter counts read it too) ------------------------------ */

/*
 * The EIATTR attributes of a cubin's .nv.info sections (SHT_LOPROC): a format byte, an
 * attribute byte, then a 16-bit value, or for format FDL__EIFMT_SVAL a 16-bit size and that many
 * bytes. Those read here: a kernel's registers and frame size in .nv.info ({u32 symbol index,
 * u32 value}); in .nv.info.<kernel>, each parameter ({u32 index, u16 ordinal, u16 offset, u32
 * flags (size in bits 18..31)}) and the cooperative-groups instructions of the kernel, which the
 * driver adapts to the launch. nvcc 13 writes those for a kernel that syncs its grid
 * (cg::this_grid().sync(): the barrier instructions of the sync), and also for block- and
 * tile-level groups (cg::this_thread_block().sync(), cg::reduce over a tile, cub's block
 * reductions): the attribute says "may need a cooperative launch", not "needs" one.
 */
#define FDL__EIFMT_SVAL 4
#define FDL__EIATTR_FRAME_SIZE 0x11
#define FDL__EIATTR_KPARAM_INFO 0x17
#define FDL__EIATTR_COOP_GROUP_INSTR_OFFSETS 0x28
#define FDL__EIATTR_REGCOUNT 0x2f

/* One attribute of a .nv.info section: its format and number, its value's @p len bytes at @p v
 * (none but for FDL__EIFMT_SVAL). */
typedef struct fdl__nv_attr {
    unsigned fmt, attr;
    const unsigned char *v;
    uint64_t len;
} fdl__nv_attr;

/*
 * The attribute at *off of the .nv.info section @p d (@p size bytes): 1 with *a, *off past it;
 * 0 at the end (fewer than 4 bytes left: *off == @p size when the section is whole); -1 where it
 * is malformed (a format this reader does not know, a value past the end): stop rather than guess.
 */
int fdl__nv_info_next(const unsigned char *d, uint64_t size, uint64_t *off, fdl__nv_attr *a);

/* What a kernel's .nv.info.<kernel> section says of it. */
typedef struct fdl__nv_kernel {
    size_t nparams; /* one past the highest ordinal of its KPARAM_INFO (none: it takes none) */
    int coop;       /* it lists cooperative-groups instructions (COOP_GROUP_INSTR_OFFSETS) */
    size_t *sizes;  /* nparams bytes, each parameter's (issue 34); NULL: none, or out of memory */
} fdl__nv_kernel;

/*
 * Read the .nv.info.<kernel> section @p d (@p size bytes) into *k. @return 1, or 0 when the
 * section is malformed (a parameter's attribute not a 12-byte SVAL, bytes left over): *k then
 * owns nothing. Ownership: k->sizes is the caller's (free).
 */
int fdl__nv_info_kernel(const unsigned char *d, uint64_t size, fdl__nv_kernel *k);

/* (archive.c, for core/'s nvJitLink runs) */
/*
 * The archive as nvJitLink should be given it: nvJitLink stops at an empty member and reads a BSD
 * long name ("#1/N") as the member's first bytes, so that what fdl__archive_parse found would be
 * "defined in no input" at the link. When the archive has either, *out is a GNU archive of the
 * same members with bytes, in order, their names in a long-name table (no symbol table, which
 * nvJitLink does not need). @return 1 (*out malloc'd, *nout bytes), 0 (give it as it is), -1 out
 * of memory
 */
int fdl__archive_for_linker(const unsigned char *p, size_t n, unsigned char **out, size_t *nout);

#endif /* FDLINK_FORMATS_H */
