/*
 * Launches: checked against the device, the kernel and its parameters before the driver sees
 * them; prepared launches checked once and then run at the cost of cuLaunchKernel.
 */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "internal.h"

/* Arguments described on the stack up to this many; more take one allocation per launch. */
#define STACK_ARGS 32

struct fdl_launch {
    fdl__child child; /* first: owned by the kernel's module */
    fdl_kernel *kernel;
    const fdl__cuda *cu;
    CUcontext ctx;
    CUfunction fn;
    CUstream stream;
    unsigned grid[3], block[3];
    unsigned shared_bytes;
    unsigned flags; /* FDL_LAUNCH_* it was prepared with */
    int cooperative;
    size_t nargs;
    void **params;         /* nargs pointers into values */
    size_t *sizes;         /* nargs sizes */
    unsigned char *values; /* the argument values, each at a 16-byte aligned offset */
};

/* ---- checks --------------------------------------------------------------------------------- */

/*
 * Also decides whether the launch is cooperative (*coop): FDL_LAUNCH_COOPERATIVE asks for one
 * (and a grid that does not fit at once is refused); a kernel whose cubin lists
 * cooperative-groups instructions gets one whenever its grid fits, unless
 * FDL_LAUNCH_NOT_COOPERATIVE (a grid sync needs it; block and tile groups do not mind it).
 */
static int check_geometry(fdl_kernel *k, fdl_dim3 grid, fdl_dim3 block, size_t shared,
                          unsigned flags, int *coop, fdl_error *err)
{
    *coop = 0;
    const fdl_device *dev = k->mod->dev;
    const fdl_device_info *info = &dev->info;
    const unsigned dims[6] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
    const unsigned limits[6] = {info->max_grid.x,  info->max_grid.y,  info->max_grid.z,
                                info->max_block.x, info->max_block.y, info->max_block.z};
    static const char *const names[6] = {"grid.x",  "grid.y",  "grid.z",
                                          "block.x", "block.y", "block.z"};
    for (size_t i = 0; i < 6; i++)
        if (dims[i] == 0)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                              "%s is 0 in the launch of kernel '%s' (every dimension must be at "
                              "least 1)",
                              names[i], k->name);
    unsigned long long threads =
        (unsigned long long)block.x * (unsigned long long)block.y * (unsigned long long)block.z;
    if (threads > k->attrs.max_threads_per_block)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                          "block (%u,%u,%u) = %llu threads exceeds the %u that kernel %s allows",
                          block.x, block.y, block.z, threads, k->attrs.max_threads_per_block,
                          k->name);
    for (size_t i = 0; i < 6; i++)
        if (dims[i] > limits[i])
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                              "%s = %u exceeds the %u that the device allows, launching kernel "
                              "%s",
                              names[i], dims[i], limits[i], k->name);
    if (shared > k->attrs.max_dynamic_shared) {
        size_t optin = info->max_shared_per_block_optin;
        size_t most = optin > k->attrs.static_shared ? optin - k->attrs.static_shared : 0;
        if (most > k->attrs.max_dynamic_shared)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                              "dynamic shared memory of %zu bytes exceeds the %zu that kernel %s "
                              "allows (fdl_kernel_set_max_dynamic_shared can raise that to %zu)",
                              shared, k->attrs.max_dynamic_shared, k->name, most);
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                          "dynamic shared memory of %zu bytes exceeds the %zu that kernel %s "
                          "allows",
                          shared, k->attrs.max_dynamic_shared, k->name);
    }
    int wanted = (flags & FDL_LAUNCH_COOPERATIVE) != 0;
    int automatic = !wanted && !(flags & FDL_LAUNCH_NOT_COOPERATIVE) &&
                    k->attrs.cooperative_groups && info->cooperative_launch;
    if (wanted || automatic) {
        if (!info->cooperative_launch)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                              "device %d does not support cooperative launches (kernel %s)",
                              info->ordinal, k->name);
        int per_sm = 0;
        CUresult r = dev->cu->occupancy_max_active_blocks(&per_sm, k->fn, (int)threads, shared);
        if (r != CUDA_SUCCESS) {
            int rc = fdl__device_error(err, dev, r, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
            if (err && !err->symbol[0])
                fdl__strlcpy(err->symbol, k->name, sizeof err->symbol);
            return rc;
        }
        unsigned long long blocks =
            (unsigned long long)grid.x * (unsigned long long)grid.y * (unsigned long long)grid.z;
        unsigned long long resident = (unsigned long long)(per_sm > 0 ? per_sm : 0) *
                                      (unsigned long long)(info->sm_count > 0 ? info->sm_count
                                                                              : 0);
        if (blocks > resident && wanted)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                              "cooperative launch of %llu blocks exceeds the %llu that can be "
                              "resident at once for kernel %s (%d per SM on %d SMs)",
                              blocks, resident, k->name, per_sm, info->sm_count);
        *coop = blocks <= resident;
    }
    return FDL_OK;
}

/* The argument count against the kernel's parameters, where the driver reports them. */
static int check_count(const fdl_kernel *k, size_t nargs, fdl_error *err)
{
    if (!k->attrs.params_known || nargs == k->attrs.nparams)
        return FDL_OK;
    size_t n = k->attrs.nparams;
    return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                      "kernel %s takes %zu parameter%s, but %zu argument%s given", k->name, n,
                      n == 1 ? "" : "s", nargs, nargs == 1 ? " was" : "s were");
}

static int null_argument(const fdl_kernel *k, size_t i, fdl_error *err)
{
    return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                      "argument %zu of kernel '%s' is NULL (expected a pointer to the value)", i,
                      k->name);
}

static int check_args(const fdl_kernel *k, const fdl_arg *args, size_t nargs, fdl_error *err)
{
    if (nargs && !args)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                          "%zu arguments but no argument array for kernel '%s'", nargs, k->name);
    int rc = check_count(k, nargs, err);
    if (rc != FDL_OK)
        return rc;
    for (size_t i = 0; i < nargs; i++) {
        if (!args[i].value)
            return null_argument(k, i, err);
        if (k->attrs.params_known && args[i].size != k->param_sizes[i])
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                              "kernel %s: argument %zu has %zu byte%s, but parameter %zu takes "
                              "%zu",
                              k->name, i, args[i].size, args[i].size == 1 ? "" : "s", i,
                              k->param_sizes[i]);
        if (!args[i].size)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                              "kernel %s: argument %zu has 0 bytes", k->name, i);
    }
    return FDL_OK;
}

static int check_config(const fdl_kernel *k, const fdl_launch_config *cfg, const char *what,
                        fdl_error *err)
{
    if (cfg->version != FDL_LAUNCH_CONFIG_VERSION)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                          "%s: unsupported fdl_launch_config version %u (expected %u)", what,
                          cfg->version, FDL_LAUNCH_CONFIG_VERSION);
    const unsigned known = FDL_LAUNCH_COOPERATIVE | FDL_LAUNCH_SYNC | FDL_LAUNCH_NOT_COOPERATIVE;
    if (cfg->flags & ~known)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                          "%s: unknown launch flags 0x%x", what, cfg->flags & ~known);
    if ((cfg->flags & FDL_LAUNCH_COOPERATIVE) && (cfg->flags & FDL_LAUNCH_NOT_COOPERATIVE))
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, k->name,
                          "%s: FDL_LAUNCH_COOPERATIVE and FDL_LAUNCH_NOT_COOPERATIVE together",
                          what);
    return FDL_OK;
}

/* ---- launching ------------------------------------------------------------------------------ */

/* FDL_ECUDA for a refused launch of @p k. */
static int launch_error(const fdl_kernel *k, CUresult r, int cooperative, fdl_error *err)
{
    const fdl_device *dev = k->mod->dev;
    if (fdl__cu_is_async(r))
        return fdl__device_error(err, dev, r, cooperative ? "cuLaunchCooperativeKernel"
                                                          : "cuLaunchKernel");
    char what[FDL_ERROR_SYMBOL_MAX + 64];
    snprintf(what, sizeof what, "%s for kernel '%s'",
             cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel", k->name);
    int rc = fdl__cu_error(err, dev->cu, r, what, NULL);
    if (err)
        fdl__strlcpy(err->symbol, k->name, sizeof err->symbol);
    return rc;
}

static int launch(fdl_kernel *k, fdl_dim3 grid, fdl_dim3 block, unsigned shared, CUstream stream,
                  int cooperative, void **params, fdl_error *err)
{
    const fdl__cuda *cu = k->mod->dev->cu;
    CUresult r = cooperative ? cu->launch_cooperative_kernel(k->fn, grid.x, grid.y, grid.z,
                                                             block.x, block.y, block.z, shared,
                                                             stream, params)
                             : cu->launch_kernel(k->fn, grid.x, grid.y, grid.z, block.x, block.y,
                                                 block.z, shared, stream, params, NULL);
    if (r != CUDA_SUCCESS)
        return launch_error(k, r, cooperative, err);
    fdl__note_launch(k);
    return FDL_OK;
}

/* FDL_LAUNCH_SYNC: wait for the launch, then read the module's device status. */
static int finish(fdl_kernel *k, CUstream stream, fdl_error *err)
{
    fdl_module *mod = k->mod;
    fdl_device *dev = mod->dev;
    CUresult r = stream ? dev->cu->stream_synchronize(stream) : dev->cu->ctx_synchronize();
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, stream ? "cuStreamSynchronize" : "cuCtxSynchronize");
    if (!mod->status)
        return FDL_OK;
    return fdl_module_check_status(mod, err);
}

int fdl_kernel_launch(fdl_kernel *kernel, fdl_dim3 grid, fdl_dim3 block, unsigned shared_bytes,
                      void **args, size_t nargs, fdl_error *err)
{
    if (!FDL__CHECK_ARG(kernel))
        return fdl__fail(err, FDL_EINVAL, "fdl_kernel_launch: kernel is NULL");
    fdl_device *dev = kernel->mod->dev;
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    int coop = 0;
    if ((rc = check_geometry(kernel, grid, block, shared_bytes, 0, &coop, err)) != FDL_OK)
        return rc;
    if (nargs && !args)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, kernel->name,
                          "%zu arguments but no argument array for kernel '%s'", nargs,
                          kernel->name);
    if ((rc = check_count(kernel, nargs, err)) != FDL_OK)
        return rc;
    for (size_t i = 0; i < nargs; i++)
        if (!args[i])
            return null_argument(kernel, i, err);
    return launch(kernel, grid, block, shared_bytes, NULL, coop, nargs ? args : NULL, err);
}

int fdl_kernel_launch_ex(fdl_kernel *kernel, const fdl_launch_config *cfg, const fdl_arg *args,
                         size_t nargs, fdl_error *err)
{
    if (!FDL__CHECK_ARG(kernel) || !FDL__CHECK_ARG(cfg))
        return fdl__fail(err, FDL_EINVAL, "fdl_kernel_launch_ex: kernel or cfg is NULL");
    fdl_device *dev = kernel->mod->dev;
    CUstream stream = NULL;
    void *stack[STACK_ARGS];
    void **params = stack;
    int rc, coop = 0;
    if ((rc = check_config(kernel, cfg, "fdl_kernel_launch_ex", err)) != FDL_OK ||
        (rc = fdl__stream_of(&stream, cfg->stream, dev, "fdl_kernel_launch_ex", err)) != FDL_OK ||
        (rc = fdl__device_enter(dev, err)) != FDL_OK ||
        (rc = check_geometry(kernel, cfg->grid, cfg->block, cfg->shared_bytes, cfg->flags,
                             &coop, err)) != FDL_OK ||
        (rc = check_args(kernel, args, nargs, err)) != FDL_OK)
        return rc;
    if ((cfg->flags & FDL_LAUNCH_SYNC) && stream) {
        char what[FDL_ERROR_SYMBOL_MAX + 48];
        snprintf(what, sizeof what, "a synchronous launch of kernel '%s'", kernel->name);
        if ((rc = fdl__refuse_in_capture(dev, stream, what, kernel->name, err)) != FDL_OK)
            return rc;
    }
    if (nargs > STACK_ARGS) {
        size_t bytes;
        if (!fdl__size_mul(&bytes, nargs, sizeof *params) || !(params = malloc(bytes)))
            return fdl__error(err, FDL_ENOMEM, NULL, 0, 0, kernel->name, "out of memory");
    }
    /* the driver reads the values through these pointers and never writes them */
    for (size_t i = 0; i < nargs; i++)
        params[i] = (void *)(uintptr_t)args[i].value;
    rc = launch(kernel, cfg->grid, cfg->block, (unsigned)cfg->shared_bytes, stream,
                coop, nargs ? params : NULL, err);
    if (params != stack)
        free(params);
    if (rc == FDL_OK && (cfg->flags & FDL_LAUNCH_SYNC))
        rc = finish(kernel, stream, err);
    return rc;
}

/* ---- prepared launches ---------------------------------------------------------------------- */

static void launch_child_destroy(fdl__child *c)
{
    fdl_launch_destroy((fdl_launch *)c);
}

int fdl_launch_create(fdl_launch **out, fdl_kernel *kernel, const fdl_launch_config *cfg,
                      const fdl_arg *args, size_t nargs, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_launch_create: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(kernel) || !FDL__CHECK_ARG(cfg))
        return fdl__fail(err, FDL_EINVAL, "fdl_launch_create: kernel or cfg is NULL");
    fdl_device *dev = kernel->mod->dev;
    CUstream stream = NULL;
    int rc, coop = 0;
    if ((rc = check_config(kernel, cfg, "fdl_launch_create", err)) != FDL_OK)
        return rc;
    if (cfg->flags & FDL_LAUNCH_SYNC)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, kernel->name,
                          "fdl_launch_create: FDL_LAUNCH_SYNC is not for prepared launches (check "
                          "with fdl_module_check_status), kernel %s",
                          kernel->name);
    if ((rc = fdl__stream_of(&stream, cfg->stream, dev, "fdl_launch_create", err)) != FDL_OK ||
        (rc = fdl__device_enter(dev, err)) != FDL_OK ||
        (rc = check_geometry(kernel, cfg->grid, cfg->block, cfg->shared_bytes, cfg->flags,
                             &coop, err)) != FDL_OK ||
        (rc = check_args(kernel, args, nargs, err)) != FDL_OK)
        return rc;
    /* one block: the pointers, the sizes, then each value at a 16-byte aligned offset */
    size_t head, total, bytes;
    int ok = fdl__size_mul(&head, nargs, sizeof(void *) + sizeof(size_t));
    ok = ok && fdl__size_add(&head, head, 15);
    head &= ~(size_t)15;
    total = head;
    for (size_t i = 0; ok && i < nargs; i++)
        ok = fdl__size_add(&bytes, args[i].size, 15) &&
             fdl__size_add(&total, total, bytes & ~(size_t)15);
    fdl_launch *l = NULL;
    if (!ok)
        return fdl__error(err, FDL_ENOMEM, NULL, 0, 0, kernel->name,
                          "arguments of kernel %s too large", kernel->name);
    l = calloc(1, sizeof *l);
    unsigned char *block = l && total ? malloc(total) : NULL;
    if (!l || (total && !block)) {
        free(l);
        return fdl__error(err, FDL_ENOMEM, NULL, 0, 0, kernel->name, "out of memory");
    }
    l->kernel = kernel;
    l->cu = dev->cu;
    l->ctx = dev->ctx;
    l->fn = kernel->fn;
    l->stream = stream;
    l->grid[0] = cfg->grid.x;
    l->grid[1] = cfg->grid.y;
    l->grid[2] = cfg->grid.z;
    l->block[0] = cfg->block.x;
    l->block[1] = cfg->block.y;
    l->block[2] = cfg->block.z;
    l->shared_bytes = (unsigned)cfg->shared_bytes;
    l->flags = cfg->flags;
    l->cooperative = coop;
    l->nargs = nargs;
    if (nargs) {
        l->params = (void **)(void *)block;
        l->sizes = (size_t *)(void *)(block + nargs * sizeof(void *));
        l->values = block + head;
        size_t at = 0;
        for (size_t i = 0; i < nargs; i++) {
            l->params[i] = l->values + at;
            l->sizes[i] = args[i].size;
            memcpy(l->values + at, args[i].value, args[i].size);
            at += (args[i].size + 15) & ~(size_t)15;
        }
    }
    fdl__children_add(&kernel->mod->prepared, &l->child, FDL__LAUNCH, launch_child_destroy);
    *out = l;
    return FDL_OK;
}

int fdl_launch_run(fdl_launch *l, fdl_error *err)
{
    if (!FDL__CHECK_ARG(l))
        return fdl__fail(err, FDL_EINVAL, "fdl_launch_run: launch is NULL");
    const fdl__cuda *cu = l->cu;
    CUresult r = cu->ctx_set_current(l->ctx);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, l->kernel->mod->dev, r, "cuCtxSetCurrent");
    r = l->cooperative
            ? cu->launch_cooperative_kernel(l->fn, l->grid[0], l->grid[1], l->grid[2],
                                            l->block[0], l->block[1], l->block[2],
                                            l->shared_bytes, l->stream, l->params)
            : cu->launch_kernel(l->fn, l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                l->block[1], l->block[2], l->shared_bytes, l->stream, l->params,
                                NULL);
    if (r != CUDA_SUCCESS)
        return launch_error(l->kernel, r, l->cooperative, err);
    fdl__note_launch(l->kernel);
    return FDL_OK;
}

int fdl_launch_set_arg(fdl_launch *l, size_t index, const void *value, size_t size,
                       fdl_error *err)
{
    if (!FDL__CHECK_ARG(l) || !FDL__CHECK_ARG(value))
        return fdl__fail(err, FDL_EINVAL, "fdl_launch_set_arg: launch or value is NULL");
    const char *name = l->kernel->name;
    if (index >= l->nargs)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, name,
                          "kernel %s: no argument %zu in a launch prepared with %zu", name, index,
                          l->nargs);
    if (size != l->sizes[index])
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, name,
                          "kernel %s: argument %zu has %zu byte%s, but it was prepared with %zu",
                          name, index, size, size == 1 ? "" : "s", l->sizes[index]);
    memcpy(l->params[index], value, size);
    return FDL_OK;
}

int fdl_launch_set_geometry(fdl_launch *l, fdl_dim3 grid, fdl_dim3 block, size_t shared_bytes,
                            fdl_error *err)
{
    if (!FDL__CHECK_ARG(l))
        return fdl__fail(err, FDL_EINVAL, "fdl_launch_set_geometry: launch is NULL");
    fdl_kernel *k = l->kernel;
    int coop = 0;
    /* the checks of fdl_launch_create; the cooperative one asks the driver for the occupancy */
    int rc = fdl__device_enter(k->mod->dev, err);
    if (rc == FDL_OK)
        rc = check_geometry(k, grid, block, shared_bytes, l->flags, &coop, err);
    if (rc != FDL_OK)
        return rc;
    l->grid[0] = grid.x;
    l->grid[1] = grid.y;
    l->grid[2] = grid.z;
    l->block[0] = block.x;
    l->block[1] = block.y;
    l->block[2] = block.z;
    l->shared_bytes = (unsigned)shared_bytes;
    l->cooperative = coop;
    return FDL_OK;
}

int fdl_launch_set_stream(fdl_launch *l, fdl_stream *stream, fdl_error *err)
{
    if (!FDL__CHECK_ARG(l))
        return fdl__fail(err, FDL_EINVAL, "fdl_launch_set_stream: launch is NULL");
    CUstream s = NULL;
    int rc = fdl__stream_of(&s, stream, l->kernel->mod->dev, "fdl_launch_set_stream", err);
    if (rc != FDL_OK)
        return rc;
    l->stream = s;
    return FDL_OK;
}

void fdl_launch_destroy(fdl_launch *l)
{
    if (!l)
        return;
    fdl__children_remove(&l->kernel->mod->prepared, &l->child);
    free(l->params);
    free(l);
}
