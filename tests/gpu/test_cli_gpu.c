/*
 * GPU tests of the command line: `fdlink run` (the seed's multiply_vectors checked with --expect,
 * a planted mismatch, a device function's failure through FDL_CALL, a kernel of mixed struct,
 * pointer and scalar parameters, timed repeats), `fdlink run --map` (a declared function mapped
 * with no kernel written: arrays and a broadcast scalar, a pointer parameter, a failing status),
 * `fdlink doctor` on a GPU, and
 * `fdlink link --backend=culink` for each input kind cuLink takes, each result loaded and
 * launched by `fdlink run` and verified.
 *
 * Each test runs the fdlink executable (FDL_CLI) and checks its exit status, its output and the
 * files it writes. Every test skips where fdl_device_count finds no driver or no device. Run as
 * test_cli_gpu (label gpu) on a GPU host, and as test_cli_gpu_mock (label unit) against the mock
 * driver of tests/gpu/mock, which has no cuLink: there (FDL_TEST_MOCK set) the cuLink tests skip,
 * and of the maps only those the mock models run (mul_f32_f32 'as', safe_sqrt 'a').
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>

#include "fdl_test.h"
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdlink/host.h"

#define LINK FDL_LINK_FIXTURES /* mul.ptx caller.ptx mul.cubin ... mul.decl, tests/link */
#define KERNELS FDL_GPU_KERNELS /* kernels.fatbin status_*.ptx gen_functions.ptx, tests/gpu */
#define DEVICE_DECL FDL_DEVICE_DECL /* device/functions.decl, of gen_functions.ptx */

/* ---- helpers -------------------------------------------------------------------------------- */

static void skip_without_gpu(void)
{
    int count = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_count(&count, &err);
    if (rc == FDL_ENOLIB || rc == FDL_ENODEVICE)
        cr_skip_test("no CUDA device: %s", err.message);
    cr_assert_eq(rc, FDL_OK, "fdl_device_count: %s", err.message);
    cr_assert_gt(count, 0);
}

static int on_mock(void)
{
    const char *m = getenv("FDL_TEST_MOCK");
    return m && m[0];
}

/* The architecture of the device fdlink opens by default ("sm_90"), into @out. */
static void device_arch(char *out, size_t size)
{
    fdl_device *dev = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_OK, "%s", err.message);
    snprintf(out, size, "%s", fdl_device_arch(dev));
    fdl_device_destroy(dev);
}

static char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    char *data = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            data = realloc(data, cap);
            cr_assert_not_null(data);
        }
        size_t got = fread(data + n, 1, 4096, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    data[n] = '\0';
    if (size)
        *size = n;
    return data;
}

static void write_all(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    cr_assert_eq(fclose(f), 0);
}

/* The result of one fdlink command. */
typedef struct cli_result {
    int status; /* exit status; -1 when it did not exit */
    char *out, *err;
} cli_result;

static void cli_free(cli_result *r)
{
    free(r->out);
    free(r->err);
}

/* Run fdlink with the NULL-terminated arguments, stdout and stderr captured in @dir. */
static cli_result fdlink(const char *dir, ...)
{
    const char *argv[64];
    size_t n = 0;
    argv[n++] = FDL_CLI;
    va_list ap;
    va_start(ap, dir);
    for (const char *a; (a = va_arg(ap, const char *)) != NULL;) {
        cr_assert_lt(n, sizeof argv / sizeof argv[0] - 1);
        argv[n++] = a;
    }
    va_end(ap);
    argv[n] = NULL;
    char *out_path = path_in(dir, "stdout.txt"), *err_path = path_in(dir, "stderr.txt");
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        execv(FDL_CLI, (char *const *)argv);
        _exit(127);
    }
    int ws = 0;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    cli_result r;
    r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    r.out = read_all(out_path, NULL);
    r.err = read_all(err_path, NULL);
    free(out_path);
    free(err_path);
    return r;
}

#define N 1000

/* b[i] = 0.5 + i % 7, and the products a[i] * b[i] with a[i] = i (=iota), each exact in float. */
static void write_mv_files(const char *dir, int plant)
{
    float b[N], want[N];
    for (int i = 0; i < N; i++) {
        b[i] = 0.5f + (float)(i % 7);
        want[i] = (float)i * b[i];
    }
    if (plant)
        want[plant] += 1.0f;
    char *pb = path_in(dir, "b.f32"), *pw = path_in(dir, "want.f32");
    write_all(pb, b, sizeof b);
    write_all(pw, want, sizeof want);
    free(pb);
    free(pw);
}

/* ---- run ------------------------------------------------------------------------------------- */

Test(cli_run, multiply_vectors_expect)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    write_mv_files(dir, 0);
    char *b = path_in(dir, "b.f32"), *want = path_in(dir, "want.f32"),
         *out = path_in(dir, "out.f32");
    char buf_b[512], exp[512], outa[512];
    snprintf(buf_b, sizeof buf_b, "f32[%d]@%s", N, b);
    snprintf(exp, sizeof exp, "0=%s", want);
    snprintf(outa, sizeof outa, "0=%s", out);
    cli_result r = fdlink(dir, "run", "--decl", LINK "/mul.decl", LINK "/mul.ptx",
                          LINK "/caller.ptx", "-k", "multiply_vectors", "--grid", "4", "--block",
                          "256", "f32[1000]=-1", "f32[1000]=iota", buf_b, "i32:1000", "--expect",
                          exp, "--out", outa, NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect_str_eq(r.out, "argument 0 'f32[1000]=-1': float32: all 1000 values match (exact)\n");
    cr_expect_str_eq(r.err, "");
    /* the file written back holds the same products */
    size_t size = 0;
    char *got = read_all(out, &size), *ref = read_all(want, NULL);
    cr_assert_eq(size, sizeof(float) * N);
    cr_expect_eq(memcmp(got, ref, size), 0);
    free(got);
    free(ref);
    cli_free(&r);
    free(b);
    free(want);
    free(out);
    free(dir);
}

/*
 * A foreign function that sums a buffer with a grid sync (tests/data/run/grid_sum.cu): launched
 * cooperatively without being asked (its cubin lists cooperative-groups instructions) and
 * verified; --no-cooperative shows that the cooperative launch is what made it work; a grid
 * larger than fits at once, with --cooperative, is refused in one line that says the largest.
 */
Test(cli_run, cooperative_grid_sum)
{
    skip_without_gpu();
    fdl_device *dev = NULL;
    fdl_device_info info;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_device_get_info(dev, &info, &err), FDL_OK, "%s", err.message);
    fdl_device_destroy(dev);
    if (!info.cooperative_launch)
        cr_skip_test("%s does not support cooperative launches", info.name);
    char arch[32], archopt[48], grid[32], parts[64], exp[512];
    device_arch(arch, sizeof arch);
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    unsigned blocks = 2u * (unsigned)info.sm_count, n = 1u << 20;
    snprintf(grid, sizeof grid, "%u", blocks);
    snprintf(parts, sizeof parts, "u64[%u]", blocks * 256u);
    uint64_t want = (uint64_t)n * (n - 1) / 2;
    char *dir = make_temp_dir(), *pw = path_in(dir, "want.u64");
    write_all(pw, &want, sizeof want);
    snprintf(exp, sizeof exp, "0=%s", pw);
    const char *decl = FDL_RUN_DATA "/grid_sum.decl", *fn = FDL_RUN_DATA "/grid_sum.cu",
               *kern = FDL_RUN_DATA "/grid_sum_kernel.cu";
    cli_result r = fdlink(dir, "run", archopt, "--decl", decl, fn, kern, "-k", "grid_sum_kernel",
                          "--grid", grid, "--block", "256", "u64[1]", "u32[1048576]=iota",
                          "u32:1048576", parts, "--expect", exp, NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect_str_eq(r.out, "argument 0 'u64[1]': uint64: all 1 values match (exact)\n");
    cli_free(&r);
    r = fdlink(dir, "run", archopt, "--no-cooperative", "--decl", decl, fn, kern, "-k",
               "grid_sum_kernel", "--grid", grid, "--block", "256", "u64[1]",
               "u32[1048576]=iota", "u32:1048576", parts, "--expect", exp, NULL);
    cr_assert_eq(r.status, 1, "a grid sync without a cooperative launch must fail\nexit %d\n"
                 "stdout: %s\nstderr: %s", r.status, r.out, r.err);
    cli_free(&r);
    r = fdlink(dir, "run", archopt, "--cooperative", "--decl", decl, fn, kern, "-k",
               "grid_sum_kernel", "--grid", "4194304", "--block", "256", "u64[1]",
               "u32[1048576]=iota", "u32:1048576", "u64[1]", NULL);
    cr_assert_eq(r.status, 1, "exit %d\nstderr: %s", r.status, r.err);
    char head[128];
    snprintf(head, sizeof head, "fdlink: error: grid_sum_kernel: cooperative launch of 4194304 "
                                "blocks exceeds the ");
    cr_assert(strncmp(r.err, head, strlen(head)) == 0, "%s", r.err);
    cr_assert(strstr(r.err, " that can be resident at once for kernel grid_sum_kernel ("), "%s",
              r.err);
    cr_assert(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "one line: %s", r.err);
    cli_free(&r);
    free(pw);
    free(dir);
}

/*
 * cuda-samples' separate-compilation pattern from the command line: a device function pointer
 * stored in a __device__ variable (tests/data/run/fn_table.cu), read after the load with
 * sym:triple_ptr and passed to a kernel that calls through it; every result verified.
 */
Test(cli_run, device_function_pointer_from_a_global)
{
    skip_without_gpu();
    char arch[32], archopt[48], exp[512];
    device_arch(arch, sizeof arch);
    snprintf(archopt, sizeof archopt, "-arch=%s", arch);
    int32_t want[1000];
    for (int i = 0; i < 1000; i++)
        want[i] = 3 * i;
    char *dir = make_temp_dir(), *pw = path_in(dir, "want.i32");
    write_all(pw, want, sizeof want);
    snprintf(exp, sizeof exp, "0=%s", pw);
    cli_result r = fdlink(dir, "run", archopt, FDL_RUN_DATA "/fn_table.cu",
                          FDL_RUN_DATA "/call_through.cu", "-k", "call_through", "--grid", "4",
                          "--block", "256", "i32[1000]=-7", "sym:triple_ptr", "i32:1000",
                          "--expect", exp, NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect_str_eq(r.out, "argument 0 'i32[1000]=-7': int32: all 1000 values match (exact)\n");
    cr_expect_str_eq(r.err, "");
    cli_free(&r);
    /* a global the module does not define: one line naming it */
    r = fdlink(dir, "run", archopt, FDL_RUN_DATA "/fn_table.cu", FDL_RUN_DATA "/call_through.cu",
               "-k", "call_through", "i32[1]", "sym:no_such_ptr", "i32:1", NULL);
    cr_assert_eq(r.status, 1, "exit %d\nstderr: %s", r.status, r.err);
    cr_expect_str_eq(r.err, "fdlink: error: no_such_ptr: global 'no_such_ptr' not found in module "
                            "linked cubin\n");
    cli_free(&r);
    free(pw);
    free(dir);
}

Test(cli_run, planted_mismatch)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    write_mv_files(dir, 17);
    char *b = path_in(dir, "b.f32"), *want = path_in(dir, "want.f32");
    char buf_b[512], exp[512];
    snprintf(buf_b, sizeof buf_b, "f32[%d]@%s", N, b);
    snprintf(exp, sizeof exp, "0=%s", want);
    cli_result r = fdlink(dir, "run", "--decl", LINK "/mul.decl", LINK "/mul.ptx",
                          LINK "/caller.ptx", "-k", "multiply_vectors", "--grid", "4", "--block",
                          "256", "f32[1000]", "f32[1000]=iota", buf_b, "i32:1000", "--expect", exp,
                          NULL);
    cr_assert_eq(r.status, 1, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect_str_eq(r.out, "");
    /* element 17: 17 * (0.5 + 3) = 59.5, planted as 60.5 */
    cr_expect(strstr(r.err, "error: argument 0 'f32[1000]': float32: 1 of 1000 values differ "
                            "(exact)") != NULL,
              "%s", r.err);
    cr_expect(strstr(r.err, "\n  [17] got 59.5, expected 60.5 (abs error 1,") != NULL, "%s", r.err);
    /* within a tolerance that covers it, the same run passes */
    cli_free(&r);
    r = fdlink(dir, "run", "--decl", LINK "/mul.decl", LINK "/mul.ptx", LINK "/caller.ptx", "-k",
               "multiply_vectors", "--grid", "4", "--block", "256", "f32[1000]", "f32[1000]=iota",
               buf_b, "i32:1000", "--expect", exp, "--atol", "1", NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstderr: %s", r.status, r.err);
    cli_free(&r);
    free(b);
    free(want);
    free(dir);
}

/* sqrt_all over 64 values, one of them negative: safe_sqrt fails there through FDL_CALL. */
static void device_status(const char *repeat)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    float in[64];
    for (int i = 0; i < 64; i++)
        in[i] = (float)(i * i);
    in[9] = -4.0f;
    char *pin = path_in(dir, "in.f32");
    write_all(pin, in, sizeof in);
    char arg_in[512];
    snprintf(arg_in, sizeof arg_in, "f32[64]@%s", pin);
    cli_result r = repeat ? fdlink(dir, "run", KERNELS "/status_functions.ptx",
                                   KERNELS "/status_caller_a.ptx", "-k", "sqrt_all", "--block",
                                   "64", "f32[64]", arg_in, "i32:64", "--repeat", repeat, "--time",
                                   NULL)
                          : fdlink(dir, "run", KERNELS "/status_functions.ptx",
                                   KERNELS "/status_caller_a.ptx", "-k", "sqrt_all", "--block",
                                   "64", "f32[64]", arg_in, "i32:64", NULL);
    cr_assert_eq(r.status, 1, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect(strstr(r.err, "device function safe_sqrt returned status 1 at block (0,0,0) "
                            "thread (9,0,0)") != NULL,
              "%s", r.err);
    cr_expect(strncmp(r.err, "fdlink: ", 8) == 0 &&
                  strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
              "one line: %s", r.err);
    cli_free(&r);
    free(pin);
    free(dir);
}

Test(cli_run, device_status_failure)
{
    device_status(NULL);
}

Test(cli_run, device_status_failure_repeated)
{
    device_status("3");
}

Test(cli_run, asynchronous_fault)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    /* n = 2^26 over buffers of 8 floats: reads 256 MiB past them */
    cli_result r = fdlink(dir, "run", LINK "/mul.ptx", LINK "/caller.ptx", "-k",
                          "multiply_vectors", "--grid", "262144", "--block", "256", "f32[8]",
                          "f32[8]", "f32[8]", "i32:67108864", NULL);
    cr_assert_eq(r.status, 1, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect(strstr(r.err, "an earlier launch failed: CUDA_ERROR_") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "the last kernel launched was 'multiply_vectors'") != NULL, "%s",
              r.err);
    cli_free(&r);
    free(dir);
}

Test(cli_run, struct_pointer_scalar_mix)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    char *out = path_in(dir, "out.u64");
    char outa[512];
    snprintf(outa, sizeof outa, "0=%s", out);
    /* params_mixed(u64 *out, i8 a, f64 b, const void *p, s24 s, i16 h), s24 = {i32, i32, f64,
     * i64}: out[] = a, bits of b, p, s.a, s.b, bits of s.c, s.d, h */
    cli_result r = fdlink(dir, "run", KERNELS "/kernels.fatbin", "-k", "params_mixed", "u64[8]",
                          "i8:-5", "f64:2.5", "u64:0x1234abcd", "{i32:7,i32:-8,f64:0.125,i64:-9}",
                          "i16:-300", "--out", outa, NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    size_t size = 0;
    char *got = read_all(out, &size);
    cr_assert_eq(size, 64);
    uint64_t v[8];
    memcpy(v, got, sizeof v);
    double b = 2.5, c = 0.125;
    uint64_t bb, cb;
    memcpy(&bb, &b, 8);
    memcpy(&cb, &c, 8);
    cr_expect_eq(v[0], (uint64_t)(int64_t)-5);
    cr_expect_eq(v[1], bb);
    cr_expect_eq(v[2], 0x1234abcdu);
    cr_expect_eq(v[3], 7u);
    cr_expect_eq(v[4], (uint64_t)(int64_t)-8);
    cr_expect_eq(v[5], cb);
    cr_expect_eq(v[6], (uint64_t)(int64_t)-9);
    cr_expect_eq(v[7], (uint64_t)(int64_t)-300);
    free(got);
    cli_free(&r);
    free(out);
    free(dir);
}

Test(cli_run, timed_repeats)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    cli_result r = fdlink(dir, "run", LINK "/mul.ptx", LINK "/caller.ptx", "-k",
                          "multiply_vectors", "--grid", "64", "--block", "256", "f32[16384]",
                          "f32[16384]=rand:7", "f32[16384]=rand", "i32:16384", "--repeat", "20",
                          "--time", NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstderr: %s", r.status, r.err);
    cr_expect(strncmp(r.out, "kernel multiply_vectors: 20 runs, median ", 41) == 0, "%s", r.out);
    double median = -1, min = -1, max = -1;
    cr_assert_eq(sscanf(r.out, "kernel multiply_vectors: 20 runs, median %lf ms, min %lf ms, max "
                               "%lf ms",
                        &median, &min, &max),
                 3, "%s", r.out);
    cr_expect(min > 0 && min <= median && median <= max, "%s", r.out);
    cli_free(&r);
    free(dir);
}

/* ---- run --map ------------------------------------------------------------------------------ */

#define NM 1003 /* not a multiple of the vector width: the map's tail runs too */

/* out[i] = mul_f32_f32(x[i], 3) with x[i] = 0.5 + i % 7, each product exact in float */
Test(cli_run_map, array_times_broadcast_scalar)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    float x[NM], want[NM];
    for (int i = 0; i < NM; i++) {
        x[i] = 0.5f + (float)(i % 7);
        want[i] = x[i] * 3.0f;
    }
    char *px = path_in(dir, "x.f32"), *pw = path_in(dir, "want.f32"),
         *out = path_in(dir, "out.f32");
    write_all(px, x, sizeof x);
    write_all(pw, want, sizeof want);
    char arg_x[512], exp[512], outa[512];
    snprintf(arg_x, sizeof arg_x, "f32[%d]@%s", NM, px);
    snprintf(exp, sizeof exp, "0=%s", pw);
    snprintf(outa, sizeof outa, "0=%s", out);
    /* the result starts as -1 everywhere: every element is written */
    cli_result r = fdlink(dir, "run", "--decl", LINK "/mul.decl", LINK "/mul.ptx", "--map",
                          "mul_f32_f32", "f32[1003]=-1", arg_x, "f32:3", "--expect", exp, "--out",
                          outa, "-v", NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect_str_eq(r.out, "argument 0 'f32[1003]=-1': float32: all 1003 values match (exact)\n");
    /* -v: the map, and the generated source as compiled */
    cr_expect(strstr(r.err, "; map 'mul_f32_f32' (modes as): kernel fdl_map_mul_f32_f32, compiled "
                            "with NVRTC and linked with 1 input (cubin of ") != NULL,
              "%s", r.err);
    cr_expect(strstr(r.err, "fdlink: the generated CUDA C of map 'mul_f32_f32':\n") != NULL, "%s",
              r.err);
    cr_expect(strstr(r.err, "/* map: out[i] = mul_f32_f32(p1[i], p2) for i < n */\n") != NULL,
              "%s", r.err);
    size_t size = 0;
    char *got = read_all(out, &size);
    cr_assert_eq(size, sizeof want);
    cr_expect_eq(memcmp(got, want, size), 0);
    free(got);
    cli_free(&r);
    /* a planted difference is a mismatch (exit 1), named by index */
    want[1002] += 1.0f;
    write_all(pw, want, sizeof want);
    r = fdlink(dir, "run", "--decl", LINK "/mul.decl", LINK "/mul.ptx", "--map", "mul_f32_f32",
               "f32[1003]", arg_x, "f32:3", "--expect", exp, NULL);
    cr_assert_eq(r.status, 1, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect(strstr(r.err, "float32: 1 of 1003 values differ (exact)") != NULL, "%s", r.err);
    cr_expect(strstr(r.err, "\n  [1002] got 4.5, expected 5.5 (") != NULL, "%s", r.err);
    cli_free(&r);
    /* timed repeats */
    r = fdlink(dir, "run", "--decl", LINK "/mul.decl", LINK "/mul.ptx", "--map", "mul_f32_f32",
               "f32[1003]", arg_x, "f32:3", "--repeat", "10", "--time", NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstderr: %s", r.status, r.err);
    double median = -1, min = -1, max = -1;
    cr_assert_eq(sscanf(r.out, "map mul_f32_f32: 10 runs, median %lf ms, min %lf ms, max %lf ms",
                        &median, &min, &max),
                 3, "%s", r.out);
    cr_expect(min > 0 && min <= median && median <= max, "%s", r.out);
    cli_free(&r);
    free(px);
    free(pw);
    free(out);
    free(dir);
}

/* sum_reduce(CPointer(float32), int32): the buffer's address passed to every call */
Test(cli_run_map, pointer_parameter_gets_the_buffer)
{
    skip_without_gpu();
    if (on_mock())
        cr_skip_test("the mock driver does not model the map of sum_reduce");
    char *dir = make_temp_dir();
    char *out = path_in(dir, "out.f32");
    char outa[512];
    snprintf(outa, sizeof outa, "0=%s", out);
    cli_result r = fdlink(dir, "run", "--decl", DEVICE_DECL, KERNELS "/gen_functions.ptx", "--map",
                          "sum_reduce", "f32[5]", "f32[100]=iota", "i32:100", "--out", outa, NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    size_t size = 0;
    char *got = read_all(out, &size);
    cr_assert_eq(size, 5 * sizeof(float));
    for (int i = 0; i < 5; i++) {
        float v;
        memcpy(&v, got + 4 * i, 4);
        cr_expect_eq(v, 4950.0f, "out[%d] = %g, want 0 + 1 + ... + 99 = 4950", i, (double)v);
    }
    free(got);
    cli_free(&r);
    free(out);
    free(dir);
}

/* safe_sqrt over 64 values, two of them negative: the lowest failing index is reported */
Test(cli_run_map, device_status_failure)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    float in[64];
    for (int i = 0; i < 64; i++)
        in[i] = (float)(i * i);
    in[40] = -1.0f;
    in[9] = -4.0f;
    char *pin = path_in(dir, "in.f32"), *decl = path_in(dir, "sqrt.decl");
    write_all(pin, in, sizeof in);
    static const char text[] = "safe_sqrt: float32(float32)\n";
    write_all(decl, text, sizeof text - 1);
    char arg_in[512];
    snprintf(arg_in, sizeof arg_in, "f32[64]@%s", pin);
    cli_result r = fdlink(dir, "run", "--decl", decl, KERNELS "/status_functions.ptx", "--map",
                          "safe_sqrt", "f32[64]", arg_in, NULL);
    cr_assert_eq(r.status, 1, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect_str_eq(r.out, "");
    cr_expect_str_eq(r.err, "fdlink: error: safe_sqrt: device function safe_sqrt returned status 1 "
                            "at index 9 in map 'safe_sqrt' (first of 2 failures)\n");
    cli_free(&r);
    /* without the negative values the same map runs clean: sqrt(i * i) = i */
    in[9] = 81.0f;
    in[40] = 1600.0f;
    write_all(pin, in, sizeof in);
    float want[64];
    for (int i = 0; i < 64; i++)
        want[i] = (float)i;
    char *pw = path_in(dir, "want.f32");
    write_all(pw, want, sizeof want);
    char exp[512];
    snprintf(exp, sizeof exp, "0=%s", pw);
    r = fdlink(dir, "run", "--decl", decl, KERNELS "/status_functions.ptx", "--map", "safe_sqrt",
               "f32[64]", arg_in, "--expect", exp, NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect_str_eq(r.out, "argument 0 'f32[64]': float32: all 64 values match (exact)\n");
    cli_free(&r);
    free(pw);
    free(pin);
    free(decl);
    free(dir);
}

/* Issue 40: nvJitLink 13.5's cubin (section and program header tables at 4 mod 8) loads, its
 * parameters are checked and its kernel runs: x[i] *= 2 over iota. */
Test(cli_run, nvjitlink_13_5s_cubin_loads_and_runs)
{
    skip_without_gpu();
    if (on_mock())
        cr_skip_test("the mock driver runs only the kernels it knows by name");
    fdl_device *dev = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_open(&dev, 0, &err), FDL_OK, "%s", err.message);
    int sm90 = strcmp(fdl_device_arch(dev), "sm_90") == 0;
    fdl_device_destroy(dev);
    if (!sm90)
        cr_skip_test("the 13.5 cubin is for sm_90");
    char *dir = make_temp_dir();
    float want[1000];
    for (int i = 0; i < 1000; i++)
        want[i] = 2.0f * (float)i;
    char *pw = path_in(dir, "want.f32");
    write_all(pw, want, sizeof want);
    char exp[512];
    snprintf(exp, sizeof exp, "0=%s", pw);
    cli_result r = fdlink(dir, "run", FDL_LINK_DATA "/nvjitlink135/twice_sm90.cubin", "-k",
                          "twice", "--grid", "4", "--block", "256", "f32[1000]=iota", "i32:1000",
                          "--expect", exp, NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect(strstr(r.out, "all 1000 values match") != NULL, "%s", r.out);
    cli_free(&r);
    /* a wrong argument count is caught by the parameter check (before: skipped for this cubin) */
    r = fdlink(dir, "run", FDL_LINK_DATA "/nvjitlink135/twice_sm90.cubin", "-k", "twice",
               "f32[4]=iota", NULL);
    cr_expect_eq(r.status, 2, "exit %d\nstderr: %s", r.status, r.err);
    cr_expect(strstr(r.err, "kernel twice takes 2 parameters") != NULL, "%s", r.err);
    cli_free(&r);
    free(pw);
    free(dir);
}

/* ---- doctor ---------------------------------------------------------------------------------- */

Test(cli_doctor, everything_usable_on_a_gpu)
{
    skip_without_gpu();
    char *dir = make_temp_dir();
    cli_result r = fdlink(dir, "doctor", NULL);
    cr_expect_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cr_expect(strstr(r.out, "\ngpu 0 ") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "  ok       load and launch on GPU 0: ") != NULL, "%s", r.out);
    cr_expect_str_eq(r.err, "");
    cli_free(&r);
    r = fdlink(dir, "doctor", "--json", NULL);
    cr_expect_eq(r.status, 0, "exit %d\nstderr: %s", r.status, r.err);
    cr_expect(strstr(r.out, "\"usable\": true\n}\n") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "\"capability\": \"load and launch on GPU 0\",\n      \"state\": "
                            "\"ok\"") != NULL,
              "%s", r.out);
    cli_free(&r);
    free(dir);
}

/* ---- link --backend=culink ------------------------------------------------------------------ */

/* Link caller.ptx with @callee through cuLink, then run and verify the cubin. */
static void culink_kind(const char *callee, int needs_sm90)
{
    skip_without_gpu();
    if (on_mock())
        cr_skip_test("the mock driver has no cuLink");
    char arch[32];
    device_arch(arch, sizeof arch);
    if (needs_sm90 && strcmp(arch, "sm_90") != 0)
        cr_skip_test("%s holds code for sm_90 only; the device is %s", callee, arch);
    char *dir = make_temp_dir();
    char *app = path_in(dir, "app.cubin");
    char in[512], callee_path[512];
    snprintf(callee_path, sizeof callee_path, "%s/%s", LINK, callee);
    cli_result r = fdlink(dir, "link", "--backend=culink", "-arch=native", "--decl",
                          LINK "/mul.decl", "-o", app, LINK "/caller.ptx", callee_path, NULL);
    cr_assert_eq(r.status, 0, "%s: exit %d\nstderr: %s", callee, r.status, r.err);
    cr_expect_str_eq(r.err, "");
    cli_free(&r);
    write_mv_files(dir, 0);
    char *b = path_in(dir, "b.f32"), *want = path_in(dir, "want.f32");
    char exp[512];
    snprintf(in, sizeof in, "f32[%d]@%s", N, b);
    snprintf(exp, sizeof exp, "0=%s", want);
    r = fdlink(dir, "run", app, "-k", "multiply_vectors", "--grid", "4", "--block", "256",
               "f32[1000]", "f32[1000]=iota", in, "i32:1000", "--expect", exp, NULL);
    cr_assert_eq(r.status, 0, "%s: exit %d\nstdout: %s\nstderr: %s", callee, r.status, r.out,
                 r.err);
    cr_expect(strstr(r.out, "all 1000 values match") != NULL, "%s", r.out);
    cli_free(&r);
    free(b);
    free(want);
    free(app);
    free(dir);
}

Test(cli_culink, ptx) { culink_kind("mul.ptx", 0); }
Test(cli_culink, cubin) { culink_kind("mul.cubin", 1); }
Test(cli_culink, fatbin) { culink_kind("mul.fatbin", 1); }
Test(cli_culink, object) { culink_kind("mul.o", 1); }
Test(cli_culink, library) { culink_kind("libmul.a", 1); }
Test(cli_culink, cuda_c) { culink_kind("mul.cu", 0); }

Test(cli_culink, ltoir_refused_in_one_line)
{
    skip_without_gpu();
    if (on_mock())
        cr_skip_test("the mock driver has no cuLink");
    char *dir = make_temp_dir();
    char *app = path_in(dir, "app.cubin");
    cli_result r = fdlink(dir, "link", "--backend=culink", "-arch=native", "-o", app,
                          LINK "/caller.ptx", LINK "/mul.ltoir", NULL);
    cr_assert_eq(r.status, 1, "exit %d\nstderr: %s", r.status, r.err);
    cr_expect(strstr(r.err, "LTO-IR cannot be linked by the culink backend; use nvjitlink\n") !=
                  NULL,
              "%s", r.err);
    cr_expect(strchr(r.err, '\n') == r.err + strlen(r.err) - 1, "one line: %s", r.err);
    cr_expect_neq(access(app, F_OK), 0, "nothing written");
    cli_free(&r);
    free(app);
    free(dir);
}

Test(cli_culink, run_links_with_culink)
{
    skip_without_gpu();
    if (on_mock())
        cr_skip_test("the mock driver has no cuLink");
    char *dir = make_temp_dir();
    write_mv_files(dir, 0);
    char *b = path_in(dir, "b.f32"), *want = path_in(dir, "want.f32");
    char in[512], exp[512];
    snprintf(in, sizeof in, "f32[%d]@%s", N, b);
    snprintf(exp, sizeof exp, "0=%s", want);
    cli_result r = fdlink(dir, "run", "--backend=culink", "--decl", LINK "/mul.decl",
                          LINK "/mul.ptx", LINK "/caller.ptx", "-k", "multiply_vectors", "--grid",
                          "4", "--block", "256", "f32[1000]", "f32[1000]=iota", in, "i32:1000",
                          "--expect", exp, NULL);
    cr_assert_eq(r.status, 0, "exit %d\nstdout: %s\nstderr: %s", r.status, r.out, r.err);
    cli_free(&r);
    free(b);
    free(want);
    free(dir);
}
