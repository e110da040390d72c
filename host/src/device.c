typedef int fdl__placeholder_device;
