// SETTINGS_REQUIRE_FLAGS (given in CMAKE_CUDA_FLAGS) asks for the definitions the user's flags
// carry: FROM_CUDA_FLAGS (CMAKE_CUDA_FLAGS) and FROM_CONFIG_FLAGS (CMAKE_CUDA_FLAGS_RELEASE).
#if defined(SETTINGS_REQUIRE_FLAGS) && !defined(FROM_CUDA_FLAGS)
#error "CMAKE_CUDA_FLAGS did not reach nvcc"
#endif
#if defined(SETTINGS_REQUIRE_FLAGS) && !defined(FROM_CONFIG_FLAGS)
#error "CMAKE_CUDA_FLAGS_<CONFIG> did not reach nvcc"
#endif
extern "C" __device__ int twice(float *return_value, float x)
{
    *return_value = 2.0f * x;
    return 0;
}
