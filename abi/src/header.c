typedef int fdl__placeholder_header;
