/*
 * fdlink run: load (or link, then load) device code, launch one kernel with arguments given on
 * the command line, write buffers back, verify them and time the launches. For poking at device
 * code without writing a program, and for ctest tests of vendor code. With --map, the kernel is
 * generated (fdlink/gen.h): a declared function applied elementwise, no caller kernel written.
 *
 * Exit codes: 0 ran (and every --expect verified), 1 failure or mismatch, 2 usage (including
 * arguments that disagree with the kernel's parameters or with their files), 77 no GPU here.
 *
 * This file is the options and the stages (cmd_run); the arguments' language, their buffers and
 * their verification are run_args.c's, maps run_map.c's (run.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"
#include "run.h"

/*
 * The arguments against the kernel's parameters as the PTX of the inputs declares them (a PTX
 * file, or the PTX in a fatbin or object), else as a cubin's .nv.info does (a cubin, or one in a
 * fatbin), before any GPU is needed. Returns 0 when they agree or
 * no input declares the kernel, else EXIT_USAGE after printing where the kernel is declared.
 */
static int check_params_in_images(const cli_link_args *la, const char *kernel, const karg *args,
                                  size_t nargs)
{
    int rc = 0, found = 0;
    size_t cubin_input = SIZE_MAX; /* an input with a cubin defining the kernel as a kernel */
    for (size_t i = 0; i < la->ninputs && !found; i++) {
        fdl_inspection *ins = NULL;
        fdl_error err = FDL_ERROR_INIT;
        if (la->kinds[i] == FDL_KIND_CUDA || la->kinds[i] == FDL_KIND_BITCODE ||
            fdl_inspect_file(&ins, la->inputs[i], la->kinds[i], &err) != FDL_OK)
            continue; /* the load or the link says what is wrong with it */
        size_t n = fdl_inspection_count(ins);
        for (size_t k = 0; k < n && !found; k++) {
            const fdl_image *img = fdl_inspection_image(ins, k);
            for (size_t y = 0; cubin_input == SIZE_MAX && img->kind == FDL_KIND_CUBIN &&
                               y < img->nsymbols; y++)
                if (img->symbols[y].kind == FDL_SYMBOL_KERNEL && img->symbols[y].defined &&
                    strcmp(img->symbols[y].name, kernel) == 0)
                    cubin_input = i;
            const fdl_ptx_func *f = img->ptx ? fdl_ptx_find(img->ptx, kernel) : NULL;
            if (!f || !f->is_entry || !f->is_definition)
                continue;
            found = 1;
            if (f->nparams != nargs) {
                cli_eprintf(
                        "fdlink: %s:%u:%u: error: kernel %s takes %zu parameter%s, but %zu "
                        "argument%s given (see 'fdlink run --help')\n",
                        img->name, f->line, f->column, kernel, f->nparams,
                        f->nparams == 1 ? "" : "s", nargs, nargs == 1 ? " was" : "s were");
                rc = EXIT_USAGE;
                break;
            }
            for (size_t p = 0; p < nargs; p++) {
                const fdl_ptx_param *q = &f->params[p];
                if (q->bytes == args[p].size || args[p].symbol)
                    continue; /* sym:NAME takes the parameter's size */
                cli_eprintf(
                        "fdlink: %s:%u:%u: error: argument %zu '%s' has %zu byte%s, but "
                        "parameter %zu of kernel %s takes %zu (see 'fdlink run --help')\n",
                        img->name, q->line, q->column, p, args[p].text, args[p].size,
                        args[p].size == 1 ? "" : "s", p, kernel, q->bytes);
                rc = EXIT_USAGE;
                break;
            }
        }
        fdl_inspection_destroy(ins);
    }
    /* a cubin's kernels say their parameters in .nv.info (EIATTR_KPARAM_INFO): count and size
     * of each, checked as the PTX's are (issue 34) */
    for (size_t i = cubin_input; i < la->ninputs && !found && !rc; i = la->ninputs) {
        char *data = NULL;
        size_t size = 0, count = 0;
        size_t *sizes = calloc(nargs + 1, sizeof *sizes); /* 0: the image does not say */
        fdl_input_kind kind = la->kinds[i];
        if (!sizes || kind == FDL_KIND_CUDA || kind == FDL_KIND_BITCODE ||
            fdl__read_file(la->inputs[i], &data, &size, NULL) != FDL_OK) {
            free(sizes);
            continue;
        }
        int got = !((kind == FDL_KIND_AUTO &&
                     fdl_input_detect(&kind, data, size, la->inputs[i], NULL) != FDL_OK) ||
                    (kind != FDL_KIND_CUBIN && kind != FDL_KIND_FATBIN) ||
                    fdl_image_kernel_params(data, size, kernel, &count, sizes, nargs + 1, NULL) !=
                        FDL_OK);
        free(data);
        found = got;
        if (got && count != nargs) {
            cli_eprintf("fdlink: %s: error: kernel %s takes %zu parameter%s (its .nv.info "
                        "says), but %zu argument%s given (see 'fdlink run --help')\n",
                        la->inputs[i], kernel, count, count == 1 ? "" : "s", nargs,
                        nargs == 1 ? " was" : "s were");
            rc = EXIT_USAGE;
        }
        for (size_t p = 0; got && !rc && p < nargs; p++) {
            if (sizes[p] == args[p].size || args[p].symbol || sizes[p] == 0)
                continue; /* sym:NAME takes the parameter's size */
            cli_eprintf("fdlink: %s: error: argument %zu '%s' has %zu byte%s, but parameter "
                        "%zu of kernel %s takes %zu (its .nv.info says; see 'fdlink run "
                        "--help')\n",
                        la->inputs[i], p, args[p].text, args[p].size,
                        args[p].size == 1 ? "" : "s", p, kernel, sizes[p]);
            rc = EXIT_USAGE;
        }
        free(sizes);
    }
    return rc;
}

/* A link is needed for several inputs, declarations, an -arch, or one input of a linkable kind. */
static int needs_link(const cli_link_args *la, int *rc)
{
    *rc = 0;
    if (la->ninputs != 1 || la->nsets || la->decl_paths.n || la->opts.arch)
        return 1;
    fdl_input_kind kind = la->kinds[0];
    if (kind == FDL_KIND_AUTO) {
        char *data = NULL;
        size_t size = 0;
        fdl_error err = FDL_ERROR_INIT;
        if (fdl__read_file(la->inputs[0], &data, &size, &err) != FDL_OK ||
            fdl_input_detect(&kind, data, size, la->inputs[0], &err) != FDL_OK) {
            free(data);
            cli_print_error(&err);
            *rc = 1;
            return 0;
        }
        free(data);
    }
    return !(kind == FDL_KIND_CUBIN || kind == FDL_KIND_FATBIN || kind == FDL_KIND_PTX);
}


/* ---- the command line: `fdlink run`'s options, one row each, and the link options ---- */

/* What `fdlink run` was asked, and what it holds while it runs. */
typedef struct run_cmd {
    cli_link_args la;
    const char *kernel_name, *map_name;
    const char *geometry; /* the option that set the grid, the block or the shared memory */
    fdl_launch_config cfg;
    int coop;             /* --cooperative, --no-cooperative: launch flags */
    int have_tol, have_ulp;
    run_opts ro;          /* the verification, repeat, timed, verbose; the outs and expects */
    karg *args;
    io_spec *outs, *expects;
    char **file_data;     /* TYPE[N]@FILE: the file's bytes, by argument */
    size_t nargs, nouts, nexpects, slots;
    fdl_device *dev;
    fdl_module *mod;
    fdl_link *link;
    fdl_kernel *kernel;
    fdl_kernel_attrs attrs;
    fdl_launch *launch;
    fdl_event *start, *stop;
    fdl_arg *kargs;
    float *times;
} run_cmd;

#define RC(field) offsetof(run_cmd, field)

static int take_dim3(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    run_cmd *c = t;
    (void)arg;
    c->geometry = o->name;
    if (!v || !run_parse_dim3(v, (fdl_dim3 *)((char *)t + o->at)))
        return cli_usage_error(cmd, "%s", o->bad);
    return 0;
}

static int take_shared(void *t, const cli_opt *o, const char *cmd, const char *arg,
                       const char *v)
{
    run_cmd *c = t;
    unsigned long long n;
    (void)arg;
    c->geometry = o->name;
    if (!run_parse_size(v, 0xffffffffULL, &n))
        return cli_usage_error(cmd, "%s", o->bad);
    c->cfg.shared_bytes = (size_t)n;
    return 0;
}

static int take_repeat(void *t, const cli_opt *o, const char *cmd, const char *arg,
                       const char *v)
{
    (void)arg;
    if (!run_parse_size(v, 1000000, &((run_cmd *)t)->ro.repeat) || ((run_cmd *)t)->ro.repeat == 0)
        return cli_usage_error(cmd, "%s", o->bad);
    return 0;
}

/* --out and --expect: ARG=FILE, appended to the row's list */
static int take_io(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    run_cmd *c = t;
    int out = strcmp(o->name, "--out") == 0;
    (void)arg;
    if (!run_parse_io(v, out ? &c->outs[c->nouts] : &c->expects[c->nexpects]))
        return cli_usage_error(cmd, "%s", o->bad);
    ++*(out ? &c->nouts : &c->nexpects);
    return 0;
}

/* --rtol, --atol: a tolerance into the double at the row's offset */
static int take_tol(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    (void)arg;
    if (!run_parse_double(v, (double *)((char *)t + o->at)))
        return cli_usage_error(cmd, "%s", o->bad);
    ((run_cmd *)t)->have_tol = 1;
    return 0;
}

static int take_ulp(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    run_cmd *c = t;
    unsigned long long u;
    (void)arg;
    if (!run_parse_size(v, UINT64_MAX, &u))
        return cli_usage_error(cmd, "%s", o->bad);
    c->ro.vopts.max_ulp = u;
    c->have_ulp = 1;
    return 0;
}

static const cli_opt run_cmd_opts[] = {
    {.arg = CLI_TABLE, .table = cli_diag_table, .at = RC(la.diag)}, /* no help lines */
    {.arg = CLI_STRING, .name = "-k", .alias = "--kernel", .form = CLI_NONEMPTY,
     .at = RC(kernel_name), .bad = "option '%s' needs a kernel name", .usage = "-k, --kernel NAME",
     .help = "the kernel to launch"},
    {.arg = CLI_STRING, .name = "--map", .form = CLI_NONEMPTY, .at = RC(map_name),
     .bad = "option '%s' needs a declared function's name", .usage = "--map FUNCTION",
     .help = "instead of a kernel: map a declared function (one --decl)"},
    {.arg = CLI_CUSTOM, .name = "--grid", .at = RC(cfg.grid), .parse = take_dim3,
     .bad = "option --grid needs X[,Y,Z] of at least 1, e.g. --grid 64,2",
     .usage = "--grid X[,Y,Z]", .help = "blocks (default 1)"},
    {.arg = CLI_CUSTOM, .name = "--block", .at = RC(cfg.block), .parse = take_dim3,
     .bad = "option --block needs X[,Y,Z] of at least 1, e.g. --block 256",
     .usage = "--block X[,Y,Z]", .help = "threads per block (default 1)"},
    {.arg = CLI_CUSTOM, .name = "--shared", .parse = take_shared,
     .bad = "option --shared needs a size in bytes", .usage = "--shared BYTES",
     .help = "dynamic shared memory per block (default 0)"},
    {.arg = CLI_FLAG, .name = "--cooperative", .at = RC(coop), .set = FDL_LAUNCH_COOPERATIVE,
     .usage = "--cooperative",
     .help = "a cooperative launch (grid sync): a grid larger than fits on the GPU at once is "
             "refused, saying the largest that fits; automatic, when the grid fits, for a "
             "kernel whose cubin lists cooperative-groups instructions (--no-cooperative: "
             "never)"},
    {.arg = CLI_FLAG, .name = "--no-cooperative", .at = RC(coop),
     .set = FDL_LAUNCH_NOT_COOPERATIVE},
    {.arg = CLI_DOC, .usage = "--device N", .help = "the GPU (default: FDLINK_DEVICE, else 0)"},
    {.arg = CLI_CUSTOM, .name = "--out", .parse = take_io,
     .bad = "option --out needs ARG=FILE, e.g. --out 0=y.bin", .usage = "--out ARG=FILE",
     .help = "write buffer ARG to FILE after the runs (repeatable)"},
    {.arg = CLI_CUSTOM, .name = "--expect", .parse = take_io,
     .bad = "option --expect needs ARG=FILE, e.g. --expect 0=ref.bin",
     .usage = "--expect ARG=FILE",
     .help = "compare buffer ARG with the values in FILE (repeatable): exact by default, else "
             "within --rtol/--atol or --ulp"},
    {.arg = CLI_CUSTOM, .name = "--rtol", .at = RC(ro.vopts.rel_tol), .parse = take_tol,
     .bad = "option --rtol needs a tolerance of at least 0", .usage = "--rtol X, --atol X",
     .help = "|got - expected| <= atol + rtol |expected|"},
    {.arg = CLI_CUSTOM, .name = "--atol", .at = RC(ro.vopts.abs_tol), .parse = take_tol,
     .bad = "option --atol needs a tolerance of at least 0"},
    {.arg = CLI_CUSTOM, .name = "--ulp", .parse = take_ulp,
     .bad = "option --ulp needs a distance (0, 1, 2, ...)", .usage = "--ulp N",
     .help = "at most N units in the last place apart"},
    {.arg = CLI_CUSTOM, .name = "--repeat", .parse = take_repeat,
     .bad = "option --repeat needs a count from 1 to 1000000", .usage = "--repeat N",
     .help = "launch N times (each run sees the last one's results)"},
    {.arg = CLI_FLAG, .name = "--time", .at = RC(ro.timed), .set = 1, .usage = "--time",
     .help = "report the runs' times from events: median, min, max"},
    {.arg = CLI_FLAG, .name = "-v", .alias = "--verbose", .at = RC(ro.verbose), .set = 1,
     .usage = "-v, --verbose",
     .help = "say what was linked, the device, the kernel's resources and the launch geometry "
             "(a map: its generated source)"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_TABLE, .table = cli_link_opts, .at = RC(la),
     .help = "and the link options of 'fdlink link' (-arch, --decl, --backend, --lto, -O, -D, "
             "-I, ...)."},
    {.arg = CLI_END},
};

void help_run(FILE *out)
{
    fputs(
        "usage: fdlink run [options] CODE... -k KERNEL [--grid X[,Y,Z]] [--block X[,Y,Z]] ARG...\n"
        "       fdlink run [options] --decl FILE CODE... --map FUNCTION RESULT ARG...\n"
        "\n"
        "Launch one kernel from the command line. CODE is a cubin, fatbin or PTX file, loaded as\n"
        "it is, or link inputs (any kind 'fdlink link' takes, with its options): they are linked\n"
        "first when there are several, when one needs linking, or with -arch or --decl. Without\n"
        "-arch the link is for the GPU's own architecture.\n"
        "\n"
        "Kernel arguments, in the kernel's parameter order (checked against its parameters as the\n"
        "PTX of the inputs declares them, and as the driver reports them, CUDA 12.4 and later):\n"
        "  TYPE:VALUE           a scalar; TYPE is i8 i16 i32 i64 u8 u16 u32 u64 f16 f32 f64\n"
        "                       (integers in decimal or 0x hex; a pointer value is a u64)\n"
        "  {TYPE:VALUE,...}     a struct of scalars, laid out as C lays it out\n"
        "  TYPE[N]              a device buffer of N elements, zeroed; its address is passed\n"
        "  TYPE[N]=FILL         filled with a constant (=2.5), a sequence (=iota: 0, 1, 2, ...),\n"
        "                       seeded random values (=rand or =rand:SEED; floats in [0,1),\n"
        "                       integers in [0,100)) or zeros (=zeros)\n"
        "  TYPE[N]@FILE         filled from FILE, which must hold exactly N elements\n"
        "  sym:NAME             the value of the module's global NAME (a __device__ variable,\n"
        "                       e.g. a device function pointer), read once the module is\n"
        "                       loaded, as many bytes as the kernel's parameter takes\n"
        "Arguments are numbered from 0; after '--' every word is an argument. Quote structs\n"
        "('{i32:1,f64:2}'), which the shell would otherwise expand, and in shells that glob\n"
        "[ ], buffers too.\n"
        "\n"
        "Maps: with --map FUNCTION, fdlink writes the kernel itself. It calls the function that\n"
        "the --decl file declares once per index, RESULT[i] = FUNCTION(ARG1, ARG2, ...) for\n"
        "i < n, where RESULT (argument 0) is a buffer of the function's return type and n its\n"
        "length; then one argument per declared parameter, of the declared type (float32 is\n"
        "f32, int32 i32, intp i64, uintp u64, bool u8 of 0 or 1, a pointer u64):\n"
        "  TYPE[N]...           an array: call i gets element i (N is at least n)\n"
        "  TYPE:VALUE           a scalar, the same for every call\n"
        "A CPointer(T) parameter takes a buffer of T, whose address every call gets, or\n"
        "u64:ADDRESS. The generated CUDA C is compiled with NVRTC and linked with CODE, the\n"
        "functions' device code (any kind 'fdlink link' takes); -v prints it. A non-zero status\n"
        "returned by the function is an error naming the lowest index that failed.\n"
        "\n",
        out);
    fputs("options:\n", out);
    cli_opts_help(run_cmd_opts, 25, out);
    fputs(
        "\n"
        "A device function's failure recorded by FDL_CALL, and a fault in the kernel, are\n"
        "reported as errors. Exit status: 0 success (every --expect matched), 1 failure or\n"
        "mismatch, 2 usage, 77 no GPU (ctest reports a skip).\n"
        "\n"
        "examples:\n"
        "  # the seed's multiply_vectors, calling mul_f32_f32 through the FFI ABI, checked\n"
        "  fdlink run --decl functions.decl functions.ptx callers.ptx -k multiply_vectors \\\n"
        "      --grid 4 --block 256 f32[1024] f32[1024]=iota f32[1024]=2 i32:1024 \\\n"
        "      --expect 0=twice_iota.f32\n"
        "  # a vendor's cubin: saxpy on random data, the result written out, timed\n"
        "  fdlink run vendor.cubin -k saxpy --grid 64 --block 256 f32[16384]=rand:7 \\\n"
        "      f32[16384]@x.bin f32:0.5 i32:16384 --out 0=y.bin --repeat 100 --time\n"
        "  # CUDA C compiled at run time, compared within 2 ULP\n"
        "  fdlink run kernel.cu -k scale --block 128 f64[128]=iota f64:3 --expect 0=ref.f64 \\\n"
        "      --ulp 2\n"
        "  # no kernel at all: out[i] = mul_f32_f32(a[i], 2) over 1024 floats, checked\n"
        "  fdlink run --decl functions.decl functions.ptx --map mul_f32_f32 f32[1024] \\\n"
        "      f32[1024]=iota f32:2 --expect 0=twice_iota.f32\n"
        "  # sum_reduce(CPointer(float32), int32) called once: the sum of 100 floats\n"
        "  fdlink run --decl functions.decl functions.ptx --map sum_reduce f32[1] \\\n"
        "      f32[100]=rand:3 i32:100 --out 0=sum.f32\n",
        out);
}


static void run_cmd_free(run_cmd *c)
{
    fdl_launch_destroy(c->launch);
    fdl_event_destroy(c->start);
    fdl_event_destroy(c->stop);
    for (size_t k = 0; c->args && k < c->nargs; k++)
        fdl_buffer_destroy(c->args[k].buf);
    fdl_module_destroy(c->mod);
    fdl_device_destroy(c->dev);
    fdl_link_destroy(c->link);
    cli_link_args_free(&c->la);
    for (size_t k = 0; c->file_data && k < c->slots; k++)
        free(c->file_data[k]);
    for (size_t k = 0; c->expects && k < c->nexpects; k++)
        free(c->expects[k].data);
    free(c->file_data);
    free(c->expects);
    free(c->outs);
    free(c->args);
    free(c->kargs);
    free(c->times);
}

/* The options' combinations, and --out's and --expect's arguments: 0, or an exit status. */
static int run_check_cmdline(run_cmd *c)
{
    int rc;
    if (c->la.ninputs == 0)
        return cli_usage_error("run", "%s", "no code to run (a cubin, fatbin, PTX or link "
                                            "inputs)");
    if ((rc = cli_link_refuse_outputs(&c->la, "run", NULL)) != 0)
        return rc;
    if (c->la.archs.n > 1 || (c->la.opts.arch && strchr(c->la.opts.arch, ',')))
        return cli_usage_error("run", "%s", "run links for one architecture (the GPU's): make "
                                            "a fatbin with 'fdlink link', then run it");
    if (c->kernel_name && c->map_name)
        return cli_usage_error("run", "%s", "-k and --map exclude each other (a map generates "
                                            "its own kernel)");
    if (!c->kernel_name && !c->map_name)
        return cli_usage_error("run", "%s", "missing -k KERNEL or --map FUNCTION");
    if (c->map_name && c->geometry)
        return cli_usage_error("run", "%s does not apply to --map (a map chooses its own grid "
                                      "and block)", c->geometry);
    if (c->have_tol && c->have_ulp)
        return cli_usage_error("run", "%s", "--ulp and --rtol/--atol exclude each other");
    c->ro.vopts.mode = c->have_ulp   ? FDL_VERIFY_ULP
                    : c->have_tol ? FDL_VERIFY_TOLERANCE
                                  : FDL_VERIFY_EXACT;
    for (size_t k = 0; k < c->nouts + c->nexpects; k++) {
        io_spec *io = k < c->nouts ? &c->outs[k] : &c->expects[k - c->nouts];
        const char *opt = k < c->nouts ? "--out" : "--expect";
        if (io->arg >= c->nargs || !c->args[io->arg].is_buffer) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s %zu=%s: argument %zu is %s", opt, io->arg, io->path,
                     io->arg, io->arg >= c->nargs ? "not given" : "not a buffer");
            return cli_usage_error("run", "%s", msg);
        }
    }
    return 0;
}

/* The command line into @p c: 0, or an exit status (*done: -h printed the help). */
static int run_parse(run_cmd *c, int argc, char **argv, int *done)
{
    int after_dashes = 0, rc = 0;
    *done = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (after_dashes || (a[0] != '-' && run_looks_like_arg(a))) {
            c->args[c->nargs].text = a;
            if ((rc = run_parse_arg(&c->args[c->nargs], c->nargs)) != 0)
                return rc;
            c->nargs++;
        } else if (strcmp(a, "--") == 0) {
            after_dashes = 1;
        } else if (cli_is_help(a)) {
            help_run(stdout);
            *done = 1;
            return 0;
        } else if (cli_opts_parse(run_cmd_opts, c, "run", argc, argv, &i, &rc)) {
            if (rc)
                return rc;
        } else if (a[0] == '-' && a[1] != '\0') {
            return cli_usage_error("run", "unknown option '%s'", a);
        } else {
            cli_link_add_input(&c->la, a);
        }
    }
    c->la.whole_logs = c->ro.verbose;
    c->ro.outs = c->outs;
    c->ro.expects = c->expects;
    c->ro.nouts = c->nouts;
    c->ro.nexpects = c->nexpects;
    return run_check_cmdline(c);
}

/* The files of TYPE[N]@FILE and --expect, before anything needs a GPU: every size must agree.
 * 0, or an exit status after printing. */
static int run_read_files(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    for (size_t k = 0; k < c->nargs + c->nexpects; k++) {
        int is_arg = k < c->nargs;
        io_spec *e = is_arg ? NULL : &c->expects[k - c->nargs];
        karg *a = is_arg ? &c->args[k] : &c->args[e->arg];
        const char *path = is_arg ? a->path : e->path;
        if (is_arg && (!a->is_buffer || a->fill != FILL_FILE))
            continue;
        char *data = NULL;
        size_t size = 0;
        if (fdl__read_file(path, &data, &size, &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
        if (is_arg) {
            c->file_data[k] = data;
        } else {
            e->data = data;
            e->size = size;
        }
        size_t want = a->count * a->type->size;
        if (size != want) {
            cli_eprintf("fdlink: %s: error: holds %zu bytes, but argument %zu '%s' needs %zu "
                        "(%zu %s values)\n",
                        path, size, is_arg ? k : e->arg, a->text, want, a->count, a->type->name);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* The code (linked first when it needs it), the device, the module and the kernel with its
 * attributes: 0, or an exit status after printing (RUN_EXIT_SKIP: no GPU here). */
static int run_load(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    cli_link_args *la = &c->la;
    int rc, lrc = 0, linked = 0;
    if ((rc = check_params_in_images(la, c->kernel_name, c->args, c->nargs)) != 0)
        return rc;
    if ((rc = cli_link_check_options(la)) != 0)
        return rc;
    int must_link = needs_link(la, &lrc);
    if (lrc)
        return 1;
    /* without -arch, the link is for the device's own architecture, read once it is open */
    int arch_of_device = must_link && (!la->opts.arch || strcmp(la->opts.arch, "native") == 0);
    if (must_link && !arch_of_device && !cli_link_needs_device(la)) {
        if (cli_link_build(la, &c->link) != 0)
            return 1;
        linked = 1;
    }
    if (fdl_device_open(&c->dev, la->device, &err) != FDL_OK) {
        if (cli_no_gpu_here(&err)) {
            /* one line, and the exit status ctest reads as a skip */
            fprintf(stderr, "fdlink: skipped: kernel '%s' not run: no GPU here (%s)\n",
                    c->kernel_name, err.message);
            return RUN_EXIT_SKIP;
        }
        cli_print_device_error(la, &err);
        return 1;
    }
    if (arch_of_device)
        la->opts.arch = fdl_device_arch(c->dev);
    if (must_link && !linked && cli_link_build(la, &c->link) != 0)
        return 1;
    if (c->link) {
        size_t size = 0;
        const void *cubin = fdl_link_cubin(c->link, &size);
        rc = fdl_module_load_data(&c->mod, c->dev, cubin, size, "linked cubin", &err);
    } else {
        rc = fdl_module_load_file(&c->mod, c->dev, la->inputs[0], &err);
    }
    if (rc != FDL_OK || fdl_module_get_kernel(&c->kernel, c->mod, c->kernel_name, &err) != FDL_OK ||
        fdl_kernel_get_attrs(c->kernel, &c->attrs, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    return 0;
}

/* -v: what was linked, the device, the kernel's resources and the launch's geometry. */
static void run_say_loaded(const run_cmd *c)
{
    const fdl_kernel_attrs *at = &c->attrs;
    const fdl_launch_config *cfg = &c->cfg;
    if (c->link)
        fprintf(stderr, "fdlink: linked %zu input%s for %s with %s (LTO %s)\n",
                fdl_link_input_count(c->link), fdl_link_input_count(c->link) == 1 ? "" : "s",
                fdl_link_arch(c->link), fdl_link_backend_name(fdl_link_get_backend(c->link)),
                fdl_link_lto(c->link) ? "on" : "off");
    fprintf(stderr,
            "fdlink: device %d: %s (%s); kernel %s: %d registers, %zu bytes static shared, "
            "%zu bytes local, at most %u threads per block; grid (%u,%u,%u), block "
            "(%u,%u,%u), %zu bytes dynamic shared\n",
            fdl_device_ordinal(c->dev), fdl_device_name(c->dev), fdl_device_arch(c->dev),
            c->kernel_name, at->registers, at->static_shared, at->local,
            at->max_threads_per_block, cfg->grid.x, cfg->grid.y, cfg->grid.z, cfg->block.x,
            cfg->block.y, cfg->block.z, cfg->shared_bytes);
    if (at->cooperative_groups && !c->coop)
        fprintf(stderr, "fdlink: kernel %s: its cubin lists cooperative-groups instructions: "
                        "a cooperative launch when the grid fits at once\n", c->kernel_name);
}

/* The arguments against the kernel's parameters, as the driver reports them (CUDA 12.4 and
 * later): their count and sizes. 0, or an exit status after printing. */
static int run_check_params(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    const fdl_kernel_attrs *at = &c->attrs;
    if (!at->params_known)
        return 0;
    if (at->nparams != c->nargs) {
        fprintf(stderr,
                "fdlink: error: kernel %s takes %zu parameter%s, but %zu argument%s given "
                "(see 'fdlink run --help')\n",
                c->kernel_name, at->nparams, at->nparams == 1 ? "" : "s", c->nargs,
                c->nargs == 1 ? " was" : "s were");
        return EXIT_USAGE;
    }
    for (size_t k = 0; k < c->nargs; k++) {
        karg *a = &c->args[k];
        size_t psize = 0;
        if (fdl_kernel_param(c->kernel, k, NULL, &psize, &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
        if (a->symbol && psize <= MAX_STRUCT_BYTES)
            a->size = psize;
        if (psize != a->size) {
            fprintf(stderr,
                    "fdlink: error: argument %zu '%s' has %zu byte%s, but parameter %zu of "
                    "kernel %s takes %zu (see 'fdlink run --help')\n",
                    k, a->text, a->size, a->size == 1 ? "" : "s", k, c->kernel_name, psize);
            return EXIT_USAGE;
        }
    }
    return 0;
}

/* Arguments from the module: sym:NAME, as wide as the parameter it is passed to. 0, or 1 after
 * printing. */
static int run_read_symbols(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    for (size_t k = 0; k < c->nargs; k++) {
        karg *a = &c->args[k];
        if (!a->symbol)
            continue;
        if (!c->attrs.params_known) {
            cli_eprintf("fdlink: error: argument %zu '%s': the driver does not say the size of "
                        "parameter %zu of kernel %s (CUDA 12.4 and later do), which sym: needs\n",
                        k, a->text, k, c->kernel_name);
            return 1;
        }
        size_t global_size = 0;
        if (fdl_module_read_global(c->mod, a->symbol, a->value, a->size, &global_size, &err) !=
            FDL_OK) {
            if (err.code == FDL_EINVAL && global_size)
                cli_eprintf("fdlink: error: argument %zu '%s': global %s has %zu byte%s, but "
                            "parameter %zu of kernel %s takes %zu\n",
                            k, a->text, a->symbol, global_size, global_size == 1 ? "" : "s", k,
                            c->kernel_name, a->size);
            else
                cli_print_error(&err);
            return 1;
        }
        if (c->ro.verbose)
            fprintf(stderr, "fdlink: argument %zu: %zu bytes of global %s\n", k, a->size,
                    a->symbol);
    }
    return 0;
}

/* The buffers made and filled, and the kernel's arguments: 0, or 1 after printing. */
static int run_make_args(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    c->kargs = calloc(c->nargs + 1, sizeof *c->kargs);
    if (!c->kargs) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    if (run_make_buffers(c->dev, c->args, c->nargs, c->file_data) != 0)
        return 1;
    for (size_t k = 0; k < c->nargs; k++) {
        karg *a = &c->args[k];
        c->kargs[k] = a->is_buffer ? fdl_arg_make(&a->address, sizeof a->address)
                                   : fdl_arg_make(a->value, a->size);
    }
    if (c->cfg.shared_bytes > 48 * 1024 &&
        fdl_kernel_set_max_dynamic_shared(c->kernel, c->cfg.shared_bytes, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    return 0;
}

/* The launches: one, synchronous, or --repeat of them timed by events. 0, or 1 after
 * printing. */
static int run_launch(run_cmd *c)
{
    fdl_error err = FDL_ERROR_INIT;
    unsigned long long repeat = c->ro.repeat;
    if (repeat == 1 && !c->ro.timed) {
        /* a failure is reported by the launch that caused it */
        c->cfg.flags = FDL_LAUNCH_SYNC | (unsigned)c->coop;
        if (fdl_kernel_launch_ex(c->kernel, &c->cfg, c->kargs, c->nargs, &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
        return 0;
    }
    c->times = calloc((size_t)repeat, sizeof *c->times);
    if (!c->times) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    c->cfg.flags = (unsigned)c->coop;
    if (fdl_launch_create(&c->launch, c->kernel, &c->cfg, c->kargs, c->nargs, &err) != FDL_OK ||
        fdl_event_create(&c->start, c->dev, &err) != FDL_OK ||
        fdl_event_create(&c->stop, c->dev, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    for (size_t r = 0; r < repeat; r++) {
        if (fdl_event_record(c->start, NULL, &err) != FDL_OK ||
            fdl_launch_run(c->launch, &err) != FDL_OK ||
            fdl_event_record(c->stop, NULL, &err) != FDL_OK ||
            fdl_event_elapsed_ms(&c->times[r], c->start, c->stop, &err) != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
    }
    /* device-side status and faults of all the runs */
    if (fdl_device_synchronize(c->dev, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    return 0;
}

int cmd_run(int argc, char **argv)
{
    run_cmd c;
    memset(&c, 0, sizeof c);
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    fdl_verify_options vopts = FDL_VERIFY_OPTIONS_INIT;
    c.cfg = cfg;
    c.ro.vopts = vopts;
    c.ro.repeat = 1;
    c.slots = (size_t)argc + 1;
    c.args = calloc(c.slots, sizeof *c.args);
    c.outs = calloc(c.slots, sizeof *c.outs);
    c.expects = calloc(c.slots, sizeof *c.expects);
    c.file_data = calloc(c.slots, sizeof *c.file_data);
    int rc = 1, done = 0;
    if (!cli_link_args_init(&c.la, argc))
        goto cleanup;
    if (!c.args || !c.outs || !c.expects || !c.file_data) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        goto cleanup;
    }
    if ((rc = run_parse(&c, argc, argv, &done)) != 0 || done ||
        (rc = run_read_files(&c)) != 0)
        goto cleanup;
    if (c.map_name) {
        rc = run_map(&c.la, c.map_name, c.args, c.nargs, c.file_data, &c.ro);
        goto cleanup;
    }
    if ((rc = run_load(&c)) != 0)
        goto cleanup;
    if (c.ro.verbose)
        run_say_loaded(&c);
    if ((rc = run_check_params(&c)) != 0 || (rc = run_read_symbols(&c)) != 0 ||
        (rc = run_make_args(&c)) != 0 || (rc = run_launch(&c)) != 0)
        goto cleanup;
    if (c.ro.timed)
        run_print_times("kernel", c.kernel_name, c.times, c.ro.repeat);
    rc = run_write_and_verify(c.args, &c.ro);
cleanup:
    run_cmd_free(&c);
    return rc;
}
