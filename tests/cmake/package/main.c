/*
 * Built against the installed Debian package with nothing but
 * `cc main.c $(pkg-config --cflags --libs fdlink)`: the headers and the library are found, and the
 * program runs on a machine without the CUDA driver (the driver is opened at run time, and its
 * absence is an error the program reports, not a failure to start).
 */
#include <stdio.h>
#include <string.h>

#include <fdlink/fdlink.h>

int main(void)
{
    int count = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_count(&count, &err);
    printf("fdlink %s\n", fdl_version());
    if (rc == FDL_OK)
        printf("devices: %d\n", count);
    else
        printf("devices: none (%s)\n", fdl_status_name(rc));
    return strcmp(fdl_version(), FDLINK_VERSION_STRING) == 0 ? 0 : 1;
}
