/* Devices, their primary contexts, and the objects they own. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "internal.h"
#include "json.h"

/* ---- ownership ------------------------------------------------------------------------------ */

void fdl__children_add(fdl__children *list, fdl__child *c, fdl__kind kind,
                       void (*destroy)(fdl__child *))
{
    c->kind = kind;
    c->destroy = destroy;
    c->prev = NULL;
    c->next = list->head;
    if (list->head)
        list->head->prev = c;
    list->head = c;
}

void fdl__children_remove(fdl__children *list, fdl__child *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (list->head == c)
        list->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

void fdl__children_destroy(fdl__children *list)
{
    while (list->head) {
        fdl__child *c = list->head;
        c->destroy(c);
        /* a destroyer always unlinks; this guards the loop should one not */
        if (list->head == c)
            fdl__children_remove(list, c);
    }
}

void fdl__device_flush_deferred(fdl_device *dev)
{
    fdl__children_destroy(&dev->deferred); /* each one's destroyer frees its memory */
}

/* ---- errors --------------------------------------------------------------------------------- */

int fdl__device_enter(fdl_device *dev, fdl_error *err)
{
    CUresult r = dev->cu->ctx_set_current(dev->ctx);
    if (r != CUDA_SUCCESS)
        return fdl__device_error(err, dev, r, "cuCtxSetCurrent");
    return FDL_OK;
}

const char *fdl__device_last_kernel(const fdl_device *dev)
{
    return dev->last_kernel ? dev->last_kernel->name : dev->last_kernel_name;
}

int fdl__device_error(fdl_error *err, const fdl_device *dev, CUresult r, const char *what)
{
    return fdl__cu_error(err, dev->cu, r, what, fdl__device_last_kernel(dev));
}

/* ---- devices -------------------------------------------------------------------------------- */

/* The device count, with 0 devices reported as FDL_ENODEVICE. */
static int count_devices(const fdl__cuda *cu, int *count, fdl_error *err)
{
    *count = 0;
    CUresult r = cu->device_get_count(count);
    if (r != CUDA_SUCCESS) {
        *count = 0;
        return fdl__cu_error(err, cu, r, "cuDeviceGetCount", NULL);
    }
    if (*count <= 0) {
        *count = 0;
        return fdl__fail(err, FDL_ENODEVICE, "no CUDA device: the driver reports none");
    }
    return FDL_OK;
}

int fdl_device_count(int *count, fdl_error *err)
{
    if (!FDL__CHECK_ARG(count))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_count: count is NULL");
    *count = 0;
    const fdl__cuda *cu;
    int rc = fdl__cuda_get(&cu, err);
    if (rc != FDL_OK)
        return rc;
    return count_devices(cu, count, err);
}

/* FDLINK_DEVICE as an ordinal, -1 when unset. */
static int ordinal_from_env(int *ordinal, fdl_error *err)
{
    *ordinal = -1;
    const char *s = getenv("FDLINK_DEVICE");
    if (!s || !s[0])
        return FDL_OK;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT_MAX)
        return fdl__fail(err, FDL_EINVAL,
                         "FDLINK_DEVICE='%.32s' is not a device number (expected 0, 1, ...)", s);
    *ordinal = (int)v;
    return FDL_OK;
}

/* The most resource groups, and the longest variable value, that ctest's variables may hold. */
#define CTEST_MAX_GROUPS 4096
#define CTEST_MAX_VALUE 4096

/* Non-zero when s[0..n) is made of decimal digits only (and is not empty). */
static int all_digits(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

/* A decimal number s[0..n) in [0, max]; -1 when it is not one. */
static long parse_count(const char *s, size_t n, long max)
{
    if (!all_digits(s, n) || n > 9)
        return -1;
    long v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v <= max ? v : -1;
}

/* Non-zero when the comma-separated list @list has the item "gpus". */
static int names_gpus(const char *list)
{
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == 4 && memcmp(p, "gpus", 4) == 0)
            return 1;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

/*
 * One entry of CTEST_RESOURCE_GROUP_<i>_GPUS, "id:<ordinal>,slots:<n>", from s[0..n): the
 * ordinal in *id; 0 when malformed.
 */
static int parse_gpu_entry(const char *s, size_t n, int *id)
{
    const char *comma = memchr(s, ',', n);
    if (!comma || n < 3 || memcmp(s, "id:", 3) != 0)
        return 0;
    long v = parse_count(s + 3, (size_t)(comma - s) - 3, INT_MAX);
    const char *slots = comma + 1;
    size_t rest = n - (size_t)(slots - s);
    if (v < 0 || rest < 7 || memcmp(slots, "slots:", 6) != 0 ||
        parse_count(slots + 6, rest - 6, INT_MAX) < 1)
        return 0;
    *id = (int)v;
    return 1;
}

/*
 * The GPU that ctest assigned to this process (CTEST_RESOURCE_GROUP_COUNT, then for each group
 * CTEST_RESOURCE_GROUP_<i> and CTEST_RESOURCE_GROUP_<i>_GPUS): the first entry of the first group
 * holding gpus. *ordinal = -1 when ctest assigned none; @var (of @var_size bytes) receives the
 * variable that named the device, for messages.
 */
static int ordinal_from_ctest(int *ordinal, char *var, size_t var_size, fdl_error *err)
{
    *ordinal = -1;
    var[0] = '\0';
    const char *count_s = getenv("CTEST_RESOURCE_GROUP_COUNT");
    if (!count_s || !count_s[0])
        return FDL_OK;
    long count = parse_count(count_s, strlen(count_s), CTEST_MAX_GROUPS);
    if (count < 0)
        return fdl__fail(err, FDL_EINVAL,
                         "CTEST_RESOURCE_GROUP_COUNT='%.32s' is not a number of resource groups "
                         "(expected 0 to %d)",
                         count_s, CTEST_MAX_GROUPS);
    for (long g = 0; g < count; g++) {
        char name[64];
        snprintf(name, sizeof name, "CTEST_RESOURCE_GROUP_%ld", g);
        const char *types = getenv(name);
        if (!types || !types[0])
            return fdl__fail(err, FDL_EINVAL,
                             "CTEST_RESOURCE_GROUP_COUNT is %ld but %s is not set (is ctest "
                             "running this test?)",
                             count, name);
        if (!names_gpus(types))
            continue;
        snprintf(var, var_size, "CTEST_RESOURCE_GROUP_%ld_GPUS", g);
        const char *value = getenv(var);
        if (!value || !value[0])
            return fdl__fail(err, FDL_EINVAL, "%s lists gpus but %s is not set", name, var);
        size_t len = strlen(value);
        char quoted[80];
        fdl__quote(quoted, sizeof quoted, value, len, 48);
        /* every entry must be well formed, though only the first is used */
        int first = -1;
        const char *p = value;
        size_t left = len > CTEST_MAX_VALUE ? 0 : len;
        while (left > 0) {
            const char *semi = memchr(p, ';', left);
            size_t n = semi ? (size_t)(semi - p) : left;
            int id;
            if (!parse_gpu_entry(p, n, &id))
                return fdl__fail(err, FDL_EINVAL,
                                 "%s='%s' does not name a device: expected 'id:N,slots:M' with N "
                                 "a device number, as the spec of 'fdlink resource-spec' gives",
                                 var, quoted);
            if (first < 0)
                first = id;
            if (!semi)
                break;
            p = semi + 1;
            left -= n + 1;
            if (left == 0) /* a trailing ';' */
                break;
        }
        if (first < 0)
            return fdl__fail(err, FDL_EINVAL,
                             "%s='%s' does not name a device: expected 'id:N,slots:M' with N a "
                             "device number, as the spec of 'fdlink resource-spec' gives",
                             var, quoted);
        *ordinal = first;
        return FDL_OK;
    }
    var[0] = '\0';
    return FDL_OK;
}

/* The ordinal -1 stands for, and the variable it came from ("" for the default, device 0). */
static int default_ordinal(int *ordinal, char *var, size_t var_size, fdl_error *err)
{
    int rc = ordinal_from_ctest(ordinal, var, var_size, err);
    if (rc != FDL_OK || *ordinal >= 0)
        return rc;
    if ((rc = ordinal_from_env(ordinal, err)) != FDL_OK)
        return rc;
    if (*ordinal >= 0) {
        fdl__strlcpy(var, "FDLINK_DEVICE", var_size);
        return FDL_OK;
    }
    *ordinal = 0;
    var[0] = '\0';
    return FDL_OK;
}

int fdl_device_default_ordinal(int *ordinal, fdl_error *err)
{
    if (!FDL__CHECK_ARG(ordinal))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_default_ordinal: ordinal is NULL");
    char var[64];
    int rc = default_ordinal(ordinal, var, sizeof var, err);
    if (rc != FDL_OK)
        *ordinal = -1;
    return rc;
}

/* Read the device attributes fdlink checks launches against. */
static int read_info(fdl_device *dev, fdl_error *err)
{
    static const struct {
        CUdevice_attribute attr;
        size_t offset; /* of an int or unsigned in fdl_device_info */
        int is_unsigned;
    } ints[] = {
        {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(fdl_device_info, sm_count), 0},
        {CU_DEVICE_ATTRIBUTE_WARP_SIZE, offsetof(fdl_device_info, warp_size), 0},
        {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
         offsetof(fdl_device_info, max_threads_per_block), 1},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, offsetof(fdl_device_info, max_block.x), 1},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, offsetof(fdl_device_info, max_block.y), 1},
        {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, offsetof(fdl_device_info, max_block.z), 1},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, offsetof(fdl_device_info, max_grid.x), 1},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, offsetof(fdl_device_info, max_grid.y), 1},
        {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, offsetof(fdl_device_info, max_grid.z), 1},
        {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, offsetof(fdl_device_info, cooperative_launch),
         0},
    };
    const fdl__cuda *cu = dev->cu;
    fdl_device_info *info = &dev->info;
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int v = 0;
        CUresult r = cu->device_get_attribute(&v, ints[i].attr, dev->device);
        if (r != CUDA_SUCCESS)
            return fdl__cu_error(err, cu, r, "cuDeviceGetAttribute", NULL);
        if (ints[i].is_unsigned) {
            unsigned u = v < 0 ? 0u : (unsigned)v;
            memcpy((char *)info + ints[i].offset, &u, sizeof u);
        } else {
            memcpy((char *)info + ints[i].offset, &v, sizeof v);
        }
    }
    int shared = 0, optin = 0;
    CUresult r = cu->device_get_attribute(&shared, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
                                          dev->device);
    if (r == CUDA_SUCCESS)
        r = cu->device_get_attribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                     dev->device);
    if (r != CUDA_SUCCESS)
        return fdl__cu_error(err, cu, r, "cuDeviceGetAttribute", NULL);
    info->max_shared_per_block = shared > 0 ? (size_t)shared : 0;
    info->max_shared_per_block_optin = optin > shared ? (size_t)optin : info->max_shared_per_block;
    r = cu->device_total_mem(&info->total_memory, dev->device);
    if (r != CUDA_SUCCESS)
        return fdl__cu_error(err, cu, r, "cuDeviceTotalMem", NULL);
    return FDL_OK;
}

int fdl_device_open(fdl_device **out, int ordinal, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_open: out is NULL");
    *out = NULL;
    int rc;
    fdl_device *dev = NULL;
    if (ordinal < -1)
        return fdl__fail(err, FDL_EINVAL, "invalid device ordinal %d (expected -1, 0, 1, ...)",
                         ordinal);
    char var[64] = "";
    if (ordinal == -1 && (rc = default_ordinal(&ordinal, var, sizeof var, err)) != FDL_OK)
        return rc;
    const fdl__cuda *cu;
    if ((rc = fdl__cuda_get(&cu, err)) != FDL_OK)
        return rc;
    int count;
    if ((rc = count_devices(cu, &count, err)) != FDL_OK)
        return rc;
    if (ordinal >= count && strncmp(var, "CTEST_", 6) == 0)
        return fdl__fail(err, FDL_ENODEVICE,
                         "no CUDA device %d: the driver reports %d device%s (0..%d), but ctest "
                         "assigned device %d in %s (a resource spec of another host?)",
                         ordinal, count, count == 1 ? "" : "s", count - 1, ordinal, var);
    if (ordinal >= count)
        return fdl__fail(err, FDL_ENODEVICE,
                         "no CUDA device %d: the driver reports %d device%s (0..%d)", ordinal,
                         count, count == 1 ? "" : "s", count - 1);
    dev = calloc(1, sizeof *dev);
    if (!dev)
        return fdl__fail(err, FDL_ENOMEM, "out of memory opening a device");
    dev->cu = cu;
    dev->info.ordinal = ordinal;
    dev->info.driver_version = cu->driver_version;
    CUresult r = cu->device_get(&dev->device, ordinal);
    if (r != CUDA_SUCCESS) {
        rc = fdl__cu_error(err, cu, r, "cuDeviceGet", NULL);
        goto cleanup;
    }
    r = cu->device_get_name(dev->info.name, (int)sizeof dev->info.name, dev->device);
    if (r != CUDA_SUCCESS) {
        rc = fdl__cu_error(err, cu, r, "cuDeviceGetName", NULL);
        goto cleanup;
    }
    dev->info.name[sizeof dev->info.name - 1] = '\0';
    int major = 0, minor = 0;
    r = cu->device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev->device);
    if (r == CUDA_SUCCESS)
        r = cu->device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                     dev->device);
    if (r != CUDA_SUCCESS) {
        rc = fdl__cu_error(err, cu, r, "cuDeviceGetAttribute", NULL);
        goto cleanup;
    }
    if (major < 1 || major > 99 || minor < 0 || minor > 9) {
        rc = fdl__fail(err, FDL_ECUDA, "device %d reports compute capability %d.%d", ordinal,
                       major, minor);
        goto cleanup;
    }
    dev->info.cc = major * 10 + minor;
    snprintf(dev->info.arch, sizeof dev->info.arch, "sm_%d%d", major, minor);
    if ((rc = read_info(dev, err)) != FDL_OK)
        goto cleanup;
    r = cu->primary_ctx_retain(&dev->ctx, dev->device);
    if (r != CUDA_SUCCESS) {
        dev->ctx = NULL;
        rc = fdl__cu_error(err, cu, r, "cuDevicePrimaryCtxRetain", NULL);
        goto cleanup;
    }
    /* documented: the context stays current on this thread */
    if ((rc = fdl__device_enter(dev, err)) != FDL_OK)
        goto cleanup;
    *out = dev;
    dev = NULL;
    rc = FDL_OK;
cleanup:
    fdl_device_destroy(dev);
    return rc;
}

void fdl_device_destroy(fdl_device *dev)
{
    if (!dev)
        return;
    if (dev->ctx && fdl__device_enter(dev, NULL) == FDL_OK) {
        /* let queued work finish before its memory and modules go; a failure is not ours */
        dev->cu->ctx_synchronize();
    }
    fdl__children_destroy(&dev->children);
    if (dev->ctx && fdl__device_enter(dev, NULL) == FDL_OK)
        fdl__device_flush_deferred(dev); /* those deferred by a capture: the device goes */
    if (dev->ctx)
        dev->cu->primary_ctx_release(dev->device);
    free(dev);
}

const char *fdl_device_name(const fdl_device *dev)
{
    return dev ? dev->info.name : "";
}

const char *fdl_device_arch(const fdl_device *dev)
{
    return dev ? dev->info.arch : "";
}

int fdl_device_cc(const fdl_device *dev)
{
    return dev ? dev->info.cc : 0;
}

int fdl_device_driver_version(const fdl_device *dev)
{
    return dev ? dev->cu->driver_version : 0;
}

int fdl_device_ordinal(const fdl_device *dev)
{
    return dev ? dev->info.ordinal : -1;
}

size_t fdl_device_total_memory(const fdl_device *dev)
{
    return dev ? dev->info.total_memory : 0;
}

int fdl_device_sm_count(const fdl_device *dev)
{
    return dev ? dev->info.sm_count : 0;
}

int fdl_device_get_info(const fdl_device *dev, fdl_device_info *out, fdl_error *err)
{
    if (!FDL__CHECK_ARG(dev) || !FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_get_info: dev or out is NULL");
    *out = dev->info;
    return FDL_OK;
}

/* ---- ctest resource specification ------------------------------------------------------------ */

int fdl_device_ctest_resource_spec(char **out, size_t *len, int *ngpus, unsigned slots,
                                   fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_device_ctest_resource_spec: out is NULL");
    *out = NULL;
    if (len)
        *len = 0;
    if (ngpus)
        *ngpus = 0;
    if (slots < 1 || slots > FDL_RESOURCE_SLOTS_MAX)
        return fdl__fail(err, FDL_EINVAL, "%u slots per GPU (expected 1 to %d)", slots,
                         FDL_RESOURCE_SLOTS_MAX);
    int count = 0;
    fdl_error probe = FDL_ERROR_INIT;
    int rc = fdl_device_count(&count, &probe);
    if (rc == FDL_ENOLIB || rc == FDL_ENODEVICE)
        count = 0; /* documented: a valid spec with no GPUs */
    else if (rc != FDL_OK) {
        if (err)
            *err = probe;
        return rc;
    }
    /* CTest's resource specification, version 1.0, through the one JSON writer */
    fdl__buf b = {0};
    fdl__json j;
    char id[16];
    fdl__json_init(&j, &b, 2);
    fdl__json_object_begin(&j);
    fdl__json_key(&j, "version");
    fdl__json_object_begin(&j);
    fdl__json_member_int(&j, "major", 1);
    fdl__json_member_int(&j, "minor", 0);
    fdl__json_object_end(&j);
    fdl__json_key(&j, "local");
    fdl__json_array_begin(&j);
    fdl__json_object_begin(&j);
    fdl__json_key(&j, "gpus");
    fdl__json_array_begin(&j);
    for (int i = 0; i < count; i++) {
        snprintf(id, sizeof id, "%d", i);
        fdl__json_object_begin(&j);
        fdl__json_member_string(&j, "id", id);
        fdl__json_member_uint(&j, "slots", slots);
        fdl__json_object_end(&j);
    }
    fdl__json_array_end(&j);
    fdl__json_object_end(&j);
    fdl__json_array_end(&j);
    fdl__json_object_end(&j);
    if (!fdl__json_finish(&j))
        b.oom = 1;
    if (b.oom) {
        fdl__buf_free(&b);
        return fdl__fail(err, FDL_ENOMEM, "out of memory writing a ctest resource spec");
    }
    *out = b.data;
    if (len)
        *len = b.len;
    if (ngpus)
        *ngpus = count;
    return FDL_OK;
}
