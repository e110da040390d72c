typedef int fdl__placeholder_ptx;
