// cuBLASDx (MathDx) through NVRTC, as MathDx's NVRTC recipes compile it: a 32x32x32 double GEMM of
// one block of 256 threads, C = alpha A B + beta C (A row-major, B and C column-major).
#include <cublasdx.hpp>

using GEMM = decltype(cublasdx::Size<32, 32, 32>() + cublasdx::Precision<double>() +
                      cublasdx::Type<cublasdx::type::real>() +
                      cublasdx::Function<cublasdx::function::MM>() +
                      cublasdx::Arrangement<cublasdx::row_major, cublasdx::col_major>() +
                      cublasdx::Block() + cublasdx::BlockDim<256>() + cublasdx::SM<900>());

extern "C" __global__ void dx_gemm(const double *a, const double *b, double *c, double alpha,
                                   double beta)
{
    extern __shared__ __align__(16) char smem[];
    auto a_global = cublasdx::make_tensor(a, GEMM::get_layout_gmem_a());
    auto b_global = cublasdx::make_tensor(b, GEMM::get_layout_gmem_b());
    auto c_global = cublasdx::make_tensor(c, GEMM::get_layout_gmem_c());
    auto [smem_a, smem_b, smem_c] = cublasdx::slice_shared_memory<GEMM>(smem);
    auto a_shared = cublasdx::make_tensor(smem_a, GEMM::get_layout_smem_a());
    auto b_shared = cublasdx::make_tensor(smem_b, GEMM::get_layout_smem_b());
    auto c_shared = cublasdx::make_tensor(smem_c, GEMM::get_layout_smem_c());
    cublasdx::copy<GEMM, 16>(a_global, a_shared);
    cublasdx::copy<GEMM, 16>(b_global, b_shared);
    cublasdx::copy<GEMM, 16>(c_global, c_shared);
    cublasdx::copy_wait();
    GEMM().execute(alpha, a_shared, b_shared, beta, c_shared);
    __syncthreads();
    cublasdx::copy<GEMM, 16>(c_shared, c_global);
}
