/*
 * Benchmark 9's baseline: raw nvJitLink over files, as a program of its own (each variant a fresh
 * process, so that a linker crash ends only its run). rawlink OUT.cubin NVJITLINK-OPTIONS... FILES
 * (an argument starting with '-' is an option, any other a file; the kind is left to nvJitLink).
 * Prints "rawlink SECONDS BYTES" (create to cubin in hand, the files already read).
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *handle;
typedef int (*create_fn)(handle *, unsigned, const char **);
typedef int (*add_fn)(handle, int, const void *, size_t, const char *);
typedef int (*one_fn)(handle);
typedef int (*size_fn)(handle, size_t *);
typedef int (*get_fn)(handle, void *);
typedef int (*destroy_fn)(handle *);

static void *sym(void *lib, const char *name)
{
    char versioned[128];
    snprintf(versioned, sizeof versioned, "__%s_13_0", name);
    void *p = dlsym(lib, versioned);
    return p ? p : dlsym(lib, name);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rawlink OUT.cubin OPTIONS... FILES...\n");
        return 2;
    }
    void *lib = dlopen("libnvJitLink.so.13", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "rawlink: %s\n", dlerror());
        return 1;
    }
    create_fn create = (create_fn)sym(lib, "nvJitLinkCreate");
    add_fn add = (add_fn)sym(lib, "nvJitLinkAddData");
    one_fn complete = (one_fn)sym(lib, "nvJitLinkComplete");
    size_fn cubin_size = (size_fn)sym(lib, "nvJitLinkGetLinkedCubinSize");
    get_fn cubin = (get_fn)sym(lib, "nvJitLinkGetLinkedCubin");
    size_fn elog_size = (size_fn)sym(lib, "nvJitLinkGetErrorLogSize");
    get_fn elog = (get_fn)sym(lib, "nvJitLinkGetErrorLog");
    destroy_fn destroy = (destroy_fn)sym(lib, "nvJitLinkDestroy");
    if (!create || !add || !complete || !cubin_size || !cubin || !elog_size || !elog || !destroy) {
        fprintf(stderr, "rawlink: nvJitLink lacks an entry point\n");
        return 1;
    }
    const char **opts = calloc((size_t)argc, sizeof *opts);
    char **data = calloc((size_t)argc, sizeof *data);
    size_t *sizes = calloc((size_t)argc, sizeof *sizes);
    int nopts = 0, nfiles = 0;
    if (!opts || !data || !sizes)
        return 1;
    for (int i = 2; i < argc; i++) {
        if (argv[i][0] == '-') {
            opts[nopts++] = argv[i];
            continue;
        }
        FILE *f = fopen(argv[i], "rb");
        long n;
        if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
            !(data[nfiles] = malloc((size_t)n + 1)) ||
            fread(data[nfiles], 1, (size_t)n, f) != (size_t)n) {
            fprintf(stderr, "rawlink: cannot read %s\n", argv[i]);
            return 1;
        }
        fclose(f);
        sizes[nfiles++] = (size_t)n;
    }
    double t0 = now();
    handle h = NULL;
    int r = create(&h, (unsigned)nopts, opts);
    for (int i = 0; r == 0 && i < nfiles; i++)
        r = add(h, 10 /* NVJITLINK_INPUT_ANY */, data[i], sizes[i], "input");
    if (r == 0)
        r = complete(h);
    size_t size = 0;
    char *out = NULL;
    if (r == 0 && (r = cubin_size(h, &size)) == 0 && (out = malloc(size)) != NULL)
        r = cubin(h, out);
    double t1 = now();
    if (r != 0 || !out) {
        size_t n = 0;
        char *log = NULL;
        if (h && elog_size(h, &n) == 0 && (log = calloc(n + 1, 1)) != NULL)
            elog(h, log);
        fprintf(stderr, "rawlink: nvJitLink failed (%d): %s\n", r, log ? log : "");
        return 1;
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(out, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "rawlink: cannot write %s\n", argv[1]);
        return 1;
    }
    destroy(&h);
    printf("rawlink %.3f %zu\n", t1 - t0, size);
    return 0;
}
