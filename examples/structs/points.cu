// An array of struct Point processed on the device: x *= 2, y += 1.
#include "point.h"

extern "C" __global__ void transform_points(Point *points, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        points[i].x *= 2.0f;
        points[i].y += 1.0f;
    }
}

// The layout as the device compiler sees it: size, offsets of x and y, alignment.
extern "C" __global__ void point_layout(unsigned int *out)
{
    out[0] = sizeof(Point);
    out[1] = offsetof(Point, x);
    out[2] = offsetof(Point, y);
    out[3] = alignof(Point);
}
