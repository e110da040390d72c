/*
 * A cubin's content: its symbols (kernels, functions, variables; defined or not, weak or not)
 * from the ELF symbol table, and each kernel's resources: registers and local memory from the
 * EIATTR attributes of .nv.info, shared and constant memory from the sizes of its
 * .nv.shared.<f> and .nv.constant0.<f> sections.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elfread.h"
#include "internal.h"
#include "formats.h"
#include "unpack.h"

static int push_symbol(fdl__image *img, size_t *cap, const char *name, fdl_symbol_kind kind,
                       int defined, int weak)
{
    if (img->nsyms == *cap) {
        size_t ncap = *cap ? *cap : 8, bytes;
        fdl_symbol *grown = NULL;
        if ((!*cap || fdl__size_mul(&ncap, *cap, 2)) &&
            fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(img->syms, bytes);
        if (!grown)
            return 0;
        img->syms = grown;
        *cap = ncap;
    }
    char *copy = fdl__strdup(name);
    if (!copy)
        return 0;
    fdl_symbol *s = &img->syms[img->nsyms++];
    s->name = copy;
    s->kind = kind;
    s->defined = defined;
    s->weak = weak;
    s->registers = -1;
    s->local_bytes = -1;
    s->shared_bytes = defined && kind != FDL_SYMBOL_VARIABLE ? 0 : -1;
    s->const_bytes = defined && kind == FDL_SYMBOL_KERNEL ? 0 : -1;
    return 1;
}

static fdl_symbol *find_symbol(fdl__image *img, const char *name)
{
    for (size_t i = 0; i < img->nsyms; i++)
        if (img->syms[i].defined && strcmp(img->syms[i].name, name) == 0)
            return &img->syms[i];
    return NULL;
}

int fdl__nv_info_next(const unsigned char *d, uint64_t size, uint64_t *off, fdl__nv_attr *a)
{
    if (size - *off < 4)
        return 0;
    a->fmt = d[*off];
    a->attr = d[*off + 1];
    a->len = 0;
    if (a->fmt == FDL__EIFMT_SVAL)
        a->len = fdl__le16(d + *off + 2);
    else if (a->fmt < 1 || a->fmt > 3)
        return -1;
    if (a->len > size - *off - 4)
        return -1;
    a->v = d + *off + 4;
    *off += 4 + a->len;
    return 1;
}

int fdl__nv_info_kernel(const unsigned char *d, uint64_t size, fdl__nv_kernel *k)
{
    uint64_t off = 0;
    size_t n = 0;
    fdl__nv_attr a;
    int more;
    k->nparams = 0;
    k->coop = 0;
    k->sizes = NULL;
    while ((more = fdl__nv_info_next(d, size, &off, &a)) == 1) {
        if (a.attr == FDL__EIATTR_KPARAM_INFO) {
            if (a.fmt != FDL__EIFMT_SVAL || a.len < 12)
                return 0;
            size_t ordinal = fdl__le16(a.v + 4);
            if (ordinal + 1 > n)
                n = ordinal + 1;
        }
        if (a.attr == FDL__EIATTR_COOP_GROUP_INSTR_OFFSETS && a.fmt == FDL__EIFMT_SVAL &&
            a.len >= 4)
            k->coop = 1;
    }
    if (more < 0 || off != size)
        return 0; /* say nothing rather than guess */
    k->nparams = n;
    if (n && n <= 65536 && (k->sizes = calloc(n, sizeof *k->sizes))) {
        /* the attributes again (all well-formed now), each size at its ordinal */
        for (off = 0; fdl__nv_info_next(d, size, &off, &a) == 1;)
            if (a.attr == FDL__EIATTR_KPARAM_INFO)
                k->sizes[fdl__le16(a.v + 4)] = (fdl__le32(a.v + 8) >> 18) & 0x3fff;
    }
    return 1;
}

/* EIATTR_REGCOUNT and EIATTR_FRAME_SIZE of a .nv.info section: {symbol index, value}. */
static void read_nv_info(fdl__image *img, const unsigned char *d, uint64_t size,
                         const size_t *index, size_t nindex)
{
    uint64_t off = 0;
    fdl__nv_attr a;
    while (fdl__nv_info_next(d, size, &off, &a) == 1) {
        if (a.fmt == FDL__EIFMT_SVAL && a.len >= 8 &&
            (a.attr == FDL__EIATTR_REGCOUNT || a.attr == FDL__EIATTR_FRAME_SIZE)) {
            uint32_t sym = fdl__le32(a.v), value = fdl__le32(a.v + 4);
            if (sym < nindex && index[sym] != SIZE_MAX) {
                fdl_symbol *s = &img->syms[index[sym]];
                if (a.attr == FDL__EIATTR_REGCOUNT)
                    s->registers = (long)value;
                else
                    s->local_bytes = (long)value;
            }
        }
    }
}

int fdl__cubin_load(fdl__image *img, fdl_error *err)
{
    const char *name = img->pub.name;
    fdl__elf e;
    const char *why = NULL;
    int rc = FDL_OK;
    size_t *index = NULL, cap = 0, nsym = 0;
    int reserved_smem = 0;
    if (!fdl__elf_open(&e, img->bytes, img->nbytes, &why))
        return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "not a valid cubin: %s", why);
    if (e.machine != FDL__EM_CUDA)
        return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL,
                          "not a cubin: ELF machine %u, expected %d", e.machine, FDL__EM_CUDA);
    img->pub.relocatable = e.type == 1;
    unsigned arch = fdl__elf_cubin_arch(&e);
    if (arch && !img->pub.arch_number)
        fdl__image_set_arch(img, arch);

    for (size_t i = 1; i < e.shnum && rc == FDL_OK; i++) {
        fdl__shdr s;
        fdl__elf_shdr(&e, i, &s);
        if (s.type != FDL__SHT_SYMTAB)
            continue;
        const unsigned char *d;
        if (!fdl__elf_section_bytes(&e, &s, &d) || s.entsize < 24) {
            rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL,
                            "malformed symbol table (section %zu)", i);
            goto cleanup;
        }
        nsym = (size_t)(s.size / s.entsize);
        free(index);
        index = malloc((nsym ? nsym : 1) * sizeof *index);
        if (!index) {
            rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
            goto cleanup;
        }
        for (size_t k = 0; k < nsym; k++) {
            const unsigned char *sym = d + k * s.entsize;
            index[k] = SIZE_MAX;
            unsigned bind = sym[4] >> 4, type = sym[4] & 0xf, other = sym[5];
            unsigned shndx = fdl__le16(sym + 6);
            /* STT_OBJECT (1) and, in nvcc 13's relocatable cubins, the processor-specific
             * object type 13 of __device__ and __constant__ variables (issue 34) */
            if (type == 13)
                type = 1;
            if (bind == 0 || (type != 1 && type != 2))
                continue; /* local, or not a function or variable */
            const char *sname = fdl__elf_string(&e, s.link, fdl__le32(sym));
            if (sname && strcmp(sname, ".nv.reservedSmem.offset0") == 0)
                reserved_smem = 1;
            if (!sname || !sname[0] || sname[0] == '.')
                continue;
            int defined = shndx != 0, weak = bind == 2;
            if (type == 1 && !defined && weak)
                continue; /* toolchain placeholders (__UDT, __UFT, ...) */
            fdl_symbol_kind kind = type == 1                  ? FDL_SYMBOL_VARIABLE
                                   : (other & FDL__STO_CUDA_ENTRY) ? FDL_SYMBOL_KERNEL
                                                              : FDL_SYMBOL_FUNCTION;
            if (!push_symbol(img, &cap, sname, kind, defined, weak)) {
                rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
                goto cleanup;
            }
            index[k] = img->nsyms - 1;
        }
        break; /* one symbol table per cubin */
    }
    /* Linked (executable) cubins whose code uses the shared memory the system reserves per
     * block (sm_90 and later: they refer to .nv.reservedSmem.offset0, and nvcc's carry a
     * .nv.shared.reserved.0 section) lay those 1 KiB at the start of each kernel's
     * .nv.shared.<f>; ptxas and the driver report the kernel's own part. */
    long reserved = 0;
    for (size_t i = 1; i < e.shnum; i++) {
        fdl__shdr s;
        fdl__elf_shdr(&e, i, &s);
        const char *sname = fdl__elf_section_name(&e, &s);
        if (sname && strncmp(sname, ".nv.shared.reserved.", 20) == 0)
            reserved_smem = 1;
    }
    if (e.type == 2 && reserved_smem)
        reserved = 1024;
    /* resources: .nv.info attributes, .nv.shared.<f> and .nv.constant0.<f> sizes */
    for (size_t i = 1; i < e.shnum; i++) {
        fdl__shdr s;
        fdl__elf_shdr(&e, i, &s);
        const char *sname = fdl__elf_section_name(&e, &s);
        if (!sname)
            continue;
        const unsigned char *d;
        if (s.type == FDL__SHT_NV_INFO && strcmp(sname, ".nv.info") == 0) {
            if (index && fdl__elf_section_bytes(&e, &s, &d) && d)
                read_nv_info(img, d, s.size, index, nsym);
        } else if (strncmp(sname, ".nv.shared.", 11) == 0) {
            fdl_symbol *f = find_symbol(img, sname + 11);
            if (f && f->kind != FDL_SYMBOL_VARIABLE && s.size <= (uint64_t)LONG_MAX)
                f->shared_bytes = (long)s.size >= reserved ? (long)s.size - reserved
                                                           : (long)s.size;
        } else if (strncmp(sname, ".nv.constant0.", 14) == 0) {
            fdl_symbol *f = find_symbol(img, sname + 14);
            if (f && f->kind != FDL_SYMBOL_VARIABLE && s.size <= (uint64_t)LONG_MAX)
                f->const_bytes = (long)s.size;
        }
    }
cleanup:
    free(index);
    return rc;
}
