/*
 * What every example program shares: an embedded module opened on the first GPU, the failure
 * message, and the one summary line that the showcase table is built from:
 *
 *     fdlink-example: <name> | <what it exercised> | verified <yes|no|skipped> | <key figure>
 *
 * Header-only (static inline functions) so that each example stays one small C file plus this.
 */
#ifndef FDLINK_EXAMPLE_H
#define FDLINK_EXAMPLE_H

#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fdlink/embed.h>
#include <fdlink/fdlink.h>

typedef struct example {
    const char *name;      /* e.g. "vector_add" */
    const char *exercised; /* what it shows, for the table */
    fdl_device *dev;
    fdl_module *mod;
    fdl_error err;
} example;

static inline double example_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Whether the program runs under compute-sanitizer, whose tools instrument every access (racecheck
 * on the tiled matmul takes minutes a launch at 1024^2): detected from the variables
 * compute-sanitizer gives its target (NV_SANITIZER_INJECTION_*, seen with `compute-sanitizer
 * env`), FDLINK_SANITIZE (the tool the test scripts run every test under) set and not empty, or
 * FDLINK_UNDER_SANITIZER set to anything.
 */
static inline int example_under_sanitizer(void)
{
    const char *tool = getenv("FDLINK_SANITIZE");
    return getenv("FDLINK_UNDER_SANITIZER") || (tool && *tool) ||
           getenv("NV_SANITIZER_INJECTION_TRANSPORT_TYPE") ||
           getenv("NV_SANITIZER_INJECTION_PORT_RANGE_BEGIN");
}

/*
 * How many timed repetitions to run: @wanted, or 1 under compute-sanitizer (timings there mean
 * nothing, and repetitions only cost minutes).
 */
static inline int example_repeats(int wanted)
{
    return example_under_sanitizer() ? 1 : wanted;
}

static inline void example_summary(const example *ex, const char *verified, const char *figure)
{
    printf("fdlink-example: %s | %s | verified %s | %s\n", ex->name, ex->exercised, verified,
           figure);
}

/* Print the error of the example (or @err) and return 1. */
static inline int example_fail(example *ex, const fdl_error *err)
{
    char line[1024];
    fdl_error_format(err ? err : &ex->err, line, sizeof line);
    fprintf(stderr, "%s: error: %s\n", ex->name, line);
    example_summary(ex, "no", "failed");
    return 1;
}

/*
 * Find the embedded cubin @cubin_name, check that it is one, and open the GPU and load it.
 * Returns 0 when ready, FDL_EXIT_SKIP (printing the summary) when there is no GPU, 1 on error.
 */
static inline int example_open(example *ex, const char *cubin_name)
{
    const void *image = NULL;
    size_t size = 0;
    if (fdl_embedded_find(cubin_name, &image, &size) != FDL_OK) {
        fprintf(stderr, "%s: error: %s is not embedded\n", ex->name, cubin_name);
        return 1;
    }
    const unsigned char *b = image;
    if (size < 64 || memcmp(b, "\177ELF", 4) != 0 || b[18] != 190) {
        fprintf(stderr, "%s: error: embedded %s is not a cubin\n", ex->name, cubin_name);
        return 1;
    }
    int n = 0;
    fdl_error probe = FDL_ERROR_INIT;
    if (fdl_device_count(&n, &probe) != FDL_OK || n == 0) {
        printf("%s: %s embedded (%zu bytes); no GPU (%s): launches skipped\n", ex->name,
               cubin_name, size, probe.message[0] ? probe.message : "0 devices");
        example_summary(ex, "skipped", "no GPU");
        return FDL_EXIT_SKIP;
    }
    if (fdl_device_open(&ex->dev, -1, &ex->err) != FDL_OK ||
        fdl_module_load_data(&ex->mod, ex->dev, image, size, cubin_name, &ex->err) != FDL_OK)
        return example_fail(ex, NULL);
    return 0;
}

static inline void example_close(example *ex)
{
    fdl_module_destroy(ex->mod);
    fdl_device_destroy(ex->dev);
    ex->mod = NULL;
    ex->dev = NULL;
}

/* Deterministic test data (xorshift32) in [lo, hi). */
static inline float example_random(uint32_t *state, float lo, float hi)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return lo + (hi - lo) * (float)(x >> 8) / (float)(1u << 24);
}

#endif /* FDLINK_EXAMPLE_H */
