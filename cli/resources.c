/*
 * fdlink resource-spec: the ctest resource specification of the GPUs present
 * (fdl_device_ctest_resource_spec), for `ctest -j N --resource-spec-file FILE`.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

void help_resource_spec(FILE *out)
{
    fprintf(out,
            "usage: fdlink resource-spec [--slots N] [-o FILE]\n"
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
            "options:\n"
            "  --slots N      slots per GPU: tests that may share a GPU at once (default 1,\n"
            "                 at most %d)\n"
            "  -o FILE        output file, written atomically (default: standard output)\n"
            "  -h, --help     show this help\n",
            FDL_RESOURCE_SLOTS_MAX);
}

int cmd_resource_spec(int argc, char **argv)
{
    const char *out_path = NULL;
    unsigned slots = 1;
    char *json = NULL;
    int rc = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing;
        const char *v;
        if (cli_is_help(a)) {
            help_resource_spec(stdout);
            return 0;
        } else if ((v = cli_option_value(a, "-o", argc, argv, &i, &missing)) || missing) {
            if (missing)
                return cli_usage_error("resource-spec", "option '%s' needs a file", a);
            out_path = v;
        } else if ((v = cli_option_value(a, "--slots", argc, argv, &i, &missing)) || missing) {
            if (missing)
                return cli_usage_error("resource-spec", "option '%s' needs a number", a);
            char *end = NULL;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (errno || end == v || *end || v[0] == '-' || v[0] == '+' || n < 1 ||
                n > FDL_RESOURCE_SLOTS_MAX)
                return cli_usage_error("resource-spec",
                                       "--slots '%s' is not a number of slots (1 to 1024)", v);
            slots = (unsigned)n;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("resource-spec", "unknown option '%s'", a);
        } else {
            return cli_usage_error("resource-spec", "unexpected argument '%s'", a);
        }
    }

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
