/*
 * PTX prototype scanner: the module directives (.version, .target, .address_size) and every .func /
 * .entry prototype with its linkage, return parameter and parameters. Everything else at module
 * scope is skipped; bodies and other brace blocks are skipped by brace matching that respects
 * comments and string literals. One pass over the input, no backtracking beyond one token of
 * look-ahead, or a prototype (or a parameter's head) read straight from the bytes in nvcc's form
 * and read again as tokens when it is not: each byte three times at most. Every read is bounded by
 * the input length (the text need not be NUL-terminated).
 *
 * Speed (benchmark 5: prototypes are most of its text): a prototype as nvcc writes it is read
 * without tokens (proto_fast; the token path reads anything else and reports every error), its
 * head (`.visible .func`) too (head_fast) and each nvcc parameter line at once (param_head),
 * directives are told apart by one switch when they are read (dir_id), identifiers end sixteen
 * bytes at a time, names are copied once into blocks that never move, no struct just written
 * field by field is copied whole (a store-forwarding stall), and bodies are passed over 32 bytes
 * at a time (AVX2, chosen at run time) or sixteen (SSE2) to the next byte that matters, their
 * newlines counted as they go.
 * test_ptx's scans.golden holds a digest of every result on the fuzz corpus, its prefixes and its
 * mutations, as the scanner gave them before it was made fast.
 * What a body does with its parameters (ABI-13, fdl__ptx_scan_bodies only) is ptx_body.c's; the
 * types both files share are ptx_scan.h's.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AVX2_SKIP 1
#endif

#include "fdlink/ptx.h"
#include "abi_internal.h"
#include "ptx_scan.h"

/*
 * Names are copied into blocks that never move, so that a name's pointer is final as soon as it
 * is read: nothing is kept by offset and fixed up after the scan.
 */
typedef struct name_block {
    struct name_block *next; /* the block before */
    size_t used, cap;
    char data[];
} name_block;

/* Bytes of a name block after the first (which is sized from the text). */
#define NAME_BLOCK 65536

/*
 * Directives the scanner tells apart (dir_id): first the parameter types, in the order of `types`
 * (their values index it), then the rest; the statement starts (D_FUNC to D_LOC) are contiguous.
 */
enum dir_id {
    D_B8, D_B16, D_B32, D_B64, D_B128, D_U8, D_U16, D_U32, D_U64, D_S8, D_S16, D_S32, D_S64,
    D_F16, D_F16X2, D_BF16, D_BF16X2, D_F32, D_F64, D_PRED,
    D_NTYPES,
    D_PARAM = D_NTYPES, D_REG, D_ALIGN, D_PTR, D_GLOBAL, D_CONST, D_LOCAL, D_SHARED, D_ATTRIBUTE,
    D_PRAGMA,
    D_FUNC, D_ENTRY, D_VISIBLE, D_WEAK, D_EXTERN, D_COMMON, D_VERSION, D_TARGET, D_ADDRESS_SIZE,
    D_FILE, D_SECTION, D_LOC,
    D_OTHER
};

/* ---- errors ------------------------------------------------------------------------------- */

static unsigned col_at(const scanner *sc, size_t off)
{
    size_t c = off - sc->bol + 1;
    return c > UINT_MAX ? UINT_MAX : (unsigned)c;
}

static void newline_at(scanner *sc, size_t nl)
{
    if (sc->line < UINT_MAX)
        sc->line++;
    sc->bol = nl + 1;
}

static int fail_nul(scanner *sc, size_t off)
{
    return sc_fail(sc, FDL_EPARSE, sc->line, col_at(sc, off), NULL,
                   "unexpected NUL byte at offset %zu", off);
}

/* A token as it appears in a message: quoted and shortened, or "end of input". */
static void tok_text(const scanner *sc, const token *t, char *buf, size_t size)
{
    if (t->kind == T_EOF) {
        fdl__strlcpy(buf, "end of input", size);
        return;
    }
    char q[32 + 4];
    snprintf(buf, size, "'%s'", fdl__quote(q, sizeof q, sc->s + t->off, t->len, 32));
}

/* ---- lexer -------------------------------------------------------------------------------- */

/* Skip a comment that starts at pos ("//" or "/" "*"). */
static int skip_comment(scanner *sc)
{
    const char *s = sc->s;
    size_t start = sc->pos;
    unsigned line = sc->line, col = col_at(sc, start);
    size_t p = start + 2;
    if (s[start + 1] == '/') {
        while (p < sc->len && s[p] != '\n') {
            if (s[p] == '\0')
                return fail_nul(sc, p);
            p++;
        }
        sc->pos = p; /* the newline, if any, is whitespace */
        return FDL_OK;
    }
    for (;;) {
        if (p + 1 >= sc->len)
            return sc_fail(sc, FDL_EPARSE, line, col, NULL, "unterminated comment");
        char c = s[p];
        if (c == '*' && s[p + 1] == '/')
            break;
        if (c == '\0') {
            sc->pos = p;
            return fail_nul(sc, p);
        }
        if (c == '\n')
            newline_at(sc, p);
        p++;
    }
    sc->pos = p + 2;
    return FDL_OK;
}

/* Skip whitespace and comments. */
static inline int skip_space(scanner *sc)
{
    const char *s = sc->s;
    size_t p = sc->pos, len = sc->len;
    while (p < len) {
        unsigned char c = (unsigned char)s[p];
        if (char_class[c] & BLANK) {
            p++;
        } else if (c == '\n') {
            newline_at(sc, p);
            p++;
        } else if (c == '/' && p + 1 < len && (s[p + 1] == '/' || s[p + 1] == '*')) {
            sc->pos = p;
            int rc = skip_comment(sc);
            if (rc != FDL_OK)
                return rc;
            p = sc->pos;
        } else {
            break;
        }
    }
    sc->pos = p;
    return FDL_OK;
}

/* Skip a string literal starting at @p p (the opening quote); returns the offset after it. */
static int skip_string(scanner *sc, size_t p, size_t *end)
{
    unsigned line = sc->line, col = col_at(sc, p);
    p++;
    while (p < sc->len) {
        char c = sc->s[p];
        if (c == '"') {
            *end = p + 1;
            return FDL_OK;
        }
        if (c == '\0')
            return fail_nul(sc, p);
        if (c == '\n')
            break;
        /* an escape takes the next byte along, unless it ends the line or is a NUL (refused
         * on the next turn, as anywhere else) */
        if (c == '\\' && p + 1 < sc->len && sc->s[p + 1] != '\n' && sc->s[p + 1] != '\0')
            p++;
        p++;
    }
    return sc_fail(sc, FDL_EPARSE, line, col, NULL, "unterminated string literal");
}

/*
 * The directive named @p w (@p n bytes after the dot): a parameter type (its index in `types`,
 * below), a directive the scanner acts on, or D_OTHER. One switch per directive token, so that
 * the parser compares small integers instead of strings.
 */
/* The first @p n bytes of @p w are @p lit (unrolled: @p n is a constant wherever it is used). */
static inline int same(const char *w, const char *lit, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (w[i] != lit[i])
            return 0;
    return 1;
}

static int dir_id(const char *w, size_t n)
{
#define IS(lit) same(w, lit, sizeof lit - 1)
    switch (n) {
    case 2:
        if (w[1] != '8')
            return D_OTHER;
        return w[0] == 'b' ? D_B8 : w[0] == 'u' ? D_U8 : w[0] == 's' ? D_S8 : D_OTHER;
    case 3: {
        /* b, u, s, f with 16, 32, 64; reg, ptr, loc */
        int width = w[1] == '1' && w[2] == '6' ? 0 : w[1] == '3' && w[2] == '2' ? 1
                    : w[1] == '6' && w[2] == '4' ? 2 : -1;
        static const unsigned char floats[3] = {D_F16, D_F32, D_F64};
        switch (w[0]) {
        case 'b': return width < 0 ? D_OTHER : D_B16 + width;
        case 'u': return width < 0 ? D_OTHER : D_U16 + width;
        case 's': return width < 0 ? D_OTHER : D_S16 + width;
        case 'f': return width < 0 ? D_OTHER : floats[width];
        case 'r': return IS("reg") ? D_REG : D_OTHER;
        case 'p': return IS("ptr") ? D_PTR : D_OTHER;
        case 'l': return IS("loc") ? D_LOC : D_OTHER;
        default: return D_OTHER;
        }
    }
    case 4:
        switch (w[0]) {
        case 'b': return IS("b128") ? D_B128 : IS("bf16") ? D_BF16 : D_OTHER;
        case 'p': return IS("pred") ? D_PRED : D_OTHER;
        case 'w': return IS("weak") ? D_WEAK : D_OTHER;
        case 'f': return IS("func") ? D_FUNC : IS("file") ? D_FILE : D_OTHER;
        default: return D_OTHER;
        }
    case 5:
        switch (w[0]) {
        case 'f': return IS("f16x2") ? D_F16X2 : D_OTHER;
        case 'p': return IS("param") ? D_PARAM : D_OTHER;
        case 'a': return IS("align") ? D_ALIGN : D_OTHER;
        case 'c': return IS("const") ? D_CONST : D_OTHER;
        case 'l': return IS("local") ? D_LOCAL : D_OTHER;
        case 'e': return IS("entry") ? D_ENTRY : D_OTHER;
        default: return D_OTHER;
        }
    case 6:
        switch (w[0]) {
        case 'b': return IS("bf16x2") ? D_BF16X2 : D_OTHER;
        case 'g': return IS("global") ? D_GLOBAL : D_OTHER;
        case 's': return IS("shared") ? D_SHARED : D_OTHER;
        case 'p': return IS("pragma") ? D_PRAGMA : D_OTHER;
        case 'e': return IS("extern") ? D_EXTERN : D_OTHER;
        case 'c': return IS("common") ? D_COMMON : D_OTHER;
        case 't': return IS("target") ? D_TARGET : D_OTHER;
        default: return D_OTHER;
        }
    case 7:
        switch (w[0]) {
        case 'v': return IS("visible") ? D_VISIBLE : IS("version") ? D_VERSION : D_OTHER;
        case 's': return IS("section") ? D_SECTION : D_OTHER;
        default: return D_OTHER;
        }
    case 9:
        return IS("attribute") ? D_ATTRIBUTE : D_OTHER;
    case 12:
        return IS("address_size") ? D_ADDRESS_SIZE : D_OTHER;
    default:
        return D_OTHER;
    }
#undef IS
}

/*
 * The end of the identifier characters from @p p (is_ident_char), sixteen bytes at a time where
 * SSE2 is there: [A-Za-z0-9_$], found by range compares, the first byte outside them by its bit.
 */
static inline size_t ident_end(const char *s, size_t p, size_t len)
{
#if defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
    const __m128i case_bit = _mm_set1_epi8(0x20), a = _mm_set1_epi8('a' - 1),
                  z = _mm_set1_epi8('z' + 1), d0 = _mm_set1_epi8('0' - 1),
                  d9 = _mm_set1_epi8('9' + 1), us = _mm_set1_epi8('_'),
                  dollar = _mm_set1_epi8('$');
    while (p + 16 <= len) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + p));
        /* bytes >= 0x80 are negative as signed: outside every range */
        __m128i low = _mm_or_si128(v, case_bit);
        __m128i alpha = _mm_and_si128(_mm_cmpgt_epi8(low, a), _mm_cmpgt_epi8(z, low));
        __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, d0), _mm_cmpgt_epi8(d9, v));
        __m128i other = _mm_or_si128(_mm_cmpeq_epi8(v, us), _mm_cmpeq_epi8(v, dollar));
        unsigned in = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(alpha, digit), other));
        if (in != 0xffffu)
            return p + (size_t)__builtin_ctz(~in);
        p += 16;
    }
#endif
    while (p < len && is_ident_char((unsigned char)s[p]))
        p++;
    return p;
}

/* The lexer proper: the next token after white space and comments. */
static int lex(scanner *sc, token *t)
{
    int rc = skip_space(sc);
    if (rc != FDL_OK)
        return rc;
    const char *s = sc->s;
    size_t p = sc->pos, len = sc->len;
    t->off = p;
    t->line = sc->line;
    t->col = col_at(sc, p);
    t->len = 0;
    t->id = D_OTHER;
    if (p >= len) {
        t->kind = T_EOF;
        return FDL_OK;
    }
    unsigned char c = (unsigned char)s[p];
    if (c == '\0')
        return fail_nul(sc, p);
    if (c == '.' && p + 1 < len && is_ident_start((unsigned char)s[p + 1]) && s[p + 1] != '%') {
        t->kind = T_DIR;
        p = ident_end(s, p + 1, len);
        t->id = dir_id(s + t->off + 1, p - t->off - 1);
    } else if (is_ident_start(c)) {
        t->kind = T_IDENT;
        p = ident_end(s, p + 1, len);
    } else if (c >= '0' && c <= '9') {
        t->kind = T_NUM;
        p++;
        while (p < len && (is_ident_char((unsigned char)s[p]) || s[p] == '.'))
            p++;
    } else if (c == '"') {
        t->kind = T_STR;
        rc = skip_string(sc, p, &p);
        if (rc != FDL_OK)
            return rc;
    } else {
        t->kind = T_PUNCT;
        p++;
    }
    t->len = p - t->off;
    sc->pos = p;
    return FDL_OK;
}

static inline int next(scanner *sc, token *t)
{
    if (sc->has_back) {
        *t = sc->back;
        sc->has_back = 0;
        return FDL_OK;
    }
    return lex(sc, t);
}

static inline void push_back(scanner *sc, const token *t)
{
    sc->back = *t;
    sc->has_back = 1;
}

static inline int peek(scanner *sc, token *t)
{
    int rc = next(sc, t);
    if (rc == FDL_OK)
        push_back(sc, t);
    return rc;
}

/* Is @p t the directive @p id? */
static inline int tok_dir(const token *t, int id)
{
    return t->kind == T_DIR && t->id == id;
}

static inline int tok_punct(const scanner *sc, const token *t, char c)
{
    return t->kind == T_PUNCT && sc->s[t->off] == c;
}

/* Skip to the end of the current line (line-oriented directives such as .loc and @@DWARF). */
static int skip_line(scanner *sc)
{
    size_t p = sc->pos;
    while (p < sc->len && sc->s[p] != '\n') {
        if (sc->s[p] == '\0')
            return fail_nul(sc, p);
        p++;
    }
    sc->pos = p;
    return FDL_OK;
}

/*
 * Bodies are most of a PTX module and hold nothing the scan needs but their end, so they are
 * skipped sixteen bytes at a time with SSE2 (every x86-64), else eight (SWAR): a block with none
 * of the bytes that matter ({ } " / NUL) is passed over at once, its newlines counted, as memchr
 * does, and a block with one is left exactly at it. Little-endian GCC/Clang hosts only; elsewhere one byte at a time.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    (defined(__GNUC__) || defined(__clang__))
#define FAST_SKIP 1
#define ONES 0x0101010101010101ull
#define LOW7 0x7f7f7f7f7f7f7f7full

/* 0x80 in each byte of @p w that equals @p c, exactly (no borrow between bytes). */
static inline uint64_t bytes_equal(uint64_t w, unsigned char c)
{
    uint64_t x = w ^ (ONES * c);
    uint64_t t = ((x & LOW7) + LOW7) | x;
    return ~(t | LOW7);
}

#ifdef __SSE2__
/* Bits set in a 16-bit mask (no popcnt instruction needed). */
static inline unsigned count16(unsigned m)
{
    m = m - ((m >> 1) & 0x5555u);
    m = (m & 0x3333u) + ((m >> 2) & 0x3333u);
    m = (m + (m >> 4)) & 0x0f0fu;
    return (m + (m >> 8)) & 0x1fu;
}

/* Add @p count lines (saturating, as newline_at does one at a time). */
static inline void add_lines(scanner *sc, size_t count)
{
    sc->line = count > UINT_MAX - sc->line ? UINT_MAX : sc->line + (unsigned)count;
}

/* The newlines counted in each byte lane of @p acc (each lane at most 255), summed. */
static inline size_t lane_sum(__m128i acc)
{
    __m128i sums = _mm_sad_epu8(acc, _mm_setzero_si128());
    return (size_t)_mm_cvtsi128_si32(sums) + (size_t)_mm_cvtsi128_si32(_mm_srli_si128(sums, 8));
}
#endif

#ifdef AVX2_SKIP
/*
 * skip_plain_words thirty-two bytes at a time, on x86-64 processors with AVX2 (chosen at run
 * time): to the first byte of { } " / NUL, or to where fewer than 32 bytes are left (the SSE2 loop
 * goes on from there). The same counting of newlines and of the line's start.
 */
__attribute__((target("avx2,popcnt"))) static size_t skip_plain_avx2(scanner *sc, size_t p)
{
    const char *s = sc->s;
    const __m256i open = _mm256_set1_epi8('{'), close = _mm256_set1_epi8('}'),
                  quote = _mm256_set1_epi8('"'), slash = _mm256_set1_epi8('/'),
                  nul = _mm256_setzero_si256(), newline = _mm256_set1_epi8('\n');
    size_t lines = 0, last = 0;
    uint32_t last_nl = 0;
    while (p + 32 <= sc->len) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(s + p));
        __m256i stop = _mm256_or_si256(
            _mm256_or_si256(_mm256_cmpeq_epi8(v, open), _mm256_cmpeq_epi8(v, close)),
            _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote),
                                            _mm256_cmpeq_epi8(v, slash)),
                            _mm256_cmpeq_epi8(v, nul)));
        uint32_t nl = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, newline));
        uint32_t stops = (uint32_t)_mm256_movemask_epi8(stop);
        if (stops) {
            unsigned first = (unsigned)__builtin_ctz(stops);
            nl &= (uint32_t)((1ull << first) - 1); /* the newlines before it */
            if (nl) {
                lines += (size_t)__builtin_popcount(nl);
                last = p;
                last_nl = nl;
            }
            p += first;
            break;
        }
        if (nl) {
            lines += (size_t)__builtin_popcount(nl);
            last = p;
            last_nl = nl;
        }
        p += 32;
    }
    if (lines)
        sc->line = lines > UINT_MAX - sc->line ? UINT_MAX : sc->line + (unsigned)lines;
    if (last_nl)
        sc->bol = last + (size_t)(31 - __builtin_clz(last_nl)) + 1;
    return p;
}

/* Whether this processor runs AVX2 (asked once; a race only asks twice). */
static int have_avx2(void)
{
    static volatile int known = -1;
    int k = known;
    if (k < 0) {
        __builtin_cpu_init();
        known = k = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt") ? 1 : 0;
    }
    return k;
}
#endif

/*
 * Pass over bytes with none of { } " / NUL from @p p, to the first byte that is one (or to where
 * fewer than a word's bytes are left); the newlines passed over are counted.
 */
static size_t skip_plain_words(scanner *sc, size_t p)
{
    const char *s = sc->s;
#ifdef AVX2_SKIP
    if (have_avx2())
        p = skip_plain_avx2(sc, p); /* at a byte that matters, or fewer than 32 left */
#endif
#ifdef __SSE2__
    /* sixteen bytes at a time where SSE2 is there (every x86-64); newlines are counted in byte
     * lanes (flushed every 255 blocks and at the end) and only the last block that held one is
     * remembered, for the line's start */
    const __m128i open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}'),
                  quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('/'),
                  nul = _mm_setzero_si128(), newline = _mm_set1_epi8('\n');
    __m128i lanes = _mm_setzero_si128();
    unsigned blocks = 0, last_nl = 0;
    size_t last = 0;
    while (p + 16 <= sc->len) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + p));
        __m128i stop = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, open), _mm_cmpeq_epi8(v, close)),
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)),
                         _mm_cmpeq_epi8(v, nul)));
        __m128i is_nl = _mm_cmpeq_epi8(v, newline);
        unsigned nl = (unsigned)_mm_movemask_epi8(is_nl);
        unsigned stops = (unsigned)_mm_movemask_epi8(stop);
        if (stops) {
            unsigned first = (unsigned)__builtin_ctz(stops);
            nl &= (1u << first) - 1; /* the newlines before it */
            if (nl) {
                last = p;
                last_nl = nl;
            }
            add_lines(sc, lane_sum(lanes) + count16(nl));
            if (last_nl)
                sc->bol = last + (size_t)(31 - __builtin_clz(last_nl)) + 1;
            return p + first;
        }
        lanes = _mm_sub_epi8(lanes, is_nl);
        if (nl) {
            last = p;
            last_nl = nl;
        }
        p += 16;
        if (++blocks == 255) {
            add_lines(sc, lane_sum(lanes));
            lanes = _mm_setzero_si128();
            blocks = 0;
        }
    }
    add_lines(sc, lane_sum(lanes));
    if (last_nl)
        sc->bol = last + (size_t)(31 - __builtin_clz(last_nl)) + 1;
#endif
    while (p + 8 <= sc->len) {
        uint64_t w;
        memcpy(&w, s + p, 8);
        uint64_t stop = bytes_equal(w, '{') | bytes_equal(w, '}') | bytes_equal(w, '"') |
                        bytes_equal(w, '/') | bytes_equal(w, 0);
        uint64_t nl = bytes_equal(w, '\n');
        unsigned first = 8;
        if (stop) {
            first = (unsigned)__builtin_ctzll(stop) >> 3;
            nl &= (1ull << (8 * first)) - 1; /* the newlines before it */
        }
        if (nl) {
            unsigned count = (unsigned)(((nl >> 7) * ONES) >> 56); /* bytes flagged */
            sc->line = sc->line > UINT_MAX - count ? UINT_MAX : sc->line + count;
            sc->bol = p + (size_t)((63 - __builtin_clzll(nl)) >> 3) + 1;
        }
        if (stop)
            return p + first;
        p += 8;
    }
    return p;
}
#endif

/*
 * Skip a brace block whose `{` (token @p open) was just read: to the matching `}`, counting nested
 * braces and ignoring those in comments and string literals. One pass, nothing copied.
 */
static int skip_block(scanner *sc, const token *open, const char *symbol)
{
    const char *s = sc->s;
    size_t len = sc->len;
    size_t p = sc->pos;
    size_t depth = 1;
    for (;;) {
#ifdef FAST_SKIP
        p = skip_plain_words(sc, p); /* to the next byte that matters, or the last few */
#endif
        if (p >= len)
            break;
        char c = s[p];
        switch (c) {
        case '\n':
            newline_at(sc, p);
            p++;
            break;
        case '{':
            depth++;
            p++;
            break;
        case '}':
            p++;
            if (--depth == 0) {
                sc->pos = p;
                return FDL_OK;
            }
            break;
        case '"': {
            int rc = skip_string(sc, p, &p);
            if (rc != FDL_OK)
                return rc;
            break;
        }
        case '/':
            if (p + 1 < len && (s[p + 1] == '/' || s[p + 1] == '*')) {
                sc->pos = p;
                int rc = skip_comment(sc);
                if (rc != FDL_OK)
                    return rc;
                p = sc->pos;
            } else {
                p++;
            }
            break;
        case '\0':
            return fail_nul(sc, p);
        default:
            p++;
            break;
        }
    }
    sc->pos = p;
    if (symbol)
        return sc_fail(sc, FDL_EPARSE, open->line, open->col, symbol,
                       "%s: unterminated body: no '}' matches this '{'", symbol);
    return sc_fail(sc, FDL_EPARSE, open->line, open->col, NULL,
                   "unterminated block: no '}' matches this '{'");
}

/* ---- output under construction ------------------------------------------------------------ */

static int out_of_memory(scanner *sc, const token *at)
{
    return sc_fail(sc, FDL_ENOMEM, at->line, at->col, NULL, "out of memory");
}

static inline int add_name(scanner *sc, const token *t, const char **out)
{
    if (t->len > FDL_PTX_MAX_IDENT)
        return sc_fail(sc, FDL_ELIMIT, t->line, t->col, NULL,
                       "identifier longer than %d bytes (a limit of fdlink's, "
                       "FDL_PTX_MAX_IDENT)", FDL_PTX_MAX_IDENT);
    name_block *b = sc->ptx->names;
    if (!b || b->cap - b->used < t->len + 1) {
        /* the first block from the text's size, the others NAME_BLOCK; a name always fits */
        size_t cap = b ? NAME_BLOCK : sc->first_names;
        if (cap < t->len + 1)
            cap = t->len + 1;
        name_block *nb = malloc(sizeof *nb + cap);
        if (!nb)
            return out_of_memory(sc, t);
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        sc->ptx->names = b = nb;
    }
    char *name = b->data + b->used;
#ifdef __SSE2__
    /* most names are under 32 bytes: two unaligned 16-byte copies where both sides have room
     * (the bytes past the name are overwritten by the next one, or never read) */
    if (t->len < 32 && sc->len - t->off >= 32 && b->cap - b->used >= 32) {
        const char *from = sc->s + t->off;
        _mm_storeu_si128((__m128i *)(void *)name, _mm_loadu_si128((const __m128i *)(const void *)from));
        _mm_storeu_si128((__m128i *)(void *)(name + 16),
                         _mm_loadu_si128((const __m128i *)(const void *)(from + 16)));
    } else
#endif
        memcpy(name, sc->s + t->off, t->len);
    name[t->len] = '\0';
    b->used += t->len + 1;
    *out = name;
    return FDL_OK;
}

/* Make room for one more parameter (unnamed until its name is read); returns its index. */
static inline int new_param(scanner *sc, const token *at, size_t *index)
{
    fdl_ptx *ptx = sc->ptx;
    if (ptx->nparams >= sc->cap_params || !ptx->params) {
        size_t need, cap = sc->cap_params;
        if (!fdl__size_add(&need, ptx->nparams, 1))
            return out_of_memory(sc, at);
        fdl_ptx_param *params = fdl__grow(ptx->params, &cap, need, sizeof *params);
        if (!params)
            return out_of_memory(sc, at);
        ptx->params = params;
        sc->cap_params = cap;
    }
    *index = ptx->nparams++;
    fdl_ptx_param *p = &ptx->params[*index];
    memset(p, 0, sizeof *p);
    p->name = "";
    return FDL_OK;
}

/* ---- prototypes --------------------------------------------------------------------------- */

typedef struct type_info {
    char name[8]; /* NUL-padded, as fdl_ptx_param.type holds it */
    unsigned bits;
} type_info;

/* Indexed by dir_id: D_B8 to D_PRED. */
static const type_info types[D_NTYPES] = {
    [D_B8] = {"b8", 8},       [D_B16] = {"b16", 16},       [D_B32] = {"b32", 32},
    [D_B64] = {"b64", 64},    [D_B128] = {"b128", 128},    [D_U8] = {"u8", 8},
    [D_U16] = {"u16", 16},    [D_U32] = {"u32", 32},       [D_U64] = {"u64", 64},
    [D_S8] = {"s8", 8},       [D_S16] = {"s16", 16},       [D_S32] = {"s32", 32},
    [D_S64] = {"s64", 64},    [D_F16] = {"f16", 16},       [D_F16X2] = {"f16x2", 32},
    [D_BF16] = {"bf16", 16},  [D_BF16X2] = {"bf16x2", 32}, [D_F32] = {"f32", 32},
    [D_F64] = {"f64", 64},    [D_PRED] = {"pred", 1},
};
_Static_assert(sizeof types[0].name == sizeof ((fdl_ptx_param *)0)->type,
               "a type name is copied whole into fdl_ptx_param.type");

static const type_info *find_type(const token *t)
{
    return t->kind == T_DIR && t->id < D_NTYPES ? &types[t->id] : NULL;
}

/* Context of the prototype being read, for messages. */
typedef struct proto_ctx {
    const char *kind;   /* ".func" or ".entry" */
    const char *name;   /* NULL until the name has been read */
} proto_ctx;

static const char *pc_name(const scanner *sc, const proto_ctx *pc)
{
    (void)sc;
    return pc->name;
}

static int proto_fail(scanner *sc, const proto_ctx *pc, const token *t, const char *expected)
{
    char found[48];
    tok_text(sc, t, found, sizeof found);
    const char *name = pc_name(sc, pc);
    if (name)
        return sc_fail(sc, FDL_EPARSE, t->line, t->col, name,
                       "%s: malformed prototype: expected %s, found %s", name, expected, found);
    return sc_fail(sc, FDL_EPARSE, t->line, t->col, NULL,
                   "malformed %s prototype: expected %s, found %s", pc->kind, expected, found);
}

/* A decimal number token; 0 when it is not one or overflows @p max. */
static int tok_decimal(const scanner *sc, const token *t, size_t max, size_t *value)
{
    if (t->kind != T_NUM)
        return 0;
    size_t v = 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = sc->s[t->off + i];
        if (c < '0' || c > '9')
            return 0;
        size_t d = (size_t)(c - '0');
        if (v > (max - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *value = v;
    return 1;
}

static void set_type(fdl_ptx_param *p, const type_info *type)
{
    memcpy(p->type, type->name, sizeof p->type);
    p->bits = type->bits;
    p->bytes = type->bits < 8 ? 1 : type->bits / 8;
}

/* After a parameter's name (or type), @p t the token that follows: an optional `[N]`. */
static int param_array(scanner *sc, const proto_ctx *pc, fdl_ptx_param *p, token *t)
{
    if (!tok_punct(sc, t, '['))
        return FDL_OK;
    next(sc, t);
    size_t n;
    int rc;
    if ((rc = next(sc, t)) != FDL_OK)
        return rc;
    if (!tok_decimal(sc, t, SIZE_MAX, &n) || n == 0)
        return proto_fail(sc, pc, t, "an array size");
    if (!fdl__size_mul(&p->bytes, p->bytes, n))
        return sc_fail(sc, FDL_ELIMIT, t->line, t->col, pc_name(sc, pc),
                       "array size %.*s is too large", (int)(t->len > 32 ? 32 : t->len),
                       sc->s + t->off);
    p->array = n;
    if ((rc = next(sc, t)) != FDL_OK)
        return rc;
    if (!tok_punct(sc, t, ']'))
        return proto_fail(sc, pc, t, "']'");
    return FDL_OK;
}

/*
 * The head of a parameter as nvcc writes every one, `.param .TYPE NAME` with only blanks and
 * newlines between, read straight from the bytes without tokens (the `.param` may be the
 * look-ahead token already). 1 when it was that (the position, type and name of @p p set, the
 * scanner after the name, as the token path would leave them); 0 when it is anything else
 * (nothing consumed: the token path reads it and says what is wrong); FDL_ENOMEM (reported) when
 * the name cannot be kept. With @p same (may be NULL), a name equal to *same is not copied again
 * but shares it, and a name copied becomes *same.
 */
/* Past blanks and newlines from @p pos (no comment), counting the lines as newline_at does. */
static inline size_t skip_blank_lines(const char *s, size_t pos, size_t len, unsigned *line,
                                      size_t *bol)
{
    while (pos < len) {
        unsigned char c = (unsigned char)s[pos];
        if (char_class[c] & BLANK) {
            pos++;
        } else if (c == '\n') {
            if (*line < UINT_MAX)
                (*line)++;
            *bol = ++pos;
        } else {
            break;
        }
    }
    return pos;
}

static inline unsigned col_of(size_t off, size_t bol)
{
    size_t c = off - bol + 1;
    return c > UINT_MAX ? UINT_MAX : (unsigned)c;
}

/* The three-letter directive at @p w when it is a parameter type (as dir_id says), else what
 * dir_id says: inline, for the types nvcc writes in nearly every parameter. */
static inline int type3(const char *w)
{
    int width = w[1] == '3' && w[2] == '2' ? 1 : w[1] == '6' && w[2] == '4' ? 2
                : w[1] == '1' && w[2] == '6' ? 0 : -1;
    if (width >= 0) {
        switch (w[0]) {
        case 'b': return D_B16 + width;
        case 'u': return D_U16 + width;
        case 's': return D_S16 + width;
        case 'f': return width == 0 ? D_F16 : width == 1 ? D_F32 : D_F64;
        default: break;
        }
    }
    return dir_id(w, 3);
}

static int param_head(scanner *sc, fdl_ptx_param *p, const char **same)
{
    const char *s = sc->s;
    size_t len = sc->len, pos = sc->pos, bol = sc->bol;
    unsigned line = sc->line, first_line, first_col;
    int type;
    if (!sc->has_back && len - pos >= 16 && s[pos] == '\n' &&
        memcmp(s + pos + 1, "\t.param .", 9) == 0 && s[pos + 13] == ' ' &&
        (type = type3(s + pos + 10)) < D_NTYPES) {
        /* nvcc's "\n\t.param .b64 NAME" (the type three letters), read at once: the next line,
         * `.param` in its column 2, the name after the one space */
        if (line < UINT_MAX)
            line++;
        bol = pos + 1;
        first_line = line;
        first_col = 2;
        pos += 14;
        goto name;
    }
    if (sc->has_back) {
        /* `.param` already read as the look-ahead token (after a parameter list's `(`) */
        if (!tok_dir(&sc->back, D_PARAM))
            return 0;
        first_line = sc->back.line;
        first_col = sc->back.col;
    } else {
        /* `.param`, a whole word */
        pos = skip_blank_lines(s, pos, len, &line, &bol);
        if (len - pos < 7 || memcmp(s + pos, ".param", 6) != 0 ||
            is_ident_char((unsigned char)s[pos + 6]))
            return 0;
        first_line = line;
        first_col = col_of(pos, bol);
        pos += 6;
    }
    /* `.TYPE`: a few letters and digits */
    pos = skip_blank_lines(s, pos, len, &line, &bol);
    if (len - pos < 2 || s[pos] != '.' || !is_ident_start((unsigned char)s[pos + 1]) ||
        s[pos + 1] == '%')
        return 0;
    size_t type_at = pos + 1;
    pos += 2;
    while (pos < len && is_ident_char((unsigned char)s[pos]))
        pos++;
    type = pos - type_at == 3 ? type3(s + type_at) : dir_id(s + type_at, pos - type_at);
    if (type >= D_NTYPES)
        return 0;
name:; /* NAME */
    size_t name_bol = bol;
    unsigned name_line = line;
    pos = skip_blank_lines(s, pos, len, &name_line, &name_bol);
    if (len - pos < 2 || !is_ident_start((unsigned char)s[pos]))
        return 0;
    size_t name_at = pos;
    pos = ident_end(s, pos + 1, len);
    if (pos - name_at > FDL_PTX_MAX_IDENT)
        return 0;
    sc->has_back = 0;
    sc->pos = pos;
    sc->line = name_line;
    sc->bol = name_bol;
    p->line = first_line;
    p->column = first_col;
    set_type(p, &types[type]);
    size_t n = pos - name_at;
    if (same && *same && strncmp(*same, s + name_at, n) == 0 && (*same)[n] == '\0') {
        p->name = *same;
        return 1;
    }
    token name = {T_IDENT, D_OTHER, name_at, n, name_line, col_of(name_at, name_bol)};
    int rc = add_name(sc, &name, &p->name);
    if (rc == FDL_OK && same)
        *same = p->name;
    return rc == FDL_OK ? 1 : rc;
}

/*
 * After a parameter read by param_head: the `,` or `)` that follows it past blanks and newlines
 * only, read as the lexer would read it (into @p t, the scanner after it). 0, with nothing
 * consumed, when anything else follows (a comment, `[`, ...): the token path reads it.
 */
static inline int sep_fast(scanner *sc, token *t)
{
    const char *s = sc->s;
    size_t p = sc->pos, len = sc->len, bol = sc->bol;
    unsigned line = sc->line;
    while (p < len) {
        unsigned char c = (unsigned char)s[p];
        if (char_class[c] & BLANK) {
            p++;
        } else if (c == '\n') {
            if (line < UINT_MAX)
                line++;
            bol = ++p;
        } else {
            break;
        }
    }
    if (p >= len || (s[p] != ',' && s[p] != ')'))
        return 0;
    size_t col = p - bol + 1;
    t->kind = T_PUNCT;
    t->id = D_OTHER;
    t->off = p;
    t->len = 1;
    t->line = line;
    t->col = col > UINT_MAX ? UINT_MAX : (unsigned)col;
    sc->pos = p + 1;
    sc->line = line;
    sc->bol = bol;
    return 1;
}

/*
 * One parameter: `.param` or `.reg`, then `.align N`, a type, `.ptr` and state spaces in any order,
 * an optional name and an optional `[N]`. When nvcc's `.param .TYPE NAME` is followed by the `,`
 * or `)` that ends it, that token is read too, into @p sep, and *have_sep is 1 (else 0).
 */
static int parse_param(scanner *sc, const proto_ctx *pc, size_t index, token *sep, int *have_sep)
{
    token t;
    int rc;
    fdl_ptx_param *p = &sc->ptx->params[index];
    const type_info *type = NULL;
    *have_sep = 0;
    if ((rc = param_head(sc, p, NULL)) != 0) {
        if (rc < 0)
            return rc;
        if (sep_fast(sc, sep)) {
            *have_sep = 1;
            return FDL_OK;
        }
        if ((rc = peek(sc, &t)) != FDL_OK)
            return rc;
        return param_array(sc, pc, p, &t);
    }
    if ((rc = next(sc, &t)) != FDL_OK)
        return rc;
    if (!tok_dir(&t, D_PARAM) && !tok_dir(&t, D_REG))
        return proto_fail(sc, pc, &t, "'.param'");
    p->line = t.line;
    p->column = t.col;
    for (;;) {
        if ((rc = peek(sc, &t)) != FDL_OK)
            return rc;
        if (t.kind != T_DIR)
            break;
        next(sc, &t);
        const type_info *ti = find_type(&t);
        if (ti) {
            if (type)
                return proto_fail(sc, pc, &t, "one parameter type");
            type = ti;
        } else if (t.id == D_ALIGN) {
            size_t a;
            if ((rc = next(sc, &t)) != FDL_OK)
                return rc;
            if (!tok_decimal(sc, &t, 1u << 20, &a) || a == 0 || (a & (a - 1)) != 0)
                return proto_fail(sc, pc, &t, "an alignment (a power of two)");
            p->align = (unsigned)a;
        } else if (t.id == D_PTR) {
            p->is_ptr = 1;
        } else if (t.id == D_GLOBAL || t.id == D_CONST || t.id == D_LOCAL || t.id == D_SHARED) {
            /* state space of a .ptr kernel parameter: not part of the ABI check */
        } else {
            return proto_fail(sc, pc, &t, "a parameter type (.b32, .u64, .f32, ...)");
        }
    }
    if (!type)
        return proto_fail(sc, pc, &t, "a parameter type (.b32, .u64, .f32, ...)");
    set_type(p, type);
    if (t.kind == T_IDENT) {
        next(sc, &t);
        if ((rc = add_name(sc, &t, &p->name)) != FDL_OK)
            return rc;
        if ((rc = peek(sc, &t)) != FDL_OK)
            return rc;
    }
    return param_array(sc, pc, p, &t);
}

/* Skip a balanced `( ... )` group whose `(` is the next token (e.g. `.attribute(...)`). */
static int skip_parens(scanner *sc, const proto_ctx *pc)
{
    token t;
    int rc = next(sc, &t);
    if (rc != FDL_OK)
        return rc;
    if (!tok_punct(sc, &t, '('))
        return proto_fail(sc, pc, &t, "'('");
    size_t depth = 1;
    while (depth) {
        if ((rc = next(sc, &t)) != FDL_OK)
            return rc;
        if (t.kind == T_EOF)
            return proto_fail(sc, pc, &t, "')'");
        if (tok_punct(sc, &t, '('))
            depth++;
        else if (tok_punct(sc, &t, ')'))
            depth--;
    }
    return FDL_OK;
}

/* A one-byte punctuation token at @p off (the scanner's line and its start are where it is). */
static void punct_at(const scanner *sc, size_t off, token *t)
{
    t->kind = T_PUNCT;
    t->id = D_OTHER;
    t->off = off;
    t->len = 1;
    t->line = sc->line;
    t->col = col_at(sc, off);
}

/* The scanner past blanks and newlines (no comment); the byte there, or -1 at the end. */
static inline int blank_then(scanner *sc)
{
    sc->pos = skip_blank_lines(sc->s, sc->pos, sc->len, &sc->line, &sc->bol);
    return sc->pos < sc->len ? (unsigned char)sc->s[sc->pos] : -1;
}

/* Where the body whose `{` is @p open begins, for fdl__ptx_body_uses (ptx_body.c). */
static inline void body_start(scanner *sc, const token *open)
{
    sc->body_at = open->off + 1;
    sc->body_line = open->line;
    sc->body_bol = open->off - (open->col - 1);
}

/*
 * A prototype as nvcc writes every one, read straight from the bytes: after .func/.entry, an
 * optional `(.param .TYPE NAME)`, the name, `(`, `.param .TYPE NAME` separated by `,`, `)`, then
 * `;` or a body, with only blanks and newlines between. The function (*out: @p proto filled in,
 * its parameters appended) is what the token path makes of the same bytes, and the scanner is
 * left where that path leaves it. *done is 0, with the scanner as it was, for anything else (a
 * comment, an .attribute, an array, a performance directive, a malformed prototype, ...): the
 * token path reads it from the start and reports what is wrong. Bodies are skipped as there.
 */
static int proto_fast(scanner *sc, const token *first, int is_entry, fdl_ptx_linkage linkage,
                      fdl_ptx_func *out, int *done)
{
    fdl_ptx *ptx = sc->ptx;
    const size_t pos0 = sc->pos, bol0 = sc->bol, nparams0 = ptx->nparams;
    const unsigned line0 = sc->line;
    /* built here, field by field, as parse_proto starts its own (no copy of a struct just
     * written: a store-forwarding stall a prototype) */
    fdl_ptx_func fn = {.linkage = linkage, .is_entry = is_entry, .ret = {.name = ""},
                       .decl_line = first->line, .decl_column = first->col};
    fdl_ptx_func *f = &fn;
    token t;
    size_t pi = 0;
    int rc, c;
    *done = 0;
    if (sc->has_back)
        return FDL_OK;
    if ((c = blank_then(sc)) == '(') {
        if (f->is_entry)
            goto decline;
        sc->pos++;
        /* straight into f->ret (zero, name ""), as the token path's copy of it ends up */
        if ((rc = param_head(sc, &f->ret, &sc->last_ret)) < 0)
            return rc;
        if (rc == 0 || !sep_fast(sc, &t) || sc->s[t.off] != ')')
            goto decline;
        f->has_return = 1;
        c = blank_then(sc);
    }
    /* the name, as the lexer reads an identifier */
    if (c < 0 || !is_ident_start((unsigned char)c))
        goto decline;
    size_t at = sc->pos, end = ident_end(sc->s, at + 1, sc->len);
    if (end - at > FDL_PTX_MAX_IDENT)
        goto decline;
    token id = {T_IDENT, D_OTHER, at, end - at, sc->line, col_at(sc, at)};
    if ((rc = add_name(sc, &id, &f->name)) != FDL_OK)
        return rc;
    f->line = id.line;
    f->column = id.col;
    sc->pos = end;
    if (blank_then(sc) != '(')
        goto decline;
    punct_at(sc, sc->pos, &t);
    sc->pos++;
    if ((c = blank_then(sc)) == ')') {
        sc->pos++;
    } else {
        /* the first parameter's `.param`, where the token path's look-ahead would be */
        token head = {T_DIR, D_PARAM, sc->pos, 6, sc->line, col_at(sc, sc->pos)};
        const token *at_tok = &head;
        for (;;) {
            if (f->nparams >= FDL_PTX_MAX_PARAMS)
                goto decline;
            if ((rc = new_param(sc, at_tok, &pi)) != FDL_OK)
                return rc;
            if ((rc = param_head(sc, &ptx->params[pi], NULL)) < 0)
                return rc;
            if (rc == 0 || !sep_fast(sc, &t))
                goto decline;
            f->nparams++;
            if (sc->s[t.off] == ')')
                break;
            at_tok = &t;
        }
    }
    c = blank_then(sc);
    if (c == ';') {
        sc->pos++;
    } else if (c == '{') {
        punct_at(sc, sc->pos, &t);
        sc->pos++;
        f->is_definition = 1;
        body_start(sc, &t);
        if ((rc = skip_block(sc, &t, f->name)) != FDL_OK)
            return rc;
    } else {
        goto decline;
    }
    *out = fn;
    *done = 1;
    return FDL_OK;
decline: /* names kept on the way stay in their block, unused */
    sc->pos = pos0;
    sc->line = line0;
    sc->bol = bol0;
    ptx->nparams = nparams0;
    return FDL_OK;
}

/*
 * A prototype: @p first is the first directive (linkage or .func/.entry), @p kw the .func/.entry
 * token (already read).
 */
static int parse_proto(scanner *sc, const token *first, const token *kw, fdl_ptx_linkage linkage)
{
    fdl_ptx *ptx = sc->ptx;
    int is_entry = tok_dir(kw, D_ENTRY);
    proto_ctx pc = {is_entry ? ".entry" : ".func", NULL};
    token t;
    int rc;

    if (ptx->nfuncs >= sc->cap_funcs || !ptx->funcs) {
        size_t need, cap = sc->cap_funcs;
        if (!fdl__size_add(&need, ptx->nfuncs, 1))
            return out_of_memory(sc, kw);
        fdl_ptx_func *funcs = fdl__grow(ptx->funcs, &cap, need, sizeof *funcs);
        if (!funcs)
            return out_of_memory(sc, kw);
        ptx->funcs = funcs;
        sc->cap_funcs = cap;
    }
    size_t fi = ptx->nfuncs;
    int done;
    if ((rc = proto_fast(sc, first, is_entry, linkage, &ptx->funcs[fi], &done)) != FDL_OK)
        return rc;
    if (done) {
        ptx->nfuncs++;
        return sc->bodies ? fdl__ptx_body_uses(sc, fi) : FDL_OK;
    }
    fdl_ptx_func f;
    memset(&f, 0, sizeof f);
    f.ret.name = "";
    f.linkage = linkage;
    f.is_entry = is_entry;
    f.decl_line = first->line;
    f.decl_column = first->col;

    /* .attribute(...) between .func and the rest (PTX 8.x) */
    for (;;) {
        if ((rc = peek(sc, &t)) != FDL_OK)
            return rc;
        if (!tok_dir(&t, D_ATTRIBUTE))
            break;
        next(sc, &t);
        if ((rc = skip_parens(sc, &pc)) != FDL_OK)
            return rc;
    }

    if ((rc = next(sc, &t)) != FDL_OK)
        return rc;
    if (tok_punct(sc, &t, '(')) {
        if (is_entry)
            return proto_fail(sc, &pc, &t, "a kernel name (a kernel has no return value)");
        size_t ri = 0;
        int have_sep;
        if ((rc = new_param(sc, &t, &ri)) != FDL_OK)
            return rc;
        if ((rc = parse_param(sc, &pc, ri, &t, &have_sep)) != FDL_OK)
            return rc;
        f.has_return = 1;
        f.ret = ptx->params[ri];
        ptx->nparams--; /* the return parameter is kept in f.ret, not in the array */
        if (!have_sep && (rc = next(sc, &t)) != FDL_OK)
            return rc;
        if (tok_punct(sc, &t, ','))
            return proto_fail(sc, &pc, &t, "')' (only one return parameter is supported)");
        if (!tok_punct(sc, &t, ')'))
            return proto_fail(sc, &pc, &t, "')' after the return parameter");
        if ((rc = next(sc, &t)) != FDL_OK)
            return rc;
    }
    if (t.kind != T_IDENT)
        return proto_fail(sc, &pc, &t, is_entry ? "a kernel name" : "a function name");
    if ((rc = add_name(sc, &t, &f.name)) != FDL_OK)
        return rc;
    pc.name = f.name;
    f.line = t.line;
    f.column = t.col;

    if ((rc = next(sc, &t)) != FDL_OK)
        return rc;
    if (tok_punct(sc, &t, '(')) {
        if ((rc = peek(sc, &t)) != FDL_OK)
            return rc;
        if (tok_punct(sc, &t, ')')) {
            next(sc, &t);
        } else {
            for (;;) {
                if (f.nparams >= FDL_PTX_MAX_PARAMS)
                    return sc_fail(sc, FDL_ELIMIT, t.line, t.col, pc_name(sc, &pc),
                                   "%s: more than %d parameters", pc_name(sc, &pc),
                                   FDL_PTX_MAX_PARAMS);
                size_t pi = 0;
                int have_sep;
                if ((rc = new_param(sc, &t, &pi)) != FDL_OK)
                    return rc;
                if ((rc = parse_param(sc, &pc, pi, &t, &have_sep)) != FDL_OK)
                    return rc;
                f.nparams++;
                if (!have_sep && (rc = next(sc, &t)) != FDL_OK)
                    return rc;
                if (tok_punct(sc, &t, ')'))
                    break;
                if (!tok_punct(sc, &t, ','))
                    return proto_fail(sc, &pc, &t, "',' or ')'");
            }
        }
        if ((rc = next(sc, &t)) != FDL_OK)
            return rc;
    }

    /* performance directives, then `;` or a body */
    for (;;) {
        if (tok_punct(sc, &t, ';'))
            break;
        if (tok_punct(sc, &t, '{')) {
            f.is_definition = 1;
            body_start(sc, &t);
            if ((rc = skip_block(sc, &t, pc_name(sc, &pc))) != FDL_OK)
                return rc;
            break;
        }
        if (tok_dir(&t, D_PRAGMA)) {
            /* .pragma "a", "b"; */
            for (;;) {
                if ((rc = next(sc, &t)) != FDL_OK)
                    return rc;
                if (t.kind != T_STR)
                    return proto_fail(sc, &pc, &t, "a string after .pragma");
                if ((rc = next(sc, &t)) != FDL_OK)
                    return rc;
                if (tok_punct(sc, &t, ';'))
                    break;
                if (!tok_punct(sc, &t, ','))
                    return proto_fail(sc, &pc, &t, "';' after .pragma");
            }
            if ((rc = peek(sc, &t)) != FDL_OK)
                return rc;
            if (!tok_punct(sc, &t, '{') && !tok_punct(sc, &t, ';'))
                break; /* the pragma's ';' ended a declaration */
            next(sc, &t);
            continue;
        }
        if (t.kind == T_DIR) {
            /* .maxntid 256, 1, 1 / .reqntid / .minnctapersm 2 / .maxnreg / .noreturn ... */
            for (;;) {
                if ((rc = next(sc, &t)) != FDL_OK)
                    return rc;
                if (t.kind != T_NUM && !tok_punct(sc, &t, ','))
                    break;
            }
            continue;
        }
        return proto_fail(sc, &pc, &t, "';' or '{' after the parameter list");
    }
    ptx->funcs[fi] = f;
    ptx->nfuncs++;
    return sc->bodies ? fdl__ptx_body_uses(sc, fi) : FDL_OK;
}

/* ---- module-scope statements -------------------------------------------------------------- */

/* A directive that starts a module-scope statement (.func to .loc in enum dir_id). */
static int starts_statement(const token *t)
{
    return t->kind == T_DIR && t->id >= D_FUNC && t->id <= D_LOC;
}

/*
 * Skip a statement we do not model (.global/.const/.shared variables with initialisers, .alias,
 * .pragma, ...): to `;`, or to the end of a brace block that is not an initialiser. A directive
 * that starts a known statement ends it too, so a missing `;` does not hide what follows.
 */
static int skip_statement(scanner *sc)
{
    int seen_eq = 0;
    token t;
    for (;;) {
        int rc = next(sc, &t);
        if (rc != FDL_OK)
            return rc;
        if (t.kind == T_EOF || tok_punct(sc, &t, ';'))
            return FDL_OK;
        if (tok_punct(sc, &t, '=')) {
            seen_eq = 1;
        } else if (tok_punct(sc, &t, '{')) {
            if ((rc = skip_block(sc, &t, NULL)) != FDL_OK)
                return rc;
            if (!seen_eq)
                return FDL_OK;
        } else if (starts_statement(&t) || tok_punct(sc, &t, '@')) {
            push_back(sc, &t);
            return FDL_OK;
        }
    }
}

/* `.section name [, ...] { ... }` (DWARF in -G output). */
static int skip_section(scanner *sc)
{
    token t;
    for (;;) {
        int rc = next(sc, &t);
        if (rc != FDL_OK)
            return rc;
        if (tok_punct(sc, &t, '{'))
            return skip_block(sc, &t, NULL);
        if (t.kind == T_EOF || tok_punct(sc, &t, ';'))
            return FDL_OK;
        if (starts_statement(&t) || tok_punct(sc, &t, '@')) {
            push_back(sc, &t);
            return FDL_OK;
        }
    }
}

static int directive_fail(scanner *sc, const token *t, const char *directive, const char *expected)
{
    char found[48];
    tok_text(sc, t, found, sizeof found);
    return sc_fail(sc, FDL_EPARSE, t->line, t->col, NULL,
                   "malformed %s directive: expected %s, found %s", directive, expected, found);
}

static int parse_version(scanner *sc, const token *dir)
{
    token t;
    int rc = next(sc, &t);
    if (rc != FDL_OK)
        return rc;
    size_t dots = 0, i;
    int ok = t.kind == T_NUM && t.len < VERSION_MAX;
    for (i = 0; ok && i < t.len; i++) {
        char c = sc->s[t.off + i];
        if (c == '.')
            dots++;
        else if (c < '0' || c > '9')
            ok = 0;
    }
    if (!ok || dots != 1 || sc->s[t.off + t.len - 1] == '.')
        return directive_fail(sc, &t, ".version", "major.minor");
    memcpy(sc->ptx->version, sc->s + t.off, t.len);
    sc->ptx->version[t.len] = '\0';
    sc->ptx->dir_line[DIR_VERSION] = dir->line;
    sc->ptx->dir_column[DIR_VERSION] = dir->col;
    return FDL_OK;
}

/* `.target sm_90a, debug`: kept as the names joined by ", ". */
static int parse_target(scanner *sc, const token *dir)
{
    if (sc->ptx->dir_line[DIR_TARGET])
        return sc_fail(sc, FDL_EPARSE, dir->line, dir->col, NULL, "duplicate .target directive");
    token t;
    int rc;
    for (;;) {
        if ((rc = next(sc, &t)) != FDL_OK)
            return rc;
        if (t.kind != T_IDENT)
            return directive_fail(sc, &t, ".target", "a target name (sm_90, debug, ...)");
        if (t.len > FDL_PTX_MAX_IDENT)
            return sc_fail(sc, FDL_ELIMIT, t.line, t.col, NULL,
                           "identifier longer than %d bytes (a limit of fdlink's, "
                           "FDL_PTX_MAX_IDENT)",
                           FDL_PTX_MAX_IDENT);
        if ((sc->target.len && !fdl__buf_append(&sc->target, ", ", 2)) ||
            !fdl__buf_append(&sc->target, sc->s + t.off, t.len))
            return out_of_memory(sc, &t);
        if ((rc = peek(sc, &t)) != FDL_OK)
            return rc;
        if (!tok_punct(sc, &t, ','))
            break;
        next(sc, &t);
    }
    sc->ptx->dir_line[DIR_TARGET] = dir->line;
    sc->ptx->dir_column[DIR_TARGET] = dir->col;
    return FDL_OK;
}

static int parse_address_size(scanner *sc, const token *dir)
{
    if (sc->ptx->dir_line[DIR_ADDRESS_SIZE])
        return sc_fail(sc, FDL_EPARSE, dir->line, dir->col, NULL,
                       "duplicate .address_size directive");
    token t;
    int rc = next(sc, &t);
    if (rc != FDL_OK)
        return rc;
    size_t v;
    if (!tok_decimal(sc, &t, 1000, &v) || (v != 32 && v != 64))
        return directive_fail(sc, &t, ".address_size", "32 or 64");
    sc->ptx->address_size = (unsigned)v;
    sc->ptx->dir_line[DIR_ADDRESS_SIZE] = dir->line;
    sc->ptx->dir_column[DIR_ADDRESS_SIZE] = dir->col;
    return FDL_OK;
}

/* `.file 1 "name"` with an optional `, timestamp, size`. */
static int parse_file(scanner *sc)
{
    token t;
    int rc = next(sc, &t);
    if (rc != FDL_OK)
        return rc;
    if (t.kind != T_NUM)
        return directive_fail(sc, &t, ".file", "a file number");
    if ((rc = next(sc, &t)) != FDL_OK)
        return rc;
    if (t.kind != T_STR)
        return directive_fail(sc, &t, ".file", "a file name string");
    for (;;) {
        if ((rc = peek(sc, &t)) != FDL_OK)
            return rc;
        if (!tok_punct(sc, &t, ','))
            return FDL_OK;
        next(sc, &t);
        if ((rc = next(sc, &t)) != FDL_OK)
            return rc;
        if (t.kind != T_NUM)
            return directive_fail(sc, &t, ".file", "a number");
    }
}

static fdl_ptx_linkage linkage_of(const token *t)
{
    switch (t->id) {
    case D_VISIBLE: return FDL_PTX_LINK_VISIBLE;
    case D_WEAK: return FDL_PTX_LINK_WEAK;
    case D_EXTERN: return FDL_PTX_LINK_EXTERN;
    case D_COMMON: return FDL_PTX_LINK_COMMON;
    default: return FDL_PTX_LINK_NONE;
    }
}

/* A directive of @p n bytes (dot included) at @p p: the literal, then a byte that ends it. */
static inline int dir_at(const scanner *sc, size_t p, const char *lit, size_t n)
{
    return sc->len - p > n && memcmp(sc->s + p, lit, n) == 0 &&
           !is_ident_char((unsigned char)sc->s[p + n]);
}

/*
 * The heads nvcc writes, read without the lexer at the scanner's position (past white space, no
 * look-ahead held): `.func`, `.entry`, or `.visible`, `.extern` or `.weak` then one space and
 * `.func` or `.entry`. The tokens the lexer would make of them in *first and *kw (the same one
 * when there is no linkage), the scanner after the keyword; 0, nothing consumed, for anything else.
 */
static int head_fast(scanner *sc, token *first, token *kw, fdl_ptx_linkage *link)
{
    size_t p = sc->pos;
    if (p >= sc->len || sc->s[p] != '.')
        return 0;
    size_t n = 0;
    int id = D_OTHER;
    *link = FDL_PTX_LINK_NONE;
    if (dir_at(sc, p, ".visible", 8)) {
        n = 8, id = D_VISIBLE, *link = FDL_PTX_LINK_VISIBLE;
    } else if (dir_at(sc, p, ".extern", 7)) {
        n = 7, id = D_EXTERN, *link = FDL_PTX_LINK_EXTERN;
    } else if (dir_at(sc, p, ".weak", 5)) {
        n = 5, id = D_WEAK, *link = FDL_PTX_LINK_WEAK;
    }
    size_t k = p;
    if (n) {
        if (sc->s[p + n] != ' ')
            return 0;
        k = p + n + 1;
    }
    size_t kn;
    int kid;
    if (dir_at(sc, k, ".func", 5))
        kn = 5, kid = D_FUNC;
    else if (dir_at(sc, k, ".entry", 6))
        kn = 6, kid = D_ENTRY;
    else
        return 0;
    *kw = (token){T_DIR, kid, k, kn, sc->line, col_at(sc, k)};
    *first = n ? (token){T_DIR, id, p, n, sc->line, col_at(sc, p)} : *kw;
    sc->pos = k + kn;
    return 1;
}

static int scan_module(scanner *sc)
{
    token t;
    int rc;
    /* a UTF-8 byte order mark is tolerated */
    if (sc->len >= 3 && memcmp(sc->s, "\xEF\xBB\xBF", 3) == 0)
        sc->pos = 3;
    if ((rc = next(sc, &t)) != FDL_OK)
        return rc;
    if (!tok_dir(&t, D_VERSION)) {
        if (t.kind == T_EOF)
            return sc_fail(sc, FDL_EPARSE, 0, 0, NULL, "no .version directive: not PTX");
        return sc_fail(sc, FDL_EPARSE, t.line, t.col, NULL, "no .version directive: not PTX");
    }
    if ((rc = parse_version(sc, &t)) != FDL_OK)
        return rc;
    for (;;) {
        token kw;
        fdl_ptx_linkage link;
        if (!sc->has_back) {
            if ((rc = skip_space(sc)) != FDL_OK)
                return rc;
            if (head_fast(sc, &t, &kw, &link)) {
                if ((rc = parse_proto(sc, &t, &kw, link)) != FDL_OK)
                    return rc;
                continue;
            }
        }
        if ((rc = next(sc, &t)) != FDL_OK)
            return rc;
        if (t.kind == T_EOF)
            return FDL_OK;
        if (t.kind == T_DIR) {
            link = linkage_of(&t);
            if (t.id == D_FUNC || t.id == D_ENTRY) {
                rc = parse_proto(sc, &t, &t, FDL_PTX_LINK_NONE);
            } else if (link != FDL_PTX_LINK_NONE) {
                if ((rc = next(sc, &kw)) != FDL_OK)
                    return rc;
                if (tok_dir(&kw, D_FUNC) || tok_dir(&kw, D_ENTRY)) {
                    rc = parse_proto(sc, &t, &kw, link);
                } else {
                    push_back(sc, &kw);
                    rc = skip_statement(sc);
                }
            } else if (t.id == D_VERSION) {
                rc = sc_fail(sc, FDL_EPARSE, t.line, t.col, NULL, "duplicate .version directive");
            } else if (t.id == D_TARGET) {
                rc = parse_target(sc, &t);
            } else if (t.id == D_ADDRESS_SIZE) {
                rc = parse_address_size(sc, &t);
            } else if (t.id == D_FILE) {
                rc = parse_file(sc);
            } else if (t.id == D_LOC) {
                rc = skip_line(sc);
            } else if (t.id == D_SECTION) {
                rc = skip_section(sc);
            } else {
                rc = skip_statement(sc);
            }
        } else if (tok_punct(sc, &t, '@')) {
            rc = skip_line(sc); /* @@DWARF lines of old debug output */
        } else if (tok_punct(sc, &t, '{')) {
            rc = skip_block(sc, &t, NULL);
        } else if (tok_punct(sc, &t, ';')) {
            rc = FDL_OK;
        } else {
            rc = skip_statement(sc);
        }
        if (rc != FDL_OK)
            return rc;
    }
}

/* ---- result ------------------------------------------------------------------------------- */

/* The index's key: the name of function @i. */
static const char *func_name(const void *owner, size_t i)
{
    const fdl_ptx *ptx = owner;
    return ptx->funcs[i].name;
}

/* Index each name: its first definition, else its first prototype. */
static int build_index(fdl_ptx *ptx)
{
    if (!fdl__index_reserve(&ptx->index, ptx->nfuncs))
        return 0;
    for (size_t i = 0; i < ptx->nfuncs; i++) {
        const fdl_ptx_func *f = &ptx->funcs[i];
        uint64_t tag;
        uint64_t *slot =
            fdl__index_slot(&ptx->index, f->name, strlen(f->name), func_name, ptx, &tag);
        if (!*slot || (f->is_definition && !ptx->funcs[fdl__index_entry(*slot)].is_definition))
            *slot = tag | (i + 1);
    }
    return 1;
}

/* Point each function at its parameters: each one's follow the one's before, in one array that
 * may have moved while it grew. */
static void finish(scanner *sc)
{
    fdl_ptx *ptx = sc->ptx;
    size_t at = 0;
    for (size_t i = 0; i < ptx->nfuncs; i++) {
        fdl_ptx_func *f = &ptx->funcs[i];
        f->params = f->nparams ? ptx->params + at : NULL;
        at += f->nparams;
    }
}

void fdl_ptx_destroy(fdl_ptx *ptx)
{
    if (!ptx)
        return;
    free(ptx->source);
    free(ptx->target);
    free(ptx->funcs);
    free(ptx->params);
    free(ptx->uses);
    for (name_block *b = ptx->names, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    fdl__index_free(&ptx->index);
    free(ptx);
}

/* fdl_ptx_scan, the bodies read as well when @p bodies (fdl__ptx_scan_bodies). */
static int scan_text(fdl_ptx **out, const char *text, size_t len, const char *name, int bodies,
                     fdl_error *err)
{
    if (!FDL__CHECK_ARG(out && name && (text || !len)))
        return fdl__fail(err, FDL_EINVAL, "fdl_ptx_scan: NULL argument");
    *out = NULL;
    int rc = FDL_OK;
    scanner sc;
    memset(&sc, 0, sizeof sc);
    sc.s = text ? text : "";
    sc.len = len;
    sc.line = 1;
    sc.source = name;
    sc.err = err;
    sc.bodies = bodies;
    sc.ptx = calloc(1, sizeof *sc.ptx);
    if (!sc.ptx || !(sc.ptx->source = fdl__strdup(name))) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
        goto cleanup;
    }
    /* room from the start for what a text of this size usually holds (a prototype every few
     * hundred bytes, a parameter every few dozen; at most a few MB), so that the arrays are not
     * copied as they grow. Only a hint: they grow past it as needed, and without it if the
     * memory is not there. */
    size_t hint_funcs = len / 256 + 16, hint_params = len / 64 + 16;
    hint_funcs = hint_funcs > 16384 ? 16384 : hint_funcs;
    hint_params = hint_params > 65536 ? 65536 : hint_params;
    size_t cap_f = 0, cap_p = 0;
    if ((sc.ptx->funcs = fdl__grow(NULL, &cap_f, hint_funcs, sizeof *sc.ptx->funcs)))
        sc.cap_funcs = cap_f;
    if ((sc.ptx->params = fdl__grow(NULL, &cap_p, hint_params, sizeof *sc.ptx->params)))
        sc.cap_params = cap_p;
    /* names: an eighth of the text at first (they are less where bodies are most of it) */
    sc.first_names = len / 8 + 64 < NAME_BLOCK ? len / 8 + 64 : NAME_BLOCK;
    if ((rc = scan_module(&sc)) != FDL_OK)
        goto cleanup;
    if (sc.target.len) {
        sc.ptx->target = sc.target.data;
        sc.target.data = NULL;
    }
    finish(&sc);
    if (!build_index(sc.ptx)) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
        goto cleanup;
    }
    *out = sc.ptx;
    sc.ptx = NULL;
cleanup:
    fdl_ptx_destroy(sc.ptx);
    fdl__buf_free(&sc.target);
    free(sc.slots);
    return rc;
}

int fdl_ptx_scan(fdl_ptx **out, const char *text, size_t len, const char *name, fdl_error *err)
{
    return scan_text(out, text, len, name, 0, err);
}

int fdl__ptx_scan_bodies(fdl_ptx **out, const char *text, size_t len, const char *name,
                         fdl_error *err)
{
    return scan_text(out, text, len, name, 1, err);
}

int fdl_ptx_scan_file(fdl_ptx **out, const char *path, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out && path))
        return fdl__fail(err, FDL_EINVAL, "fdl_ptx_scan_file: NULL argument");
    *out = NULL;
    void *map = MAP_FAILED;
    size_t size = 0;
    int fd;
    int rc = fdl__open_file(path, &fd, &size, err);
    if (rc != FDL_OK)
        return rc;
    if (size == 0) {
        /* st_size 0: empty, or a /proc file whose size is known only by reading it */
        char *text = NULL;
        size_t got = 0;
        rc = fdl__read_fd(fd, path, 0, NULL, &text, &got, err);
        if (rc == FDL_OK && got == 0)
            rc = fdl__error(err, FDL_EPARSE, path, 0, 0, NULL, "empty file: not PTX");
        else if (rc == FDL_OK)
            rc = fdl_ptx_scan(out, text, got, path, err);
        free(text);
        goto cleanup;
    }
    map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        rc = fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot map: %s", strerror(errno));
        goto cleanup;
    }
    (void)posix_madvise(map, size, POSIX_MADV_SEQUENTIAL);
    rc = fdl_ptx_scan(out, map, size, path, err);
cleanup:
    if (map != MAP_FAILED)
        munmap(map, size);
    close(fd);
    return rc;
}

const char *fdl_ptx_source(const fdl_ptx *ptx)
{
    return ptx ? ptx->source : "";
}

const char *fdl_ptx_version(const fdl_ptx *ptx)
{
    return ptx ? ptx->version : "";
}

const char *fdl_ptx_target(const fdl_ptx *ptx)
{
    return ptx && ptx->target ? ptx->target : "";
}

unsigned fdl_ptx_address_size(const fdl_ptx *ptx)
{
    return ptx ? ptx->address_size : 0;
}

size_t fdl_ptx_count(const fdl_ptx *ptx)
{
    return ptx ? ptx->nfuncs : 0;
}

const fdl_ptx_func *fdl_ptx_get(const fdl_ptx *ptx, size_t i)
{
    return ptx && i < ptx->nfuncs ? &ptx->funcs[i] : NULL;
}

const fdl_ptx_func *fdl_ptx_find(const fdl_ptx *ptx, const char *name)
{
    if (!ptx || !name)
        return NULL;
    size_t i = fdl__index_find(&ptx->index, name, strlen(name), func_name, ptx);
    return i == SIZE_MAX ? NULL : &ptx->funcs[i];
}

int fdl_ptx_directive_location(const fdl_ptx *ptx, const char *directive, unsigned *line,
                               unsigned *column)
{
    unsigned l = 0, c = 0;
    if (ptx && directive) {
        int i = -1;
        if (strcmp(directive, ".version") == 0)
            i = DIR_VERSION;
        else if (strcmp(directive, ".target") == 0)
            i = DIR_TARGET;
        else if (strcmp(directive, ".address_size") == 0)
            i = DIR_ADDRESS_SIZE;
        if (i >= 0) {
            l = ptx->dir_line[i];
            c = ptx->dir_column[i];
        }
    }
    if (line)
        *line = l;
    if (column)
        *column = c;
    return l != 0;
}

fdl_param_class fdl_ptx_param_class(const fdl_ptx_param *param)
{
    if (!param)
        return FDL_PARAM_UNKNOWN;
    if (param->array)
        return FDL_PARAM_BYTES; /* `.b8 s[24]`: an aggregate, whatever its element type */
    const char *t = param->type;
    if (strcmp(t, "f16") == 0 || strcmp(t, "f32") == 0 || strcmp(t, "f64") == 0)
        return FDL_PARAM_FLOAT;
    if (t[0] == 's' && t[1] >= '0' && t[1] <= '9')
        return FDL_PARAM_SIGNED;
    if (t[0] == 'u' && t[1] >= '0' && t[1] <= '9')
        return FDL_PARAM_UNSIGNED;
    if (param->bytes == 0)
        return FDL_PARAM_UNKNOWN;
    return FDL_PARAM_BITS; /* .b8-.b64, .bf16, .f16x2, .pred: bits the caller gives as an int */
}

const char *fdl_param_class_name(fdl_param_class cls)
{
    switch (cls) {
    case FDL_PARAM_FLOAT: return "float";
    case FDL_PARAM_SIGNED: return "signed";
    case FDL_PARAM_UNSIGNED: return "unsigned";
    case FDL_PARAM_BITS: return "bits";
    case FDL_PARAM_BYTES: return "bytes";
    default: return "unknown";
    }
}
