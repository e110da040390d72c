/*
 * Error records: fdl_error filled and formatted, status names. The other helpers every module
 * shares live by concern: strbuf.c (strings, checked sizes, growable buffers), file.c (whole-file
 * reads, atomic writes), clock.c, sharedlib.c (loading shared libraries); internal.h declares
 * them all.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "internal.h"

void fdl_error_clear(fdl_error *err)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
}

const char *fdl_status_name(int status)
{
    static const char *const names[] = {
        "FDL_OK",     "FDL_EINVAL", "FDL_ENOMEM",  "FDL_EIO",       "FDL_EPARSE",
        "FDL_EABI",   "FDL_ELINK",  "FDL_ENOTFOUND", "FDL_ENODEVICE", "FDL_ENOLIB",
        "FDL_ECUDA",  "FDL_ELIMIT", "FDL_EKIND",   "FDL_EVERIFY",   "FDL_EDEVICE",
    };
    /* compared as int, so that no negation can overflow */
    if (status > 0 || status <= -(int)(sizeof names / sizeof names[0]))
        return "FDL_E?";
    return names[-status];
}

int fdl__message_names(const char *message, const char *symbol)
{
    size_t n = strlen(symbol);
    if (n && strncmp(message, symbol, n) == 0 && (message[n] == ':' || message[n] == ' '))
        return 1;
    /* "readable form [mangled]: ..." (a demangled C++ name with its mangled form, issue 34) */
    for (const char *p = strchr(message, '['); n && p; p = strchr(p + 1, '['))
        if (strncmp(p + 1, symbol, n) == 0 && p[n + 1] == ']')
            return 1;
    return 0;
}

size_t fdl_error_format(const fdl_error *err, char *buf, size_t size)
{
    if (!err)
        return 0;
    char loc[FDL_ERROR_SOURCE_MAX + 32] = "";
    if (err->source[0] && err->line && err->column)
        snprintf(loc, sizeof loc, "%s:%u:%u: ", err->source, err->line, err->column);
    else if (err->source[0] && err->line)
        snprintf(loc, sizeof loc, "%s:%u: ", err->source, err->line);
    else if (err->source[0])
        snprintf(loc, sizeof loc, "%s: ", err->source);
    int with_symbol = err->symbol[0] && !fdl__message_names(err->message, err->symbol);
    int n = snprintf(buf, size, "%s%s%s%s", loc, with_symbol ? err->symbol : "",
                     with_symbol ? ": " : "", err->message);
    return n < 0 ? 0 : (size_t)n;
}

int fdl__verror(fdl_error *err, int code, const char *source, unsigned line, unsigned column,
                const char *symbol, const char *fmt, va_list ap)
{
    if (!err)
        return code;
    err->code = code;
    err->backend_code = 0;
    err->log = NULL;
    fdl__strlcpy(err->source, source ? source : "", sizeof err->source);
    err->line = line;
    err->column = column;
    fdl__strlcpy(err->symbol, symbol ? symbol : "", sizeof err->symbol);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    /* no detail of an earlier error stays: the caller sets this one's (fdl__error_rule ...) */
    err->fields = 0;
    err->rule = 0;
    err->decl_source[0] = '\0';
    err->decl_line = err->decl_column = 0;
    err->library[0] = '\0';
    err->index = 0;
    memset(err->block, 0, sizeof err->block);
    memset(err->thread, 0, sizeof err->thread);
    err->count = 0;
    return code;
}

void fdl__error_rule(fdl_error *err, int rule)
{
    if (!err)
        return;
    err->rule = rule;
    err->fields |= FDL_ERROR_HAS_RULE;
}

void fdl__error_decl(fdl_error *err, const char *source, unsigned line, unsigned column)
{
    if (!err)
        return;
    fdl__strlcpy(err->decl_source, source ? source : "", sizeof err->decl_source);
    err->decl_line = line;
    err->decl_column = column;
    err->fields |= FDL_ERROR_HAS_DECL;
}

void fdl__error_library(fdl_error *err, const char *library)
{
    if (!err)
        return;
    fdl__strlcpy(err->library, library ? library : "", sizeof err->library);
    err->fields |= FDL_ERROR_HAS_LIBRARY;
}

void fdl__error_index(fdl_error *err, unsigned long long index)
{
    if (!err)
        return;
    err->index = index;
    err->fields |= FDL_ERROR_HAS_INDEX;
}

void fdl__error_place(fdl_error *err, const unsigned block[3], const unsigned thread[3])
{
    if (!err)
        return;
    memcpy(err->block, block, sizeof err->block);
    memcpy(err->thread, thread, sizeof err->thread);
    err->fields |= FDL_ERROR_HAS_PLACE;
}

void fdl__error_count(fdl_error *err, unsigned long long count)
{
    if (!err)
        return;
    err->count = count;
    err->fields |= FDL_ERROR_HAS_COUNT;
}

int fdl__error(fdl_error *err, int code, const char *source, unsigned line, unsigned column,
               const char *symbol, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdl__verror(err, code, source, line, column, symbol, fmt, ap);
    va_end(ap);
    return code;
}

int fdl__fail(fdl_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fdl__verror(err, code, NULL, 0, 0, NULL, fmt, ap);
    va_end(ap);
    return code;
}
