// sum_reduce is declared but not defined (ABI-6).
#define OMIT_SUM_REDUCE
#include "conforming.cu"
