// smoothstepf(e0, e1, x): Hermite interpolation between the edges, through clampf, which lives in
// another member of the same library.
extern "C" __device__ int smoothstepf(float *return_value, float e0, float e1, float x)
{
    float t;
    int status = clampf(&t, (x - e0) / (e1 - e0), 0.0f, 1.0f);
    if (status != 0)
        return status;
    *return_value = t * t * (3.0f - 2.0f * t);
    return 0;
}
