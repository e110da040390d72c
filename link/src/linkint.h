/*
 * Internals of link/ shared between its files (not installed): kind detection (kind.c), the code
 * images of an input (unpack.c, over the readers of unpack.h), decompression (decompress.c),
 * NVRTC (nvrtc.c) and the driver's cuLink (culink.c).
 */
#ifndef FDLINK_LINKINT_H
#define FDLINK_LINKINT_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/link.h"

/* Magic numbers of the input kinds (DESIGN.md, "Content, not names"). */
#define FDL__FATBIN_MAGIC 0xBA55ED50u /* fatbin container, little-endian u32 */
#define FDL__NVVM_MAGIC 0x7F4E43EDu   /* NVVM container (LTO-IR), little-endian u32 */
#define FDL__EM_CUDA 190              /* ELF e_machine of a cubin */

/* Compression of a fatbin entry's payload (flags of the entry header). */
#define FDL__FATBIN_FLAG_LZ4 0x2000u
#define FDL__FATBIN_FLAG_ZSTD 0x8000u

/* Largest decompressed fatbin entry accepted (a header cannot make us allocate more). */
#define FDL__MAX_IMAGE ((uint64_t)1 << 30)

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
 * Decompress and scan an image once: PTX is scanned, a cubin's symbols and resources read. An
 * image that cannot be decompressed here (no libzstd) becomes opaque with a note.
 * @return FDL_OK, FDL_EPARSE (corrupt payload, malformed ELF, PTX that does not scan), FDL_ENOMEM
 */
int fdl__image_load(fdl__image *img, fdl_error *err);

void fdl__images_free(fdl__images *im);

/* "sm_90" -> 90, "sm_100f" -> 100 (also compute_ and lto_); 0 when not of that form. */
unsigned fdl__arch_number(const char *arch);

/* ---- decompression --------------------------------------------------------------------------- */

/*
 * Decompress a fatbin payload (LZ4 block format through liblz4.so.1, or zstd through
 * libzstd.so.1, each loaded on first use; FDLINK_LIBLZ4 and FDLINK_LIBZSTD name other paths)
 * into exactly @p out_size bytes.
 * @return FDL_OK, FDL_EPARSE (corrupt data or a size that disagrees), FDL_ENOLIB (no liblz4 or
 *         libzstd), FDL_ENOMEM. *out is malloc'ed, the caller's.
 */
int fdl__decompress(unsigned char **out, size_t out_size, const unsigned char *in, size_t in_size,
                    unsigned flags, fdl_error *err);

/* ---- NVRTC ----------------------------------------------------------------------------------- */

/* One header handed to NVRTC in memory. */
typedef struct fdl__nvrtc_header {
    const char *name;
    const char *text;
} fdl__nvrtc_header;

/*
 * Compile CUDA C with NVRTC: @p options as given (NULL-terminated), @p headers in memory.
 * On success *out (malloc'ed, NUL-terminated after *out_size bytes) holds PTX or, with @p ltoir,
 * LTO-IR; *log (malloc'ed, may be NULL) the compiler's log either way.
 * @return FDL_OK, FDL_EPARSE (compile error: err->source @p name, err->line, the first error's
 *         text), FDL_EINVAL (NVRTC refused an option), FDL_ENOLIB, FDL_ENOMEM
 */
int fdl__nvrtc_compile(unsigned char **out, size_t *out_size, char **log, const char *source,
                       size_t size, const char *name, const char *const *options,
                       const fdl__nvrtc_header *headers, size_t nheaders, int ltoir,
                       fdl_error *err);

/* NVRTC's version, loading it if needed. @return FDL_OK, FDL_ENOLIB */
int fdl__nvrtc_version(int *major, int *minor, fdl_error *err);

/*
 * NVRTC's version from its memo in @p dir (libmemo.h), without loading it; only while this
 * process has not loaded it. @return 1 when the memo holds, else 0 (ask fdl__nvrtc_remember)
 */
int fdl__nvrtc_quick_version(const char *dir, int *major, int *minor);

/* NVRTC's version, loading it if needed, memoed in @p dir. @return FDL_OK, FDL_ENOLIB */
int fdl__nvrtc_remember(const char *dir, int *major, int *minor);

/*
 * The places a CUDA toolkit may be, in order: $FDLINK_CUDA_ROOT, $CUDA_PATH, the toolkit fdlink
 * was built with, /usr/local/cuda (empty and repeated ones left out). @return how many
 * (at most @p max); the strings are static or the environment's.
 */
size_t fdl__cuda_roots(const char **roots, size_t max);

/* "<root>/<rel>" of the first root where that file exists; 0 when none. */
int fdl__cuda_find(char *out, size_t size, const char *rel);

/* ---- the driver (cuLink) --------------------------------------------------------------------- */

/* Opaque driver handles, as in cuda.h. */
typedef struct fdl__culink_state fdl__culink_state;

/*
 * The compute capability (major * 10 + minor) of the calling thread's current context's device.
 * @return FDL_OK, FDL_ENOLIB (no driver), FDL_ENODEVICE (no current context), FDL_ECUDA
 */
int fdl__cu_current_cc(int *cc, fdl_error *err);

/* FDL_OK when the calling thread has a current context, else FDL_EINVAL with the culink message. */
int fdl__cu_require_context(fdl_error *err);

/* Load the driver's cuLink entry points. @return FDL_OK, FDL_ENOLIB */
int fdl__cu_load(fdl_error *err);

/* cuLink input types, as CUjitInputType. */
enum {
    FDL__CU_INPUT_CUBIN = 0,
    FDL__CU_INPUT_PTX = 1,
    FDL__CU_INPUT_FATBIN = 2,
    FDL__CU_INPUT_OBJECT = 3,
    FDL__CU_INPUT_LIBRARY = 4
};

/* Options of a cuLink state, turned into CUjit_option arrays by fdl__culink_create. */
typedef struct fdl__culink_options {
    unsigned target;   /* CUjit_target: the arch number, + 0x10000 for 'a', + 0x20000 for 'f' */
    int opt_level;     /* -1: default */
    int debug;
    int lineinfo;
    int verbose;
    int maxrregcount;  /* 0: none */
} fdl__culink_options;

/*
 * A cuLink state whose option arrays and log buffers live in it until fdl__culink_destroy
 * (after cuLinkDestroy).
 */
int fdl__culink_create(fdl__culink_state **out, const fdl__culink_options *opts, fdl_error *err);
int fdl__culink_add(fdl__culink_state *st, int type, const void *data, size_t size,
                    const char *name, int *cu_result);
/* Complete; the cubin is copied into *cubin (malloc'ed) before anything can free it. */
int fdl__culink_complete(fdl__culink_state *st, unsigned char **cubin, size_t *size,
                         int *cu_result);
const char *fdl__culink_info_log(const fdl__culink_state *st);
const char *fdl__culink_error_log(const fdl__culink_state *st);
void fdl__culink_destroy(fdl__culink_state *st);
/* Name of a CUresult ("CUDA_ERROR_INVALID_PTX"), or "CUDA_ERROR_<n>". */
const char *fdl__cu_result_name(int result, char *buf, size_t size);

#endif /* FDLINK_LINKINT_H */
