/*
 * The one JSON writer of the project: a document written into a growable buffer (internal.h's
 * fdl__buf), used by `fdlink doctor --json`, the CTest resource spec, and the diagnostics as JSON
 * and SARIF. The writer places commas, colons and indentation itself, so a caller writes only
 * what it means: begin an object, a key, a value, ... end the object.
 *
 * Strings: every string (keys included) comes out as valid JSON text (RFC 8259) in UTF-8, whatever
 * bytes it was given: '"' and '\' escaped; the control characters U+0000..U+001F as \b \f \n \r
 * \t or \u00XX, and DEL, U+2028 and U+2029 as \u escapes (so that the text is also a valid
 * JavaScript string and shows no invisible characters); well-formed UTF-8 (RFC 3629: shortest
 * form, no surrogates, at most U+10FFFF) copied as it is; and each byte that is not part of a
 * well-formed sequence replaced by U+FFFD (the replacement character), as Python's
 * `errors="replace"` and the WHATWG decoder do, so that invalid input is visible and never yields
 * invalid output. A NUL inside a counted string is written \u0000.
 *
 * Misuse (a value where a key is due, an end without a begin, nesting deeper than
 * FDL__JSON_DEPTH_MAX) sets the writer's `bad` flag and writes nothing more; out of memory sets
 * the buffer's `oom`. fdl__json_finish says whether the document is whole and valid.
 *
 * Thread-safety: a writer and its buffer belong to one thread at a time; writers share nothing.
 */
#ifndef FDLINK_JSON_H
#define FDLINK_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

#define FDL__JSON_DEPTH_MAX 32

typedef struct fdl__json {
    fdl__buf *out;         /* borrowed: where the text goes */
    int indent;            /* spaces per level; 0 writes one line */
    unsigned depth;        /* open containers */
    unsigned char kind[FDL__JSON_DEPTH_MAX]; /* per level: 'o' object, 'a' array */
    unsigned char count[FDL__JSON_DEPTH_MAX]; /* per level: 0 empty so far, 1 not */
    int want_value;        /* a key was written, its value is due */
    int done;              /* the top-level value is complete */
    int bad;               /* misuse: sticky */
} fdl__json;

/* Start a document in @out (appended to; not owned). @indent: spaces per level, 0 for one line. */
void fdl__json_init(fdl__json *j, fdl__buf *out, int indent);

void fdl__json_object_begin(fdl__json *j);
void fdl__json_object_end(fdl__json *j);
void fdl__json_array_begin(fdl__json *j);
void fdl__json_array_end(fdl__json *j);

/* A member's key (inside an object only), escaped as every string is. */
void fdl__json_key(fdl__json *j, const char *key);

/* A string value: NUL-terminated (NULL writes null), or @n bytes (NULs inside written \u0000). */
void fdl__json_string(fdl__json *j, const char *s);
void fdl__json_string_n(fdl__json *j, const char *s, size_t n);
void fdl__json_int(fdl__json *j, long long v);
void fdl__json_uint(fdl__json *j, unsigned long long v);
/* A finite number with 17 significant digits at most; NaN and infinities are written null. */
void fdl__json_double(fdl__json *j, double v);
void fdl__json_bool(fdl__json *j, int v);
void fdl__json_null(fdl__json *j);

/* Shorthands for a member: key then value. */
void fdl__json_member_string(fdl__json *j, const char *key, const char *value);
void fdl__json_member_int(fdl__json *j, const char *key, long long v);
void fdl__json_member_uint(fdl__json *j, const char *key, unsigned long long v);
void fdl__json_member_bool(fdl__json *j, const char *key, int v);

/* End the document (a newline after the top-level value). 1 when it is complete and valid. */
int fdl__json_finish(fdl__json *j);

/*
 * Append s[0..n) to @b as the inside of a JSON string (no quotes), by the rules above. Returns 0
 * when out of memory.
 */
int fdl__json_escape(fdl__buf *b, const char *s, size_t n);

#endif
