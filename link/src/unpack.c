/*
 * Inputs from their bytes: kind detection, and the code images inside an input (the entries of
 * fatbin containers, of the fatbin sections of host objects, of the objects in a static library),
 * each decompressed and scanned on demand: PTX by fdl_ptx_scan, cubins by their ELF symbol table
 * and .nv.info attributes. Every read of a header, a table or a string is bounds-checked against
 * the bytes at hand, so a truncated or hostile input is an error, never a read past its end.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/link.h"
#include "fdlink/ptx.h"
#include "internal.h"
#include "linkint.h"

/* ---- kinds --------------------------------------------------------------------------------- */

const char *fdl_input_kind_name(fdl_input_kind kind)
{
    switch (kind) {
    case FDL_KIND_AUTO: return "auto";
    case FDL_KIND_PTX: return "ptx";
    case FDL_KIND_CUBIN: return "cubin";
    case FDL_KIND_FATBIN: return "fatbin";
    case FDL_KIND_LTOIR: return "ltoir";
    case FDL_KIND_OBJECT: return "object";
    case FDL_KIND_LIBRARY: return "library";
    case FDL_KIND_CUDA: return "cuda";
    }
    return "unknown";
}

int fdl_input_kind_parse(fdl_input_kind *out, const char *name, fdl_error *err)
{
    static const struct {
        const char *name;
        fdl_input_kind kind;
    } names[] = {
        {"auto", FDL_KIND_AUTO},     {"ptx", FDL_KIND_PTX},         {"cubin", FDL_KIND_CUBIN},
        {"fatbin", FDL_KIND_FATBIN}, {"ltoir", FDL_KIND_LTOIR},     {"lto-ir", FDL_KIND_LTOIR},
        {"object", FDL_KIND_OBJECT}, {"o", FDL_KIND_OBJECT},        {"library", FDL_KIND_LIBRARY},
        {"lib", FDL_KIND_LIBRARY},   {"a", FDL_KIND_LIBRARY},       {"cuda", FDL_KIND_CUDA},
        {"cu", FDL_KIND_CUDA},
    };
    if (!FDL__CHECK_ARG(out) || !FDL__CHECK_ARG(name))
        return fdl__fail(err, FDL_EINVAL, "fdl_input_kind_parse: out or name is NULL");
    *out = FDL_KIND_AUTO;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) {
            *out = names[i].kind;
            return FDL_OK;
        }
    return fdl__fail(err, FDL_EINVAL,
                     "unknown input kind '%.64s' (expected ptx, cubin, fatbin, ltoir, object, "
                     "library or cuda)",
                     name);
}

unsigned fdl__arch_number(const char *arch)
{
    const char *p = NULL;
    if (strncmp(arch, "sm_", 3) == 0)
        p = arch + 3;
    else if (strncmp(arch, "compute_", 8) == 0)
        p = arch + 8;
    else if (strncmp(arch, "lto_", 4) == 0)
        p = arch + 4;
    if (!p || *p < '1' || *p > '9')
        return 0;
    unsigned v = 0;
    for (int digits = 0; *p >= '0' && *p <= '9'; p++, digits++) {
        if (digits >= 4)
            return 0;
        v = v * 10 + (unsigned)(*p - '0');
    }
    return v;
}

/* ---- ELF ------------------------------------------------------------------------------------ */

#define SHT_SYMTAB 2
#define SHT_NOBITS 8
#define SHT_NV_INFO 0x70000000u /* SHT_LOPROC: .nv.info sections */
#define STO_CUDA_ENTRY 0x10     /* st_other of a kernel */

/* EIATTR attributes of .nv.info (a format byte, an attribute byte, then a 16-bit value, or for
 * format EIFMT_SVAL a 16-bit size and that many bytes). */
#define EIFMT_SVAL 4
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_REGCOUNT 0x2f

typedef struct elf {
    const unsigned char *p;
    size_t n;
    unsigned type, machine, abiversion;
    uint32_t flags;
    uint64_t shoff;
    size_t shnum, shentsize, shstrndx;
} elf;

typedef struct shdr {
    uint32_t name, type, link, info;
    uint64_t offset, size, entsize;
} shdr;

static void read_shdr(const elf *e, size_t i, shdr *s)
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

static int in_range(uint64_t off, uint64_t len, size_t n)
{
    return off <= n && len <= n - off;
}

/* Open a 64-bit little-endian ELF file; 0 with *why when it is not one or its table is broken. */
static int elf_open(elf *e, const unsigned char *p, size_t n, const char **why)
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
    if (e->shentsize < 64 || !in_range(e->shoff, 64, n)) {
        *why = "an ELF file whose section table lies outside it";
        return 0;
    }
    shdr zero;
    read_shdr(e, 0, &zero);
    if (e->shnum == 0) /* extended numbering: the count is in section 0 */
        e->shnum = zero.size > SIZE_MAX ? SIZE_MAX : (size_t)zero.size;
    if (e->shstrndx == 0xffff)
        e->shstrndx = zero.link;
    size_t bytes;
    if (!fdl__size_mul(&bytes, e->shnum, e->shentsize) || !in_range(e->shoff, bytes, n)) {
        *why = "an ELF file whose section table lies outside it";
        return 0;
    }
    return 1;
}

/* The bytes of a section, or 0 when they lie outside the file (NOBITS sections have none). */
static int section_bytes(const elf *e, const shdr *s, const unsigned char **data)
{
    *data = NULL;
    if (s->type == SHT_NOBITS)
        return 1;
    if (!in_range(s->offset, s->size, e->n))
        return 0;
    *data = e->p + s->offset;
    return 1;
}

/* A NUL-terminated string at @p off of a string table, or NULL. */
static const char *table_string(const elf *e, size_t table, uint32_t off)
{
    if (table == 0 || table >= e->shnum)
        return NULL;
    shdr s;
    read_shdr(e, table, &s);
    const unsigned char *d;
    if (s.type == SHT_NOBITS || !section_bytes(e, &s, &d) || off >= s.size)
        return NULL;
    const char *str = (const char *)d + off;
    size_t room = (size_t)(s.size - off);
    return memchr(str, '\0', room) ? str : NULL;
}

static const char *section_name(const elf *e, const shdr *s)
{
    return table_string(e, e->shstrndx, s->name);
}

/* The architecture of a cubin, from e_flags: bits 8-15 since ELF ABI version 8, else 0-7. */
static unsigned cubin_arch(const elf *e)
{
    if (e->abiversion >= 8 || (e->flags >> 24) != 0)
        return (e->flags >> 8) & 0xff;
    return e->flags & 0xff;
}

static const char *machine_name(unsigned machine)
{
    switch (machine) {
    case 62: return "x86-64";
    case 183: return "AArch64";
    case 21: return "PowerPC64";
    case 3: return "i386";
    default: return NULL;
    }
}

static const char *elf_type_name(unsigned type)
{
    switch (type) {
    case 1: return "object";
    case 2: return "executable";
    case 3: return "shared library";
    default: return "file";
    }
}

static int is_fatbin_section(const char *name)
{
    return name && (strcmp(name, ".nv_fatbin") == 0 || strcmp(name, "__nv_relfatbin") == 0);
}

/* Non-zero when a host ELF file has a fatbin section with bytes in it. */
static int host_has_device_code(const elf *e)
{
    for (size_t i = 1; i < e->shnum; i++) {
        shdr s;
        read_shdr(e, i, &s);
        const unsigned char *d;
        if (s.type != SHT_NOBITS && s.size && section_bytes(e, &s, &d) &&
            is_fatbin_section(section_name(e, &s)))
            return 1;
    }
    return 0;
}

/* ---- detection --------------------------------------------------------------------------- */

/* Skip whitespace, `//` and block comments; return where the text proper starts. */
static size_t skip_ptx_preamble(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
            i++;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
            i += 2;
            while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/'))
                i++;
            if (i + 1 >= n)
                return n; /* unterminated comment: nothing follows */
            i += 2;
        } else {
            break;
        }
    }
    return i;
}

/* PTX begins with a `.version` directive, after comments and whitespace. */
static int looks_like_ptx(const unsigned char *s, size_t n)
{
    size_t i = skip_ptx_preamble(s, n);
    static const char directive[] = ".version";
    size_t dn = sizeof directive - 1;
    return n - i > dn && memcmp(s + i, directive, dn) == 0 &&
           (s[i + dn] == ' ' || s[i + dn] == '\t');
}

static int is_text(const unsigned char *p, size_t n)
{
    size_t look = n < 4096 ? n : 4096;
    for (size_t i = 0; i < look; i++) {
        unsigned char c = p[i];
        if (c == 0 || (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v'))
            return 0;
    }
    return memchr(p, '\0', n) == NULL;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int cuda_name(const char *name)
{
    return ends_with(name, ".cu") || ends_with(name, ".cuh");
}

typedef struct sniff {
    fdl_input_kind kind; /* FDL_KIND_AUTO: none of them */
    char what[160];      /* what the bytes are, for messages */
} sniff;

static void sniff_bytes(sniff *s, const unsigned char *p, size_t n, const char *name)
{
    s->kind = FDL_KIND_AUTO;
    snprintf(s->what, sizeof s->what, "binary data");
    if (n >= 4 && memcmp(p, "\x7f" "ELF", 4) == 0) {
        elf e;
        const char *why = NULL;
        if (n >= 20 && fdl__le16(p + 18) == FDL__EM_CUDA) {
            if (!elf_open(&e, p, n, &why)) {
                snprintf(s->what, sizeof s->what, "a malformed cubin: %s", why);
                return;
            }
            s->kind = FDL_KIND_CUBIN;
            snprintf(s->what, sizeof s->what, "a cubin");
            return;
        }
        if (!elf_open(&e, p, n, &why)) {
            snprintf(s->what, sizeof s->what, "%s", why);
            return;
        }
        const char *machine = machine_name(e.machine);
        char host[64];
        if (machine)
            snprintf(host, sizeof host, "%s %s", machine, elf_type_name(e.type));
        else
            snprintf(host, sizeof host, "ELF %s (machine %u)", elf_type_name(e.type), e.machine);
        if (host_has_device_code(&e)) {
            s->kind = FDL_KIND_OBJECT;
            snprintf(s->what, sizeof s->what, "a host object (%s) with device code", host);
        } else {
            snprintf(s->what, sizeof s->what,
                     "a host %s with no device code (no .nv_fatbin or __nv_relfatbin section)",
                     elf_type_name(e.type));
        }
        return;
    }
    if (n >= 4 && fdl__le32(p) == FDL__FATBIN_MAGIC) {
        s->kind = FDL_KIND_FATBIN;
        snprintf(s->what, sizeof s->what, "a fatbin");
        return;
    }
    if (n >= 4 && fdl__le32(p) == FDL__NVVM_MAGIC) {
        s->kind = FDL_KIND_LTOIR;
        snprintf(s->what, sizeof s->what, "LTO-IR (an NVVM container)");
        return;
    }
    if (n >= 8 && memcmp(p, "!<arch>\n", 8) == 0) {
        s->kind = FDL_KIND_LIBRARY;
        snprintf(s->what, sizeof s->what, "a static library");
        return;
    }
    static const struct {
        const char *magic;
        size_t len;
        const char *what;
    } others[] = {
        {"!<thin>\n", 8, "a thin archive (its members live in other files)"},
        {"BC\xc0\xde", 4, "LLVM bitcode, not an NVVM container (LTO-IR comes from -dlto)"},
        {"\x89PNG\r\n\x1a\n", 8, "a PNG image"},
        {"\xff\xd8\xff", 3, "a JPEG image"},
        {"GIF8", 4, "a GIF image"},
        {"%PDF", 4, "a PDF document"},
        {"\x1f\x8b", 2, "gzip-compressed data"},
        {"\x28\xb5\x2f\xfd", 4, "zstd-compressed data"},
        {"PK\x03\x04", 4, "a zip archive"},
        {"\xcf\xfa\xed\xfe", 4, "a Mach-O file"},
        {"MZ", 2, "a Windows executable"},
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (n >= others[i].len && memcmp(p, others[i].magic, others[i].len) == 0) {
            snprintf(s->what, sizeof s->what, "%s", others[i].what);
            return;
        }
    if (!is_text(p, n))
        return;
    if (looks_like_ptx(p, n)) {
        s->kind = FDL_KIND_PTX;
        snprintf(s->what, sizeof s->what, "PTX");
        return;
    }
    if (name && cuda_name(name)) {
        s->kind = FDL_KIND_CUDA;
        snprintf(s->what, sizeof s->what, "CUDA C");
        return;
    }
    snprintf(s->what, sizeof s->what,
             "text that is neither PTX (no .version directive) nor named .cu or .cuh");
}

static const char *kind_article(fdl_input_kind kind)
{
    switch (kind) {
    case FDL_KIND_PTX: return "PTX";
    case FDL_KIND_CUBIN: return "a cubin";
    case FDL_KIND_FATBIN: return "a fatbin";
    case FDL_KIND_LTOIR: return "LTO-IR";
    case FDL_KIND_OBJECT: return "a host object with device code";
    case FDL_KIND_LIBRARY: return "a static library";
    case FDL_KIND_CUDA: return "CUDA C";
    case FDL_KIND_AUTO:
    default: return "a link input";
    }
}

/* "not <kind> (found 7f 45 4c 46 ...: <what>)" */
static int not_kind(fdl_error *err, const char *name, fdl_input_kind expected,
                    const unsigned char *p, size_t n, const char *what)
{
    char hex[32] = "";
    size_t show = n < 4 ? n : 4, at = 0;
    for (size_t i = 0; i < show; i++)
        at += (size_t)snprintf(hex + at, sizeof hex - at, "%s%02x", i ? " " : "", p[i]);
    if (n > show)
        snprintf(hex + at, sizeof hex - at, " ...");
    return fdl__error(err, FDL_EKIND, name, 0, 0, NULL, "not %s (found %s: %s)",
                      kind_article(expected), hex, what);
}

int fdl__detect(fdl_input_kind *out, const unsigned char *p, size_t n, const char *name,
                fdl_input_kind stated, fdl_error *err)
{
    *out = FDL_KIND_AUTO;
    if ((unsigned)stated > FDL_KIND_CUDA)
        return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "unknown input kind %d",
                          (int)stated);
    if (n == 0)
        return fdl__error(err, FDL_EKIND, name, 0, 0, NULL, "empty input");
    sniff s;
    sniff_bytes(&s, p, n, name);
    if (stated == FDL_KIND_CUDA) {
        /* the caller's word, for any text: NVRTC will say what it thinks of it */
        if (memchr(p, '\0', n))
            return not_kind(err, name, FDL_KIND_CUDA, p, n, s.what);
        *out = FDL_KIND_CUDA;
        return FDL_OK;
    }
    if (stated != FDL_KIND_AUTO) {
        if (s.kind != stated && !(stated == FDL_KIND_PTX && s.kind == FDL_KIND_CUDA &&
                                  looks_like_ptx(p, n)))
            return not_kind(err, name, stated, p, n, s.what);
        *out = stated;
        return FDL_OK;
    }
    if (s.kind == FDL_KIND_AUTO) {
        /* some findings are a sentence of their own */
        if (strncmp(s.what, "a host ", 7) == 0 && strstr(s.what, "no device code"))
            return fdl__error(err, FDL_EKIND, name, 0, 0, NULL, "%s", s.what);
        return not_kind(err, name, FDL_KIND_AUTO, p, n, s.what);
    }
    *out = s.kind;
    return FDL_OK;
}

int fdl_input_detect(fdl_input_kind *out, const void *data, size_t size, const char *name,
                     fdl_error *err)
{
    if (!FDL__CHECK_ARG(out) || !FDL__CHECK_ARG(data || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_input_detect: out or data is NULL");
    return fdl__detect(out, data, size, name ? name : "input", FDL_KIND_AUTO, err);
}

/* ---- images ---------------------------------------------------------------------------------- */

static void image_free(fdl__image *img)
{
    free(img->owned);
    fdl_ptx_destroy(img->ptx);
    for (size_t i = 0; i < img->nsyms; i++)
        free((char *)img->syms[i].name);
    free(img->syms);
    free(img->name_buf);
    free(img->member_buf);
    free(img->note_buf);
}

void fdl__images_free(fdl__images *im)
{
    if (!im)
        return;
    for (size_t i = 0; i < im->n; i++)
        image_free(&im->v[i]);
    free(im->v);
    memset(im, 0, sizeof *im);
}

/* Point the public fields at the image's own storage (after the array moved). */
static void image_fix(fdl__image *img)
{
    img->pub.name = img->name_buf ? img->name_buf : "";
    img->pub.member = img->member_buf ? img->member_buf : "";
    img->pub.arch = img->arch_buf;
    img->pub.ptx_version = img->version_buf;
    img->pub.note = img->note_buf ? img->note_buf : "";
    img->pub.ptx = img->ptx;
    img->pub.symbols = img->syms;
    img->pub.nsymbols = img->nsyms;
}

static const char *short_kind(fdl_input_kind kind)
{
    switch (kind) {
    case FDL_KIND_PTX: return "ptx";
    case FDL_KIND_CUBIN: return "cubin";
    case FDL_KIND_LTOIR: return "ltoir";
    default: return "entry";
    }
}

static void set_arch(fdl__image *img, unsigned number)
{
    img->pub.arch_number = number;
    img->arch_buf[0] = '\0';
    if (!number)
        return;
    const char *prefix = img->pub.kind == FDL_KIND_PTX     ? "compute_"
                         : img->pub.kind == FDL_KIND_LTOIR ? "lto_"
                                                           : "sm_";
    snprintf(img->arch_buf, sizeof img->arch_buf, "%s%u", prefix, number);
}

/*
 * Append an image. @p base names the input ("k.a(k.o)" for a member), @p entry is non-zero for
 * an entry of a fatbin (named "<base>[sm_90 cubin]"), zero for the input itself.
 */
static int add_image(fdl__images *im, fdl_input_kind kind, size_t unit, const char *base,
                     const char *member, int entry, unsigned arch, const unsigned char *raw,
                     size_t raw_size, fdl__image **out, fdl_error *err)
{
    *out = NULL;
    if (im->n == im->cap) {
        size_t ncap = im->cap ? im->cap : 4, bytes;
        fdl__image *grown = NULL;
        if ((!im->cap || fdl__size_mul(&ncap, im->cap, 2)) &&
            fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(im->v, bytes);
        if (!grown)
            return fdl__error(err, FDL_ENOMEM, base, 0, 0, NULL, "out of memory listing images");
        im->v = grown;
        im->cap = ncap;
        for (size_t i = 0; i < im->n; i++)
            image_fix(&im->v[i]);
    }
    fdl__image *img = &im->v[im->n];
    memset(img, 0, sizeof *img);
    img->pub.kind = kind;
    img->unit = unit;
    img->raw = raw;
    img->raw_size = raw_size;
    img->bytes = raw;
    img->nbytes = raw_size;
    img->full_size = raw_size;
    img->pub.size = raw_size;
    img->pub.compression = "";
    set_arch(img, arch);
    fdl__buf name = {0};
    if (entry)
        fdl__buf_printf(&name, "%s[%s %s]", base, img->arch_buf[0] ? img->arch_buf : "?",
                        short_kind(kind));
    else
        fdl__buf_puts(&name, base);
    img->name_buf = name.data;
    img->member_buf = fdl__strdup(member ? member : "");
    if (name.oom || !img->name_buf || !img->member_buf) {
        free(name.data);
        free(img->member_buf);
        return fdl__error(err, FDL_ENOMEM, base, 0, 0, NULL, "out of memory listing images");
    }
    im->n++;
    image_fix(img);
    *out = img;
    return FDL_OK;
}

/* ---- fatbin containers ---------------------------------------------------------------------- */

/* Entry header: kind u16, (u16), header size u32, payload size u64, compressed size u32, (u32),
 * version minor u16, major u16, arch u32, name offset u32, name size u32, flags u64, (u64),
 * decompressed size u64. */
#define FATBIN_ENTRY_MIN 64

static fdl_input_kind entry_kind(unsigned kind)
{
    switch (kind) {
    case 1: return FDL_KIND_PTX;
    case 2:
    case 0x10: return FDL_KIND_CUBIN;
    case 8: return FDL_KIND_LTOIR;
    default: return FDL_KIND_AUTO;
    }
}

/*
 * Every container in @p n bytes at @p p (a fatbin file, or a fatbin section: several containers,
 * zero padding between them). @p at is the region's offset in the input, for messages.
 */
static int parse_fatbin(fdl__images *im, const unsigned char *p, size_t n, size_t at,
                        const char *input, const char *base, const char *member, fdl_error *err)
{
    size_t off = 0;
    int containers = 0;
    while (off < n) {
        if (p[off] == 0 && containers) { /* padding between containers */
            off++;
            continue;
        }
        if (n - off < 16)
            return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                              "truncated fatbin header at byte offset %zu", at + off);
        if (fdl__le32(p + off) != FDL__FATBIN_MAGIC)
            return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                              "no fatbin magic at byte offset %zu (found %08x)", at + off,
                              (unsigned)fdl__le32(p + off));
        unsigned header = fdl__le16(p + off + 6);
        uint64_t body = fdl__le64(p + off + 8);
        if (header < 16 || !in_range(off + header, body, n))
            return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                              "fatbin container at byte offset %zu claims %llu bytes, past the "
                              "end of the input",
                              at + off, (unsigned long long)body);
        size_t e = off + header, end = e + (size_t)body;
        size_t unit = im->nunits++;
        containers++;
        while (e < end) {
            if (end - e < FATBIN_ENTRY_MIN)
                return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                  "truncated fatbin entry at byte offset %zu", at + e);
            const unsigned char *h = p + e;
            unsigned kind = fdl__le16(h);
            uint32_t hsize = fdl__le32(h + 4);
            uint64_t psize = fdl__le64(h + 8);
            uint32_t csize = fdl__le32(h + 16);
            unsigned minor = fdl__le16(h + 24), major = fdl__le16(h + 26);
            uint32_t arch = fdl__le32(h + 28);
            uint64_t flags = fdl__le64(h + 40);
            uint64_t dsize = fdl__le64(h + 56);
            if (hsize < FATBIN_ENTRY_MIN || hsize > end - e || psize > end - e - hsize)
                return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                  "fatbin entry at byte offset %zu runs past its container",
                                  at + e);
            unsigned compressed =
                (unsigned)(flags & (FDL__FATBIN_FLAG_LZ4 | FDL__FATBIN_FLAG_ZSTD));
            size_t stored = (size_t)psize;
            if (compressed) {
                if (csize > psize)
                    return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                      "fatbin entry at byte offset %zu: compressed size %u is "
                                      "larger than its payload (%llu)",
                                      at + e, (unsigned)csize, (unsigned long long)psize);
                stored = csize;
            }
            fdl__image *img;
            fdl_input_kind k = entry_kind(kind);
            int rc = add_image(im, k, unit, base, member, 1, arch > 9999 ? 0 : arch,
                               h + hsize, stored, &img, err);
            if (rc != FDL_OK)
                return rc;
            /* LTO-IR entries carry the compression flag over a payload in a form of nvcc's
             * own (no zstd frame): fdlink leaves them to nvJitLink and claims nothing */
            if (k == FDL_KIND_LTOIR && !(stored >= 4 && fdl__le32(h + hsize) == 0xFD2FB528u))
                compressed = 0;
            img->flags = compressed;
            if (compressed) {
                img->full_size = dsize;
                img->pub.size = dsize > SIZE_MAX ? SIZE_MAX : (size_t)dsize;
                img->pub.compression = (compressed & FDL__FATBIN_FLAG_ZSTD) ? "zstd" : "lz4";
            }
            if (k == FDL_KIND_PTX)
                snprintf(img->version_buf, sizeof img->version_buf, "%u.%u", major, minor);
            if (k == FDL_KIND_AUTO) {
                fdl__buf note = {0};
                fdl__buf_printf(&note, "a fatbin entry of kind 0x%x, unknown to fdlink", kind);
                img->note_buf = note.data;
                img->opaque = 1;
                image_fix(img);
            }
            e += hsize + (size_t)psize;
        }
        off = end;
    }
    if (!containers)
        return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL, "empty fatbin section at byte "
                          "offset %zu", at);
    return FDL_OK;
}

/* The fatbin sections of a host object. */
static int parse_object(fdl__images *im, const unsigned char *p, size_t n, size_t at,
                        const char *input, const char *base, const char *member, fdl_error *err)
{
    elf e;
    const char *why = NULL;
    if (!elf_open(&e, p, n, &why))
        return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL, "%s at byte offset %zu", why, at);
    int found = 0;
    for (size_t i = 1; i < e.shnum; i++) {
        shdr s;
        read_shdr(&e, i, &s);
        const unsigned char *d;
        if (s.type == SHT_NOBITS || !s.size || !is_fatbin_section(section_name(&e, &s)))
            continue;
        if (!section_bytes(&e, &s, &d))
            return fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                              "fatbin section %zu lies outside the object", i);
        int rc = parse_fatbin(im, d, (size_t)s.size, at + (size_t)s.offset, input, base, member,
                              err);
        if (rc != FDL_OK)
            return rc;
        found = 1;
    }
    if (!found)
        return fdl__error(err, FDL_EKIND, input, 0, 0, NULL,
                          "a host object with no device code (no .nv_fatbin or __nv_relfatbin "
                          "section)");
    return FDL_OK;
}

/* A single image that is the input (or member) itself. */
static int add_whole(fdl__images *im, fdl_input_kind kind, const unsigned char *p, size_t n,
                     const char *base, const char *member, fdl_error *err)
{
    unsigned arch = 0;
    if (kind == FDL_KIND_LTOIR && n < 0x1c)
        return fdl__error(err, FDL_EPARSE, base, 0, 0, NULL,
                          "truncated NVVM container (%zu bytes)", n);
    if (kind == FDL_KIND_CUBIN) {
        elf e;
        const char *why;
        if (elf_open(&e, p, n, &why))
            arch = cubin_arch(&e);
    } else if (kind == FDL_KIND_LTOIR) {
        /* the NVVM container header holds the arch as in __CUDA_ARCH__ (900) */
        unsigned v = fdl__le16(p + 0x1a);
        if (v % 10 == 0 && v / 10 >= 30 && v / 10 <= 999)
            arch = v / 10;
    }
    fdl__image *img;
    int rc = add_image(im, kind, im->nunits++, base, member, 0, arch, p, n, &img, err);
    if (rc == FDL_OK && kind == FDL_KIND_LTOIR)
        img->opaque = 1;
    return rc;
}

/* ---- static libraries ----------------------------------------------------------------------- */

/* A decimal field of an ar header (space padded); 0 when malformed. */
static int ar_decimal(const unsigned char *f, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    while (i < len && f[i] == ' ')
        i++;
    if (i == len || f[i] < '0' || f[i] > '9')
        return 0;
    for (; i < len && f[i] >= '0' && f[i] <= '9'; i++) {
        if (v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(f[i] - '0');
    }
    for (; i < len; i++)
        if (f[i] != ' ')
            return 0;
    *out = v;
    return 1;
}

static int parse_library(fdl__images *im, const unsigned char *p, size_t n, const char *input,
                         fdl_error *err)
{
    size_t off = 8;
    const unsigned char *longnames = NULL;
    size_t nlong = 0;
    int rc = FDL_OK;
    fdl__buf base = {0};
    char member[256];
    while (off < n) {
        if (p[off] == '\n') { /* padding to an even offset */
            off++;
            continue;
        }
        if (n - off < 60 || p[off + 58] != '`' || p[off + 59] != '\n') {
            rc = fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                            "malformed archive member header at byte offset %zu", off);
            goto cleanup;
        }
        const unsigned char *h = p + off;
        uint64_t size;
        if (!ar_decimal(h + 48, 10, &size) || !in_range(off + 60, size, n)) {
            rc = fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                            "archive member at byte offset %zu has a bad size or runs past the "
                            "end",
                            off);
            goto cleanup;
        }
        size_t data = off + 60, len = (size_t)size;
        off = data + len + (len & 1);
        /* the member's name: "name/", "/N" into the long names, "#1/N" (BSD) before the data */
        size_t nl = 0;
        if (h[0] == '/' && (h[1] == ' ' || memcmp(h, "/SYM64/", 7) == 0))
            continue; /* the symbol table */
        if (h[0] == '/' && h[1] == '/') {
            longnames = p + data;
            nlong = len;
            continue;
        }
        if (h[0] == '/' && h[1] >= '0' && h[1] <= '9') {
            uint64_t at;
            size_t end = 16;
            while (end > 1 && h[end - 1] == ' ')
                end--;
            if (!ar_decimal(h + 1, end - 1, &at) || !longnames || at >= nlong) {
                rc = fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                "archive member at byte offset %zu names a missing long name",
                                data - 60);
                goto cleanup;
            }
            const unsigned char *s = longnames + at;
            while (at + nl < nlong && s[nl] != '/' && s[nl] != '\n' && nl < sizeof member - 1)
                nl++;
            memcpy(member, s, nl);
        } else if (memcmp(h, "#1/", 3) == 0) {
            uint64_t bsd;
            size_t end = 16;
            while (end > 3 && h[end - 1] == ' ')
                end--;
            if (!ar_decimal(h + 3, end - 3, &bsd) || bsd > len) {
                rc = fdl__error(err, FDL_EPARSE, input, 0, 0, NULL,
                                "archive member at byte offset %zu has a bad BSD name",
                                data - 60);
                goto cleanup;
            }
            nl = bsd < sizeof member - 1 ? (size_t)bsd : sizeof member - 1;
            memcpy(member, p + data, nl);
            data += (size_t)bsd;
            len -= (size_t)bsd;
            while (nl && member[nl - 1] == '\0')
                nl--;
        } else {
            while (nl < 16 && h[nl] != '/' && h[nl] != ' ')
                nl++;
            memcpy(member, h, nl);
        }
        member[nl] = '\0';
        for (size_t i = 0; i < nl; i++)
            if ((unsigned char)member[i] < 0x20)
                member[i] = '?';
        if (len == 0)
            continue;
        sniff s;
        sniff_bytes(&s, p + data, len, member);
        base.len = 0;
        if (base.data)
            base.data[0] = '\0';
        fdl__buf_printf(&base, "%s(%s)", input, member);
        if (base.oom) {
            rc = fdl__error(err, FDL_ENOMEM, input, 0, 0, NULL, "out of memory");
            goto cleanup;
        }
        switch (s.kind) {
        case FDL_KIND_OBJECT:
            rc = parse_object(im, p + data, len, data, input, base.data, member, err);
            break;
        case FDL_KIND_FATBIN:
            rc = parse_fatbin(im, p + data, len, data, input, base.data, member, err);
            break;
        case FDL_KIND_CUBIN:
        case FDL_KIND_PTX:
        case FDL_KIND_LTOIR:
            rc = add_whole(im, s.kind, p + data, len, base.data, member, err);
            break;
        default:
            break; /* host code only, or something else: nothing for the device linker */
        }
        if (rc != FDL_OK)
            goto cleanup;
    }
cleanup:
    fdl__buf_free(&base);
    return rc;
}

int fdl__unpack(fdl__images *out, const unsigned char *p, size_t n, const char *name,
                fdl_input_kind kind, fdl_error *err)
{
    memset(out, 0, sizeof *out);
    int rc;
    switch (kind) {
    case FDL_KIND_PTX:
    case FDL_KIND_CUBIN:
    case FDL_KIND_LTOIR:
        rc = add_whole(out, kind, p, n, name, NULL, err);
        break;
    case FDL_KIND_FATBIN:
        rc = parse_fatbin(out, p, n, 0, name, name, NULL, err);
        break;
    case FDL_KIND_OBJECT:
        rc = parse_object(out, p, n, 0, name, name, NULL, err);
        break;
    case FDL_KIND_LIBRARY:
        rc = parse_library(out, p, n, name, err);
        break;
    case FDL_KIND_CUDA:
        rc = FDL_OK;
        break;
    case FDL_KIND_AUTO:
    default:
        rc = fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "fdl__unpack: no kind");
        break;
    }
    if (rc != FDL_OK)
        fdl__images_free(out);
    return rc;
}

/* ---- loading an image ---------------------------------------------------------------------- */

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

/* EIATTR_REGCOUNT and EIATTR_FRAME_SIZE of a .nv.info section: {symbol index, value}. */
static void read_nv_info(fdl__image *img, const unsigned char *d, uint64_t size,
                         const size_t *index, size_t nindex)
{
    uint64_t off = 0;
    while (size - off >= 4) {
        unsigned fmt = d[off], attr = d[off + 1];
        uint64_t len = 0;
        if (fmt == EIFMT_SVAL)
            len = fdl__le16(d + off + 2);
        else if (fmt < 1 || fmt > 3)
            return; /* a format this reader does not know: stop rather than guess */
        if (len > size - off - 4)
            return;
        const unsigned char *v = d + off + 4;
        if (fmt == EIFMT_SVAL && len >= 8 &&
            (attr == EIATTR_REGCOUNT || attr == EIATTR_FRAME_SIZE)) {
            uint32_t sym = fdl__le32(v), value = fdl__le32(v + 4);
            if (sym < nindex && index[sym] != SIZE_MAX) {
                fdl_symbol *s = &img->syms[index[sym]];
                if (attr == EIATTR_REGCOUNT)
                    s->registers = (long)value;
                else
                    s->local_bytes = (long)value;
            }
        }
        off += 4 + len;
    }
}

static int load_cubin(fdl__image *img, fdl_error *err)
{
    const char *name = img->pub.name;
    elf e;
    const char *why = NULL;
    int rc = FDL_OK;
    size_t *index = NULL, cap = 0, nsym = 0;
    int reserved_smem = 0;
    if (!elf_open(&e, img->bytes, img->nbytes, &why))
        return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "not a valid cubin: %s", why);
    if (e.machine != FDL__EM_CUDA)
        return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL,
                          "not a cubin: ELF machine %u, expected %d", e.machine, FDL__EM_CUDA);
    img->pub.relocatable = e.type == 1;
    unsigned arch = cubin_arch(&e);
    if (arch && !img->pub.arch_number)
        set_arch(img, arch);

    for (size_t i = 1; i < e.shnum && rc == FDL_OK; i++) {
        shdr s;
        read_shdr(&e, i, &s);
        if (s.type != SHT_SYMTAB)
            continue;
        const unsigned char *d;
        if (!section_bytes(&e, &s, &d) || s.entsize < 24) {
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
            if (bind == 0 || (type != 1 && type != 2))
                continue; /* local, or not a function or variable */
            const char *sname = table_string(&e, s.link, fdl__le32(sym));
            if (sname && strcmp(sname, ".nv.reservedSmem.offset0") == 0)
                reserved_smem = 1;
            if (!sname || !sname[0] || sname[0] == '.')
                continue;
            int defined = shndx != 0, weak = bind == 2;
            if (type == 1 && !defined && weak)
                continue; /* toolchain placeholders (__UDT, __UFT, ...) */
            fdl_symbol_kind kind = type == 1                  ? FDL_SYMBOL_VARIABLE
                                   : (other & STO_CUDA_ENTRY) ? FDL_SYMBOL_KERNEL
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
        shdr s;
        read_shdr(&e, i, &s);
        const char *sname = section_name(&e, &s);
        if (sname && strncmp(sname, ".nv.shared.reserved.", 20) == 0)
            reserved_smem = 1;
    }
    if (e.type == 2 && reserved_smem)
        reserved = 1024;
    /* resources: .nv.info attributes, .nv.shared.<f> and .nv.constant0.<f> sizes */
    for (size_t i = 1; i < e.shnum; i++) {
        shdr s;
        read_shdr(&e, i, &s);
        const char *sname = section_name(&e, &s);
        if (!sname)
            continue;
        const unsigned char *d;
        if (s.type == SHT_NV_INFO && strcmp(sname, ".nv.info") == 0) {
            if (index && section_bytes(&e, &s, &d) && d)
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

static int set_note(fdl__image *img, const char *fmt, const char *arg)
{
    fdl__buf b = {0};
    fdl__buf_printf(&b, fmt, arg);
    if (b.oom)
        return 0;
    free(img->note_buf);
    img->note_buf = b.data;
    return 1;
}

int fdl__image_load(fdl__image *img, fdl_error *err)
{
    if (img->loaded)
        return FDL_OK;
    const char *name = img->pub.name;
    int rc = FDL_OK;
    if (img->pub.kind == FDL_KIND_LTOIR || img->pub.kind == FDL_KIND_AUTO) {
        /* LTO-IR is read by nvJitLink only (fatbins store it in a form of their own) */
        img->opaque = 1;
        img->loaded = 1;
        return FDL_OK;
    }
    if (img->flags) {
        if (img->full_size > FDL__MAX_IMAGE)
            return fdl__error(err, FDL_EPARSE, name, 0, 0, NULL,
                              "decompressed size %llu is past the limit of %llu bytes",
                              (unsigned long long)img->full_size,
                              (unsigned long long)FDL__MAX_IMAGE);
        fdl_error e = FDL_ERROR_INIT;
        rc = fdl__decompress(&img->owned, (size_t)img->full_size, img->raw, img->raw_size,
                             img->flags, &e);
        if (rc == FDL_ENOLIB) {
            /* not fatal: the backend decompresses for itself; the content stays unknown */
            if (!set_note(img, "not shown: %s", e.message))
                return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
            img->opaque = 1;
            img->loaded = 1;
            image_fix(img);
            return FDL_OK;
        }
        if (rc != FDL_OK)
            return fdl__error(err, rc, name, 0, 0, NULL, "%s", e.message);
        img->bytes = img->owned;
        img->nbytes = (size_t)img->full_size;
    }
    if (img->pub.kind == FDL_KIND_PTX) {
        size_t len = img->nbytes;
        while (len && img->bytes[len - 1] == '\0') /* fatbins pad PTX with NULs */
            len--;
        rc = fdl_ptx_scan(&img->ptx, (const char *)img->bytes, len, name, err);
        if (rc != FDL_OK)
            return rc;
        if (!img->version_buf[0])
            fdl__strlcpy(img->version_buf, fdl_ptx_version(img->ptx), sizeof img->version_buf);
        if (!img->pub.arch_number) {
            const char *target = fdl_ptx_target(img->ptx);
            char first[32];
            size_t k = 0;
            while (target[k] && target[k] != ',' && target[k] != ' ' && k < sizeof first - 1) {
                first[k] = target[k];
                k++;
            }
            first[k] = '\0';
            set_arch(img, fdl__arch_number(first));
        }
    } else if (img->pub.kind == FDL_KIND_CUBIN) {
        rc = load_cubin(img, err);
        if (rc != FDL_OK)
            return rc;
    }
    img->pub.size = img->nbytes;
    img->loaded = 1;
    image_fix(img);
    return FDL_OK;
}

/* ---- inspection ----------------------------------------------------------------------------- */

struct fdl_inspection {
    fdl_input_kind kind;
    unsigned char *data;
    fdl__images images;
};

int fdl_inspect_data(fdl_inspection **out, const void *data, size_t size, const char *name,
                     fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_inspect_data: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(data || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_inspect_data: name or data is NULL");
    int rc;
    fdl_inspection *ins = calloc(1, sizeof *ins);
    if (!ins)
        return fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
    rc = fdl__detect(&ins->kind, data, size, name, kind, err);
    if (rc != FDL_OK)
        goto cleanup;
    ins->data = malloc(size + 1);
    if (!ins->data) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory copying %zu bytes",
                        size);
        goto cleanup;
    }
    memcpy(ins->data, data, size);
    ins->data[size] = '\0';
    rc = fdl__unpack(&ins->images, ins->data, size, name, ins->kind, err);
    if (rc != FDL_OK)
        goto cleanup;
    for (size_t i = 0; i < ins->images.n; i++)
        if ((rc = fdl__image_load(&ins->images.v[i], err)) != FDL_OK)
            goto cleanup;
    *out = ins;
    ins = NULL;
cleanup:
    fdl_inspection_destroy(ins);
    return rc;
}

int fdl_inspect_file(fdl_inspection **out, const char *path, fdl_input_kind kind, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out) || !FDL__CHECK_ARG(path))
        return fdl__fail(err, FDL_EINVAL, "fdl_inspect_file: out or path is NULL");
    *out = NULL;
    char *data = NULL;
    size_t size = 0;
    int rc = fdl__read_file(path, &data, &size, err);
    if (rc == FDL_OK)
        rc = fdl_inspect_data(out, data, size, path, kind, err);
    free(data);
    return rc;
}

void fdl_inspection_destroy(fdl_inspection *ins)
{
    if (!ins)
        return;
    fdl__images_free(&ins->images);
    free(ins->data);
    free(ins);
}

fdl_input_kind fdl_inspection_kind(const fdl_inspection *ins)
{
    return ins ? ins->kind : FDL_KIND_AUTO;
}

size_t fdl_inspection_count(const fdl_inspection *ins)
{
    return ins ? ins->images.n : 0;
}

const fdl_image *fdl_inspection_image(const fdl_inspection *ins, size_t i)
{
    if (!ins || i >= ins->images.n)
        return NULL;
    return &ins->images.v[i].pub;
}
