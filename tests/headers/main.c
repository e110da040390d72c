/* Links every header-alone translation unit and checks the version macros against the library. */
#include <stdio.h>
#include <string.h>

#include "fdlink/fdlink.h"

int main(void)
{
    if (strcmp(fdl_version(), FDLINK_VERSION_STRING) != 0) {
        fprintf(stderr, "header says %s, library says %s\n", FDLINK_VERSION_STRING, fdl_version());
        return 1;
    }
    return 0;
}
