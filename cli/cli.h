/* Shared helpers of the fdlink CLI's subcommands (not installed). */
#ifndef FDLINK_CLI_H
#define FDLINK_CLI_H

#include <stdarg.h>
#include <stdio.h>

#include "fdlink/fdlink.h"

#define EXIT_USAGE 2

/*
 * printf to stderr with every control character but a final newline escaped (\n, \t, \xNN): a
 * file name holding a newline or an escape sequence stays on its line and does nothing.
 */
void cli_eprintf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void cli_veprintf(const char *fmt, va_list ap);

/* One diagnostic line on stderr: `fdlink: file:line:col: error: symbol: message`. */
void cli_print_error(const fdl_error *err);
/*
 * After the headline @p err (already printed): the backend's raw log @p log (NVRTC's, the
 * linker's), whole with @p verbose; else only what adds to the headline (issue 34): the entries
 * of the log that repeat it (its file and line, or a name it quotes), nvJitLink's status echo
 * ("ERROR 9: finish") and a summary left with nothing to sum up are left out.
 */
void cli_print_log_rest(const char *log, const fdl_error *err, int verbose);

/* A diagnostic callback (fdl_diag_fn) that prints each one; ctx is a size_t counter. */
void cli_on_diag(void *ctx, const fdl_error *diag);

/* Print `fdlink: error: <fmt with arg> (see 'fdlink <cmd> --help')` and return EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, const char *arg);

/*
 * Option tables (options.c): a row per option names it, says what value it takes, where the
 * value goes (an offset into the command's struct) and how it shows in the help, so that one
 * row both parses the option and prints its help line. A table ends with a row {CLI_END}.
 */
typedef enum cli_arg {
    CLI_END = 0,    /* the end of a table */
    CLI_FLAG,       /* no value: the int at the offset becomes .set (.parse, when set, does
                       it instead, given no value) */
    CLI_STRING,     /* const char *: the value (with CLI_NONEMPTY, not "") */
    CLI_LIST,       /* a cli_list: the value appended (repeatable) */
    CLI_COUNT,      /* int: a count 0-65535 of at least .set */
    CLI_BIT,        /* int: 0 or 1 */
    CLI_LINK_RANGE, /* int: a count in the range the library gives (fdl_link_option_bounds) for
                       the field named as the option is, "--a-b" as "a_b"; a %s in .bad and
                       .help is that range ("0-101") */
    CLI_CUSTOM,     /* .parse does it */
    CLI_TABLE,      /* the rows of .table, for the struct at the offset; its help lines in place,
                       or .help instead when set */
    CLI_DOC         /* a help line only: another table parses the option */
} cli_arg;

typedef enum cli_form {
    CLI_PLAIN = 0, /* NAME VALUE or NAME=VALUE; -o, --out and --emit-ptx: "" is missing */
    CLI_EQUALS,    /* NAME=VALUE only */
    CLI_ATTACHED,  /* NAMEVALUE or NAME VALUE (-DNAME, -O3); a list's value not "" */
    CLI_NONEMPTY   /* as CLI_PLAIN, and a string's value not "" */
} cli_form;

typedef struct cli_opt cli_opt;
/* A value for row @p o (NULL when missing), given as @p arg: 0, or an exit status after
 * printing the usage error. */
typedef int (*cli_opt_fn)(void *target, const cli_opt *o, const char *cmd, const char *arg,
                          const char *v);
struct cli_opt {
    cli_arg arg;
    const char *name;      /* "--decl" */
    const char *alias;     /* another spelling ("--arch" of "-arch"), or NULL */
    cli_form form;
    size_t at;             /* offsetof the target in the command's struct */
    int set;               /* CLI_FLAG: the value; CLI_COUNT: the least */
    const char *bad;       /* the usage error of a missing or bad value; a %s in it is the
                              option as given */
    const char *usage;     /* the help's left column ("--decl FILE"); NULL: shown with the row
                              before */
    const char *help;      /* the help's right column, wrapped as it is printed */
    cli_opt_fn parse;      /* CLI_CUSTOM */
    const cli_opt *table;  /* CLI_TABLE */
};

/*
 * Parse argv[*i] against @p table for the struct @p target (advancing *i past a value): 1 when
 * a row is that option (*rc 0, or an exit status after printing a usage error), else 0.
 */
int cli_opts_parse(const cli_opt *table, void *target, const char *cmd, int argc, char **argv,
                   int *i, int *rc);
/*
 * A command's command line, read by cli_command_parse: its name (for usage errors), its option
 * table, its help, and what it does with a word that is not an option (an operand): 0, or an
 * exit status after printing; NULL: it takes none ("unexpected argument").
 */
typedef int (*cli_operand_fn)(void *target, const char *cmd, const char *arg);
typedef struct cli_command_line {
    const char *cmd;
    const cli_opt *opts;
    void (*help)(FILE *out);
    cli_operand_fn operand;
} cli_command_line;

/*
 * argv[1..argc) in order, for the struct @p target: -h or --help prints the help, a row's option
 * is taken (cli_opts_parse), any other word that starts with '-' (not "-" alone) is an unknown
 * option, and the rest go to the operand function. @return 1 when the command ends here, *rc its
 * exit status (0 after the help, else that of the error printed), else 0 (*rc as it was).
 */
int cli_command_parse(const cli_command_line *c, void *target, int argc, char **argv, int *rc);
/* The help's option lines of @p table: each row's usage, its help from column @p col. */
void cli_opts_help(const cli_opt *table, int col, FILE *out);
/* A count 0-65535, and at most @p hi, into *out; 0 when @p v (may be NULL) is not one. */
int cli_parse_count(const char *v, int hi, int *out);

/* Non-zero for -h and --help. */
int cli_is_help(const char *arg);

/* A string list that grows; NULL-terminated. */
typedef struct cli_list {
    const char **v;
    size_t n;
} cli_list;

/* Append @s (borrowed); 0 when out of memory. */
int cli_list_add(cli_list *l, const char *s);

/* How diagnostics are shown (host/cli/diagnostics.c). */
typedef enum cli_diag_format { CLI_DIAG_TEXT = 0, CLI_DIAG_JSON, CLI_DIAG_SARIF } cli_diag_format;
typedef struct cli_diag_opts {
    int no_warnings;         /* -w */
    int werror;              /* -Werror */
    cli_list suppress;       /* --diag-suppress=CODE[,CODE...] */
    cli_diag_format format;  /* --diagnostics-format */
    const char *output;      /* --diagnostics-output=FILE, else stdout */
} cli_diag_opts;

/*
 * Parse argv[*i] when it is a diagnostics option (advancing *i past its value): 1 when it was
 * one (*rc 0, or EXIT_USAGE after printing a usage error), else 0. The options are one table,
 * cli_diag_table (rows for a cli_diag_opts; no help lines: each command's help says them).
 */
extern const cli_opt cli_diag_table[];
int cli_diag_option(cli_diag_opts *o, const char *cmd, int argc, char **argv, int *i, int *rc);
void cli_diag_opts_free(cli_diag_opts *o);

/*
 * Show the link's diagnostics as @p o says: text on stderr (a failed link's errors left to the
 * caller, who prints them with the log), or the JSON/SARIF document (every record, and
 * @p failure when no record says it). *promoted: warnings made errors by -Werror.
 * @return 0, or 1 when the document could not be written.
 */
int cli_diag_report(const cli_diag_opts *o, const fdl_link *link, const fdl_error *failure,
                    int *promoted);

/* The same for fdlink's own diagnostics given as errors (fdlink check's), tool "fdlink". */
int cli_diag_report_errors(const cli_diag_opts *o, const fdl_error *errs, size_t n,
                           const fdl_error *failure);

/* The inputs and options of a link, shared by `link` and `run`. */
typedef struct cli_link_args {
    fdl_link_options opts;
    fdl_nvrtc_options cuda;
    const char **inputs;     /* argc + 1 slots */
    fdl_input_kind *kinds;   /* argc + 1 slots */
    size_t ninputs;
    cli_list extra, kernels, variables, xptxas, xnvrtc, defines, includes, decl_paths;
    fdl_decls **decls;       /* loaded by cli_link_build */
    size_t nsets;
    const char *ptx_path;    /* --emit-ptx */
    int device;              /* --device N; -1: FDLINK_DEVICE, else 0 */
    cli_diag_opts diag;      /* -w, -Werror, --diag-suppress, --diagnostics-format (issue 24) */
    int whole_logs;          /* -v of run: backends' raw logs whole (link: opts.verbose) */
    cli_list archs;          /* every -arch value as given (a comma list each; issue 40) */
} cli_link_args;

/* Set defaults and room for @argc inputs; 0 (after printing) when out of memory. */
int cli_link_args_init(cli_link_args *a, int argc);
void cli_link_args_free(cli_link_args *a);
/* Add a positional input of a kind detected from its content. */
int cli_link_add_input(cli_link_args *a, const char *path);

/* The link options of `link` and `run`, as a table over cli_link_args (link.c); the
 * diagnostics options beside them are cli_diag_option's. */
extern const cli_opt cli_link_opts[];

/* The link options' own checks (no device needed); 1 after printing what is wrong, else 0. */
int cli_link_check_options(cli_link_args *a);

/* Non-zero when the link needs an open device: the culink backend, or -arch=native. */
int cli_link_needs_device(const cli_link_args *a);

/* Non-zero when @err, from opening a device, means that there is no driver or no GPU here. */
int cli_no_gpu_here(const fdl_error *err);

/* Print why a device could not be opened, in the culink backend's words when that needed it. */
void cli_print_device_error(const cli_link_args *a, const fdl_error *err);

/* A device index ("0", "1", ...) into *out; 0 when it is not one. */
int cli_parse_device(const char *v, int *out);

/*
 * What NVIDIA's libraries write to the process's standard error (fd 2) during the calls into
 * libfdlink that load and run them (nvJitLink, NVRTC, libNVVM; issue 38): fd 2 goes to an
 * unlinked temporary file between cli_capture_begin and cli_capture_end, fdlink's own messages
 * meanwhile to the terminal's standard error (cli_stderr), and at the end what was captured is
 * written after them, as the log it is. The library itself never touches the process's file
 * descriptors. Without a free file descriptor or a temporary file, nothing is captured.
 */
typedef struct cli_capture {
    int tmp; /* the temporary file, or -1 when not capturing */
} cli_capture;
void cli_capture_begin(cli_capture *c);
void cli_capture_end(cli_capture *c);
/* The standard error stream for fdlink's own messages: the terminal's while fd 2 is captured. */
FILE *cli_stderr(void);
/* Its file descriptor (STDERR_FILENO when nothing is captured). */
int cli_stderr_fd(void);
/* End the capture in progress, if any (the process is ending from inside a library). */
void cli_capture_end_active(void);

/*
 * Load the declarations, create the link, add the inputs and complete it, printing every error,
 * with fd 2 captured meanwhile (cli_capture_begin). Returns 0 with *out the caller's, or 1.
 */
int cli_link_build(cli_link_args *a, fdl_link **out);

/* One architecture of a fat link (issue 40): its link's arch, and what of it the fatbin holds. */
typedef struct cli_fat_target {
    char sm[24];     /* "sm_90": the link's arch */
    unsigned arch;   /* 90 */
    char suffix;     /* 'a', 'f' or 0 */
    int cubin;       /* sm_90 asked: the cubin */
    int ptx;         /* compute_90 asked: the post-LTO PTX */
} cli_fat_target;

/*
 * The -arch values as targets, one per sm_NN (sm_90 and compute_90 share a link); *fat 1 when
 * they make a fatbin (several, or any compute_NN). 0 (*out the caller's, free()), or an exit
 * status after printing.
 */
int cli_link_fat_targets(cli_link_args *a, const char *cmd, cli_fat_target **out, size_t *n,
                         int *fat);

/* The links of @p n targets, completed side by side (fdl_links_complete), every error printed:
 * 0 with links[0..n) the caller's, or 1 (none left). */
int cli_link_build_fat(cli_link_args *a, const cli_fat_target *t, size_t n, fdl_link **links);

/* Refuse outputs (@p out_path, may be NULL, and --emit-ptx) that name an input or a declaration
 * file, or each other, with one line: 0, or EXIT_USAGE after printing. */
int cli_link_refuse_outputs(const cli_link_args *a, const char *cmd, const char *out_path);
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
/* `fdlink link`'s arguments run; with @p write_outputs 0 (prewarm) the links are made and cached,
 * nothing written. */
int cli_link_main(int argc, char **argv, int write_outputs);
int cmd_prewarm(int argc, char **argv);
void help_prewarm(FILE *out);
void help_link(FILE *out);
int cmd_inspect(int argc, char **argv);
void help_inspect(FILE *out);
int cmd_embed(int argc, char **argv);
void help_embed(FILE *out);
int cmd_run(int argc, char **argv);
void help_run(FILE *out);
int cmd_doctor(int argc, char **argv);
void help_doctor(FILE *out);
/* fdlink resource-spec (resources.c): the ctest resource spec of the GPUs present. */
int cmd_resource_spec(int argc, char **argv);
void help_resource_spec(FILE *out);
int cmd_cache(int argc, char **argv);
void help_cache(FILE *out);

/* The variable (FDLINK_NVRTC or FDLINK_NVJITLINK) that cli_pair_libraries set to the partner of
 * the one the user set, from its folder, or NULL. */
extern const char *cli_paired_variable;
/* Set the partner of FDLINK_NVRTC or FDLINK_NVJITLINK from its folder (util.c; main, at start). */
void cli_pair_libraries(void);

#endif /* FDLINK_CLI_H */
