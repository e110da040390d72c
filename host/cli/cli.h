/* Shared helpers of the fdlink CLI's subcommands (not installed). */
#ifndef FDLINK_CLI_H
#define FDLINK_CLI_H

#include <stdio.h>

#include "fdlink/fdlink.h"

#define EXIT_USAGE 2

/* One diagnostic line on stderr: `fdlink: file:line:col: error: symbol: message`. */
void cli_print_error(const fdl_error *err);

/* A diagnostic callback (fdl_diag_fn) that prints each one; ctx is a size_t counter. */
void cli_on_diag(void *ctx, const fdl_error *diag);

/* Print `fdlink: error: <fmt with arg> (see 'fdlink <cmd> --help')` and return EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);

/*
 * The value of an option given as `opt=value` or `opt value` (advancing *i), or NULL when @arg is
 * not this option. *missing is set when the option is last and has no value.
 */
const char *cli_option_value(const char *arg, const char *opt, int argc, char **argv, int *i,
                             int *missing);

/* Non-zero for -h and --help. */
int cli_is_help(const char *arg);

/* An output that names one of @p n inputs (the same path, or the same file through a link) is
 * refused with one line, before anything is read or written. @return 0, or EXIT_USAGE. */
int cli_refuse_output_input(const char *cmd, const char *out, const char *const *inputs,
                            size_t n);

/* Subcommands: run(argc, argv) with argv[0] the command name, and help(out). */
int cmd_check(int argc, char **argv);
void help_check(FILE *out);
int cmd_header(int argc, char **argv);
void help_header(FILE *out);
int cmd_link(int argc, char **argv);
void help_link(FILE *out);
int cmd_inspect(int argc, char **argv);
void help_inspect(FILE *out);
int cmd_embed(int argc, char **argv);
void help_embed(FILE *out);
/* fdlink resource-spec (resources.c): the ctest resource spec of the GPUs present. */
int fdl__cli_resource_spec(int argc, char **argv);
void fdl__cli_resource_spec_help(FILE *out);

#endif /* FDLINK_CLI_H */
