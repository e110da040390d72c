/*
 * Opens the default device (fdl_device_open(-1)) and prints which one it got, as
 * `which_device: device N`, then holds it a moment so that tests started together overlap. Exits 1
 * when the device is not the one CTEST_RESOURCE_GROUP_0_GPUS names (when set), 77 without a
 * device. Used by resources.sh with the mock driver.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fdlink/fdlink.h"

int main(void)
{
    fdl_device *dev = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_open(&dev, -1, &err);
    if (rc == FDL_ENOLIB || rc == FDL_ENODEVICE) {
        printf("which_device: skipped: %s\n", err.message);
        return 77;
    }
    if (rc != FDL_OK) {
        fprintf(stderr, "which_device: error: %s\n", err.message);
        return 1;
    }
    int ordinal = fdl_device_ordinal(dev);
    fdl_device_destroy(dev);
    const char *assigned = getenv("CTEST_RESOURCE_GROUP_0_GPUS");
    printf("which_device: device %d (CTEST_RESOURCE_GROUP_0_GPUS=%s)\n", ordinal,
           assigned ? assigned : "unset");
    if (assigned) {
        char expect[32];
        snprintf(expect, sizeof expect, "id:%d,", ordinal);
        if (strncmp(assigned, expect, strlen(expect)) != 0) {
            fprintf(stderr, "which_device: error: ctest assigned %s, but device %d was opened\n",
                    assigned, ordinal);
            return 1;
        }
    }
    struct timespec hold = {0, 600 * 1000 * 1000};
    nanosleep(&hold, NULL);
    return 0;
}
