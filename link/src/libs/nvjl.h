/*
 * nvJitLink, loaded at run time (internal to link/). The table of entry points is filled once
 * (pthread_once) the first time it is needed and is read-only after; a failed load is remembered
 * and reported to every later caller.
 */
#ifndef FDLINK_NVJL_H
#define FDLINK_NVJL_H

#include <stddef.h>
#include <stdint.h>

/* Only the types: the header's inline wrappers call versioned symbols (__nvJitLinkCreate_13_0),
 * which exist only in the library of that version. The plain names are resolved with dlsym. */
#define NVJITLINK_NO_INLINE
#include <nvJitLink.h>

#include "fdlink/error.h"
#include "libmemo.h"

/* Entry points of nvJitLink, by their plain exported names (12.x and 13.x export them). */
typedef struct fdl__nvjl {
    nvJitLinkResult (*create)(nvJitLinkHandle *handle, uint32_t num_options, const char **options);
    nvJitLinkResult (*destroy)(nvJitLinkHandle *handle);
    nvJitLinkResult (*add_data)(nvJitLinkHandle handle, nvJitLinkInputType type, const void *data,
                                size_t size, const char *name);
    nvJitLinkResult (*complete)(nvJitLinkHandle handle);
    nvJitLinkResult (*get_linked_cubin_size)(nvJitLinkHandle handle, size_t *size);
    nvJitLinkResult (*get_linked_cubin)(nvJitLinkHandle handle, void *cubin);
    nvJitLinkResult (*get_error_log_size)(nvJitLinkHandle handle, size_t *size);
    nvJitLinkResult (*get_error_log)(nvJitLinkHandle handle, char *log);
    nvJitLinkResult (*get_info_log_size)(nvJitLinkHandle handle, size_t *size);
    nvJitLinkResult (*get_info_log)(nvJitLinkHandle handle, char *log);
    nvJitLinkResult (*get_linked_ptx_size)(nvJitLinkHandle handle, size_t *size);
    nvJitLinkResult (*get_linked_ptx)(nvJitLinkHandle handle, char *ptx);
    /* nvJitLinkVersion appeared in 12.3: NULL when the library predates it */
    nvJitLinkResult (*version)(unsigned int *major, unsigned int *minor);
} fdl__nvjl;

/*
 * The entry points, loading nvJitLink on first use: FDLINK_NVJITLINK (a path) when set, and then
 * nothing else; otherwise libnvJitLink.so.13, libnvJitLink.so, then the toolkit's lib64.
 * @return FDL_OK, FDL_ENOLIB (the same error every time once a load failed)
 * Ownership: *out is static and read-only. Thread-safety: safe.
 */
int fdl__nvjl_get(const fdl__nvjl **out, fdl_error *err);

/* nvJitLink as libmemo.h memos its version (static). */
const fdl__libspec *fdl__nvjl_spec(void);

/* Whether fdl__nvjl_get has loaded (or failed to load) the library: then use it, not a memo. */
int fdl__nvjl_tried(void);

/*
 * Load nvJitLink (as fdl__nvjl_get) and memo its version in @p dir (the cache directory, may be
 * NULL). @return 1 and the library's identity in @p id, or 0 (not loaded, or nothing to memo)
 */
int fdl__nvjl_remember(const char *dir, unsigned char id[FDL__LIBMEMO_ID_SIZE]);

/* Name of an nvJitLinkResult ("NVJITLINK_ERROR_PTX_COMPILE"); static string. */
const char *fdl__nvjl_result_name(int result);

#endif /* FDLINK_NVJL_H */
