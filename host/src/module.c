typedef int fdl__placeholder_module;
