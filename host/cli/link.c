/* fdlink link: device code into a cubin. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void help_link(FILE *out)
{
    fputs("usage: fdlink link -arch=sm_NN [options] [-o OUT.cubin] INPUT...\n"
          "\n"
          "Link device code into a cubin with nvJitLink (loaded at run time; no GPU needed).\n"
          "Inputs are recognised from their content (PTX for now).\n"
          "\n"
          "options:\n"
          "  -arch=sm_NN, --arch sm_NN   target architecture (required), e.g. sm_90\n"
          "  -o FILE                     output cubin, written atomically (default: a.cubin)\n"
          "  --decl FILE                 check PTX inputs against these declarations first\n"
          "  -O N                        optimisation level 0-3\n"
          "  -g                          device debug information\n"
          "  --lineinfo                  line information\n"
          "  -v, --verbose               print the linker's info log, wall time and output size\n"
          "  -h, --help                  show this help\n",
          out);
}

int cmd_link(int argc, char **argv)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    const char *out_path = "a.cubin", *decl_path = NULL;
    const char **inputs = calloc((size_t)argc, sizeof *inputs);
    size_t ninputs = 0, ndiags = 0;
    fdl_decls *decls = NULL;
    fdl_link *link = NULL;
    int rc = 1;
    if (!inputs) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing;
        const char *v;
        if (cli_is_help(a)) {
            help_link(stdout);
            rc = 0;
            goto cleanup;
        } else if ((v = cli_option_value(a, "-arch", argc, argv, &i, &missing)) ||
                   (!missing && (v = cli_option_value(a, "--arch", argc, argv, &i, &missing))) ||
                   missing) {
            if (missing) {
                rc = cli_usage_error("link", "option '%s' needs an architecture (sm_NN)", a);
                goto cleanup;
            }
            opts.arch = v;
        } else if ((v = cli_option_value(a, "-o", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = cli_usage_error("link", "option '%s' needs a file", a);
                goto cleanup;
            }
            out_path = v;
        } else if ((v = cli_option_value(a, "--decl", argc, argv, &i, &missing)) || missing) {
            if (missing) {
                rc = cli_usage_error("link", "option '%s' needs a file", a);
                goto cleanup;
            }
            decl_path = v;
        } else if (strncmp(a, "-O", 2) == 0) {
            const char *lv = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : "");
            if (!(lv[0] >= '0' && lv[0] <= '3' && lv[1] == '\0')) {
                rc = cli_usage_error("link", "invalid optimisation level '%s' (expected 0-3)", lv);
                goto cleanup;
            }
            opts.opt_level = lv[0] - '0';
        } else if (strcmp(a, "-g") == 0) {
            opts.debug = 1;
        } else if (strcmp(a, "--lineinfo") == 0 || strcmp(a, "-lineinfo") == 0) {
            opts.lineinfo = 1;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            opts.verbose = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = cli_usage_error("link", "unknown option '%s'", a);
            goto cleanup;
        } else {
            inputs[ninputs++] = a;
        }
    }
    if (!opts.arch) {
        rc = cli_usage_error("link", "%s", "missing -arch=sm_NN");
        goto cleanup;
    }
    if (ninputs == 0) {
        rc = cli_usage_error("link", "%s", "no input files");
        goto cleanup;
    }

    fdl_error err = FDL_ERROR_INIT;
    if (decl_path && fdl_decls_load(&decls, decl_path, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (fdl_link_create(&link, &opts, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (decls) {
        if (fdl_link_set_diag(link, cli_on_diag, &ndiags) != FDL_OK ||
            fdl_link_add_decls(link, decls, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    }
    for (size_t i = 0; i < ninputs; i++) {
        if (fdl_link_add_file(link, inputs[i], FDL_KIND_AUTO, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    }
    if (fdl_link_complete(link, &err) != FDL_OK) {
        if (err.code == FDL_EABI) {
            fprintf(stderr, "fdlink: %zu error%s against %s; nothing linked\n", ndiags,
                    ndiags == 1 ? "" : "s", decl_path);
        } else {
            cli_print_error(&err);
            if (err.log && err.log[0])
                fprintf(stderr, "%s%s", err.log,
                        err.log[strlen(err.log) - 1] == '\n' ? "" : "\n");
        }
        goto cleanup;
    }
    if (fdl_link_write(link, out_path, &err) != FDL_OK) {
        cli_print_error(&err);
        goto cleanup;
    }
    if (opts.verbose) {
        size_t size = 0;
        fdl_link_cubin(link, &size);
        const char *info = fdl_link_info_log(link);
        if (info[0])
            fprintf(stderr, "%s%s", info, info[strlen(info) - 1] == '\n' ? "" : "\n");
        fprintf(stderr, "fdlink: linked %zu input%s for %s into %s (%zu bytes) in %.2f ms\n",
                ninputs, ninputs == 1 ? "" : "s", opts.arch, out_path, size,
                fdl_link_wall_ms(link));
    }
    rc = 0;
cleanup:
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    free(inputs);
    return rc;
}

