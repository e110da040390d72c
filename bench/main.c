/*
 * fdlink-bench: the benchmark suite of issue 7 (see bench.h and bench/README.md).
 *
 * usage: fdlink-bench [--quick] [--only LIST] [--skip LIST] [--reps N] [--launches N]
 *                     [--json FILE] [--markdown FILE] [--png FILE] [--no-files] [--check]
 *   LIST: benchmark ids or numbers, comma-separated: foreign (1), memory (2), launch (3),
 *         link (4), scaling (5), ttfr (6), cache (7)
 *   --quick      short runs (the ctest entry): fewer samples, smaller problems
 *   --reps N     samples per figure for every benchmark (default: each benchmark's own)
 *   --launches N launches per sample of benchmark 3 (default 100000; quick 2000)
 *   --json, --markdown, --png  output files (default bench-results.json, bench-results.md,
 *                bench-results.png in the current directory; the PNG only with gnuplot)
 *   --no-files   print the table only
 *   --check      exit 1 when a goal is missed
 * Exit status: 0 every selected benchmark ran and verified its results (or was skipped),
 * 1 a benchmark failed (or, with --check, a goal was missed), 2 usage, 77 all were skipped.
 * Without a GPU the GPU benchmarks (1, 2, 3, 6) are skipped; 4 and 5 need only nvJitLink; 7
 * runs without a GPU but for its time-to-first-result part.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "internal.h"

typedef struct section_def {
    const char *id;
    const char *title;
    int needs_gpu;
    void (*run)(bench_ctx *ctx, bench_section *s);
} section_def;

static const section_def defs[] = {
    {"foreign", "Foreign call, compute-bound", 1, bench_foreign},
    {"memory", "Foreign call, memory-bound", 1, bench_memory},
    {"launch", "Launch cost", 1, bench_launch},
    {"link", "Link cost", 0, bench_link},
    {"scaling", "Scaling with the number of functions", 0, bench_scaling},
    {"ttfr", "Time to first result", 1, bench_ttfr},
    {"cache", "Link cache", 0, bench_cache},
};
#define NSECTIONS (sizeof defs / sizeof defs[0])

static int usage(void)
{
    fprintf(stderr,
            "usage: fdlink-bench [--quick] [--only LIST] [--skip LIST] [--reps N] "
            "[--launches N]\n"
            "                    [--json FILE] [--markdown FILE] [--png FILE] [--no-files] "
            "[--check]\n"
            "  LIST: comma-separated ids or numbers: foreign (1), memory (2), launch (3), "
            "link (4), scaling (5), ttfr (6), cache (7)\n");
    return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

/* Mark (value 1) or unmark (0) the sections named in @p list; 0 on an unknown name. */
static int select_sections(int *selected, const char *list, int value)
{
    const char *p = list;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int found = 0;
        for (size_t i = 0; i < NSECTIONS; i++) {
            char number[8];
            snprintf(number, sizeof number, "%zu", i + 1);
            if ((strlen(defs[i].id) == len && strncmp(defs[i].id, p, len) == 0) ||
                (strlen(number) == len && strncmp(number, p, len) == 0)) {
                selected[i] = value;
                found = 1;
            }
        }
        if (!found) {
            fprintf(stderr, "fdlink-bench: unknown benchmark '%.*s'\n", (int)len, p);
            return 0;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    return 1;
}

static void read_cpu(bench_env *e)
{
    fdl__strlcpy(e->cpu, "unknown CPU", sizeof e->cpu);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "model name", 10) != 0)
                continue;
            const char *colon = strchr(line, ':');
            if (!colon)
                continue;
            colon++;
            while (*colon == ' ' || *colon == '\t')
                colon++;
            fdl__strlcpy(e->cpu, colon, sizeof e->cpu);
            e->cpu[strcspn(e->cpu, "\n")] = '\0';
            break;
        }
        fclose(f);
    }
    e->cpus = sysconf(_SC_NPROCESSORS_ONLN);
}

static void read_env(bench_ctx *ctx)
{
    bench_env *e = &ctx->env;
    struct utsname u;
    memset(&u, 0, sizeof u);
    if (uname(&u) == 0) {
        fdl__strlcpy(e->host, u.nodename, sizeof e->host);
        fdl__strlcpy(e->os, u.sysname, sizeof e->os);
        fdl__strlcpy(e->release, u.release, sizeof e->release);
    }
    read_cpu(e);
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(e->date, sizeof e->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fdl_error err = FDL_ERROR_INIT;
    if (fdl_link_backend_version(&e->nvjitlink_major, &e->nvjitlink_minor, &err) == FDL_OK) {
        e->have_nvjitlink = 1;
        if (bench_nvjitlink_path(e->nvjitlink_path, sizeof e->nvjitlink_path) != 0)
            fdl__strlcpy(e->nvjitlink_path, "?", sizeof e->nvjitlink_path);
    }
}

/* Open the GPU for benchmarks 1-3 (and learn whether there is one for 6). */
static void open_gpu(bench_ctx *ctx)
{
    bench_env *e = &ctx->env;
    fdl_error err = FDL_ERROR_INIT;
    int count = 0;
    if (fdl_device_count(&count, &err) != FDL_OK ||
        fdl_device_open(&ctx->dev, -1, &err) != FDL_OK) {
        fdl__strlcpy(e->no_gpu, err.message, sizeof e->no_gpu);
        return;
    }
    fdl_device_info info;
    if (fdl_device_get_info(ctx->dev, &info, &err) != FDL_OK) {
        fdl__strlcpy(e->no_gpu, err.message, sizeof e->no_gpu);
        fdl_device_destroy(ctx->dev);
        ctx->dev = NULL;
        return;
    }
    e->have_gpu = 1;
    fdl__strlcpy(e->gpu, info.name, sizeof e->gpu);
    fdl__strlcpy(e->arch, info.arch, sizeof e->arch);
    e->cc = info.cc;
    e->sm_count = info.sm_count;
    e->driver = info.driver_version;
    e->gpu_memory = info.total_memory;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--child-link") == 0)
        return bench_link_child(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "--child-cache") == 0)
        return bench_cache_child(argc, argv);

    static bench_ctx ctx;
    static bench_section sections[NSECTIONS];
    const char *json = "bench-results.json", *markdown = "bench-results.md",
               *png = "bench-results.png";
    int selected[NSECTIONS], check = 0, files = 1;
    for (size_t i = 0; i < NSECTIONS; i++)
        selected[i] = 1;
    int only_seen = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--quick") == 0) {
            ctx.quick = 1;
        } else if (strcmp(a, "--check") == 0) {
            check = 1;
        } else if (strcmp(a, "--no-files") == 0) {
            files = 0;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage();
            return 0;
        } else if (i + 1 >= argc) {
            return usage();
        } else if (strcmp(a, "--only") == 0) {
            if (!only_seen)
                for (size_t k = 0; k < NSECTIONS; k++)
                    selected[k] = 0;
            only_seen = 1;
            if (!select_sections(selected, argv[++i], 1))
                return usage();
        } else if (strcmp(a, "--skip") == 0) {
            if (!select_sections(selected, argv[++i], 0))
                return usage();
        } else if (strcmp(a, "--reps") == 0 && parse_long(argv[i + 1], 1, 1000, &ctx.reps)) {
            i++;
        } else if (strcmp(a, "--launches") == 0 &&
                   parse_long(argv[i + 1], 1, 100000000, &ctx.launches)) {
            i++;
        } else if (strcmp(a, "--json") == 0) {
            json = argv[++i];
        } else if (strcmp(a, "--markdown") == 0) {
            markdown = argv[++i];
        } else if (strcmp(a, "--png") == 0) {
            png = argv[++i];
        } else {
            return usage();
        }
    }

    /* the children this program spawns are this program: the path of the running image */
    static char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len > 0)
        self[len] = '\0';
    else
        fdl__strlcpy(self, argv[0], sizeof self);
    ctx.self = self;

    read_env(&ctx);
    int any_gpu = 0;
    for (size_t i = 0; i < NSECTIONS; i++)
        any_gpu |= selected[i] && defs[i].needs_gpu;
    if (any_gpu)
        open_gpu(&ctx);
    else
        fdl__strlcpy(ctx.env.no_gpu, "not opened: no GPU benchmark selected",
                     sizeof ctx.env.no_gpu);

    for (size_t i = 0; i < NSECTIONS; i++) {
        bench_section *s = &sections[i];
        s->id = defs[i].id;
        s->number = (int)i + 1;
        s->title = defs[i].title;
        s->needs_gpu = defs[i].needs_gpu;
        if (!selected[i])
            continue;
        /* benchmarks 4-6 measure processes and the linker: no context of ours around */
        if (!defs[i].needs_gpu || strcmp(defs[i].id, "ttfr") == 0) {
            fdl_device_destroy(ctx.dev);
            ctx.dev = NULL;
        }
        if (defs[i].needs_gpu && !ctx.env.have_gpu) {
            bench_skip(s, "no GPU");
            fprintf(stderr, "fdlink-bench: [%d] %s: skipped\n", s->number, s->title);
            continue;
        }
        fprintf(stderr, "fdlink-bench: [%d] %s ...\n", s->number, s->title);
        double t0 = bench_now_ms();
        defs[i].run(&ctx, s);
        s->seconds = (bench_now_ms() - t0) / 1e3;
        if (s->status == BENCH_NOT_RUN)
            bench_fail(s, "the benchmark reported nothing");
        if (s->status == BENCH_OK && !s->verified)
            bench_fail(s, "the results were not verified");
        fprintf(stderr, "fdlink-bench: [%d] %s: %s%s%s (%.1f s)\n", s->number, s->title,
                s->status == BENCH_OK ? "ok" : s->status == BENCH_SKIPPED ? "skipped" : "failed",
                s->status == BENCH_OK ? "" : ": ", s->status == BENCH_OK ? "" : s->reason,
                s->seconds);
    }
    fdl_device_destroy(ctx.dev);
    ctx.dev = NULL;

    bench_print(stdout, &ctx, sections, NSECTIONS);
    int status = 0;
    if (files) {
        if (bench_write_json(json, &ctx, sections, NSECTIONS) != 0) {
            fprintf(stderr, "fdlink-bench: error: cannot write %s: %s\n", json, strerror(errno));
            status = 1;
        }
        if (bench_write_markdown(markdown, &ctx, sections, NSECTIONS) != 0) {
            fprintf(stderr, "fdlink-bench: error: cannot write %s: %s\n", markdown,
                    strerror(errno));
            status = 1;
        }
        char why[512];
        int drawn = bench_draw_png(png, &ctx, sections, NSECTIONS, why, sizeof why);
        if (drawn < 0) {
            fprintf(stderr, "fdlink-bench: error: the PNG: %s\n", why);
            status = 1;
        }
        if (drawn > 0)
            printf("wrote %s, %s, %s\n", json, markdown, png);
        else
            printf("wrote %s, %s (no PNG: %s)\n", json, markdown, why);
    }

    int ran = 0, failed = 0, missed = 0;
    for (size_t i = 0; i < NSECTIONS; i++) {
        const bench_section *s = &sections[i];
        ran += s->status == BENCH_OK || s->status == BENCH_FAILED;
        failed += s->status == BENCH_FAILED;
        for (size_t j = 0; j < s->nratios; j++)
            missed += s->ratios[j].goal != BENCH_GOAL_NONE && !s->ratios[j].met;
    }
    for (size_t i = 0; i < NSECTIONS; i++)
        bench_section_free(&sections[i]);
    if (failed || status)
        return 1;
    if (check && missed)
        return 1;
    return ran ? 0 : FDL_EXIT_SKIP;
}
