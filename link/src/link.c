typedef int fdl__placeholder_link;
