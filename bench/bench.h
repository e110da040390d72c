/*
 * fdlink-bench: the benchmark suite of issue 7 (internal to bench/). One runner, six sections:
 *
 *   1 foreign  foreign call cost, compute-bound: PTX-linked call, LTO-linked call, inline code
 *   2 memory   foreign call cost, memory-bound: multiply_vectors (LTO) against a device copy
 *   3 launch   launch cost: prepared and checked launches against raw cuLaunchKernel
 *   4 link     link cost: fdlink against direct nvJitLink calls, first link and later links
 *   5 scaling  link and signature-check time for 1 .. 4096 generated foreign functions
 *   6 ttfr     time to first result: embedded cubin against PTX linked at run time
 *   7 cache    the link cache: first link against disk and memory hits, warm ttfr, NVRTC
 *   8 generated  generated kernels (fdlink/gen.h): a map and a float32 sum against the copy,
 *              and against CuPy's sum (issue 14)
 *
 * Every section warms up, repeats, measures its baseline in the same process, verifies what it
 * ran, and records figures (with every sample) and ratios (with their goals) in a
 * bench_section. The runner (main.c) prints them and writes JSON, Markdown and a PNG (report.c).
 */
#ifndef FDLINK_BENCH_H
#define FDLINK_BENCH_H

#include <stddef.h>
#include <stdio.h>

#include "fdlink/fdlink.h"
#include "fdlink/host.h"
#include "fdlink/link.h"
#include "fdlink/verify.h"

#if defined(__GNUC__)
#  define BENCH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define BENCH_PRINTF(f, a)
#endif

#define BENCH_MAX_FIGURES 48
#define BENCH_MAX_RATIOS 16
#define BENCH_MAX_NOTES 16
#define BENCH_NOTE_MAX 320

/* Median and spread of a set of samples. */
typedef struct bench_stats {
    double median, min, max;
    double q1, q3; /* quartiles (linear interpolation); IQR = q3 - q1 */
    size_t n;
} bench_stats;

/* One measured (or derived) figure. */
typedef struct bench_figure {
    char name[96];
    char unit[16];
    bench_stats st;
    double *samples;   /* owned copy, in measurement order; NULL for a derived figure */
    int derived;       /* computed from other figures: only st.median is meaningful */
    char series[24];   /* for plots: the curve it belongs to ("" for none) */
    double x;          /* for plots: its abscissa (e.g. the number of functions) */
} bench_figure;

typedef enum bench_goal {
    BENCH_GOAL_NONE = 0, /* informative */
    BENCH_GOAL_LE,       /* median <= value */
    BENCH_GOAL_GE        /* median >= value */
} bench_goal;

/* A ratio of two figures, taken sample by sample (paired samples of one repetition). */
typedef struct bench_ratio {
    char name[96];
    bench_stats st;
    bench_goal goal;
    double goal_value;
    int met;
} bench_ratio;

typedef enum bench_status {
    BENCH_NOT_RUN = 0,
    BENCH_OK,
    BENCH_SKIPPED,
    BENCH_FAILED
} bench_status;

typedef struct bench_section {
    const char *id;    /* "foreign", "memory", ... */
    int number;        /* 1..6, as in issue 7 */
    const char *title;
    int needs_gpu;
    bench_status status;
    char reason[768];  /* why it was skipped or failed */
    int verified;      /* every result of the section was checked and correct */
    double seconds;    /* wall time of the section */
    size_t nfigures, nratios, nnotes;
    bench_figure figures[BENCH_MAX_FIGURES];
    bench_ratio ratios[BENCH_MAX_RATIOS];
    char notes[BENCH_MAX_NOTES][BENCH_NOTE_MAX];
} bench_section;

/* Where the suite ran. */
typedef struct bench_env {
    char host[256], os[64], release[128], cpu[256];
    long cpus;
    int have_gpu;
    char no_gpu[512];  /* why there is no GPU */
    char gpu[256], arch[16];
    int cc, sm_count, driver;
    size_t gpu_memory;
    int have_nvjitlink;
    unsigned nvjitlink_major, nvjitlink_minor;
    char nvjitlink_path[512];
    char date[32];
} bench_env;

/* What the sections share. */
typedef struct bench_ctx {
    int quick;         /* shortened runs (ctest) */
    long reps;         /* samples per figure; 0: each section's default */
    long launches;     /* launches per sample of section 3; 0: default */
    const char *self;  /* this program, for child processes */
    fdl_device *dev;   /* the GPU (NULL without one) */
    bench_env env;
} bench_ctx;

/* ---- statistics and records (stats.c) ------------------------------------------------------- */

bench_stats bench_summarise(const double *samples, size_t n);

/* Add a figure with a copy of its samples; NULL (and the section failed) when full. */
bench_figure *bench_figure_add(bench_section *s, const char *name, const char *unit,
                               const double *samples, size_t n);
/* Add a figure computed from others (one value). */
bench_figure *bench_figure_derived(bench_section *s, const char *name, const char *unit,
                                   double value);
/* Add the ratio num[i] / den[i] over @p n paired samples, with its goal. */
bench_ratio *bench_ratio_add(bench_section *s, const char *name, const double *num,
                             const double *den, size_t n, bench_goal goal, double goal_value);
void bench_note(bench_section *s, const char *fmt, ...) BENCH_PRINTF(2, 3);
/* Mark the section failed with a reason; returns 1 (for `return bench_fail(...)`). */
int bench_fail(bench_section *s, const char *fmt, ...) BENCH_PRINTF(2, 3);
/* Mark the section failed with "what: <formatted error>"; returns 1. */
int bench_fail_err(bench_section *s, const char *what, const fdl_error *err);
void bench_skip(bench_section *s, const char *fmt, ...) BENCH_PRINTF(2, 3);
void bench_section_free(bench_section *s);

/* Monotonic clock, milliseconds. */
double bench_now_ms(void);
/* Samples per figure: ctx->reps when given, else @p quick or @p full. */
size_t bench_reps(const bench_ctx *ctx, size_t quick, size_t full);
/* A deterministic pseudo-random stream (xorshift32). */
unsigned bench_rand(unsigned *state);
/* Read a whole file (malloc'ed, NUL-terminated); 0 on success, else fails the section. */
int bench_read(bench_section *s, const char *path, char **data, size_t *size);
/* Load a cubin into the device (named @p name), failing the section on error. */
int bench_load(bench_section *s, fdl_module **mod, fdl_device *dev, const fdl_link *link,
               const char *name);

/*
 * Run the program @p argv[0] (a path) with @p argv, in this process's environment plus the
 * "NAME=VALUE" strings of @p env (NULL-terminated, may be NULL), to completion; its stdout and
 * stderr are captured in @p out (truncated, NUL-terminated). @p wall_ms receives the wall time
 * from before the spawn to the reaping of the child. Returns 0 when it ran (*exit_status: its
 * exit status, or 128 + the signal that ended it), -1 when it could not be started (@p out
 * then says why).
 */
int bench_run_process(char *const argv[], const char *const *env, char *out, size_t out_size,
                      int *exit_status, double *wall_ms);

/* ---- GPU timing (stats.c) --------------------------------------------------------------------- */

/* One unit of GPU work, queued on the default stream. */
typedef int (*bench_work_fn)(void *arg, fdl_error *err);

/*
 * Queue @p reps units of work between two events on the default stream and return the GPU time
 * per unit, in milliseconds (from the events).
 */
int bench_time_gpu(fdl_event *start, fdl_event *end, bench_work_fn fn, void *arg, long reps,
                   double *ms, fdl_error *err);

/* Units of work that last about @p target_ms together, given one lasts @p one_ms (1..max). */
long bench_reps_for(double one_ms, double target_ms, long max);

/* ---- sections --------------------------------------------------------------------------------- */

void bench_foreign(bench_ctx *ctx, bench_section *s);
void bench_memory(bench_ctx *ctx, bench_section *s);
void bench_launch(bench_ctx *ctx, bench_section *s);
void bench_link(bench_ctx *ctx, bench_section *s);
void bench_scaling(bench_ctx *ctx, bench_section *s);
void bench_ttfr(bench_ctx *ctx, bench_section *s);

/*
 * Run one of benchmark 6's programs (@p program, a path) with the extra environment @p env:
 * 0 when it exited 0 having verified its result (*wall: process start to exit, *inner: main()
 * to the verified result, both ms), FDL_EXIT_SKIP without a GPU (@p why, when not NULL, gets
 * the program's line saying so), else 1 (@p s failed, saying why).
 */
int bench_ttfr_run(bench_section *s, const char *program, const char *const *env, double *wall,
                   double *inner, char *why, size_t why_size);
void bench_cache(bench_ctx *ctx, bench_section *s);

/*
 * Benchmark 7's rows of the cache across machines (remotecache.c): remote hits from Redis and
 * HTTP servers, time to first result from a warm remote and after a bundle import. @p tmp is
 * the section's temporary folder, @p ref_hash the uncached cubin's hash. 0 done (rows whose
 * server or GPU is missing are skipped with a note), 1 the section failed.
 */
int bench_cache_remote(bench_ctx *ctx, bench_section *s, const char *tmp, uint64_t ref_hash);

/* `fdlink-bench --child-cache link|nvrtc DIR`: one cached link or compile (linkcache.c). */
int bench_cache_child(int argc, char **argv);
void bench_generated(bench_ctx *ctx, bench_section *s);

/* The file nvJitLink is loaded from (as the raw baseline opens it); 0 found, -1 not. */
int bench_nvjitlink_path(char *out, size_t size);

/* `fdlink-bench --child-link KIND METHOD`: one first link in a fresh process (linkcost.c). */
int bench_link_child(int argc, char **argv);

/* ---- output (report.c) ------------------------------------------------------------------------ */

void bench_print(FILE *f, const bench_ctx *ctx, const bench_section *s, size_t n);
int bench_write_json(const char *path, const bench_ctx *ctx, const bench_section *s, size_t n);
int bench_write_markdown(const char *path, const bench_ctx *ctx, const bench_section *s,
                         size_t n);
/* Draw the PNG with gnuplot; 1 drawn, 0 gnuplot missing or nothing to draw, -1 error. */
int bench_draw_png(const char *path, const bench_ctx *ctx, const bench_section *s, size_t n,
                   char *why, size_t why_size);

#endif /* FDLINK_BENCH_H */
