#include <criterion/criterion.h>
Test(placeholder_error, builds) { cr_assert(1); }
