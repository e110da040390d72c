// A caller that sees the foreign functions only through the generated header.
extern "C" __global__ void call_all(float *out, double *d, int *i, void **v, unsigned int *u)
{
    float f;
    f_f32(&f, out[0], out[1]);
    out[2] = f;
    double x;
    f_f64(&x, d[0], d + 1);
    d[2] = x;
    int s;
    f_small(&s, (signed char)i[0], (unsigned char)i[1], (short)i[2], (unsigned short)i[3]);
    i[4] = s;
    f_void(nullptr, i + 5, 7);
    int k;
    f_noargs(&k);
    i[6] = k;
    void *p;
    f_ptrs(&p, v[0], nullptr, nullptr);
    v[1] = p;
    u[0] = c_add(u[1], u[2]);
    d[3] = c_scale(d[0], 3);
    c_store(out + 3, 1.5f);
}
