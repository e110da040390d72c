/*
 * Diagnostics as data (fdl_diagnostic): a list that owns its records, and the parsers of the
 * tools' logs that fill it. A service with no knowledge of links (link/src/README.md).
 */
#ifndef FDLINK_DIAG_H
#define FDLINK_DIAG_H

#include <stddef.h>

#include "fdlink/error.h"
#include "fdlink/link.h"

/* A list of diagnostics; a zeroed one is empty. One thread at a time. */
typedef struct fdl__diags {
    fdl_diagnostic *v; /* each record's strings live in one block, v[i].file */
    size_t n;
    size_t cap;
} fdl__diags;

void fdl__diags_free(fdl__diags *d);

/* Append a record (strings copied, NULL as ""; the message cut at its first newline). */
int fdl__diags_add(fdl__diags *d, const char *tool, const char *file, unsigned line,
                   unsigned column, fdl_severity severity, const char *code, const char *message);

/* An fdl_error of fdlink's checks as a record: severity error, code "ABI-N" from its rule. */
int fdl__diags_add_error(fdl__diags *d, const fdl_error *e);

/* The same as a warning (fdl__abi_check_warn's on_warning: ABI-13). */
int fdl__diags_add_warning(fdl__diags *d, const fdl_error *e);

/*
 * Every diagnostic of an NVRTC log (`file(line): severity[ #code]: message`, continuation lines
 * joined, the column read from the caret line). Returns 0 when out of memory.
 */
int fdl__diags_parse_nvrtc(fdl__diags *d, const char *log);

/*
 * The errors and warnings of a linker log (nvJitLink's or cuLink's, @p tool): `[ptxas ]error :
 * text`, `ptxas FILE, line N; warning : text`, `nvlink warning : ...`; info lines are left out.
 * @p input: the file to name when the log names none ("" for none).
 */
int fdl__diags_parse_linker(fdl__diags *d, const char *log, const char *tool);

#endif /* FDLINK_DIAG_H */
