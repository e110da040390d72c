/*
 * A link's logs: kept whole (older ones too, which an fdl_error may still borrow), and the
 * one-line error made from a failed backend run's log.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "linkobj.h"

/* Make @p text (owned, may be NULL for "") the link's info or error log, keeping the old one. */
int fdl__link_set_log(fdl_link *link, int info, char *text)
{
    if (!text && !(text = calloc(1, 1)))
        return 0;
    char **slot = info ? &link->info_log : &link->error_log;
    if (*slot) {
        size_t n;
        char **grown = NULL;
        if (fdl__size_add(&n, link->nold, 1) && fdl__size_mul(&n, n, sizeof *grown))
            grown = realloc(link->old_logs, n);
        if (!grown) {
            free(text);
            return 0;
        }
        link->old_logs = grown;
        link->old_logs[link->nold++] = *slot;
    }
    *slot = text;
    return 1;
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Skip one word of letters; return the end, or @p p when there is none. */
static const char *skip_word(const char *p, const char *end)
{
    while (p < end && isalpha((unsigned char)*p))
        p++;
    return p;
}

/*
 * If the line is `[tool ]error|fatal <spaces>: text`, point *tool and *text at those parts (the
 * tool's length in *tool_len) and return 1. Lines such as "ERROR 9: finish" are not headlines.
 */
static int parse_severity_line(const char *p, const char *end, const char **tool, size_t *tool_len,
                               const char **text)
{
    *tool = NULL;
    *tool_len = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *w = skip_word(p, end);
        size_t n = (size_t)(w - p);
        if ((n == 5 && (memcmp(p, "error", 5) == 0 || memcmp(p, "fatal", 5) == 0))) {
            const char *q = w;
            while (q < end && is_blank(*q))
                q++;
            if (q < end && *q == ':') {
                q++;
                while (q < end && is_blank(*q))
                    q++;
                *text = q;
                return 1;
            }
            return 0;
        }
        /* one leading tool name ("ptxas fatal : ...") is allowed */
        if (attempt == 1 || n == 0 || w >= end || *w != ' ')
            return 0;
        *tool = p;
        *tool_len = n;
        p = w;
        while (p < end && is_blank(*p))
            p++;
    }
    return 0;
}

/* The symbol quoted after one of the markers in @p text, into @p symbol ("" when none). */
static void quoted_symbol(const char *text, char *symbol, size_t size)
{
    static const char *const markers[] = {"reference to '", "definition of '",
                                          "extern function '"};
    symbol[0] = '\0';
    for (size_t i = 0; i < sizeof markers / sizeof markers[0]; i++) {
        const char *m = strstr(text, markers[i]);
        if (!m)
            continue;
        m += strlen(markers[i]);
        const char *q = strchr(m, '\'');
        if (q && q > m && (size_t)(q - m) < size) {
            memcpy(symbol, m, (size_t)(q - m));
            symbol[q - m] = '\0';
        }
        return;
    }
}

/*
 * The line of a backend log that says what went wrong, for a one-line message: the first
 * `error`/`fatal` line without its severity tag ("ptxas: value 'sm_75a' is not defined ..."),
 * else the first non-blank line. The symbol named by an undefined-reference, unresolved-extern or
 * multiple-definition line goes to @p symbol. Both outputs are "" when the log says nothing.
 */
void fdl__link_log_headline(const char *log, char *out, size_t size, char *symbol, size_t symsize)
{
    out[0] = '\0';
    symbol[0] = '\0';
    const char *first = NULL, *first_end = NULL;
    const char *line = log;
    while (line && *line) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        const char *p = line, *e = end;
        while (p < e && (is_blank(*p)))
            p++;
        while (e > p && is_blank(e[-1]))
            e--;
        const char *tool, *text;
        size_t tool_len;
        if (p < e && parse_severity_line(p, e, &tool, &tool_len, &text) && text < e) {
            fdl__buf b = {0};
            if (tool)
                fdl__buf_printf(&b, "%.*s: ", (int)tool_len, tool);
            size_t at = b.len;
            fdl__buf_append(&b, text, (size_t)(e - text));
            /* "Undefined reference" reads as "undefined reference"; "PTX ..." stays */
            if (!b.oom && b.len > at + 1 && isupper((unsigned char)b.data[at]) &&
                islower((unsigned char)b.data[at + 1]))
                b.data[at] = (char)tolower((unsigned char)b.data[at]);
            if (!b.oom)
                fdl__strlcpy(out, b.data, size);
            fdl__buf_free(&b);
            quoted_symbol(out, symbol, symsize);
            return;
        }
        if (!first && p < e) {
            first = p;
            first_end = e;
        }
        line = *end ? end + 1 : NULL;
    }
    if (first) {
        size_t n = (size_t)(first_end - first);
        if (n >= size)
            n = size - 1;
        memcpy(out, first, n);
        out[n] = '\0';
    }
}

/*
 * A line of @p log that starts with the name of one of the link's inputs and ": " (NVVM says
 * "t.ltoir: parse Malformed block" under a first line that names no file): that input's name in
 * *input and the rest of the line in @p out; 0 when there is none.
 */
static int input_line(const fdl_link *link, const char *log, const char **input, char *out,
                      size_t size)
{
    for (const char *line = log; line && *line;) {
        const char *end = strchr(line, '\n');
        if (!end)
            end = line + strlen(line);
        for (size_t i = 0; i < link->ninputs; i++) {
            const char *name = link->inputs[i].name;
            size_t n = strlen(name);
            if (n && (size_t)(end - line) > n + 2 && strncmp(line, name, n) == 0 &&
                line[n] == ':' && line[n + 1] == ' ') {
                size_t k = (size_t)(end - line) - n - 2;
                if (k >= size)
                    k = size - 1;
                memcpy(out, line + n + 2, k);
                out[k] = '\0';
                *input = name;
                return 1;
            }
        }
        line = *end ? end + 1 : NULL;
    }
    return 0;
}

/*
 * Fill @p err for a failed backend run: the headline of @p log after @p what, the whole log made
 * the link's error log (err->log borrows it), @p code in err->backend_code.
 */
int fdl__link_backend_error(fdl_link *link, char *log, int code, const char *code_name,
                            const char *source, const char *what, char *symbol, size_t symsize,
                            fdl_error *err)
{
    if (!fdl__link_set_log(link, 0, log))
        return fdl__fail(err, FDL_ENOMEM, "out of memory keeping the linker log");
    char headline[FDL_ERROR_MESSAGE_MAX];
    fdl__link_log_headline(link->error_log, headline, sizeof headline, symbol, symsize);
    char said[FDL_ERROR_MESSAGE_MAX / 2];
    const char *input = NULL;
    /* a log whose headline names no input, with a line that does: that line, and that input */
    if (!source && !symbol[0] && input_line(link, link->error_log, &input, said, sizeof said))
        fdl__error(err, FDL_ELINK, input, 0, 0, NULL, "%s: %s (%s)", what, said, headline);
    else if (headline[0])
        fdl__error(err, FDL_ELINK, source, 0, 0, symbol[0] ? symbol : NULL, "%s: %s", what,
                   headline);
    else
        fdl__error(err, FDL_ELINK, source, 0, 0, NULL, "%s: %s", what, code_name);
    if (err) {
        err->backend_code = code;
        err->log = link->error_log;
    }
    return FDL_ELINK;
}
