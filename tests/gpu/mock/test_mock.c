/*
 * The host runtime against the mock driver (mock_cuda.c), for what needs a driver but no GPU:
 * the driver version check, drivers without the CUDA 12.4 entry points (kernel names then come
 * from the image, parameters are unknown), the dlsym path where cuGetProcAddress answers
 * nothing, and ownership: destroying a device frees every object made from it and releases its
 * context, with nothing left allocated in the driver.
 */
#define _DEFAULT_SOURCE
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/gen.h"
#include "fdlink/host.h"
#include "fdlink/verify.h"

#define KERNELS FDL_GPU_KERNELS

/* Live objects in the mock: 0 device memory, 1 host memory, 2 modules, 3 streams, 4 events,
 * 5 module globals; -1 context retains. */
static long live(int kind)
{
    void *h = dlopen(FDL_MOCK_CUDA, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "the mock driver is not loaded");
    long (*fn)(int) = NULL;
    void *sym = dlsym(h, "mock_cuda_live");
    memcpy(&fn, &sym, sizeof fn);
    cr_assert_not_null(fn);
    long n = fn(kind);
    dlclose(h);
    return n;
}

static void use_mock(void)
{
    cr_assert_eq(setenv("FDLINK_LIBCUDA", FDL_MOCK_CUDA, 1), 0);
}

static fdl_device *open_mock(void)
{
    use_mock();
    fdl_device *dev = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_device_open(&dev, 0, &err);
    cr_assert_eq(rc, FDL_OK, "%s: %s", fdl_status_name(rc), err.message);
    return dev;
}

Test(host_mock, an_old_driver_is_refused_with_both_versions)
{
    use_mock();
    cr_assert_eq(setenv("MOCK_CUDA_DRIVER_VERSION", "11080", 1), 0);
    int version = 7;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_driver_version(&version, &err), FDL_ENOLIB);
    cr_assert_eq(version, 0);
    char expect[512];
    snprintf(expect, sizeof expect,
             "the CUDA driver %s is version 11.8, but fdlink needs 12.0 or later (update the "
             "NVIDIA driver)",
             FDL_MOCK_CUDA);
    cr_assert_str_eq(err.message, expect);
    cr_assert_eq(err.fields, FDL_ERROR_HAS_LIBRARY); /* the driver named as a field */
    cr_assert_str_eq(err.library, FDL_MOCK_CUDA);
    fdl_device *dev = NULL;
    cr_assert_eq(fdl_device_open(&dev, 0, &err), FDL_ENOLIB);
    cr_assert_null(dev);
    cr_assert_str_eq(err.library, FDL_MOCK_CUDA);
}

Test(host_mock, no_device_is_enodevice)
{
    use_mock();
    cr_assert_eq(setenv("MOCK_CUDA_DEVICES", "0", 1), 0);
    int count = 3;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_count(&count, &err), FDL_ENODEVICE);
    cr_assert_eq(count, 0);
    cr_assert_str_eq(err.message, "no CUDA device: cuInit failed: CUDA_ERROR_NO_DEVICE (no "
                                  "CUDA-capable device is detected)");
}

Test(host_mock, the_driver_version_is_reported)
{
    use_mock();
    int version = 0;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_driver_version(&version, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(version, 13000);
    fdl_device *dev = open_mock();
    cr_assert_eq(fdl_device_driver_version(dev), 13000);
    cr_assert_str_eq(fdl_device_arch(dev), "sm_90");
    fdl_device_destroy(dev);
    cr_assert_eq(live(-1), 0, "the primary context is still retained");
}

/* A driver of CUDA 12.2: no enumeration, no parameter info. */
static void old_driver_module(const char *file, int names_known)
{
    cr_assert_eq(setenv("MOCK_CUDA_DRIVER_VERSION", "12020", 1), 0);
    fdl_device *dev = open_mock();
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_load_file(&mod, dev, file, &err), FDL_OK, "%s", err.message);
    fdl_kernel *k = NULL;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "nope", &err), FDL_ENOTFOUND);
    char expect[800];
    if (names_known) {
        cr_assert_eq(fdl_module_kernel_count(mod), 12);
        snprintf(expect, sizeof expect,
                 "kernel 'nope' not found in module %s, which defines 12 kernels: add_one, "
                 "bounded, coop_exchange, empty, fill_u32, iota_u32, mm, params_mixed, saxpy, "
                 "shared_probe, spin, static_shared",
                 file);
    } else {
        cr_assert_eq(fdl_module_kernel_count(mod), 0);
        snprintf(expect, sizeof expect,
                 "kernel 'nope' not found in module %s (a driver older than CUDA 12.4 cannot "
                 "list the kernels of a fatbin)",
                 file);
    }
    cr_assert_str_eq(err.message, expect);
    /* parameters unknown: only the count of pointers is unchecked, the geometry still is */
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "iota_u32", &err), FDL_OK, "%s", err.message);
    fdl_kernel_attrs attrs;
    cr_assert_eq(fdl_kernel_get_attrs(k, &attrs, &err), FDL_OK);
    cr_assert_eq(attrs.params_known, 0);
    cr_assert_eq(fdl_kernel_param(k, 0, NULL, NULL, &err), FDL_ENOTFOUND);
    cr_assert_str_eq(err.message, "the CUDA driver (older than 12.4) cannot report the "
                                  "parameters of kernel 'iota_u32'");
    fdl_buffer *out = NULL;
    cr_assert_eq(fdl_buffer_create(&out, dev, 64 * 4, &err), FDL_OK);
    uint64_t p = fdl_buffer_address(out);
    uint32_t n = 64;
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(n)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.block.x = 64;
    cfg.flags = FDL_LAUNCH_SYNC;
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 2, &err), FDL_OK, "%s", err.message);
    uint32_t expect_words[64];
    for (uint32_t i = 0; i < 64; i++)
        expect_words[i] = 3 * i + 1;
    fdl_verify_report r;
    cr_assert_eq(fdl_buffer_verify(&r, out, 0, FDL_UINT32, expect_words, 64, NULL, &err), FDL_OK,
                 "%s", err.message);
    cfg.block.x = 2048;
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 2, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "block (2048,1,1) = 2048 threads exceeds the 1024 that kernel "
                                  "iota_u32 allows");
    fdl_device_destroy(dev);
    cr_assert_eq(live(0) + live(2) + live(5), 0);
}

Test(host_mock, an_old_driver_lists_cubin_kernels_from_the_elf_symbols)
{
    old_driver_module(KERNELS "/kernels.cubin", 1);
}

Test(host_mock, an_old_driver_lists_ptx_kernels_from_the_entries)
{
    old_driver_module(KERNELS "/kernels.ptx", 1);
}

Test(host_mock, an_old_driver_cannot_list_fatbin_kernels)
{
    old_driver_module(KERNELS "/kernels.fatbin", 0);
}

Test(host_mock, entry_points_are_found_by_dlsym_without_get_proc_address)
{
    cr_assert_eq(setenv("MOCK_CUDA_NO_GPA", "1", 1), 0);
    fdl_device *dev = open_mock();
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_load_file(&mod, dev, KERNELS "/kernels.cubin", &err), FDL_OK, "%s",
                 err.message);
    /* the optional CUDA 12.4 functions are not exported: names come from the image */
    cr_assert_eq(fdl_module_kernel_count(mod), 12);
    fdl_event *a = NULL, *b = NULL;
    cr_assert_eq(fdl_event_create(&a, dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_create(&b, dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_record(a, NULL, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_event_record(b, NULL, &err), FDL_OK, "%s", err.message);
    float ms = -1;
    cr_assert_eq(fdl_event_elapsed_ms(&ms, a, b, &err), FDL_OK, "%s", err.message);
    cr_assert_geq(ms, 0.0f);
    fdl_device_destroy(dev);
}

Test(host_mock, destroying_a_device_frees_everything_it_owns)
{
    fdl_device *dev = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_module *mod = NULL;
    cr_assert_eq(fdl_module_load_file(&mod, dev, KERNELS "/kernels.fatbin", &err), FDL_OK, "%s",
                 err.message);
    fdl_module *ptx = NULL;
    cr_assert_eq(fdl_module_load_file(&ptx, dev, KERNELS "/kernels.ptx", &err), FDL_OK, "%s",
                 err.message);
    fdl_kernel *k = NULL;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "add_one", &err), FDL_OK, "%s", err.message);
    fdl_buffer *bufs[5];
    for (int i = 0; i < 5; i++)
        cr_assert_eq(fdl_buffer_create(&bufs[i], dev, 1024, &err), FDL_OK, "%s", err.message);
    fdl_host_buffer *hb = NULL;
    cr_assert_eq(fdl_host_buffer_create(&hb, dev, 4096, &err), FDL_OK, "%s", err.message);
    fdl_stream *s = NULL;
    cr_assert_eq(fdl_stream_create(&s, dev, &err), FDL_OK, "%s", err.message);
    fdl_event *e = NULL;
    cr_assert_eq(fdl_event_create(&e, dev, &err), FDL_OK, "%s", err.message);
    uint64_t p = fdl_buffer_address(bufs[2]);
    uint32_t n = 256;
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(n)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.block.x = 256;
    cfg.stream = s;
    fdl_launch *l1 = NULL, *l2 = NULL;
    cr_assert_eq(fdl_launch_create(&l1, k, &cfg, args, 2, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_launch_create(&l2, k, &cfg, args, 2, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_launch_run(l1, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(live(0), 5);
    cr_assert_eq(live(1), 1);
    cr_assert_eq(live(2), 2);
    cr_assert_eq(live(3), 1);
    cr_assert_eq(live(4), 1);
    cr_assert_eq(live(-1), 1);
    /* some destroyed by hand, in any order, the rest by the device */
    fdl_buffer_destroy(bufs[3]);
    fdl_launch_destroy(l2);
    fdl_module_destroy(ptx);
    cr_assert_eq(live(0), 4);
    cr_assert_eq(live(2), 1);
    fdl_device_destroy(dev);
    for (int kind = 0; kind < 6; kind++)
        cr_assert_eq(live(kind), 0, "kind %d left alive", kind);
    cr_assert_eq(live(-1), 0, "the primary context is still retained");
}

Test(host_mock, objects_of_another_device_handle_are_refused)
{
    fdl_device *a = open_mock(), *b = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_stream *s = NULL;
    fdl_buffer *buf = NULL;
    cr_assert_eq(fdl_stream_create(&s, a, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_create(&buf, b, 64, &err), FDL_OK);
    unsigned char bytes[64] = {0};
    /* two handles of one GPU share its primary context: a stream of one serves the other */
    cr_assert_eq(fdl_buffer_write_async(buf, 0, bytes, 64, s, &err), FDL_OK, "%s", err.message);
    fdl_device_destroy(a);
    fdl_device_destroy(b);
    cr_assert_eq(live(-1), 0);
    cr_assert_eq(live(0) + live(3), 0);
}

Test(host_mock, a_wrapped_stream_is_checked_and_never_destroyed_by_fdlink)
{
    fdl_device *dev = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_stream *mine = NULL, *s = (fdl_stream *)&s;
    cr_assert_eq(fdl_stream_create(&mine, dev, &err), FDL_OK);
    cr_assert_eq(live(3), 1);
    /* a handle the driver does not know is refused, and nothing is made */
    int bogus = 0;
    cr_assert_eq(fdl_stream_wrap(&s, dev, &bogus, &err), FDL_ECUDA);
    cr_assert_null(s);
    cr_assert_str_eq(err.message, "fdl_stream_wrap: cuStreamGetCtx failed: "
                                  "CUDA_ERROR_INVALID_HANDLE (invalid resource handle)");
    /* a stream of another context is refused */
    cr_assert_eq(setenv("MOCK_CUDA_STREAM_CTX_OTHER", "1", 1), 0);
    cr_assert_eq(fdl_stream_wrap(&s, dev, fdl_stream_handle(mine), &err), FDL_EINVAL);
    cr_assert_null(s);
    char expect[256];
    snprintf(expect, sizeof expect,
             "fdl_stream_wrap: stream %p belongs to another CUDA context than the primary "
             "context of device 0",
             fdl_stream_handle(mine));
    cr_assert_str_eq(err.message, expect);
    /* the default streams are whichever context's is current: never asked */
    cr_assert_eq(fdl_stream_wrap(&s, dev, FDL_STREAM_PER_THREAD, &err), FDL_OK, "%s",
                 err.message);
    fdl_stream_destroy(s);
    cr_assert_eq(unsetenv("MOCK_CUDA_STREAM_CTX_OTHER"), 0);
    /* another's stream (here fdlink's own, made by another handle) is wrapped, not owned */
    fdl_device *other = open_mock();
    cr_assert_eq(fdl_stream_wrap(&s, other, fdl_stream_handle(mine), &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_stream_owned(s), 0);
    cr_assert_eq(live(3), 1);
    fdl_stream_destroy(s);
    cr_assert_eq(live(3), 1, "destroying the wrapper destroyed the stream");
    cr_assert_eq(fdl_stream_wrap(&s, other, fdl_stream_handle(mine), &err), FDL_OK);
    fdl_device_destroy(other);
    cr_assert_eq(live(3), 1, "destroying the wrapper's device destroyed the stream");
    fdl_stream_destroy(mine);
    cr_assert_eq(live(3), 0);
    fdl_device_destroy(dev);
    cr_assert_eq(live(-1), 0);
}

/* The map @p name (@p modes) of the declarations @p decl_file over the input @p input (made
 * into *decls and *gen, which the caller destroys); the test skips without NVRTC or nvJitLink. */
static fdl_map *mock_map(fdl_device *dev, const char *decl_file, const char *input,
                         const char *name, const char *modes, fdl_decls **decls, fdl_gen **gen)
{
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_decls_load(decls, decl_file, &err), FDL_OK, "%s", err.message);
    const char *const inputs[] = {input, NULL};
    fdl_gen_options o = FDL_GEN_OPTIONS_INIT;
    o.decls = *decls;
    o.inputs = inputs;
    fdl_map *m = NULL;
    int rc = fdl_gen_create(gen, dev, &o, &err);
    if (rc == FDL_OK)
        rc = fdl_map_create(&m, *gen, name, modes, &err);
    if (rc == FDL_ENOLIB)
        cr_skip_test("%s", err.message); /* no NVRTC or nvJitLink here */
    cr_assert_eq(rc, FDL_OK, "%s %s", err.message, err.log ? err.log : "");
    return m;
}

/* gen/'s map on a stream: the mock runs mul_f32_f32 with modes "as" (out[i] = a[i] * s). */
Test(host_mock, a_map_is_queued_on_the_stream_it_is_given)
{
    fdl_device *dev = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL;
    fdl_gen *gen = NULL;
    fdl_map *m = mock_map(dev, FDL_LINK_FIXTURES "/mul.decl", FDL_LINK_FIXTURES "/mul.ptx",
                          "mul_f32_f32", "as", &decls, &gen);
    enum { N = 1000 };
    float a[N], out[N];
    for (int i = 0; i < N; i++)
        a[i] = (float)i - 7.5f;
    fdl_buffer *ba = NULL, *bo = NULL;
    cr_assert_eq(fdl_buffer_create(&ba, dev, sizeof a, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_create(&bo, dev, sizeof out, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_write(ba, 0, a, sizeof a, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_zero(bo, &err), FDL_OK);
    fdl_stream *mine = NULL, *s = NULL;
    cr_assert_eq(fdl_stream_create(&mine, dev, &err), FDL_OK);
    cr_assert_eq(fdl_stream_wrap(&s, dev, fdl_stream_handle(mine), &err), FDL_OK);
    float scale = 2.5f;
    fdl_gen_arg args[] = {fdl_gen_buffer(bo), fdl_gen_buffer(ba), FDL_GEN_VALUE(scale)};
    cr_assert_eq(fdl_map_launch_async(m, N, args, 3, s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_stream_synchronize(s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_map_check(m, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read(bo, 0, out, sizeof out, &err), FDL_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(out[i], a[i] * 2.5f, "out[%d] = %g", i, (double)out[i]);
    /* the checks of fdl_map_launch come first */
    cr_assert_eq(fdl_map_launch_async(m, N, args, 2, s, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "map 'mul_f32_f32' takes 3 arguments, but 2 were given");
#ifdef NDEBUG /* a NULL handle asserts in debug builds */
    cr_assert_eq(fdl_map_launch_async(NULL, N, args, 3, s, &err), FDL_EINVAL);
    cr_assert_str_eq(err.message, "fdl_map_launch_async: map is NULL");
#endif
    /* the launch goes to that stream: once it is gone, the driver refuses the launch */
    fdl_stream_destroy(mine);
    cr_assert_eq(fdl_map_launch_async(m, N, args, 3, s, &err), FDL_ECUDA);
    cr_assert(strstr(err.message, "CUDA_ERROR_INVALID_HANDLE") != NULL, "%s", err.message);
    fdl_map_destroy(m);
    fdl_gen_destroy(gen);
    fdl_decls_destroy(decls);
    fdl_device_destroy(dev);
    cr_assert_eq(live(0) + live(3), 0);
}

/* A map whose device function fails at two indices (the mock runs safe_sqrt with modes "a"): the
 * lowest index and the count as fields of the error, as its message says them */
Test(host_mock, a_failing_map_carries_its_index_and_count)
{
    fdl_device *dev = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL;
    fdl_gen *gen = NULL;
    fdl_map *m = mock_map(dev, FDL_LINK_FIXTURES "/../run/safe_sqrt.decl",
                          FDL_LINK_FIXTURES "/../run/safe_sqrt.cu", "safe_sqrt", "a", &decls, &gen);
    enum { N = 100 };
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    x[61] = -1.0f;
    x[37] = -4.0f;
    fdl_buffer *bx = NULL, *bo = NULL;
    cr_assert_eq(fdl_buffer_create(&bx, dev, sizeof x, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_create(&bo, dev, sizeof x, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_write(bx, 0, x, sizeof x, &err), FDL_OK);
    fdl_gen_arg args[] = {fdl_gen_buffer(bo), fdl_gen_buffer(bx)};
    int rc = fdl_map_run(m, N, args, 2, &err);
    cr_assert_eq(rc, FDL_EDEVICE, "got %s: %s", fdl_status_name(rc), err.message);
    cr_assert_str_eq(err.message, "device function safe_sqrt returned status 1 at index 37 in "
                                  "map 'safe_sqrt' (first of 2 failures)");
    cr_assert_eq(err.backend_code, 1);
    cr_assert_eq(err.fields, FDL_ERROR_HAS_INDEX | FDL_ERROR_HAS_COUNT);
    cr_assert_eq(err.index, 37);
    cr_assert_eq(err.count, 2);
    /* one failure: counted 1 (the message says no count) */
    x[61] = 61.0f;
    cr_assert_eq(fdl_buffer_write(bx, 0, x, sizeof x, &err), FDL_OK);
    cr_assert_eq(fdl_map_run(m, N, args, 2, &err), FDL_EDEVICE);
    cr_assert_str_eq(err.message, "device function safe_sqrt returned status 1 at index 37 in "
                                  "map 'safe_sqrt'");
    cr_assert_eq(err.index, 37);
    cr_assert_eq(err.count, 1);
    /* a clean run leaves err as it was and clears nothing it should not */
    x[37] = 37.0f;
    cr_assert_eq(fdl_buffer_write(bx, 0, x, sizeof x, &err), FDL_OK);
    cr_assert_eq(fdl_map_run(m, N, args, 2, &err), FDL_OK, "%s", err.message);
    fdl_map_destroy(m);
    fdl_gen_destroy(gen);
    fdl_decls_destroy(decls);
    fdl_device_destroy(dev);
    cr_assert_eq(live(0), 0);
}

Test(host_mock, an_old_driver_gives_no_parameter_sizes)
{
    use_mock();
    cr_assert_eq(setenv("MOCK_CUDA_DRIVER_VERSION", "12030", 1), 0);
    fdl_device *dev = open_mock();
    fdl_module *mod = NULL;
    fdl_kernel *k = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_module_load_file(&mod, dev, KERNELS "/kernels.cubin", &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "fill_u32", &err), FDL_OK, "%s", err.message);
    size_t count = 99;
    cr_assert_null(fdl_kernel_param_sizes(k, &count));
    cr_assert_eq(count, 0);
    fdl_device_destroy(dev);
}

Test(host_mock, an_async_fault_names_the_last_kernel_even_after_its_module_is_gone)
{
    fdl_device *dev = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_module *mod = NULL;
    cr_assert_eq(fdl_module_load_file(&mod, dev, KERNELS "/kernels.ptx", &err), FDL_OK, "%s",
                 err.message);
    fdl_kernel *k = NULL;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "iota_u32", &err), FDL_OK, "%s", err.message);
    uint64_t bad = 8;
    uint32_t n = 1;
    fdl_arg args[] = {FDL_ARG(bad), FDL_ARG(n)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 2, &err), FDL_OK, "%s", err.message);
    fdl_module_destroy(mod);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_ECUDA);
    cr_assert_str_eq(err.message, "an earlier launch failed: CUDA_ERROR_ILLEGAL_ADDRESS (an "
                                  "illegal memory access was encountered); the last kernel "
                                  "launched was 'iota_u32'");
    fdl_device_destroy(dev);
}

/*
 * Parameter counts come from the image, so that no driver call is made that is bound to fail
 * (compute-sanitizer reports each as an API error): cuFuncGetParamInfo is asked only for indices
 * that exist, and a kernel the module does not define is not looked up in the driver.
 */
static void params_without_refused_calls(const char *path)
{
    static const struct {
        const char *name;
        size_t nparams;
    } expect[] = {{"add_one", 2}, {"bounded", 1},  {"coop_exchange", 3}, {"empty", 0},
                  {"fill_u32", 3}, {"iota_u32", 2}, {"mm", 4},            {"params_mixed", 6},
                  {"saxpy", 4},   {"shared_probe", 2}, {"spin", 2},       {"static_shared", 1}};
    fdl_device *dev = open_mock();
    fdl_module *mod = NULL;
    fdl_error err = FDL_ERROR_INIT;
    long before = live(-2);
    cr_assert_eq(fdl_module_load_file(&mod, dev, path, &err), FDL_OK, "%s", err.message);
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        fdl_kernel *k = NULL;
        cr_assert_eq(fdl_module_get_kernel(&k, mod, expect[i].name, &err), FDL_OK, "%s",
                     err.message);
        fdl_kernel_attrs a;
        cr_assert_eq(fdl_kernel_get_attrs(k, &a, &err), FDL_OK);
        cr_assert_eq(a.params_known, 1, "%s: %s", path, expect[i].name);
        cr_assert_eq(a.nparams, expect[i].nparams, "%s: %s takes %zu, read %zu", path,
                     expect[i].name, expect[i].nparams, a.nparams);
    }
    fdl_kernel *k = (fdl_kernel *)&k;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "no_such_kernel", &err), FDL_ENOTFOUND);
    cr_assert_null(k);
    cr_assert_eq(err.backend_code, 500 /* CUDA_ERROR_NOT_FOUND, as the driver would say */);
    cr_assert_eq(live(-2), before, "%s: %ld driver calls refused", path, live(-2) - before);
    /* params_mixed(u64 *, signed char, double, const void *, s24, short): the driver's layout */
    size_t off = 0, size = 0;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "params_mixed", &err), FDL_OK);
    cr_assert_eq(fdl_kernel_param(k, 5, &off, &size, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(size, 2);
    cr_assert_eq(fdl_kernel_param(k, 6, &off, &size, &err), FDL_EINVAL);
    fdl_device_destroy(dev);
}

Test(host_mock, cubin_parameters_come_from_nv_info_without_refused_calls)
{
    params_without_refused_calls(KERNELS "/kernels.cubin");
}

Test(host_mock, ptx_parameters_come_from_the_entries_without_refused_calls)
{
    params_without_refused_calls(KERNELS "/kernels.ptx");
}

Test(host_mock, fatbin_parameters_come_from_its_members_without_refused_calls)
{
    params_without_refused_calls(KERNELS "/kernels.fatbin");
}

Test(host_mock, open_minus_one_takes_the_gpu_ctest_assigned)
{
    use_mock();
    cr_assert_eq(setenv("MOCK_CUDA_DEVICES", "3", 1), 0);
    cr_assert_eq(setenv("FDLINK_DEVICE", "0", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_COUNT", "1", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0", "gpus", 1), 0);
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:2,slots:1", 1), 0);
    fdl_device *dev = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_device_ordinal(dev), 2);
    fdl_device_destroy(dev);
    dev = NULL;
    /* a device the driver does not have: the message says ctest named it */
    cr_assert_eq(setenv("CTEST_RESOURCE_GROUP_0_GPUS", "id:5,slots:1", 1), 0);
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_ENODEVICE);
    cr_assert_null(dev);
    cr_assert_str_eq(err.message, "no CUDA device 5: the driver reports 3 devices (0..2), but "
                                  "ctest assigned device 5 in CTEST_RESOURCE_GROUP_0_GPUS (a "
                                  "resource spec of another host?)");
    /* without ctest's variables, FDLINK_DEVICE */
    cr_assert_eq(unsetenv("CTEST_RESOURCE_GROUP_COUNT"), 0);
    cr_assert_eq(setenv("FDLINK_DEVICE", "1", 1), 0);
    cr_assert_eq(fdl_device_open(&dev, -1, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_device_ordinal(dev), 1);
    fdl_device_destroy(dev);
}

Test(host_mock, the_resource_spec_lists_every_gpu_with_its_slots)
{
    use_mock();
    cr_assert_eq(setenv("MOCK_CUDA_DEVICES", "2", 1), 0);
    char *json = NULL;
    size_t len = 0;
    int ngpus = 0;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_device_ctest_resource_spec(&json, &len, &ngpus, 3, &err), FDL_OK, "%s",
                 err.message);
    cr_assert_eq(ngpus, 2);
    cr_assert_str_eq(json, "{\n"
                           "  \"version\": {\n"
                           "    \"major\": 1,\n"
                           "    \"minor\": 0\n"
                           "  },\n"
                           "  \"local\": [\n"
                           "    {\n"
                           "      \"gpus\": [\n"
                           "        {\n"
                           "          \"id\": \"0\",\n"
                           "          \"slots\": 3\n"
                           "        },\n"
                           "        {\n"
                           "          \"id\": \"1\",\n"
                           "          \"slots\": 3\n"
                           "        }\n"
                           "      ]\n"
                           "    }\n"
                           "  ]\n"
                           "}\n");
    cr_assert_eq(len, strlen(json));
    free(json);
}

/*
 * CUDA graph capture (MOCK_CUDA_CAPTURING: every created stream "is being captured", and waiting
 * for it fails as the driver's does): fdl_stream_is_capturing says so, a synchronous launch and
 * fdl_stream_synchronize are refused before anything is queued (the capture would be invalidated),
 * an asynchronous launch is queued as usual.
 */
Test(host_mock, a_wait_in_a_capturing_stream_is_refused_before_it_is_queued)
{
    fdl_device *dev = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_module *mod = NULL;
    cr_assert_eq(fdl_module_load_file(&mod, dev, KERNELS "/kernels.ptx", &err), FDL_OK, "%s",
                 err.message);
    fdl_kernel *k = NULL;
    cr_assert_eq(fdl_module_get_kernel(&k, mod, "iota_u32", &err), FDL_OK, "%s", err.message);
    fdl_stream *s = NULL;
    cr_assert_eq(fdl_stream_create(&s, dev, &err), FDL_OK, "%s", err.message);
    int capturing = -1;
    cr_assert_eq(fdl_stream_is_capturing(s, &capturing, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(capturing, 0);
    fdl_buffer *out = NULL;
    cr_assert_eq(fdl_buffer_create(&out, dev, 64 * 4, &err), FDL_OK);
    cr_assert_eq(fdl_buffer_zero(out, &err), FDL_OK);
    cr_assert_eq(setenv("MOCK_CUDA_CAPTURING", "1", 1), 0);
    cr_assert_eq(fdl_stream_is_capturing(s, &capturing, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(capturing, 1);
    uint64_t p = fdl_buffer_address(out);
    uint32_t n = 64;
    fdl_arg args[] = {FDL_ARG(p), FDL_ARG(n)};
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.block.x = 64;
    cfg.stream = s;
    cfg.flags = FDL_LAUNCH_SYNC;
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 2, &err), FDL_EINVAL);
    char expect[400];
    snprintf(expect, sizeof expect, "a synchronous launch of kernel 'iota_u32' in stream %p, "
             "which is being captured into a CUDA graph: waiting would invalidate the capture "
             "(launch without waiting, and check statuses after a replay)", fdl_stream_handle(s));
    cr_assert_str_eq(err.message, expect);
    cr_assert_str_eq(err.symbol, "iota_u32");
    cr_assert_eq(fdl_stream_synchronize(s, &err), FDL_EINVAL);
    cr_assert(strstr(err.message, "fdl_stream_synchronize in stream") != NULL, "%s", err.message);
    uint32_t words[64];
    cr_assert_eq(unsetenv("MOCK_CUDA_CAPTURING"), 0);
    cr_assert_eq(fdl_buffer_read(out, 0, words, sizeof words, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(words[5], 0, "nothing was queued by the refused launch");
    cr_assert_eq(setenv("MOCK_CUDA_CAPTURING", "1", 1), 0);
    cfg.flags = 0;
    cr_assert_eq(fdl_kernel_launch_ex(k, &cfg, args, 2, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(unsetenv("MOCK_CUDA_CAPTURING"), 0);
    cr_assert_eq(fdl_stream_synchronize(s, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_read(out, 0, words, sizeof words, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(words[5], 16);
    fdl_device_destroy(dev);
}

/*
 * Buffers during a capture (issue 39): cuMemFree would invalidate it (the mock refuses it, and
 * counts what a real capture would have been invalidated by: mock_cuda_live(-3)), so a buffer
 * destroyed or released meanwhile keeps its memory, and it is freed at the next point outside
 * the capture; the wait of fdl_device_synchronize is refused; an allocation is made in the
 * relaxed capture mode, the thread's mode restored after it.
 */
Test(host_mock, a_buffer_freed_during_a_capture_is_released_after_it)
{
    fdl_device *dev = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_stream *s = NULL;
    cr_assert_eq(fdl_stream_create(&s, dev, &err), FDL_OK, "%s", err.message);
    fdl_buffer *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(fdl_buffer_create(&a, dev, 256, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_create(&b, dev, 256, &err), FDL_OK, "%s", err.message);
    long base = live(0), refused = live(-3);
    cr_assert_eq(setenv("MOCK_CUDA_CAPTURING", "1", 1), 0);
    fdl_buffer_destroy(a);
    cr_assert_eq(fdl_buffer_release(b, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(live(0), base, "the memory is kept during the capture");
    cr_assert_eq(live(-3), refused, "nothing the capture prohibits was called");
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_EINVAL);
    char expect[300];
    snprintf(expect, sizeof expect, "fdl_device_synchronize: stream %p of device 0 is being "
             "captured into a CUDA graph: waiting would invalidate the capture (synchronize "
             "after it ends)", fdl_stream_handle(s));
    cr_assert_str_eq(err.message, expect);
    cr_assert_eq(fdl_buffer_create(&c, dev, 64, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(live(0), base + 1, "allocated during the capture; nothing freed yet");
    cr_assert_eq(live(-3), refused);
    cr_assert_eq(live(-4), 0, "the thread's mode is restored (CU_STREAM_CAPTURE_MODE_GLOBAL)");
    cr_assert_eq(unsetenv("MOCK_CUDA_CAPTURING"), 0);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(live(0), base - 1, "both freed after the capture");
    fdl_buffer_destroy(c);
    cr_assert_eq(live(0), base - 2);
    fdl_device_destroy(dev);
    cr_assert_eq(live(0), 0);
}

/* The next allocation, release or destroy outside a capture frees what it deferred; so does the
 * device's destruction; a capture seen only through the legacy stream (a blocking stream fdlink
 * does not know) defers as well. */
Test(host_mock, deferred_buffers_go_at_the_next_point_outside_a_capture)
{
    fdl_device *dev = open_mock();
    fdl_error err = FDL_ERROR_INIT;
    fdl_buffer *a = NULL, *b = NULL, *c = NULL;
    cr_assert_eq(fdl_buffer_create(&a, dev, 16, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_buffer_create(&b, dev, 16, &err), FDL_OK, "%s", err.message);
    long refused = live(-3);
    cr_assert_eq(setenv("MOCK_CUDA_CAPTURING", "implicit", 1), 0);
    fdl_buffer_destroy(a);
    cr_assert_eq(live(0), 2);
    cr_assert_eq(fdl_device_synchronize(dev, &err), FDL_EINVAL);
    cr_assert(strstr(err.message, "is being captured into a CUDA graph") != NULL, "%s",
              err.message);
    cr_assert_eq(unsetenv("MOCK_CUDA_CAPTURING"), 0);
    cr_assert_eq(fdl_buffer_create(&c, dev, 16, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(live(0), 2, "a freed by the allocation after the capture");
    cr_assert_eq(setenv("MOCK_CUDA_CAPTURING", "1", 1), 0);
    fdl_stream *s = NULL;
    cr_assert_eq(fdl_stream_create(&s, dev, &err), FDL_OK, "%s", err.message);
    fdl_buffer_destroy(b);
    cr_assert_eq(live(0), 2);
    cr_assert_eq(unsetenv("MOCK_CUDA_CAPTURING"), 0);
    cr_assert_eq(fdl_buffer_release(c, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(live(0), 0, "b freed by the release after the capture, then c");
    cr_assert_eq(setenv("MOCK_CUDA_CAPTURING", "1", 1), 0);
    cr_assert_eq(fdl_buffer_create(&a, dev, 16, &err), FDL_OK, "%s", err.message);
    fdl_buffer_destroy(a);
    cr_assert_eq(unsetenv("MOCK_CUDA_CAPTURING"), 0);
    cr_assert_eq(live(0), 1);
    cr_assert_eq(live(-3), refused);
    fdl_device_destroy(dev);
    cr_assert_eq(live(0), 0, "the device's destruction frees what a capture deferred");
}

/* Issue 38: a cubin says its kernels' parameter sizes, not their classes. */
Test(host_image, kernel_param_info_of_a_cubin)
{
    FILE *f = fopen(KERNELS "/kernels.cubin", "rb");
    cr_assert_not_null(f);
    static unsigned char cubin[1 << 20];
    size_t size = fread(cubin, 1, sizeof cubin, f);
    fclose(f);
    cr_assert_gt(size, 0);
    cr_assert_lt(size, sizeof cubin);
    fdl_param_info pi[8];
    size_t count = 0;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_image_kernel_param_info(cubin, size, "params_mixed", pi, 8, &count, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(count, 6);
    static const size_t want[] = {8, 1, 8, 8, 24, 2};
    for (size_t i = 0; i < 6; i++) {
        cr_assert_eq(pi[i].size, want[i], "parameter %zu", i);
        cr_assert_eq(pi[i].cls, FDL_PARAM_UNKNOWN, "parameter %zu", i);
    }
}
