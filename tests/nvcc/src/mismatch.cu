// A definition that disagrees with its declaration (f_f32: float32(float32, float32)): the second
// parameter is a double. With the generated header force-included this must not compile.
extern "C" __device__ int f_f32(float *r, float a, double b) { *r = a + (float)b; return 0; }
