#include "cli.h"
void help_doctor(FILE *out) { (void)out; }
int cmd_doctor(int argc, char **argv) { (void)argc; (void)argv; return 1; }
