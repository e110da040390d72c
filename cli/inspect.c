/* fdlink inspect: what an input holds. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

void help_inspect(FILE *out)
{
    fputs("usage: fdlink inspect [--kind=KIND] [--decl F.decl] FILE...\n"
          "\n"
          "Show what a link input holds: its kind; for every code image in it (a fatbin's\n"
          "entries, an object's or a library's device code) the architecture, the PTX version,\n"
          "the functions and kernels with their PTX prototypes, or a cubin's symbols with the\n"
          "registers, shared memory, constant bank and stack of each function and kernel.\n"
          "\n"
          "options:\n"
          "  --kind=KIND    read FILE as KIND: ptx, cubin, fatbin, ltoir, object, library, cuda,\n"
          "                 bitcode\n"
          "  --code         kernels and functions only; variables as a count\n"
          "  --decl F.decl  for a linked cubin: whether each declared function's calls were\n"
          "                 inlined (no function of that name left) or stayed calls\n"
          "  -h, --help     show this help\n",
          out);
}

static void print_param(const fdl_ptx_param *p)
{
    if (p->align)
        printf(".align %u ", p->align);
    printf(".%s", p->type);
    if (p->array)
        printf("[%zu]", p->array);
}

static const char *linkage_name(fdl_ptx_linkage l)
{
    switch (l) {
    case FDL_PTX_LINK_VISIBLE: return ".visible ";
    case FDL_PTX_LINK_WEAK: return ".weak ";
    case FDL_PTX_LINK_EXTERN: return ".extern ";
    case FDL_PTX_LINK_COMMON: return ".common ";
    case FDL_PTX_LINK_NONE:
    default: return "";
    }
}

/* `kernel     .visible .entry multiply_vectors(.u64, .u64, .u64, .u32)  line 22` */
static void print_ptx(const fdl_ptx *ptx)
{
    for (size_t i = 0; i < fdl_ptx_count(ptx); i++) {
        const fdl_ptx_func *f = fdl_ptx_get(ptx, i);
        const char *role = f->is_entry ? "kernel" : f->is_definition ? "function" : "reference";
        printf("    %-9s %s%s ", role, linkage_name(f->linkage), f->is_entry ? ".entry" : ".func");
        if (f->has_return) {
            printf("(");
            print_param(&f->ret);
            printf(") ");
        }
        printf("%s(", f->name);
        for (size_t k = 0; k < f->nparams; k++) {
            if (k)
                printf(", ");
            print_param(&f->params[k]);
        }
        printf(")  line %u\n", f->line);
    }
}

static void print_symbol(const fdl_symbol *s)
{
    const char *role = s->kind == FDL_SYMBOL_KERNEL     ? "kernel"
                       : s->kind == FDL_SYMBOL_VARIABLE ? "variable"
                                                        : "function";
    printf("    %-9s %s", role, s->name);
    if (!s->defined) {
        printf(" (undefined: defined elsewhere)\n");
        return;
    }
    if (s->weak)
        printf(" (weak)");
    if (s->kind == FDL_SYMBOL_VARIABLE) {
        printf("\n");
        return;
    }
    const char *sep = ": ";
    if (s->registers >= 0) {
        printf("%s%ld registers", sep, s->registers);
        sep = ", ";
    }
    if (s->kind == FDL_SYMBOL_KERNEL && s->shared_bytes >= 0) {
        printf("%s%ld bytes smem", sep, s->shared_bytes);
        sep = ", ";
    }
    if (s->const_bytes >= 0) {
        printf("%s%ld bytes cmem[0]", sep, s->const_bytes);
        sep = ", ";
    }
    if (s->local_bytes >= 0)
        printf("%s%ld bytes stack frame", sep, s->local_bytes);
    printf("\n");
}

static void print_image(const fdl_image *img, size_t nimages, int code_only)
{
    printf("  ");
    if (img->member[0])
        printf("%s: ", img->member);
    printf("%s %s (", img->arch[0] ? img->arch : "unknown arch", fdl_input_kind_name(img->kind));
    if (img->kind == FDL_KIND_PTX && img->ptx_version[0])
        printf("PTX %s, ", img->ptx_version);
    if (img->kind == FDL_KIND_CUBIN)
        printf("%s, ", img->relocatable ? "relocatable" : "executable");
    printf("%zu bytes", img->size);
    if (img->compression[0])
        printf(", %s-compressed", img->compression);
    printf(")\n");
    (void)nimages;
    if (img->note[0])
        printf("    note: %s\n", img->note);
    if (img->kind == FDL_KIND_LTOIR && !img->note[0])
        printf("    its functions are known only after link-time optimisation\n");
    if (img->ptx)
        print_ptx(img->ptx);
    size_t vars = 0, weak = 0;
    for (size_t i = 0; i < img->nsymbols; i++) {
        if (code_only && img->symbols[i].kind == FDL_SYMBOL_VARIABLE) {
            vars++;
            weak += img->symbols[i].weak != 0;
            continue;
        }
        print_symbol(&img->symbols[i]);
    }
    /* --code: the variables summed up (issue 34: thousands of weak ones from C++ headers) */
    if (vars)
        printf("    variables: %zu (%zu weak), not shown\n", vars, weak);
}

/* What the cubin @p data says of each function of @p decls: inlined, or kept as a function. */
static void print_lto_report(const fdl_decls *decls, const void *data, size_t size)
{
    for (size_t i = 0; i < fdl_decls_count(decls); i++) {
        const char *name = fdl_decls_get(decls, i)->name;
        if (fdl_cubin_defines_function(data, size, name))
            printf("  lto: %s: kept as a function: its calls are calls (its input did not join "
                   "LTO, or LTO did not inline it)\n", name);
        else
            printf("  lto: %s: every call inlined (no function of that name in the cubin)\n",
                   name);
    }
}

int cmd_inspect(int argc, char **argv)
{
    fdl_input_kind kind = FDL_KIND_AUTO;
    int code_only = 0;
    fdl_decls *decls = NULL;
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    size_t nfiles = 0;
    int rc = 1;
    if (!files) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int missing = 0;
        const char *v;
        if (cli_is_help(a)) {
            help_inspect(stdout);
            rc = 0;
            goto cleanup;
        } else if ((v = cli_option_value(a, "--kind", argc, argv, &i, &missing)) || missing) {
            fdl_error kerr = FDL_ERROR_INIT;
            if (!v || fdl_input_kind_parse(&kind, v, &kerr) != FDL_OK) {
                rc = cli_usage_error("inspect", "%s",
                                     v ? kerr.message : "option --kind needs a kind");
                goto cleanup;
            }
        } else if (strcmp(a, "--code") == 0) {
            code_only = 1;
        } else if ((v = cli_option_value(a, "--decl", argc, argv, &i, &missing)) || missing) {
            fdl_error derr = FDL_ERROR_INIT;
            if (!v) {
                rc = cli_usage_error("inspect", "%s", "option --decl needs a file");
                goto cleanup;
            }
            fdl_decls_destroy(decls);
            decls = NULL;
            if (fdl_decls_load(&decls, v, &derr) != FDL_OK) {
                cli_print_error(&derr);
                rc = 1;
                goto cleanup;
            }
        } else if (a[0] == '-' && a[1] != '\0') {
            rc = cli_usage_error("inspect", "unknown option '%s'", a);
            goto cleanup;
        } else {
            files[nfiles++] = a;
        }
    }
    if (!nfiles) {
        rc = cli_usage_error("inspect", "%s", "no input files");
        goto cleanup;
    }
    rc = 0;
    for (size_t f = 0; f < nfiles; f++) {
        fdl_inspection *ins = NULL;
        fdl_error err = FDL_ERROR_INIT;
        char *bytes = NULL; /* with --decl: the file read once, inspected and scanned */
        size_t nbytes = 0;
        if (decls ? fdl__read_file(files[f], &bytes, &nbytes, &err) != FDL_OK ||
                        fdl_inspect_data(&ins, bytes, nbytes, files[f], kind, &err) != FDL_OK
                  : fdl_inspect_file(&ins, files[f], kind, &err) != FDL_OK) {
            cli_print_error(&err);
            free(bytes);
            rc = 1;
            continue;
        }
        size_t n = fdl_inspection_count(ins);
        printf("%s: %s", files[f], fdl_input_kind_title(fdl_inspection_kind(ins)));
        if (fdl_inspection_kind(ins) != FDL_KIND_CUDA &&
            fdl_inspection_kind(ins) != FDL_KIND_BITCODE)
            printf(", %zu image%s", n, n == 1 ? "" : "s");
        printf("\n");
        for (size_t i = 0; i < n; i++)
            print_image(fdl_inspection_image(ins, i), n, code_only);
        if (decls && fdl_inspection_kind(ins) == FDL_KIND_CUBIN)
            print_lto_report(decls, bytes, nbytes);
        free(bytes);
        fdl_inspection_destroy(ins);
    }
cleanup:
    free(files);
    fdl_decls_destroy(decls);
    return rc;
}
