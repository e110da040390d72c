/*
 * Every GPU of a host: Numba's vector multiply (multiply_vectors calling the foreign function
 * mul_f32_f32) over 2^28 float32 elements, split across all GPUs, one thread a GPU.
 *
 *   at build time: declarations -> header -> nvcc -> PTX (fdlink_add_device_library)
 *   here:          check -> one link -> that cubin loaded on every GPU -> a thread a GPU
 *                  launches on its share -> every element verified -> speed-up over one GPU
 *
 * The thread rules of fdlink/host.h: the link is made once, in this thread, and its cubin's bytes
 * (fdl_link_cubin) are read by every thread; each GPU has a device handle of its own, opened here
 * and handed to its thread, which alone uses it (and everything made from it) until it is joined.
 *
 * The baseline is the whole vector on GPU 0 alone; then each GPU takes an equal share and all run
 * at once. Times are of the kernels (10 launches a repetition, best of 5), not of the copies.
 * On one GPU the example runs and says so (no speed-up to measure); without a GPU it checks and
 * links for --arch (default sm_90), reports the launches skipped and exits 77 (FDL_EXIT_SKIP).
 *
 * usage: multi_gpu [--arch sm_NN] [--log2-elements K] FUNCTIONS.decl INPUT.ptx...
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fdlink/fdlink.h"

#define MAX_INPUTS 16
#define MAX_GPUS 64
#define REPS 5
#define LAUNCHES 10
#define EXERCISED "one link on every GPU, one thread a GPU: multiply_vectors"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void print_error(const char *what, const fdl_error *err)
{
    char line[1024];
    fdl_error_format(err, line, sizeof line);
    fprintf(stderr, "multi_gpu: error: %s%s%s\n", what ? what : "", what ? ": " : "", line);
    if (err->log && err->log[0])
        fprintf(stderr, "%s\n", err->log);
}

/* Deterministic test data (xorshift32) in [-8, 8). */
static float next_float(uint32_t *state)
{
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (float)(x >> 8) / (float)(1u << 24) * 16.0f - 8.0f;
}

/* One GPU's share of the vectors, and what its thread did with it. */
typedef struct share {
    fdl_device *dev;       /* this share's GPU: used by its thread only, while it runs */
    const void *cubin;     /* the one link's cubin, read by every thread */
    size_t cubin_size;
    const float *a, *b;    /* host inputs, this share's part */
    float *out;            /* host output, this share's part */
    size_t offset, count;  /* elements */
    pthread_barrier_t *start, *done; /* every worker and the timing thread meet here */
    int reps;
    fdl_error err;
    int failed;
    double kernel_ms;      /* best time of one launch on this GPU alone in the timed runs */
} share;

/* Launch multiply_vectors @launches times over the share and wait; 0 on failure. */
static int run_launches(share *s, fdl_kernel *k, fdl_buffer *dout, fdl_buffer *da,
                        fdl_buffer *db, int launches)
{
    uint64_t pout = fdl_buffer_address(dout), pa = fdl_buffer_address(da),
             pb = fdl_buffer_address(db);
    int n = (int)s->count;
    fdl_arg args[] = {FDL_ARG(pout), FDL_ARG(pa), FDL_ARG(pb), FDL_ARG(n)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.block.x = 256;
    cfg.grid.x = (unsigned)((s->count + 255) / 256);
    fdl_launch *launch = NULL;
    int ok = fdl_launch_create(&launch, k, &cfg, args, 4, &s->err) == FDL_OK;
    for (int i = 0; ok && i < launches; i++)
        ok = fdl_launch_run(launch, &s->err) == FDL_OK;
    ok = ok && fdl_device_synchronize(s->dev, &s->err) == FDL_OK;
    fdl_launch_destroy(launch);
    return ok;
}

/*
 * A GPU's thread: load the cubin, upload the share, then for each repetition meet the others at
 * @start, launch, wait, meet them at @done; then read the share back. A failure is kept in
 * s->err, and the thread still meets the others at every barrier, so that none waits forever.
 */
static void *worker(void *arg)
{
    share *s = arg;
    fdl_module *mod = NULL;
    fdl_kernel *k = NULL;
    fdl_buffer *da = NULL, *db = NULL, *dout = NULL;
    size_t bytes = s->count * sizeof(float);
    int ok = fdl_module_load_data(&mod, s->dev, s->cubin, s->cubin_size, "multi_gpu.cubin",
                                  &s->err) == FDL_OK &&
             fdl_module_get_kernel(&k, mod, "multiply_vectors", &s->err) == FDL_OK &&
             fdl_buffer_create(&da, s->dev, bytes, &s->err) == FDL_OK &&
             fdl_buffer_create(&db, s->dev, bytes, &s->err) == FDL_OK &&
             fdl_buffer_create(&dout, s->dev, bytes, &s->err) == FDL_OK &&
             fdl_buffer_write(da, 0, s->a + s->offset, bytes, &s->err) == FDL_OK &&
             fdl_buffer_write(db, 0, s->b + s->offset, bytes, &s->err) == FDL_OK &&
             fdl_buffer_zero(dout, &s->err) == FDL_OK &&
             run_launches(s, k, dout, da, db, 1); /* warm-up, outside the timed runs */
    s->kernel_ms = 1e30;
    for (int rep = 0; rep < s->reps; rep++) {
        pthread_barrier_wait(s->start);
        if (ok) {
            double t0 = now_ms();
            ok = run_launches(s, k, dout, da, db, LAUNCHES);
            double ms = (now_ms() - t0) / LAUNCHES;
            if (ms < s->kernel_ms)
                s->kernel_ms = ms;
        }
        pthread_barrier_wait(s->done);
    }
    ok = ok && fdl_buffer_read(dout, 0, s->out + s->offset, bytes, &s->err) == FDL_OK;
    s->failed = !ok;
    /* the device's family goes back to the main thread, which destroys the handle */
    fdl_module_destroy(mod);
    fdl_buffer_destroy(da);
    fdl_buffer_destroy(db);
    fdl_buffer_destroy(dout);
    return NULL;
}

/*
 * Run the shares on their GPUs at once, one thread each, and put in *best_ms the best wall time
 * of one launch on every GPU (from the start barrier to the last GPU done). Returns 1 when every
 * thread succeeded.
 */
static int run_shares(share *shares, int nshares, double *best_ms)
{
    pthread_barrier_t start, done;
    pthread_t threads[MAX_GPUS];
    int started = 0, ok = 1;
    if (pthread_barrier_init(&start, NULL, (unsigned)nshares + 1) != 0 ||
        pthread_barrier_init(&done, NULL, (unsigned)nshares + 1) != 0) {
        fprintf(stderr, "multi_gpu: error: cannot make the barriers\n");
        return 0;
    }
    for (int i = 0; i < nshares; i++) {
        shares[i].start = &start;
        shares[i].done = &done;
        shares[i].reps = REPS;
    }
    for (; started < nshares; started++)
        if (pthread_create(&threads[started], NULL, worker, &shares[started]) != 0) {
            fprintf(stderr, "multi_gpu: error: cannot start thread %d\n", started);
            /* the barriers count on every thread: none started is waited for */
            exit(1);
        }
    *best_ms = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
        pthread_barrier_wait(&start);
        double t0 = now_ms();
        pthread_barrier_wait(&done);
        double ms = (now_ms() - t0) / LAUNCHES;
        if (ms < *best_ms)
            *best_ms = ms;
    }
    for (int i = 0; i < started; i++)
        pthread_join(threads[i], NULL);
    for (int i = 0; i < nshares; i++)
        if (shares[i].failed) {
            char what[64];
            snprintf(what, sizeof what, "GPU %d", fdl_device_ordinal(shares[i].dev));
            print_error(what, &shares[i].err);
            ok = 0;
        }
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&done);
    return ok;
}

/* Elements whose product differs from the host's (exact: one IEEE multiply), the first few shown. */
static size_t verify(const float *a, const float *b, const float *out, size_t n, const char *what)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = a[i] * b[i];
        if (memcmp(&out[i], &want, sizeof want) != 0 && bad++ < 3)
            fprintf(stderr, "multi_gpu: %s: out[%zu] = %.9g, expected %.9g\n", what, i,
                    (double)out[i], (double)want);
    }
    return bad;
}

int main(int argc, char **argv)
{
    const char *arch_default = "sm_90";
    const char *decl_path = NULL;
    const char *inputs[MAX_INPUTS];
    size_t ninputs = 0;
    int log2n = 28;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc)
            arch_default = argv[++i];
        else if (strcmp(argv[i], "--log2-elements") == 0 && i + 1 < argc)
            log2n = (int)strtol(argv[++i], NULL, 10);
        else if (!decl_path)
            decl_path = argv[i];
        else if (ninputs < MAX_INPUTS)
            inputs[ninputs++] = argv[i];
    }
    if (!decl_path || ninputs == 0 || log2n < 8 || log2n > 30) {
        fprintf(stderr, "usage: multi_gpu [--arch sm_NN] [--log2-elements 8..30] "
                        "FUNCTIONS.decl INPUT.ptx...\n");
        return 2;
    }

    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL;
    fdl_link *link = NULL;
    fdl_device *devs[MAX_GPUS] = {0};
    share shares[MAX_GPUS];
    float *a = NULL, *b = NULL, *out = NULL;
    int ndev = 0, rc = 1, summarised = 0;
    memset(shares, 0, sizeof shares);

    /* 1. the GPUs: a handle each, opened here and handed to its thread later */
    fdl_error probe = FDL_ERROR_INIT;
    if (fdl_device_count(&ndev, &probe) != FDL_OK)
        ndev = 0;
    if (ndev > MAX_GPUS)
        ndev = MAX_GPUS;
    for (int i = 0; i < ndev; i++)
        if (fdl_device_open(&devs[i], i, &err) != FDL_OK) {
            print_error("opening a GPU", &err);
            goto cleanup;
        }
    /* one cubin runs on GPUs of one architecture: this example wants them all alike */
    const char *arch = ndev ? fdl_device_arch(devs[0]) : arch_default;
    for (int i = 1; i < ndev; i++)
        if (strcmp(fdl_device_arch(devs[i]), arch) != 0) {
            fprintf(stderr, "multi_gpu: error: GPU %d is %s but GPU 0 is %s: link once per "
                            "architecture, or load PTX, on a host of mixed GPUs\n",
                    i, fdl_device_arch(devs[i]), arch);
            goto cleanup;
        }

    /* 2. one link, checked against the declarations, for every GPU */
    if (fdl_decls_load(&decls, decl_path, &err) != FDL_OK) {
        print_error(NULL, &err);
        goto cleanup;
    }
    fdl_link_options lopts = FDL_LINK_OPTIONS_INIT;
    lopts.arch = arch;
    if (fdl_link_create(&link, &lopts, &err) != FDL_OK ||
        fdl_link_add_decls(link, decls, &err) != FDL_OK) {
        print_error(NULL, &err);
        goto cleanup;
    }
    for (size_t i = 0; i < ninputs; i++)
        if (fdl_link_add_file(link, inputs[i], FDL_KIND_PTX, &err) != FDL_OK) {
            print_error(NULL, &err);
            goto cleanup;
        }
    if (fdl_link_complete(link, &err) != FDL_OK) {
        print_error(NULL, &err);
        goto cleanup;
    }
    size_t cubin_size = 0;
    const void *cubin = fdl_link_cubin(link, &cubin_size);
    printf("multi_gpu: one link for %s: %zu inputs -> %zu-byte cubin in %.1f ms\n", arch, ninputs,
           cubin_size, fdl_link_wall_ms(link));
    if (ndev == 0) {
        printf("multi_gpu: no GPU (%s): launches skipped\n",
               probe.message[0] ? probe.message : "0 devices");
        printf("fdlink-example: multi_gpu | %s | verified skipped | no GPU\n", EXERCISED);
        summarised = 1;
        rc = FDL_EXIT_SKIP;
        goto cleanup;
    }

    /* 3. the data */
    const size_t n = (size_t)1 << log2n;
    a = malloc(n * sizeof *a);
    b = malloc(n * sizeof *b);
    out = malloc(n * sizeof *out);
    if (!a || !b || !out) {
        fprintf(stderr, "multi_gpu: error: out of host memory for 2^%d elements\n", log2n);
        goto cleanup;
    }
    uint32_t seed = 20261123;
    for (size_t i = 0; i < n; i++) {
        a[i] = next_float(&seed);
        b[i] = next_float(&seed);
    }

    /* 4. the baseline: the whole vector on GPU 0 alone (its thread, as every run) */
    share base = {devs[0], cubin, cubin_size, a, b, out, 0, n, NULL, NULL, 0,
                  FDL_ERROR_INIT, 0, 0.0};
    double one_ms = 0;
    memset(out, 0xff, n * sizeof *out);
    if (!run_shares(&base, 1, &one_ms))
        goto cleanup;
    size_t bad = verify(a, b, out, n, "GPU 0 alone");
    const double bytes = 3.0 * (double)n * sizeof(float);
    printf("multi_gpu: 1 GPU (%s): 2^%d elements in %.3f ms a launch (%.0f GB/s), %zu "
           "mismatches\n",
           fdl_device_name(devs[0]), log2n, one_ms, bytes / (one_ms * 1e6), bad);

    /* 5. every GPU, an equal share each, at once */
    double all_ms = one_ms;
    if (ndev > 1) {
        size_t per = n / (size_t)ndev, at = 0;
        for (int i = 0; i < ndev; i++) {
            size_t count = i + 1 < ndev ? per : n - at;
            share s = {devs[i], cubin, cubin_size, a, b, out, at, count, NULL, NULL, 0,
                       FDL_ERROR_INIT, 0, 0.0};
            shares[i] = s;
            at += count;
        }
        memset(out, 0xff, n * sizeof *out);
        if (!run_shares(shares, ndev, &all_ms))
            goto cleanup;
        size_t bad_all = verify(a, b, out, n, "all GPUs");
        bad += bad_all;
        printf("multi_gpu: %d GPUs: 2^%d elements in %.3f ms a launch (%.0f GB/s), %zu "
               "mismatches\n",
               ndev, log2n, all_ms, bytes / (all_ms * 1e6), bad_all);
        for (int i = 0; i < ndev; i++)
            printf("multi_gpu:   GPU %d: %zu elements, %.3f ms a launch\n",
                   fdl_device_ordinal(devs[i]), shares[i].count, shares[i].kernel_ms);
    }

    char figure[128];
    if (ndev > 1)
        snprintf(figure, sizeof figure, "%d GPUs: %.2fx over one (%.0f GB/s)", ndev,
                 one_ms / all_ms, bytes / (all_ms * 1e6));
    else
        snprintf(figure, sizeof figure, "1 GPU: ran on it alone (%.0f GB/s), no speed-up to "
                                        "measure",
                 bytes / (one_ms * 1e6));
    printf("multi_gpu: %s\n", figure);
    printf("result: %s\n", bad ? "VERIFICATION FAILED" : "every element verified");
    printf("fdlink-example: multi_gpu | %s | verified %s | %s\n", EXERCISED, bad ? "no" : "yes",
           figure);
    summarised = 1;
    rc = bad ? 1 : 0;
cleanup:
    if (!summarised)
        printf("fdlink-example: multi_gpu | %s | verified no | failed\n", EXERCISED);
    for (int i = 0; i < ndev; i++)
        fdl_device_destroy(devs[i]);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    free(a);
    free(b);
    free(out);
    return rc;
}
