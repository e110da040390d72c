/*
 * The ELF reader of elfread.h: 64-bit little-endian files in memory, every read bounds-checked.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>

#include "elfread.h"
#include "internal.h"
#include "formats.h"

void fdl__elf_shdr(const fdl__elf *e, size_t i, fdl__shdr *s)
{
    const unsigned char *h = e->p + e->shoff + (uint64_t)i * e->shentsize;
    s->name = fdl__le32(h);
    s->type = fdl__le32(h + 4);
    s->offset = fdl__le64(h + 24);
    s->size = fdl__le64(h + 32);
    s->link = fdl__le32(h + 40);
    s->info = fdl__le32(h + 44);
    s->entsize = fdl__le64(h + 56);
}

int fdl__elf_open(fdl__elf *e, const unsigned char *p, size_t n, const char **why)
{
    memset(e, 0, sizeof *e);
    e->p = p;
    e->n = n;
    if (n < 64) {
        *why = "a truncated ELF file";
        return 0;
    }
    if (p[4] != 2) {
        *why = "a 32-bit ELF file";
        return 0;
    }
    if (p[5] != 1) {
        *why = "a big-endian ELF file";
        return 0;
    }
    e->type = fdl__le16(p + 16);
    e->machine = fdl__le16(p + 18);
    e->abiversion = p[8];
    e->flags = fdl__le32(p + 48);
    e->shoff = fdl__le64(p + 40);
    e->shentsize = fdl__le16(p + 58);
    e->shnum = fdl__le16(p + 60);
    e->shstrndx = fdl__le16(p + 62);
    if (e->shoff == 0) {
        e->shnum = 0;
        return 1;
    }
    if (e->shentsize < 64 || !fdl__in_range(e->shoff, 64, n)) {
        *why = "an ELF file whose section table lies outside it";
        return 0;
    }
    fdl__shdr zero;
    fdl__elf_shdr(e, 0, &zero);
    if (e->shnum == 0) /* extended numbering: the count is in section 0 */
        e->shnum = zero.size > SIZE_MAX ? SIZE_MAX : (size_t)zero.size;
    if (e->shstrndx == 0xffff)
        e->shstrndx = zero.link;
    size_t bytes;
    if (!fdl__size_mul(&bytes, e->shnum, e->shentsize) || !fdl__in_range(e->shoff, bytes, n)) {
        *why = "an ELF file whose section table lies outside it";
        return 0;
    }
    return 1;
}

int fdl__elf_section_bytes(const fdl__elf *e, const fdl__shdr *s, const unsigned char **data)
{
    *data = NULL;
    if (s->type == FDL__SHT_NOBITS)
        return 1;
    if (!fdl__in_range(s->offset, s->size, e->n))
        return 0;
    *data = e->p + s->offset;
    return 1;
}

const char *fdl__elf_string(const fdl__elf *e, size_t table, uint32_t off)
{
    if (table == 0 || table >= e->shnum)
        return NULL;
    fdl__shdr s;
    fdl__elf_shdr(e, table, &s);
    const unsigned char *d;
    if (s.type == FDL__SHT_NOBITS || !fdl__elf_section_bytes(e, &s, &d) || off >= s.size)
        return NULL;
    const char *str = (const char *)d + off;
    size_t room = (size_t)(s.size - off);
    return memchr(str, '\0', room) ? str : NULL;
}

const char *fdl__elf_section_name(const fdl__elf *e, const fdl__shdr *s)
{
    return fdl__elf_string(e, e->shstrndx, s->name);
}

/* e_flags hold the architecture in bits 8-15 since ELF ABI version 8, before that in 0-7. */
unsigned fdl__elf_cubin_arch(const fdl__elf *e)
{
    if (e->abiversion >= 8 || (e->flags >> 24) != 0)
        return (e->flags >> 8) & 0xff;
    return e->flags & 0xff;
}

const char *fdl__elf_machine_name(unsigned machine)
{
    switch (machine) {
    case 62: return "x86-64";
    case 183: return "AArch64";
    case 21: return "PowerPC64";
    case 3: return "i386";
    default: return NULL;
    }
}

const char *fdl__elf_type_name(unsigned type)
{
    switch (type) {
    case 1: return "object";
    case 2: return "executable";
    case 3: return "shared library";
    default: return "file";
    }
}

int fdl__elf_is_fatbin_section(const char *name)
{
    return name && (strcmp(name, ".nv_fatbin") == 0 || strcmp(name, "__nv_relfatbin") == 0);
}

int fdl__elf_has_device_code(const fdl__elf *e)
{
    for (size_t i = 1; i < e->shnum; i++) {
        fdl__shdr s;
        fdl__elf_shdr(e, i, &s);
        const unsigned char *d;
        if (s.type != FDL__SHT_NOBITS && s.size && fdl__elf_section_bytes(e, &s, &d) &&
            fdl__elf_is_fatbin_section(fdl__elf_section_name(e, &s)))
            return 1;
    }
    return 0;
}
