/* fdlink inspect: what an input holds. */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"

/* The command line of `fdlink inspect`. */
typedef struct inspect_args {
    fdl_input_kind kind; /* --kind */
    int code_only;       /* --code */
    fdl_decls *decls;    /* --decl, loaded as it comes */
    const char **files;  /* the operands: argc + 1 slots */
    size_t nfiles;
} inspect_args;

static int take_kind(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    fdl_error kerr = FDL_ERROR_INIT;
    (void)arg;
    if (!v || fdl_input_kind_parse(&((inspect_args *)t)->kind, v, &kerr) != FDL_OK)
        return cli_usage_error(cmd, "%s", v ? kerr.message : o->bad);
    return 0;
}

/* --decl F.decl, loaded now (the last one given counts). */
static int take_decl(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    inspect_args *a = t;
    fdl_error derr = FDL_ERROR_INIT;
    (void)arg;
    if (!v)
        return cli_usage_error(cmd, "%s", o->bad);
    fdl_decls_destroy(a->decls);
    a->decls = NULL;
    if (fdl_decls_load(&a->decls, v, &derr) != FDL_OK) {
        cli_print_error(&derr);
        return 1;
    }
    return 0;
}

static int take_file(void *t, const char *cmd, const char *arg)
{
    inspect_args *a = t;
    (void)cmd;
    a->files[a->nfiles++] = arg;
    return 0;
}

static const cli_opt inspect_opts[] = {
    {.arg = CLI_CUSTOM, .name = "--kind", .parse = take_kind, .bad = "option --kind needs a kind",
     .usage = "--kind=KIND",
     .help = "read FILE as KIND: ptx, cubin, fatbin, ltoir, object, library, cuda, bitcode"},
    {.arg = CLI_FLAG, .name = "--code", .at = offsetof(inspect_args, code_only), .set = 1,
     .usage = "--code", .help = "kernels and functions only; variables as a count"},
    {.arg = CLI_CUSTOM, .name = "--decl", .parse = take_decl, .bad = "option --decl needs a file",
     .usage = "--decl F.decl",
     .help = "for a linked cubin: whether each declared function's calls were inlined (no "
             "function of that name left) or stayed calls"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_END},
};

void help_inspect(FILE *out)
{
    fputs("usage: fdlink inspect [--kind=KIND] [--decl F.decl] FILE...\n"
          "\n"
          "Show what a link input holds: its kind; for every code image in it (a fatbin's\n"
          "entries, an object's or a library's device code) the architecture, the PTX version,\n"
          "the functions and kernels with their PTX prototypes, or a cubin's symbols with the\n"
          "registers, shared memory, constant bank and stack of each function and kernel.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(inspect_opts, 17, out);
}

static const cli_command_line inspect_line = {"inspect", inspect_opts, help_inspect, take_file};

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
    inspect_args a = {FDL_KIND_AUTO, 0, NULL, NULL, 0};
    int rc = 1;
    a.files = calloc((size_t)argc + 1, sizeof *a.files);
    if (!a.files) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    if (cli_command_parse(&inspect_line, &a, argc, argv, &rc))
        goto cleanup;
    if (!a.nfiles) {
        rc = cli_usage_error("inspect", "%s", "no input files");
        goto cleanup;
    }
    rc = 0;
    for (size_t f = 0; f < a.nfiles; f++) {
        fdl_inspection *ins = NULL;
        fdl_error err = FDL_ERROR_INIT;
        char *bytes = NULL; /* with --decl: the file read once, inspected and scanned */
        size_t nbytes = 0;
        if (a.decls ? fdl__read_file(a.files[f], &bytes, &nbytes, &err) != FDL_OK ||
                          fdl_inspect_data(&ins, bytes, nbytes, a.files[f], a.kind, &err) != FDL_OK
                    : fdl_inspect_file(&ins, a.files[f], a.kind, &err) != FDL_OK) {
            cli_print_error(&err);
            free(bytes);
            rc = 1;
            continue;
        }
        size_t n = fdl_inspection_count(ins);
        printf("%s: %s", a.files[f], fdl_input_kind_title(fdl_inspection_kind(ins)));
        if (fdl_inspection_kind(ins) != FDL_KIND_CUDA &&
            fdl_inspection_kind(ins) != FDL_KIND_BITCODE)
            printf(", %zu image%s", n, n == 1 ? "" : "s");
        printf("\n");
        for (size_t i = 0; i < n; i++)
            print_image(fdl_inspection_image(ins, i), n, a.code_only);
        if (a.decls && fdl_inspection_kind(ins) == FDL_KIND_CUBIN)
            print_lto_report(a.decls, bytes, nbytes);
        free(bytes);
        fdl_inspection_destroy(ins);
    }
cleanup:
    free(a.files);
    fdl_decls_destroy(a.decls);
    return rc;
}
