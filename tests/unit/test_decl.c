#include <criterion/criterion.h>
Test(placeholder_decl, builds) { cr_assert(1); }
