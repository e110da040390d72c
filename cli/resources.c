/*
 * fdlink resource-spec: the ctest resource specification of the GPUs present
 * (fdl_device_ctest_resource_spec), for `ctest -j N --resource-spec-file FILE`.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

/* The command line of `fdlink resource-spec` (and of `fdlink doctor --ctest-resource-spec`). */
typedef struct spec_args {
    const char *out_path; /* -o */
    unsigned slots;       /* --slots */
} spec_args;

/* --slots N: 1 to FDL_RESOURCE_SLOTS_MAX. */
static int take_slots(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    char *end = NULL;
    if (!v)
        return cli_usage_error(cmd, o->bad, arg);
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || v[0] == '-' || v[0] == '+' || n < 1 ||
        n > FDL_RESOURCE_SLOTS_MAX)
        return cli_usage_error(cmd, "--slots '%s' is not a number of slots (1 to 1024)", v);
    ((spec_args *)t)->slots = (unsigned)n;
    return 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)

static const cli_opt spec_opts[] = {
    {.arg = CLI_CUSTOM, .name = "--slots", .parse = take_slots,
     .bad = "option '%s' needs a number", .usage = "--slots N",
     .help = "slots per GPU: tests that may share a GPU at once (default 1, at most "
             STR(FDL_RESOURCE_SLOTS_MAX) ")"},
    {.arg = CLI_STRING, .name = "-o", .at = offsetof(spec_args, out_path),
     .bad = "option '%s' needs a file", .usage = "-o FILE",
     .help = "output file, written atomically (default: standard output)"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_END},
};

void help_resource_spec(FILE *out)
{
    fputs("usage: fdlink resource-spec [--slots N] [-o FILE]\n"
          "\n"
          "Write a ctest resource specification for the GPUs of this host: resource type\n"
          "'gpus', one entry a GPU, its ordinal as id. Tests registered with\n"
          "fdlink_add_test(... GPU) ask for 'gpus:1', and fdl_device_open(-1) opens the GPU\n"
          "ctest assigned, so\n"
          "\n"
          "  fdlink resource-spec -o gpus.json\n"
          "  ctest -j 8 --resource-spec-file gpus.json\n"
          "\n"
          "runs the GPU tests in parallel, one a GPU (one a slot with --slots). Without a\n"
          "driver or a GPU the spec lists no GPUs, and a note on stderr says why.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(spec_opts, 17, out);
}

static const cli_command_line spec_line = {"resource-spec", spec_opts, help_resource_spec, NULL};

int cmd_resource_spec(int argc, char **argv)
{
    spec_args a = {NULL, 1};
    const char *out_path;
    unsigned slots;
    char *json = NULL;
    int rc = 1;
    if (cli_command_parse(&spec_line, &a, argc, argv, &rc))
        return rc;
    out_path = a.out_path;
    slots = a.slots;

    fdl_error err = FDL_ERROR_INIT;
    size_t len = 0;
    int ngpus = 0;
    if (fdl_device_ctest_resource_spec(&json, &len, &ngpus, slots, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (ngpus == 0) {
        int count = 0;
        fdl_error why = FDL_ERROR_INIT;
        fdl_device_count(&count, &why);
        fprintf(stderr,
                "fdlink: note: %s; the spec lists no GPUs, so ctest runs no test that asks "
                "for one\n",
                why.message[0] ? why.message : "no CUDA device");
    }
    if (out_path && strcmp(out_path, "-") != 0) {
        if (fdl__write_atomic(out_path, json, len, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    } else if (fwrite(json, 1, len, stdout) != len || fflush(stdout) != 0) {
        fprintf(stderr, "fdlink: error: cannot write to standard output\n");
        goto cleanup;
    }
    rc = 0;
cleanup:
    free(json);
    return rc;
}
