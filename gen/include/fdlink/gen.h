/**
 * @file fdlink/gen.h
 * Kernels without writing kernels: fdlink generates, compiles (NVRTC, through fdlink/link.h),
 * links (LTO when the functions carry LTO-IR) and loads the caller kernels itself.
 *
 * - A **map** applies a declared foreign function elementwise: `out[i] = f(p1[i], s2, ...)`,
 *   each parameter an array (one element per index) or a scalar broadcast to every index, chosen
 *   when the map is made. `CPointer(T)` parameters given as scalars are passed through as given.
 *   The status each call returns is checked: the lowest failing index, the function and its
 *   status are reported (`device function f returned status 3 at index 17 in map 'f'`).
 * - An **elementwise** kernel runs a C statement over the index `i` (PyCUDA's
 *   `ElementwiseKernel("float a, float *x, float *y", "y[i] = a*x[i] + y[i]")`); the statement
 *   may call declared foreign functions, through `FDL_MAP_CALL(f, &r, args...)` to have their
 *   statuses reported by index.
 * - A **reduction** folds a map expression over `i` with sum, min, max, product or a binary
 *   expression in `a` and `b`, from a neutral value (PyCUDA's `ReductionKernel`).
 *
 * When a generated source does not compile or link, err->log holds the whole log of NVRTC or
 * nvJitLink, borrowed from the generator until its next failed compile.
 *
 * Everything is made from a generator (fdl_gen), which holds the device, the declarations, the
 * device code of the foreign functions and the link options, and compiles each distinct
 * generated source once: two maps, expressions or reductions with the same source, options and
 * architecture share one module. The generated source is always available
 * (fdl_map_source, fdl_reduction_source). A generator made without a device still generates,
 * compiles and links (for its fdl_gen_options.arch), so that all of it can be checked on a
 * machine without a GPU; only launches need one.
 *
 * Memory speed: a map moves 16 bytes per array per access where every array is aligned for it
 * (vector loads and stores of 16 / (largest element size) elements), one access a thread (a
 * grid-stride loop past 2^28 accesses). The output may be one of the inputs (a map in place).
 * A reduction is one launch of 8 blocks per SM (T threads in all). Where every array is aligned
 * for 16-byte accesses, thread t reads the vectors of K = 16 / (largest element size)
 * consecutive indices at vector positions t, t + T, t + 2T, ..., folding element e of each into
 * accumulator e, then accumulators 0..K-1 in order, then at most K - 1 tail indices; otherwise it
 * folds indices t, t + T, ... into four interleaved accumulators. Each block then folds its
 * threads in a fixed tree, and the last block to finish folds the per-block partials in block
 * order. The order of a float sum therefore depends only on n, the grid (fixed per device) and
 * the arrays' alignment, not on timing: the same inputs give the same bits on every run.
 *
 * Thread-safety: a generator, and the maps and reductions made from it, belong to the family of
 * its device (fdlink/host.h): one thread at a time; may move between threads. Without a device,
 * the generator and its kernels are used by one thread at a time.
 */
#ifndef FDLINK_GEN_H
#define FDLINK_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "fdlink/decl.h"
#include "fdlink/error.h"
#include "fdlink/host.h"
#include "fdlink/link.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A generator: device, declarations, function code, options, compiled modules. Opaque. */
typedef struct fdl_gen fdl_gen;
/** A map or an elementwise kernel, ready to launch. Opaque. */
typedef struct fdl_map fdl_map;
/** A reduction, ready to launch. Opaque. */
typedef struct fdl_reduction fdl_reduction;

/** Threads per block of every generated kernel. */
#define FDL_GEN_BLOCK 256

/** Options of a generator. Start from FDL_GEN_OPTIONS_INIT. */
typedef struct fdl_gen_options {
    unsigned version;             /**< FDL_GEN_OPTIONS_VERSION */
    /**
     * Target architecture ("sm_90"); NULL for the device's. Required without a device; with one,
     * it must be the device's.
     */
    const char *arch;
    const fdl_decls *decls;       /**< the foreign functions' declarations, or NULL; borrowed */
    const char *const *inputs;    /**< NULL-terminated files of their device code, or NULL */
    const fdl_link_options *link; /**< how to link (arch is overridden), or NULL: defaults */
} fdl_gen_options;

#define FDL_GEN_OPTIONS_VERSION 1
#define FDL_GEN_OPTIONS_INIT {FDL_GEN_OPTIONS_VERSION, NULL, NULL, NULL, NULL}

/**
 * Create a generator. Input files are read now (any kind fdlink/link.h takes; kinds detected
 * from content); nothing is compiled until a kernel is made.
 * @param dev  the device kernels are loaded on, or NULL to generate, compile and link only
 * @return FDL_OK, FDL_EINVAL (bad options; no arch without a device; an arch other than the
 *         device's), FDL_EIO (an input cannot be read), FDL_ENOMEM
 * Ownership: *out is the caller's (fdl_gen_destroy); @p opts->decls, and the arrays and
 * strings that @p opts->link points to, are borrowed and must outlive the generator; the rest
 * (the options, the inputs' bytes) is copied.
 */
FDL_API int fdl_gen_create(fdl_gen **out, fdl_device *dev, const fdl_gen_options *opts,
                           fdl_error *err);

/**
 * Add device code of the foreign functions from memory (an embedded image, CUDA C text).
 * The bytes are copied. Kernels made afterwards are linked with it too (a source compiled
 * before is compiled again, not reused).
 * @return FDL_OK, FDL_EINVAL (NULL argument, empty data), FDL_ENOMEM
 */
FDL_API int fdl_gen_add_data(fdl_gen *gen, const void *data, size_t size, const char *name,
                             fdl_input_kind kind, fdl_error *err);

/**
 * Destroy a generator and its compiled modules. Maps and reductions made from it must be
 * destroyed first. NULL is allowed.
 */
FDL_API void fdl_gen_destroy(fdl_gen *gen);

/** The target architecture ("sm_90"); "" for NULL. Borrowed. */
FDL_API const char *fdl_gen_arch(const fdl_gen *gen);

/** Number of distinct sources compiled so far (each once); 0 for NULL. */
FDL_API size_t fdl_gen_compiled_count(const fdl_gen *gen);

/* ---- types ------------------------------------------------------------------------------- */

/**
 * Parse one parameter type as argument lists (fdl_elementwise_create, fdl_reduction_create) and
 * the Python package's kernel signatures write it, into @p out: pure text, no generator needed.
 *
 * Accepted: C's integer types, their specifiers in any order (`int`, `unsigned`, `short int`,
 * `long long int`, `unsigned long`, `signed char`; plain `char` is int8, as in the signature
 * language; LP64: `long` is 64-bit), `bool`, `float`, `double`, `half`/`__half`, `intN_t`,
 * `uintN_t`, `size_t`, `ssize_t`, `ptrdiff_t`, `intptr_t`, `uintptr_t`, `void`; every name of the
 * signature language (fdlink/sig.h: `float32`, `int64`, `intp`, `voidptr`, Numba's aliases such
 * as `intc` and `f4`); `CPointer(T)` with T in either vocabulary; `const` and `__restrict__`
 * anywhere (dropped); each trailing `*` one level of pointer (`const float *` is {FDL_FLOAT32, 1},
 * `void` is {FDL_VOID, 0}).
 *
 * @p text: @p len bytes, no NUL needed.
 * @return FDL_OK; FDL_EPARSE for an unknown type or stray character (the message names the type
 *         and its column, source "type"); FDL_ELIMIT beyond FDL_SIG_MAX_DEPTH pointers or a type
 *         longer than the parser's buffer; FDL_EINVAL for NULL @p out.
 */
FDL_API int fdl_gen_parse_type(fdl_type *out, const char *text, size_t len, fdl_error *err);

/* ---- arguments --------------------------------------------------------------------------- */

/** How an argument is given. Values are pinned. */
typedef enum fdl_gen_arg_kind {
    FDL_GEN_ARRAY = 0, /**< device memory: one element per index */
    FDL_GEN_SCALAR = 1 /**< a value, the same for every index */
} fdl_gen_arg_kind;

/** One argument of a launch. Make it with fdl_gen_buffer, fdl_gen_array or FDL_GEN_VALUE. */
typedef struct fdl_gen_arg {
    fdl_gen_arg_kind kind;
    uint64_t address;  /**< ARRAY: device address of element 0 */
    size_t size;       /**< ARRAY: bytes available from address; SCALAR: bytes of *value */
    const void *value; /**< SCALAR: the value */
} fdl_gen_arg;

/** An array argument: the whole of a device buffer. */
static inline fdl_gen_arg fdl_gen_buffer(const fdl_buffer *buf)
{
    fdl_gen_arg a = {FDL_GEN_ARRAY, fdl_buffer_address(buf), fdl_buffer_size(buf), NULL};
    return a;
}

/** An array argument: @p bytes of device memory at @p address. */
static inline fdl_gen_arg fdl_gen_array(uint64_t address, size_t bytes)
{
    fdl_gen_arg a = {FDL_GEN_ARRAY, address, bytes, NULL};
    return a;
}

/** A scalar argument: @p size bytes at @p value (copied at launch). */
static inline fdl_gen_arg fdl_gen_scalar(const void *value, size_t size)
{
    fdl_gen_arg a = {FDL_GEN_SCALAR, 0, size, value};
    return a;
}

/** A scalar argument from an lvalue: `FDL_GEN_VALUE(alpha)`. */
#define FDL_GEN_VALUE(v) fdl_gen_scalar(&(v), sizeof(v))

/* ---- maps -------------------------------------------------------------------------------- */

/**
 * Make a map of the declared function @p name: `out[i] = name(args at i)`.
 *
 * @param modes one character per parameter: 'a' an array, 's' a scalar broadcast to every
 *              index; NULL for all arrays. A `CPointer(T)` parameter given as 's' is passed
 *              through as given; as 'a', it is an array of pointers.
 * @return FDL_OK, FDL_ENOTFOUND (no declaration named @p name: the message says so),
 *         FDL_EINVAL (the function returns void: `map over 'f': it returns void, so there is
 *         no result to map into an output array (write an elementwise expression that calls
 *         it)`; @p modes of the wrong length or with another character), FDL_EPARSE (the
 *         generated source does not compile: err->log holds NVRTC's log), FDL_ELINK, FDL_EABI
 *         (the function's code disagrees with its declaration), FDL_ENOLIB, FDL_ECUDA,
 *         FDL_ENOMEM
 * Ownership: *out is the caller's (fdl_map_destroy), and must not outlive @p gen.
 */
FDL_API int fdl_map_create(fdl_map **out, fdl_gen *gen, const char *name, const char *modes,
                           fdl_error *err);

/**
 * Make an elementwise kernel from an argument list and a C statement over the index `i` (a
 * `unsigned long long`), as PyCUDA's ElementwiseKernel: `fdl_elementwise_create(&k, gen,
 * "float a, float *x, float *y", "y[i] = a * x[i] + y[i]", &err)`.
 *
 * @param arguments comma-separated `type name` or `type *name` (arrays; `const` allowed). Types:
 *        the signature language's (float32, int64, ...), C's (float, double, int, unsigned int,
 *        long long, short, signed char, unsigned char, bool, ...), <stdint.h>'s, size_t, __half.
 * @param operation one or more C statements; may call declared functions (their prototypes are
 *        included), `FDL_CALL(f, &r, ...)`, or `FDL_MAP_CALL(f, &r, ...)` to have a non-zero
 *        status reported with the lowest failing index.
 * @return FDL_OK, FDL_EPARSE (an argument list that does not parse, with the column; the
 *         statement does not compile: err->log holds NVRTC's log), FDL_ELINK, FDL_EABI,
 *         FDL_EINVAL, FDL_ENOLIB, FDL_ECUDA, FDL_ENOMEM
 * Ownership: as fdl_map_create.
 */
FDL_API int fdl_elementwise_create(fdl_map **out, fdl_gen *gen, const char *arguments,
                                   const char *operation, fdl_error *err);

/** Free a map. NULL is allowed. */
FDL_API void fdl_map_destroy(fdl_map *map);

/**
 * The whole generated CUDA C source, as compiled (fdlink/device.h first).
 * Ownership: borrowed; valid until the map is destroyed. "" for NULL.
 */
FDL_API const char *fdl_map_source(const fdl_map *map);

/**
 * The linked cubin the map's kernel was loaded from (shared by every kernel of the same source);
 * @p size (may be NULL) gets its size. NULL for NULL.
 * Ownership: borrowed from the generator; valid until it is destroyed.
 */
FDL_API const void *fdl_map_cubin(const fdl_map *map, size_t *size);

/** Name of the generated kernel ("fdl_map_mul_f32_f32"); "" for NULL. Borrowed. */
FDL_API const char *fdl_map_kernel_name(const fdl_map *map);

/** Number of arguments a launch takes (map: the output, then one per parameter). */
FDL_API size_t fdl_map_arg_count(const fdl_map *map);

/**
 * Elements per vector access of a map (16 / the largest element size of its arrays; 1 for an
 * elementwise kernel).
 */
FDL_API unsigned fdl_map_vector_width(const fdl_map *map);

/**
 * Queue the map over indices 0..n-1 on the default stream (no wait). Arguments: for a map, the
 * output array then one per parameter; for an elementwise kernel, one per argument. Checked
 * first, with FDL_EINVAL and messages naming the argument:
 * `map 'mul_f32_f32': argument 2 (parameter 1, float32) was made an array, but a scalar was given`,
 * `... has 100 elements (400 bytes), but n is 1000`, `... is a scalar of 8 bytes, but float32
 * has 4`, `map 'mul_f32_f32' takes 3 arguments, but 2 were given`.
 * @return FDL_OK, FDL_EINVAL, FDL_ENODEVICE (the generator has no device), FDL_ECUDA
 */
FDL_API int fdl_map_launch(fdl_map *map, size_t n, const fdl_gen_arg *args, size_t nargs,
                           fdl_error *err);

/**
 * As fdl_map_launch, queued in @p stream (NULL: the default stream; a stream of fdl_stream_wrap
 * orders the map with another library's work on it). Nothing waits: check failed calls later
 * with fdl_map_check, which waits for the whole device.
 * @return FDL_OK, FDL_EINVAL (as fdl_map_launch; also a stream of another device:
 *         `fdl_map_launch_async: the stream belongs to device 1, not device 0`),
 *         FDL_ENODEVICE, FDL_ECUDA
 * Ownership: the arguments are copied at the call; the arrays they address must stay valid until
 * the map has run. Thread-safety: the device's family rule.
 */
FDL_API int fdl_map_launch_async(fdl_map *map, size_t n, const fdl_gen_arg *args, size_t nargs,
                                 fdl_stream *stream, fdl_error *err);

/**
 * Wait for the map's launches (every stream of the device) and report the lowest index whose
 * call failed since the last check: `device function mul_f32_f32 returned status 3 at index 17
 * in map 'mul_f32_f32' (first of 5 failures)`; err->symbol is the function, err->backend_code the status. Clears the
 * record (and the module's FDL_CALL record). A failed call leaves out[i] zero.
 * @return FDL_OK, FDL_EDEVICE, FDL_ECUDA, FDL_ENODEVICE, FDL_EINVAL
 */
FDL_API int fdl_map_check(fdl_map *map, fdl_error *err);

/** fdl_map_launch, then fdl_map_check. */
FDL_API int fdl_map_run(fdl_map *map, size_t n, const fdl_gen_arg *args, size_t nargs,
                        fdl_error *err);

/* ---- reductions -------------------------------------------------------------------------- */

/** What a reduction computes. Start from FDL_REDUCTION_SPEC_INIT. */
typedef struct fdl_reduction_spec {
    unsigned version;      /**< FDL_REDUCTION_SPEC_VERSION */
    const char *type;      /**< the result's type, as in an argument list ("float32", "double") */
    const char *arguments; /**< argument list, as for fdl_elementwise_create */
    const char *map;       /**< expression over `i` giving the value at i ("x[i]") */
    /**
     * "sum", "min", "max", "product", or an expression in `a` and `b` of the result type
     * ("a > b ? a : b"), associative.
     */
    const char *reduce;
    /** neutral value, a C expression; NULL for the named reductions' own (0, 1, +-inf, limits) */
    const char *neutral;
} fdl_reduction_spec;

#define FDL_REDUCTION_SPEC_VERSION 1
#define FDL_REDUCTION_SPEC_INIT {FDL_REDUCTION_SPEC_VERSION, NULL, NULL, NULL, NULL, NULL}

/**
 * Make a reduction (PyCUDA's ReductionKernel).
 * @return FDL_OK, FDL_EINVAL (a missing field; a custom reduce without a neutral value; a
 *         pointer result type), FDL_EPARSE (type or argument list; the expressions do not
 *         compile: err->log), FDL_ELINK, FDL_EABI, FDL_ENOLIB, FDL_ECUDA, FDL_ENOMEM
 * Ownership: *out is the caller's (fdl_reduction_destroy), and must not outlive @p gen.
 */
FDL_API int fdl_reduction_create(fdl_reduction **out, fdl_gen *gen,
                                 const fdl_reduction_spec *spec, fdl_error *err);

/** Free a reduction. NULL is allowed. */
FDL_API void fdl_reduction_destroy(fdl_reduction *red);

/** The whole generated source, as compiled. Borrowed; "" for NULL. */
FDL_API const char *fdl_reduction_source(const fdl_reduction *red);

/** The linked cubin of the reduction, as fdl_map_cubin. */
FDL_API const void *fdl_reduction_cubin(const fdl_reduction *red, size_t *size);

/** Bytes of the result type; 0 for NULL. */
FDL_API size_t fdl_reduction_result_size(const fdl_reduction *red);

/**
 * Queue the reduction over indices 0..n-1 (n may be 0: the result is the neutral value) on the
 * default stream. Arguments checked as for fdl_map_launch.
 * @return FDL_OK, FDL_EINVAL, FDL_ENODEVICE, FDL_ECUDA
 */
FDL_API int fdl_reduction_launch(fdl_reduction *red, size_t n, const fdl_gen_arg *args,
                                 size_t nargs, fdl_error *err);

/**
 * As fdl_reduction_launch, queued in @p stream (NULL: the default stream). Nothing waits: take
 * the result with fdl_reduction_result (waits) or fdl_reduction_result_async (queued after it in
 * a stream). A reduction keeps its partials, counter and result in one scratch buffer of its own:
 * its launches must run one after another (one stream, or ordered by events), and a result is
 * the last finished launch's; to reduce concurrently on several streams, make one reduction per
 * stream (they share the compiled kernel).
 * @return FDL_OK, FDL_EINVAL (as fdl_reduction_launch; also a stream of another device),
 *         FDL_ENODEVICE, FDL_ECUDA
 * Thread-safety: the device's family rule.
 */
FDL_API int fdl_reduction_launch_async(fdl_reduction *red, size_t n, const fdl_gen_arg *args,
                                       size_t nargs, fdl_stream *stream, fdl_error *err);

/**
 * Wait for the last launch and copy its result (@p size must be fdl_reduction_result_size) to
 * @p out; a failed FDL_MAP_CALL is reported as by fdl_map_check.
 * @return FDL_OK, FDL_EINVAL (wrong size, never launched), FDL_ENODEVICE, FDL_EDEVICE, FDL_ECUDA
 */
FDL_API int fdl_reduction_result(fdl_reduction *red, void *out, size_t size, fdl_error *err);

/**
 * Queue in @p stream (NULL: the default stream) a copy of the result of the launch queued before
 * it into device memory at @p address (@p size bytes, which must be fdl_reduction_result_size):
 * an fdl_buffer's address, or another library's array (a CuPy or PyTorch scalar), so that work
 * queued after it in the stream can use the result without the host waiting. Queue it in the
 * stream of the launch (or order the two with an event), and before the next launch of the
 * reduction. Nothing waits and nothing checks FDL_MAP_CALL failures (the result then holds
 * what the map expression gave at the failing indices): fdl_reduction_check does.
 * @return FDL_OK, FDL_EINVAL (wrong size; never launched; a NULL @p address; a stream of
 *         another device), FDL_ENODEVICE (made without a device), FDL_ECUDA
 * Ownership: @p address is the caller's memory and must stay valid until the copy has run.
 * Thread-safety: the device's family rule.
 */
FDL_API int fdl_reduction_result_async(fdl_reduction *red, uint64_t address, size_t size,
                                       fdl_stream *stream, fdl_error *err);

/**
 * Wait for the device's work (every stream) and report a failed FDL_MAP_CALL of the reduction's
 * launches since the last check, as fdl_map_check does (the same message and fields); clears
 * the record. fdl_reduction_result does this itself; use it after fdl_reduction_result_async.
 * @return FDL_OK, FDL_EDEVICE, FDL_ECUDA, FDL_ENODEVICE, FDL_EINVAL (NULL @p red)
 * Thread-safety: the device's family rule.
 */
FDL_API int fdl_reduction_check(fdl_reduction *red, fdl_error *err);

/** fdl_reduction_launch, then fdl_reduction_result. */
FDL_API int fdl_reduction_run(fdl_reduction *red, void *out, size_t size, size_t n,
                              const fdl_gen_arg *args, size_t nargs, fdl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_GEN_H */
