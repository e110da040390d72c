/* fdlink-bench: the table on stdout, the JSON and Markdown files, and the PNG (gnuplot). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "bench.h"
#include "internal.h"

static const char *status_name(bench_status st)
{
    switch (st) {
    case BENCH_OK: return "ok";
    case BENCH_SKIPPED: return "skipped";
    case BENCH_FAILED: return "failed";
    case BENCH_NOT_RUN: break;
    }
    return "not run";
}

/* A number with about four significant digits, never in exponent form for usual values. */
static const char *num(char *buf, size_t size, double v)
{
    double a = fabs(v);
    if (!isfinite(v))
        snprintf(buf, size, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    else if (a >= 1000)
        snprintf(buf, size, "%.0f", v);
    else if (a >= 100)
        snprintf(buf, size, "%.1f", v);
    else if (a >= 10)
        snprintf(buf, size, "%.2f", v);
    else if (a >= 1 || a == 0)
        snprintf(buf, size, "%.3f", v);
    else if (a >= 0.001)
        snprintf(buf, size, "%.4f", v);
    else
        snprintf(buf, size, "%.3g", v);
    return buf;
}

static const char *goal_text(char *buf, size_t size, const bench_ratio *r, int unicode)
{
    char v[32];
    if (r->goal == BENCH_GOAL_NONE)
        snprintf(buf, size, "-");
    else
        snprintf(buf, size, "%s %s",
                 r->goal == BENCH_GOAL_LE ? (unicode ? "≤" : "<=") : (unicode ? "≥" : ">="),
                 num(v, sizeof v, r->goal_value));
    return buf;
}

static void describe_gpu(char *buf, size_t size, const bench_env *e)
{
    if (e->have_gpu)
        snprintf(buf, size, "%s (%s, %d SMs, %.0f GiB), driver %d.%d", e->gpu, e->arch,
                 e->sm_count, (double)e->gpu_memory / (1024.0 * 1024.0 * 1024.0),
                 e->driver / 1000, e->driver % 1000 / 10);
    else
        snprintf(buf, size, "none (%s)", e->no_gpu);
}

static void describe_tools(char *buf, size_t size, const bench_env *e)
{
    if (e->have_nvjitlink)
        snprintf(buf, size, "CUDA toolkit %s (headers %d.%d), nvJitLink %u.%u",
                 FDL_BENCH_TOOLKIT_VERSION, CUDA_VERSION / 1000,
                 CUDA_VERSION % 1000 / 10, e->nvjitlink_major, e->nvjitlink_minor);
    else
        snprintf(buf, size, "CUDA toolkit %s (headers %d.%d), nvJitLink not found",
                 FDL_BENCH_TOOLKIT_VERSION, CUDA_VERSION / 1000,
                 CUDA_VERSION % 1000 / 10);
}

/* ---- the table --------------------------------------------------------------------------------- */

void bench_print(FILE *f, const bench_ctx *ctx, const bench_section *s, size_t n)
{
    char gpu[1024], tools[256];
    describe_gpu(gpu, sizeof gpu, &ctx->env);
    describe_tools(tools, sizeof tools, &ctx->env);
    fprintf(f, "fdlink-bench %s%s, %s\n", FDLINK_VERSION_STRING, ctx->quick ? " (quick)" : "",
            ctx->env.date);
    fprintf(f, "  GPU:     %s\n  tools:   %s\n  host:    %s, %s (%ld CPUs), %s %s\n", gpu, tools,
            ctx->env.host, ctx->env.cpu, ctx->env.cpus, ctx->env.os, ctx->env.release);
    size_t goals = 0, met = 0;
    for (size_t i = 0; i < n; i++) {
        const bench_section *sec = &s[i];
        if (sec->status == BENCH_NOT_RUN)
            continue;
        fprintf(f, "\n[%d] %s: %s", sec->number, sec->title, status_name(sec->status));
        if (sec->status == BENCH_OK)
            fprintf(f, "%s (%.1f s)\n", sec->verified ? ", verified" : ", NOT verified",
                    sec->seconds);
        else
            fprintf(f, ": %s\n", sec->reason);
        if (sec->nfigures) {
            fprintf(f, "    %-58s %10s %10s %10s %10s  %s\n", "figure", "median", "min", "max",
                    "IQR", "unit");
            for (size_t j = 0; j < sec->nfigures; j++) {
                const bench_figure *fg = &sec->figures[j];
                char a[32], b[32], c[32], d[32];
                if (fg->derived)
                    fprintf(f, "    %-58s %10s %10s %10s %10s  %s\n", fg->name,
                            num(a, sizeof a, fg->st.median), "", "", "", fg->unit);
                else
                    fprintf(f, "    %-58s %10s %10s %10s %10s  %s\n", fg->name,
                            num(a, sizeof a, fg->st.median), num(b, sizeof b, fg->st.min),
                            num(c, sizeof c, fg->st.max),
                            num(d, sizeof d, fg->st.q3 - fg->st.q1), fg->unit);
            }
        }
        if (sec->nratios) {
            fprintf(f, "    %-58s %10s %10s %10s  %-9s %s\n", "ratio", "median", "min", "max",
                    "goal", "");
            for (size_t j = 0; j < sec->nratios; j++) {
                const bench_ratio *r = &sec->ratios[j];
                char a[32], b[32], c[32], g[32];
                fprintf(f, "    %-58s %10s %10s %10s  %-9s %s\n", r->name,
                        num(a, sizeof a, r->st.median), num(b, sizeof b, r->st.min),
                        num(c, sizeof c, r->st.max), goal_text(g, sizeof g, r, 0),
                        r->goal == BENCH_GOAL_NONE ? "" : r->met ? "met" : "MISSED");
                if (r->goal != BENCH_GOAL_NONE) {
                    goals++;
                    met += r->met != 0;
                }
            }
        }
        for (size_t j = 0; j < sec->nnotes; j++)
            fprintf(f, "    - %s\n", sec->notes[j]);
    }
    fprintf(f, "\ngoals: %zu of %zu met\n", met, goals);
}

/* ---- JSON ------------------------------------------------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void json_number(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fputs("null", f);
}

static void json_stats(FILE *f, const bench_stats *st)
{
    fputs("\"median\": ", f);
    json_number(f, st->median);
    fputs(", \"min\": ", f);
    json_number(f, st->min);
    fputs(", \"max\": ", f);
    json_number(f, st->max);
    fputs(", \"q1\": ", f);
    json_number(f, st->q1);
    fputs(", \"q3\": ", f);
    json_number(f, st->q3);
    fprintf(f, ", \"n\": %zu", st->n);
}

int bench_write_json(const char *path, const bench_ctx *ctx, const bench_section *s, size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const bench_env *e = &ctx->env;
    fprintf(f, "{\n  \"suite\": \"fdlink-bench\",\n  \"fdlink\": ");
    json_string(f, FDLINK_VERSION_STRING);
    fprintf(f, ",\n  \"date\": ");
    json_string(f, e->date);
    fprintf(f, ",\n  \"quick\": %s,\n  \"machine\": {\"host\": ", ctx->quick ? "true" : "false");
    json_string(f, e->host);
    fputs(", \"os\": ", f);
    json_string(f, e->os);
    fputs(", \"kernel\": ", f);
    json_string(f, e->release);
    fputs(", \"cpu\": ", f);
    json_string(f, e->cpu);
    fprintf(f, ", \"cpus\": %ld},\n  \"gpu\": ", e->cpus);
    if (e->have_gpu) {
        fputs("{\"name\": ", f);
        json_string(f, e->gpu);
        fputs(", \"arch\": ", f);
        json_string(f, e->arch);
        fprintf(f, ", \"sm_count\": %d, \"memory_bytes\": %zu}", e->sm_count, e->gpu_memory);
    } else {
        fputs("null", f);
    }
    fputs(",\n  \"no_gpu_reason\": ", f);
    json_string(f, e->have_gpu ? "" : e->no_gpu);
    fprintf(f, ",\n  \"driver\": ");
    if (e->have_gpu)
        fprintf(f, "{\"version\": %d, \"text\": \"%d.%d\"}", e->driver, e->driver / 1000,
                e->driver % 1000 / 10);
    else
        fputs("null", f);
    fprintf(f, ",\n  \"toolkit\": {\"version\": ");
    json_string(f, FDL_BENCH_TOOLKIT_VERSION);
    fprintf(f, ", \"headers\": %d, \"nvjitlink\": ", CUDA_VERSION);
    if (e->have_nvjitlink) {
        fprintf(f, "\"%u.%u\", \"nvjitlink_path\": ", e->nvjitlink_major, e->nvjitlink_minor);
        json_string(f, e->nvjitlink_path);
    } else {
        fputs("null", f);
    }
    fputs("},\n  \"link_arch\": ", f);
    json_string(f, FDL_BENCH_LINK_ARCH);
    fputs(",\n  \"benchmarks\": [", f);
    int first_section = 1;
    for (size_t i = 0; i < n; i++) {
        const bench_section *sec = &s[i];
        if (sec->status == BENCH_NOT_RUN)
            continue;
        fprintf(f, "%s\n    {\"number\": %d, \"id\": ", first_section ? "" : ",", sec->number);
        first_section = 0;
        json_string(f, sec->id);
        fputs(", \"title\": ", f);
        json_string(f, sec->title);
        fputs(", \"status\": ", f);
        json_string(f, status_name(sec->status));
        fputs(", \"reason\": ", f);
        json_string(f, sec->reason);
        fprintf(f, ", \"verified\": %s, \"seconds\": ", sec->verified ? "true" : "false");
        json_number(f, sec->seconds);
        fputs(",\n     \"figures\": [", f);
        for (size_t j = 0; j < sec->nfigures; j++) {
            const bench_figure *fg = &sec->figures[j];
            fprintf(f, "%s\n       {\"name\": ", j ? "," : "");
            json_string(f, fg->name);
            fputs(", \"unit\": ", f);
            json_string(f, fg->unit);
            fputs(", ", f);
            if (fg->derived) {
                fputs("\"derived\": true, \"value\": ", f);
                json_number(f, fg->st.median);
            } else {
                json_stats(f, &fg->st);
                fputs(", \"samples\": [", f);
                for (size_t k = 0; k < fg->st.n; k++) {
                    fputs(k ? ", " : "", f);
                    json_number(f, fg->samples[k]);
                }
                fputc(']', f);
            }
            if (fg->series[0]) {
                fputs(", \"series\": ", f);
                json_string(f, fg->series);
                fputs(", \"x\": ", f);
                json_number(f, fg->x);
            }
            fputc('}', f);
        }
        fputs("],\n     \"ratios\": [", f);
        for (size_t j = 0; j < sec->nratios; j++) {
            const bench_ratio *r = &sec->ratios[j];
            fprintf(f, "%s\n       {\"name\": ", j ? "," : "");
            json_string(f, r->name);
            fputs(", ", f);
            json_stats(f, &r->st);
            if (r->goal == BENCH_GOAL_NONE) {
                fputs(", \"goal\": null", f);
            } else {
                fprintf(f, ", \"goal\": {\"op\": \"%s\", \"value\": ",
                        r->goal == BENCH_GOAL_LE ? "<=" : ">=");
                json_number(f, r->goal_value);
                fprintf(f, "}, \"met\": %s", r->met ? "true" : "false");
            }
            fputc('}', f);
        }
        fputs("],\n     \"notes\": [", f);
        for (size_t j = 0; j < sec->nnotes; j++) {
            fputs(j ? ", " : "", f);
            json_string(f, sec->notes[j]);
        }
        fputs("]}", f);
    }
    fputs("\n  ]\n}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- Markdown --------------------------------------------------------------------------------- */

/* Table cells: '|' would end the cell. */
static void md_cell(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '|')
            fputs("\\|", f);
        else
            fputc(*s, f);
}

int bench_write_markdown(const char *path, const bench_ctx *ctx, const bench_section *s,
                         size_t n)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    char gpu[1024], tools[256];
    describe_gpu(gpu, sizeof gpu, &ctx->env);
    describe_tools(tools, sizeof tools, &ctx->env);
    fprintf(f, "## fdlink benchmarks%s\n\n", ctx->quick ? " (quick run)" : "");
    fprintf(f, "GPU: **%s**; %s; host %s (%s, %ld CPUs); %s; fdlink %s.\n\n", gpu, tools,
            ctx->env.host, ctx->env.cpu, ctx->env.cpus, ctx->env.date, FDLINK_VERSION_STRING);
    fputs("| # | benchmark | ratio | median | min - max | goal | |\n"
          "|---|---|---|--:|--:|---|---|\n", f);
    for (size_t i = 0; i < n; i++) {
        const bench_section *sec = &s[i];
        if (sec->status == BENCH_NOT_RUN)
            continue;
        if (sec->status != BENCH_OK) {
            fprintf(f, "| %d | ", sec->number);
            md_cell(f, sec->title);
            fprintf(f, " | %s: ", status_name(sec->status));
            md_cell(f, sec->reason);
            fputs(" | | | | |\n", f);
            continue;
        }
        for (size_t j = 0; j < sec->nratios; j++) {
            const bench_ratio *r = &sec->ratios[j];
            char a[32], b[32], c[32], g[32];
            fprintf(f, "| %d | ", sec->number);
            md_cell(f, sec->title);
            fputs(" | ", f);
            md_cell(f, r->name);
            fprintf(f, " | %s | %s - %s | %s | %s |\n", num(a, sizeof a, r->st.median),
                    num(b, sizeof b, r->st.min), num(c, sizeof c, r->st.max),
                    goal_text(g, sizeof g, r, 1),
                    r->goal == BENCH_GOAL_NONE ? "" : r->met ? "met" : "**missed**");
        }
    }
    fputs("\n| # | figure | median | min | max | IQR | unit |\n"
          "|---|---|--:|--:|--:|--:|---|\n", f);
    for (size_t i = 0; i < n; i++) {
        const bench_section *sec = &s[i];
        for (size_t j = 0; j < sec->nfigures; j++) {
            const bench_figure *fg = &sec->figures[j];
            char a[32], b[32], c[32], d[32];
            fprintf(f, "| %d | ", sec->number);
            md_cell(f, fg->name);
            if (fg->derived)
                fprintf(f, " | %s | | | | %s |\n", num(a, sizeof a, fg->st.median), fg->unit);
            else
                fprintf(f, " | %s | %s | %s | %s | %s |\n", num(a, sizeof a, fg->st.median),
                        num(b, sizeof b, fg->st.min), num(c, sizeof c, fg->st.max),
                        num(d, sizeof d, fg->st.q3 - fg->st.q1), fg->unit);
        }
    }
    fputs("\nNotes:\n\n", f);
    for (size_t i = 0; i < n; i++) {
        const bench_section *sec = &s[i];
        if (sec->status == BENCH_NOT_RUN)
            continue;
        fprintf(f, "- [%d] %s: %s%s (%.1f s)\n", sec->number, sec->title,
                status_name(sec->status),
                sec->status == BENCH_OK ? (sec->verified ? ", verified" : ", not verified") : "",
                sec->seconds);
        for (size_t j = 0; j < sec->nnotes; j++)
            fprintf(f, "  - %s\n", sec->notes[j]);
    }
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- PNG -------------------------------------------------------------------------------------- */

static const bench_section *find_section(const bench_section *s, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].id, id) == 0 && s[i].status == BENCH_OK)
            return &s[i];
    return NULL;
}

/* Write the points of @p series (x, median, min, max) to @p path; the number written. */
static int write_series(const char *path, const bench_section *sec, const char *series)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int count = 0;
    for (size_t j = 0; sec && j < sec->nfigures; j++) {
        const bench_figure *fg = &sec->figures[j];
        if (strcmp(fg->series, series) != 0)
            continue;
        /* a short label: up to the first comma ("(a) call" ...) */
        char label[48];
        fdl__strlcpy(label, fg->name, sizeof label);
        char *comma = strchr(label, ',');
        if (comma && strcmp(series, "foreign") == 0)
            snprintf(comma, sizeof label - (size_t)(comma - label), "%s",
                     strstr(fg->name, "PTX") ? " PTX" : strstr(fg->name, "LTO") ? " LTO" : "");
        for (char *p = label; *p; p++)
            if (*p == '"')
                *p = '\'';
        fprintf(f, "%g %g %g %g \"%s\"\n", fg->x, fg->st.median, fg->st.min, fg->st.max, label);
        count++;
    }
    if (fclose(f) != 0)
        return -1;
    return count;
}

int bench_draw_png(const char *path, const bench_ctx *ctx, const bench_section *s, size_t n,
                   char *why, size_t why_size)
{
    (void)ctx;
    why[0] = '\0';
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        snprintf(why, why_size, "gnuplot not found");
        return 0;
    }
    const bench_section *scaling = find_section(s, n, "scaling");
    const bench_section *foreign = find_section(s, n, "foreign");
    if (!scaling && !foreign) {
        snprintf(why, why_size, "no scaling or foreign-call results to draw");
        return 0;
    }
    char dir[] = "/tmp/fdlink-bench-XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(why, why_size, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    char link_dat[64], check_dat[64], foreign_dat[64], script[64], png[64], command[160];
    snprintf(link_dat, sizeof link_dat, "%s/link.dat", dir);
    snprintf(check_dat, sizeof check_dat, "%s/check.dat", dir);
    snprintf(foreign_dat, sizeof foreign_dat, "%s/foreign.dat", dir);
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    snprintf(png, sizeof png, "%s/plot.png", dir);
    int nlink = write_series(link_dat, scaling, "link");
    int ncheck = write_series(check_dat, scaling, "check");
    int nforeign = write_series(foreign_dat, foreign, "foreign");
    int rc = -1;
    FILE *f = fopen(script, "w");
    if (!f || nlink < 0 || ncheck < 0 || nforeign < 0) {
        snprintf(why, why_size, "cannot write in %s", dir);
        if (f)
            fclose(f);
        goto cleanup;
    }
    int panels = (nlink + ncheck > 0) + (nforeign > 0);
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
               "  set terminal pngcairo size %d,480 font 'sans,10'\n"
               "} else {\n  set terminal png size %d,480\n}\n"
               "set output '%s'\nset multiplot layout 1,%d title 'fdlink-bench: %s'\n"
               "set grid\nset key top left\n",
            panels * 640, panels * 640, png, panels,
            ctx->env.have_gpu ? ctx->env.gpu : "no GPU");
    if (nlink + ncheck > 0) {
        fprintf(f, "set title 'Scaling: N foreign functions'\nset logscale xy\n"
                   "set xlabel 'N (functions)'\nset ylabel 'ms (median, min-max)'\n"
                   "set xrange [0.5:8192]\nplot ");
        if (nlink > 0)
            fprintf(f, "'%s' using 1:2:3:4 with yerrorlines title 'link (nvJitLink)'%s",
                    link_dat, ncheck > 0 ? ", " : "");
        if (ncheck > 0)
            fprintf(f, "'%s' using 1:2:3:4 with yerrorlines title 'signature check'",
                    check_dat);
        fputs("\nunset logscale\nunset xrange\n", f);
    }
    if (nforeign > 0)
        fprintf(f, "set title 'Foreign call, 256 steps per element: kernel time'\n"
                   "set logscale y\nset xlabel ''\nset ylabel 'ms (median, min-max)'\n"
                   "set xrange [-0.5:%d.5]\nset style fill solid 0.5\nset boxwidth 0.6\n"
                   "plot '%s' using 1:2:xticlabels(5) with boxes notitle, "
                   "'' using 1:2:3:4 with yerrorbars notitle lc rgb 'black'\n",
                nforeign - 1, foreign_dat);
    fputs("unset multiplot\n", f);
    if (fclose(f) != 0) {
        snprintf(why, why_size, "cannot write %s", script);
        goto cleanup;
    }
    snprintf(command, sizeof command, "gnuplot %s >%s/gnuplot.log 2>&1", script, dir);
    if (system(command) != 0) {
        snprintf(why, why_size, "gnuplot failed (see %s/gnuplot.log)", dir);
        return -1; /* the folder stays, for the log */
    }
    char *data = NULL;
    size_t size = 0;
    fdl_error err = FDL_ERROR_INIT;
    if (fdl__read_file(png, &data, &size, &err) != FDL_OK ||
        fdl__write_atomic(path, data, size, &err) != FDL_OK) {
        snprintf(why, why_size, "%s", err.message);
        free(data);
        goto cleanup;
    }
    free(data);
    rc = 1;
cleanup:
    remove(link_dat);
    remove(check_dat);
    remove(foreign_dat);
    remove(script);
    remove(png);
    snprintf(command, sizeof command, "%s/gnuplot.log", dir);
    remove(command);
    rmdir(dir);
    return rc;
}
