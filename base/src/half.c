/* IEEE 754 binary16 (CUDA's __half) to and from double: the one conversion of each direction,
 * used by `fdlink run`'s f16 arguments and by verification (internal.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>

#include "internal.h"

uint16_t fdl__half_from_double(double d)
{
    uint16_t sign = signbit(d) ? 0x8000u : 0u;
    double a = fabs(d);
    if (isnan(d))
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 65520.0) /* halfway past the largest half, 65504: rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x1p-14) /* subnormal: a multiple of 2^-24; 1024 of them is the smallest normal */
        return (uint16_t)(sign | (uint16_t)nearbyint(a * 0x1p24));
    int e = 0;
    double m = frexp(a, &e); /* a = m 2^e, m in [0.5, 1) */
    double frac = nearbyint((m * 2.0 - 1.0) * 1024.0);
    int biased = e + 14;
    if (frac >= 1024.0) {
        frac = 0.0;
        biased++;
    }
    return (uint16_t)(sign | (unsigned)biased << 10 | (unsigned)frac);
}

double fdl__half_to_double(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v;
    if (exp == 0)
        v = ldexp((double)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexp((double)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}
