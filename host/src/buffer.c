typedef int fdl__placeholder_buffer;
