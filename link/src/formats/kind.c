/*
 * Input kinds: their names, and their detection from the bytes (DESIGN.md, "Content, not names"):
 * ELF e_machine 190 for a cubin, a host ELF object with a fatbin section, the fatbin and NVVM
 * container magics, "!<arch>\n", PTX text from its .version directive; the name only breaks the
 * tie for CUDA C. A finding that is none of them says what the bytes are instead.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "elfread.h"
#include "fdlink/link.h"
#include "internal.h"
#include "formats.h"
#include "unpack.h"
#include "libs.h"

/* ---- names --------------------------------------------------------------------------------- */

/*
 * Every name of a kind, in one row: the name fdl_input_kind_name writes and
 * fdl_input_kind_parse reads (with its other spellings), the article of detection's messages
 * ("not a cubin"), the title fdlink inspect prints, and the short name of an image inside a
 * container ("lib.a:mul.o#cubin"). A new kind is one row here (the parse error lists the names
 * from it).
 */
typedef struct kind_desc {
    fdl_input_kind kind;
    const char *name;
    const char *also[3]; /* other spellings fdl_input_kind_parse takes, NULL-terminated */
    const char *article, *title, *image;
} kind_desc;

static const kind_desc kinds[] = {
    {FDL_KIND_AUTO, "auto", {NULL}, "a link input", "unknown", "entry"},
    {FDL_KIND_PTX, "ptx", {NULL}, "PTX", "PTX", "ptx"},
    {FDL_KIND_CUBIN, "cubin", {NULL}, "a cubin", "cubin", "cubin"},
    {FDL_KIND_FATBIN, "fatbin", {NULL}, "a fatbin", "fatbin", "entry"},
    {FDL_KIND_LTOIR, "ltoir", {"lto-ir", NULL}, "LTO-IR", "LTO-IR", "ltoir"},
    {FDL_KIND_OBJECT, "object", {"o", NULL}, "a host object with device code",
     "host object with device code", "entry"},
    {FDL_KIND_LIBRARY, "library", {"lib", "a", NULL}, "a static library", "static library",
     "entry"},
    {FDL_KIND_CUDA, "cuda", {"cu", NULL}, "CUDA C",
     "CUDA C source (compiled with NVRTC when linked)", "entry"},
    {FDL_KIND_BITCODE, "bitcode", {"bc", NULL}, "NVVM bitcode",
     "NVVM bitcode (compiled with libNVVM when linked)", "entry"},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

/* The row of @p kind; the row of FDL_KIND_AUTO ("a link input", "unknown") for other values. */
static const kind_desc *desc_of(fdl_input_kind kind)
{
    for (size_t i = 0; i < NKINDS; i++)
        if (kinds[i].kind == kind)
            return &kinds[i];
    return &kinds[0];
}

const char *fdl_input_kind_name(fdl_input_kind kind)
{
    const kind_desc *d = desc_of(kind);
    return d->kind == kind ? d->name : "unknown";
}

const char *fdl_input_kind_title(fdl_input_kind kind)
{
    return desc_of(kind)->title;
}

const char *fdl__kind_image_name(fdl_input_kind kind)
{
    return desc_of(kind)->image;
}

int fdl_input_kind_parse(fdl_input_kind *out, const char *name, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out) || !FDL__CHECK_ARG(name))
        return fdl__fail(err, FDL_EINVAL, "fdl_input_kind_parse: out or name is NULL");
    *out = FDL_KIND_AUTO;
    for (size_t i = 0; i < NKINDS; i++) {
        int match = strcmp(name, kinds[i].name) == 0;
        for (size_t a = 0; !match && kinds[i].also[a]; a++)
            match = strcmp(name, kinds[i].also[a]) == 0;
        if (match) {
            *out = kinds[i].kind;
            return FDL_OK;
        }
    }
    /* "ptx, cubin, ... or bitcode": every kind but auto, by its name */
    char list[256];
    size_t n = 0;
    list[0] = '\0';
    for (size_t i = 1; i < NKINDS && n < sizeof list; i++)
        n += (size_t)snprintf(list + n, sizeof list - n, "%s%s",
                              i == 1 ? "" : i + 1 == NKINDS ? " or " : ", ", kinds[i].name);
    return fdl__fail(err, FDL_EINVAL, "unknown input kind '%.64s' (expected %s)", name, list);
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
            const unsigned char *nl = memchr(s + i, '\n', n - i);
            i = nl ? (size_t)(nl - s) : n;
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

/*
 * Text: no control character but white space (TAB, LF, VT, FF, CR: 9 to 13) in the first 4 KiB,
 * and no NUL at all. Sixteen bytes at a time where SSE2 is there (this runs on every input added).
 */
static int is_text(const unsigned char *p, size_t n)
{
    size_t look = n < 4096 ? n : 4096, i = 0;
#ifdef __SSE2__
    const __m128i minus1 = _mm_set1_epi8(-1), space = _mm_set1_epi8(0x20),
                  eight = _mm_set1_epi8(8), fourteen = _mm_set1_epi8(14);
    for (; i + 16 <= look; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        /* 0..0x1f (bytes from 0x80 are negative as signed: not controls) */
        __m128i ctrl = _mm_and_si128(_mm_cmpgt_epi8(v, minus1), _mm_cmplt_epi8(v, space));
        __m128i white = _mm_and_si128(_mm_cmpgt_epi8(v, eight), _mm_cmplt_epi8(v, fourteen));
        if (_mm_movemask_epi8(_mm_andnot_si128(white, ctrl)))
            return 0;
    }
#endif
    for (; i < look; i++) {
        unsigned char c = p[i];
        if (c < 0x20 && (c < '\t' || c > '\r'))
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

void fdl__sniff(fdl__sniffed *s, const unsigned char *p, size_t n, const char *name)
{
    s->kind = FDL_KIND_AUTO;
    snprintf(s->what, sizeof s->what, "binary data");
    if (n >= 4 && memcmp(p, "\x7f" "ELF", 4) == 0) {
        fdl__elf e;
        const char *why = NULL;
        if (n >= 20 && fdl__le16(p + 18) == FDL__EM_CUDA) {
            /* a cubin, malformed or not: fdl__unpack validates it and says what is wrong */
            s->kind = FDL_KIND_CUBIN;
            snprintf(s->what, sizeof s->what, "a cubin");
            return;
        }
        if (!fdl__elf_open(&e, p, n, &why)) {
            snprintf(s->what, sizeof s->what, "%s", why);
            return;
        }
        const char *machine = fdl__elf_machine_name(e.machine);
        char host[64];
        if (machine)
            snprintf(host, sizeof host, "%s %s", machine, fdl__elf_type_name(e.type));
        else
            snprintf(host, sizeof host, "ELF %s (machine %u)", fdl__elf_type_name(e.type), e.machine);
        char bad[100];
        uint64_t at = 0;
        if (fdl__elf_validate(&e, bad, sizeof bad, &at) == 0) {
            snprintf(s->what, sizeof s->what, "a malformed host %s: %s (at byte %llu)",
                     fdl__elf_type_name(e.type), bad, (unsigned long long)at);
            return;
        }
        if (fdl__elf_has_device_code(&e)) {
            s->kind = FDL_KIND_OBJECT;
            snprintf(s->what, sizeof s->what, "a host object (%s) with device code", host);
        } else {
            snprintf(s->what, sizeof s->what,
                     "a host %s with no device code (no .nv_fatbin or __nv_relfatbin section)",
                     fdl__elf_type_name(e.type));
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
    if (fdl__is_bitcode(p, n)) {
        s->kind = FDL_KIND_BITCODE;
        snprintf(s->what, sizeof s->what, "NVVM bitcode");
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
    return desc_of(kind)->article;
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
    if (desc_of(stated)->kind != stated) /* not a row of the table */
        return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "unknown input kind %d",
                          (int)stated);
    if (n == 0)
        return fdl__error(err, FDL_EKIND, name, 0, 0, NULL, "empty input");
    fdl__sniffed s;
    fdl__sniff(&s, p, n, name);
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
