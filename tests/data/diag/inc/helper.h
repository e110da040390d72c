// A header with a warning (line 5) and an error (line 6): diagnostics must name this file.
static __device__ int helper(int x)
{
    // the next two lines are what the tests look for
    int unused;
    return x + undefined_name;
}
