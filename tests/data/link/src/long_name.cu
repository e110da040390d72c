// A caller kernel whose C++ name, mangled by nvcc, is longer than 1500 bytes (issue 22, class 8:
// nvcc writes such names for template instantiations, and ptxas takes them): a variadic template
// instantiated over 32 types of long names, calling the foreign function mul_f32_f32.
// Fixture of tests/link: linked and checked for real (cases long_kernel_name_*).
extern "C" __device__ int mul_f32_f32(float *return_value, float a, float b);

struct a_type_whose_name_makes_the_mangled_kernel_name_long_00 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_01 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_02 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_03 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_04 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_05 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_06 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_07 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_08 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_09 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_10 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_11 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_12 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_13 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_14 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_15 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_16 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_17 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_18 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_19 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_20 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_21 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_22 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_23 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_24 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_25 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_26 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_27 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_28 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_29 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_30 {};
struct a_type_whose_name_makes_the_mangled_kernel_name_long_31 {};

template <typename... T>
__global__ void multiply_vectors_of(float *out, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x + (int)sizeof...(T) * 0;
    if (i >= n)
        return;
    float r;
    int status = mul_f32_f32(&r, a[i], b[i]);
    out[i] = status == 0 ? r : __int_as_float(0x7fc00000);
}

template __global__ void multiply_vectors_of<
    a_type_whose_name_makes_the_mangled_kernel_name_long_00,
    a_type_whose_name_makes_the_mangled_kernel_name_long_01,
    a_type_whose_name_makes_the_mangled_kernel_name_long_02,
    a_type_whose_name_makes_the_mangled_kernel_name_long_03,
    a_type_whose_name_makes_the_mangled_kernel_name_long_04,
    a_type_whose_name_makes_the_mangled_kernel_name_long_05,
    a_type_whose_name_makes_the_mangled_kernel_name_long_06,
    a_type_whose_name_makes_the_mangled_kernel_name_long_07,
    a_type_whose_name_makes_the_mangled_kernel_name_long_08,
    a_type_whose_name_makes_the_mangled_kernel_name_long_09,
    a_type_whose_name_makes_the_mangled_kernel_name_long_10,
    a_type_whose_name_makes_the_mangled_kernel_name_long_11,
    a_type_whose_name_makes_the_mangled_kernel_name_long_12,
    a_type_whose_name_makes_the_mangled_kernel_name_long_13,
    a_type_whose_name_makes_the_mangled_kernel_name_long_14,
    a_type_whose_name_makes_the_mangled_kernel_name_long_15,
    a_type_whose_name_makes_the_mangled_kernel_name_long_16,
    a_type_whose_name_makes_the_mangled_kernel_name_long_17,
    a_type_whose_name_makes_the_mangled_kernel_name_long_18,
    a_type_whose_name_makes_the_mangled_kernel_name_long_19,
    a_type_whose_name_makes_the_mangled_kernel_name_long_20,
    a_type_whose_name_makes_the_mangled_kernel_name_long_21,
    a_type_whose_name_makes_the_mangled_kernel_name_long_22,
    a_type_whose_name_makes_the_mangled_kernel_name_long_23,
    a_type_whose_name_makes_the_mangled_kernel_name_long_24,
    a_type_whose_name_makes_the_mangled_kernel_name_long_25,
    a_type_whose_name_makes_the_mangled_kernel_name_long_26,
    a_type_whose_name_makes_the_mangled_kernel_name_long_27,
    a_type_whose_name_makes_the_mangled_kernel_name_long_28,
    a_type_whose_name_makes_the_mangled_kernel_name_long_29,
    a_type_whose_name_makes_the_mangled_kernel_name_long_30,
    a_type_whose_name_makes_the_mangled_kernel_name_long_31>(float *, const float *, const float *, int);
