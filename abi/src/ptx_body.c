/*
 * What the body of a `.visible .func` definition does with its parameters (ABI-13): its typed
 * loads of each parameter and its typed stores through the return slot's pointer, read by
 * fdl__ptx_scan_bodies (the post-LTO check's -O0 PTX) as ptx.c passes over each body, and asked
 * for by fdl__ptx_use_of. fdl_ptx_scan reads no body.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "fdlink/ptx.h"
#include "abi_internal.h"
#include "ptx_scan.h"

/* Most registers followed from the return slot's parameter; more and the stores are not read. */
#define USE_REGS 16

/* A body being read: its bytes [at, end), and the position of `pos` (advanced by body_pos);
 * at0, bol0, line0: where the body begins, to count again from. */
typedef struct body {
    const char *s;
    size_t at, end;
    size_t pos, bol;
    unsigned line;
    size_t bol0;
    unsigned line0;
} body;

/* The 1-based line and column of offset @p off (counted on from the last asked for, or again
 * from the body's start for one before it). */
static void body_pos(body *b, size_t off, unsigned *line, unsigned *column)
{
    if (off < b->pos) {
        b->pos = b->at;
        b->bol = b->bol0;
        b->line = b->line0;
    }
    for (const char *nl; (nl = memchr(b->s + b->pos, '\n', off - b->pos)) != NULL;) {
        b->line++;
        b->pos = b->bol = (size_t)(nl - b->s) + 1;
    }
    b->pos = off;
    *line = b->line;
    *column = (unsigned)(off - b->bol + 1);
}

/* The next @p n bytes @p lit at or after @p p before @p end, or @p end. */
static size_t find_lit(const char *s, size_t p, size_t end, const char *lit, size_t n)
{
    while (p + n <= end) {
        const char *c = memchr(s + p, lit[0], end - p - n + 1);
        if (!c)
            break;
        p = (size_t)(c - s);
        if (memcmp(c, lit, n) == 0)
            return p;
        p++;
    }
    return end;
}

static size_t skip_blanks(const char *s, size_t p, size_t end)
{
    while (p < end && (s[p] == ' ' || s[p] == '\t'))
        p++;
    return p;
}

/* A register or identifier at @p p: its end, @p p when there is none. */
static size_t operand_name(const char *s, size_t p, size_t end)
{
    size_t q = p;
    if (q < end && (s[q] == '%' || is_ident_start((unsigned char)s[q])))
        q++;
    else
        return p;
    while (q < end && is_ident_char((unsigned char)s[q]))
        q++;
    return q;
}

/*
 * The modifiers of an instruction from @p p (just after its first word, at a `.` or not): the
 * type's class (FDL__USE_*, 0 for .b, none or a vector) into *cls and its text into @p type; the
 * end of the modifiers is returned. *bits gets the type's width, 0 when unknown.
 */
static size_t op_type(const char *s, size_t p, size_t end, unsigned *cls, char type[8],
                      unsigned *bits)
{
    int vector = 0;
    *cls = 0;
    *bits = 0;
    type[0] = '\0';
    while (p < end && s[p] == '.') {
        size_t q = p + 1;
        while (q < end && is_ident_char((unsigned char)s[q]))
            q++;
        size_t n = q - p - 1;
        const char *w = s + p + 1;
        if (n >= 2 && w[0] == 'v' && w[1] >= '0' && w[1] <= '9')
            vector = 1;
        else if (n >= 2 && n <= 6 && (w[0] == 'b' || w[0] == 'u' || w[0] == 's' || w[0] == 'f' ||
                                      (n >= 3 && w[0] == 'b' && w[1] == 'f')) &&
                 ((w[0] == 'b' && w[1] == 'f') || (w[1] >= '0' && w[1] <= '9'))) {
            size_t d = w[0] == 'b' && w[1] == 'f' ? 2 : 1;
            unsigned v = 0;
            size_t k = d;
            for (; k < n && w[k] >= '0' && w[k] <= '9'; k++)
                v = v * 10 + (unsigned)(w[k] - '0');
            if (k > d && (k == n || (k + 2 == n && w[k] == 'x' && w[k + 1] == '2'))) {
                memcpy(type, w, n);
                type[n] = '\0';
                *bits = k == n ? v : 0;
                *cls = d == 2 || w[0] == 'f' ? FDL__USE_FLOAT
                       : w[0] == 'b'         ? 0
                                             : FDL__USE_INT;
            }
        }
        p = q;
    }
    if (vector)
        *cls = 0;
    return p;
}

/* Note a typed access of @p slot: its class, the first of each class's type and position. */
static void note_use(fdl__ptx_use *u, unsigned cls, const char *type, body *b, size_t off)
{
    int i = cls == FDL__USE_FLOAT ? 0 : 1;
    if (!(u->classes & cls)) {
        u->classes |= cls;
        memcpy(u->type[i], type, 8);
        body_pos(b, off, &u->line[i], &u->column[i]);
    }
}

/* A register among @p n, by name. */
static int reg_in(const char *s, const size_t (*regs)[2], size_t n, size_t at, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (regs[i][1] - regs[i][0] == len && memcmp(s + regs[i][0], s + at, len) == 0)
            return 1;
    return 0;
}

/* Remember register [@p a, @p a1) of @p s as holding the return slot's pointer (once).
 * @return 0 when the table is full: the pointer is no longer followed */
static int add_root(const char *s, size_t (*roots)[2], size_t *nroots, size_t a, size_t a1)
{
    if (reg_in(s, (const size_t(*)[2])roots, *nroots, a, a1 - a))
        return 1;
    if (*nroots == USE_REGS)
        return 0;
    roots[*nroots][0] = a;
    roots[(*nroots)++][1] = a1;
    return 1;
}

/*
 * What the body of function @p fi (just skipped, after sc->body_at) does with its parameters:
 * its typed loads of each parameter, and its typed stores through the pointer in parameter 0
 * (ABI-13), added to the module's uses. Only `.visible .func` definitions are read, and only
 * by fdl__ptx_scan_bodies (the post-LTO check's -O0 PTX): fdl_ptx_scan reads no body.
 */
int fdl__ptx_body_uses(scanner *sc, size_t fi)
{
    fdl_ptx *ptx = sc->ptx;
    const fdl_ptx_func *f = &ptx->funcs[fi];
    if (!sc->bodies || !f->is_definition || f->is_entry || f->linkage != FDL_PTX_LINK_VISIBLE || !f->nparams)
        return FDL_OK;
    const fdl_ptx_param *params = ptx->params + (ptx->nparams - f->nparams);
    const char *s = sc->s;
    size_t nslots = f->nparams + 1;
    if (nslots > sc->cap_slots) {
        fdl__ptx_use *grown = realloc(sc->slots, nslots * sizeof *grown);
        if (!grown)
            return sc_fail(sc, FDL_ENOMEM, f->line, f->column, NULL, "out of memory");
        sc->slots = grown;
        sc->cap_slots = nslots;
    }
    memset(sc->slots, 0, nslots * sizeof *sc->slots);
    body b = {s,           sc->body_at,   sc->pos - 1, sc->body_at,
              sc->body_bol, sc->body_line, sc->body_bol, sc->body_line};
    size_t roots[USE_REGS][2], copies[64][2]; /* registers: [begin, end) offsets */
    size_t nroots = 0, ncopies = 0;
    int follow = 1; /* the return slot's stores can be followed */
    size_t plen = strlen(f->name);

    /* one pass, a statement at a time: the loads (ld.param.<type> REG, [NAME]), the registers
     * that hold the return slot's pointer (loaded from parameter 0, copied by cvta and mov), the
     * stores through them (st.<type> [REG], VALUE), and any other write to them (which ends
     * following them) */
    for (size_t p = b.at; p < b.end;) {
        /* past blanks, comments, braces, labels and .loc lines (which have no `;`) */
        char c = s[p];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '{' || c == '}') {
            p++;
            continue;
        }
        if (c == '/' && p + 1 < b.end && (s[p + 1] == '/' || s[p + 1] == '*')) {
            size_t e = s[p + 1] == '/' ? find_lit(s, p, b.end, "\n", 1)
                                       : find_lit(s, p + 2, b.end, "*/", 2) + 1;
            p = e < b.end ? e + 1 : b.end;
            continue;
        }
        if (c == '.' && p + 4 < b.end && memcmp(s + p, ".loc", 4) == 0 &&
            (s[p + 4] == ' ' || s[p + 4] == '\t')) {
            p = find_lit(s, p, b.end, "\n", 1);
            continue;
        }
        size_t w = operand_name(s, p, b.end);
        if (w > p && w < b.end && s[w] == ':') { /* a label */
            p = w + 1;
            continue;
        }
        /* the statement [st, semi) */
        size_t st = p, semi = find_lit(s, p, b.end, ";", 1);
        p = semi + 1;
        size_t q = st;
        if (s[q] == '@') { /* a guard */
            q++;
            if (q < semi && s[q] == '!')
                q++;
            q = skip_blanks(s, operand_name(s, q, semi), semi);
        }
        size_t op0 = q, op1 = op0;
        while (op1 < semi && is_ident_char((unsigned char)s[op1]))
            op1++;
        if (op1 == op0)
            continue; /* a directive (.reg, .local, ...) or nothing known */
        size_t oplen = op1 - op0;
        int is_param = op1 + 6 <= semi && memcmp(s + op1, ".param", 6) == 0 &&
                       (op1 + 6 == semi || s[op1 + 6] == '.' || s[op1 + 6] == ':');
        unsigned cls, bits;
        char type[8];
        size_t t0 = is_param ? op1 + 6 : op1;
        if (is_param && t0 + 2 < semi && s[t0] == ':' && s[t0 + 1] == ':') /* ::func, ::entry */
            for (t0 += 2; t0 < semi && is_ident_char((unsigned char)s[t0]);)
                t0++;
        size_t mods = op_type(s, t0, semi, &cls, type, &bits);
        size_t a = skip_blanks(s, mods, semi); /* the first operand */
        size_t a1 = operand_name(s, a, semi);

        if (oplen == 2 && memcmp(s + op0, "ld", 2) == 0 && is_param) {
            /* ld.param.<type> REG, [NAME] or [NAME+0] */
            if (!type[0] || a1 == a || s[a] != '%')
                goto written;
            size_t k2 = skip_blanks(s, a1, semi);
            if (k2 >= semi || s[k2] != ',')
                goto written;
            k2 = skip_blanks(s, k2 + 1, semi);
            if (k2 >= semi || s[k2] != '[')
                goto written;
            size_t n0 = skip_blanks(s, k2 + 1, semi), n1 = operand_name(s, n0, semi);
            k2 = skip_blanks(s, n1, semi);
            if (k2 < semi && s[k2] == '+') { /* an offset: only +0 */
                k2 = skip_blanks(s, k2 + 1, semi);
                if (k2 >= semi || s[k2] != '0')
                    goto written;
                k2 = skip_blanks(s, k2 + 1, semi);
            }
            if (n1 == n0 || k2 >= semi || s[k2] != ']')
                goto written;
            /* which parameter: nvcc's <name>_param_<k> first, else by name */
            size_t k = f->nparams, len = n1 - n0;
            if (len > plen + 7 && memcmp(s + n0, f->name, plen) == 0 &&
                memcmp(s + n0 + plen, "_param_", 7) == 0) {
                size_t v = 0, i = n0 + plen + 7;
                for (; i < n1 && s[i] >= '0' && s[i] <= '9' && v < FDL_PTX_MAX_PARAMS; i++)
                    v = v * 10 + (size_t)(s[i] - '0');
                if (i == n1 && v < f->nparams && strlen(params[v].name) == len &&
                    memcmp(params[v].name, s + n0, len) == 0)
                    k = v;
            }
            for (size_t i = 0; k == f->nparams && i < f->nparams && f->nparams <= 64; i++)
                if (strlen(params[i].name) == len && memcmp(params[i].name, s + n0, len) == 0)
                    k = i;
            if (k == f->nparams)
                goto written;
            if (cls)
                note_use(&sc->slots[k + 1], cls, type, &b, op0);
            if (ncopies < 64) {
                copies[ncopies][0] = a;
                copies[ncopies++][1] = a1;
            } else {
                follow = 0;
            }
            if (k == 0 && bits == 64) { /* the return slot's pointer */
                if (!add_root(s, roots, &nroots, a, a1))
                    follow = 0;
                continue;
            }
            goto written;
        }
        if (oplen == 2 && memcmp(s + op0, "st", 2) == 0) {
            /* st.<type> [REG] or [REG+0], VALUE: not st.param */
            if (is_param || !nroots || a >= semi || s[a] != '[')
                continue;
            size_t r0 = skip_blanks(s, a + 1, semi), r1 = operand_name(s, r0, semi);
            if (r1 == r0 || !reg_in(s, (const size_t(*)[2])roots, nroots, r0, r1 - r0))
                continue;
            size_t e = skip_blanks(s, r1, semi);
            if (e < semi && s[e] == '+') {
                e = skip_blanks(s, e + 1, semi);
                if (e >= semi || s[e] != '0')
                    continue; /* another field of the slot */
                e = skip_blanks(s, e + 1, semi);
            }
            if (e >= semi || s[e] != ']')
                continue;
            e = skip_blanks(s, e + 1, semi);
            if (e >= semi || s[e] != ',')
                continue;
            size_t v0 = skip_blanks(s, e + 1, semi), v1 = operand_name(s, v0, semi);
            if (cls &&
                !(v1 > v0 && reg_in(s, (const size_t(*)[2])copies, ncopies, v0, v1 - v0)))
                note_use(&sc->slots[0], cls, type, &b, op0);
            continue;
        }
        if (nroots && bits == 64 && a1 > a && s[a] == '%' &&
            ((oplen == 4 && memcmp(s + op0, "cvta", 4) == 0) ||
             (oplen == 3 && memcmp(s + op0, "mov", 3) == 0))) {
            /* cvta[.to].global.u64 D, REG / mov.b64 D, REG: D holds the pointer too */
            size_t c1 = skip_blanks(s, a1, semi);
            size_t r0 = c1 < semi && s[c1] == ',' ? skip_blanks(s, c1 + 1, semi) : semi;
            size_t r1 = operand_name(s, r0, semi);
            if (r1 > r0 && skip_blanks(s, r1, semi) == semi &&
                reg_in(s, (const size_t(*)[2])roots, nroots, r0, r1 - r0)) {
                if (!add_root(s, roots, &nroots, a, a1))
                    follow = 0;
                continue;
            }
        }
    written: /* another write to a register that holds the pointer: not followed further */
        if (nroots && a1 > a && reg_in(s, (const size_t(*)[2])roots, nroots, a, a1 - a))
            follow = 0;
    }

    if (!follow)
        sc->slots[0].classes = 0;

    for (size_t k = 0; k < nslots; k++) {
        if (!sc->slots[k].classes)
            continue;
        if (ptx->nuses == ptx->cap_uses) {
            size_t cap = ptx->cap_uses;
            fdl__ptx_use *grown = fdl__grow(ptx->uses, &cap, ptx->nuses + 1, sizeof *grown);
            if (!grown)
                return sc_fail(sc, FDL_ENOMEM, f->line, f->column, NULL, "out of memory");
            ptx->uses = grown;
            ptx->cap_uses = cap;
        }
        fdl__ptx_use *u = &ptx->uses[ptx->nuses++];
        *u = sc->slots[k];
        u->func = fi;
        u->slot = k;
    }
    return FDL_OK;
}

const fdl__ptx_use *fdl__ptx_use_of(const fdl_ptx *ptx, const fdl_ptx_func *fn, size_t slot)
{
    if (!ptx || !fn || fn < ptx->funcs || fn >= ptx->funcs + ptx->nfuncs)
        return NULL;
    size_t fi = (size_t)(fn - ptx->funcs), lo = 0, hi = ptx->nuses;
    while (lo < hi) { /* the uses are in function order, then slot order */
        size_t mid = lo + (hi - lo) / 2;
        const fdl__ptx_use *u = &ptx->uses[mid];
        if (u->func < fi || (u->func == fi && u->slot < slot))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < ptx->nuses && ptx->uses[lo].func == fi && ptx->uses[lo].slot == slot)
        return &ptx->uses[lo];
    return NULL;
}
