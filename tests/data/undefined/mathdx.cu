// A caller of a cuSolverDx function that only libmathdx's generated code defines.
namespace cusolverdx { namespace detail { namespace potrf {
template <class T> __device__ T cta_driver(T *a, int n);
} } }
extern "C" __global__ void call_potrf(double *a, int n)
{
    a[0] = cusolverdx::detail::potrf::cta_driver<double>(a, n);
}
