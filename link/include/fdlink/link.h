/**
 * @file fdlink/link.h
 * Linking device code into a cubin. Inputs of every kind a CUDA linker accepts (PTX, cubin,
 * fatbin, host object, static library, LTO-IR, and CUDA C compiled with NVRTC), from a file or
 * from memory, recognised from their bytes; two backends: nvJitLink (the default; no GPU and no
 * driver needed) and the driver's cuLink (needs a current CUDA context). nvJitLink, NVRTC and the
 * driver are loaded at run time (dlopen) the first time they are needed.
 *
 * Every input is checked before the backend sees it: PTX against declarations (fdlink/abi.h),
 * cubins and the cubins inside fatbins, objects and libraries by their ELF symbol tables, LTO-IR
 * by the PTX that link-time optimisation makes of it. Undefined and duplicated symbols name the
 * inputs concerned.
 *
 * Thread-safety: an fdl_link is used by one thread at a time and may move between threads;
 * distinct links may run concurrently. With the cuLink backend, fdl_link_create and
 * fdl_link_complete need a current CUDA context on the calling thread. An fdl_inspection is
 * immutable after creation; share it freely.
 */
#ifndef FDLINK_LINK_H
#define FDLINK_LINK_H

#include <stddef.h>

#include "fdlink/abi.h"
#include "fdlink/cache.h"
#include "fdlink/decl.h"
#include "fdlink/error.h"
#include "fdlink/ptx.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Kind of a link input. Values are pinned. */
typedef enum fdl_input_kind {
    FDL_KIND_AUTO = 0,    /**< detect from content */
    FDL_KIND_PTX = 1,     /**< PTX text (a `.version` directive after comments) */
    FDL_KIND_CUBIN = 2,   /**< an ELF file for NVIDIA GPUs (e_machine 190) */
    FDL_KIND_FATBIN = 3,  /**< a fat binary (magic 0xBA55ED50): cubins, PTX, LTO-IR */
    FDL_KIND_LTOIR = 4,   /**< an NVVM container (magic 0x7F4E43ED), e.g. nvcc -dlto, NVRTC -dlto */
    FDL_KIND_OBJECT = 5,  /**< a host object with device code (`.nv_fatbin`/`__nv_relfatbin`) */
    FDL_KIND_LIBRARY = 6, /**< a static library (`!<arch>`) of such objects */
    FDL_KIND_CUDA = 7,    /**< CUDA C source, compiled with NVRTC */
    FDL_KIND_BITCODE = 8  /**< NVVM (LLVM) bitcode ('BC' 0xC0DE), e.g. libdevice.10.bc, compiled
                               with libNVVM into LTO-IR (or PTX without LTO) */
} fdl_input_kind;

/** Name of a kind ("ptx", "cubin", ...; "unknown" for other values); static string. */
FDL_API const char *fdl_input_kind_name(fdl_input_kind kind);

/**
 * What a kind is, for people ("PTX", "static library", "CUDA C source (compiled with NVRTC when
 * linked)", ...; "unknown" for FDL_KIND_AUTO and other values); static string.
 */
FDL_API const char *fdl_input_kind_title(fdl_input_kind kind);

/**
 * Parse a kind name as fdl_input_kind_name writes it ("ptx", "cubin", "fatbin", "ltoir",
 * "object", "library", "cuda", "bitcode", "auto"; also "lto-ir", "o", "a", "lib", "cu", "bc").
 * @return FDL_OK, FDL_EINVAL (unknown name: the message lists the names)
 */
FDL_API int fdl_input_kind_parse(fdl_input_kind *out, const char *name, fdl_error *err);

/**
 * Recognise the kind of an input from its bytes; @p name only breaks ties (text named `*.cu` or
 * `*.cuh` that is not PTX is CUDA C). Every header read is bounds-checked.
 * @param out  receives the kind; FDL_KIND_AUTO on failure
 * @return FDL_OK, FDL_EKIND (empty, or none of the kinds: the message says what was found, e.g.
 *         "a host object with no device code (no .nv_fatbin or __nv_relfatbin section)" or "a
 *         PNG image"), FDL_EINVAL
 * Thread-safety: reentrant.
 */
FDL_API int fdl_input_detect(fdl_input_kind *out, const void *data, size_t size, const char *name,
                             fdl_error *err);

/** The linker that runs a link. Values are pinned. */
typedef enum fdl_link_backend {
    FDL_BACKEND_AUTO = 0,      /**< nvJitLink when it can be loaded, else the driver's cuLink */
    FDL_BACKEND_NVJITLINK = 1, /**< nvJitLink: no GPU needed; LTO; every input kind */
    FDL_BACKEND_CULINK = 2     /**< cuLink*: needs a current context; no LTO-IR */
} fdl_link_backend;

/** Name of a backend ("auto", "nvjitlink", "culink"); static string. */
FDL_API const char *fdl_link_backend_name(fdl_link_backend backend);

/** Link-time optimisation. Values are pinned. */
typedef enum fdl_lto_mode {
    FDL_LTO_AUTO = 0, /**< on when an input carries LTO-IR (nvJitLink -lto), off otherwise */
    FDL_LTO_ON = 1,   /**< on; an error when no input carries LTO-IR */
    FDL_LTO_OFF = 2   /**< off; LTO-IR inputs are an error (they can only be linked with LTO) */
} fdl_lto_mode;

/** What NVRTC makes of CUDA C inputs. Values are pinned. */
typedef enum fdl_cuda_output {
    FDL_CUDA_OUTPUT_AUTO = 0,  /**< LTO-IR when the link can use it (nvJitLink, LTO on), else PTX */
    FDL_CUDA_OUTPUT_PTX = 1,   /**< PTX (checked against declarations like any PTX input) */
    FDL_CUDA_OUTPUT_LTOIR = 2  /**< LTO-IR (-dlto) */
} fdl_cuda_output;

/**
 * How CUDA C inputs are compiled with NVRTC (libnvrtc.so.13, libnvrtc.so or the toolkit's, or
 * the path in FDLINK_NVRTC). Start from FDL_NVRTC_OPTIONS_INIT. Always given to NVRTC:
 * `-arch=compute_NN` of the link's arch, `-rdc=true`, `-I<toolkit>/include` (unless
 * no_toolkit_include), and when declarations were added to the link before the input, their
 * prototypes header (fdl_header_generate) as a pre-include, so that a definition whose types
 * disagree with its declaration does not compile (ABI-10).
 */
typedef struct fdl_nvrtc_options {
    unsigned version;                  /**< FDL_NVRTC_OPTIONS_VERSION */
    const char *const *defines;        /**< NULL-terminated "NAME" or "NAME=VALUE" (-D), or NULL */
    const char *const *include_dirs;   /**< NULL-terminated directories (-I), or NULL */
    const char *std;                   /**< language standard ("c++17"), NULL for NVRTC's default */
    fdl_cuda_output output;            /**< PTX or LTO-IR */
    int no_toolkit_include;            /**< do not add <toolkit>/include */
    const char *const *extra;          /**< NULL-terminated raw NVRTC options (the CLI's -Xnvrtc),
                                            or NULL; part of the compile's cache key; -ewp,
                                            --extensible-whole-program or -rdc=false leave
                                            out fdlink's -rdc=true */
} fdl_nvrtc_options;

#define FDL_NVRTC_OPTIONS_VERSION 1
#define FDL_NVRTC_OPTIONS_INIT                                                                    \
    {FDL_NVRTC_OPTIONS_VERSION, NULL, NULL, NULL, FDL_CUDA_OUTPUT_AUTO, 0, NULL}

/**
 * Options of a link. Start from FDL_LINK_OPTIONS_INIT. Versions 1 (the first seven fields), 2
 * (up to `cuda`), 3 (up to `cache_dir`) and 4 (up to `cache_remote`) are still accepted; the
 * fields they lack then take their defaults.
 */
typedef struct fdl_link_options {
    unsigned version;         /**< FDL_LINK_OPTIONS_VERSION */
    /**
     * `sm_NN`, `sm_NNa` or `sm_NNf` (two to four digits); NULL or "native" for the device of the
     * calling thread's current CUDA context (fdl_device_open makes its device's context current).
     */
    const char *arch;
    int opt_level;            /**< -O level 0..3 (nvJitLink: 0 or 3); -1 for the default */
    int debug;                /**< -g */
    int lineinfo;             /**< -lineinfo */
    int verbose;              /**< the backend writes details to the info log */
    const char *const *extra; /**< NULL-terminated raw nvJitLink options, or NULL */
    /* version 2 */
    fdl_link_backend backend; /**< which linker */
    fdl_lto_mode lto;         /**< link-time optimisation */
    int emit_ptx;             /**< keep the post-LTO PTX (fdl_link_ptx); all inputs LTO-IR */
    int maxrregcount;         /**< most registers per thread, 0 for no limit */
    int ftz;                  /**< -ftz: 0 or 1, -1 for the default (nvJitLink only) */
    int prec_div;             /**< -prec-div: 0 or 1, -1 for the default (nvJitLink only) */
    int prec_sqrt;            /**< -prec-sqrt: 0 or 1, -1 for the default (nvJitLink only) */
    int fma;                  /**< -fma: 0 or 1, -1 for the default (nvJitLink only) */
    const char *const *kernels_used;   /**< NULL-terminated kernels LTO keeps, or NULL */
    const char *const *variables_used; /**< NULL-terminated variables LTO keeps, or NULL */
    int cudadevrt;            /**< link the toolkit's libcudadevrt.a (device-side launches) */
    const fdl_nvrtc_options *cuda; /**< CUDA C inputs added by file or data; NULL: defaults */
    /* version 3 */
    /**
     * The persistent cache of links and NVRTC compiles (fdlink/cache.h): FDL_CACHE_AUTO (on
     * unless FDLINK_CACHE=0), FDL_CACHE_ON or FDL_CACHE_OFF.
     */
    fdl_cache_mode cache;
    const char *cache_dir; /**< the cache directory; NULL for the default (fdl_cache_dir) */
    /* version 4 */
    /* -- the isolated link (issue 22) -- */
    /**
     * Run nvJitLink's link in a child process (docs/isolation.md): a linker that crashes is an
     * FDL_ELINK error naming the linker, the signal and the inputs, not the death of the program,
     * and what the linker prints itself goes to the link's logs, not to stderr. 1 on, 0 off, -1
     * for FDLINK_LINK_ISOLATE (1 or 0; off when unset), and on whenever split_compile_extended is
     * asked for (an option known to crash nvJitLink 13.0). The driver's cuLink always runs in
     * the process (it needs the calling thread's context).
     */
    int isolate;
    /* -- nvJitLink's remaining options (issue 25); nvJitLink only: cuLink refuses them -- */
    int time; /**< -time: nvJitLink's timings in the info log; such a link is not cached */
    const char *const *xptxas; /**< NULL-terminated options for ptxas (-Xptxas=OPT each), or NULL */
    int optimize_unused_variables; /**< -optimize-unused-variables: host code reads no variable */
    /**
     * Threads for the optimiser and ptxas (-split-compile=N and -Xptxas=--split-compile=N): 1
     * one thread, 0 every processor, N at most N; -1 (the default) lets fdlink choose: every
     * processor for a link whose inputs come to FDL_LINK_PARALLEL_BYTES or more and hold
     * FDL_LINK_PARALLEL_UNITS independent units or more (PTX kernels and functions defined; an
     * LTO-IR module or other input one each; a cubin none), one thread otherwise.
     * The cubin may differ from a one-thread link's in layout, not in what it computes.
     */
    int split_compile;
    /**
     * -split-compile-extended=N: a more aggressive split of LTO (0 every processor, N threads);
     * -1 or 1 off (the default). It changes the code and has crashed nvJitLink 13.0 on large
     * programs: use it with the isolated link.
     */
    int split_compile_extended;
    /** -jump-table-density=N: the case density 0..101 from which LTO makes a switch a jump
     *  table; -1 for nvJitLink's default (101) */
    int jump_table_density;
    /**
     * nvJitLink's own cache of intermediate steps (in the driver's compute cache, shared across
     * processes): 1 keeps it (-no-cache not passed; CUDA_CACHE_DISABLE=1 still turns it off), 0
     * passes -no-cache, -1 (the default) keeps it.
     */
    int jl_cache;
    /** Stack canaries in device code (ptxas's --device-stack-protector=true: nvJitLink 13.0
     *  refuses its own -device-stack-protector) */
    int device_stack_protector;
    /* -- the cache's remote stores (issue 26) -- */
    /**
     * The cache's remote stores, as FDLINK_CACHE_REMOTE takes them (fdlink/cache.h): space-
     * separated `redis://...` and `http(s)://...` URLs with `|attribute` suffixes. NULL: the
     * environment's; "": none.
     */
    const char *cache_remote;
    /* version 5 */
    /* -- links at the limit of the machine and of the farm (issue 32) -- */
    /**
     * How long (milliseconds) a link that misses the cache waits while another process sharing
     * the cache directory links the same key (its lease, docs/cache.md), before linking itself:
     * -1 (the default) for FDLINK_CACHE_LEASE_MS, else FDL_LINK_LEASE_MS_DEFAULT; 0 never waits.
     * A lease ends with its holder, killed or not.
     */
    long cache_lease_ms;
    /**
     * Most threads a link that splits its compilation on every processor (split_compile -1 on a
     * large link, or 0) may take: 0 (the default) for FDLINK_JOBS, else no bound. Under a GNU
     * make or ninja jobserver (MAKEFLAGS) the link takes one slot and more as tokens are free,
     * within this bound, and gives them back when it is done.
     */
    int jobs;
    /**
     * The LTO report: after a link that ran (not a cache hit), one note per declared function
     * (fdl_link_diagnostic, severity FDL_SEVERITY_NOTE, code "lto-report"): every call inlined,
     * or calls that stayed calls and why (its defining input is PTX or a cubin, which does not
     * join LTO; the link is not LTO; or LTO kept the function).
     */
    int lto_report;
    /* version 6 */
    /**
     * Warm deployments (issue 40): 1 makes every step that misses the cache an error (the link,
     * an NVRTC or libNVVM compile of an input, a check's post-LTO view): FDL_ENOTFOUND, naming the
     * inputs and the key, and nothing is compiled or linked; -1 never; 0 (the default) for
     * FDLINK_REQUIRE_WARM (set and not "0": required). A link without the cache (off, culink) is
     * such an error too.
     */
    int require_warm;
} fdl_link_options;

/** How long a link waits for another process's link of the same key by default (ms). */
#define FDL_LINK_LEASE_MS_DEFAULT 300000L

/** A link of inputs of at least this many bytes runs nvJitLink on every processor ... */
#define FDL_LINK_PARALLEL_BYTES (64u * 1024u)
/** ... when they hold at least this many units to share out (split_compile). */
#define FDL_LINK_PARALLEL_UNITS 2u

#define FDL_LINK_OPTIONS_VERSION 6
#define FDL_LINK_OPTIONS_INIT                                                                     \
    {FDL_LINK_OPTIONS_VERSION, NULL, -1, 0, 0, 0, NULL, FDL_BACKEND_AUTO, FDL_LTO_AUTO, 0, 0, -1,  \
     -1, -1, -1, NULL, NULL, 0, NULL, FDL_CACHE_AUTO, NULL,                                     \
     /* issue 22 */ -1, /* issue 25 */ 0, NULL, 0, -1, -1, -1, -1, 0, /* issue 26 */ NULL,       \
     /* issue 32 */ -1, 0, 0, /* issue 40 */ 0}

/** A link in progress. Opaque. */
typedef struct fdl_link fdl_link;

/**
 * The current version's defaults, as FDL_LINK_OPTIONS_INIT gives them, for callers that would
 * rather not depend on the positional macro (it stays, kept in step with the fields: a compiler
 * with -Wextra warns where a positional initializer misses one).
 * Thread-safety: any thread.
 */
FDL_API fdl_link_options fdl_link_options_init(void);

/**
 * The checks fdl_link_create makes of @p opts before it loads anything: each option on its own,
 * and what the chosen backend cannot do (culink refuses nvJitLink's options). Nothing is loaded
 * and no device is needed, so a tool can say what is wrong with a command line first.
 * @return FDL_OK, or what fdl_link_create would return for these options: FDL_EINVAL (the
 *         message names the option) or FDL_ELIMIT (a list or an option text too long)
 * Thread-safety: any thread.
 */
FDL_API int fdl_link_options_check(const fdl_link_options *opts, fdl_error *err);

/**
 * The bounds fdl_link_create accepts for the int option named as its field (e.g.
 * "jump_table_density", "maxrregcount"), inclusive: the min and max of its fdl_link_option,
 * for the options whose bounds the checks name (fdl_link_option.expect set; not the long one).
 * @return 1 and *min, *max (either may be NULL), or 0 for a name that has no bounds
 * Thread-safety: any thread.
 */
FDL_API int fdl_link_option_bounds(const char *name, int *min, int *max);

/*
 * The option table (issue 42), published as curl publishes its easy options: every option of
 * fdl_link_options and of fdl_nvrtc_options that a front door sets, one row each, with what its
 * value is, its bounds, its default, its words and a line of help, so that the CLI and the
 * Python package read what they offer from here rather than writing it again; and one setter by
 * name, which checks the value as fdl_link_create checks that option.
 */

/** What an option's value is (fdl_link_option.kind). Values are pinned. */
typedef enum fdl_option_kind {
    FDL_OPTION_INT = 0,    /**< a number within [min, max] */
    FDL_OPTION_BOOL = 1,   /**< 0 off, anything else on (within [min, max]) */
    FDL_OPTION_TRI = 2,    /**< 0 off, 1 on, or -1 (the help says what -1 leaves it to) */
    FDL_OPTION_ENUM = 3,   /**< one of words[]: the word, or its index (the enum's value) */
    FDL_OPTION_STRING = 4, /**< text, or NULL */
    FDL_OPTION_LIST = 5    /**< NULL-terminated texts, or NULL */
} fdl_option_kind;

/** fdl_link_option.flags: a field of fdl_nvrtc_options (fdl_link_options.cuda). */
#define FDL_OPTION_NVRTC 0x1u
/** fdl_link_option.flags: an nvJitLink option, which the cuLink backend refuses. */
#define FDL_OPTION_NVJITLINK_ONLY 0x2u
/** fdl_link_option.flags: a long field (the other numbers are int fields). */
#define FDL_OPTION_LONG 0x4u

/**
 * One option. The table is static: every pointer in it lives as long as the library.
 * Thread-safety: immutable; share freely.
 */
typedef struct fdl_link_option {
    /**
     * The name every door gives it: the field's ("jump_table_density"), and for the fields of
     * fdl_nvrtc_options "defines", "include_dirs", "std", "cuda_output" (its `output`),
     * "no_toolkit_include" and "nvrtc_extra" (its `extra`)
     */
    const char *name;
    fdl_option_kind kind;
    unsigned flags;           /**< FDL_OPTION_NVRTC, FDL_OPTION_NVJITLINK_ONLY, FDL_OPTION_LONG */
    long min, max;            /**< the numbers fdl_link_create takes, inclusive (ENUM: 0 to the
                                   last word's index; STRING and LIST: 0) */
    long def;                 /**< the default, FDL_LINK_OPTIONS_INIT's (STRING, LIST: 0, NULL) */
    const char *const *words; /**< ENUM: the words by value, NULL-terminated; else NULL */
    const char *expect;       /**< what a number outside the bounds is told it should be ("a
                                   percentage 0..101, or -1 for the default"), or NULL */
    const char *help;         /**< one line for people */
} fdl_link_option;

/**
 * The options in the table's order (the order the checks name them): @p prev NULL gives the
 * first, the last gives NULL, as does a pointer that is not the table's.
 * Ownership: borrowed from the library (static).
 * Thread-safety: any thread.
 */
FDL_API const fdl_link_option *fdl_link_option_next(const fdl_link_option *prev);

/**
 * The option named @p name (fdl_link_option.name), or NULL (unknown, or @p name NULL).
 * Ownership: borrowed from the library (static).
 * Thread-safety: any thread.
 */
FDL_API const fdl_link_option *fdl_link_option_by_name(const char *name);

/** What an fdl_option_value holds. Values are pinned. */
typedef enum fdl_option_type {
    FDL_VALUE_NUMBER = 0, /**< number: INT, BOOL, TRI and ENUM options */
    FDL_VALUE_TEXT = 1,   /**< text: STRING options (NULL for the default), ENUM ones by word */
    FDL_VALUE_LIST = 2    /**< list: LIST options (NULL for none) */
} fdl_option_type;

/** A value for fdl_link_options_set (or from fdl_link_options_get); the strings borrowed. */
typedef struct fdl_option_value {
    fdl_option_type type;
    long number;
    const char *text;
    const char *const *list;
} fdl_option_value;

/**
 * Set the option named @p name: in @p opts, or in @p cuda for an FDL_OPTION_NVRTC one (point
 * opts->cuda at it to use it). The value is checked as fdl_link_create checks this option on
 * its own, with its messages; what depends on other options (emit_ptx with lto off, cuLink with
 * nvJitLink's options) is left to fdl_link_options_check and fdl_link_create. Strings and lists
 * are borrowed, as the structs borrow them.
 * @param opts  a current-version struct (from FDL_LINK_OPTIONS_INIT), not NULL
 * @param cuda  a current-version struct (from FDL_NVRTC_OPTIONS_INIT), or NULL when no
 *              NVRTC option is set
 * @param value its type as the option's kind asks (fdl_option_type), not NULL
 * @return FDL_OK; FDL_EINVAL, nothing changed, the message one line naming the option: an
 *         unknown name ("unknown link option 'NAME'"), an NVRTC option without @p cuda, a value
 *         of the wrong type ("option debug takes a number, not a list"), an unknown word ("invalid
 *         backend 'foo' (expected auto, nvjitlink or culink)"), a number beyond the enum's words
 *         or the field, a value fdl_link_create refuses ("invalid jump_table_density 102
 *         (expected a percentage 0..101, or -1 for the default)"), a struct of another version,
 *         NULL @p opts, @p name or @p value; FDL_ELIMIT (a list or an option text too long)
 * Thread-safety: one thread at a time per struct.
 */
FDL_API int fdl_link_options_set(fdl_link_options *opts, fdl_nvrtc_options *cuda,
                                 const char *name, const fdl_option_value *value,
                                 fdl_error *err);

/**
 * The value of the option named @p name in @p opts (an NVRTC one in opts->cuda, or its default
 * when that is NULL), of any version fdl_link_create takes: *out's type as its kind says; an
 * ENUM's number, and its word in text (NULL when the number is none of them).
 * @return FDL_OK, FDL_EINVAL (unknown name, a version fdl_link_create refuses, NULL argument)
 * Ownership: the strings are borrowed from @p opts (or the table).
 * Thread-safety: any thread, while no other writes @p opts.
 */
FDL_API int fdl_link_options_get(const fdl_link_options *opts, const char *name,
                                 fdl_option_value *out, fdl_error *err);

/**
 * Create a link: check the options, choose and load the backend, resolve "native" to the current
 * device's architecture, and with cudadevrt locate the toolkit's libcudadevrt.a (FDLINK_CUDA_ROOT,
 * CUDA_PATH, the toolkit fdlink was built with, /usr/local/cuda; `<root>/lib64/libcudadevrt.a`).
 *
 * @param out  receives the link (not NULL); *out = NULL on entry and on failure
 * @param opts not NULL; copied (strings and arrays too)
 * @return FDL_OK, FDL_EINVAL (bad options or an invalid combination, checked before anything is
 *         loaded: the message names the option; the culink backend without a current context:
 *         "the culink backend needs a current CUDA context (open a device first) or use
 *         nvjitlink"), FDL_ENOLIB (the backend, or the driver for "native", cannot be loaded),
 *         FDL_ENODEVICE ("native" without a current context), FDL_ENOTFOUND (libcudadevrt.a not
 *         found: the message lists where it looked), FDL_ELINK (nvJitLink refused the options),
 *         FDL_ECUDA, FDL_ENOMEM
 * Ownership: *out belongs to the caller; free with fdl_link_destroy.
 */
FDL_API int fdl_link_create(fdl_link **out, const fdl_link_options *opts, fdl_error *err);

/** Destroy a link and every buffer it owns (cuLink's state included). NULL is allowed. */
FDL_API void fdl_link_destroy(fdl_link *link);

/**
 * Check the inputs against these declarations when the link completes (see fdlink/abi.h): PTX
 * inputs by their prototypes, binary inputs by their symbols, LTO-IR by its post-LTO PTX. CUDA C
 * inputs added after this call are compiled with the declarations' prototypes header. The
 * diagnostics go to the callback set with fdl_link_set_diag, if any. Each call adds a set (one
 * per declaration file; a set added twice counts once); the inputs are checked against every
 * set. The sets are borrowed and must outlive the link.
 * @return FDL_OK, FDL_EINVAL (NULL argument, or the link is complete), FDL_ENOMEM
 */
FDL_API int fdl_link_add_decls(fdl_link *link, const fdl_decls *decls, fdl_error *err);

/**
 * Receive every diagnostic of the declaration check run by fdl_link_complete (see fdl_diag_fn);
 * err of fdl_link_complete still gets the first. @p fn NULL turns it off. @p ctx is passed back.
 * @return FDL_OK, FDL_EINVAL (NULL link)
 */
FDL_API int fdl_link_set_diag(fdl_link *link, fdl_diag_fn fn, void *ctx);

/**
 * Add an input from memory. The bytes are copied; @p name is used in every diagnostic. The kind
 * is recognised from the content (fdl_input_detect) unless @p kind states it: a stated binary
 * kind must carry its magic number; stated PTX must be PTX text; stated CUDA is compiled as it is.
 * CUDA C is compiled here (with the link's fdl_link_options.cuda). Inputs the link cannot use are
 * refused here: LTO-IR with LTO off or with cuLink, a cubin for another architecture, a cubin that
 * is not relocatable.
 * @param kind FDL_KIND_AUTO to detect from content
 * @return FDL_OK, FDL_EKIND (unrecognised or unusable content: the message says what was found
 *         and why it cannot be linked; empty input), FDL_EPARSE (PTX that cannot be scanned; a
 *         malformed container, with the byte offset; CUDA C that does not compile: the location of
 *         the first error, err->log holding NVRTC's whole log), FDL_ENOLIB (NVRTC missing),
 *         FDL_ENOMEM, FDL_EINVAL
 */
FDL_API int fdl_link_add_data(fdl_link *link, const void *data, size_t size, const char *name,
                              fdl_input_kind kind, fdl_error *err);

/** Add an input file. As fdl_link_add_data, plus FDL_EIO (missing file, a directory). */
FDL_API int fdl_link_add_file(fdl_link *link, const char *path, fdl_input_kind kind,
                              fdl_error *err);

/**
 * Add CUDA C source, compiled now with NVRTC to PTX or LTO-IR (see fdl_nvrtc_options).
 * @param opts NULL for the link's fdl_link_options.cuda (or the defaults)
 * @return FDL_OK, FDL_EPARSE (compile error: err->source @p name, err->line and the first error's
 *         text; err->log the whole NVRTC log, borrowed from the link), FDL_EABI (NVRTC refused a
 *         definition for disagreeing with a declaration's prototype, pre-included: err at the
 *         definition, err->symbol the name, the message its types against the declaration's
 *         with the rule and where it is declared, "mul_f32_f32: defined as (float *, float,
 *         float), declared float64(float64, float64) (ABI-5; declared at wide.decl:1:1)";
 *         err->log NVRTC's log, whose records stay among the link's diagnostics beside
 *         fdlink's), FDL_ENOLIB, FDL_EINVAL (bad options, e.g. LTO-IR output with LTO off or
 *         cuLink), FDL_ENOMEM
 */
FDL_API int fdl_link_add_cuda(fdl_link *link, const char *source, size_t size, const char *name,
                              const fdl_nvrtc_options *opts, fdl_error *err);

/** fdl_link_check flag: a declared function that no input defines is not an error. */
#define FDL_LINK_CHECK_ALLOW_UNDEFINED 0x1u

/**
 * Check the inputs as fdl_link_complete checks them, and stop before the link: every input is
 * given the image the backend would use, then the declaration check (PTX by its prototypes,
 * cubins and objects by their symbols, LTO-IR by the PTX of the -O0 post-LTO view of all LTO-IR
 * inputs together, which goes through the cache as complete's does) and the check for functions
 * defined twice. No cubin is made, and undefined symbols are not looked for (only the link
 * finds those). The link stays open: inputs and declarations may still be added, and
 * fdl_link_complete does not run the checks again when a check with @p flags 0 passed and
 * nothing was added since. Diagnostics go where complete's go (fdl_link_set_diag,
 * fdl_link_diagnostic; each check adds its own).
 * @param flags 0, or FDL_LINK_CHECK_ALLOW_UNDEFINED to check what the inputs define and let
 *        declared functions that none defines be (they are linked later from elsewhere: a
 *        library of several sources checked one source at a time); such a check does not stand
 *        for complete's
 * @return FDL_OK, FDL_EABI (an input disagrees with a declaration: err has the first
 *         diagnostic), FDL_ELINK (an input has no code for the arch; a symbol defined twice;
 *         the post-LTO view of LTO-IR failed, err->log holding nvJitLink's log), FDL_ENOLIB
 *         (nvJitLink, for LTO-IR inputs), FDL_EINVAL (NULL @p link, unknown @p flags, no
 *         inputs, the link already complete, options the inputs contradict as in
 *         fdl_link_complete), FDL_ENOMEM
 * Ownership: nothing kept beyond the link's diagnostics and logs.
 * Thread-safety: as the link (one thread at a time).
 */
FDL_API int fdl_link_check(fdl_link *link, unsigned flags, fdl_error *err);

/**
 * The bytes of input @p i as the backend gets them: for a CUDA C input, what NVRTC made of it
 * (PTX text or LTO-IR, as @p kind says; through the cache), so that a compile can be kept and
 * given to other links; for the others, the bytes added. NUL-terminated one byte past @p size.
 * @param size (may be NULL) receives the size; 0 when out of range
 * @param kind (may be NULL) receives FDL_KIND_PTX or FDL_KIND_LTOIR for a CUDA C input (which
 *        fdl_link_input reports as FDL_KIND_CUDA), else the input's kind; FDL_KIND_AUTO when out
 *        of range
 * @return the bytes, or NULL when @p link is NULL or @p i out of range
 * Ownership: borrowed; valid until the link is destroyed.
 * Thread-safety: as the link.
 */
FDL_API const void *fdl_link_input_data(const fdl_link *link, size_t i, size_t *size,
                                        fdl_input_kind *kind);

/**
 * Compile CUDA C to PTX or LTO-IR with NVRTC, checked against declarations, without linking:
 * what fdl_link_add_cuda and fdl_link_check do, through a link made for it and destroyed
 * (so the NVRTC compile and the LTO-IR check's post-LTO view come from and go to the cache as
 * in any link). With @p decls their prototypes are pre-included (a definition whose types
 * disagree does not compile, ABI-10), and the output is checked against them with
 * FDL_LINK_CHECK_ALLOW_UNDEFINED (functions declared but defined elsewhere are no error).
 * @param out    receives the bytes (not NULL), NUL-terminated one byte past *size
 * @param size   receives their size (not NULL)
 * @param kind   (may be NULL) receives FDL_KIND_PTX or FDL_KIND_LTOIR
 * @param log    (may be NULL) receives NVRTC's whole log (warnings of a good compile, the errors
 *               of a bad one), or NULL when it said nothing
 * @param source @p len bytes of CUDA C (NUL not needed); @p name names it in diagnostics
 * @param arch   the target (`sm_90`), overriding @p link_opts->arch; NULL to take that one
 *               (NULL or "native" there: the current context's device)
 * @param decls  (may be NULL) declarations to check against; borrowed for the call
 * @param link_opts (may be NULL: defaults) backend, LTO, cache, -ftz/-prec-div/... as for a
 *               link; the output is LTO-IR when @p nvrtc_opts asks for it, or with
 *               FDL_CUDA_OUTPUT_AUTO when the link could use it (nvJitLink, LTO not off)
 * @param nvrtc_opts (may be NULL: link_opts->cuda, else the defaults) as fdl_link_add_cuda
 * @return FDL_OK, FDL_EPARSE (does not compile: err has the first error's location; the whole
 *         log in *log), FDL_EABI (as fdl_link_add_cuda and fdl_link_check), FDL_ELINK (as
 *         fdl_link_check), FDL_ENOLIB (NVRTC or
 *         nvJitLink), FDL_EINVAL (bad options, NULL arguments), FDL_EKIND (a NUL byte in the
 *         source), FDL_ENOMEM; on failure *out is NULL and *size 0. err->log is NULL on return
 *         (the link it would point into is gone): the log is in *log
 * Ownership: *out and *log are the caller's; free() them.
 * Thread-safety: reentrant (distinct calls may run at once, as distinct links do).
 */
FDL_API int fdl_cuda_compile(void **out, size_t *size, fdl_input_kind *kind, char **log,
                             const char *source, size_t len, const char *name, const char *arch,
                             const fdl_decls *decls, const fdl_link_options *link_opts,
                             const fdl_nvrtc_options *nvrtc_opts, fdl_error *err);

/**
 * Run the checks and the link. In order: every input is given the image the backend will use
 * (the cubin for the link's arch, else PTX or LTO-IR); the declaration check (if declarations were
 * added); duplicate definitions across all inputs (ABI-6; nvJitLink would only warn); the link,
 * with -lto when LTO is on; with emit_ptx, the post-LTO PTX. LTO-IR inputs are checked through one
 * extra post-LTO link of all of them together. With the cache on (fdlink/cache.h), a link made
 * before (same key: the inputs, options, arch, backend version and declarations) comes back from
 * memory or disk with its cubin, PTX and logs, and none of the above runs; a successful link is
 * stored. A cache that cannot be used is never an error (see fdl_link_cache_warning).
 * @return FDL_OK, FDL_EABI (an input disagrees with a declaration), FDL_ELINK (an input has no
 *         code for the arch; a symbol defined twice, naming both inputs; an undefined symbol,
 *         naming it, the input that references it and where it is declared; the backend refused
 *         an input or failed: the message quotes the log, err->log holds it whole, borrowed from
 *         the link), FDL_EINVAL (no inputs, already completed, --lto without LTO-IR, emit_ptx with
 *         an input that is not LTO-IR, cuLink without a current context), FDL_ECUDA, FDL_ENOMEM
 */
FDL_API int fdl_link_complete(fdl_link *link, fdl_error *err);

/**
 * The linked cubin after a successful fdl_link_complete, else NULL.
 * Ownership: borrowed; valid until the link is destroyed.
 * Thread-safety: the bytes never change once the link is complete, so any number of threads may
 * read them at once (to load one link on several GPUs: fdlink/host.h) while the link lives.
 */
FDL_API const void *fdl_link_cubin(const fdl_link *link, size_t *size);

/**
 * The post-LTO PTX (NUL-terminated) after a successful fdl_link_complete with emit_ptx, else
 * NULL. @p size (may be NULL) receives its length without the NUL.
 * Ownership: borrowed; valid until the link is destroyed.
 */
FDL_API const char *fdl_link_ptx(const fdl_link *link, size_t *size);

/**
 * The parameters of kernel @p name of a completed link, with their classes (fdl_param_class of
 * fdlink/ptx.h) and sizes, from the PTX the link saw: PTX inputs (CUDA C compiled to PTX among
 * them), the post-LTO PTX of LTO-IR inputs checked against declarations, and emit_ptx's. Kept in
 * the link's cache entry, so that a hit knows them too (an entry made before fdlink kept them
 * gives FDL_ENOTFOUND). A binding converts arguments with them as a C compiler converts
 * arguments to a prototype.
 * @param out   room for @p max entries (NULL only when @p max is 0): receives min(*count, max)
 * @param count receives the number of parameters (not NULL); 0 on failure
 * @return FDL_OK, FDL_ENOTFOUND (the link's code does not say: cubins and objects only, LTO-IR
 *         linked without declarations, an old cache entry, no such kernel), FDL_EINVAL (NULL
 *         argument, a link not complete)
 * Ownership: nothing kept. Thread-safety: any number of threads may read a completed link.
 */
FDL_API int fdl_link_kernel_params(const fdl_link *link, const char *name, fdl_param_info *out,
                                   size_t max, size_t *count, fdl_error *err);

/** Write the linked cubin to @p path atomically. @return FDL_OK, FDL_EINVAL, FDL_EIO */
FDL_API int fdl_link_write(const fdl_link *link, const char *path, fdl_error *err);

/** The backend's info log ("" when empty). Borrowed; valid until the link is destroyed. */
FDL_API const char *fdl_link_info_log(const fdl_link *link);

/** The backend's error log ("" when empty). Borrowed; valid until the link is destroyed. */
FDL_API const char *fdl_link_error_log(const fdl_link *link);

/**
 * Wall time of the backend's part of fdl_link_complete (compiling the inputs and linking), in
 * milliseconds; 0 until the backend ran (also when a check failed).
 */
FDL_API double fdl_link_wall_ms(const fdl_link *link);

/**
 * The split compilation of the completed link (issue 32), for a tool's report: *threads the
 * threads it ran on (0: none asked of the build's jobserver), *tokens the jobserver slots it took
 * beyond its own, *jobserver 1 when a jobserver (MAKEFLAGS) was there. All 0 for a NULL link.
 * Thread-safety: as fdl_link_wall_ms.
 */
FDL_API void fdl_link_jobs(const fdl_link *link, int *threads, int *tokens, int *jobserver);

/**
 * Whether the memory budget bounded the threads fdl_link_jobs reports (issue 32: the memory free
 * to the link, FDLINK_MEMORY_BUDGET in its place). @return 1 or 0 (0 for a NULL link)
 * Thread-safety: as fdl_link_wall_ms.
 */
FDL_API int fdl_link_jobs_memory_bound(const fdl_link *link);

/**
 * Whether the cubin @p data, @p size defines a function @p name (any binding): a function LTO
 * inlined everywhere is gone from the linked cubin (fdlink inspect --decl's LTO report).
 * @return 1 or 0 (0 also for NULL arguments or bytes that are not a cubin)
 * Thread-safety: any thread.
 */
FDL_API int fdl_cubin_defines_function(const void *data, size_t size, const char *name);

/**
 * Where the completed link's result came from: FDL_CACHE_HIT_MEMORY or FDL_CACHE_HIT_DISK (the
 * backend did not run), FDL_CACHE_MISS (it ran), FDL_CACHE_UNUSED (cache off, a culink link, or
 * not completed). @p key (may be NULL) receives the key as 32 hex digits ("" when none).
 * Ownership: *key is borrowed; valid until the link is destroyed.
 */
FDL_API fdl_cache_result fdl_link_cache_result(const fdl_link *link, const char **key);

/**
 * Why the cache directory could not be used by this link ("" when it could, or was not needed),
 * e.g. "cache directory /x is not writable ...; linking without it". The same text also went,
 * once, to the callback of fdl_link_set_diag as a diagnostic of code FDL_EIO.
 * Ownership: borrowed; valid until the link is destroyed.
 */
FDL_API const char *fdl_link_cache_warning(const fdl_link *link);

/** How serious a diagnostic is. */
typedef enum fdl_severity {
    FDL_SEVERITY_ERROR = 0,
    FDL_SEVERITY_WARNING = 1,
    FDL_SEVERITY_NOTE = 2
} fdl_severity;

/**
 * One diagnostic of a tool, as data: NVRTC's (`inc/h.h(3): warning #177-D: ...`), nvJitLink's
 * and the driver's linker's (`error   : ...`, `ptxas x.ptx, line 8; error : ...`) and fdlink's
 * own checks'. Every string is non-NULL ("" when the tool did not say). A plain value;
 * Thread-safety: immutable; share freely while its owner lives.
 */
typedef struct fdl_diagnostic {
    const char *file;      /**< as the tool named it: a header, NVRTC's built-in header, an input */
    unsigned line;         /**< 1-based, 0 when unknown */
    unsigned column;       /**< 1-based (bytes), 0 when unknown */
    fdl_severity severity;
    const char *code;      /**< the tool's code ("177-D", "ABI-5"), "" when none */
    const char *message;   /**< one line */
    const char *tool;      /**< "nvrtc", "nvjitlink", "culink" or "fdlink" */
} fdl_diagnostic;

/**
 * The number of diagnostics the link has gathered so far: NVRTC's of each CUDA C input (added
 * as the input is compiled, or from the cache with its output, warnings included), then at
 * fdl_link_complete the declaration check's (tool "fdlink") and the backend's log's errors and
 * warnings. 0 for NULL.
 */
FDL_API size_t fdl_link_diagnostic_count(const fdl_link *link);

/**
 * Diagnostic @p index (in the order the tools reported them), or NULL when out of range.
 * Ownership: borrowed, strings included; valid until the link is destroyed.
 * Thread-safety: as the link (one thread at a time).
 */
FDL_API const fdl_diagnostic *fdl_link_diagnostic(const fdl_link *link, size_t index);

/** "error", "warning" or "note" ("error" for a value that is none of them). Static. */
FDL_API const char *fdl_severity_name(fdl_severity severity);

/**
 * How many CUDA C inputs of the link came from the cache (@p hits) and were compiled by NVRTC
 * (@p compiled). Either pointer may be NULL.
 */
FDL_API void fdl_link_nvrtc_cache(const fdl_link *link, size_t *hits, size_t *compiled);

/**
 * How many NVVM bitcode inputs (.bc) of the link came from the cache (@p hits) and were compiled
 * by libNVVM (@p compiled). Either pointer may be NULL.
 */
FDL_API void fdl_link_nvvm_cache(const fdl_link *link, size_t *hits, size_t *compiled);

/** The backend the link uses (never FDL_BACKEND_AUTO once created; AUTO for NULL). */
FDL_API fdl_link_backend fdl_link_get_backend(const fdl_link *link);

/** The target architecture ("sm_90"; "native" resolved). Borrowed; "" for NULL. */
FDL_API const char *fdl_link_arch(const fdl_link *link);

/** Non-zero when the completed link ran with link-time optimisation (-lto). */
FDL_API int fdl_link_lto(const fdl_link *link);

/** Number of inputs added (libcudadevrt.a included once the link completed). */
FDL_API size_t fdl_link_input_count(const fdl_link *link);

/**
 * Name and kind of input @p i (CUDA C inputs report FDL_KIND_CUDA). @return the name (borrowed),
 * or NULL when out of range
 */
FDL_API const char *fdl_link_input(const fdl_link *link, size_t i, fdl_input_kind *kind);

/**
 * Version of the nvJitLink library in use, loading it if needed.
 * @return FDL_OK, FDL_ENOLIB
 */
FDL_API int fdl_link_backend_version(unsigned *major, unsigned *minor, fdl_error *err);

/**
 * Version of the NVRTC library that compiles CUDA C inputs, loading it if needed: with
 * fdl_link_backend_version, whether the pair agrees (an NVRTC newer than nvJitLink writes LTO-IR
 * and PTX that nvJitLink cannot link).
 * @return FDL_OK, FDL_ENOLIB (no NVRTC, or one that does not say its version), FDL_EINVAL
 * Thread-safety: safe.
 */
FDL_API int fdl_nvrtc_version(unsigned *major, unsigned *minor, fdl_error *err);

/* ---- inspection ------------------------------------------------------------------------- */

/** Kind of a symbol in a cubin. Values are pinned. */
typedef enum fdl_symbol_kind {
    FDL_SYMBOL_FUNCTION = 0, /**< a device function */
    FDL_SYMBOL_KERNEL = 1,   /**< a kernel (an entry point) */
    FDL_SYMBOL_VARIABLE = 2  /**< a device variable */
} fdl_symbol_kind;

/** One symbol of a cubin's symbol table (global and weak functions, kernels, variables). */
typedef struct fdl_symbol {
    const char *name;      /**< borrowed */
    fdl_symbol_kind kind;
    int defined;           /**< 0: referenced here, defined elsewhere */
    int weak;              /**< weak binding */
    /* Resources of a defined function or kernel; -1 when the cubin does not say. */
    long registers;        /**< registers per thread (.nv.info EIATTR_REGCOUNT) */
    long shared_bytes;     /**< static shared memory (size of .nv.shared.<name>) */
    long local_bytes;      /**< stack frame per thread (.nv.info EIATTR_FRAME_SIZE) */
    long const_bytes;      /**< constant bank 0 (size of .nv.constant0.<name>) */
} fdl_symbol;

/**
 * One code image of an input: the input itself (PTX, cubin, LTO-IR), or an entry of a fatbin,
 * of the fatbin section of a host object, or of an object in a static library.
 */
typedef struct fdl_image {
    fdl_input_kind kind;     /**< FDL_KIND_PTX, FDL_KIND_CUBIN or FDL_KIND_LTOIR; FDL_KIND_AUTO
                                  for a fatbin entry of a kind fdlink does not know */
    const char *name;        /**< for diagnostics: "k.fatbin[sm_90 cubin]", "libk.a(k.o)[...]" */
    const char *member;      /**< the archive member ("k.o"), "" when none */
    const char *arch;        /**< "sm_90", "compute_90", "lto_90"; "" when unknown */
    unsigned arch_number;    /**< 90 for all three; 0 when unknown */
    const char *ptx_version; /**< PTX: the `.version` ("9.0"); "" otherwise */
    const char *compression; /**< "zstd" or "lz4" as stored in a fatbin, "" when not compressed */
    int relocatable;         /**< cubin: relocatable (linkable) rather than executable */
    size_t size;             /**< bytes of the image (decompressed when that was possible) */
    const fdl_ptx *ptx;      /**< PTX: its prototypes (fdlink/ptx.h); NULL otherwise */
    size_t nsymbols;
    const fdl_symbol *symbols; /**< cubin: its symbols, in symbol-table order; NULL otherwise */
    const char *note;        /**< why the content is not shown (e.g. zstd not available), or "" */
} fdl_image;

/** What an input holds. Opaque. */
typedef struct fdl_inspection fdl_inspection;

/**
 * Inspect an input: its kind and every code image in it, decompressed and scanned.
 * @param kind FDL_KIND_AUTO to detect from content
 * @return FDL_OK, FDL_EKIND, FDL_EPARSE (malformed container or PTX), FDL_ENOMEM, FDL_EINVAL
 * Ownership: *out belongs to the caller (fdl_inspection_destroy); @p data is copied.
 */
FDL_API int fdl_inspect_data(fdl_inspection **out, const void *data, size_t size,
                             const char *name, fdl_input_kind kind, fdl_error *err);

/** Inspect a file. As fdl_inspect_data, plus FDL_EIO. */
FDL_API int fdl_inspect_file(fdl_inspection **out, const char *path, fdl_input_kind kind,
                             fdl_error *err);

/** Free an inspection. NULL is allowed. */
FDL_API void fdl_inspection_destroy(fdl_inspection *ins);

/** Kind of the inspected input. */
FDL_API fdl_input_kind fdl_inspection_kind(const fdl_inspection *ins);

/** Number of code images (0 for CUDA C, which holds none until compiled). */
FDL_API size_t fdl_inspection_count(const fdl_inspection *ins);

/** Image @p i, or NULL when out of range. Borrowed; valid until the inspection is destroyed. */
FDL_API const fdl_image *fdl_inspection_image(const fdl_inspection *ins, size_t i);

/* ---- fat binaries: one program for several architectures (issue 40) ------------------------ */

/** One entry of a fatbin to write: a cubin for sm_@p arch, or PTX for compute_@p arch. */
typedef struct fdl_fatbin_entry {
    fdl_input_kind kind; /**< FDL_KIND_CUBIN or FDL_KIND_PTX */
    unsigned arch;       /**< the architecture's number: 90 for sm_90 or compute_90 */
    const void *data;    /**< the cubin, or the PTX text (its NUL not needed) */
    size_t size;
} fdl_fatbin_entry;

/**
 * Write a fat binary of @p n entries, in the order given, as nvcc's fatbinary writes one (one
 * container: magic 0xBA55ED50, version 1; an entry header per image, 64-bit, uncompressed; each
 * payload padded with zeros to 8 bytes, PTX NUL-terminated), so that the driver's
 * cuModuleLoadData picks the image for its GPU (a cubin of its architecture, else JIT of the
 * newest PTX it can), and cuobjdump, nvJitLink and fdl_inspect_data read it. Each cubin entry's
 * bytes are the cubin's, unchanged.
 * @param out  receives the fatbin (not NULL)
 * @param size receives its size (not NULL)
 * @return FDL_OK, FDL_EINVAL (no entries, an empty one, a kind other than cubin or PTX, bytes
 *         that are not of the kind said, an arch outside 10..9999, two entries of one kind and
 *         arch: the message names the entry), FDL_ELIMIT (too large), FDL_ENOMEM
 * Ownership: *out is the caller's; free() it.
 * Thread-safety: reentrant.
 */
FDL_API int fdl_fatbin_create(void **out, size_t *size, const fdl_fatbin_entry *entries, size_t n,
                              fdl_error *err);

/**
 * Complete @p n links at once (fdl_link_complete on each), on at most @p jobs threads (0: the
 * fewer of FDLINK_JOBS, when set, and the number of links), each link checked and cached on its
 * own: the links of one program for several architectures, made into a fatbin with
 * fdl_fatbin_create. Every link is completed even when another fails. Isolated links (a child
 * process each: fdl_link_options.isolate, FDLINK_LINK_ISOLATE=1) complete one after another, each
 * with every core for its own split compilation: a fork beside running threads is not safe.
 * @param errs (may be NULL) @p n records, link i's in errs[i]
 * @return FDL_OK when every link completed, else the status of the first (in order) that failed
 *         (its record in errs[i]; the others' in theirs); FDL_EINVAL (NULL links), FDL_ENOMEM
 * Thread-safety: the links are used by this call's threads until it returns; no other thread
 * may use them meanwhile.
 */
FDL_API int fdl_links_complete(fdl_link *const *links, size_t n, int jobs, fdl_error *errs);

#ifdef __cplusplus
}
#endif

#endif /* FDLINK_LINK_H */
