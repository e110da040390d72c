// Fails to compile, in the header it includes (-I diag/inc).
#include "helper.h"
extern "C" __device__ int twice_i32(int *ret, int x)
{
    *ret = helper(x) * 2;
    return 0;
}
