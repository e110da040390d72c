/*
 * fdlink run's parts (not installed): the kernel arguments as the command line gives them
 * (run_args.c: the `f32[1000]=iota` language, the buffers made from it, and what is written and
 * verified of them after the runs), maps (run_map.c), and the stages that use them (run.c).
 */
#ifndef FDLINK_CLI_RUN_H
#define FDLINK_CLI_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define RUN_EXIT_SKIP 77
#define MAX_STRUCT_BYTES 256
#define MAX_BUFFER_BYTES ((size_t)1 << 40)

/* An element or scalar type as spelled on the command line. */
typedef struct elem_type {
    const char *name;
    fdl_scalar scalar;
    size_t size;
    char kind; /* 'i' signed, 'u' unsigned, 'f' float */
} elem_type;

typedef enum fill_kind { FILL_ZEROS, FILL_CONST, FILL_IOTA, FILL_RAND, FILL_FILE } fill_kind;

/* One kernel argument. */
typedef struct karg {
    const char *text;          /* as given */
    int is_buffer;
    const elem_type *type;     /* buffers: the element type */
    unsigned char value[MAX_STRUCT_BYTES]; /* scalars and structs: the bytes passed */
    size_t size;               /* bytes passed to the kernel */
    size_t count;              /* buffers: elements */
    fill_kind fill;
    unsigned char constant[8]; /* FILL_CONST: one element */
    unsigned long long seed;   /* FILL_RAND */
    const char *path;          /* FILL_FILE */
    const char *symbol;        /* sym:NAME: the module global's value, read after the load */
    fdl_buffer *buf;
    uint64_t address;
} karg;

/* --out and --expect. */
typedef struct io_spec {
    size_t arg;
    const char *path;
    char *data; /* --expect: the file's bytes */
    size_t size;
} io_spec;

/* What follows the launches, for kernels and maps alike: --out, --expect, --repeat, --time, -v. */
typedef struct run_opts {
    const io_spec *outs, *expects;
    size_t nouts, nexpects;
    fdl_verify_options vopts;
    unsigned long long repeat;
    int timed, verbose;
} run_opts;

/* Non-zero when @p s is spelled as a kernel argument (TYPE:, TYPE[ or {), not an input. */
int run_looks_like_arg(const char *s);
/* Argument @p index as a->text gives it: 0, or EXIT_USAGE after printing why not. */
int run_parse_arg(karg *a, size_t index);
/* X[,Y[,Z]] (each at least 1) into @p d; 0 when @p s is not that. */
int run_parse_dim3(const char *s, fdl_dim3 *d);
/* A decimal count of at most @p max into *out; 0 when @p s (may be NULL) is not one. */
int run_parse_size(const char *s, unsigned long long max, unsigned long long *out);
/* A number of at least 0 into *out; 0 when @p s (may be NULL) is not one. */
int run_parse_double(const char *s, double *out);
/* ARG=FILE of --out and --expect into @p io; 0 when @p s (may be NULL) is not that. */
int run_parse_io(const char *s, io_spec *io);
/* Create and fill the buffers among @p args on @p dev (@p file_data: the files of TYPE[N]@FILE,
 * by argument); 0, or 1 after printing. */
int run_make_buffers(fdl_device *dev, karg *args, size_t nargs, char **file_data);
/* `WHAT NAME: 20 runs, median ...` on stdout; sorts @p times. */
void run_print_times(const char *what, const char *name, float *times, unsigned long long repeat);
/* --out files written and --expect files compared: 0, or 1 after a mismatch or an error. */
int run_write_and_verify(const karg *args, const run_opts *ro);

/*
 * fdlink run --map NAME (run_map.c): the arguments checked against the declaration, the map
 * generated, compiled and linked, the buffers filled, the runs, the lowest failing index, the
 * results written and verified. Returns the exit status.
 */
int run_map(cli_link_args *la, const char *name, karg *args, size_t nargs, char **file_data,
            const run_opts *ro);

#endif /* FDLINK_CLI_RUN_H */
