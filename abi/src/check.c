typedef int fdl__placeholder_check;
