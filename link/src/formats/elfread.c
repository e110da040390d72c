/*
 * The ELF reader of elfread.h: 64-bit little-endian files in memory, every read bounds-checked.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfread.h"
#include "internal.h"
#include "formats.h"

void fdl__elf_shdr(const fdl__elf *e, size_t i, fdl__shdr *s)
{
    const unsigned char *h = e->p + e->shoff + (uint64_t)i * e->shentsize;
    s->name = fdl__le32(h);
    s->type = fdl__le32(h + 4);
    s->flags = fdl__le64(h + 8);
    s->offset = fdl__le64(h + 24);
    s->size = fdl__le64(h + 32);
    s->link = fdl__le32(h + 40);
    s->info = fdl__le32(h + 44);
    s->align = fdl__le64(h + 48);
    s->entsize = fdl__le64(h + 56);
}

int fdl__elf_open(fdl__elf *e, const unsigned char *p, size_t n, const char **why)
{
    memset(e, 0, sizeof *e);
    e->p = p;
    e->n = n;
    e->bad_at = n;
    if (n < 64) {
        *why = "a truncated ELF file";
        return 0;
    }
    e->bad_at = 4;
    if (p[4] != 2) {
        *why = "a 32-bit ELF file";
        return 0;
    }
    e->bad_at = 5;
    if (p[5] != 1) {
        *why = "a big-endian ELF file";
        return 0;
    }
    e->type = fdl__le16(p + 16);
    e->machine = fdl__le16(p + 18);
    e->abiversion = p[8];
    e->flags = fdl__le32(p + 48);
    e->phoff = fdl__le64(p + 32);
    e->ehsize = fdl__le16(p + 52);
    e->phentsize = fdl__le16(p + 54);
    e->phnum = fdl__le16(p + 56);
    e->shoff = fdl__le64(p + 40);
    e->shentsize = fdl__le16(p + 58);
    e->shnum = fdl__le16(p + 60);
    e->shstrndx = fdl__le16(p + 62);
    if (e->shoff == 0) {
        e->shnum = 0;
        return 1;
    }
    e->bad_at = 40;
    if (e->shentsize < 64 || !fdl__in_range(e->shoff, 64, n)) {
        *why = "an ELF file whose section table lies outside it";
        return 0;
    }
    fdl__shdr zero;
    fdl__elf_shdr(e, 0, &zero);
    if (e->shnum == 0) { /* extended numbering: the count is in section 0 */
        e->shnum = zero.size > SIZE_MAX ? SIZE_MAX : (size_t)zero.size;
        e->xshnum = 1;
    }
    if (e->shstrndx == 0xffff) {
        e->shstrndx = zero.link;
        e->xshstrndx = 1;
    }
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
    if (fdl__elf_no_bytes(s->type))
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
    if (fdl__elf_no_bytes(s.type) || !fdl__elf_section_bytes(e, &s, &d) || off >= s.size)
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
        if (!fdl__elf_no_bytes(s.type) && s.size && fdl__elf_section_bytes(e, &s, &d) &&
            fdl__elf_is_fatbin_section(fdl__elf_section_name(e, &s)))
            return 1;
    }
    return 0;
}

/* ---- validation ------------------------------------------------------------------------------ */

/* A byte range of the file that nothing else may share: the header, a table, a section. */
typedef struct elf_range {
    uint64_t begin, end;
    uint32_t type; /* a section's type, 0 for the header and tables */
    size_t what; /* SIZE_MAX - 2: the ELF header; SIZE_MAX - 1: the section table; SIZE_MAX:
                  * the program header table; else a section's index */
} elf_range;

#define RANGE_EHDR (SIZE_MAX - 2)
#define RANGE_SHDRS (SIZE_MAX - 1)
#define RANGE_PHDRS SIZE_MAX

static int range_order(const void *a, const void *b)
{
    const elf_range *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static void range_name(const elf_range *r, char *buf, size_t cap)
{
    if (r->what == RANGE_EHDR)
        snprintf(buf, cap, "the ELF header");
    else if (r->what == RANGE_SHDRS)
        snprintf(buf, cap, "the section header table");
    else if (r->what == RANGE_PHDRS)
        snprintf(buf, cap, "the program header table");
    else
        snprintf(buf, cap, "section %zu", r->what);
}

/* Whether a section of this type may share its bytes exactly with another such section. */
static int aliasable(uint32_t type)
{
    return type != 0 && type != FDL__SHT_SYMTAB && type != FDL__SHT_STRTAB &&
           type != FDL__SHT_RELA && type != FDL__SHT_REL && type != FDL__SHT_DYNSYM;
}

static int is_pow2_or_zero(uint64_t v)
{
    return (v & (v - 1)) == 0;
}

/* Offset of field @p field of section header @p i. */
static uint64_t shdr_at(const fdl__elf *e, size_t i, unsigned field)
{
    return e->shoff + (uint64_t)i * e->shentsize + field;
}

/* Say what is wrong and where; 0, for `return bad(...)`. */
static int bad(char *whybuf, size_t cap, uint64_t *at, uint64_t pos, const char *fmt, ...)
    FDL__PRINTF(5, 6);
static int bad(char *whybuf, size_t cap, uint64_t *at, uint64_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (whybuf && cap)
        vsnprintf(whybuf, cap, fmt, ap);
    va_end(ap);
    *at = pos;
    return 0;
}

/* The string table section @p i (below shnum): a STRTAB inside the file whose last byte is a NUL;
 * its size in *size. */
static int string_table(const fdl__elf *e, size_t i, uint64_t *size)
{
    fdl__shdr s;
    fdl__elf_shdr(e, i, &s);
    const unsigned char *d;
    if (s.type != FDL__SHT_STRTAB || !s.size || !fdl__elf_section_bytes(e, &s, &d) ||
        d[s.size - 1] != '\0')
        return 0;
    *size = s.size;
    return 1;
}

/* The header and the program header table. */
static int check_header(const fdl__elf *e, char *whybuf, size_t cap, uint64_t *at)
{
    const unsigned char *p = e->p;
    /* the header (fdl__elf_open checked the class, the byte order and the size) */
    if (p[6] != 1)
        return bad(whybuf, cap, at, 6, "ELF version %u, not 1", p[6]);
    if (e->type < 1 || e->type > 3)
        return bad(whybuf, cap, at, 16, "ELF type %u is none of relocatable, executable, shared", e->type);
    if (e->ehsize != 64)
        return bad(whybuf, cap, at, 52, "an ELF header size of %zu bytes, not 64", e->ehsize);
    size_t raw_shnum = fdl__le16(p + 60);
    if (e->shoff == 0 && raw_shnum != 0)
        return bad(whybuf, cap, at, 40, "a section table at byte 0, inside the ELF header");
    if (e->shoff == 0)
        return 1; /* no sections (a cubin with none is refused by its reader) */
    if (e->shentsize != 64)
        return bad(whybuf, cap, at, 58, "section header entries of %zu bytes, not 64", e->shentsize);
    /* no alignment asked of the tables or the sections in the file: the ELF specification asks
     * none (sh_addralign constrains addresses, not offsets), readelf and the driver take any,
     * every field here is read a byte at a time, and nvJitLink 13.5 writes its cubins' section
     * and program header tables at 2 or 4 mod 8 (issue 40) */
    if (e->shnum > e->n / 64) /* fdl__elf_open checked the table lies inside the file */
        return bad(whybuf, cap, at, 60, "%zu sections do not fit in the file", e->shnum);
    if (e->phnum) {
        size_t bytes;
        if (e->phnum == 0xffff)
            return bad(whybuf, cap, at, 56, "extended program header numbering, which no cubin uses");
        if (e->phentsize != 56)
            return bad(whybuf, cap, at, 54, "program header entries of %zu bytes, not 56", e->phentsize);
        if (!fdl__size_mul(&bytes, e->phnum, 56) || !fdl__in_range(e->phoff, bytes, e->n))
            return bad(whybuf, cap, at, 32, "a program header table (%zu entries at byte %llu) outside the file",
                e->phnum, (unsigned long long)e->phoff);
        for (size_t i = 0; i < e->phnum; i++) {
            const unsigned char *ph = p + e->phoff + i * 56;
            uint64_t off = fdl__le64(ph + 8), filesz = fdl__le64(ph + 32);
            uint64_t memsz = fdl__le64(ph + 40), align = fdl__le64(ph + 48);
            if (!fdl__in_range(off, filesz, e->n))
                return bad(whybuf, cap, at, e->phoff + i * 56 + 8, "segment %zu's bytes (%llu at byte %llu) lie outside "
                    "the file", i, (unsigned long long)filesz, (unsigned long long)off);
            if (filesz > memsz)
                return bad(whybuf, cap, at, e->phoff + i * 56 + 32, "segment %zu holds more bytes in the file (%llu) "
                    "than in memory (%llu)", i, (unsigned long long)filesz,
                    (unsigned long long)memsz);
            if (!is_pow2_or_zero(align))
                return bad(whybuf, cap, at, e->phoff + i * 56 + 48, "segment %zu's alignment %llu is not a power of two",
                    i, (unsigned long long)align);
        }
    }
    return 1;
}

/* The sections, each one's table and names; @p ranges gets what each occupies of the file. */
static int check_sections(const fdl__elf *e, elf_range *ranges, size_t *count, char *whybuf,
                          size_t cap, uint64_t *at)
{
    const unsigned char *p = e->p;
    size_t nranges = 0;
    /* a cubin or host object has a name table and code: one with no section beyond the null
     * one holds nothing to link, and linkers are not tested on it (found by fuzz_bin) */
    if (e->shnum < 2)
        return bad(whybuf, cap, at, 60, "no sections (%zu section header%s)", e->shnum,
                   e->shnum == 1 ? "" : "s");
    if (e->shstrndx >= e->shnum || e->shstrndx == 0)
        return bad(whybuf, cap, at, e->xshstrndx ? shdr_at(e, 0, 40) : 62,
            "section name table index %zu, of %zu sections", e->shstrndx, e->shnum);
    uint64_t shstrsize = 0;
    if (e->shnum > 1 && !string_table(e, e->shstrndx, &shstrsize))
        return bad(whybuf, cap, at, shdr_at(e, e->shstrndx, 4), "section %zu, the section name table, is not a string "
            "table inside the file ending with a NUL", e->shstrndx);
    ranges[nranges++] = (elf_range){0, 64, 0, RANGE_EHDR};
    ranges[nranges++] = (elf_range){e->shoff, e->shoff + (uint64_t)e->shnum * 64, 0, RANGE_SHDRS};
    if (e->phnum)
        ranges[nranges++] = (elf_range){e->phoff, e->phoff + (uint64_t)e->phnum * 56, 0,
                                            RANGE_PHDRS};
    for (size_t i = 1; i < e->shnum; i++) {
        fdl__shdr s;
        fdl__elf_shdr(e, i, &s);
        if (s.name >= shstrsize && !(s.name == 0 && shstrsize == 0))
            return bad(whybuf, cap, at, shdr_at(e, i, 0), "section %zu's name (offset %u) lies past the section name "
                "table's %llu bytes", i, s.name, (unsigned long long)shstrsize);
        if (!is_pow2_or_zero(s.align))
            return bad(whybuf, cap, at, shdr_at(e, i, 48), "section %zu's alignment %llu is not a power of two", i,
                (unsigned long long)s.align);
        if (fdl__elf_no_bytes(s.type))
            continue; /* no bytes in the file: .nv.global, .nv.local.*, .nv.shared.* reserve
                       * memory only (issue 34: nvcc 13 places .nv.global over the next section) */
        if (!fdl__in_range(s.offset, s.size, e->n))
            return bad(whybuf, cap, at, shdr_at(e, i, 24), "section %zu's bytes (%llu at byte %llu) lie outside the "
                "file", i, (unsigned long long)s.size, (unsigned long long)s.offset);
        if (s.size)
            ranges[nranges++] = (elf_range){s.offset, s.offset + s.size, s.type, i};
        uint64_t want = 0;
        if (s.type == FDL__SHT_SYMTAB || s.type == FDL__SHT_DYNSYM)
            want = 24;
        else if (s.type == FDL__SHT_RELA)
            want = 24;
        else if (s.type == FDL__SHT_REL)
            want = 16;
        if (!want)
            continue;
        const char *table = s.type == FDL__SHT_REL || s.type == FDL__SHT_RELA
                                ? "relocation table" : "symbol table";
        if (s.entsize != want)
            return bad(whybuf, cap, at, shdr_at(e, i, 56), "section %zu, a %s, has entries of %llu bytes, not %llu", i,
                table, (unsigned long long)s.entsize, (unsigned long long)want);
        if (s.size % want)
            return bad(whybuf, cap, at, shdr_at(e, i, 32), "section %zu, a %s, is %llu bytes, not a whole number of "
                "entries", i, table, (unsigned long long)s.size);
        size_t n = (size_t)(s.size / want);
        if (want == 24 && table[0] == 's') {
            uint64_t strsize;
            if (s.link == 0 || s.link >= e->shnum || !string_table(e, s.link, &strsize))
                return bad(whybuf, cap, at, shdr_at(e, i, 40), "section %zu, a symbol table, names section %u as its "
                    "string table, which is not a string table inside the file ending with a NUL",
                    i, s.link);
            if (s.info > n)
                return bad(whybuf, cap, at, shdr_at(e, i, 44), "section %zu, a symbol table of %zu symbols, says its "
                    "first global one is %u", i, n, s.info);
            for (size_t k = 0; k < n; k++) {
                const unsigned char *sym = p + s.offset + k * 24;
                uint32_t name = fdl__le32(sym);
                unsigned shndx = fdl__le16(sym + 6);
                if (name >= strsize)
                    return bad(whybuf, cap, at, s.offset + k * 24, "symbol %zu's name (offset %u) lies past its string "
                        "table's %llu bytes", k, name, (unsigned long long)strsize);
                if (shndx >= e->shnum && shndx < 0xff00)
                    return bad(whybuf, cap, at, s.offset + k * 24 + 6, "symbol %zu is in section %u, of %zu sections",
                        k, shndx, e->shnum);
            }
            continue;
        }
        /* a relocation table: its symbol table, the section it applies to, each entry's symbol */
        fdl__shdr sym;
        if (s.link == 0 || s.link >= e->shnum)
            return bad(whybuf, cap, at, shdr_at(e, i, 40), "section %zu, a relocation table, names section %u as its "
                "symbol table, of %zu sections", i, s.link, e->shnum);
        fdl__elf_shdr(e, s.link, &sym);
        if ((sym.type != FDL__SHT_SYMTAB && sym.type != FDL__SHT_DYNSYM) || sym.entsize != 24)
            return bad(whybuf, cap, at, shdr_at(e, i, 40), "section %zu, a relocation table, names section %u as its "
                "symbol table, which is not one", i, s.link);
        if (s.info >= e->shnum)
            return bad(whybuf, cap, at, shdr_at(e, i, 44), "section %zu, a relocation table, applies to section %u, of "
                "%zu sections", i, s.info, e->shnum);
        uint64_t nsyms = sym.size / 24;
        for (size_t k = 0; k < n; k++) {
            uint32_t index = fdl__le32(p + s.offset + k * want + 12);
            if (index >= nsyms)
                return bad(whybuf, cap, at, s.offset + k * want + 8, "relocation %zu of section %zu refers to symbol %u, "
                    "of %llu", k, i, index, (unsigned long long)nsyms);
        }
    }
    *count = nranges;
    return 1;
}

int fdl__elf_validate(const fdl__elf *e, char *whybuf, size_t cap, uint64_t *at)
{
    elf_range *ranges = NULL;
    size_t nranges = 0, bytes;
    int ok = 0;
    *at = 0;
    if (whybuf && cap)
        whybuf[0] = '\0';
    if (!check_header(e, whybuf, cap, at))
        return 0;
    if (e->shoff == 0)
        return 1;
    if (!fdl__size_mul(&bytes, e->shnum + 3, sizeof *ranges) || !(ranges = malloc(bytes)))
        return -1;
    if (!check_sections(e, ranges, &nranges, whybuf, cap, at))
        goto cleanup;
    /* nothing shares bytes: the header, the tables, the sections */
    qsort(ranges, nranges, sizeof *ranges, range_order);
    for (size_t i = 1; i < nranges; i++) {
        if (ranges[i].begin >= ranges[i - 1].end)
            continue;
        /* ptxas aliases sections (.debug_abbrev and .nv.merc.debug_abbrev of -G cubins for
         * sm_120, .nv.global.init and .nv.merc.nv.global.init of libcudadevrt's, and across
         * types: .nv.constant3 (LOPROC+0x67) and .nv.merc.nv.constant.user (LOPROC+0x7c),
         * .nv.constant4 (PROGBITS) and .nv.merc.nv.constant.pic (LOPROC+0x7d) of nvcc 13's
         * sm_120 cubins, issue 34): the same bytes, neither a table a linker indexes, is no
         * overlap */
        if (ranges[i].begin == ranges[i - 1].begin && ranges[i].end == ranges[i - 1].end &&
            aliasable(ranges[i].type) && aliasable(ranges[i - 1].type))
            continue;
        char a[48], b[48];
        range_name(&ranges[i - 1], a, sizeof a);
        range_name(&ranges[i], b, sizeof b);
        bad(whybuf, cap, at, ranges[i].begin, "%s and %s overlap", a, b);
        goto cleanup;
    }
    ok = 1;
cleanup:
    free(ranges);
    return ok;
}
