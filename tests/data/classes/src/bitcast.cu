extern "C" __device__ int fromb(float *r, int bits) { *r = __int_as_float(bits); return 0; }
extern "C" __device__ int fromb2(float *r, int bits, float s) { *r = __int_as_float(bits) * s; return 0; }
extern "C" __device__ int tob(int *r, float x) { *r = __float_as_int(x) ^ 0x80000000; return 0; }
extern "C" __device__ int sel(float *r, int flag, float a, float b) { *r = flag ? a : b; return 0; }
extern "C" __device__ int cbits(int *r, float x) { *r = __float_as_int(x * 2.0f); return 0; }   // -O3: st.f32 into the int slot
