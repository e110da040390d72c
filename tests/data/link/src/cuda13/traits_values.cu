// <cuda/std/type_traits>: traits evaluated at compile time, and the language standard the
// compiler used (out[n] = __cplusplus), so that NVRTC's and nvcc's compiles can be compared.
#include <cuda/std/type_traits>

template <class T> __device__ unsigned kind_of(T)
{
    return cuda::std::is_floating_point<T>::value * 4u + cuda::std::is_signed<T>::value * 2u +
           cuda::std::is_integral<T>::value;
}

static_assert(cuda::std::is_same<cuda::std::make_unsigned_t<int>, unsigned>::value,
              "make_unsigned_t");

extern "C" __global__ void traits_values(unsigned *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned k = i % 3 == 0 ? kind_of(1.5f) : i % 3 == 1 ? kind_of(-1) : kind_of(1u);
        out[i] = k * 1000u + i;
    } else if (i == n) {
        out[i] = (unsigned)__cplusplus;
    }
}
