/*
 * The PTX scanner's own types, shared by its two files: ptx.c (the lexer, prototypes, module
 * statements, the result) and ptx_body.c (what a body does with its parameters, ABI-13). Not
 * installed; no other file includes it.
 */
#ifndef FDLINK_PTX_SCAN_H
#define FDLINK_PTX_SCAN_H

#include <stdarg.h>
#include <stddef.h>

#include "fdlink/ptx.h"
#include "abi_internal.h"

/* Longest `.version` value kept ("9.0"); longer values are malformed. */
#define VERSION_MAX 16

/* Module directives whose position is kept. */
enum { DIR_VERSION, DIR_TARGET, DIR_ADDRESS_SIZE, DIR_COUNT };

struct fdl_ptx {
    char *source;
    char version[VERSION_MAX];
    char *target;            /* NULL when absent */
    unsigned address_size;   /* 0 when absent */
    unsigned dir_line[DIR_COUNT];
    unsigned dir_column[DIR_COUNT];
    fdl_ptx_func *funcs;
    size_t nfuncs;
    fdl_ptx_param *params;   /* every prototype's parameters, one array, in prototype order */
    size_t nparams;
    struct name_block *names; /* every name, in blocks that never move (the newest first) */
    fdl__index index;        /* each name to its first definition, else its first prototype */
    fdl__ptx_use *uses;      /* typed parameter accesses of the bodies (ABI-13), by function */
    size_t nuses, cap_uses;
};

/* Token kinds. */
enum { T_EOF, T_DIR, T_IDENT, T_NUM, T_STR, T_PUNCT };

typedef struct token {
    int kind;
    int id;         /* T_DIR: which directive (enum dir_id), D_OTHER for one not modelled */
    size_t off;     /* byte offset of the first character */
    size_t len;
    unsigned line;  /* 1-based */
    unsigned col;   /* 1-based byte column */
} token;

typedef struct scanner {
    const char *s;
    size_t len;
    size_t pos;
    unsigned line;      /* line of pos */
    size_t bol;         /* offset where that line begins */
    const char *source;
    fdl_error *err;
    token back;         /* one token of look-ahead */
    int has_back;

    fdl_ptx *ptx;       /* under construction: each function's params pointer is set at the end */
    size_t cap_funcs;
    size_t cap_params;
    size_t first_names; /* bytes of the first name block */
    const char *last_ret; /* the last return parameter's name kept by proto_fast (nvcc: always
                           * func_retval0), shared by the next one of the same name */
    fdl__buf target;
    size_t body_at;     /* the last body skipped: its first byte (after `{`), line, line start */
    unsigned body_line;
    size_t body_bol;
    int bodies;          /* read the bodies (fdl__ptx_scan_bodies), else skip them */
    fdl__ptx_use *slots; /* one function's accesses while its body is read (ptx_body.c) */
    size_t cap_slots;
} scanner;

/* ---- errors (a static inline function: each file's own copy, called on errors only) ------ */

static inline int sc_fail(scanner *sc, int code, unsigned line, unsigned col,
                          const char *symbol, const char *fmt, ...) FDL__PRINTF(6, 7);

static inline int sc_fail(scanner *sc, int code, unsigned line, unsigned col,
                          const char *symbol, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdl__verror(sc->err, code, sc->source, line, col, symbol, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- identifiers: the lexer's character classes --------------------------------------------- */

/* PTX identifiers: C identifiers that may also hold '$', and start with '%' (registers). */
/*
 * Character classes, one table lookup per byte: bit 1 starts an identifier, bit 2 continues one,
 * bit 3 is white space other than a newline (which also counts lines).
 */
#define ID_START 1
#define ID_CHAR 2
#define BLANK 4
#define ID_BOTH (ID_START | ID_CHAR)
#define ID_DIGIT ID_CHAR
static const unsigned char char_class[256] = {
    [' '] = BLANK, ['\t'] = BLANK, ['\r'] = BLANK, ['\v'] = BLANK, ['\f'] = BLANK,
    ['$'] = ID_BOTH, ['%'] = ID_START, ['_'] = ID_BOTH,
    ['0'] = ID_DIGIT, ['1'] = ID_DIGIT, ['2'] = ID_DIGIT, ['3'] = ID_DIGIT, ['4'] = ID_DIGIT,
    ['5'] = ID_DIGIT, ['6'] = ID_DIGIT, ['7'] = ID_DIGIT, ['8'] = ID_DIGIT, ['9'] = ID_DIGIT,
    ['a'] = ID_BOTH, ['b'] = ID_BOTH, ['c'] = ID_BOTH, ['d'] = ID_BOTH, ['e'] = ID_BOTH,
    ['f'] = ID_BOTH, ['g'] = ID_BOTH, ['h'] = ID_BOTH, ['i'] = ID_BOTH, ['j'] = ID_BOTH,
    ['k'] = ID_BOTH, ['l'] = ID_BOTH, ['m'] = ID_BOTH, ['n'] = ID_BOTH, ['o'] = ID_BOTH,
    ['p'] = ID_BOTH, ['q'] = ID_BOTH, ['r'] = ID_BOTH, ['s'] = ID_BOTH, ['t'] = ID_BOTH,
    ['u'] = ID_BOTH, ['v'] = ID_BOTH, ['w'] = ID_BOTH, ['x'] = ID_BOTH, ['y'] = ID_BOTH,
    ['z'] = ID_BOTH,
    ['A'] = ID_BOTH, ['B'] = ID_BOTH, ['C'] = ID_BOTH, ['D'] = ID_BOTH, ['E'] = ID_BOTH,
    ['F'] = ID_BOTH, ['G'] = ID_BOTH, ['H'] = ID_BOTH, ['I'] = ID_BOTH, ['J'] = ID_BOTH,
    ['K'] = ID_BOTH, ['L'] = ID_BOTH, ['M'] = ID_BOTH, ['N'] = ID_BOTH, ['O'] = ID_BOTH,
    ['P'] = ID_BOTH, ['Q'] = ID_BOTH, ['R'] = ID_BOTH, ['S'] = ID_BOTH, ['T'] = ID_BOTH,
    ['U'] = ID_BOTH, ['V'] = ID_BOTH, ['W'] = ID_BOTH, ['X'] = ID_BOTH, ['Y'] = ID_BOTH,
    ['Z'] = ID_BOTH,
};

static inline int is_ident_start(unsigned char c)
{
    return char_class[c] & ID_START;
}

static inline int is_ident_char(unsigned char c)
{
    return char_class[c] & ID_CHAR;
}

/* ---- ptx_body.c ----------------------------------------------------------------------------- */

/*
 * What the body of function @p fi (just skipped, after sc->body_at) does with its parameters
 * (ABI-13), added to the module's uses; ptx.c calls it after each prototype when sc->bodies.
 * @return FDL_OK, FDL_ENOMEM
 */
int fdl__ptx_body_uses(scanner *sc, size_t fi);

#endif /* FDLINK_PTX_SCAN_H */
