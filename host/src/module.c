/* Modules (cuModuleLoadDataEx with JIT logs), their kernels, and launches. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "internal.h"

/* Size of each JIT log buffer handed to the driver. */
#define JIT_LOG_SIZE ((size_t)16 * 1024)

struct fdl_kernel {
    fdl_module *mod;
    CUfunction fn;
    char *name;
};

struct fdl_module {
    fdl_device *dev;
    CUmodule mod;
    char *name;
    char *info_log;  /* JIT_LOG_SIZE bytes, NUL-terminated */
    char *error_log; /* JIT_LOG_SIZE bytes, NUL-terminated */
    fdl_kernel **kernels;
    size_t nkernels;
    size_t cap;
};

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* Non-zero when [off, off + count * each) lies within @p size bytes. */
static int in_bounds(uint64_t off, uint64_t count, uint64_t each, uint64_t size)
{
    if (each && count > UINT64_MAX / each)
        return 0;
    uint64_t len = count * each;
    return off <= size && len <= size - off;
}

/*
 * The driver is given no size, only the image: it reads an ELF or fatbin as far as the image's
 * own headers say. Check that those stay within the @p size bytes the caller has, so that a
 * truncated file is an error rather than a read past the buffer.
 */
static int check_image_bounds(const unsigned char *p, size_t size, const char *name,
                              fdl_error *err)
{
    if (size >= 4 && memcmp(p, "\x7f" "ELF", 4) == 0) {
        if (size < 64 || p[4] != 2 || p[5] != 1)
            return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                              "not a 64-bit little-endian ELF image, or truncated (%zu bytes)",
                              size);
        uint64_t phoff = rd64(p + 32), shoff = rd64(p + 40);
        uint16_t phentsize = rd16(p + 54), phnum = rd16(p + 56);
        uint16_t shentsize = rd16(p + 58), shnum = rd16(p + 60);
        if (!in_bounds(phoff, phnum, phentsize, size) || !in_bounds(shoff, shnum, shentsize, size))
            return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                              "truncated ELF image: its headers reach past its %zu bytes", size);
        if (shnum && shentsize < 64)
            return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                              "malformed ELF image: section header size %u", shentsize);
        for (uint16_t i = 0; i < shnum; i++) {
            const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
            uint32_t type = rd32(sh + 4);
            if (type != 8 /* SHT_NOBITS */ && !in_bounds(rd64(sh + 24), rd64(sh + 32), 1, size))
                return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                                  "truncated ELF image: section %u reaches past its %zu bytes",
                                  (unsigned)i, size);
        }
        return FDL_OK;
    }
    if (size >= 4 && rd32(p) == 0xBA55ED50u) {
        if (size < 16 || !in_bounds(rd16(p + 6), rd64(p + 8), 1, size))
            return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                              "truncated fatbin image: its header says more than its %zu bytes",
                              size);
    }
    return FDL_OK;
}

static int is_binary_image(const unsigned char *p, size_t size)
{
    return size >= 4 && (memcmp(p, "\x7f" "ELF", 4) == 0 || rd32(p) == 0xBA55ED50u);
}

/* The first non-blank line of a JIT log, for a one-line message. */
static void first_line(const char *log, char *out, size_t size)
{
    out[0] = '\0';
    const char *p = log;
    while (*p) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        const char *end = p;
        while (*end && *end != '\n')
            end++;
        const char *e = end;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
            e--;
        if (e > p) {
            size_t n = (size_t)(e - p);
            if (n >= size)
                n = size - 1;
            memcpy(out, p, n);
            out[n] = '\0';
            return;
        }
        p = end;
    }
}

int fdl_module_load_data(fdl_module **out, fdl_device *dev, const void *image, size_t size,
                         const char *name, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_load_data: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(dev) || !FDL__CHECK_ARG(image) || !FDL__CHECK_ARG(name))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_load_data: dev, image or name is NULL");
    if (!size)
        return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "empty image");
    int rc;
    fdl_module *mod = NULL;
    char *text = NULL;
    const unsigned char *bytes = image;
    if ((rc = check_image_bounds(bytes, size, name, err)) != FDL_OK)
        goto cleanup;
    const void *load = image;
    /* PTX is read up to its NUL: give the driver a terminated copy when there is none */
    if (!is_binary_image(bytes, size) && !memchr(bytes, '\0', size)) {
        size_t cap;
        if (!fdl__size_add(&cap, size, 1) || !(text = malloc(cap))) {
            rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory copying %zu bytes",
                            size);
            goto cleanup;
        }
        memcpy(text, image, size);
        text[size] = '\0';
        load = text;
    }
    mod = calloc(1, sizeof *mod);
    if (mod) {
        mod->dev = dev;
        mod->name = fdl__strdup(name);
        mod->info_log = calloc(JIT_LOG_SIZE, 1);
        mod->error_log = calloc(JIT_LOG_SIZE, 1);
    }
    if (!mod || !mod->name || !mod->info_log || !mod->error_log) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory loading a module");
        goto cleanup;
    }
    if ((rc = fdl__device_enter(dev, err)) != FDL_OK)
        goto cleanup;
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {mod->info_log, (void *)(uintptr_t)JIT_LOG_SIZE, mod->error_log,
                      (void *)(uintptr_t)JIT_LOG_SIZE};
    CUresult r = dev->cu->module_load_data_ex(&mod->mod, load,
                                              (unsigned)(sizeof options / sizeof options[0]),
                                              options, values);
    mod->info_log[JIT_LOG_SIZE - 1] = '\0';
    mod->error_log[JIT_LOG_SIZE - 1] = '\0';
    if (r != CUDA_SUCCESS) {
        mod->mod = NULL;
        rc = fdl__device_error(err, dev, r, "cuModuleLoadDataEx");
        if (err) {
            fdl__strlcpy(err->source, name, sizeof err->source);
            char line[FDL_ERROR_MESSAGE_MAX];
            first_line(mod->error_log, line, sizeof line);
            size_t used = strlen(err->message);
            if (line[0] && used < sizeof err->message)
                snprintf(err->message + used, sizeof err->message - used, "; jit log: %s", line);
        }
        goto cleanup;
    }
    *out = mod;
    mod = NULL;
    rc = FDL_OK;
cleanup:
    free(text);
    fdl_module_destroy(mod);
    return rc;
}

int fdl_module_load_file(fdl_module **out, fdl_device *dev, const char *path, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_load_file: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(dev) || !FDL__CHECK_ARG(path))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_load_file: dev or path is NULL");
    char *data = NULL;
    size_t size = 0;
    int rc = fdl__read_file(path, &data, &size, err);
    if (rc != FDL_OK)
        goto cleanup;
    rc = fdl_module_load_data(out, dev, data, size, path, err);
cleanup:
    free(data);
    return rc;
}

void fdl_module_destroy(fdl_module *mod)
{
    if (!mod)
        return;
    if (mod->mod && fdl__device_enter(mod->dev, NULL) == FDL_OK)
        mod->dev->cu->module_unload(mod->mod);
    for (size_t i = 0; i < mod->nkernels; i++) {
        free(mod->kernels[i]->name);
        free(mod->kernels[i]);
    }
    free(mod->kernels);
    free(mod->name);
    free(mod->info_log);
    free(mod->error_log);
    free(mod);
}

const char *fdl_module_info_log(const fdl_module *mod)
{
    return mod && mod->info_log ? mod->info_log : "";
}

int fdl_module_get_kernel(fdl_kernel **out, fdl_module *mod, const char *name, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_get_kernel: out is NULL");
    *out = NULL;
    if (!FDL__CHECK_ARG(mod) || !FDL__CHECK_ARG(name))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_get_kernel: mod or name is NULL");
    for (size_t i = 0; i < mod->nkernels; i++) {
        if (strcmp(mod->kernels[i]->name, name) == 0) {
            *out = mod->kernels[i];
            return FDL_OK;
        }
    }
    int rc = fdl__device_enter(mod->dev, err);
    if (rc != FDL_OK)
        return rc;
    CUfunction fn = NULL;
    CUresult r = mod->dev->cu->module_get_function(&fn, mod->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND) {
        rc = fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name,
                        "kernel '%s' not found in module %s", name, mod->name);
        if (err)
            err->backend_code = (int)r;
        return rc;
    }
    if (r != CUDA_SUCCESS) {
        rc = fdl__device_error(err, mod->dev, r, "cuModuleGetFunction");
        if (err && !err->symbol[0])
            fdl__strlcpy(err->symbol, name, sizeof err->symbol);
        return rc;
    }
    if (mod->nkernels == mod->cap) {
        size_t ncap = mod->cap ? mod->cap : 4, bytes;
        fdl_kernel **grown = NULL;
        if ((!mod->cap || fdl__size_mul(&ncap, mod->cap, 2)) &&
            fdl__size_mul(&bytes, ncap, sizeof *grown))
            grown = realloc(mod->kernels, bytes);
        if (!grown)
            return fdl__error(err, FDL_ENOMEM, NULL, 0, 0, name, "out of memory");
        mod->kernels = grown;
        mod->cap = ncap;
    }
    fdl_kernel *k = calloc(1, sizeof *k);
    if (k)
        k->name = fdl__strdup(name);
    if (!k || !k->name) {
        free(k);
        return fdl__error(err, FDL_ENOMEM, NULL, 0, 0, name, "out of memory");
    }
    k->mod = mod;
    k->fn = fn;
    mod->kernels[mod->nkernels++] = k;
    *out = k;
    return FDL_OK;
}

const char *fdl_kernel_name(const fdl_kernel *kernel)
{
    return kernel ? kernel->name : "";
}

int fdl_kernel_launch(fdl_kernel *kernel, fdl_dim3 grid, fdl_dim3 block, unsigned shared_bytes,
                      void **args, size_t nargs, fdl_error *err)
{
    if (!FDL__CHECK_ARG(kernel))
        return fdl__fail(err, FDL_EINVAL, "fdl_kernel_launch: kernel is NULL");
    const unsigned dims[6] = {grid.x, grid.y, grid.z, block.x, block.y, block.z};
    static const char *const dim_names[6] = {"grid.x", "grid.y", "grid.z",
                                             "block.x", "block.y", "block.z"};
    for (size_t i = 0; i < 6; i++)
        if (dims[i] == 0)
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, kernel->name,
                              "%s is 0 in the launch of kernel '%s' (every dimension must be at "
                              "least 1)",
                              dim_names[i], kernel->name);
    if (nargs && !args)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, kernel->name,
                          "%zu arguments but no argument array for kernel '%s'", nargs,
                          kernel->name);
    for (size_t i = 0; i < nargs; i++)
        if (!args[i])
            return fdl__error(err, FDL_EINVAL, NULL, 0, 0, kernel->name,
                              "argument %zu of kernel '%s' is NULL (expected a pointer to the "
                              "value)",
                              i, kernel->name);
    fdl_device *dev = kernel->mod->dev;
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = dev->cu->launch_kernel(kernel->fn, grid.x, grid.y, grid.z, block.x, block.y,
                                        block.z, shared_bytes, NULL, nargs ? args : NULL, NULL);
    if (r != CUDA_SUCCESS) {
        if (fdl__cu_is_async(r))
            return fdl__device_error(err, dev, r, "cuLaunchKernel");
        char what[FDL_ERROR_SYMBOL_MAX + 64];
        snprintf(what, sizeof what, "cuLaunchKernel for kernel '%s'", kernel->name);
        rc = fdl__cu_error(err, dev->cu, r, what, NULL);
        if (err)
            fdl__strlcpy(err->symbol, kernel->name, sizeof err->symbol);
        return rc;
    }
    /* named in reports of errors this launch may cause later */
    fdl__strlcpy(dev->last_kernel, kernel->name, sizeof dev->last_kernel);
    return FDL_OK;
}
