/*
 * Damaged binaries for the catalogue (cases_bad_binaries.cmake), made from real nvcc-built
 * cubins at test time: one kind of ELF damage, then the cubin as it is or wrapped in a fatbin, a
 * host object or a static library, so that each damage is seen alone and inside each container.
 *
 *   NAME=elf:DAMAGE:WRAP:SRC    SRC a cubin ("fx/mul.cubin"); WRAP cubin, fatbin, fatbin_lz4
 *                               (the cubin LZ4-compressed), object, archive
 *   NAME=elfhost:DAMAGE:SRC     SRC wrapped in a host object whose own ELF gets DAMAGE
 *   NAME=ar_empty_first:SRC     an archive whose first member is empty, then SRC (as k.o)
 *   NAME=ar_bsd:SRC             an archive with SRC under a BSD long name ("#1/N")
 *
 * The damages (elf_damage below) are what the ELF validation of link/src/elfread.c refuses: a
 * section table at byte 0, symbol names past .strtab, overlapping sections, and the rest.
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "badgen.h"

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static void wr16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void wr32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}
static void wr64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

/* Section header @p i of the ELF file at @p p. */
static unsigned char *shdr(unsigned char *p, size_t i)
{
    return p + rd64(p + 40) + i * 64;
}

/* The first section of type @p type (its index), or exit. */
static size_t find_type(unsigned char *p, uint32_t type, const char *what)
{
    size_t n = rd16(p + 60);
    for (size_t i = 1; i < n; i++)
        if (rd32(shdr(p, i) + 4) == type)
            return i;
    fprintf(stderr, "fdlink_badgen: the source has no %s\n", what);
    exit(2);
}

/* The first section with code (SHF_EXECINSTR), or exit. */
static size_t find_text(unsigned char *p)
{
    size_t n = rd16(p + 60);
    for (size_t i = 1; i < n; i++)
        if (rd64(shdr(p, i) + 8) & 4)
            return i;
    fprintf(stderr, "fdlink_badgen: the source has no code section\n");
    exit(2);
}

/* Damage the ELF file of *n bytes at @p p in place (*n may shrink). */
static void elf_damage(unsigned char *p, size_t *n, const char *damage)
{
    size_t symtab = 0, rela = 0;
    if (rd16(p + 18) == 190) {
        symtab = find_type(p, 2, "symbol table");
    }
    unsigned char *sym = symtab ? shdr(p, symtab) : NULL;
    if (strcmp(damage, "shoff_zero") == 0) { /* the section table at byte 0 */
        wr64(p + 40, 0);
    } else if (strcmp(damage, "shoff_past") == 0) {
        wr64(p + 40, *n + 64);
    } else if (strcmp(damage, "shentsize") == 0) {
        wr16(p + 58, 40);
    } else if (strcmp(damage, "shnum_big") == 0) {
        wr16(p + 60, 0x7fff);
    } else if (strcmp(damage, "shstrndx") == 0) {
        wr16(p + 62, rd16(p + 60) + 5);
    } else if (strcmp(damage, "shstrtab_type") == 0) {
        wr32(shdr(p, rd16(p + 62)) + 4, 1);
    } else if (strcmp(damage, "shstrtab_nul") == 0) {
        unsigned char *s = shdr(p, rd16(p + 62));
        p[rd64(s + 24) + rd64(s + 32) - 1] = 'x';
    } else if (strcmp(damage, "strtab_nul") == 0) {
        unsigned char *s = shdr(p, rd32(sym + 40));
        p[rd64(s + 24) + rd64(s + 32) - 1] = 'x';
    } else if (strcmp(damage, "section_name_past") == 0) {
        wr32(shdr(p, 2), 0xffff);
    } else if (strcmp(damage, "sym_names_past") == 0) { /* every symbol's name past .strtab */
        uint64_t strsize = rd64(shdr(p, rd32(sym + 40)) + 32);
        for (uint64_t off = 0; off < rd64(sym + 32); off += 24) {
            unsigned char *s = p + rd64(sym + 24) + off;
            wr32(s, (uint32_t)(rd32(s) + strsize + 16));
        }
    } else if (strcmp(damage, "sym_shndx") == 0) {
        wr16(p + rd64(sym + 24) + 24 + 6, 0xfe00);
    } else if (strcmp(damage, "symtab_entsize") == 0) {
        wr64(sym + 56, 16);
    } else if (strcmp(damage, "symtab_size") == 0) {
        wr64(sym + 32, rd64(sym + 32) - 5);
    } else if (strcmp(damage, "symtab_link") == 0) {
        wr32(sym + 40, (uint32_t)symtab);
    } else if (strcmp(damage, "symtab_info") == 0) {
        wr32(sym + 44, 100000);
    } else if (strcmp(damage, "symtab_outside") == 0) {
        wr64(sym + 24, *n - 8);
    } else if (strcmp(damage, "text_outside") == 0) {
        wr64(shdr(p, find_text(p)) + 24, (uint64_t)1 << 40);
    } else if (strcmp(damage, "overlap") == 0) { /* the code over the section before it */
        size_t t = find_text(p);
        unsigned char *prev = shdr(p, t - 1);
        wr64(shdr(p, t) + 24, rd64(prev + 24) + rd64(prev + 32) - 8);
    } else if (strcmp(damage, "overlap_table") == 0) { /* the code over the section table */
        unsigned char *s = shdr(p, find_text(p));
        wr64(s + 24, rd64(p + 40));
        wr64(s + 32, 64);
    } else if (strcmp(damage, "overlap_header") == 0) { /* the symbol table over the header */
        wr64(sym + 24, 0);
    } else if (strcmp(damage, "align") == 0) {
        wr64(shdr(p, find_text(p)) + 48, 24);
    } else if (strcmp(damage, "rela_sym") == 0) {
        rela = find_type(p, 4, "relocation table");
        wr32(p + rd64(shdr(p, rela) + 24) + 12, 99999);
    } else if (strcmp(damage, "rela_link") == 0) {
        rela = find_type(p, 4, "relocation table");
        wr32(shdr(p, rela) + 40, rd16(p + 62));
    } else if (strcmp(damage, "rela_info") == 0) {
        rela = find_type(p, 4, "relocation table");
        wr32(shdr(p, rela) + 44, 9999);
    } else if (strcmp(damage, "rela_entsize") == 0) {
        rela = find_type(p, 4, "relocation table");
        wr64(shdr(p, rela) + 56, 16);
    } else if (strcmp(damage, "ehsize") == 0) {
        wr16(p + 52, 52);
    } else if (strcmp(damage, "version") == 0) {
        p[6] = 0; /* EI_VERSION */
    } else if (strcmp(damage, "type") == 0) {
        wr16(p + 16, 9);
    } else if (strcmp(damage, "phoff_past") == 0) {
        wr64(p + 32, *n);
    } else if (strcmp(damage, "phoff_shifted") == 0) {
        wr64(p + 32, rd64(p + 32) - 4); /* any offset is allowed: the segments read are garbage */
    } else if (strcmp(damage, "phentsize") == 0) {
        wr16(p + 54, 32);
    } else if (strcmp(damage, "segment_outside") == 0) {
        wr64(p + rd64(p + 32) + 56 + 8, *n);
    } else if (strcmp(damage, "segment_filesz") == 0) {
        unsigned char *ph = p + rd64(p + 32) + 56;
        wr64(ph + 40, 0);
        wr64(ph + 32, 8);
    } else if (strcmp(damage, "truncated") == 0) {
        *n = *n / 2;
    } else if (strcmp(damage, "none") != 0) {
        fprintf(stderr, "fdlink_badgen: unknown ELF damage %s\n", damage);
        exit(2);
    }
}

/* A fatbin of one uncompressed cubin entry for sm_ARCH. */
static unsigned char *wrap_fatbin(const unsigned char *cubin, size_t n, unsigned arch,
                                  size_t *out)
{
    size_t pad = (n + 7) / 8 * 8, total = 16 + 64 + pad;
    unsigned char *f = calloc(1, total);
    if (!f)
        exit(1);
    wr32(f, 0xBA55ED50u);
    wr16(f + 4, 1);
    wr16(f + 6, 16);
    wr64(f + 8, 64 + pad);
    unsigned char *h = f + 16;
    wr16(h, 2);           /* a cubin */
    wr16(h + 2, 0x0101);
    wr32(h + 4, 64);      /* header size */
    wr64(h + 8, pad);     /* payload size */
    wr16(h + 24, 8);      /* version 1.8 */
    wr16(h + 26, 1);
    wr32(h + 28, arch);
    wr64(h + 40, 0x11);   /* 64-bit, linux */
    memcpy(h + 64, cubin, n);
    *out = total;
    return f;
}

/*
 * A fatbin of one LZ4-compressed cubin entry, as nvcc -compress-mode=speed writes them: the LZ4
 * block is one sequence of literals only (valid LZ4, no compression needed for the purpose).
 */
static unsigned char *wrap_fatbin_lz4(const unsigned char *cubin, size_t n, unsigned arch,
                                      size_t *out)
{
    size_t cap = n + n / 255 + 16, c = 0;
    unsigned char *block = malloc(cap);
    if (!block)
        exit(1);
    block[c++] = (unsigned char)((n < 15 ? n : 15) << 4);
    if (n >= 15) {
        size_t rest = n - 15;
        for (; rest >= 255; rest -= 255)
            block[c++] = 255;
        block[c++] = (unsigned char)rest;
    }
    memcpy(block + c, cubin, n);
    c += n;
    unsigned char *f = wrap_fatbin(block, c, arch, out);
    unsigned char *h = f + 16;
    wr32(h + 16, (uint32_t)c);  /* compressed size */
    wr64(h + 40, 0x2011);       /* 64-bit, linux, LZ4 */
    wr64(h + 56, n);            /* decompressed size */
    free(block);
    return f;
}

/* A minimal x86-64 relocatable object whose .nv_fatbin section holds @p fat. */
static unsigned char *wrap_object(const unsigned char *fat, size_t n, size_t *out)
{
    static const char names[] = "\0.shstrtab\0.nv_fatbin\0";
    size_t data = 64, strs = data + (n + 7) / 8 * 8, shoff = strs + (sizeof names + 7) / 8 * 8;
    size_t total = shoff + 3 * 64;
    unsigned char *o = calloc(1, total);
    if (!o)
        exit(1);
    memcpy(o, "\x7f" "ELF\x02\x01\x01", 7);
    wr16(o + 16, 1);  /* ET_REL */
    wr16(o + 18, 62); /* x86-64 */
    wr32(o + 20, 1);
    wr64(o + 40, shoff);
    wr16(o + 52, 64);
    wr16(o + 58, 64);
    wr16(o + 60, 3);
    wr16(o + 62, 1);
    memcpy(o + data, fat, n);
    memcpy(o + strs, names, sizeof names);
    unsigned char *s = o + shoff + 64; /* .shstrtab */
    wr32(s, 1);
    wr32(s + 4, 3);
    wr64(s + 24, strs);
    wr64(s + 32, sizeof names);
    wr64(s + 48, 1);
    s += 64; /* .nv_fatbin */
    wr32(s, 11);
    wr32(s + 4, 1);
    wr64(s + 8, 2); /* SHF_ALLOC */
    wr64(s + 24, data);
    wr64(s + 32, n);
    wr64(s + 48, 8);
    *out = total;
    return o;
}

/* Append an ar member header and its data (padded to even) to @p f. */
static void ar_member(FILE *f, const char *name, const unsigned char *p, size_t n)
{
    char h[61];
    snprintf(h, sizeof h, "%-16s%-12s%-6s%-6s%-8s%-10zu`\n", name, "0", "0", "0", "644", n);
    fwrite(h, 1, 60, f);
    if (n)
        fwrite(p, 1, n, f);
    if (n & 1)
        fputc('\n', f);
}

int badgen_elf(const char *path, const char *kind, char *arg)
{
    size_t n, m;
    unsigned char *p, *w = NULL;
    if (strcmp(kind, "elf") == 0 || strcmp(kind, "elfhost") == 0) {
        char *damage = arg, *wrap = "object", *src;
        char *colon = strchr(arg, ':');
        if (!colon)
            return 0;
        *colon = '\0';
        src = colon + 1;
        if (kind[3] == '\0') {
            wrap = src;
            if (!(colon = strchr(wrap, ':')))
                return 0;
            *colon = '\0';
            src = colon + 1;
        }
        p = badgen_read_source(src, &n);
        unsigned arch = (rd32(p + 48) >> 8) & 0xff;
        if (kind[3] == '\0')
            elf_damage(p, &n, damage);
        if (strcmp(wrap, "cubin") == 0) {
            badgen_write(path, p, n);
        } else if (strcmp(wrap, "fatbin") == 0) {
            w = wrap_fatbin(p, n, arch, &m);
            badgen_write(path, w, m);
        } else if (strcmp(wrap, "fatbin_lz4") == 0) {
            w = wrap_fatbin_lz4(p, n, arch, &m);
            badgen_write(path, w, m);
        } else if (strcmp(wrap, "object") == 0 || strcmp(wrap, "archive") == 0) {
            unsigned char *fat = wrap_fatbin(p, n, arch, &m);
            w = wrap_object(fat, m, &m);
            free(fat);
            if (kind[3] != '\0')
                elf_damage(w, &m, damage);
            if (wrap[0] == 'o') {
                badgen_write(path, w, m);
            } else {
                FILE *f = badgen_create(path);
                fputs("!<arch>\n", f);
                ar_member(f, "k.o/", w, m);
                badgen_finish(f, path);
            }
        } else {
            return 0;
        }
    } else if (strcmp(kind, "ar_empty_first") == 0 || strcmp(kind, "ar_bsd") == 0) {
        p = badgen_read_source(arg, &n);
        FILE *f = badgen_create(path);
        fputs("!<arch>\n", f);
        if (kind[3] == 'e') {
            ar_member(f, "empty.o/", NULL, 0);
            ar_member(f, "k.o/", p, n);
        } else {
            static const char name[] = "a_member_name_longer_than_sixteen.o";
            size_t len = sizeof name - 1; /* BSD: the name, then the data, sized together */
            unsigned char *both = malloc(len + n);
            if (!both)
                exit(1);
            memcpy(both, name, len);
            memcpy(both + len, p, n);
            char label[17];
            snprintf(label, sizeof label, "#1/%zu", len);
            ar_member(f, label, both, len + n);
            free(both);
        }
        badgen_finish(f, path);
    } else {
        return 0;
    }
    free(p);
    free(w);
    return 1;
}
