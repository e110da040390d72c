/*
 * The one definition of struct Point, shared by the host program (C11) and the kernels (CUDA
 * C++). Both compilers must agree on its layout: the static assertions below fail the build on
 * either side if they do not, and the program also asks the device at run time.
 */
#ifndef FDLINK_EXAMPLE_POINT_H
#define FDLINK_EXAMPLE_POINT_H

#include <stddef.h>

typedef struct Point {
    float x, y;
} Point;

#define POINT_SIZE 8
#define POINT_OFFSET_X 0
#define POINT_OFFSET_Y 4
#define POINT_ALIGN 4

#ifdef __cplusplus
static_assert(sizeof(Point) == POINT_SIZE, "Point size");
static_assert(offsetof(Point, x) == POINT_OFFSET_X, "Point.x offset");
static_assert(offsetof(Point, y) == POINT_OFFSET_Y, "Point.y offset");
static_assert(alignof(Point) == POINT_ALIGN, "Point alignment");
#else
_Static_assert(sizeof(Point) == POINT_SIZE, "Point size");
_Static_assert(offsetof(Point, x) == POINT_OFFSET_X, "Point.x offset");
_Static_assert(offsetof(Point, y) == POINT_OFFSET_Y, "Point.y offset");
_Static_assert(_Alignof(Point) == POINT_ALIGN, "Point alignment");
#endif

#endif /* FDLINK_EXAMPLE_POINT_H */
