// Defined with floats against wide.decl's doubles: the force-included prototype makes it a
// compile error, which fdlink reports as ABI-5 with both signatures (issue 38).
extern "C" __device__ int
mul_f32_f32 /* the name, then the declarator over lines */ (float *return_value, // slot
                                                           float a,
                                                           const float b = 1.0f)
{
    *return_value = a * b;
    return 0;
}
