/*
 * A reader of 64-bit little-endian ELF files in memory (not installed), as cubins and host
 * objects are: the header, the section table and string tables. Every read is bounds-checked
 * against the bytes at hand; fdl__elf_open checks the section table once, so that
 * fdl__elf_shdr may then read any section header below shnum.
 *
 * Why not elfutils' libelf: see link/src/README.md. In short, its errors are generic ("invalid
 * section header") where fdlink says what is wrong, and linking it would make the library depend
 * on libelf.so.1 (and zlib) at run time for what is some 150 lines here.
 */
#ifndef FDLINK_ELFREAD_H
#define FDLINK_ELFREAD_H

#include <stddef.h>
#include <stdint.h>

#define FDL__SHT_PROGBITS 1
#define FDL__SHT_SYMTAB 2
#define FDL__SHT_STRTAB 3
#define FDL__SHT_RELA 4
#define FDL__SHT_DYNSYM 11
#define FDL__SHT_NOBITS 8
#define FDL__SHT_REL 9
#define FDL__SHT_NV_INFO 0x70000000u /* SHT_LOPROC: .nv.info sections */
#define FDL__SHT_CUDA_GLOBAL 0x70000007u /* .nv.global: uninitialised globals, no bytes */
#define FDL__SHT_CUDA_LOCAL 0x70000009u /* .nv.local.<f>: local memory, no bytes */
#define FDL__SHT_CUDA_SHARED 0x7000000au /* .nv.shared.<f>: shared memory, no bytes */
#define FDL__SHT_CUDA_SHARED_RESERVED 0x70000015u /* .nv.shared.reserved.<n>: the same */

/* Whether a section of type @p type occupies no bytes of the file (SHT_NOBITS and the CUDA
 * types that reserve memory only: nvcc gives them the next section's offset, or the section
 * table's, and a size that is the memory's, not the file's). */
static inline int fdl__elf_no_bytes(uint32_t type)
{
    return type == FDL__SHT_NOBITS || type == FDL__SHT_CUDA_GLOBAL || type == FDL__SHT_CUDA_LOCAL ||
           type == FDL__SHT_CUDA_SHARED || type == FDL__SHT_CUDA_SHARED_RESERVED;
}
#define FDL__STO_CUDA_ENTRY 0x10     /* st_other of a kernel */

/* An open ELF file: its bytes and the header fields fdlink reads. */
typedef struct fdl__elf {
    const unsigned char *p;
    size_t n;
    unsigned type, machine, abiversion;
    uint32_t flags;
    uint64_t shoff, phoff;
    size_t shnum, shentsize, shstrndx, phnum, phentsize, ehsize;
    int xshnum, xshstrndx; /* the count and the index came from section 0 (extended numbering) */
    uint64_t bad_at;       /* where fdl__elf_open found what it refused */
} fdl__elf;

/* A section header, the fields fdlink reads. */
typedef struct fdl__shdr {
    uint32_t name, type, link, info;
    uint64_t flags, offset, size, align, entsize;
} fdl__shdr;

/* Whether [off, off + len) lies within n bytes (no overflow). */
static inline int fdl__in_range(uint64_t off, uint64_t len, size_t n)
{
    return off <= n && len <= n - off;
}

/*
 * Open a 64-bit little-endian ELF file of @p n bytes at @p p (which must outlive @p e).
 * @return 1, or 0 with *why ("a truncated ELF file", "an ELF file whose section table lies
 *         outside it", ...) when it is not one or its section table is broken
 */
int fdl__elf_open(fdl__elf *e, const unsigned char *p, size_t n, const char **why);

/* Section header @p i (below e->shnum) into @p s. */
void fdl__elf_shdr(const fdl__elf *e, size_t i, fdl__shdr *s);

/* The bytes of a section into *data (NULL for NOBITS); 0 when they lie outside the file. */
int fdl__elf_section_bytes(const fdl__elf *e, const fdl__shdr *s, const unsigned char **data);

/* The NUL-terminated string at @p off of string table section @p table, or NULL. */
const char *fdl__elf_string(const fdl__elf *e, size_t table, uint32_t off);

/* The name of section @p s, or NULL. */
const char *fdl__elf_section_name(const fdl__elf *e, const fdl__shdr *s);

/*
 * Validate a whole ELF file opened by fdl__elf_open, as a linker reads it, before any linker sees
 * it (nvJitLink and the driver crash on some malformed cubins): the header's fields; the section
 * and program header tables inside the file, of the ELF64 entry sizes, clear of the header and of
 * each other; every section's bytes inside the file, no two overlapping (NOBITS, .nv.shared and
 * empty ones aside, and sections of one type that alias the same bytes, as ptxas writes them), alignments powers of two; string tables NUL-terminated; section names inside the
 * section name table; symbol and relocation tables of whole entries, linked to a table of the
 * right type, every symbol's name inside its string table and its section an existing one,
 * every relocation's symbol inside its table. One pass over the tables, linear in their size.
 * @param whybuf  receives what is wrong ("section 3's bytes (...) lie outside the file")
 * @param at      receives the byte offset of what is wrong (a header field, a table entry)
 * @return 1 when it is valid, 0 (with whybuf and *at) when not, -1 when out of memory
 */
int fdl__elf_validate(const fdl__elf *e, char *whybuf, size_t cap, uint64_t *at);

/* The architecture number of a cubin, from e_flags (90 for sm_90). */
unsigned fdl__elf_cubin_arch(const fdl__elf *e);

/* "x86-64", "AArch64", ... for a host e_machine; NULL when fdlink does not know it. */
const char *fdl__elf_machine_name(unsigned machine);

/* "object", "executable", "shared library", else "file", for e_type. */
const char *fdl__elf_type_name(unsigned type);

/* Whether a section of this name holds fatbins (.nv_fatbin, __nv_relfatbin). */
int fdl__elf_is_fatbin_section(const char *name);

/* Non-zero when a host ELF file has a fatbin section with bytes in it. */
int fdl__elf_has_device_code(const fdl__elf *e);

#endif /* FDLINK_ELFREAD_H */
