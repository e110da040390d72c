#include <criterion/criterion.h>
Test(placeholder_link, builds) { cr_assert(1); }
