/*
 * The kernels a module image defines, read from the image itself: for drivers older than CUDA
 * 12.4, which cannot enumerate a module's functions.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "fdlink/ptx.h"
#include "internal.h"

#define SHT_SYMTAB 2
#define STT_FUNC 2
/* st_other flag that marks a kernel (an entry function) in a CUDA ELF image */
#define STO_CUDA_ENTRY 0x10

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Non-zero when [off, off + len) lies within @p size bytes. */
static int within(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

typedef struct name_list {
    char **names;
    size_t n, cap;
} name_list;

static int add_name(name_list *l, const char *name, size_t len)
{
    for (size_t i = 0; i < l->n; i++)
        if (strlen(l->names[i]) == len && memcmp(l->names[i], name, len) == 0)
            return FDL_OK;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 8, bytes;
        char **grown = NULL;
        if (fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(l->names, bytes);
        if (!grown)
            return FDL_ENOMEM;
        l->names = grown;
        l->cap = ncap;
    }
    char *copy = fdl__strndup(name, len);
    if (!copy)
        return FDL_ENOMEM;
    l->names[l->n++] = copy;
    return FDL_OK;
}

/* Kernels of a 64-bit little-endian ELF image; anything malformed ends the walk quietly. */
static int elf_kernels(name_list *l, const unsigned char *p, size_t size)
{
    if (size < 64 || p[4] != 2 || p[5] != 1)
        return FDL_OK;
    uint64_t shoff = rd64(p + 40);
    uint16_t shentsize = rd16(p + 58), shnum = rd16(p + 60);
    if (shentsize < 64 || !within(shoff, (uint64_t)shnum * shentsize, size))
        return FDL_OK;
    for (uint16_t i = 0; i < shnum; i++) {
        const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
        if (rd32(sh + 4) != SHT_SYMTAB)
            continue;
        uint64_t off = rd64(sh + 24), len = rd64(sh + 32), entsize = rd64(sh + 56);
        uint32_t link = rd32(sh + 40);
        if (entsize < 24 || !within(off, len, size) || link >= shnum)
            continue;
        const unsigned char *str = p + shoff + (uint64_t)link * shentsize;
        uint64_t stroff = rd64(str + 24), strlen_ = rd64(str + 32);
        if (!within(stroff, strlen_, size))
            continue;
        for (uint64_t s = 0; s + entsize <= len; s += entsize) {
            const unsigned char *sym = p + off + s;
            uint32_t name = rd32(sym);
            unsigned char info = sym[4], other = sym[5];
            uint16_t shndx = rd16(sym + 6);
            if ((info & 0xf) != STT_FUNC || !(other & STO_CUDA_ENTRY) || shndx == 0 ||
                name >= strlen_)
                continue;
            const char *text = (const char *)p + stroff + name;
            const char *nul = memchr(text, '\0', (size_t)(strlen_ - name));
            if (!nul || nul == text)
                continue;
            int rc = add_name(l, text, (size_t)(nul - text));
            if (rc != FDL_OK)
                return rc;
        }
    }
    return FDL_OK;
}

/* Kernels defined by PTX text; text the scanner cannot read gives none. */
static int ptx_kernels(name_list *l, const char *text, size_t size)
{
    const char *nul = memchr(text, '\0', size);
    size_t len = nul ? (size_t)(nul - text) : size;
    fdl_ptx *ptx = NULL;
    if (fdl_ptx_scan(&ptx, text, len, "module", NULL) != FDL_OK)
        return FDL_OK;
    int rc = FDL_OK;
    for (size_t i = 0; rc == FDL_OK && i < fdl_ptx_count(ptx); i++) {
        const fdl_ptx_func *f = fdl_ptx_get(ptx, i);
        if (f->is_entry && f->is_definition)
            rc = add_name(l, f->name, strlen(f->name));
    }
    fdl_ptx_destroy(ptx);
    return rc;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int fdl__image_kernel_names(char ***names, size_t *count, int *known, const void *image,
                            size_t size)
{
    *names = NULL;
    *count = 0;
    *known = 0;
    const unsigned char *p = image;
    name_list l = {NULL, 0, 0};
    int rc = FDL_OK;
    if (size >= 4 && memcmp(p, "\x7f" "ELF", 4) == 0) {
        rc = elf_kernels(&l, p, size);
        *known = 1;
    } else if (size >= 4 && rd32(p) == 0xBA55ED50u) {
        /* a fatbin: its members may be compressed; not worth unpacking for a diagnostic */
    } else {
        rc = ptx_kernels(&l, image, size);
        *known = 1;
    }
    if (rc != FDL_OK) {
        for (size_t i = 0; i < l.n; i++)
            free(l.names[i]);
        free(l.names);
        *known = 0;
        return rc;
    }
    if (l.n > 1)
        qsort(l.names, l.n, sizeof *l.names, compare_names);
    *names = l.names;
    *count = l.n;
    return FDL_OK;
}
