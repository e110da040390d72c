#include <criterion/criterion.h>
Test(placeholder_abi, builds) { cr_assert(1); }
