/*
 * Shared by the fuzz harnesses: the properties every error record must have (house style: one
 * line, printable, no trailing period, a location that points into the input). A broken property
 * aborts, so that libFuzzer and the replay driver both report it as a crash with the input.
 */
#ifndef FDLINK_FUZZ_H
#define FDLINK_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/error.h"

/* The entry point libFuzzer calls, and the replay driver too. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_REQUIRE(cond, ...)                                                                    \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond);            \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* The properties of a filled error record with status @p rc. */
static inline void fuzz_check_error(const fdl_error *e, int rc)
{
    FUZZ_REQUIRE(e->code == rc, "code %d, status %d", e->code, rc);
    size_t n = strnlen(e->message, sizeof e->message);
    FUZZ_REQUIRE(n > 0 && n < sizeof e->message, "message empty or not terminated");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)e->message[i];
        FUZZ_REQUIRE(c >= 0x20 && c < 0x7f, "byte 0x%02x at %zu of message '%s'", c, i,
                     e->message);
    }
    FUZZ_REQUIRE(e->message[n - 1] != '.' || (n >= 3 && memcmp(e->message + n - 3, "...", 3) == 0),
                 "trailing period: '%s'", e->message);
    FUZZ_REQUIRE(e->message[n - 1] != ' ', "trailing space: '%s'", e->message);
    FUZZ_REQUIRE(strnlen(e->symbol, sizeof e->symbol) < sizeof e->symbol, "symbol not terminated");
    FUZZ_REQUIRE(strnlen(e->source, sizeof e->source) < sizeof e->source, "source not terminated");
    for (const char *p = e->symbol; *p; p++)
        FUZZ_REQUIRE((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f,
                     "control byte in symbol");
    /* Lower case: a capital letter may only start the symbol's name or the type CPointer. */
    if (e->message[0] >= 'A' && e->message[0] <= 'Z')
        FUZZ_REQUIRE((e->symbol[0] && strncmp(e->message, e->symbol, strlen(e->symbol)) == 0) ||
                         strncmp(e->message, "CPointer", 8) == 0,
                     "message starts upper case: '%s'", e->message);
    char line[1024];
    size_t need = fdl_error_format(e, line, sizeof line);
    FUZZ_REQUIRE(need > 0, "empty formatted error");
}

#endif /* FDLINK_FUZZ_H */
