/* Modules (cuModuleLoadDataEx with JIT logs), the kernels they define, kernel lookup. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "internal.h"
#include "formats.h"
#include "elfread.h"

/* Size of each JIT log buffer handed to the driver. */
#define JIT_LOG_SIZE ((size_t)16 * 1024)

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
        uint64_t phoff = fdl__le64(p + 32), shoff = fdl__le64(p + 40);
        uint16_t phentsize = fdl__le16(p + 54), phnum = fdl__le16(p + 56);
        uint16_t shentsize = fdl__le16(p + 58), shnum = fdl__le16(p + 60);
        if (!in_bounds(phoff, phnum, phentsize, size) || !in_bounds(shoff, shnum, shentsize, size))
            return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                              "truncated ELF image: its headers reach past its %zu bytes", size);
        if (shnum && shentsize < 64)
            return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                              "malformed ELF image: section header size %u", shentsize);
        for (uint16_t i = 0; i < shnum; i++) {
            const unsigned char *sh = p + shoff + (uint64_t)i * shentsize;
            uint32_t type = fdl__le32(sh + 4);
            if (!fdl__elf_no_bytes(type) && !in_bounds(fdl__le64(sh + 24), fdl__le64(sh + 32), 1, size))
                return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                                  "truncated ELF image: section %u reaches past its %zu bytes",
                                  (unsigned)i, size);
        }
        /* the rest of the validation every cubin passes before a linker sees it: the driver's
         * loader reads the same tables as nvJitLink, and trusts them as much */
        return fdl__elf_check(p, size, name, "cubin", 0, err);
    }
    if (size >= 4 && fdl__le32(p) == FDL__FATBIN_MAGIC) {
        if (size < 16 || !in_bounds(fdl__le16(p + 6), fdl__le64(p + 8), 1, size))
            return fdl__error(err, FDL_EINVAL, name, 0, 0, NULL,
                              "truncated fatbin image: its header says more than its %zu bytes",
                              size);
    }
    return FDL_OK;
}

static int is_binary_image(const unsigned char *p, size_t size)
{
    return size >= 4 && (memcmp(p, "\x7f" "ELF", 4) == 0 || fdl__le32(p) == FDL__FATBIN_MAGIC);
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

/* Sort strings with strcmp, for qsort. */
static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/*
 * The names of the kernels the module defines, from the driver where it can enumerate them
 * (CUDA 12.4), else from the image. A driver that fails to enumerate is not an error here: the
 * list only serves diagnostics, and the image is the next best source.
 * @return FDL_OK, FDL_ENOMEM
 */
static int list_kernels(fdl_module *mod, const void *image, size_t size, fdl_error *err)
{
    const fdl__cuda *cu = mod->dev->cu;
    CUfunction *fns = NULL;
    char **names = NULL;
    size_t n = 0;
    int rc = FDL_OK;
    unsigned count = 0;
    if (cu->module_get_function_count && cu->module_enumerate_functions && cu->func_get_name &&
        cu->module_get_function_count(&count, mod->mod) == CUDA_SUCCESS) {
        size_t bytes;
        int ok = count == 0;
        if (count && fdl__size_mul(&bytes, count, sizeof *fns) && (fns = malloc(bytes)) &&
            fdl__size_mul(&bytes, count, sizeof *names) && (names = calloc(count, sizeof *names))) {
            ok = cu->module_enumerate_functions(fns, count, mod->mod) == CUDA_SUCCESS;
            for (unsigned i = 0; ok && i < count; i++) {
                const char *name = NULL;
                ok = cu->func_get_name(&name, fns[i]) == CUDA_SUCCESS && name;
                if (ok && !(names[n++] = fdl__strdup(name))) {
                    rc = fdl__error(err, FDL_ENOMEM, mod->name, 0, 0, NULL,
                                    "out of memory listing kernels");
                    goto cleanup;
                }
            }
        } else if (count) {
            rc = fdl__error(err, FDL_ENOMEM, mod->name, 0, 0, NULL,
                            "out of memory listing kernels");
            goto cleanup;
        }
        if (ok) {
            if (n > 1)
                qsort(names, n, sizeof *names, compare_names);
            mod->defined = names;
            mod->ndefined = n;
            mod->defined_known = 1;
            names = NULL;
            n = 0;
            goto cleanup;
        }
        free_names(names, n);
        names = NULL;
        n = 0;
    }
    rc = fdl__image_kernel_names(&mod->defined, &mod->ndefined, &mod->defined_known, image, size);
    if (rc != FDL_OK)
        rc = fdl__error(err, rc, mod->name, 0, 0, NULL, "out of memory listing kernels");
cleanup:
    free_names(names, n);
    free(fns);
    return rc;
}

static void module_child_destroy(fdl__child *c)
{
    fdl_module_destroy((fdl_module *)c);
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
            static const char tag[] = "; jit log: ";
            size_t used = strlen(err->message), room = sizeof err->message - used;
            if (line[0] && room > sizeof tag) {
                memcpy(err->message + used, tag, sizeof tag - 1);
                fdl__strlcpy(err->message + used + sizeof tag - 1, line, room - (sizeof tag - 1));
            }
        }
        goto cleanup;
    }
    mod->ctx = dev->ctx;
    if ((rc = list_kernels(mod, load, load == text ? size + 1 : size, err)) != FDL_OK ||
        (rc = fdl__status_attach(mod, load, load == text ? size + 1 : size, err)) != FDL_OK)
        goto cleanup;
    if (fdl__image_param_counts(&mod->params, load, load == text ? size + 1 : size) != FDL_OK) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory reading kernel "
                        "parameters");
        goto cleanup;
    }
    fdl__children_add(&dev->children, &mod->child, FDL__MODULE, module_child_destroy);
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

static void kernel_free(fdl_kernel *k)
{
    if (!k)
        return;
    free(k->param_offsets);
    free(k->param_sizes);
    free(k->name);
    free(k);
}

void fdl_module_destroy(fdl_module *mod)
{
    if (!mod)
        return;
    fdl_device *dev = mod->dev;
    fdl__children_destroy(&mod->prepared);
    /* reports of asynchronous errors may still name its last kernel */
    if (dev->last_kernel && dev->last_kernel->mod == mod) {
        fdl__strlcpy(dev->last_kernel_name, dev->last_kernel->name, sizeof dev->last_kernel_name);
        dev->last_kernel = NULL;
    }
    if (mod->mod && fdl__device_enter(dev, NULL) == FDL_OK)
        dev->cu->module_unload(mod->mod);
    for (size_t i = 0; i < mod->nkernels; i++)
        kernel_free(mod->kernels[i]);
    free(mod->kernels);
    free_names(mod->defined, mod->ndefined);
    fdl__kparams_free(&mod->params);
    free(mod->name);
    free(mod->info_log);
    free(mod->error_log);
    fdl__children_remove(&dev->children, &mod->child);
    free(mod);
}

const char *fdl_module_info_log(const fdl_module *mod)
{
    return mod && mod->info_log ? mod->info_log : "";
}

const char *fdl_module_name(const fdl_module *mod)
{
    return mod ? mod->name : "";
}

fdl_device *fdl_module_device(const fdl_module *mod)
{
    return mod ? mod->dev : NULL;
}

size_t fdl_module_kernel_count(const fdl_module *mod)
{
    return mod ? mod->ndefined : 0;
}

const char *fdl_module_kernel_name(const fdl_module *mod, size_t index)
{
    return mod && index < mod->ndefined ? mod->defined[index] : NULL;
}

/* FDL_ENOTFOUND for kernel @p name, listing what the module defines. */
static int not_found(const fdl_module *mod, const char *name, CUresult r, fdl_error *err)
{
    if (!err)
        return FDL_ENOTFOUND;
    /* room for the list in the one-line message: it ends with ", and N more" when it is long */
    const size_t budget = FDL_ERROR_MESSAGE_MAX - 160;
    fdl__buf list = {0};
    size_t shown = 0;
    for (; shown < mod->ndefined; shown++) {
        size_t len = strlen(mod->defined[shown]);
        if (list.len + len + 2 > budget)
            break;
        if (shown)
            fdl__buf_puts(&list, ", ");
        fdl__buf_puts(&list, mod->defined[shown]);
    }
    if (shown < mod->ndefined)
        fdl__buf_printf(&list, "%sand %zu more", shown ? ", " : "", mod->ndefined - shown);
    if (!mod->defined_known)
        fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name,
                   "kernel '%s' not found in module %s (a driver older than CUDA 12.4 cannot "
                   "list the kernels of a fatbin)",
                   name, mod->name);
    else if (mod->ndefined == 0)
        fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name,
                   "kernel '%s' not found in module %s, which defines no kernels", name,
                   mod->name);
    else
        fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name,
                   "kernel '%s' not found in module %s, which defines %zu kernel%s: %s", name,
                   mod->name, mod->ndefined, mod->ndefined == 1 ? "" : "s",
                   list.oom ? "(out of memory)" : list.data);
    fdl__buf_free(&list);
    err->backend_code = (int)r;
    return FDL_ENOTFOUND;
}

/* The attributes and parameters of a kernel just looked up. */
static int read_kernel(fdl_kernel *k, fdl_error *err)
{
    fdl_device *dev = k->mod->dev;
    const fdl__cuda *cu = dev->cu;
    static const CUfunction_attribute which[] = {
        CU_FUNC_ATTRIBUTE_NUM_REGS,         CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
        CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES,
        CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        CU_FUNC_ATTRIBUTE_PTX_VERSION,      CU_FUNC_ATTRIBUTE_BINARY_VERSION,
    };
    int v[sizeof which / sizeof which[0]];
    for (size_t i = 0; i < sizeof which / sizeof which[0]; i++) {
        v[i] = 0;
        CUresult r = cu->func_get_attribute(&v[i], which[i], k->fn);
        if (r != CUDA_SUCCESS) {
            int rc = fdl__device_error(err, dev, r, "cuFuncGetAttribute");
            if (err && !err->symbol[0])
                fdl__strlcpy(err->symbol, k->name, sizeof err->symbol);
            return rc;
        }
        if (v[i] < 0)
            v[i] = 0;
    }
    fdl_kernel_attrs *a = &k->attrs;
    a->registers = v[0];
    a->static_shared = (size_t)v[1];
    a->local = (size_t)v[2];
    a->constant = (size_t)v[3];
    a->max_threads_per_block = (unsigned)v[4];
    a->max_dynamic_shared = (size_t)v[5];
    a->ptx_version = v[6];
    a->cooperative_groups = fdl__kparams_coop(&k->mod->params, k->name);
    a->binary_version = v[7];
    if (!cu->func_get_param_info)
        return FDL_OK;
    /*
     * The driver has no count query. The image says how many parameters each kernel takes, so
     * that every index asked for exists: a refused call would be an API error under
     * compute-sanitizer. Only for a kernel the image says nothing about (a fatbin whose members
     * cannot be decompressed here) are parameters asked for until the driver refuses an index.
     */
    size_t count = 0;
    int counted = fdl__kparams_find(&k->mod->params, k->name, &count);
    if (counted && count > 65536)
        return fdl__error(err, FDL_ECUDA, NULL, 0, 0, k->name,
                          "the image says kernel '%s' takes %zu parameters", k->name, count);
    size_t cap = 0;
    for (size_t i = 0; !counted || i < count; i++) {
        size_t offset = 0, size = 0;
        CUresult r = cu->func_get_param_info(k->fn, i, &offset, &size);
        if (!counted && r == CUDA_ERROR_INVALID_VALUE)
            break;
        if (r != CUDA_SUCCESS) {
            int rc = fdl__device_error(err, dev, r, "cuFuncGetParamInfo");
            if (err && !err->symbol[0])
                fdl__strlcpy(err->symbol, k->name, sizeof err->symbol);
            return rc;
        }
        /* a parameter block holds at most 32764 bytes, so this many parameters is a bug */
        if (i >= 65536)
            return fdl__error(err, FDL_ECUDA, NULL, 0, 0, k->name,
                              "cuFuncGetParamInfo reports more than 65536 parameters for "
                              "kernel '%s'",
                              k->name);
        if (i == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            size_t *o = realloc(k->param_offsets, ncap * sizeof *o);
            if (o)
                k->param_offsets = o;
            size_t *s = o ? realloc(k->param_sizes, ncap * sizeof *s) : NULL;
            if (s)
                k->param_sizes = s;
            if (!o || !s)
                return fdl__error(err, FDL_ENOMEM, NULL, 0, 0, k->name, "out of memory");
            cap = ncap;
        }
        k->param_offsets[i] = offset;
        k->param_sizes[i] = size;
        a->nparams = i + 1;
    }
    a->params_known = 1;
    return FDL_OK;
}

int fdl_module_read_global(fdl_module *mod, const char *name, void *out, size_t size,
                           size_t *global_size, fdl_error *err)
{
    if (global_size)
        *global_size = 0;
    if (!FDL__CHECK_ARG(mod) || !FDL__CHECK_ARG(name) || !FDL__CHECK_ARG(out || !size))
        return fdl__fail(err, FDL_EINVAL, "fdl_module_read_global: mod, name or out is NULL");
    int rc = fdl__device_enter(mod->dev, err);
    if (rc != FDL_OK)
        return rc;
    CUdeviceptr ptr = 0;
    size_t bytes = 0;
    CUresult r = mod->dev->cu->module_get_global(&ptr, &bytes, mod->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, name,
                          "global '%s' not found in module %s", name, mod->name);
    if (r != CUDA_SUCCESS) {
        rc = fdl__device_error(err, mod->dev, r, "cuModuleGetGlobal");
        if (err && !err->symbol[0])
            fdl__strlcpy(err->symbol, name, sizeof err->symbol);
        return rc;
    }
    if (global_size)
        *global_size = bytes;
    if (bytes != size)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, name,
                          "global '%s' of module %s has %zu byte%s, not %zu", name, mod->name,
                          bytes, bytes == 1 ? "" : "s", size);
    if (size && (r = mod->dev->cu->memcpy_dtoh(out, ptr, size)) != CUDA_SUCCESS) {
        rc = fdl__device_error(err, mod->dev, r, "cuMemcpyDtoH");
        if (err && !err->symbol[0])
            fdl__strlcpy(err->symbol, name, sizeof err->symbol);
        return rc;
    }
    return FDL_OK;
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
    /* a name the module is known not to define: no driver call that is bound to fail */
    if (mod->defined_known &&
        !bsearch(&name, mod->defined, mod->ndefined, sizeof *mod->defined, compare_names))
        return not_found(mod, name, CUDA_ERROR_NOT_FOUND, err);
    int rc = fdl__device_enter(mod->dev, err);
    if (rc != FDL_OK)
        return rc;
    CUfunction fn = NULL;
    CUresult r = mod->dev->cu->module_get_function(&fn, mod->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return not_found(mod, name, r, err);
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
        kernel_free(k);
        return fdl__error(err, FDL_ENOMEM, NULL, 0, 0, name, "out of memory");
    }
    k->mod = mod;
    k->fn = fn;
    if ((rc = read_kernel(k, err)) != FDL_OK) {
        kernel_free(k);
        return rc;
    }
    mod->kernels[mod->nkernels++] = k;
    *out = k;
    return FDL_OK;
}

const char *fdl_kernel_name(const fdl_kernel *kernel)
{
    return kernel ? kernel->name : "";
}

fdl_module *fdl_kernel_module(const fdl_kernel *kernel)
{
    return kernel ? kernel->mod : NULL;
}

CUfunction fdl__kernel_function(const fdl_kernel *kernel)
{
    return kernel->fn;
}

int fdl_kernel_get_attrs(const fdl_kernel *kernel, fdl_kernel_attrs *out, fdl_error *err)
{
    if (!FDL__CHECK_ARG(kernel) || !FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_kernel_get_attrs: kernel or out is NULL");
    *out = kernel->attrs;
    return FDL_OK;
}

int fdl_kernel_param(const fdl_kernel *kernel, size_t index, size_t *offset, size_t *size,
                     fdl_error *err)
{
    if (!FDL__CHECK_ARG(kernel))
        return fdl__fail(err, FDL_EINVAL, "fdl_kernel_param: kernel is NULL");
    if (!kernel->attrs.params_known)
        return fdl__error(err, FDL_ENOTFOUND, NULL, 0, 0, kernel->name,
                          "the CUDA driver (older than 12.4) cannot report the parameters of "
                          "kernel '%s'",
                          kernel->name);
    if (index >= kernel->attrs.nparams)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, kernel->name,
                          "kernel '%s' has no parameter %zu (it takes %zu)", kernel->name, index,
                          kernel->attrs.nparams);
    if (offset)
        *offset = kernel->param_offsets[index];
    if (size)
        *size = kernel->param_sizes[index];
    return FDL_OK;
}

const size_t *fdl_kernel_param_sizes(const fdl_kernel *kernel, size_t *count)
{
    if (count)
        *count = kernel && kernel->attrs.params_known ? kernel->attrs.nparams : 0;
    if (!kernel || !kernel->attrs.params_known)
        return NULL;
    /* a kernel without parameters still answers, with an array that is never read */
    static const size_t none[1] = {0};
    return kernel->attrs.nparams ? kernel->param_sizes : none;
}

int fdl_kernel_set_max_dynamic_shared(fdl_kernel *kernel, size_t bytes, fdl_error *err)
{
    if (!FDL__CHECK_ARG(kernel))
        return fdl__fail(err, FDL_EINVAL, "fdl_kernel_set_max_dynamic_shared: kernel is NULL");
    fdl_device *dev = kernel->mod->dev;
    size_t optin = dev->info.max_shared_per_block_optin;
    size_t limit = optin > kernel->attrs.static_shared ? optin - kernel->attrs.static_shared : 0;
    if (bytes > limit)
        return fdl__error(err, FDL_EINVAL, NULL, 0, 0, kernel->name,
                          "%zu bytes of dynamic shared memory exceed the %zu that kernel %s can "
                          "have on device %d (%zu per block less %zu of static shared memory)",
                          bytes, limit, kernel->name, dev->info.ordinal, optin,
                          kernel->attrs.static_shared);
    int rc = fdl__device_enter(dev, err);
    if (rc != FDL_OK)
        return rc;
    CUresult r = dev->cu->func_set_attribute(kernel->fn,
                                             CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             (int)bytes);
    if (r != CUDA_SUCCESS) {
        rc = fdl__device_error(err, dev, r, "cuFuncSetAttribute");
        if (err && !err->symbol[0])
            fdl__strlcpy(err->symbol, kernel->name, sizeof err->symbol);
        return rc;
    }
    /* the driver may also have changed what the kernel allows per block */
    int v = 0;
    if (dev->cu->func_get_attribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel->fn) ==
            CUDA_SUCCESS &&
        v > 0)
        kernel->attrs.max_threads_per_block = (unsigned)v;
    kernel->attrs.max_dynamic_shared = bytes;
    return FDL_OK;
}
