/* The monotonic clock (internal.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <time.h>

#include "internal.h"

uint64_t fdl__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
