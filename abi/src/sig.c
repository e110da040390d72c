typedef int fdl__placeholder_sig;
