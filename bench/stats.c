/* fdlink-bench: statistics, the records of a section, and shared helpers. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "internal.h"

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Quantile @p q of sorted @p s by linear interpolation between closest ranks. */
static double quantile(const double *s, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return s[n - 1];
    double frac = pos - (double)lo;
    return s[lo] + (s[lo + 1] - s[lo]) * frac;
}

bench_stats bench_summarise(const double *samples, size_t n)
{
    bench_stats st;
    memset(&st, 0, sizeof st);
    if (!samples || n == 0)
        return st;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return st;
    memcpy(s, samples, n * sizeof *s);
    qsort(s, n, sizeof *s, compare_doubles);
    st.n = n;
    st.min = s[0];
    st.max = s[n - 1];
    st.median = quantile(s, n, 0.5);
    st.q1 = quantile(s, n, 0.25);
    st.q3 = quantile(s, n, 0.75);
    free(s);
    return st;
}

bench_figure *bench_figure_add(bench_section *s, const char *name, const char *unit,
                               const double *samples, size_t n)
{
    if (s->nfigures >= BENCH_MAX_FIGURES) {
        bench_fail(s, "too many figures (at most %d)", BENCH_MAX_FIGURES);
        return NULL;
    }
    bench_figure *f = &s->figures[s->nfigures];
    memset(f, 0, sizeof *f);
    fdl__strlcpy(f->name, name, sizeof f->name);
    fdl__strlcpy(f->unit, unit, sizeof f->unit);
    if (n) {
        f->samples = malloc(n * sizeof *f->samples);
        if (!f->samples) {
            bench_fail(s, "out of memory");
            return NULL;
        }
        memcpy(f->samples, samples, n * sizeof *f->samples);
    }
    f->st = bench_summarise(samples, n);
    s->nfigures++;
    return f;
}

bench_figure *bench_figure_derived(bench_section *s, const char *name, const char *unit,
                                   double value)
{
    bench_figure *f = bench_figure_add(s, name, unit, NULL, 0);
    if (!f)
        return NULL;
    f->derived = 1;
    f->st.median = f->st.min = f->st.max = f->st.q1 = f->st.q3 = value;
    f->st.n = 1;
    return f;
}

bench_ratio *bench_ratio_add(bench_section *s, const char *name, const double *num,
                             const double *den, size_t n, bench_goal goal, double goal_value)
{
    if (s->nratios >= BENCH_MAX_RATIOS) {
        bench_fail(s, "too many ratios (at most %d)", BENCH_MAX_RATIOS);
        return NULL;
    }
    double *r = malloc((n ? n : 1) * sizeof *r);
    if (!r) {
        bench_fail(s, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        r[i] = den[i] > 0 ? num[i] / den[i] : 0.0;
    bench_ratio *q = &s->ratios[s->nratios++];
    memset(q, 0, sizeof *q);
    fdl__strlcpy(q->name, name, sizeof q->name);
    q->st = bench_summarise(r, n);
    q->goal = goal;
    q->goal_value = goal_value;
    q->met = goal == BENCH_GOAL_LE   ? q->st.median <= goal_value
             : goal == BENCH_GOAL_GE ? q->st.median >= goal_value
                                     : 1;
    free(r);
    return q;
}

void bench_note(bench_section *s, const char *fmt, ...)
{
    if (s->nnotes >= BENCH_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->notes[s->nnotes++], BENCH_NOTE_MAX, fmt, ap);
    va_end(ap);
}

int bench_fail(bench_section *s, const char *fmt, ...)
{
    /* the first failure is the one worth reading */
    if (s->status != BENCH_FAILED) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->reason, sizeof s->reason, fmt, ap);
        va_end(ap);
    }
    s->status = BENCH_FAILED;
    s->verified = 0;
    return 1;
}

int bench_fail_err(bench_section *s, const char *what, const fdl_error *err)
{
    char line[FDL_ERROR_MESSAGE_MAX + FDL_ERROR_SOURCE_MAX + FDL_ERROR_SYMBOL_MAX + 64];
    fdl_error_format(err, line, sizeof line);
    return bench_fail(s, "%s: %s", what, line);
}

void bench_skip(bench_section *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->reason, sizeof s->reason, fmt, ap);
    va_end(ap);
    s->status = BENCH_SKIPPED;
}

void bench_section_free(bench_section *s)
{
    for (size_t i = 0; i < s->nfigures; i++) {
        free(s->figures[i].samples);
        s->figures[i].samples = NULL;
    }
}

double bench_now_ms(void)
{
    return (double)fdl__now_ns() / 1e6;
}

size_t bench_reps(const bench_ctx *ctx, size_t quick, size_t full)
{
    if (ctx->reps > 0)
        return (size_t)ctx->reps;
    return ctx->quick ? quick : full;
}

unsigned bench_rand(unsigned *state)
{
    unsigned x = *state ? *state : 2463534242u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

int bench_read(bench_section *s, const char *path, char **data, size_t *size)
{
    fdl_error err = FDL_ERROR_INIT;
    if (fdl__read_file(path, data, size, &err) != FDL_OK)
        return bench_fail_err(s, "reading an input", &err);
    return 0;
}

int bench_load(bench_section *s, fdl_module **mod, fdl_device *dev, const fdl_link *link,
               const char *name)
{
    fdl_error err = FDL_ERROR_INIT;
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    if (!cubin)
        return bench_fail(s, "%s: the link produced no cubin", name);
    if (fdl_module_load_data(mod, dev, cubin, size, name, &err) != FDL_OK)
        return bench_fail_err(s, "loading the linked cubin", &err);
    return 0;
}

int bench_time_gpu(fdl_event *start, fdl_event *end, bench_work_fn fn, void *arg, long reps,
                   double *ms, fdl_error *err)
{
    int rc = fdl_event_record(start, NULL, err);
    for (long i = 0; rc == FDL_OK && i < reps; i++)
        rc = fn(arg, err);
    if (rc == FDL_OK)
        rc = fdl_event_record(end, NULL, err);
    if (rc == FDL_OK)
        rc = fdl_event_synchronize(end, err);
    float elapsed = 0;
    if (rc == FDL_OK)
        rc = fdl_event_elapsed_ms(&elapsed, start, end, err);
    *ms = rc == FDL_OK ? (double)elapsed / (double)reps : 0.0;
    return rc;
}

long bench_reps_for(double one_ms, double target_ms, long max)
{
    if (!(one_ms > 0))
        return max;
    double r = target_ms / one_ms;
    if (r < 1)
        return 1;
    if (r > (double)max)
        return max;
    return (long)(r + 0.5);
}

extern char **environ;

/* environ with @p env's entries added, replacing those of the same name; NULL when out of memory */
static char **merge_env(const char *const *env)
{
    size_t n = 0, extra = 0;
    while (environ && environ[n])
        n++;
    while (env && env[extra])
        extra++;
    char **out = calloc(n + extra + 1, sizeof *out);
    if (!out)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;
        for (size_t j = 0; j < extra && !replaced; j++) {
            const char *eq = strchr(env[j], '=');
            size_t len = eq ? (size_t)(eq - env[j]) : strlen(env[j]);
            replaced = strncmp(environ[i], env[j], len) == 0 && environ[i][len] == '=';
        }
        if (!replaced)
            out[k++] = environ[i];
    }
    for (size_t j = 0; j < extra; j++)
        out[k++] = (char *)(uintptr_t)env[j];
    out[k] = NULL;
    return out;
}

int bench_run_process(char *const argv[], const char *const *env, char *out, size_t out_size,
                      int *exit_status, double *wall_ms)
{
    int fds[2] = {-1, -1}, rc = -1, started = 0;
    pid_t pid = 0;
    size_t used = 0;
    char **envp = merge_env(env);
    posix_spawn_file_actions_t actions;
    int have_actions = 0;
    if (out_size)
        out[0] = '\0';
    *exit_status = -1;
    *wall_ms = 0;
    if (!envp) {
        snprintf(out, out_size, "out of memory");
        goto cleanup;
    }
    if (pipe(fds) != 0) {
        snprintf(out, out_size, "pipe: %s", strerror(errno));
        goto cleanup;
    }
    if (posix_spawn_file_actions_init(&actions) != 0) {
        snprintf(out, out_size, "posix_spawn_file_actions_init failed");
        goto cleanup;
    }
    have_actions = 1;
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    double t0 = bench_now_ms();
    int e = posix_spawn(&pid, argv[0], &actions, NULL, argv, envp);
    if (e != 0) {
        snprintf(out, out_size, "cannot run %s: %s", argv[0], strerror(e));
        goto cleanup;
    }
    started = 1;
    close(fds[1]);
    fds[1] = -1;
    char chunk[4096];
    for (;;) {
        ssize_t got = read(fds[0], chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        for (ssize_t i = 0; i < got && used + 1 < out_size; i++)
            out[used++] = chunk[i];
        if (out_size)
            out[used] = '\0';
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            snprintf(out, out_size, "waitpid: %s", strerror(errno));
            goto cleanup;
        }
    }
    *wall_ms = bench_now_ms() - t0;
    started = 0;
    *exit_status = WIFEXITED(status) ? WEXITSTATUS(status)
                   : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                         : -1;
    rc = 0;
cleanup:
    if (started) /* a read error left the child running: reap it */
        waitpid(pid, NULL, 0);
    if (fds[0] >= 0)
        close(fds[0]);
    if (fds[1] >= 0)
        close(fds[1]);
    if (have_actions)
        posix_spawn_file_actions_destroy(&actions);
    free(envp);
    return rc;
}
