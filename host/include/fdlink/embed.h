/**
 * @file fdlink/embed.h
 * Device code embedded in a program as generated C data (CMake: fdlink_embed; CLI: fdlink embed),
 * so that the program carries its cubins, fatbins or PTX and needs no files at run time.
 *
 * Thread-safety: the generated table is immutable; every function here is safe from any thread.
 */
#ifndef FDLINK_EMBED_H
#define FDLINK_EMBED_H

#include <stddef.h>

#include "fdlink/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Look up an embedded artifact by name (its file name, e.g. "app.cubin"). Defined in the source
 * that `fdlink embed` generates for the program, not in the fdlink library.
 *
 * @param data receives the bytes (64-byte aligned; a NUL byte follows them, so PTX is a string)
 * @param size receives the size in bytes, without that NUL
 * @return FDL_OK, FDL_ENOTFOUND, FDL_EINVAL (NULL argument)
 * Ownership: *data is static data of the program.
 */
int fdl_embedded_find(const char *name, const void **data, size_t *size);

/** Number of embedded artifacts (generated, like fdl_embedded_find). */
size_t fdl_embedded_count(void);

/** Name of artifact @p i, or NULL when out of range (generated). Static string. */
const char *fdl_embedded_name(size_t i);

/** One file to embed: the name it is found by and the path to read. */
typedef struct fdl_embed_item {
    const char *name;
    const char *path;
} fdl_embed_item;

/**
 * Generate the C source that embeds @p n files and defines fdl_embedded_find, fdl_embedded_count
 * and fdl_embedded_name, and write it to @p out_path atomically.
 *
 * @return FDL_OK, FDL_EIO (a file cannot be read, or the output cannot be written: nothing is
 *         left at @p out_path), FDL_EINVAL (duplicate or empty name, no items), FDL_ENOMEM
 * Ownership: nothing retained. Thread-safety: reentrant.
 */
FDL_API int fdl_embed_write(const char *out_path, const fdl_embed_item *items, size_t n,
                            fdl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_EMBED_H */
