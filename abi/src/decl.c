typedef int fdl__placeholder_decl;
