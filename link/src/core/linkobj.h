/*
 * link/src/core: the link object, its helpers, options, logs, nvJitLink runs and cache steps, and
 * the interfaces that the checks (checks/checks.h) and backends (backends/backends.h) implement
 * for link.c (internal to link/; the folders' order: README.md in link/src).
 */
#ifndef FDLINK_LINKOBJ_H
#define FDLINK_LINKOBJ_H

#include <stddef.h>

#include "cacheint.h"
#include "fdlink/link.h"
#include "diag.h"
#include "libmemo.h"
#include "formats.h"
#include "libs.h"
#include "nvjl.h"
#include "strv.h"


typedef struct fdl__link_input {
    char *name;
    unsigned char *data; /* size bytes, then a NUL */
    size_t size;
    fdl_input_kind kind; /* as given to the backend (CUDA C: PTX or LTO-IR) */
    int from_cuda;       /* compiled from CUDA C by NVRTC (1), from NVVM bitcode by libNVVM (2) */
    int builtin;         /* libcudadevrt.a, added by the cudadevrt option */
    fdl__images images;
    fdl__image **chosen; /* per unit: the image the backend will use */
    fdl_ptx *post_lto;   /* the post-LTO PTX of this input's LTO-IR (declaration check) */
} fdl__link_input;

enum link_state { LINK_OPEN, LINK_DONE, LINK_FAILED };

struct fdl_link {
    fdl_link_options opts; /* pointers replaced by the owned copies below */
    fdl__strv extra, kernels_used, variables_used, xptxas;
    fdl_nvrtc_options cuda;
    fdl__strv cuda_defines, cuda_includes, cuda_extra;
    char *cuda_std;
    char arch[24];       /* "sm_90a" */
    unsigned arch_number; /* 90 */
    char arch_suffix;    /* 'a', 'f' or 0 */
    char *devrt;         /* path of libcudadevrt.a with the cudadevrt option */
    fdl_link_backend backend;
    const fdl__nvjl *nv;  /* NULL until nvJitLink is needed when its memo gave the version */
    unsigned nvjl_major, nvjl_minor; /* nvJitLink's version, from nv or from its memo */
    int nvjl_known;         /* nvjl_major/nvjl_minor are known (nvJitLink 12.3 and later say it) */
    int nvjl_memo;          /* nvjl_major/nvjl_minor came from the memo (nv is NULL) */
    int nvjl_id_ok;         /* nvjl_id identifies the library (libmemo.h) */
    unsigned char nvjl_id[FDL__LIBMEMO_ID_SIZE];
    /* the cache directory's memo that this library accepted the options, made at create time
     * and written by fdl__link_memos_write (creating a link writes nothing) */
    unsigned char probe_memo[FDL__CACHE_KEY_SIZE];
    int probe_memo_pending;
    fdl__link_input *inputs;
    size_t ninputs;
    size_t cap;
    const fdl_decls **decls; /* the sets added, in order (borrowed) */
    size_t ndecls;
    fdl_diag_fn on_diag;
    void *diag_ctx;
    enum link_state state;
    /* fdl_link_check: it passed (flags 0) with these many inputs and declaration sets */
    int checked;
    size_t checked_inputs, checked_decls;
    int allow_undefined; /* the check in progress has FDL_LINK_CHECK_ALLOW_UNDEFINED */
    int lto;
    unsigned char *keeper; /* LTO-IR that keeps declared functions alive (declaration check) */
    size_t keeper_size;
    int keeper_tried;
    unsigned char *cubin;
    size_t cubin_size;
    char *ptx;
    size_t ptx_size;
    /* the kernels' parameter classes and sizes (fdl_link_kernel_params): a line per kernel,
     * `NAME CLS:SIZE ...` (CLS one of fsubmx), from the PTX the link saw; NULL: none known */
    char *params;
    size_t params_size;
    char *info_log;
    char *error_log;
    fdl__diags diags;  /* NVRTC's, the checks' and the backend's diagnostics (diag.h) */
    /* logs replaced by newer ones, kept because an fdl_error may still borrow them */
    char **old_logs;
    size_t nold;
    double wall_ms;
    /* the cache (cache.c, linkcache.c) */
    fdl__cache_use cache;
    fdl_cache_result cache_result;
    char cache_key[33];
    int cache_warned;       /* the unusable directory was reported */
    size_t nvrtc_hits, nvrtc_compiled;
    size_t nvvm_hits, nvvm_compiled; /* bitcode inputs: from the cache, compiled by libNVVM */
    char *cache_dir;        /* owned copy of opts.cache_dir */
    char *cache_remote;     /* owned copy of opts.cache_remote */
    size_t nvjl_runs;         /* nvJitLink links run (checks included), for the tests */
    size_t nvjl_probes;       /* nvJitLinkCreate calls of the option probe, for the tests */
    size_t scans_put_off;   /* PTX inputs whose scan waited for the link to need it (tests) */
    struct {
        int server;         /* tokens were taken from a jobserver (rfd, wfd open) */
        int rfd, wfd;
        size_t ntokens;
        char tokens[256];   /* the bytes taken, given back as they were */
        int threads;        /* the split compile's threads for this run; 0: every processor */
        int taken;          /* tokens taken for the last run (reported by fdlink link -v) */
        int had_server;     /* the last run found a jobserver */
        int memory_bound;   /* the memory budget bounded the threads (jobs.c) */
    } jobs;                 /* the build's job slots (jobs.c) */
    int no_extended;         /* -split-compile-extended killed nvJitLink for this link before */
    fdl__cache_lease lease;  /* the key's lease while this link makes its entry (lease.c) */
    int lease_waited;        /* another process held the lease when this link missed (tests) */
    struct fdl__nvjl_ahead *ahead; /* the link's own run, started beside the checks (linknvjl.c) */
    size_t ahead_runs;      /* links started ahead of their checks, for the tests */
};

/* The outcome of one nvJitLink run. */
typedef struct fdl__nvjl_run {
    nvJitLinkResult r;
    const char *refused; /* the input the backend refused, if it was one */
    unsigned char *out;  /* cubin, or with ptx NUL-terminated PTX */
    size_t out_size;
    char *info;
    char *error;
    int signal;          /* the isolated link's child died of this signal (isolate.c) */
} fdl__nvjl_run;

/* ---- linkobj.c: the link object's helpers ---------------------------------------------------- */

/* The declaration of @p name in the first set that has one, or NULL. */
const fdl_decl *fdl__link_find_decl(const fdl_link *link, const char *name);
/* The prototypes header of every set (fdl_header_generate), one after the other. */
int fdl__link_decls_header(const fdl_link *link, char **out, fdl_error *err);
/* Non-zero when some unit of @p in contributes an image of @p kind. */
int fdl__link_chosen_kind(const fdl__link_input *in, fdl_input_kind kind);
/* Where @p name is referenced: an image or post-LTO module, with a position for PTX. */
int fdl__link_find_reference(const fdl_link *link, const char *name, const char **where,
                             unsigned *line, unsigned *column);

/* ---- linkopts.c: options --------------------------------------------------------------------- */

/* sm_NN, sm_NNa, sm_NNf into its number and suffix. @return 1, or 0 when not of that form */
int fdl__link_arch_parse(const char *arch, unsigned *number, char *suffix);
/* The options of any version, as the current one. @return FDL_OK, FDL_EINVAL */
int fdl__link_options_normalise(fdl_link_options *o, const fdl_link_options *in,
                                fdl_error *err);
/* The options on their own. @return FDL_OK, FDL_EINVAL, FDL_ELIMIT */
int fdl__link_options_validate(const fdl_link_options *o, fdl_error *err);

/*
 * The options only nvJitLink takes (the option table's), for a backend that takes none: the
 * first refusal whose options are set, "ftz, ... are nvJitLink options; not with BACKEND".
 */
int fdl__link_options_nvjl_only(const fdl_link_options *o, const char *backend, fdl_error *err);
/*
 * Option @p index (from 0) of list @p list ("extra", "xptxas", ...) within the bounds that
 * nvJitLink, NVRTC and ptxas survive (linkopts.c says how they were found); @p ptxas: the whole
 * text goes to ptxas. @return FDL_OK, FDL_ELIMIT
 */
int fdl__link_option_text_ok(const char *list, size_t index, const char *x, int ptxas,
                             fdl_error *err);
/* The option texts of NVRTC options @p o (extra, defines, include_dirs) within those bounds. */
int fdl__link_nvrtc_texts_ok(const fdl_nvrtc_options *o, fdl_error *err);
/* nvJitLink's options for this link: with @p lto "-lto", with @p ptx "-ptx" too. */
/* @p ptx: FDL__NVJL_CUBIN, FDL__NVJL_PTX (-ptx), or FDL__NVJL_VIEW (-ptx at -O0, the checks' view) */
enum { FDL__NVJL_CUBIN = 0, FDL__NVJL_PTX = 1, FDL__NVJL_VIEW = 2 };
int fdl__link_nvjl_options(const fdl_link *link, int lto, int ptx, fdl__strv *out);
/*
 * Whether fdlink chooses -split-compile-extended for this link (FDLINK_SPLIT_COMPILE_EXTENDED=1,
 * split_compile and split_compile_extended left to fdlink, LTO, a large link, isolation not
 * turned off, and not known to kill nvJitLink here): such a link runs isolated, and falls back
 * when the linker dies.
 */
int fdl__link_extended_auto(const fdl_link *link);
/* The threads of a split compile as the options ask: N, 0 every processor, 1 none. */
int fdl__link_split_threads(const fdl_link *link);

/* ---- jobs.c: the build's job slots ------------------------------------------------------------ */

/*
 * Take this link's split-compilation threads, at most @p want: from the jobserver of MAKEFLAGS
 * (one implicit slot and the tokens free now), else FDLINK_JOBS; either way at most the threads
 * that the memory budget holds (fdl__jobs_memory_threads); kept in link->jobs until
 * fdl__jobs_give_back. @return the threads (0: no bound, every processor)
 */
int fdl__jobs_take(fdl_link *link, int want);
/*
 * The split-compilation threads that the memory budget holds, 0 when no budget is known: the
 * budget (FDLINK_MEMORY_BUDGET, bytes or with K/M/G; else the least of /proc/meminfo's
 * MemAvailable and the cgroup v2 memory.max less memory.current, where set) over
 * FDL__THREAD_MEMORY plus @p code_bytes (the inputs) per thread; at least 1.
 */
int fdl__jobs_memory_threads(uint64_t code_bytes, uint64_t *budget);
#define FDL__THREAD_MEMORY ((uint64_t)256 << 20)
/* Give the jobserver's tokens back (nothing when none were taken). */
void fdl__jobs_give_back(fdl_link *link);

/* Job slots for links run side by side (fdl_links_complete, issue 40). */
typedef struct fdl__slots {
    int rfd, wfd;
    int server;          /* tokens may have been taken from a jobserver */
    size_t ntokens;
    char tokens[64];
} fdl__slots;

/*
 * Slots for at most @p want threads: @p jobs when > 0, else FDLINK_JOBS, bound them; under a
 * make or ninja jobserver, one slot of this process's own and the tokens free now (never waiting);
 * else the processors. @return the threads, at least 1; fdl__slots_give_back after.
 */
int fdl__slots_take(fdl__slots *s, int want, int jobs);
void fdl__slots_give_back(fdl__slots *s);

/* "compute_90a" for sm_90a. */
void fdl__link_virtual_arch(const fdl_link *link, char *out, size_t size);
/*
 * The NVRTC options every CUDA C compile of a link starts with, as nvcc would have them: the
 * virtual architecture, -rdc=true with @p rdc, -dlto with @p ltoir, the user's -I folders
 * (NULL-terminated, may be NULL), then with @p toolkit_includes the toolkit's (nvcc.profile's
 * order). 1, or 0 out of memory.
 */
int fdl__link_nvrtc_args(const fdl_link *link, int ltoir, const char *const *user_includes,
                         int toolkit_includes, int rdc, fdl__strv *args);
/* Whether the user's raw NVRTC options (NULL-terminated, may be NULL) ask for whole-program
 * code (-ewp, --extensible-whole-program, -rdc=false): then fdlink adds no -rdc=true, which
 * NVRTC refuses beside them (issue 34). */
int fdl__nvrtc_user_whole_program(const char *const *extra);

/* ---- linklog.c: logs ------------------------------------------------------------------------- */

/* Make @p text (owned, NULL for "") the link's info or error log, keeping the old one. */
int fdl__link_set_log(fdl_link *link, int info, char *text);
/*
 * The line of a backend log that says what went wrong, into @p out; the symbol it names (an
 * undefined reference, a multiple definition) into @p symbol. Both "" when the log says nothing.
 */
void fdl__link_log_headline(const char *log, char *out, size_t size, char *symbol,
                            size_t symsize);
/* Fill @p err from a failed run's log (made the link's error log, which err->log borrows). */
int fdl__link_backend_error(fdl_link *link, char *log, int code, const char *code_name,
                            const char *source, const char *what, char *symbol, size_t symsize,
                            fdl_error *err);

/*
 * The link's own nvJitLink run (the cubin, every input) started on a thread of its own while the
 * checks run on the calling thread (the declaration check of LTO-IR is a second nvJitLink run:
 * the two then cost one). The thread reads the link's inputs and options only; everything else
 * (logs, counters, errors) is done by whoever takes the run.
 * @return 1 started, 0 not (no thread: the backend then runs it as before)
 */
int fdl__nvjl_ahead_start(fdl_link *link);
/*
 * The run started ahead, once it is over: 1 with *run and the status it returned (err filled as
 * fdl__nvjl_link would have), 0 when none was started.
 */
int fdl__nvjl_ahead_take(fdl_link *link, fdl__nvjl_run *run, int *rc, fdl_error *err);
/* Wait for the run started ahead, if any, and drop it (a check failed; the link is destroyed). */
void fdl__nvjl_ahead_discard(fdl_link *link);

/* ---- isolate.c: the isolated link (fdl_link_options.isolate) ------------------------------- */

/* One nvJitLink run in this process, as fdl__nvjl_link without isolation. */
typedef int (*fdl__nvjl_link_fn)(const fdl_link *link, int lto, int ptx,
                               fdl__link_input *const *ins, size_t nins,
                               const unsigned char *extra, size_t extra_size, fdl__nvjl_run *run,
                               fdl_error *err);

/* Whether links with these options run isolated: o->isolate, or FDLINK_LINK_ISOLATE for -1. */
int fdl__isolate_wanted(const fdl_link_options *o);

/*
 * Run @p here in a child process (fork, no exec; see isolate.c for why) and bring its run back:
 * as @p here, and FDL_ELINK with run->signal when the child died by a signal (run->error then
 * holds what nvJitLink printed and a line saying so). What nvJitLink prints on stdout or stderr
 * is appended to run->error, never to the process's own. @return FDL_OK, FDL_ELINK, FDL_EIO
 * (no pipe, no fork), FDL_ENOMEM
 */
int fdl__isolate_nvjl_link(fdl__nvjl_link_fn here, const fdl_link *link, int lto, int ptx,
                         fdl__link_input *const *ins, size_t nins, const unsigned char *extra,
                         size_t extra_size, fdl__nvjl_run *run, fdl_error *err);

/*
 * The one-line error of a linker that died: "nvJitLink died of signal 11 (Segmentation fault)
 * linking a.ptx, b.cubin", FDL_ELINK; err->log stays NULL (the log stays with the link).
 */
int fdl__isolate_died_error(int sig, const char *linker, fdl__link_input *const *ins, size_t nins,
                            fdl_error *err);

/* ---- linknvjl.c: nvJitLink runs ---------------------------------------------------------------- */

/* Let nvJitLink refuse bad options at create time. @return FDL_OK, FDL_ELINK, FDL_ENOMEM */
int fdl__link_probe(fdl_link *link, fdl_error *err);
/*
 * Link @p nins inputs (plus @p extra LTO-IR of @p extra_size bytes when not NULL) with nvJitLink.
 * @return FDL_OK; FDL_ELINK with run->r, run->refused and the logs; FDL_ENOMEM
 */
int fdl__nvjl_link(const fdl_link *link, int lto, int ptx, fdl__link_input *const *ins, size_t nins,
                 const unsigned char *extra, size_t extra_size, fdl__nvjl_run *run, fdl_error *err);
void fdl__nvjl_run_free(fdl__nvjl_run *run);

/* ---- partition.c: the partitioned link of a large LTO program (issue 41) ----------------- */

/* The fewest kernels a partitioned link has, and its groups (a fixed number: never the jobs). */
#define FDL__PARTITION_KERNELS 16
#define FDL__PARTITION_GROUPS 16
/* fdl__partition_link's "not partitioned": the ordinary link runs */
#define FDL__PARTITION_NO 1
/* Whether a link of @p ins is partitioned: LTO-IR only, large (fdl__link_split_threads 0), no
 * split, -kernels-used, -variables-used, -g or -lineinfo of the caller's, FDLINK_PARTITION not 0. */
int fdl__partition_wanted(const fdl_link *link, fdl__link_input *const *ins, size_t nins);
/* The partitioned link into @p run; FDL__PARTITION_NO (nothing partitioned: fewer kernels, a
 * run that failed, PTX the merge does not place), FDL_ENOMEM. */
int fdl__partition_link(const fdl_link *link, fdl__link_input *const *ins, size_t nins,
                        fdl__nvjl_run *run, fdl_error *err);

/* ---- linkcache.c: the cache of links and checks, the entries of compiles ------------------ */

/*
 * The link's conversation with its cache, begun after devrt was added and before the checks:
 * look the link up and, on a miss, take the key's lease (lease.c), waiting while another process
 * links the same key. *hit = 1 when the entry was there or came back from that process: the
 * link then holds its cubin, PTX, logs and LTO decision and is complete; *hit = 0 to link (with
 * the lease, when one could be had). A miss while warm is required (fdl__link_warm_required) is
 * fdl__link_cold's FDL_ENOTFOUND, before any lease. Whatever it returns, fdl__link_cache_end
 * closes the conversation.
 */
int fdl__link_cache_begin(fdl_link *link, int *hit, fdl_error *err);
/*
 * The conversation's end: @p rc FDL_OK (the link completed) stores a miss's result under the key
 * that fdl__link_cache_begin computed; any @p rc gives up the lease, if one is held (after the
 * store: a waiter finds the entry). With a failure status after an end (fdl_link_destroy's
 * safety net) it does nothing.
 */
void fdl__link_cache_end(fdl_link *link, int rc);

/* Whether every step must come from the cache (require_warm, else FDLINK_REQUIRE_WARM). */
int fdl__link_warm_required(const fdl_link *link);
/*
 * The error of a step that missed the cache while warm is required: FDL_ENOTFOUND, "cache miss:
 * WHAT of SOURCE (or the link's inputs) for ARCH (key HEX) is not in the cache, and
 * FDLINK_REQUIRE_WARM forbids making it" (another line when @p key_hex is "" or NULL: no cache).
 */
int fdl__link_cold(fdl_link *link, const char *what, const char *source, const char *key_hex,
                   fdl_error *err);
/*
 * Before a link with fdl__link_extended_auto: when -split-compile-extended killed nvJitLink on
 * this link before (memo in the cache directory, or in this process), set link->no_extended.
 */
void fdl__link_extended_recall(fdl_link *link);
/* -split-compile-extended killed nvJitLink (@p sig): remembered, said once, no_extended set. */
void fdl__link_extended_failed(fdl_link *link, int sig);
/*
 * An entry's payload checked as what it stands for (an fdl__cache_payload_fn, cacheint.h): a
 * link's cubin validated whole as any input cubin is (fdl__elf_check) and a CUDA ELF, its flags
 * and PTX as said; an NVRTC compile's output PTX, LTO-IR or a valid cubin; a check's PTX present.
 * Thread-safety: safe.
 */
const char *fdl__cache_payload_problem(uint32_t kind, const fdl__cache_sections *s);
/*
 * A compile's entry (NVRTC's or libNVVM's, @p kind FDL__CACHE_NVRTC or FDL__CACHE_NVVM, under
 * @p key): two sections, the output and the log. On a hit, *out (its size in *out_size) and *log
 * (NUL-terminated, possibly empty) are owned copies. @return 1 hit, 0 miss (or out of memory)
 */
int fdl__link_compile_get(fdl_link *link, uint32_t kind, const unsigned char *key,
                          unsigned char **out, size_t *out_size, char **log);
/* Store a compile's output and log (NULL: none) as fdl__link_compile_get reads them. */
void fdl__link_compile_put(fdl_link *link, uint32_t kind, const unsigned char *key,
                           const unsigned char *out, size_t out_size, const char *log);

/*
 * The key of a declaration check's post-LTO link of @p ins with @p keep (the keeper LTO-IR, may
 * be NULL); 0 when the cache is off or no key can be made.
 */
int fdl__link_check_key(fdl_link *link, fdl__link_input *const *ins, size_t n,
                        const unsigned char *keep, size_t keep_size,
                        unsigned char key[FDL__CACHE_KEY_SIZE]);
/* Report the cache warning, once, through the diagnostic callback. */
void fdl__link_cache_warn(fdl_link *link);
/*
 * Load nvJitLink for a link whose version came from the memo (link->nv NULL), and take its own
 * version (its memo kept in memory: fdl__link_memos_write writes it).
 * @return FDL_OK; FDL_ENOLIB as fdl_link_create reported it before the memo
 */
int fdl__link_need_nv(fdl_link *link, fdl_error *err);
/*
 * After a successful probe: memo that this library accepts the link's options, in this process
 * (a process memo, cacheint.h), and for the cache directory (when the cache is on), where
 * fdl__link_memos_write puts it.
 */
void fdl__link_probe_remember(fdl_link *link);
/*
 * Write the memos this link has learnt into its cache directory: nvJitLink's version
 * (libmemo.h) and the options it accepted. Called where the link uses the cache (its lookup, a
 * check's or a compile's lookup); creating a link and asking for a key write nothing.
 */
void fdl__link_memos_write(fdl_link *link);
/* A memo (this process's, or the cache directory's) says this library accepted the options. */
int fdl__link_probe_known(fdl_link *link);
/*
 * A process memo says that fdl_ptx_scan accepted @p in's bytes (PTX) before, so that its scan
 * can wait for the link to need it (none does on a cache hit).
 */
int fdl__link_scan_known(const fdl__link_input *in);
/* After a scan of @p in's bytes succeeded: remember it in this process. */
void fdl__link_scan_remember(const fdl__link_input *in);

/* ---- compilecache.c: the caches of NVRTC and libNVVM compiles ------------------------------ */

/*
 * The NVRTC output of a CUDA C input from the cache, or compile it and store it: as
 * fdl__nvrtc_compile, with the link's cache counters updated.
 */
int fdl__link_nvrtc_cached(fdl_link *link, unsigned char **out, size_t *out_size, char **log,
                           const char *source, size_t size, const char *name,
                           const char *const *options, const fdl__nvrtc_header *headers,
                           size_t nheaders, int ltoir, fdl_error *err);
/*
 * The libNVVM output of a bitcode input from the cache, or compile it and store it: as
 * fdl__nvvm_compile, with the link's counters (nvvm_hits, nvvm_compiled) updated.
 */
int fdl__link_nvvm_cached(fdl_link *link, unsigned char **out, size_t *out_size, char **log,
                          const unsigned char *bc, size_t size, const char *name,
                          const char *arch, int ltoir, fdl_error *err);

/* ---- the interfaces of checks and backends ----------------------------------------------- */

/*
 * A check, run by fdl_link_complete once the inputs are prepared (LTO decided, an image chosen
 * for every unit) and before the backend. One that does not apply to a link returns FDL_OK.
 * @return FDL_OK, or what it found (err filled; diagnostics through the link's callback)
 */
typedef struct fdl__link_check {
    const char *name;
    int (*run)(fdl_link *link, fdl_error *err);
} fdl__link_check;

/* A backend: links the prepared inputs into link->cubin (and link->ptx), its logs kept. */
typedef struct fdl__link_backend_ops {
    fdl_link_backend id;
    int lto; /* links LTO-IR (else LTO is off whatever the options say) */
    /* what it cannot take of the options, said at create time; NULL: it takes them all */
    int (*options)(const fdl_link_options *opts, fdl_error *err);
    /* what must hold on the calling thread when the link completes; NULL: nothing */
    int (*ready)(fdl_error *err);
    int (*run)(fdl_link *link, fdl_error *err);
} fdl__link_backend_ops;

#endif /* FDLINK_LINKOBJ_H */
