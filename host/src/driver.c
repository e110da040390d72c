typedef int fdl__placeholder_driver;
