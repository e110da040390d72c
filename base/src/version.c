#include "fdlink/version.h"

const char *fdl_version(void)
{
    return FDLINK_VERSION_STRING;
}
