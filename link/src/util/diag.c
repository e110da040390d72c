/* Diagnostics as data: the list and the parsers of NVRTC's and the linkers' logs (diag.h). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "internal.h"

#define LINE_MAX_PARSED 4096 /* longer log lines are cut: a message stays one readable line */

void fdl__diags_free(fdl__diags *d)
{
    for (size_t i = 0; i < d->n; i++)
        free((char *)d->v[i].file);
    free(d->v);
    memset(d, 0, sizeof *d);
}

const char *fdl_severity_name(fdl_severity severity)
{
    return severity == FDL_SEVERITY_WARNING ? "warning"
           : severity == FDL_SEVERITY_NOTE  ? "note"
                                            : "error";
}

int fdl__diags_add(fdl__diags *d, const char *tool, const char *file, unsigned line,
                   unsigned column, fdl_severity severity, const char *code, const char *message)
{
    const char *parts[4] = {file ? file : "", code ? code : "", message ? message : "",
                            tool ? tool : ""};
    size_t lens[4], total = 0;
    for (int i = 0; i < 4; i++) {
        const char *nl = strchr(parts[i], '\n');
        lens[i] = nl ? (size_t)(nl - parts[i]) : strlen(parts[i]);
        if (lens[i] > LINE_MAX_PARSED)
            lens[i] = LINE_MAX_PARSED;
        total += lens[i] + 1;
    }
    if (d->n == d->cap) {
        fdl_diagnostic *grown = fdl__grow(d->v, &d->cap, d->n + 1, sizeof *grown);
        if (!grown)
            return 0;
        d->v = grown;
    }
    char *block = malloc(total), *p = block;
    if (!block)
        return 0;
    const char *at[4];
    for (int i = 0; i < 4; i++) {
        memcpy(p, parts[i], lens[i]);
        p[lens[i]] = '\0';
        at[i] = p;
        p += lens[i] + 1;
    }
    fdl_diagnostic *r = &d->v[d->n++];
    r->file = at[0]; /* the block's start: fdl__diags_free frees it */
    r->code = at[1];
    r->message = at[2];
    r->tool = at[3];
    r->line = line;
    r->column = column;
    r->severity = severity;
    return 1;
}

/* The rule an fdlink check cites (its record's rule: "ABI-5") into @p code ("" for none). */
static void rule_code(const fdl_error *e, char code[16])
{
    code[0] = '\0';
    if (e->fields & FDL_ERROR_HAS_RULE)
        snprintf(code, 16, "ABI-%d", e->rule);
}

int fdl__diags_add_error(fdl__diags *d, const fdl_error *e)
{
    char code[16];
    rule_code(e, code);
    return fdl__diags_add(d, "fdlink", e->source, e->line, e->column,
                          e->code == FDL_EIO ? FDL_SEVERITY_WARNING : FDL_SEVERITY_ERROR, code,
                          e->message);
}

int fdl__diags_add_warning(fdl__diags *d, const fdl_error *e)
{
    char code[16];
    rule_code(e, code);
    return fdl__diags_add(d, "fdlink", e->source, e->line, e->column, FDL_SEVERITY_WARNING, code,
                          e->message);
}

static int blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The next line of @p *p into [*start, *end), trailing blanks cut; 0 at the end of the log. */
static int next_line(const char **p, const char **start, const char **end)
{
    if (!*p || !**p)
        return 0;
    const char *nl = strchr(*p, '\n');
    const char *e = nl ? nl : *p + strlen(*p);
    *start = *p;
    *p = nl ? nl + 1 : e;
    while (e > *start && blank(e[-1]))
        e--;
    if ((size_t)(e - *start) > LINE_MAX_PARSED)
        e = *start + LINE_MAX_PARSED;
    *end = e;
    return 1;
}

static int word_is(const char *p, const char *end, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(end - p) >= n && memcmp(p, w, n) == 0;
}

/*
 * `file(line): severity[ #code]: message` (NVRTC, as EDG writes it): the parts, or 0. Severity:
 * "catastrophic error" and "error" are errors, "warning", "remark" and "note" as said.
 */
static int nvrtc_headline(const char *s, const char *e, size_t *file_len, unsigned *line,
                          fdl_severity *sev, const char **code, size_t *code_len,
                          const char **msg)
{
    const char *c = NULL;
    for (const char *q = s; q + 3 < e; q++)
        if (q[0] == ')' && q[1] == ':' && q[2] == ' ') {
            c = q;
            break;
        }
    if (!c)
        return 0;
    const char *open = c;
    while (open > s && isdigit((unsigned char)open[-1]))
        open--;
    if (open == c || open == s || open[-1] != '(' || open - 1 == s)
        return 0;
    unsigned v = 0;
    for (const char *d = open; d < c && v < 100000000u; d++)
        v = v * 10 + (unsigned)(*d - '0');
    const char *p = c + 3;
    static const struct { const char *word; fdl_severity sev; } words[] = {
        {"catastrophic error", FDL_SEVERITY_ERROR}, {"error", FDL_SEVERITY_ERROR},
        {"warning", FDL_SEVERITY_WARNING},          {"remark", FDL_SEVERITY_NOTE},
        {"note", FDL_SEVERITY_NOTE},
    };
    size_t w;
    for (w = 0; w < sizeof words / sizeof words[0]; w++)
        if (word_is(p, e, words[w].word))
            break;
    if (w == sizeof words / sizeof words[0])
        return 0;
    p += strlen(words[w].word);
    *code = NULL;
    *code_len = 0;
    if (p + 1 < e && p[0] == ' ' && p[1] == '#') {
        *code = p + 2;
        p += 2;
        while (p < e && (isalnum((unsigned char)*p) || *p == '-'))
            p++;
        *code_len = (size_t)(p - *code);
    }
    if (p + 1 >= e || p[0] != ':' || p[1] != ' ')
        return 0;
    *msg = p + 2;
    *file_len = (size_t)(open - 1 - s);
    *line = v;
    *sev = words[w].sev;
    /* "catastrophic error: ..." keeps its word, as the user would search for it */
    if (w == 0)
        *msg = p - strlen("catastrophic error");
    return 1;
}

/* A caret line: blanks, then '^', then nothing. */
static int caret_at(const char *s, const char *e, unsigned *col)
{
    const char *p = s;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    if (p + 1 != e || *p != '^')
        return 0;
    /* EDG indents the echoed source line by two spaces: the caret's column there, less two */
    size_t at = (size_t)(p - s);
    *col = at >= 2 ? (unsigned)(at - 1) : 1;
    return 1;
}

int fdl__diags_parse_nvrtc(fdl__diags *d, const char *log)
{
    const char *p = log, *s, *e;
    fdl__buf msg = {0};
    char file[1024], code[32];
    unsigned line = 0, col = 0;
    fdl_severity sev = FDL_SEVERITY_ERROR;
    int open = 0, ok = 1;
    const char *prev_s = NULL, *prev_e = NULL; /* the line before: an echo, if a caret follows */
    size_t before_prev = 0; /* msg.len before the previous line was joined */
    for (;;) {
        int more = next_line(&p, &s, &e);
        size_t flen = 0, clen = 0;
        const char *c = NULL, *m = NULL;
        unsigned l = 0;
        fdl_severity sv = FDL_SEVERITY_ERROR;
        int head = more && nvrtc_headline(s, e, &flen, &l, &sv, &c, &clen, &m);
        if (open && (!more || head || s == e)) {
            ok &= !msg.oom && fdl__diags_add(d, "nvrtc", file, line, col, sev, code, msg.data);
            open = 0;
        }
        if (!more)
            break;
        if (head) {
            fdl__buf_free(&msg);
            fdl__buf_append(&msg, m, (size_t)(e - m));
            snprintf(file, sizeof file, "%.*s", (int)flen, s);
            snprintf(code, sizeof code, "%.*s", (int)(c ? clen : 0), c ? c : "");
            line = l;
            sev = sv;
            col = 0;
            open = 1;
            prev_s = NULL;
        } else if (open && s < e) {
            unsigned cc;
            if (caret_at(s, e, &cc) && prev_s) {
                col = cc;
                msg.len = before_prev; /* the echoed source line is no part of the message */
                if (msg.data)
                    msg.data[msg.len] = '\0';
            } else {
                /* "argument types are: (int)", "detected during ...": part of the message */
                const char *t = s;
                while (t < e && blank(*t))
                    t++;
                before_prev = msg.len;
                fdl__buf_puts(&msg, "; ");
                fdl__buf_append(&msg, t, (size_t)(e - t));
                prev_s = s;
                prev_e = e;
                continue;
            }
        }
        prev_s = NULL;
    }
    (void)prev_e;
    fdl__buf_free(&msg);
    return ok;
}

int fdl__diags_parse_linker(fdl__diags *d, const char *log, const char *tool)
{
    const char *p = log, *s, *e;
    int ok = 1;
    while (next_line(&p, &s, &e)) {
        const char *q = s;
        char file[1024] = "";
        unsigned line = 0;
        while (q < e && blank(*q))
            q++;
        /* an optional tool word ("ptxas", "nvlink"), then "FILE, line N;" (ptxas) */
        const char *w = q;
        while (w < e && isalpha((unsigned char)*w))
            w++;
        if (w < e && *w == ' ' && (word_is(q, e, "ptxas") || word_is(q, e, "nvlink"))) {
            q = w + 1;
            const char *semi = memchr(q, ';', (size_t)(e - q));
            const char *comma = semi ? strstr(q, ", line ") : NULL;
            if (semi && comma && comma < semi) {
                snprintf(file, sizeof file, "%.*s", (int)(comma - q), q);
                for (const char *dgt = comma + 7; dgt < semi && isdigit((unsigned char)*dgt) &&
                                                  line < 100000000u;
                     dgt++)
                    line = line * 10 + (unsigned)(*dgt - '0');
                q = semi + 1;
                while (q < e && blank(*q))
                    q++;
            }
        }
        fdl_severity sev;
        if (word_is(q, e, "error") || word_is(q, e, "fatal"))
            sev = FDL_SEVERITY_ERROR;
        else if (word_is(q, e, "warning"))
            sev = FDL_SEVERITY_WARNING;
        else
            continue; /* info, and the lines around */
        w = q;
        while (w < e && isalpha((unsigned char)*w))
            w++;
        while (w < e && blank(*w))
            w++;
        if (w >= e || *w != ':')
            continue;
        w++;
        while (w < e && blank(*w))
            w++;
        /* "Undefined reference to 'f' in 'caller.ptx'": the input it names, when none was said */
        const char *in = strstr(w, " in '");
        if (!file[0] && in && in < e) {
            const char *close = memchr(in + 5, '\'', (size_t)(e - in - 5));
            if (close)
                snprintf(file, sizeof file, "%.*s", (int)(close - in - 5), in + 5);
        }
        char msg[LINE_MAX_PARSED + 1];
        snprintf(msg, sizeof msg, "%.*s", (int)(e - w), w);
        if (msg[0] && isupper((unsigned char)msg[0]) && islower((unsigned char)msg[1]))
            msg[0] = (char)tolower((unsigned char)msg[0]);
        ok &= fdl__diags_add(d, tool, file, line, 0, sev, "", msg);
    }
    return ok;
}
