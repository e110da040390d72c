/*
 * fdlink run --map FUNCTION (run.h): a declared function applied elementwise. The arguments are
 * checked against the declaration before any GPU is needed; then the map is generated
 * (fdlink/gen.h), compiled with NVRTC, linked with the inputs, run and verified.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "run.h"

/* How the command line spells a value of declared type @t (bool is u8; pointers are u64). */
static const char *spelling_of(fdl_type t)
{
    if (t.depth)
        return "u64";
    switch (t.base) {
    case FDL_BOOL: return "u8";
    case FDL_INT8: return "i8";
    case FDL_INT16: return "i16";
    case FDL_INT32: return "i32";
    case FDL_INT64: return "i64";
    case FDL_INTP: return "i64";
    case FDL_UINT8: return "u8";
    case FDL_UINT16: return "u16";
    case FDL_UINT32: return "u32";
    case FDL_UINT64: return "u64";
    case FDL_UINTP: return "u64";
    case FDL_FLOAT16: return "f16";
    case FDL_FLOAT32: return "f32";
    case FDL_FLOAT64: return "f64";
    default: return NULL;
    }
}

/* Non-zero when every value of u8 argument @a (a scalar, or a buffer as it will be filled from
 * @file_data) is 0 or 1, as a bool must be. */
static int bool_values_ok(const karg *a, const char *file_data)
{
    if (!a->is_buffer)
        return a->value[0] <= 1;
    switch (a->fill) {
    case FILL_ZEROS: return 1;
    case FILL_CONST: return a->constant[0] <= 1;
    case FILL_IOTA: return a->count <= 2;
    case FILL_RAND: return 0; /* integers in [0,100) */
    case FILL_FILE:
        for (size_t i = 0; i < a->count; i++)
            if ((unsigned char)file_data[i] > 1)
                return 0;
        return 1;
    }
    return 0;
}

/* A usage error about the map of @d, at its declaration. */
static int decl_usage_error(const fdl_decl *d, const char *msg)
{
    cli_eprintf("fdlink: %s:%u:%u: error: %s (see 'fdlink run --help')\n", d->source,
            d->line, d->column, msg);
    return EXIT_USAGE;
}

/*
 * The arguments of a map of @d against its declaration: argument 0 the result, argument k
 * parameter k (@file_data: the contents of buffers filled from files). Fills @modes ('a' an
 * array, 's' a scalar or a pointer passed through) and *n. Returns 0, or EXIT_USAGE after
 * printing.
 */
static int check_map_args(const fdl_decl *d, const karg *args, size_t nargs,
                          char *const *file_data, char *modes, size_t *n)
{
    const fdl_sig *sig = &d->sig;
    char msg[512], type[128];
    if (sig->ret.base == FDL_VOID && sig->ret.depth == 0) {
        snprintf(msg, sizeof msg,
                 "map over '%s': it returns void, so there is no result to map into argument 0",
                 d->name);
        return decl_usage_error(d, msg);
    }
    if (nargs != sig->nparams + 1) {
        snprintf(msg, sizeof msg,
                 "map '%s' takes %zu argument%s (the result, then %zu parameter%s), but %zu "
                 "%s given",
                 d->name, sig->nparams + 1, sig->nparams ? "s" : "", sig->nparams,
                 sig->nparams == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
        return decl_usage_error(d, msg);
    }
    const char *ret = spelling_of(sig->ret);
    fdl_type_format(sig->ret, type, sizeof type);
    if (!args[0].is_buffer || args[0].text[0] == '{' || strcmp(args[0].type->name, ret) != 0) {
        if (args[0].is_buffer)
            snprintf(msg, sizeof msg,
                     "map '%s': argument 0 '%s' is the result, a buffer of %s, but %s returns "
                     "%s: give %s[N]",
                     d->name, args[0].text, args[0].type->name, d->name, type, ret);
        else
            snprintf(msg, sizeof msg,
                     "map '%s': argument 0 '%s' is the result, which must be a buffer of the "
                     "return type %s: give %s[N]",
                     d->name, args[0].text, type, ret);
        return decl_usage_error(d, msg);
    }
    *n = args[0].count;
    for (size_t k = 1; k < nargs; k++) {
        const karg *a = &args[k];
        fdl_type t = sig->params[k - 1];
        fdl_type pointee = {t.base, t.depth ? t.depth - 1 : 0};
        const char *want = spelling_of(t);
        int is_struct = a->text[0] == '{';
        int ok;
        char give[160];
        fdl_type_format(t, type, sizeof type);
        if (t.depth) {
            /* CPointer(T): a buffer's address (of T; voidptr: of anything), or u64:ADDRESS */
            int any = pointee.base == FDL_VOID && pointee.depth == 0;
            ok = !is_struct &&
                 (a->is_buffer ? any || strcmp(a->type->name, spelling_of(pointee)) == 0
                               : strcmp(a->type->name, "u64") == 0);
            if (any)
                snprintf(give, sizeof give, "a buffer (passed as a pointer) or u64:ADDRESS");
            else
                snprintf(give, sizeof give, "%s[N] (passed as a pointer) or u64:ADDRESS",
                         spelling_of(pointee));
            modes[k - 1] = 's';
        } else {
            ok = !is_struct && strcmp(a->type->name, want) == 0;
            snprintf(give, sizeof give, "%s:VALUE or %s[N]", want, want);
            modes[k - 1] = a->is_buffer ? 'a' : 's';
        }
        if (!ok) {
            char is[64];
            if (is_struct)
                snprintf(is, sizeof is, "a struct");
            else if (a->is_buffer)
                snprintf(is, sizeof is, "a buffer of %s", a->type->name);
            else
                snprintf(is, sizeof is, "%s", a->type->name);
            snprintf(msg, sizeof msg,
                     "map '%s': argument %zu '%s' is %s, but parameter %zu is %s: give %s",
                     d->name, k, a->text, is, k, type, give);
            return decl_usage_error(d, msg);
        }
        if (t.depth == 0 && t.base == FDL_BOOL && !bool_values_ok(a, file_data[k])) {
            snprintf(msg, sizeof msg,
                     "map '%s': argument %zu '%s' %s, but parameter %zu is bool",
                     d->name, k, a->text, a->is_buffer ? "holds values other than 0 and 1" : "is neither 0 nor 1", k);
            return decl_usage_error(d, msg);
        }
        if (modes[k - 1] == 'a' && a->count < *n) {
            snprintf(msg, sizeof msg,
                     "map '%s': argument %zu '%s' (parameter %zu, %s) has %zu element%s, but n "
                     "is %zu (the length of the result, argument 0)",
                     d->name, k, a->text, k, type, a->count, a->count == 1 ? "" : "s", *n);
            return cli_usage_error("run", "%s", msg);
        }
    }
    modes[sig->nparams] = '\0';
    return 0;
}

/*
 * A generator on @dev (NULL: compile and link for la->opts.arch only) with the inputs of @la,
 * and the map of @name made from it. 0, or 1 after printing.
 */
static int make_map(fdl_gen **gen, fdl_map **map, fdl_device *dev, const cli_link_args *la,
                    const char *name, const char *modes)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_gen_options go = FDL_GEN_OPTIONS_INIT;
    go.arch = la->opts.arch;
    go.decls = la->decls[0];
    go.link = &la->opts;
    if (fdl_gen_create(gen, dev, &go, &err) != FDL_OK) {
        cli_print_error(&err);
        return 1;
    }
    for (size_t i = 0; i < la->ninputs; i++) {
        char *data = NULL;
        size_t size = 0;
        int rc = fdl__read_file(la->inputs[i], &data, &size, &err);
        if (rc == FDL_OK)
            rc = fdl_gen_add_data(*gen, data, size, la->inputs[i], la->kinds[i], &err);
        free(data);
        if (rc != FDL_OK) {
            cli_print_error(&err);
            return 1;
        }
    }
    if (fdl_map_create(map, *gen, name, modes, &err) != FDL_OK) {
        cli_print_error(&err);
        /* NVRTC's or nvJitLink's log: what it adds to the headline (all of it with -v) */
        cli_print_log_rest(err.log, &err, la->opts.verbose || la->whole_logs);
        return 1;
    }
    return 0;
}

/*
 * fdlink run --map NAME: check the arguments against the declaration, generate, compile and link
 * the map, fill the buffers, run it (--repeat times), report the lowest failing index, write
 * and verify the results. Returns the exit status.
 */
int run_map(cli_link_args *la, const char *name, karg *args, size_t nargs,
                   char **file_data, const run_opts *ro)
{
    fdl_error err = FDL_ERROR_INIT;
    fdl_device *dev = NULL;
    fdl_gen *gen = NULL;
    fdl_map *map = NULL;
    fdl_event *start = NULL, *stop = NULL;
    float *times = NULL;
    char modes[FDL_SIG_MAX_PARAMS + 1];
    fdl_gen_arg gargs[FDL_SIG_MAX_PARAMS + 1];
    size_t n = 0;
    int rc = EXIT_USAGE;

    /* ---- the declaration, and the arguments against it, before any GPU is needed ---- */
    if (la->decl_paths.n != 1) {
        rc = cli_usage_error("run",
                             la->decl_paths.n
                                 ? "--map takes one --decl file, the one that declares '%s'"
                                 : "--map needs the declaration of '%s': --decl FILE",
                             name);
        goto cleanup;
    }
    if (la->ptx_path || la->kernels.n) {
        rc = cli_usage_error("run", "%s does not apply to --map (the map's kernel is generated)",
                             la->ptx_path ? "--emit-ptx" : "--kernels-used");
        goto cleanup;
    }
    la->decls = calloc(1, sizeof *la->decls);
    if (!la->decls) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        rc = 1;
        goto cleanup;
    }
    if (fdl_decls_load(&la->decls[0], la->decl_paths.v[0], &err) != FDL_OK) {
        cli_print_error(&err);
        rc = 1;
        goto cleanup;
    }
    la->nsets = 1;
    const fdl_decl *d = fdl_decls_find(la->decls[0], name);
    if (!d) {
        char msg[FDL_DECL_MAX_NAME + 1024];
        snprintf(msg, sizeof msg, "map over '%s': no such function is declared in %s", name,
                 la->decl_paths.v[0]);
        rc = cli_usage_error("run", "%s", msg);
        goto cleanup;
    }
    if ((rc = check_map_args(d, args, nargs, file_data, modes, &n)) != 0)
        goto cleanup;
    if ((rc = cli_link_check_options(la)) != 0)
        goto cleanup;
    rc = 1;

    /* ---- the device, and the map ---- */
    if (fdl_device_open(&dev, la->device, &err) != FDL_OK) {
        if (!cli_no_gpu_here(&err)) {
            cli_print_device_error(la, &err);
            goto cleanup;
        }
        /* for a stated architecture, everything short of the launch is checked first */
        fdl_error nogpu = err;
        if (la->opts.arch && !cli_link_needs_device(la) &&
            make_map(&gen, &map, NULL, la, name, modes) != 0)
            goto cleanup;
        fprintf(stderr, "fdlink: skipped: map '%s' not run: no GPU here (%s)\n", name,
                nogpu.message);
        rc = RUN_EXIT_SKIP;
        goto cleanup;
    }
    if (make_map(&gen, &map, dev, la, name, modes) != 0)
        goto cleanup;
    if (ro->verbose) {
        size_t cubin = 0;
        fdl_map_cubin(map, &cubin);
        fprintf(stderr,
                "fdlink: device %d: %s (%s); map '%s' (modes %s): kernel %s, compiled with "
                "NVRTC and linked with %zu input%s (cubin of %zu bytes); n = %zu, %u element%s "
                "per vector access, %d threads per block\n",
                fdl_device_ordinal(dev), fdl_device_name(dev), fdl_device_arch(dev), name, modes,
                fdl_map_kernel_name(map), la->ninputs, la->ninputs == 1 ? "" : "s", cubin, n,
                fdl_map_vector_width(map), fdl_map_vector_width(map) == 1 ? "" : "s",
                FDL_GEN_BLOCK);
        const char *src = fdl_map_source(map);
        size_t len = strlen(src);
        fprintf(stderr, "fdlink: the generated CUDA C of map '%s':\n%s%s", name, src,
                len && src[len - 1] == '\n' ? "" : "\n");
    }

    /* ---- buffers, and the map's arguments ---- */
    if (run_make_buffers(dev, args, nargs, file_data) != 0)
        goto cleanup;
    gargs[0] = fdl_gen_buffer(args[0].buf);
    for (size_t k = 1; k < nargs; k++) {
        karg *a = &args[k];
        if (modes[k - 1] == 'a')
            gargs[k] = fdl_gen_buffer(a->buf);
        else if (a->is_buffer) /* a pointer parameter: the buffer's address */
            gargs[k] = fdl_gen_scalar(&a->address, sizeof a->address);
        else
            gargs[k] = fdl_gen_scalar(a->value, a->size);
    }

    /* ---- the runs ---- */
    if (ro->repeat == 1 && !ro->timed) {
        if (fdl_map_run(map, n, gargs, nargs, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    } else {
        times = calloc((size_t)ro->repeat, sizeof *times);
        if (!times) {
            fprintf(stderr, "fdlink: error: out of memory\n");
            goto cleanup;
        }
        if (fdl_event_create(&start, dev, &err) != FDL_OK ||
            fdl_event_create(&stop, dev, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
        for (size_t r = 0; r < ro->repeat; r++) {
            if (fdl_event_record(start, NULL, &err) != FDL_OK ||
                fdl_map_launch(map, n, gargs, nargs, &err) != FDL_OK ||
                fdl_event_record(stop, NULL, &err) != FDL_OK ||
                fdl_event_elapsed_ms(&times[r], start, stop, &err) != FDL_OK) {
                cli_print_error(&err);
                goto cleanup;
            }
        }
        /* the lowest failing index of all the runs */
        if (fdl_map_check(map, &err) != FDL_OK) {
            cli_print_error(&err);
            goto cleanup;
        }
    }
    if (ro->timed)
        run_print_times("map", name, times, ro->repeat);
    rc = run_write_and_verify(args, ro);
cleanup:
    fdl_event_destroy(start);
    fdl_event_destroy(stop);
    for (size_t k = 0; k < nargs; k++) {
        fdl_buffer_destroy(args[k].buf);
        args[k].buf = NULL;
    }
    fdl_map_destroy(map);
    fdl_gen_destroy(gen);
    fdl_device_destroy(dev);
    free(times);
    return rc;
}
