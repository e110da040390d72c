/*
 * Tests of the link cache (link/src/cache.c, link/src/linkcache.c, fdlink/cache.h) with the real
 * nvJitLink and NVRTC, which need no GPU: what changes a key, what a bad entry does, many
 * processes on one directory, eviction, directories that cannot be used, and writers killed at
 * random moments.
 *
 * A "fresh process" is a child made with fork() that links and reports through a file, so that
 * a disk hit is told apart from a memory hit. Every test uses its own scratch directory.
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include <criterion/criterion.h>

#include "fdl_test.h"
#include "fdl_test_net.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fdlink/cache.h"
#include "fdlink/decl.h"
#include "fdlink/link.h"
#include "cacheint.h"
#include "internal.h"
#include "libmemo.h"
#include "libs.h"
#include "linkobj.h"

/* from nvjl.h, which needs the toolkit's headers */
const fdl__libspec *fdl__nvjl_spec(void);
int fdl__nvjl_remember(const char *dir, unsigned char id[FDL__LIBMEMO_ID_SIZE]);

#define LINK_DATA FDL_TEST_DATA "/link"

static char *slurp(const char *path, size_t *size)
{
    char *data = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl__read_file(path, &data, size, &err);
    cr_assert_eq(rc, FDL_OK, "cannot read %s: %s", path, err.message);
    return data;
}

static void spit(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, size, f), size);
    cr_assert_eq(fclose(f), 0);
}

/* One input of a link: bytes under a name, or a CUDA C file. */
typedef struct input {
    const char *name;
    const char *data; /* NULL: the file @name */
    size_t size;
    fdl_input_kind kind;
} input;

/* What a link to do looks like. */
typedef struct job {
    const char *dir;       /* cache directory */
    const char *arch;
    int opt_level;
    fdl_cache_mode mode;
    const input *inputs;
    size_t ninputs;
    const char *decl;      /* a declaration file, or NULL */
} job;

typedef struct outcome {
    int rc;
    fdl_cache_result result;
    size_t nvrtc_hits, nvrtc_compiled;
    size_t nvvm_hits, nvvm_compiled; /* bitcode inputs */
    size_t diags;          /* FDL_EIO diagnostics (the cache's warning) */
    char warning[512];
    char key[33];
    int jl_loaded, nvrtc_loaded; /* nvJitLink, NVRTC mapped in the process after the link */
    int nvvm_loaded;             /* libNVVM mapped */
    size_t jl_runs;        /* nvJitLink links run */
    int lease_waited;      /* another process held the key's lease (lease.c) */
    uint64_t cubin_hash;   /* FNV-1a of the cubin */
    long kparams;          /* parameters of multiply_vectors with classes known; -1: not known */
} outcome;

static int mapped_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    return info->dlpi_name && strstr(info->dlpi_name, (const char *)data) != NULL;
}

/* Is a library whose path contains @p part mapped in this process? */
static int mapped(const char *part)
{
    return dl_iterate_phdr(mapped_cb, (void *)part) != 0;
}

static void count_diag(void *ctx, const fdl_error *d)
{
    if (d->code == FDL_EIO)
        ++*(size_t *)ctx;
}

/* Link in this process; the cubin (malloc'ed) into *cubin when not NULL. */
static outcome run_job(const job *j, unsigned char **cubin, size_t *cubin_size)
{
    outcome o;
    memset(&o, 0, sizeof o);
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = j->arch ? j->arch : "sm_90";
    opts.opt_level = j->opt_level ? j->opt_level : -1;
    opts.cache = j->mode;
    opts.cache_dir = j->dir;
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    o.rc = fdl_link_create(&link, &opts, &err);
    if (o.rc != FDL_OK)
        goto done;
    fdl_link_set_diag(link, count_diag, &o.diags);
    if (j->decl) {
        if ((o.rc = fdl_decls_load(&decls, j->decl, &err)) != FDL_OK ||
            (o.rc = fdl_link_add_decls(link, decls, &err)) != FDL_OK)
            goto done;
    }
    for (size_t i = 0; i < j->ninputs; i++) {
        const input *in = &j->inputs[i];
        o.rc = in->data ? fdl_link_add_data(link, in->data, in->size, in->name, in->kind, &err)
                        : fdl_link_add_file(link, in->name, in->kind, &err);
        if (o.rc != FDL_OK)
            goto done;
    }
    o.rc = fdl_link_complete(link, &err);
    o.jl_runs = link->nvjl_runs;
    o.lease_waited = link->lease_waited;
    if (o.rc != FDL_OK)
        goto done;
    {
        size_t n = 0;
        const unsigned char *c = fdl_link_cubin(link, &n);
        o.cubin_hash = 1469598103934665603ull;
        for (size_t i = 0; i < n; i++)
            o.cubin_hash = (o.cubin_hash ^ c[i]) * 1099511628211ull;
    }
    {
        fdl_param_info info[8];
        size_t count = 0;
        o.kparams = fdl_link_kernel_params(link, "multiply_vectors", info, 8, &count, NULL) ==
                            FDL_OK
                        ? (long)count
                        : -1;
    }
    const char *key = "";
    o.result = fdl_link_cache_result(link, &key);
    snprintf(o.key, sizeof o.key, "%s", key);
    snprintf(o.warning, sizeof o.warning, "%s", fdl_link_cache_warning(link));
    fdl_link_nvrtc_cache(link, &o.nvrtc_hits, &o.nvrtc_compiled);
    fdl_link_nvvm_cache(link, &o.nvvm_hits, &o.nvvm_compiled);
    o.jl_loaded = mapped("libnvJitLink");
    o.nvrtc_loaded = mapped("libnvrtc");
    o.nvvm_loaded = mapped("libnvvm");
    if (cubin) {
        size_t n = 0;
        const void *c = fdl_link_cubin(link, &n);
        *cubin = malloc(n);
        memcpy(*cubin, c, n);
        *cubin_size = n;
    }
done:
    if (o.rc != FDL_OK)
        snprintf(o.warning, sizeof o.warning, "%s", err.message);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    return o;
}

/*
 * Link in a fresh process (a child: an empty memory cache). The outcome comes back through a
 * pipe, the cubin through @p cubin_path when not NULL.
 */
static outcome run_child(const job *j, const char *cubin_path)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        unsigned char *c = NULL;
        size_t n = 0;
        outcome o = run_job(j, cubin_path ? &c : NULL, &n);
        if (o.rc == FDL_OK && cubin_path) {
            FILE *f = fopen(cubin_path, "wb");
            if (!f || fwrite(c, 1, n, f) != n || fclose(f) != 0)
                o.rc = FDL_EIO;
        }
        ssize_t w = write(fds[1], &o, sizeof o);
        _exit(w == (ssize_t)sizeof o ? 0 : 1);
    }
    close(fds[1]);
    outcome o;
    memset(&o, 0, sizeof o);
    size_t got = 0;
    while (got < sizeof o) {
        ssize_t r = read(fds[0], (char *)&o + got, sizeof o - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == sizeof o,
              "the linking child failed");
    return o;
}

static const input BASE[] = {{LINK_DATA "/caller.ptx", NULL, 0, FDL_KIND_AUTO},
                             {LINK_DATA "/mul.ptx", NULL, 0, FDL_KIND_AUTO}};

static job base_job(const char *dir)
{
    job j = {dir, "sm_90", 0, FDL_CACHE_ON, BASE, 2, NULL};
    return j;
}

static int files_equal(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* Number of files in @p dir whose name contains @p part. */
static size_t count_files(const char *dir, const char *part)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strstr(e->d_name, part) != NULL;
    closedir(d);
    return n;
}

/* The path of the one entry of @p key in @p dir (malloc'ed). */
static char *entry_path(const char *dir, const char *key)
{
    char name[64];
    snprintf(name, sizeof name, "%s.fdlc", key);
    return path_in(dir, name);
}

/* ---- keys -------------------------------------------------------------------------------- */

Test(cache_key, each_change_is_a_miss_and_the_same_bytes_under_another_name_a_hit)
{
    char *dir = make_temp_dir();
    job j = base_job(dir);
    outcome first = run_child(&j, NULL);
    cr_assert_eq(first.rc, FDL_OK, "%s", first.warning);
    cr_assert_eq(first.result, FDL_CACHE_MISS);
    outcome again = run_child(&j, NULL);
    cr_assert_eq(again.result, FDL_CACHE_HIT_DISK);
    cr_assert_str_eq(again.key, first.key);

    /* one byte of one input */
    size_t n;
    char *mul = slurp(LINK_DATA "/mul.ptx", &n);
    char *changed = malloc(n + 8);
    memcpy(changed, mul, n);
    memcpy(changed + n, "\n// x\n", 6);
    changed[n + 6] = '\0'; /* strstr below reads a string */
    input one_byte[] = {BASE[0], {"mul.ptx", changed, n + 6, FDL_KIND_AUTO}};
    job jb = j;
    jb.inputs = one_byte;
    cr_assert_eq(run_child(&jb, NULL).result, FDL_CACHE_MISS, "one more byte");
    input flipped[] = {BASE[0], {"mul.ptx", changed, n, FDL_KIND_AUTO}};
    memcpy(changed, mul, n);
    /* a comment character flipped keeps the PTX valid: find the first "//" */
    char *c = strstr(changed, "//");
    cr_assert_not_null(c);
    c[2] = c[2] == 'x' ? 'y' : 'x';
    jb.inputs = flipped;
    cr_assert_eq(run_child(&jb, NULL).result, FDL_CACHE_MISS, "one byte flipped");

    /* one option, the arch, the input order */
    job jo = j;
    jo.opt_level = 3;
    cr_assert_eq(run_child(&jo, NULL).result, FDL_CACHE_MISS, "-O3");
    job ja = j;
    ja.arch = "sm_80";
    cr_assert_eq(run_child(&ja, NULL).result, FDL_CACHE_MISS, "sm_80");
    input reversed[] = {BASE[1], BASE[0]};
    job jr = j;
    jr.inputs = reversed;
    cr_assert_eq(run_child(&jr, NULL).result, FDL_CACHE_MISS, "order");

    /* the same bytes under other names: a hit (names are not in the key) */
    size_t nc;
    char *caller = slurp(LINK_DATA "/caller.ptx", &nc);
    input renamed[] = {{"elsewhere/a.ptx", caller, nc, FDL_KIND_AUTO},
                       {"b.ptx", mul, n, FDL_KIND_AUTO}};
    job jn = j;
    jn.inputs = renamed;
    outcome r = run_child(&jn, NULL);
    cr_assert_eq(r.result, FDL_CACHE_HIT_DISK);
    cr_assert_str_eq(r.key, first.key);

    /* declarations are in the key: a checked link is another entry */
    job jd = j;
    jd.decl = LINK_DATA "/mul.decl";
    outcome d = run_child(&jd, NULL);
    cr_assert_eq(d.rc, FDL_OK, "%s", d.warning);
    cr_assert_eq(d.result, FDL_CACHE_MISS, "declarations");
    cr_assert_eq(run_child(&jd, NULL).result, FDL_CACHE_HIT_DISK);
    free(caller);
    free(changed);
    free(mul);
    free(dir);
}

Test(cache_key, a_repeated_link_in_one_process_comes_from_memory)
{
    char *dir = make_temp_dir();
    job j = base_job(dir);
    unsigned char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    outcome first = run_job(&j, &a, &na);
    cr_assert_eq(first.result, FDL_CACHE_MISS);
    outcome second = run_job(&j, &b, &nb);
    cr_assert_eq(second.result, FDL_CACHE_HIT_MEMORY);
    cr_assert(na == nb && memcmp(a, b, na) == 0);
    /* off: neither looked up nor stored */
    job off = j;
    off.mode = FDL_CACHE_OFF;
    cr_assert_eq(run_job(&off, NULL, NULL).result, FDL_CACHE_UNUSED);
    free(a);
    free(b);
    free(dir);
}

Test(cache_key, fdlink_cache_0_turns_the_default_off)
{
    char *dir = make_temp_dir();
    job j = base_job(dir);
    j.mode = FDL_CACHE_AUTO;
    setenv("FDLINK_CACHE", "0", 1);
    cr_assert_eq(run_job(&j, NULL, NULL).result, FDL_CACHE_UNUSED);
    cr_assert_eq(count_files(dir, ".fdlc"), 0);
    setenv("FDLINK_CACHE", "1", 1);
    cr_assert_eq(run_job(&j, NULL, NULL).result, FDL_CACHE_MISS);
    cr_assert_eq(count_files(dir, ".fdlc"), 1);
    free(dir);
}

/* A .cu that includes a header from its own folder, and one that includes through a macro. */
static void write_cuda(const char *dir, const char *header_body)
{
    char *cu = path_in(dir, "k.cu"), *h = path_in(dir, "k.cuh");
    const char *src = "#include \"k.cuh\"\n"
                      "extern \"C\" __device__ int twice(int *r, int x) { *r = K * x; return 0; }\n";
    spit(cu, src, strlen(src));
    spit(h, header_body, strlen(header_body));
    free(cu);
    free(h);
}

/*
 * NVVM bitcode (issue 34): libNVVM's LTO-IR differs from run to run for the same input, so the
 * compile is cached under the input's bytes, libNVVM's version and the options; the cached bytes
 * make the link's own key repeatable, so that a second link is a disk hit that loads neither
 * libNVVM nor nvJitLink. Changed bytes, or another architecture, compile again.
 */
Test(cache_key, a_bitcode_input_is_compiled_once)
{
    const char *roots[8];
    size_t nroots = fdl__cuda_roots(roots, 8);
    char *libdevice = NULL;
    for (size_t i = 0; i < nroots && !libdevice; i++) {
        char *p = path_in(roots[i], "nvvm/libdevice/libdevice.10.bc");
        if (access(p, R_OK) == 0)
            libdevice = p;
        else
            free(p);
    }
    if (!libdevice)
        cr_skip_test("no libdevice.10.bc in the CUDA toolkit");
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache"), *bc = path_in(dir, "k.bc");
    size_t n = 0;
    char *bytes = slurp(libdevice, &n);
    spit(bc, bytes, n);
    input in[] = {{bc, NULL, 0, FDL_KIND_AUTO}};
    job j = {cache, "sm_90", 0, FDL_CACHE_ON, in, 1, NULL};
    outcome a = run_child(&j, NULL);
    if (a.rc == FDL_ENOLIB)
        cr_skip_test("no libNVVM: %s", a.warning);
    cr_assert_eq(a.rc, FDL_OK, "%s", a.warning);
    cr_assert_eq(a.nvvm_compiled, 1);
    cr_assert_eq(a.nvvm_hits, 0);
    cr_assert_eq(a.result, FDL_CACHE_MISS);
    cr_assert(a.nvvm_loaded);
    outcome b = run_child(&j, NULL);
    cr_assert_eq(b.rc, FDL_OK, "%s", b.warning);
    cr_assert_eq(b.nvvm_hits, 1, "the same bitcode: from the cache");
    cr_assert_eq(b.nvvm_compiled, 0);
    cr_assert_eq(b.result, FDL_CACHE_HIT_DISK, "the cached LTO-IR gives the link the same key");
    cr_assert_str_eq(b.key, a.key);
    cr_assert(!b.nvvm_loaded, "a warm bitcode compile loaded libNVVM");
    cr_assert(!b.jl_loaded, "a disk hit loaded nvJitLink");
    /* other bytes of the same meaning (four zero bytes after the bitcode, which LLVM's reader
     * ignores): compiled again */
    char *longer = malloc(n + 4);
    cr_assert_not_null(longer);
    memcpy(longer, bytes, n);
    memset(longer + n, 0, 4);
    spit(bc, longer, n + 4);
    outcome c = run_child(&j, NULL);
    cr_assert_eq(c.rc, FDL_OK, "%s", c.warning);
    cr_assert_eq(c.nvvm_compiled, 1, "changed bitcode must be compiled again");
    cr_assert_eq(c.nvvm_hits, 0);
    /* libNVVM's LTO-IR usually differs from run to run, but not always (seen on a GPU host): the
     * link's key follows the LTO-IR, and the link hits exactly when the key is the same */
    if (strcmp(c.key, a.key) == 0)
        cr_assert_eq(c.result, FDL_CACHE_HIT_DISK, "the same LTO-IR, the same key: a hit");
    else
        cr_assert_eq(c.result, FDL_CACHE_MISS);
    /* another architecture: another compile */
    spit(bc, bytes, n);
    job j80 = j;
    j80.arch = "sm_80";
    outcome d = run_child(&j80, NULL);
    cr_assert_eq(d.rc, FDL_OK, "%s", d.warning);
    cr_assert_eq(d.nvvm_compiled, 1, "another architecture must be compiled again");
    cr_assert_eq(d.nvvm_hits, 0);
    /* and the first input still hits */
    outcome e = run_child(&j, NULL);
    cr_assert_eq(e.nvvm_hits, 1);
    cr_assert_eq(e.result, FDL_CACHE_HIT_DISK);
    free(longer);
    free(bytes);
    free(bc);
    free(cache);
    free(dir);
    free(libdevice);
}

Test(cache_key, a_changed_header_of_a_cuda_input_is_a_miss)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    write_cuda(dir, "#define K 2\n");
    char *cu = path_in(dir, "k.cu");
    input in[] = {{cu, NULL, 0, FDL_KIND_AUTO}};
    job j = {cache, "sm_90", 0, FDL_CACHE_ON, in, 1, NULL};
    outcome a = run_child(&j, NULL);
    if (a.rc == FDL_ENOLIB)
        cr_skip_test("no NVRTC: %s", a.warning);
    cr_assert_eq(a.rc, FDL_OK, "%s", a.warning);
    cr_assert_eq(a.nvrtc_compiled, 1);
    cr_assert(a.nvrtc_loaded && a.jl_loaded);
    outcome b = run_child(&j, NULL);
    cr_assert_eq(b.nvrtc_hits, 1, "the same source and header: from the cache");
    cr_assert_eq(b.nvrtc_compiled, 0);
    cr_assert_eq(b.result, FDL_CACHE_HIT_DISK);
    /* the versions in the keys came from the memos: neither library was loaded */
    cr_assert(!b.nvrtc_loaded, "a warm NVRTC compile loaded NVRTC");
    cr_assert(!b.jl_loaded, "a disk hit loaded nvJitLink");
    write_cuda(dir, "#define K 3\n");
    outcome c = run_child(&j, NULL);
    cr_assert_eq(c.nvrtc_compiled, 1, "a changed header must be compiled again");
    cr_assert_eq(c.result, FDL_CACHE_MISS);
    /* a macro include cannot be followed: never cached */
    const char *macro = "#define H \"k.cuh\"\n#include H\n"
                        "extern \"C\" __device__ int twice(int *r, int x) { *r = K * x; return 0; }\n";
    spit(cu, macro, strlen(macro));
    outcome d1 = run_child(&j, NULL), d2 = run_child(&j, NULL);
    cr_assert_eq(d1.rc, FDL_OK, "%s", d1.warning);
    cr_assert_eq(d1.nvrtc_compiled + d2.nvrtc_compiled, 2);
    cr_assert_eq(d2.nvrtc_hits, 0);
    free(cu);
    free(cache);
    free(dir);
}

/* ---- bad entries ------------------------------------------------------------------------- */

typedef enum damage { FLIP, TRUNCATE, EMPTY, FOREIGN, FUTURE } damage;

static void damage_entry(const char *path, damage how)
{
    size_t n;
    char *b = slurp(path, &n);
    switch (how) {
    case FLIP: b[200] ^= 0x40; spit(path, b, n); break; /* inside the cubin */
    case TRUNCATE: spit(path, b, n / 2); break;
    case EMPTY: spit(path, b, 0); break;
    case FOREIGN: spit(path, "hello, I am not a cache entry\n", 30); break;
    case FUTURE: b[8] = 99; spit(path, b, n); break; /* format version 99 */
    }
    free(b);
}

static void bad_entry_is_a_miss(damage how)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char *ref = path_in(dir, "ref.cubin"), *got = path_in(dir, "got.cubin");
    job j = base_job(cache);
    job off = j;
    off.mode = FDL_CACHE_OFF;
    cr_assert_eq(run_child(&off, ref).rc, FDL_OK);
    outcome first = run_child(&j, NULL);
    cr_assert_eq(first.result, FDL_CACHE_MISS);
    char *entry = entry_path(cache, first.key);
    damage_entry(entry, how);
    outcome o = run_child(&j, got);
    cr_assert_eq(o.rc, FDL_OK);
    cr_assert_eq(o.result, FDL_CACHE_MISS, "a bad entry is a miss");
    cr_assert(files_equal(ref, got), "the result is byte-identical to an uncached link");
    fdl_cache_stats s;
    cr_assert_eq(fdl_cache_stats_get(&s, cache, NULL), FDL_OK);
    cr_assert_eq(s.corrupt, 1, "counted");
    /* the bad entry is gone: the one there now is the fresh result, and good */
    size_t bad = 9;
    cr_assert_eq(fdl_cache_verify(cache, NULL, NULL, &bad, NULL), FDL_OK);
    cr_assert_eq(bad, 0);
    cr_assert_eq(run_child(&j, NULL).result, FDL_CACHE_HIT_DISK);
    free(entry);
    free(ref);
    free(got);
    free(cache);
    free(dir);
}

Test(cache_entry, a_flipped_payload_byte_is_a_miss) { bad_entry_is_a_miss(FLIP); }
Test(cache_entry, a_truncated_entry_is_a_miss) { bad_entry_is_a_miss(TRUNCATE); }
Test(cache_entry, an_empty_entry_is_a_miss) { bad_entry_is_a_miss(EMPTY); }
Test(cache_entry, a_foreign_file_is_a_miss) { bad_entry_is_a_miss(FOREIGN); }
Test(cache_entry, a_future_format_is_a_miss) { bad_entry_is_a_miss(FUTURE); }

/*
 * Issue 35: an entry planted under a real key, whole and with a right checksum, whose cubin is
 * not one (what a writer without the payload check, an old fdlink, a shared remote or a bundle
 * could store). It is no hit: counted corrupt, removed, the link done afresh (and before, the
 * fallback called nvJitLink unloaded: SIGSEGV), and `cache verify` removes it too.
 */
typedef enum planted {
    PLANT_EMPTY, PLANT_ONE_BYTE, PLANT_NOT_ELF, PLANT_HOST_ELF,
    PLANT_CUBIN135 /* a good one: nvJitLink 13.5's, its tables at 4 mod 8 (issue 40) */
} planted;

#define CUBIN135 FDL_TEST_DATA "/link/nvjitlink135/twice_sm90.cubin"

static void plant(const char *cache, const char *hex, planted what)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    for (int i = 0; i < FDL__CACHE_KEY_SIZE; i++) {
        unsigned v = 0;
        cr_assert_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
        key[i] = (unsigned char)v;
    }
    static const unsigned char host_elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0};
    const unsigned char *cubin = (const unsigned char *)"";
    size_t cubin_len = 0;
    char *file = NULL;
    switch (what) {
    case PLANT_EMPTY: break;
    case PLANT_ONE_BYTE: cubin = (const unsigned char *)"\x7f"; cubin_len = 1; break;
    case PLANT_NOT_ELF: cubin = (const unsigned char *)"not a cubin at all"; cubin_len = 18; break;
    case PLANT_HOST_ELF: cubin = host_elf; cubin_len = sizeof host_elf; break;
    case PLANT_CUBIN135:
        file = slurp(CUBIN135, &cubin_len);
        cubin = (const unsigned char *)file;
        break;
    }
    unsigned char flags[2] = {0, 0};
    const unsigned char *secs[5] = {cubin, (const unsigned char *)"", (const unsigned char *)"",
                                    (const unsigned char *)"", flags};
    size_t lens[5] = {cubin_len, 0, 0, 0, 2};
    /* in a child: the writer is another process (this one's memory tier stays empty) */
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        fdl__cache_use u;
        fdl__cache_use_init(&u, FDL_CACHE_ON, cache, "");
        u.payload = NULL; /* a writer that checks nothing */
        fdl__cache_put(&u, FDL__CACHE_LINK, key, secs, lens, 5);
        fdl__cache_use_free(&u);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    free(file);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void planted_entry_is_no_hit(planted what, int isolate)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char *ref = path_in(dir, "ref.cubin"), *got = path_in(dir, "got.cubin");
    setenv("FDLINK_LINK_ISOLATE", isolate ? "1" : "0", 1);
    job j = base_job(cache);
    job off = j;
    off.mode = FDL_CACHE_OFF;
    cr_assert_eq(run_child(&off, ref).rc, FDL_OK);
    outcome first = run_child(&j, NULL);
    cr_assert_eq(first.result, FDL_CACHE_MISS);
    plant(cache, first.key, what);
    char *entry = entry_path(cache, first.key);
    cr_assert_eq(access(entry, F_OK), 0, "the planted entry is there");
    /* cache verify removes it */
    size_t bad = 0;
    cr_assert_eq(fdl_cache_verify(cache, NULL, NULL, &bad, NULL), FDL_OK);
    cr_assert_eq(bad, 1, "cache verify calls a planted bad cubin good");
    cr_assert_eq(access(entry, F_OK), -1);
    /* planted again: a link in a fresh process (memo: nvJitLink not loaded before the lookup) */
    plant(cache, first.key, what);
    outcome o = run_child(&j, got);
    cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
    cr_assert_eq(o.result, FDL_CACHE_MISS, "a planted bad cubin is served");
    cr_assert(files_equal(ref, got), "the result is byte-identical to an uncached link");
    fdl_cache_stats s;
    cr_assert_eq(fdl_cache_stats_get(&s, cache, NULL), FDL_OK);
    cr_assert_geq(s.corrupt, 2, "counted");
    cr_assert_eq(run_child(&j, NULL).result, FDL_CACHE_HIT_DISK, "the fresh result is stored");
    unsetenv("FDLINK_LINK_ISOLATE");
    free(entry);
    free(ref);
    free(got);
    free(cache);
    free(dir);
}

Test(cache_entry, a_planted_empty_cubin_is_no_hit) { planted_entry_is_no_hit(PLANT_EMPTY, 0); }
Test(cache_entry, a_planted_empty_cubin_is_no_hit_isolated)
{
    planted_entry_is_no_hit(PLANT_EMPTY, 1);
}
Test(cache_entry, a_planted_one_byte_cubin_is_no_hit) { planted_entry_is_no_hit(PLANT_ONE_BYTE, 0); }
Test(cache_entry, a_planted_non_elf_cubin_is_no_hit) { planted_entry_is_no_hit(PLANT_NOT_ELF, 0); }
Test(cache_entry, a_planted_host_elf_cubin_is_no_hit) { planted_entry_is_no_hit(PLANT_HOST_ELF, 0); }

/*
 * Issue 40: a link entry whose cubin is nvJitLink 13.5's (section and program header tables at 4
 * mod 8, as the ELF specification allows and the driver loads) is a hit, and `cache verify` keeps
 * it; before, the payload check refused it, so every such link was a miss, without a word.
 */
Test(cache_entry, an_entry_with_nvjitlink_13_5s_unaligned_tables_is_a_hit)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache"), *got = path_in(dir, "got.cubin");
    job j = base_job(cache);
    outcome first = run_child(&j, NULL);
    cr_assert_eq(first.result, FDL_CACHE_MISS);
    plant(cache, first.key, PLANT_CUBIN135);
    size_t bad = 1;
    cr_assert_eq(fdl_cache_verify(cache, NULL, NULL, &bad, NULL), FDL_OK);
    cr_assert_eq(bad, 0, "cache verify calls nvJitLink 13.5's cubin bad");
    char *entry = entry_path(cache, first.key);
    cr_assert_eq(access(entry, F_OK), 0, "cache verify removed nvJitLink 13.5's cubin");
    outcome o = run_child(&j, got);
    cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
    cr_assert_eq(o.result, FDL_CACHE_HIT_DISK, "nvJitLink 13.5's cubin is no hit");
    cr_assert(files_equal(CUBIN135, got), "the hit is the stored cubin");
    free(entry);
    free(got);
    free(cache);
    free(dir);
}

Test(cache_entry, verify_reports_and_removes_bad_entries_and_dead_writers_files)
{
    char *dir = make_temp_dir();
    job j = base_job(dir);
    outcome first = run_child(&j, NULL);
    char *good = entry_path(dir, first.key);
    char *foreign = path_in(dir, "0123456789abcdef0123456789abcdef.fdlc");
    spit(foreign, "x", 1);
    /* a temporary file of a process that no longer runs (pid 1 << 22 is beyond pid_max) */
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char tmpname[512], clean[256] = "";
    size_t k = 0;
    for (size_t i = 0; host[i] && k + 1 < sizeof clean; i++)
        if ((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= 'A' && host[i] <= 'Z') ||
            (host[i] >= '0' && host[i] <= '9') || host[i] == '-')
            clean[k++] = host[i];
    snprintf(tmpname, sizeof tmpname, "%s.fdlc.tmp.%s.%d.0000abcd", first.key,
             k ? clean : "h", 4194305);
    char *tmp = path_in(dir, tmpname);
    spit(tmp, "partial", 7);
    fdl_cache_stats s;
    cr_assert_eq(fdl_cache_stats_get(&s, dir, NULL), FDL_OK);
    cr_assert_eq(s.entries, 2);
    cr_assert_eq(s.temporaries, 1);
    size_t bad = 0;
    cr_assert_eq(fdl_cache_verify(dir, NULL, NULL, &bad, NULL), FDL_OK);
    cr_assert_eq(bad, 2);
    cr_assert_eq(access(foreign, F_OK), -1);
    cr_assert_eq(access(tmp, F_OK), -1);
    cr_assert_eq(access(good, F_OK), 0, "a good entry stays");
    cr_assert_eq(fdl_cache_stats_get(&s, dir, NULL), FDL_OK);
    cr_assert_eq(s.entries, 1);
    cr_assert_eq(s.temporaries, 0);
    size_t removed = 0;
    cr_assert_eq(fdl_cache_clear(dir, &removed, NULL), FDL_OK);
    cr_assert_eq(removed, 1);
    cr_assert_eq(fdl_cache_stats_get(&s, dir, NULL), FDL_OK);
    cr_assert_eq(s.entries + s.hits + s.misses + s.corrupt, 0);
    free(good);
    free(foreign);
    free(tmp);
    free(dir);
}

/* Issue 35: `cache clear` beside running links leaves their temporaries alone. */
Test(cache_entry, clear_leaves_a_running_writers_temporary)
{
    char *dir = make_temp_dir();
    job j = base_job(dir);
    outcome first = run_child(&j, NULL);
    cr_assert_eq(first.rc, FDL_OK);
    char host[256] = "", clean[256] = "";
    gethostname(host, sizeof host - 1);
    size_t k = 0;
    for (size_t i = 0; host[i] && k + 1 < sizeof clean; i++)
        if ((host[i] >= 'a' && host[i] <= 'z') || (host[i] >= 'A' && host[i] <= 'Z') ||
            (host[i] >= '0' && host[i] <= '9') || host[i] == '-')
            clean[k++] = host[i];
    /* a writer that runs (this process) and one that is gone (beyond pid_max) */
    char live[512], dead[512];
    snprintf(live, sizeof live, "%s.fdlc.tmp.%s.%ld.0000abcd", first.key, k ? clean : "h",
             (long)getpid());
    snprintf(dead, sizeof dead, "%s.fdlc.tmp.%s.%d.0000abce", first.key, k ? clean : "h",
             4194305);
    char *live_path = path_in(dir, live), *dead_path = path_in(dir, dead);
    spit(live_path, "partial", 7);
    spit(dead_path, "partial", 7);
    size_t removed = 0;
    cr_assert_eq(fdl_cache_clear(dir, &removed, NULL), FDL_OK);
    cr_assert_eq(access(live_path, F_OK), 0, "a running writer's temporary was removed");
    cr_assert_eq(access(dead_path, F_OK), -1, "a gone writer's temporary stayed");
    cr_assert_eq(removed, 2, "the entry and the gone writer's temporary");
    unlink(live_path);
    free(live_path);
    free(dead_path);
    free(dir);
}

/* ---- the directory ----------------------------------------------------------------------- */

Test(cache_dir, from_the_environment_in_order)
{
    char buf[512];
    setenv("FDLINK_CACHE_DIR", "/x/fd", 1);
    setenv("XDG_CACHE_HOME", "/x/xdg", 1);
    setenv("HOME", "/x/home", 1);
    cr_assert_eq(fdl_cache_dir(buf, sizeof buf, NULL), FDL_OK);
    cr_assert_str_eq(buf, "/x/fd");
    unsetenv("FDLINK_CACHE_DIR");
    cr_assert_eq(fdl_cache_dir(buf, sizeof buf, NULL), FDL_OK);
    cr_assert_str_eq(buf, "/x/xdg/fdlink");
    setenv("XDG_CACHE_HOME", "relative", 1); /* not absolute: ignored, as the XDG spec says */
    cr_assert_eq(fdl_cache_dir(buf, sizeof buf, NULL), FDL_OK);
    cr_assert_str_eq(buf, "/x/home/.cache/fdlink");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_cache_dir(buf, sizeof buf, &err), FDL_ENOTFOUND);
    setenv("HOME", "/x/home", 1);
    cr_assert_eq(fdl_cache_dir(buf, 4, &err), FDL_ELIMIT);
}

Test(cache_dir, eviction_keeps_the_directory_under_its_bound)
{
    char *dir = make_temp_dir();
    job j = base_job(dir);
    outcome one = run_job(&j, NULL, NULL);
    fdl_cache_stats s;
    cr_assert_eq(fdl_cache_stats_get(&s, dir, NULL), FDL_OK);
    uint64_t entry = s.bytes;
    char bound[32];
    snprintf(bound, sizeof bound, "%llu", (unsigned long long)(entry * 3 + entry / 2));
    setenv("FDLINK_CACHE_MAX_SIZE", bound, 1);
    size_t n;
    char *mul = slurp(LINK_DATA "/mul.ptx", &n);
    char *variant = malloc(n + 32);
    for (int i = 0; i < 8; i++) {
        memcpy(variant, mul, n);
        int extra = snprintf(variant + n, 32, "\n// variant %d\n", i);
        input in[] = {BASE[0], {"mul.ptx", variant, n + (size_t)extra, FDL_KIND_AUTO}};
        job jv = j;
        jv.inputs = in;
        struct timespec pause = {0, 20000000}; /* distinct modification times */
        nanosleep(&pause, NULL);
        cr_assert_eq(run_job(&jv, NULL, NULL).result, FDL_CACHE_MISS);
        cr_assert_eq(fdl_cache_stats_get(&s, dir, NULL), FDL_OK);
        cr_assert_leq(s.bytes, entry * 3 + entry / 2, "over the bound after link %d", i);
    }
    cr_assert_eq(s.entries, 3);
    /* the first entry was the least recently used: gone */
    char *first = entry_path(dir, one.key);
    cr_assert_eq(access(first, F_OK), -1);
    /* prune to a smaller bound */
    size_t removed = 0;
    cr_assert_eq(fdl_cache_prune(dir, entry, &removed, NULL), FDL_OK);
    cr_assert_eq(removed, 2);
    free(first);
    free(variant);
    free(mul);
    free(dir);
}

/* A link with the cache in @p dir works, is not from the cache, and warns once. */
static void links_without(const char *dir, const char *why)
{
    job j = base_job(dir);
    outcome o = run_job(&j, NULL, NULL);
    cr_assert_eq(o.rc, FDL_OK, "%s: %s", why, o.warning);
    cr_assert_eq(o.result, FDL_CACHE_MISS, "%s", why);
    cr_assert_neq(o.warning[0], '\0', "%s: a warning", why);
    cr_assert_eq(o.diags, 1, "%s: said once (%zu)", why, o.diags);
}

Test(cache_dir, an_uncreatable_directory_leaves_links_working)
{
    char *dir = make_temp_dir(), *file = path_in(dir, "file");
    spit(file, "x", 1);
    char *under = path_in(file, "cache"); /* a folder under a regular file */
    links_without(under, "uncreatable");
    free(under);
    free(file);
    free(dir);
}

Test(cache_dir, a_read_only_directory_leaves_links_working)
{
    char *dir = make_temp_dir();
    if (geteuid() == 0) {
        /* root writes through permissions: a read-only file system instead */
        if (mount("tmpfs", dir, "tmpfs", MS_RDONLY, "size=1m") != 0)
            cr_skip_test("cannot mount a read-only tmpfs: %s", strerror(errno));
    } else {
        cr_assert_eq(chmod(dir, 0555), 0);
    }
    links_without(dir, "read-only");
    if (geteuid() == 0)
        umount(dir);
    rmdir(dir);
    free(dir);
}

Test(cache_dir, a_full_file_system_leaves_links_working)
{
    char *dir = make_temp_dir();
    if (mount("tmpfs", dir, "tmpfs", 0, "size=8k") != 0)
        cr_skip_test("cannot mount a small tmpfs: %s", strerror(errno));
    /* fill it */
    char *fill = path_in(dir, "fill");
    int fd = open(fill, O_WRONLY | O_CREAT, 0644);
    char block[1024] = {0};
    while (fd >= 0 && write(fd, block, sizeof block) > 0)
        ;
    if (fd >= 0)
        close(fd);
    links_without(dir, "full");
    cr_assert_eq(count_files(dir, ".tmp."), 0, "no temporary file left");
    umount(dir);
    rmdir(dir);
    free(fill);
    free(dir);
}

/* ---- many processes ---------------------------------------------------------------------- */

/*
 * @p nproc children wait on one pipe and then link at once (child i links variant i when
 * @p distinct), each comparing its cubin with @p refs[i]; returns how many failed.
 */
static int link_at_once(const char *cache, int nproc, int distinct, char **refs,
                        const char *scratch)
{
    int gate[2];
    cr_assert_eq(pipe(gate), 0);
    pid_t pids[64];
    for (int i = 0; i < nproc; i++) {
        pids[i] = fork();
        cr_assert(pids[i] >= 0);
        if (pids[i] == 0) {
            close(gate[1]);
            char c;
            if (read(gate[0], &c, 1) < 0)
                _exit(3);
            size_t n = 0;
            char *mul = NULL;
            fdl__read_file(LINK_DATA "/mul.ptx", &mul, &n, NULL);
            char *variant = malloc(n + 32);
            memcpy(variant, mul, n);
            int extra = distinct ? snprintf(variant + n, 32, "\n// variant %d\n", i) : 0;
            input in[] = {BASE[0], {"mul.ptx", variant, n + (size_t)extra, FDL_KIND_AUTO}};
            job j = base_job(cache);
            j.inputs = in;
            unsigned char *cubin = NULL;
            size_t size = 0;
            outcome o = run_job(&j, &cubin, &size);
            if (o.rc != FDL_OK)
                _exit(4);
            size_t rn = 0;
            char *ref = NULL;
            if (fdl__read_file(refs[distinct ? i : 0], &ref, &rn, NULL) != FDL_OK)
                _exit(5);
            _exit(rn == size && memcmp(ref, cubin, size) == 0 ? 0 : 6);
        }
    }
    (void)scratch;
    close(gate[0]);
    close(gate[1]); /* EOF: everyone goes */
    int failed = 0;
    for (int i = 0; i < nproc; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    return failed;
}

/* Reference cubins of the variants, linked without the cache. */
static char **references(const char *dir, int n)
{
    char **refs = calloc((size_t)n, sizeof *refs);
    size_t size;
    char *mul = slurp(LINK_DATA "/mul.ptx", &size);
    char *variant = malloc(size + 32);
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "ref%d.cubin", i);
        refs[i] = path_in(dir, name);
        memcpy(variant, mul, size);
        int extra = snprintf(variant + size, 32, "\n// variant %d\n", i);
        input in[] = {BASE[0], {"mul.ptx", variant, size + (size_t)extra, FDL_KIND_AUTO}};
        job j = base_job(NULL);
        j.mode = FDL_CACHE_OFF;
        j.inputs = in;
        cr_assert_eq(run_child(&j, refs[i]).rc, FDL_OK);
    }
    free(variant);
    free(mul);
    return refs;
}

Test(cache_contention, sixteen_processes_twenty_rounds, .timeout = 600)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char *same = path_in(dir, "same.cubin");
    job off = base_job(NULL);
    off.mode = FDL_CACHE_OFF;
    cr_assert_eq(run_child(&off, same).rc, FDL_OK);
    char *refs_same[1] = {same};
    int rounds = getenv("FDLINK_TEST_QUICK") ? 3 : 20;
    uint64_t hits = 0;
    for (int r = 0; r < rounds; r++) {
        fdl_cache_stats s;
        if (fdl_cache_stats_get(&s, cache, NULL) == FDL_OK)
            hits += s.hits;
        cr_assert_eq(fdl_cache_clear(cache, NULL, NULL), FDL_OK);
        cr_assert_eq(link_at_once(cache, 16, 0, refs_same, dir), 0, "round %d, same inputs", r);
        cr_assert_eq(count_files(cache, ".tmp."), 0, "round %d: a temporary file left", r);
        /* writers rename whole entries into place: no reader ever sees a torn one */
        cr_assert_eq(fdl_cache_stats_get(&s, cache, NULL), FDL_OK);
        cr_assert_eq(s.corrupt, 0, "round %d: a reader saw a torn entry", r);
        cr_assert_eq(s.entries, 1);
    }
    char **refs = references(dir, 16);
    cr_assert_eq(link_at_once(cache, 16, 1, refs, dir), 0, "different inputs");
    cr_assert_eq(link_at_once(cache, 16, 1, refs, dir), 0, "different inputs, from the cache");
    cr_assert_eq(count_files(cache, ".tmp."), 0);
    size_t bad = 9;
    cr_assert_eq(fdl_cache_verify(cache, NULL, NULL, &bad, NULL), FDL_OK);
    cr_assert_eq(bad, 0, "verify is clean");
    fdl_cache_stats s;
    cr_assert_eq(fdl_cache_stats_get(&s, cache, NULL), FDL_OK);
    cr_assert_eq(s.entries, 17);
    cr_assert_geq(s.hits, 16);
    for (int i = 0; i < 16; i++)
        free(refs[i]);
    free(refs);
    free(same);
    free(cache);
    free(dir);
}

static void count_bad_entry(void *ctx, const fdl_cache_entry *e)
{
    /* a killed writer's temporary and lease (issue 40) are removed and reported, not entries */
    if (strcmp(e->kind, "temporary") != 0 && strcmp(e->kind, "lease") != 0)
        ++*(size_t *)ctx;
}

Test(cache_contention, killed_writers_leave_nothing_verify_rejects, .timeout = 600)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    srand((unsigned)time(NULL));
    int rounds = getenv("FDLINK_TEST_QUICK") ? 10 : 40;
    size_t n;
    char *mul = slurp(LINK_DATA "/mul.ptx", &n);
    for (int r = 0; r < rounds; r++) {
        /* the child says each completed link on a pipe: the first round is killed only after
         * one, so that "some links completed" holds however slow the machine (the kill's moment
         * is random, not a wait for anything) */
        int done[2];
        cr_assert(pipe(done) == 0);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
            close(done[0]);
            char *variant = malloc(n + 32);
            for (int i = 0;; i++) { /* link new inputs until killed */
                memcpy(variant, mul, n);
                int extra = snprintf(variant + n, 32, "\n// r%d v%d\n", r, i);
                input in[] = {BASE[0], {"mul.ptx", variant, n + (size_t)extra, FDL_KIND_AUTO}};
                job j = base_job(cache);
                j.inputs = in;
                run_job(&j, NULL, NULL);
                if (i == 0 && write(done[1], "x", 1) != 1)
                    _exit(1);
            }
        }
        close(done[1]);
        char byte;
        if (r == 0)
            cr_assert_eq(read(done[0], &byte, 1), 1, "the writer completed no link");
        struct timespec t = {0, (long)(rand() % 150) * 1000000L};
        nanosleep(&t, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(done[0]);
    }
    size_t bad_entries = 0, bad = 0;
    cr_assert_eq(fdl_cache_verify(cache, count_bad_entry, &bad_entries, &bad, NULL), FDL_OK);
    cr_assert_eq(bad_entries, 0, "an entry verify rejects");
    cr_assert_eq(count_files(cache, ".tmp."), 0, "stray temporary files after verify");
    cr_assert_eq(count_files(cache, ".lease"), 0, "stray lease files after verify");
    cr_assert_gt(count_files(cache, ".fdlc"), 0, "some links completed");
    free(mul);
    free(cache);
    free(dir);
}

/* ---- leases: each link once across processes (issue 32) -------------------------------- */

/* Read one outcome from @p fd and reap @p pid. */
static outcome reap_outcome(pid_t pid, int fd)
{
    outcome o;
    memset(&o, 0, sizeof o);
    size_t got = 0;
    while (got < sizeof o) {
        ssize_t r = read(fd, (char *)&o + got, sizeof o - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == sizeof o,
              "a linking child failed");
    return o;
}

/* @p n children that link @p j once the gate's write end is closed: their pids and pipes
 * (child i links j[i % njobs]). */
static void start_gated_jobs(const job *j, size_t njobs, const int gate[2], size_t n, pid_t *pid,
                             int *fd);

static void start_gated(const job *j, const int gate[2], size_t n, pid_t *pid, int *fd)
{
    start_gated_jobs(j, 1, gate, n, pid, fd);
}

static void start_gated_jobs(const job *jobs, size_t njobs, const int gate[2], size_t n,
                             pid_t *pid, int *fd)
{
    for (size_t i = 0; i < n; i++) {
        int p[2];
        cr_assert_eq(pipe(p), 0);
        pid[i] = fork();
        cr_assert(pid[i] >= 0);
        if (pid[i] == 0) {
            close(p[0]);
            close(gate[1]);
            for (size_t k = 0; k < i; k++)
                close(fd[k]); /* the earlier children's pipes are the parent's */
            char c;
            while (read(gate[0], &c, 1) > 0) /* the gate: EOF when the parent closes it */
                ;
            outcome o = run_job(&jobs[i % njobs], NULL, NULL);
            ssize_t w = write(p[1], &o, sizeof o);
            _exit(w == (ssize_t)sizeof o ? 0 : 1);
        }
        close(p[1]);
        fd[i] = p[0];
    }
}

Test(cache_lease, processes_missing_one_key_at_once_run_nvjitlink_once)
{
    char *dir = make_temp_dir();
    job j = base_job(dir);
    enum { N = 8 };
    pid_t pid[N];
    int fd[N], gate[2];
    cr_assert_eq(pipe(gate), 0);
    start_gated(&j, gate, N, pid, fd);
    close(gate[0]);
    close(gate[1]); /* all start at once */
    size_t runs = 0, waited = 0;
    uint64_t hash = 0;
    for (size_t i = 0; i < N; i++) {
        outcome o = reap_outcome(pid[i], fd[i]);
        if (o.rc == FDL_ENOLIB)
            cr_skip_test("%s", o.warning);
        cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
        runs += o.jl_runs;
        waited += (size_t)o.lease_waited;
        if (i == 0)
            hash = o.cubin_hash;
        cr_assert_eq(o.cubin_hash, hash, "every process has the same cubin");
    }
    cr_assert_eq(runs, 1, "one process of %d linked, the others took its entry (%zu runs, %zu "
                 "waited)", N, runs, waited);
    cr_assert_eq(count_files(dir, ".lease"), 0, "the lease file went with the link");
    free(dir);
}

/* A child holding the lease of @p dir's entry @p key until it is killed; returns its pid. */
static pid_t hold_lease(const char *dir, const char *key)
{
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.lease", dir, key);
        int fd = open(path, O_RDWR | O_CREAT, 0666);
        int ok = fd >= 0 && flock(fd, LOCK_EX) == 0;
        ssize_t w = write(ready[1], ok ? "1" : "0", 1);
        (void)w;
        for (;;)
            pause(); /* held until killed */
    }
    close(ready[1]);
    char c = '0';
    cr_assert_eq(read(ready[0], &c, 1), 1);
    close(ready[0]);
    cr_assert_eq(c, '1', "the holder took the lease");
    return pid;
}

Test(cache_lease, a_killed_holder_leaves_no_waiter_behind)
{
    char *dir = make_temp_dir(), *scratch = make_temp_dir();
    job j = base_job(scratch);
    outcome first = run_child(&j, NULL); /* the key, from a cache of its own */
    if (first.rc == FDL_ENOLIB)
        cr_skip_test("%s", first.warning);
    cr_assert_eq(first.rc, FDL_OK, "%s", first.warning);
    j.dir = dir;
    pid_t holder = hold_lease(dir, first.key);
    enum { N = 4 };
    pid_t pid[N];
    int fd[N], gate[2];
    cr_assert_eq(pipe(gate), 0);
    start_gated(&j, gate, N, pid, fd);
    close(gate[0]);
    close(gate[1]);
    /* the holder dies without a word, whenever the others have come to its lease */
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    size_t runs = 0;
    for (size_t i = 0; i < N; i++) {
        outcome o = reap_outcome(pid[i], fd[i]);
        cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
        cr_assert_eq(o.cubin_hash, first.cubin_hash, "the same cubin as a link of its own");
        runs += o.jl_runs;
    }
    cr_assert_eq(runs, 1, "after the holder died, one waiter linked and the others took its "
                 "entry (%zu runs)", runs);
    free(dir);
    free(scratch);
}

Test(cache_lease, a_waiter_links_itself_when_its_time_is_up)
{
    char *dir = make_temp_dir(), *scratch = make_temp_dir();
    job j = base_job(scratch);
    outcome first = run_child(&j, NULL);
    if (first.rc == FDL_ENOLIB)
        cr_skip_test("%s", first.warning);
    j.dir = dir;
    pid_t holder = hold_lease(dir, first.key); /* a linker that hangs, holding its lease */
    setenv("FDLINK_CACHE_LEASE_MS", "20", 1);
    outcome o = run_child(&j, NULL);
    unsetenv("FDLINK_CACHE_LEASE_MS");
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
    cr_assert_eq(o.lease_waited, 1, "it found the lease held");
    cr_assert_eq(o.jl_runs, 1, "and linked itself");
    cr_assert_eq(o.cubin_hash, first.cubin_hash);
    /* 0: no lease at all, never a wait */
    cr_assert_eq(fdl_cache_clear(dir, NULL, NULL), FDL_OK);
    holder = hold_lease(dir, first.key);
    setenv("FDLINK_CACHE_LEASE_MS", "0", 1);
    o = run_child(&j, NULL);
    unsetenv("FDLINK_CACHE_LEASE_MS");
    kill(holder, SIGKILL);
    waitpid(holder, NULL, 0);
    cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
    cr_assert_eq(o.lease_waited, 0);
    free(dir);
    free(scratch);
}

/* ---- leases across machines: a Redis remote shared by cache directories of their own ---- */

/* One inline command to the server on @p port; its first reply line into @p reply. */
static void redis_say(int port, const char *command, char *reply, size_t size)
{
    int s = loopback_connect(port);
    cr_assert_geq(s, 0, "no redis-server on port %d", port);
    char line[512];
    int n = snprintf(line, sizeof line, "%s\r\n", command);
    cr_assert_eq(write(s, line, (size_t)n), n);
    size_t got = 0;
    while (got + 1 < size) {
        ssize_t r = read(s, reply + got, 1);
        if (r <= 0 || reply[got] == '\n')
            break;
        got++;
    }
    reply[got] = '\0';
    close(s);
}

/* redis-server on a free loopback port, nothing saved; its pid. */
static pid_t start_redis(const char *scratch, int *port)
{
    if (system("command -v redis-server >/dev/null 2>&1") != 0)
        cr_skip_test("redis-server is not installed (apt-get install redis-server)");
    /* the client fdlink opens (tests/run.sh installs it; a GPU host may lack it) */
    static const char *const names[] = {"libhiredis.so.1.1.0", "libhiredis.so.1.0.0",
                                        "libhiredis.so.0.14", "libhiredis.so.0.13", NULL};
    const char *named = getenv("FDLINK_LIBHIREDIS");
    void *h = named && *named ? dlopen(named, RTLD_NOW | RTLD_LOCAL) : NULL;
    for (size_t i = 0; !h && names[i]; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        cr_skip_test("hiredis is not installed (apt-get install libhiredis0.14)");
    dlclose(h);
    *port = free_port();
    char portbuf[16];
    snprintf(portbuf, sizeof portbuf, "%d", *port);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 1);
        dup2(fd, 2);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves no server behind */
        execlp("redis-server", "redis-server", "--port", portbuf, "--bind", "127.0.0.1", "--save",
               "", "--appendonly", "no", "--dir", scratch, (char *)NULL);
        _exit(127);
    }
    wait_listening(*port, pid);
    return pid;
}

static void stop_redis(pid_t pid)
{
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* @p n processes, half on each of two cache directories (two machines) sharing only the remote */
static size_t link_on_two_machines(const job *j, size_t n, uint64_t *hash, size_t *waited)
{
    char *a = make_temp_dir(), *b = make_temp_dir();
    job jobs[2] = {*j, *j};
    jobs[0].dir = a;
    jobs[1].dir = b;
    pid_t pid[16];
    int fd[16], gate[2];
    cr_assert_leq(n, 16);
    cr_assert_eq(pipe(gate), 0);
    start_gated_jobs(jobs, 2, gate, n, pid, fd);
    close(gate[0]);
    close(gate[1]); /* all start at once */
    size_t runs = 0;
    *waited = 0;
    for (size_t i = 0; i < n; i++) {
        outcome o = reap_outcome(pid[i], fd[i]);
        if (o.rc == FDL_ENOLIB)
            cr_skip_test("%s", o.warning);
        cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
        cr_assert_eq(o.warning[0], '\0', "no warning: the remote stayed in use (%s)", o.warning);
        runs += o.jl_runs;
        *waited += (size_t)o.lease_waited;
        if (!*hash)
            *hash = o.cubin_hash;
        cr_assert_eq(o.cubin_hash, *hash, "every process has the same cubin");
    }
    cr_assert_eq(count_files(a, ".lease") + count_files(b, ".lease"), 0);
    free(a);
    free(b);
    return runs;
}

Test(cache_lease, machines_sharing_a_redis_remote_run_nvjitlink_once)
{
    char *scratch = make_temp_dir();
    int port = 0;
    pid_t redis = start_redis(scratch, &port);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    setenv("FDLINK_CACHE_REMOTE", url, 1);
    job j = base_job(NULL);
    uint64_t hash = 0;
    size_t waited = 0;
    size_t runs = link_on_two_machines(&j, 8, &hash, &waited);
    unsetenv("FDLINK_CACHE_REMOTE");
    cr_assert_eq(runs, 1, "one process of 8 on two machines linked, the others took its entry "
                 "(%zu runs, %zu waited)", runs, waited);
    char reply[128];
    redis_say(port, "KEYS fdlink-lease:*", reply, sizeof reply);
    cr_assert_str_eq(reply, "*0\r", "the lease was given back (%s)", reply);
    redis_say(port, "DBSIZE", reply, sizeof reply);
    cr_assert_str_eq(reply, ":1\r", "one entry on the remote (%s)", reply);
    stop_redis(redis);
    free(scratch);
}

Test(cache_lease, a_killed_holders_redis_lease_expires)
{
    char *scratch = make_temp_dir(), *own = make_temp_dir();
    job j = base_job(own);
    outcome first = run_child(&j, NULL); /* the key, from a cache of its own, no remote */
    if (first.rc == FDL_ENOLIB)
        cr_skip_test("%s", first.warning);
    cr_assert_eq(first.rc, FDL_OK, "%s", first.warning);
    int port = 0;
    pid_t redis = start_redis(scratch, &port);
    /* a holder on a third machine that was killed: its lease stays until its time to live */
    char cmd[160], reply[128];
    snprintf(cmd, sizeof cmd, "SET fdlink-lease:%s killed-holder NX PX 400", first.key);
    redis_say(port, cmd, reply, sizeof reply);
    cr_assert_str_eq(reply, "+OK\r");
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    setenv("FDLINK_CACHE_REMOTE", url, 1);
    uint64_t hash = first.cubin_hash;
    size_t waited = 0;
    size_t runs = link_on_two_machines(&j, 6, &hash, &waited);
    unsetenv("FDLINK_CACHE_REMOTE");
    cr_assert_eq(hash, first.cubin_hash, "the same cubin as a link of its own");
    cr_assert_eq(runs, 1, "after the dead holder's lease expired, one process linked and the "
                 "others took its entry (%zu runs)", runs);
    cr_assert_geq(waited, 1, "they found the lease held");
    stop_redis(redis);
    free(own);
    free(scratch);
}

Test(cache_lease, a_waiter_on_a_redis_lease_links_itself_when_its_time_is_up)
{
    char *scratch = make_temp_dir(), *own = make_temp_dir(), *dir = make_temp_dir();
    job j = base_job(own);
    outcome first = run_child(&j, NULL);
    if (first.rc == FDL_ENOLIB)
        cr_skip_test("%s", first.warning);
    int port = 0;
    pid_t redis = start_redis(scratch, &port);
    char cmd[160], reply[128];
    snprintf(cmd, sizeof cmd, "SET fdlink-lease:%s hung-holder", first.key); /* no expiry */
    redis_say(port, cmd, reply, sizeof reply);
    char url[64];
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    setenv("FDLINK_CACHE_REMOTE", url, 1);
    setenv("FDLINK_CACHE_LEASE_MS", "30", 1);
    j.dir = dir;
    outcome o = run_child(&j, NULL);
    unsetenv("FDLINK_CACHE_LEASE_MS");
    unsetenv("FDLINK_CACHE_REMOTE");
    cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
    cr_assert_eq(o.lease_waited, 1, "it found the lease held");
    cr_assert_eq(o.jl_runs, 1, "and linked itself");
    cr_assert_eq(o.cubin_hash, first.cubin_hash);
    snprintf(cmd, sizeof cmd, "GET fdlink-lease:%s", first.key);
    redis_say(port, cmd, reply, sizeof reply);
    cr_assert_str_eq(reply, "$11\r", "another's lease is never deleted (%s)", reply);
    stop_redis(redis);
    free(dir);
    free(own);
    free(scratch);
}

/* ---- -split-compile-extended, and its fallback (issue 32) ------------------------------- */

/* PTX of @p n empty device functions: input enough for fdlink's parallel default. */
static char *big_ptx(size_t n, size_t *size)
{
    size_t cap = 128 + n * 64;
    char *p = malloc(cap);
    size_t len = (size_t)snprintf(p, cap, ".version 9.0\n.target sm_90\n.address_size 64\n\n");
    for (size_t i = 0; i < n; i++)
        len += (size_t)snprintf(p + len, cap - len, ".visible .func pad_%05zu()\n{\n\tret;\n}\n", i);
    *size = len;
    return p;
}

typedef struct xt_outcome {
    int rc;
    size_t jl_runs, warnings;
    int extended; /* the link's options hold -split-compile-extended (as it ended) */
    char warning[512];
    uint64_t cubin_hash;
} xt_outcome;

static void xt_diag(void *ctx, const fdl_error *d)
{
    xt_outcome *o = ctx;
    if (d->code == FDL_EIO && strstr(d->message, "-split-compile-extended")) {
        o->warnings++;
        snprintf(o->warning, sizeof o->warning, "%s", d->message);
    }
}

/* The caller's and mul's LTO-IR and 80 KB of PTX linked in a child process started now, cache
   in @p dir; xt_reap waits for it. */
static pid_t xt_start(const char *dir, int *fd)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        xt_outcome o;
        memset(&o, 0, sizeof o);
        fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
        opts.arch = "sm_90";
        opts.cache = dir ? FDL_CACHE_ON : FDL_CACHE_OFF;
        opts.cache_dir = dir;
        fdl_link *link = NULL;
        fdl_error err = FDL_ERROR_INIT;
        size_t n = 0;
        char *pad = big_ptx(2000, &n);
        o.rc = fdl_link_create(&link, &opts, &err);
        if (o.rc == FDL_OK) {
            fdl_link_set_diag(link, xt_diag, &o);
            if ((o.rc = fdl_link_add_file(link, FDL_LINK_FIXTURES "/caller.ltoir", FDL_KIND_AUTO,
                                          &err)) == FDL_OK &&
                (o.rc = fdl_link_add_file(link, FDL_LINK_FIXTURES "/mul.ltoir", FDL_KIND_AUTO,
                                          &err)) == FDL_OK &&
                (o.rc = fdl_link_add_data(link, pad, n, "pad.ptx", FDL_KIND_AUTO, &err)) == FDL_OK)
                o.rc = fdl_link_complete(link, &err);
            o.jl_runs = link->nvjl_runs;
            o.extended = fdl__link_extended_auto(link);
            if (o.rc == FDL_OK) {
                size_t cn = 0;
                const unsigned char *c = fdl_link_cubin(link, &cn);
                o.cubin_hash = 1469598103934665603ull;
                for (size_t i = 0; i < cn; i++)
                    o.cubin_hash = (o.cubin_hash ^ c[i]) * 1099511628211ull;
            } else {
                snprintf(o.warning, sizeof o.warning, "%s", err.message);
            }
        }
        fdl_link_destroy(link);
        free(pad);
        ssize_t w = write(fds[1], &o, sizeof o);
        _exit(w == (ssize_t)sizeof o ? 0 : 1);
    }
    close(fds[1]);
    *fd = fds[0];
    return pid;
}

static xt_outcome xt_reap(pid_t pid, int fd)
{
    xt_outcome o;
    memset(&o, 0, sizeof o);
    size_t got = 0;
    while (got < sizeof o) {
        ssize_t r = read(fd, (char *)&o + got, sizeof o - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == sizeof o,
              "the linking child failed");
    return o;
}

static xt_outcome xt_link_child(const char *dir)
{
    int fd;
    pid_t pid = xt_start(dir, &fd);
    return xt_reap(pid, fd);
}

/* Deterministic output (issue 32): fdlink's parallel default for a large link, linked by
   several processes at once (each on every processor: the machine loaded by them) and again,
   cached or not, gives the same bytes every time. */
Test(cache_extended, a_large_link_gives_the_same_cubin_every_time_under_load)
{
    char *dir = make_temp_dir();
    enum { N = 4 };
    pid_t pid[N];
    int fd[N];
    uint64_t hash = 0;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) /* round 1: the first two through the cache */
            pid[i] = xt_start(round == 1 && i < 2 ? dir : NULL, &fd[i]);
        for (int i = 0; i < N; i++) {
            xt_outcome o = xt_reap(pid[i], fd[i]);
            if (o.rc == FDL_ENOLIB)
                cr_skip_test("%s", o.warning);
            cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
            if (round == 0 && i == 0)
                hash = o.cubin_hash;
            cr_assert_eq(o.cubin_hash, hash, "round %d, link %d: another cubin", round, i);
        }
    }
    xt_outcome hit = xt_link_child(dir); /* a hit: the bytes stored */
    cr_assert_eq(hit.jl_runs, 0);
    cr_assert_eq(hit.cubin_hash, hash);
    free(dir);
}

/* PTX of one kernel whose body comes to about @p bytes, after @p externs declarations. */
static char *one_kernel_ptx(size_t bytes, size_t externs, size_t *size)
{
    size_t cap = 256 + externs * 48 + bytes + 64;
    char *p = malloc(cap);
    size_t len = (size_t)snprintf(p, cap, ".version 9.0\n.target sm_90\n.address_size 64\n\n");
    for (size_t i = 0; i < externs; i++)
        len += (size_t)snprintf(p + len, cap - len, ".extern .func ext_%05zu();\n", i);
    len += (size_t)snprintf(p + len, cap - len, ".visible .entry one(.param .u64 out)\n{\n"
                            "\t.reg .b32 %%r<2>;\n");
    while (len + 40 < cap - 64)
        len += (size_t)snprintf(p + len, cap - len, "\tmov.u32 %%r1, 1;  // filler of a body\n");
    len += (size_t)snprintf(p + len, cap - len, "\tret;\n}\n");
    *size = len;
    return p;
}

/* fdlink's split by default, without linking: the threads it would ask for these inputs. */
static int split_for(const char *const *ptx, const size_t *sizes, size_t n, int ltoir)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = FDL_CACHE_OFF;
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(fdl_link_add_data(link, ptx[i], sizes[i], "in.ptx", FDL_KIND_PTX, &err),
                     FDL_OK, "%s", err.message);
    if (ltoir)
        cr_assert_eq(fdl_link_add_file(link, FDL_LINK_FIXTURES "/caller.ltoir", FDL_KIND_AUTO,
                                       &err), FDL_OK, "%s", err.message);
    int t = fdl__link_split_threads(link);
    fdl_link_destroy(link);
    return t;
}

/* Never slower than raw nvJitLink (issue 32): the parallel default only where the inputs hold
   several units to share out; one large kernel links as raw nvJitLink links it. */
Test(cache_extended, a_large_link_splits_only_with_several_units)
{
    size_t n1, n2, n3, n4;
    char *one = one_kernel_ptx(100000, 0, &n1);        /* 100 KB, one kernel */
    char *decl = one_kernel_ptx(100000, 500, &n2);     /* the same after 500 declarations */
    char *many = big_ptx(2000, &n3);                   /* 80 KB, 2000 functions */
    char *small = big_ptx(4, &n4);                     /* 4 functions, 200 bytes */
    cr_assert_geq(n1, FDL_LINK_PARALLEL_BYTES);
    cr_assert_geq(n3, FDL_LINK_PARALLEL_BYTES);
    const char *in[2];
    size_t sz[2];
    in[0] = one, sz[0] = n1;
    cr_assert_eq(split_for(in, sz, 1, 0), 1, "one large kernel: one thread, as raw nvJitLink");
    in[0] = decl, sz[0] = n2;
    cr_assert_eq(split_for(in, sz, 1, 0), 1, "declarations are no units");
    in[0] = many, sz[0] = n3;
    cr_assert_eq(split_for(in, sz, 1, 0), 0, "2000 functions: every processor");
    in[0] = small, sz[0] = n4;
    cr_assert_eq(split_for(in, sz, 1, 0), 1, "small: one thread, however many functions");
    in[0] = one, sz[0] = n1;
    in[1] = small, sz[1] = n4;
    cr_assert_eq(split_for(in, sz, 2, 0), 0, "a large kernel beside other functions: split");
    cr_assert_eq(split_for(in, sz, 1, 1), 0, "a large kernel beside an LTO-IR module: split");
    free(one);
    free(decl);
    free(many);
    free(small);
}

/* Remove the entries (not the memos) of @p dir. */
static void remove_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".fdlc")) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
}

Test(cache_extended, a_linker_killed_by_split_compile_extended_falls_back_once)
{
    char *dir = make_temp_dir();
    /* by default, the deterministic splits */
    unsetenv("FDLINK_SPLIT_COMPILE_EXTENDED");
    xt_outcome off = xt_link_child(NULL);
    if (off.rc == FDL_ENOLIB)
        cr_skip_test("%s", off.warning);
    cr_assert_eq(off.rc, FDL_OK, "%s", off.warning);
    cr_assert_eq(off.extended, 0);
    /* asked for, a large LTO link gets -split-compile-extended, isolated */
    setenv("FDLINK_SPLIT_COMPILE_EXTENDED", "1", 1);
    xt_outcome plain = xt_link_child(NULL);
    if (plain.rc == FDL_ENOLIB)
        cr_skip_test("%s", plain.warning);
    cr_assert_eq(plain.rc, FDL_OK, "%s", plain.warning);
    cr_assert_eq(plain.extended, 1, "fdlink's default for a large LTO link");
    cr_assert_eq(plain.warnings, 0);
    cr_assert_eq(plain.jl_runs, 1);
    /* where it kills nvJitLink: one warning, the link made again with -split-compile */
    setenv("FDL_TEST_EXTENDED_DIES", "1", 1);
    xt_outcome died = xt_link_child(dir);
    cr_assert_eq(died.rc, FDL_OK, "%s", died.warning);
    cr_assert_eq(died.warnings, 1);
    cr_assert_not_null(strstr(died.warning, "nvJitLink died of signal 11"), "%s", died.warning);
    cr_assert_not_null(strstr(died.warning, "remembered in the cache directory"), "%s",
                       died.warning);
    cr_assert_eq(died.jl_runs, 2);
    cr_assert_eq(died.extended, 0);
    /* the next process with that directory does not try it again */
    remove_entries(dir);
    xt_outcome next = xt_link_child(dir);
    cr_assert_eq(next.rc, FDL_OK, "%s", next.warning);
    cr_assert_eq(next.warnings, 0, "remembered: %s", next.warning);
    cr_assert_eq(next.jl_runs, 1);
    cr_assert_eq(next.cubin_hash, died.cubin_hash, "the fallback's cubin either way");
    unsetenv("FDL_TEST_EXTENDED_DIES");
    unsetenv("FDLINK_SPLIT_COMPILE_EXTENDED");
    cr_assert_eq(off.cubin_hash, died.cubin_hash, "the fallback is the default mode");
    free(dir);
}

/* ---- the cheaper LTO-IR check ------------------------------------------------------------ */
#include "linkobj.h"

/* Link two LTO-IR inputs against declarations; the nvJitLink runs in *runs. */
static int link_two_ltoir_in(const char *callee, const char *dir, int emit_ptx, size_t *runs,
                             fdl_error *err)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = dir ? FDL_CACHE_ON : FDL_CACHE_OFF;
    opts.cache_dir = dir;
    opts.emit_ptx = emit_ptx;
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    int rc = fdl_link_create(&link, &opts, err);
    cr_assert_eq(rc, FDL_OK, "%s", err->message);
    cr_assert_eq(fdl_decls_load(&decls, LINK_DATA "/mul.decl", err), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, decls, err), FDL_OK);
    cr_assert_eq(fdl_link_add_file(link, FDL_LINK_FIXTURES "/caller.ltoir", FDL_KIND_AUTO, err),
                 FDL_OK, "%s", err->message);
    cr_assert_eq(fdl_link_add_file(link, callee, FDL_KIND_AUTO, err), FDL_OK, "%s",
                 err->message);
    rc = fdl_link_complete(link, err);
    *runs = link->nvjl_runs;
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    return rc;
}

static int link_two_ltoir(const char *callee, size_t *runs, fdl_error *err)
{
    return link_two_ltoir_in(callee, NULL, 0, runs, err);
}

Test(cache_check, the_post_lto_check_is_cached_apart_from_the_link)
{
    char *dir = make_temp_dir();
    fdl_error err = FDL_ERROR_INIT;
    size_t runs = 0;
    int rc = link_two_ltoir_in(FDL_LINK_FIXTURES "/mul.ltoir", dir, 0, &runs, &err);
    if (rc == FDL_ENOLIB)
        cr_skip_test("%s", err.message);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    cr_assert_eq(runs, 2);
    /* emit_ptx: the link misses (two runs: cubin and PTX), the check (same inputs, options
       and declarations) hits */
    cr_assert_eq(link_two_ltoir_in(FDL_LINK_FIXTURES "/mul.ltoir", dir, 1, &runs, &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(runs, 2, "the link's two runs only: the check came from the cache (%zu)", runs);
    fdl_cache_stats s;
    cr_assert_eq(fdl_cache_stats_get(&s, dir, NULL), FDL_OK);
    /* no keeper compile: the caller's kernel calls the one declared function, so the -O0 view
       holds it without one */
    cr_assert_eq(s.entries, 3, "two links, one check (%zu)", s.entries);
    /* a wrong width is still found, with or without a cached check */
    for (int i = 0; i < 2; i++) {
        rc = link_two_ltoir_in(FDL_LINK_FIXTURES "/mul_wide.ltoir", dir, 0, &runs, &err);
        cr_assert_eq(rc, FDL_EABI, "%s", err.message);
        cr_assert_eq(runs, (size_t)(i == 0), "round %d", i);
    }
    free(dir);
}

Test(cache_check, two_ltoir_inputs_cost_one_extra_link_and_are_still_checked)
{
    fdl_error err = FDL_ERROR_INIT;
    size_t runs = 0;
    int rc = link_two_ltoir(FDL_LINK_FIXTURES "/mul.ltoir", &runs, &err);
    if (rc == FDL_ENOLIB)
        cr_skip_test("%s", err.message);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    cr_assert_eq(runs, 2, "one post-LTO check link for both LTO-IR inputs, then the link (%zu)",
                 runs);
    rc = link_two_ltoir(FDL_LINK_FIXTURES "/mul_wide.ltoir", &runs, &err);
    cr_assert_eq(rc, FDL_EABI, "%s", err.message);
    cr_assert_not_null(strstr(err.message, "mul_f32_f32: parameter 2"), "%s", err.message);
    cr_assert_not_null(strstr(err.source, "[post-LTO ptx]"), "%s", err.source);
    cr_assert_eq(runs, 1, "the check link only");
}

/* One link of the caller and @p callee's LTO-IR with declarations, uncached: its status, the
   cubin (owned), whether the link ran beside the check, and the error. */
static int link_ahead(const char *callee, unsigned char **cubin, size_t *size, size_t *ahead,
                      fdl_error *err)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = FDL_CACHE_OFF;
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    int rc = fdl_link_create(&link, &opts, err);
    cr_assert_eq(rc, FDL_OK, "%s", err->message);
    cr_assert_eq(fdl_decls_load(&decls, LINK_DATA "/mul.decl", err), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, decls, err), FDL_OK);
    cr_assert_eq(fdl_link_add_file(link, FDL_LINK_FIXTURES "/caller.ltoir", FDL_KIND_AUTO, err),
                 FDL_OK, "%s", err->message);
    cr_assert_eq(fdl_link_add_file(link, callee, FDL_KIND_AUTO, err), FDL_OK, "%s",
                 err->message);
    rc = fdl_link_complete(link, err);
    *ahead = link->ahead_runs;
    *cubin = NULL;
    *size = 0;
    if (rc == FDL_OK) {
        const void *c = fdl_link_cubin(link, size);
        *cubin = malloc(*size);
        memcpy(*cubin, c, *size);
    }
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    return rc;
}

Test(cache_check, the_link_runs_beside_the_check_with_the_same_results)
{
    fdl_error err = FDL_ERROR_INIT, err_seq = FDL_ERROR_INIT;
    unsigned char *a = NULL, *b = NULL;
    size_t na = 0, nb = 0, ahead = 0;
    int rc = link_ahead(FDL_LINK_FIXTURES "/mul.ltoir", &a, &na, &ahead, &err);
    if (rc == FDL_ENOLIB)
        cr_skip_test("%s", err.message);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    cr_assert_eq(ahead, 1, "the link ran beside the check");
    setenv("FDLINK_CHECK_AHEAD", "0", 1);
    cr_assert_eq(link_ahead(FDL_LINK_FIXTURES "/mul.ltoir", &b, &nb, &ahead, &err), FDL_OK);
    cr_assert_eq(ahead, 0, "FDLINK_CHECK_AHEAD=0: one after the other");
    cr_assert(na == nb && memcmp(a, b, na) == 0, "the same cubin either way");
    free(a);
    free(b);
    /* a failing check: the same error, and the link run beside it dropped */
    cr_assert_eq(link_ahead(FDL_LINK_FIXTURES "/mul_wide.ltoir", &b, &nb, &ahead, &err_seq),
                 FDL_EABI);
    unsetenv("FDLINK_CHECK_AHEAD");
    cr_assert_eq(link_ahead(FDL_LINK_FIXTURES "/mul_wide.ltoir", &a, &na, &ahead, &err),
                 FDL_EABI);
    cr_assert_eq(ahead, 1);
    cr_assert_null(a);
    cr_assert_str_eq(err.message, err_seq.message);
    cr_assert_str_eq(err.source, err_seq.source);
    cr_assert_eq(err.line, err_seq.line);
}

/* ---- the check's result for unchanged inputs, remembered (issue 32) ----------------------- */
#include "cacheint.h"

typedef struct later_link {
    int rc;
    size_t runs;        /* nvJitLink runs of the link, its check's included */
    fdl_cache_result result;
    char key[33];       /* the link's own key */
    char diags[2048];   /* every diagnostic, one a line: severity, code, file:line:col, text */
    uint64_t cubin_hash;
} later_link;

/* Link the caller's and @p callee's LTO-IR for @p arch against @p decl_text (cache in @p dir,
   NULL: off). */
static later_link later_for(const char *arch, const char *callee, const char *decl_text,
                            const char *dir)
{
    later_link o;
    memset(&o, 0, sizeof o);
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = arch;
    opts.cache = dir ? FDL_CACHE_ON : FDL_CACHE_OFF;
    opts.cache_dir = dir;
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_decls_parse(&decls, decl_text, strlen(decl_text), "later.decl", &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_file(link, FDL_LINK_FIXTURES "/caller.ltoir", FDL_KIND_AUTO, &err),
                 FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_file(link, callee, FDL_KIND_AUTO, &err), FDL_OK, "%s",
                 err.message);
    o.rc = fdl_link_complete(link, &err);
    o.runs = link->nvjl_runs;
    const char *key = "";
    o.result = fdl_link_cache_result(link, &key);
    snprintf(o.key, sizeof o.key, "%s", key ? key : "");
    size_t len = 0;
    for (size_t i = 0; i < fdl_link_diagnostic_count(link) && len < sizeof o.diags; i++) {
        const fdl_diagnostic *d = fdl_link_diagnostic(link, i);
        len += (size_t)snprintf(o.diags + len, sizeof o.diags - len, "%s %s %s:%u:%u %s\n",
                                fdl_severity_name(d->severity), d->code, d->file, d->line,
                                d->column, d->message);
    }
    if (o.rc == FDL_OK) {
        size_t n = 0;
        const unsigned char *c = fdl_link_cubin(link, &n);
        o.cubin_hash = 1469598103934665603ull;
        for (size_t i = 0; i < n; i++)
            o.cubin_hash = (o.cubin_hash ^ c[i]) * 1099511628211ull;
    }
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    return o;
}

static later_link later(const char *callee, const char *decl_text, const char *dir)
{
    return later_for("sm_90", callee, decl_text, dir);
}

/* Drop the link's own entry (memory and @p dir), as an eviction would; the check's stays. */
static void forget_link(const char *dir, const later_link *o)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    cr_assert(fdl__cache_key_from_hex(o->key, key), "a link key: '%s'", o->key);
    fdl__cache_forget(dir, FDL__CACHE_LINK, key);
}

static const char MUL_DECL[] = "mul_f32_f32: float32(float32, float32)\n";

/* Benchmark 4's later links: a link that misses (its entry gone) but whose LTO-IR inputs and
   declarations are unchanged runs nvJitLink once, for the link: the check's post-LTO link
   comes from the cache; its diagnostics are the same as the first time's. */
Test(cache_check, a_later_link_of_unchanged_inputs_does_not_redo_the_check)
{
    char *dir = make_temp_dir();
    later_link first = later(FDL_LINK_FIXTURES "/mul.ltoir", MUL_DECL, dir);
    if (first.rc == FDL_ENOLIB)
        cr_skip_test("no nvJitLink");
    cr_assert_eq(first.rc, FDL_OK);
    cr_assert_eq(first.result, FDL_CACHE_MISS);
    cr_assert_eq(first.runs, 2, "the check's post-LTO link and the link (%zu)", first.runs);
    for (int round = 0; round < 2; round++) {
        forget_link(dir, &first);
        later_link again = later(FDL_LINK_FIXTURES "/mul.ltoir", MUL_DECL, dir);
        cr_assert_eq(again.rc, FDL_OK);
        cr_assert_eq(again.result, FDL_CACHE_MISS, "the link's own entry was dropped");
        cr_assert_eq(again.runs, 1, "round %d: the link only, the check from the cache (%zu)",
                     round, again.runs);
        cr_assert_eq(again.cubin_hash, first.cubin_hash);
        cr_assert_str_eq(again.diags, first.diags);
    }
    /* with the cache off nothing is remembered, memory included (FDL_CACHE_OFF): each link
       runs the check's link again */
    for (int round = 0; round < 2; round++) {
        later_link off = later(FDL_LINK_FIXTURES "/mul.ltoir", MUL_DECL, NULL);
        cr_assert_eq(off.rc, FDL_OK);
        cr_assert_eq(off.result, FDL_CACHE_UNUSED);
        cr_assert_eq(off.runs, 2, "round %d (%zu)", round, off.runs);
        cr_assert_eq(off.cubin_hash, first.cubin_hash);
    }
    /* changed bytes: the check runs again, and finds the wrong width; a second time from the
       cache, with the same diagnostics */
    later_link wide = later(FDL_LINK_FIXTURES "/mul_wide.ltoir", MUL_DECL, dir);
    cr_assert_eq(wide.rc, FDL_EABI);
    cr_assert_eq(wide.runs, 1, "the changed input's check link (%zu)", wide.runs);
    cr_assert_not_null(strstr(wide.diags, "error ABI-"), "%s", wide.diags);
    later_link wide2 = later(FDL_LINK_FIXTURES "/mul_wide.ltoir", MUL_DECL, dir);
    cr_assert_eq(wide2.rc, FDL_EABI);
    cr_assert_eq(wide2.runs, 0, "from the cache (%zu)", wide2.runs);
    cr_assert_str_eq(wide2.diags, wide.diags);
    later_link wide_off = later(FDL_LINK_FIXTURES "/mul_wide.ltoir", MUL_DECL, NULL);
    cr_assert_eq(wide_off.rc, FDL_EABI);
    cr_assert_str_eq(wide_off.diags, wide.diags, "the same diagnostics, cache or not");
    /* another arch: the check's link runs again (its key holds the arch), then is remembered */
    later_link other = later_for("sm_100", FDL_LINK_FIXTURES "/mul.ltoir", MUL_DECL, dir);
    cr_assert_eq(other.rc, FDL_OK);
    cr_assert_eq(other.runs, 2, "sm_100: the check's link and the link (%zu)", other.runs);
    forget_link(dir, &other);
    later_link other2 = later_for("sm_100", FDL_LINK_FIXTURES "/mul.ltoir", MUL_DECL, dir);
    cr_assert_eq(other2.runs, 1, "sm_100 again: the link only (%zu)", other2.runs);
    cr_assert_eq(other2.cubin_hash, other.cubin_hash);
    /* other declarations (the second argument a double): the check's link runs again, and
       finds the disagreement */
    later_link redecl = later(FDL_LINK_FIXTURES "/mul.ltoir",
                              "mul_f32_f32: float32(float32, float64)\n", dir);
    cr_assert_eq(redecl.rc, FDL_EABI, "the declaration disagrees with the definition");
    cr_assert_eq(redecl.runs, 1, "the check's link only (%zu)", redecl.runs);
    cr_assert_not_null(strstr(redecl.diags, "error ABI-"), "%s", redecl.diags);
    fdl_cache_clear(dir, NULL, NULL);
    free(dir);
}

/* The check's key (its post-LTO link's): every input byte, the declarations, the arch and the
   options the check's link sees; not the input names, nor the options only the link sees. */
static void check_key_of(const char *cache, const char *callee, const char *name,
                         const char *decl_text, const char *arch, int ftz, int opt_level,
                         unsigned char key[FDL__CACHE_KEY_SIZE], int *keyed)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = arch;
    opts.cache = FDL_CACHE_ON;
    opts.cache_dir = cache; /* never made: creating a link and asking for a key write nothing */
    opts.ftz = ftz;
    opts.opt_level = opt_level;
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_decls_parse(&decls, decl_text, strlen(decl_text), "k.decl", &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    size_t n = 0;
    char *data = slurp(callee, &n);
    cr_assert_eq(fdl_link_add_data(link, data, n, name, FDL_KIND_AUTO, &err), FDL_OK, "%s",
                 err.message);
    fdl__link_input *ins[1] = {&link->inputs[0]};
    *keyed = fdl__link_check_key(link, ins, 1, NULL, 0, key);
    free(data);
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(cache_check, the_checks_key_holds_what_its_result_depends_on)
{
    unsigned char base[FDL__CACHE_KEY_SIZE], k[FDL__CACHE_KEY_SIZE];
    int keyed = 0;
    const char *mul = FDL_LINK_FIXTURES "/mul.ltoir", *wide = FDL_LINK_FIXTURES "/mul_wide.ltoir";
    char *dir = make_temp_dir(), *c = path_in(dir, "cache");
    check_key_of(c, mul, "mul.ltoir", MUL_DECL, "sm_90", -1, -1, base, &keyed);
    if (!keyed) {
        rmdir(dir);
        cr_skip_test("no nvJitLink (a check without its version is not keyed)");
    }
    check_key_of(c, mul, "other-name.ltoir", MUL_DECL, "sm_90", -1, -1, k, &keyed);
    cr_assert(keyed && memcmp(k, base, sizeof k) == 0, "the same bytes under another name");
    check_key_of(c, mul, "mul.ltoir", MUL_DECL, "sm_90", -1, 3, k, &keyed);
    cr_assert(keyed && memcmp(k, base, sizeof k) == 0, "-O3: the check's link is -O0 anyway");
    check_key_of(c, wide, "mul.ltoir", MUL_DECL, "sm_90", -1, -1, k, &keyed);
    cr_assert(keyed && memcmp(k, base, sizeof k) != 0, "other bytes");
    check_key_of(c, mul, "mul.ltoir", "mul_f32_f32: float32(float32, int32)\n", "sm_90", -1, -1, k,
                 &keyed);
    cr_assert(keyed && memcmp(k, base, sizeof k) != 0, "other declarations");
    check_key_of(c, mul, "mul.ltoir", MUL_DECL, "sm_100", -1, -1, k, &keyed);
    cr_assert(keyed && memcmp(k, base, sizeof k) != 0, "another arch");
    check_key_of(c, mul, "mul.ltoir", MUL_DECL, "sm_90a", -1, -1, k, &keyed);
    cr_assert(keyed && memcmp(k, base, sizeof k) != 0, "sm_90a is not sm_90");
    check_key_of(c, mul, "mul.ltoir", MUL_DECL, "sm_90", 1, -1, k, &keyed);
    cr_assert(keyed && memcmp(k, base, sizeof k) != 0, "-ftz=1: the check's link sees it");
    struct stat st;
    cr_assert(stat(c, &st) != 0 && errno == ENOENT, "asking for keys made the cache directory");
    cr_assert_eq(rmdir(dir), 0);
    free(c);
    free(dir);
}

/*
 * Creating a link and asking for a check's key write nothing, not even the memos of nvJitLink's
 * version and of the options it accepted: those are kept in memory, and go into the directory
 * when the link uses the cache (here its lookup), so that a later process still finds them.
 */
Test(cache_check, asking_for_a_key_writes_nothing)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = FDL_CACHE_ON;
    opts.cache_dir = cache;
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    if (fdl_link_create(&link, &opts, &err) == FDL_ENOLIB) {
        rmdir(dir);
        cr_skip_test("no nvJitLink: %s", err.message);
    }
    cr_assert_not_null(link, "%s", err.message);
    struct stat st;
    cr_assert(stat(cache, &st) != 0 && errno == ENOENT, "creating a link made the cache "
              "directory");
    cr_assert_eq(fdl_decls_parse(&decls, MUL_DECL, strlen(MUL_DECL), "k.decl", &err), FDL_OK,
                 "%s", err.message);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_file(link, FDL_LINK_FIXTURES "/mul.ltoir", FDL_KIND_AUTO, &err),
                 FDL_OK, "%s", err.message);
    unsigned char key[FDL__CACHE_KEY_SIZE];
    fdl__link_input *ins[1] = {&link->inputs[0]};
    cr_assert(fdl__link_check_key(link, ins, 1, NULL, 0, key), "no key");
    cr_assert(stat(cache, &st) != 0 && errno == ENOENT, "asking for a key made the cache "
              "directory");
    /* the link's lookup uses the cache: the memos go in (nvJitLink's version, the options) */
    int hit = 1;
    cr_assert_eq(fdl__link_cache_begin(link, &hit, &err), FDL_OK, "%s", err.message);
    cr_assert_not(hit);
    fdl__link_cache_end(link, FDL_EINVAL); /* nothing linked: the lease given up */
    cr_assert_eq(count_files(cache, ".fdlm"), 2, "the memos were not written at the lookup");
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
    free(cache);
    free(dir);
}

/* The LTO report's note for mul_f32_f32 after linking the caller and @p callee (uncached). */
static void lto_note(const char *caller, const char *callee, char *out, size_t size)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = FDL_CACHE_OFF;
    opts.lto_report = 1;
    fdl_link *link = NULL;
    fdl_decls *decls = NULL;
    fdl_error err = FDL_ERROR_INIT;
    out[0] = '\0';
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_decls_load(&decls, LINK_DATA "/mul.decl", &err), FDL_OK);
    cr_assert_eq(fdl_link_add_decls(link, decls, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_file(link, caller, FDL_KIND_AUTO, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_file(link, callee, FDL_KIND_AUTO, &err), FDL_OK, "%s", err.message);
    int rc = fdl_link_complete(link, &err);
    if (rc == FDL_ENOLIB) {
        snprintf(out, size, "ENOLIB");
    } else {
        cr_assert_eq(rc, FDL_OK, "%s", err.message);
        for (size_t i = 0; i < fdl_link_diagnostic_count(link); i++) {
            const fdl_diagnostic *d = fdl_link_diagnostic(link, i);
            if (strcmp(d->code, "lto-report") == 0) {
                cr_assert_eq(d->severity, FDL_SEVERITY_NOTE);
                cr_assert_eq(d->line, 2, "at the declaration");
                snprintf(out, size, "%s", d->message);
            }
        }
    }
    fdl_link_destroy(link);
    fdl_decls_destroy(decls);
}

Test(lto_report, says_whether_calls_were_inlined_and_why_not)
{
    char note[512];
    lto_note(FDL_LINK_FIXTURES "/caller.ltoir", FDL_LINK_FIXTURES "/mul.ltoir", note,
             sizeof note);
    if (strcmp(note, "ENOLIB") == 0)
        cr_skip_test("no nvJitLink");
    cr_assert_str_eq(note, "mul_f32_f32: every call inlined (LTO left no function of that name "
                           "in the cubin)");
    lto_note(FDL_LINK_FIXTURES "/caller.ltoir", FDL_LINK_FIXTURES "/mul.ptx", note, sizeof note);
    cr_assert(strstr(note, "calls stay calls: defined in ") && strstr(note, "mul.ptx (PTX), which "
              "does not join LTO"), "%s", note);
    lto_note(FDL_LINK_FIXTURES "/caller.ptx", FDL_LINK_FIXTURES "/mul.ptx", note, sizeof note);
    cr_assert(strstr(note, "calls stay calls: the link is not LTO"), "%s", note);
}

/* ---- threads ----------------------------------------------------------------------------- */
#include <pthread.h>

typedef struct thread_job {
    const char *dir;
    int memory_hits;
    int failures;
    unsigned char *first;
    size_t first_size;
} thread_job;

static void *link_repeatedly(void *arg)
{
    thread_job *tj = arg;
    for (int i = 0; i < 4; i++) {
        job j = base_job(tj->dir);
        unsigned char *c = NULL;
        size_t n = 0;
        outcome o = run_job(&j, &c, &n);
        if (o.rc != FDL_OK) {
            tj->failures++;
            continue;
        }
        tj->memory_hits += o.result == FDL_CACHE_HIT_MEMORY;
        if (!tj->first) {
            tj->first = c;
            tj->first_size = n;
        } else {
            tj->failures += n != tj->first_size || memcmp(c, tj->first, n) != 0;
            free(c);
        }
    }
    return NULL;
}

Test(cache_threads, links_in_four_threads_share_the_memory_tier, .timeout = 300)
{
    char *dir = make_temp_dir();
    thread_job tj[4];
    pthread_t th[4];
    memset(tj, 0, sizeof tj);
    for (int i = 0; i < 4; i++) {
        tj[i].dir = dir;
        cr_assert_eq(pthread_create(&th[i], NULL, link_repeatedly, &tj[i]), 0);
    }
    int hits = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(tj[i].failures, 0, "thread %d", i);
        hits += tj[i].memory_hits;
    }
    for (int i = 1; i < 4; i++)
        cr_assert(tj[i].first_size == tj[0].first_size &&
                  memcmp(tj[i].first, tj[0].first, tj[0].first_size) == 0);
    cr_assert_geq(hits, 12, "every thread's later links come from memory (%d)", hits);
    for (int i = 0; i < 4; i++)
        free(tj[i].first);
    free(dir);
}

/* A version-2 options struct (before `cache`) is read only that far: the cache is the default. */
Test(cache_key, version_2_options_take_the_default_cache)
{
    char *dir = make_temp_dir();
    setenv("FDLINK_CACHE_DIR", dir, 1);
    unsetenv("FDLINK_CACHE");
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.version = 2;
    opts.arch = "sm_90";
    opts.cache = (fdl_cache_mode)99; /* beyond a version-2 struct: never read */
    char *never = path_in(dir, "never/read");
    opts.cache_dir = never; /* beyond a version-2 struct: never read (nor made) */
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_add_file(link, LINK_DATA "/caller.ptx", FDL_KIND_AUTO, &err), FDL_OK);
    cr_assert_eq(fdl_link_add_file(link, LINK_DATA "/mul.ptx", FDL_KIND_AUTO, &err), FDL_OK);
    cr_assert_eq(fdl_link_complete(link, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(fdl_link_cache_result(link, NULL), FDL_CACHE_MISS);
    cr_assert_str_eq(fdl_link_cache_warning(link), "");
    cr_assert_eq(count_files(dir, ".fdlc"), 1, "stored in the default directory");
    fdl_link_destroy(link);
    /* version 3 refuses a bad mode */
    opts.version = FDL_LINK_OPTIONS_VERSION;
    cr_assert_eq(fdl_link_create(&link, &opts, &err), FDL_EINVAL);
    cr_assert_null(link);
    struct stat st;
    cr_assert(stat(never, &st) != 0, "the version-2 struct's cache_dir was used");
    free(never);
    free(dir);
}

/* ---- the memo of the libraries' versions (libmemo.h) ------------------------------------- */

Test(cache_memo, a_disk_hit_in_a_fresh_process_loads_no_nvjitlink)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char *c1 = path_in(dir, "1.cubin"), *c2 = path_in(dir, "2.cubin");
    char *c0 = path_in(dir, "0.cubin");
    job j = base_job(cache);
    job off = j;
    off.mode = FDL_CACHE_OFF;
    outcome o = run_child(&off, c0);
    cr_assert_eq(o.rc, FDL_OK, "%s", o.warning);
    cr_assert(o.jl_loaded);
    outcome a = run_child(&j, c1);
    cr_assert_eq(a.rc, FDL_OK, "%s", a.warning);
    cr_assert_eq(a.result, FDL_CACHE_MISS);
    cr_assert(a.jl_loaded, "a miss links, so nvJitLink must be loaded");
    cr_assert_geq(count_files(cache, ".fdlm"), 2, "no memo of the version and the options");
    outcome b = run_child(&j, c2);
    cr_assert_eq(b.rc, FDL_OK, "%s", b.warning);
    cr_assert_eq(b.result, FDL_CACHE_HIT_DISK);
    cr_assert(!b.jl_loaded, "the disk hit loaded nvJitLink");
    cr_assert_str_eq(a.key, b.key);
    cr_assert(files_equal(c0, c1) && files_equal(c0, c2));
    /* memos are no entries: stats and verify see one entry; clear removes memos too */
    fdl_cache_stats st;
    fdl_error err = FDL_ERROR_INIT;
    cr_assert_eq(fdl_cache_stats_get(&st, cache, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(st.entries, 1);
    cr_assert_eq(fdl_cache_clear(cache, NULL, &err), FDL_OK, "%s", err.message);
    cr_assert_eq(count_files(cache, ".fdlm"), 0);
    /* with the memos gone, a hit needs the library again (and writes them again) */
    outcome c = run_child(&j, NULL);
    cr_assert_eq(c.result, FDL_CACHE_MISS);
    outcome d = run_child(&j, NULL);
    cr_assert_eq(d.result, FDL_CACHE_HIT_DISK);
    cr_assert(!d.jl_loaded);
    free(c0);
    free(c1);
    free(c2);
    free(cache);
    free(dir);
}

/* The version of the nvJitLink at FDLINK_NVJITLINK that the memo in @p cache gives a fresh
 * process: 77.minor, or -1 when the memo does not vouch (and then nothing was loaded). */
static int memo_minor(const char *cache)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        unsigned major = 0, minor = 0;
        unsigned char id[FDL__LIBMEMO_ID_SIZE];
        int ok = fdl__libmemo_lookup(fdl__nvjl_spec(), cache, &major, &minor, id);
        if (mapped("fake_nvjitlink") || mapped("libnvJitLink"))
            _exit(100); /* a lookup never loads */
        _exit(!ok ? 99 : major == 77 && minor < 50 ? (int)minor : 101);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) != 100 && WEXITSTATUS(status) != 101,
              "the lookup loaded the library or gave a version it cannot have");
    return WEXITSTATUS(status) == 99 ? -1 : WEXITSTATUS(status);
}

/* Load the nvJitLink at FDLINK_NVJITLINK in a fresh process and memo it: 1 when memoed. */
static int memo_record(const char *cache)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        unsigned char id[FDL__LIBMEMO_ID_SIZE];
        _exit(fdl__nvjl_remember(cache, id) ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status));
    return WEXITSTATUS(status) == 0;
}

static void copy_file(const char *from, const char *to)
{
    size_t n = 0;
    char *b = slurp(from, &n);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.new", to);
    spit(tmp, b, n);
    cr_assert_eq(rename(tmp, to), 0); /* a new file (inode), as an install would make */
    free(b);
}

/* past the memo's "racily clean" second: a file older than that is memoed */
static void age(void)
{
    usleep(1100 * 1000);
}

Test(cache_memo, a_changed_library_is_loaded_not_trusted, .timeout = 120)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char *lib = path_in(dir, "libnvJitLink.so.13"), *other = path_in(dir, "other.so");
    copy_file(FDL_FAKE_NVJITLINK_1, lib);
    cr_assert_eq(setenv("FDLINK_NVJITLINK", lib, 1), 0);
    cr_assert_eq(memo_minor(cache), -1, "no memo yet");
    cr_assert_eq(memo_record(cache), 0, "a library changed a moment before its load is memoed");
    cr_assert_eq(memo_minor(cache), -1);
    age();
    cr_assert_eq(memo_record(cache), 1);
    cr_assert_eq(memo_minor(cache), 1, "the memo of 77.1");

    /* another release installed under the same name: the memo no longer vouches */
    copy_file(FDL_FAKE_NVJITLINK_2, lib);
    cr_assert_eq(memo_minor(cache), -1, "a replaced library was taken for the memoed one");
    age();
    cr_assert_eq(memo_record(cache), 1);
    cr_assert_eq(memo_minor(cache), 2, "the memo of the new library");

    /* the same inode with another mtime (the file rewritten in place) */
    struct timespec times[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, lib, times, 0), 0);
    cr_assert_eq(memo_minor(cache), -1, "a library with another mtime was trusted");

    /* another override path, even to identical bytes: another memo key */
    age();
    cr_assert_eq(memo_record(cache), 1);
    cr_assert_eq(memo_minor(cache), 2);
    copy_file(FDL_FAKE_NVJITLINK_2, other);
    cr_assert_eq(setenv("FDLINK_NVJITLINK", other, 1), 0);
    cr_assert_eq(memo_minor(cache), -1, "the memo of another path vouched");

    /* a library gone: no memo vouches for it */
    cr_assert_eq(setenv("FDLINK_NVJITLINK", lib, 1), 0);
    cr_assert_eq(memo_minor(cache), 2);
    cr_assert_eq(unlink(lib), 0);
    cr_assert_eq(memo_minor(cache), -1, "a removed library was trusted");
    free(other);
    free(lib);
    free(cache);
    free(dir);
}

/* Rewrite every memo of a library's version in @p cache to say @p major.@p minor. */
static size_t forge_versions(const char *cache, unsigned major, unsigned minor)
{
    DIR *d = opendir(cache);
    cr_assert_not_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len != 37 || strcmp(e->d_name + 32, ".fdlm") != 0)
            continue;
        unsigned char key[FDL__CACHE_KEY_SIZE];
        for (int i = 0; i < FDL__CACHE_KEY_SIZE; i++) {
            unsigned v = 0;
            cr_assert_eq(sscanf(e->d_name + 2 * i, "%2x", &v), 1);
            key[i] = (unsigned char)v;
        }
        fdl__cache_sections s;
        cr_assert(fdl__cache_memo_get(cache, key, &s), "a memo fdlink wrote does not read back");
        if (s.n == 3 && s.len[2] == 8) { /* path, file, version */
            unsigned char v[8];
            for (int b = 0; b < 4; b++) {
                v[b] = (unsigned char)(major >> (8 * b));
                v[4 + b] = (unsigned char)(minor >> (8 * b));
            }
            const unsigned char *secs[3] = {s.p[0], s.p[1], v};
            size_t lens[3] = {s.len[0], s.len[1], 8};
            fdl__cache_memo_put(cache, key, secs, lens, 3);
            n++;
        }
        fdl__cache_sections_free(&s);
    }
    closedir(d);
    return n;
}

Test(cache_memo, a_memo_of_another_version_costs_a_load_not_a_wrong_result)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    char *c0 = path_in(dir, "0.cubin"), *c1 = path_in(dir, "1.cubin");
    job j = base_job(cache);
    outcome a = run_child(&j, c0);
    cr_assert_eq(a.rc, FDL_OK, "%s", a.warning);
    cr_assert_eq(a.result, FDL_CACHE_MISS);
    /* the memo now names a linker that is not there (as if the library had changed in a way
     * its identity does not show) */
    cr_assert_eq(forge_versions(cache, 1, 0), 1);
    outcome b = run_child(&j, c1);
    cr_assert_eq(b.rc, FDL_OK, "%s", b.warning);
    cr_assert_eq(b.result, FDL_CACHE_HIT_DISK, "the link under its real version's key");
    cr_assert_str_eq(a.key, b.key, "the key of another version was used");
    cr_assert(b.jl_loaded, "the library must be loaded to learn its real version");
    cr_assert(files_equal(c0, c1));
    cr_assert_eq(count_files(cache, ".fdlc"), 1, "an entry was stored under a wrong key");
    free(c0);
    free(c1);
    free(cache);
    free(dir);
}

Test(cache_memo, options_nvjitlink_refuses_are_refused_at_create_with_a_memo)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache");
    job j = base_job(cache);
    outcome a = run_child(&j, NULL);
    cr_assert_eq(a.rc, FDL_OK, "%s", a.warning);
    outcome b = run_child(&j, NULL);
    cr_assert_eq(b.result, FDL_CACHE_HIT_DISK);
    /* the memo of nvJitLink's version holds now; an option it never accepted still fails in
     * fdl_link_create, from nvJitLink itself */
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
        opts.arch = "sm_90";
        opts.cache = FDL_CACHE_ON;
        opts.cache_dir = cache;
        const char *extra[] = {"-no-such-option-at-all", NULL};
        opts.extra = extra;
        fdl_link *link = NULL;
        fdl_error err = FDL_ERROR_INIT;
        int rc = fdl_link_create(&link, &opts, &err);
        fdl_link_destroy(link);
        _exit(rc == FDL_ELINK && strstr(err.message, "nvJitLink rejected the options") ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "fdl_link_create accepted an option nvJitLink refuses");
    free(cache);
    free(dir);
}

Test(cache_size, sizes_parse_as_the_environment_and_the_cli_take_them)
{
    uint64_t n = 7;
    cr_expect(fdl_cache_parse_size("512M", &n) && n == 512ull << 20);
    cr_expect(fdl_cache_parse_size("8G", &n) && n == 8ull << 30);
    cr_expect(fdl_cache_parse_size("3KiB", &n) && n == 3ull << 10);
    cr_expect(fdl_cache_parse_size("100B", &n) && n == 100);
    cr_expect(fdl_cache_parse_size("1MB", &n) && n == 1ull << 20);
    cr_expect(fdl_cache_parse_size("0", &n) && n == 0);
    n = 7;
    const char *bad[] = {"", "-1", "+1", "M", "12X", "1MX", "99999999999999999999", "1 M",
                         "18446744073709551615G"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect(!fdl_cache_parse_size(bad[i], &n) && n == 7, "'%s' taken", bad[i]);
    cr_expect(!fdl_cache_parse_size(NULL, &n));
}

/* ---- process memos: the option probe and the PTX scans of a repeated link ---------------- */

/* Create a link for sm_90 with @p mode in @p dir; @p extra, if not NULL, one more option. */
static int create_in(fdl_link **out, fdl_cache_mode mode, const char *dir, int lineinfo,
                     const char *extra, fdl_error *err)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    opts.arch = "sm_90";
    opts.cache = mode;
    opts.cache_dir = dir;
    opts.lineinfo = lineinfo;
    const char *extras[] = {extra, NULL};
    opts.extra = extra ? extras : NULL;
    return fdl_link_create(out, &opts, err);
}

/* The probes of one create that must succeed. */
static size_t probes_of_create(fdl_cache_mode mode, const char *dir, int lineinfo)
{
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = create_in(&link, mode, dir, lineinfo, NULL, &err);
    if (rc == FDL_ENOLIB)
        cr_skip_test("%s", err.message);
    cr_assert_eq(rc, FDL_OK, "%s", err.message);
    size_t probes = link->nvjl_probes;
    fdl_link_destroy(link);
    return probes;
}

Test(cache_pmemo, nvjitlink_checks_the_same_options_once_per_process)
{
    char *dir = make_temp_dir();
    /* the probe is nvJitLinkCreate with the options: once for each set, cache on or off */
    cr_assert_eq(probes_of_create(FDL_CACHE_OFF, NULL, 0), 1);
    cr_assert_eq(probes_of_create(FDL_CACHE_OFF, NULL, 0), 0, "the same options again");
    cr_assert_eq(probes_of_create(FDL_CACHE_OFF, NULL, 1), 1, "other options (-lineinfo)");
    cr_assert_eq(probes_of_create(FDL_CACHE_OFF, NULL, 1), 0);
    cr_assert_eq(probes_of_create(FDL_CACHE_ON, dir, 0), 1, "with the cache: the library's "
                 "identity is in the memo's key, so a memo without it does not count");
    cr_assert_eq(probes_of_create(FDL_CACHE_ON, dir, 0), 0);
    /* options nvJitLink refuses are never remembered: refused each time, the same way */
    char first[FDL_ERROR_MESSAGE_MAX] = "";
    for (int round = 0; round < 3; round++) {
        fdl_link *link = NULL;
        fdl_error err = FDL_ERROR_INIT;
        int rc = create_in(&link, round == 2 ? FDL_CACHE_ON : FDL_CACHE_OFF, dir, 0,
                           "-no-such-option-at-all", &err);
        cr_assert_eq(rc, FDL_ELINK, "round %d: %s", round, err.message);
        cr_assert_null(link);
        cr_assert(strstr(err.message, "nvJitLink rejected the options") != NULL, "%s",
                  err.message);
        if (round == 0)
            memcpy(first, err.message, sizeof first);
        cr_assert_str_eq(err.message, first, "round %d", round);
    }
    /* fdl_cache_clear empties the memory tier, the memos with it */
    cr_assert_eq(fdl_cache_clear(dir, NULL, NULL), FDL_OK);
    cr_assert_eq(probes_of_create(FDL_CACHE_OFF, NULL, 0), 1);
    free(dir);
}

/* Link @p n of @p texts (PTX, named @p names) with @p mode in @p dir; what happened in *o. */
typedef struct scan_outcome {
    int rc;
    int add_failed;
    size_t put_off;
    fdl_cache_result result;
    uint64_t cubin_hash;
    char message[FDL_ERROR_MESSAGE_MAX];
} scan_outcome;

static scan_outcome link_ptx(fdl_cache_mode mode, const char *dir, const char *const *texts,
                             const char *const *names, size_t n)
{
    scan_outcome o;
    memset(&o, 0, sizeof o);
    fdl_link *link = NULL;
    fdl_error err = FDL_ERROR_INIT;
    o.rc = create_in(&link, mode, dir, 0, NULL, &err);
    if (o.rc == FDL_ENOLIB)
        cr_skip_test("%s", err.message);
    cr_assert_eq(o.rc, FDL_OK, "%s", err.message);
    for (size_t i = 0; i < n && o.rc == FDL_OK; i++) {
        o.rc = fdl_link_add_data(link, texts[i], strlen(texts[i]), names[i], FDL_KIND_AUTO, &err);
        o.add_failed = o.rc != FDL_OK;
    }
    if (o.rc == FDL_OK)
        o.rc = fdl_link_complete(link, &err);
    if (o.rc != FDL_OK)
        memcpy(o.message, err.message, sizeof o.message);
    o.put_off = link->scans_put_off;
    o.result = fdl_link_cache_result(link, NULL);
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    o.cubin_hash = cubin ? fdl__hash(cubin, size) : 0;
    fdl_link_destroy(link);
    return o;
}

Test(cache_pmemo, ptx_scanned_before_is_scanned_only_when_the_link_needs_it)
{
    char *dir = make_temp_dir();
    size_t n = 0;
    char *caller = slurp(LINK_DATA "/caller.ptx", &n), *mul = slurp(LINK_DATA "/mul.ptx", &n);
    const char *texts[] = {caller, mul, mul};
    const char *names[] = {"caller.ptx", "mul.ptx", "mul_again.ptx"};
    /* a first link scans as it adds; a memory hit of the same bytes scans nothing */
    scan_outcome a = link_ptx(FDL_CACHE_ON, dir, texts, names, 2);
    cr_assert_eq(a.rc, FDL_OK, "%s", a.message);
    cr_assert_eq(a.result, FDL_CACHE_MISS);
    cr_assert_eq(a.put_off, 0);
    scan_outcome b = link_ptx(FDL_CACHE_ON, dir, texts, names, 2);
    cr_assert_eq(b.rc, FDL_OK, "%s", b.message);
    cr_assert_eq(b.result, FDL_CACHE_HIT_MEMORY);
    cr_assert_eq(b.put_off, 2, "both scans waited, and the hit needed neither");
    cr_assert_eq(b.cubin_hash, a.cubin_hash);
    /* a miss with scans put off still finds what the scans show: mul_f32_f32 defined twice,
     * reported as a link without the cache (which scans as it adds) reports it */
    scan_outcome dup_off = link_ptx(FDL_CACHE_OFF, NULL, texts, names, 3);
    scan_outcome dup_on = link_ptx(FDL_CACHE_ON, dir, texts, names, 3);
    cr_assert_eq(dup_off.put_off, 0);
    cr_assert_eq(dup_on.put_off, 3, "all three scans waited for the miss to need them");
    cr_assert_neq(dup_off.rc, FDL_OK, "a definition made twice must fail the link");
    cr_assert_eq(dup_on.rc, dup_off.rc, "%s / %s", dup_on.message, dup_off.message);
    cr_assert(!dup_on.add_failed && !dup_off.add_failed);
    cr_assert_str_eq(dup_on.message, dup_off.message);
    cr_assert(strstr(dup_on.message, "mul_f32_f32") != NULL, "%s", dup_on.message);
    /* PTX for a newer architecture than the link's: its .target, known from the scan, makes
     * it unusable, whether the scan ran as it was added or waited */
    char *newer = strdup(mul);
    cr_assert_not_null(newer);
    char *target = strstr(newer, ".target sm_");
    cr_assert_not_null(target);
    memcpy(target + strlen(".target sm_"), "99", 2); /* sm_90 links; sm_99 code cannot be */
    const char *too_new[] = {caller, newer};
    scan_outcome n1 = link_ptx(FDL_CACHE_ON, dir, too_new, names, 2);
    scan_outcome n2 = link_ptx(FDL_CACHE_ON, dir, too_new, names, 2);
    cr_assert_eq(n1.put_off, 1, "caller.ptx only: the newer mul is new bytes");
    cr_assert_eq(n2.put_off, 2);
    cr_assert(!n1.add_failed && !n2.add_failed);
    cr_assert_eq(n1.rc, FDL_ELINK, "%s", n1.message);
    cr_assert_eq(n2.rc, n1.rc, "%s", n2.message);
    cr_assert_str_eq(n2.message, n1.message);
    free(newer);
    /* PTX that does not scan is refused where it is added, every time (never remembered) */
    char *cut = strdup(mul);
    cr_assert_not_null(cut);
    cut[strlen(cut) / 2] = '\0';
    const char *bad[] = {caller, cut};
    char first[FDL_ERROR_MESSAGE_MAX] = "";
    for (int round = 0; round < 2; round++) {
        scan_outcome c = link_ptx(FDL_CACHE_ON, dir, bad, names, 2);
        cr_assert(c.add_failed, "round %d: %s", round, c.message);
        cr_assert_eq(c.rc, FDL_EPARSE, "round %d: %s", round, c.message);
        if (round == 0)
            memcpy(first, c.message, sizeof first);
        cr_assert_str_eq(c.message, first);
    }
    free(cut);
    free(caller);
    free(mul);
    free(dir);
}

/* ---- the nvJitLink option list: the cache keys hash it, so its order is pinned (issue 33) ---- */

static void expect_list(const fdl__strv *got, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    for (size_t i = 0; i < n && i < got->n; i++)
        cr_expect_str_eq(got->v[i], want[i], "option %zu", i);
    cr_assert_eq(got->n, n, "%zu options, expected %zu", got->n, n);
}

Test(cache_keys, the_nvjitlink_option_list_keeps_its_order)
{
    fdl_link *link = calloc(1, sizeof *link);
    cr_assert_not_null(link);
    link->opts = fdl_link_options_init();
    snprintf(link->arch, sizeof link->arch, "sm_90");
    fdl_link_options *o = &link->opts;
    o->opt_level = 3;
    o->debug = o->lineinfo = o->verbose = 1;
    o->maxrregcount = 64;
    o->ftz = 1;
    o->prec_div = 0;
    o->prec_sqrt = 1;
    o->fma = 0;
    o->optimize_unused_variables = 1;
    o->jump_table_density = 50;
    o->jl_cache = 0;
    o->device_stack_protector = 1;
    o->time = 1;
    o->split_compile = 1;
    cr_assert(fdl__strv_push(&link->kernels_used, "k1", NULL) &&
              fdl__strv_push(&link->kernels_used, "k2", NULL) &&
              fdl__strv_push(&link->variables_used, "v1", NULL) &&
              fdl__strv_push(&link->xptxas, "-warn-spills", NULL) &&
              fdl__strv_push(&link->extra, "-Xfoo", NULL));
    /* the order the hand-written list had before the option table (link/src/core/linkopts.c) */
    static const char *const cubin[] = {
        "-arch=sm_90", "-O3", "-g", "-lineinfo", "-verbose", "-maxrregcount=64", "-ftz=1",
        "-prec-div=0", "-prec-sqrt=1", "-fma=0", "-kernels-used=k1", "-kernels-used=k2",
        "-variables-used=v1", "-optimize-unused-variables", "-jump-table-density=50",
        "-no-cache", "-Xptxas=--device-stack-protector=true", "-Xptxas=-warn-spills", "-time",
        "-Xfoo", "-lto", NULL};
    static const char *const view[] = {
        "-arch=sm_90", "-O0", "-g", "-lineinfo", "-verbose", "-maxrregcount=64", "-ftz=1",
        "-prec-div=0", "-prec-sqrt=1", "-fma=0", "-kernels-used=k1", "-kernels-used=k2",
        "-variables-used=v1", "-optimize-unused-variables", "-jump-table-density=50",
        "-no-cache", "-Xptxas=--device-stack-protector=true", "-Xptxas=-warn-spills", "-Xfoo",
        "-lto", "-ptx", NULL};
    static const char *const plain[] = {"-arch=sm_90", NULL};
    fdl__strv out;
    cr_assert(fdl__link_nvjl_options(link, 1, FDL__NVJL_CUBIN, &out));
    expect_list(&out, cubin);
    fdl__strv_free(&out);
    cr_assert(fdl__link_nvjl_options(link, 1, FDL__NVJL_VIEW, &out));
    expect_list(&out, view);
    fdl__strv_free(&out);
    /* the defaults add nothing (one thread: a small link) */
    fdl__strv_free(&link->kernels_used);
    fdl__strv_free(&link->variables_used);
    fdl__strv_free(&link->xptxas);
    fdl__strv_free(&link->extra);
    link->opts = fdl_link_options_init();
    link->opts.split_compile = 1;
    cr_assert(fdl__link_nvjl_options(link, 0, FDL__NVJL_CUBIN, &out));
    expect_list(&out, plain);
    fdl__strv_free(&out);
    free(link);
}

/* Issue 38: a link entry keeps its kernels' parameter classes (a seventh section); an entry of
 * six, as fdlink wrote them before, is still a hit, whose classes are not known. */
Test(cache_link, parameter_classes_kept_and_older_entries_still_read)
{
    char *dir = make_temp_dir(), *cache = path_in(dir, "cache"), *ref = path_in(dir, "ref.cubin");
    job j = base_job(cache);
    outcome first = run_child(&j, ref);
    cr_assert_eq(first.rc, FDL_OK, "%s", first.warning);
    cr_assert_eq(first.result, FDL_CACHE_MISS);
    cr_assert_eq(first.kparams, 4);
    outcome hit = run_child(&j, NULL);
    cr_assert_eq(hit.result, FDL_CACHE_HIT_DISK);
    cr_assert_eq(hit.kparams, 4, "a hit knows the classes");
    /* the entry as fdlink wrote it before: six sections, written by another process */
    unsigned char key[FDL__CACHE_KEY_SIZE];
    cr_assert(fdl__cache_key_from_hex(first.key, key));
    size_t n = 0;
    char *cubin = slurp(ref, &n);
    unsigned char flags[2] = {0, 0};
    const unsigned char *secs[6] = {(const unsigned char *)cubin, (const unsigned char *)"",
                                    (const unsigned char *)"", (const unsigned char *)"", flags,
                                    (const unsigned char *)""};
    size_t lens[6] = {n, 0, 0, 0, 2, 0};
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        fdl__cache_use u;
        fdl__cache_use_init(&u, FDL_CACHE_ON, cache, "");
        fdl__cache_put(&u, FDL__CACHE_LINK, key, secs, lens, 6);
        fdl__cache_use_free(&u);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    free(cubin);
    outcome old = run_child(&j, NULL);
    cr_assert_eq(old.rc, FDL_OK, "%s", old.warning);
    cr_assert_eq(old.result, FDL_CACHE_HIT_DISK, "an entry of six sections is a hit");
    cr_assert_eq(old.kparams, -1, "whose classes are not known");
    free(ref);
    free(cache);
    free(dir);
}

/* ---- leases whose holder is gone (issue 40) ------------------------------------------------- */

static const unsigned char LEASE_KEY[FDL__CACHE_KEY_SIZE] = {1, 2, 3, 4, 5, 6, 7, 8,
                                                              9, 10, 11, 12, 13, 14, 15, 16};

/* The lease file of LEASE_KEY in @p dir (malloc'ed path). */
static char *lease_path(const char *dir)
{
    char hex[33], name[64];
    fdl__cache_key_hex(LEASE_KEY, hex);
    snprintf(name, sizeof name, "%s.lease", hex);
    return path_in(dir, name);
}

/*
 * A link killed while it holds its key's lease leaves the lease file (0 bytes before, now with
 * its holder's words); the next link of that key takes the lease over at once (no wait) and
 * removes the file when done.
 */
Test(cache_lease, a_dead_holders_lease_is_taken_over_and_removed)
{
    char *dir = make_temp_dir();
    char *file = lease_path(dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        fdl__cache_use u;
        fdl__cache_use_init(&u, FDL_CACHE_ON, dir, "");
        fdl__cache_lease l;
        fdl__cache_sections s;
        fdl_cache_result r = fdl__cache_lease_take(&u, FDL__CACHE_LINK, LEASE_KEY, 5000, &l, &s);
        _exit(r == FDL_CACHE_MISS && l.fd >= 0 ? 0 : 1); /* killed: no release */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child took no lease");
    size_t n = 0;
    char *words = slurp(file, &n);
    char want[64];
    snprintf(want, sizeof want, "fdlink-lease pid=%ld host=", (long)pid);
    cr_assert(n > strlen(want) && strncmp(words, want, strlen(want)) == 0,
              "the lease does not say who held it: '%.*s'", (int)n, words);
    free(words);
    fdl__cache_use u;
    fdl__cache_use_init(&u, FDL_CACHE_ON, dir, "");
    fdl__cache_lease l;
    fdl__cache_sections s;
    fdl_cache_result r = fdl__cache_lease_take(&u, FDL__CACHE_LINK, LEASE_KEY, 5000, &l, &s);
    cr_assert_eq(r, FDL_CACHE_MISS);
    cr_assert_geq(l.fd, 0, "the dead holder's lease was not taken over");
    cr_assert_eq(l.waited, 0, "the next link waited for a dead holder");
    fdl__cache_lease_release(&u, LEASE_KEY, &l);
    cr_assert_eq(access(file, F_OK), -1, "the lease file stayed after the take-over");
    fdl__cache_use_free(&u);
    free(file);
    free(dir);
}

/* What a report of fdl_cache_verify saw: the leases. */
typedef struct lease_reports {
    size_t n;
    char problem[200];
} lease_reports;

static void count_leases(void *ctx, const fdl_cache_entry *e)
{
    lease_reports *r = ctx;
    if (strcmp(e->kind, "lease") == 0) {
        r->n++;
        snprintf(r->problem, sizeof r->problem, "%s", e->problem ? e->problem : "");
    }
}

/*
 * `cache verify`, `prune` and `clear` remove the lease files that no process holds (a killed
 * link's, days old or not) and keep a held one (before: none was ever removed).
 */
Test(cache_lease, verify_prune_and_clear_remove_stale_leases_and_keep_held_ones)
{
    char *dir = make_temp_dir();
    char *stale = path_in(dir, "0123456789abcdef0123456789abcdef.lease");
    char *held = lease_path(dir);
    char *other = path_in(dir, "notes.lease"); /* not a lease's name: never touched */
    int fd = open(held, O_RDWR | O_CREAT, 0644);
    cr_assert_geq(fd, 0);
    /* held by another process: a child that locks it and waits for our word */
    int go[2];
    cr_assert_eq(pipe(go), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        close(go[1]);
        int f = open(held, O_RDWR);
        char c;
        _exit(f >= 0 && flock(f, LOCK_EX) == 0 &&
                      read(go[0], &c, 1) >= 0 ? 0 : 1);
    }
    close(go[0]);
    close(fd);
    /* wait until the child holds it */
    for (int i = 0; i < 5000; i++) {
        int t = open(held, O_RDONLY);
        int busy = flock(t, LOCK_EX | LOCK_NB) != 0;
        close(t);
        if (busy)
            break;
        usleep(1000);
    }
    for (int round = 0; round < 3; round++) {
        FILE *f = fopen(stale, "w");
        cr_assert_not_null(f);
        fclose(f);
        f = fopen(other, "w");
        fclose(f);
        size_t removed = 0;
        lease_reports rep = {0, ""};
        if (round == 0) {
            cr_assert_eq(fdl_cache_verify(dir, count_leases, &rep, &removed, NULL), FDL_OK);
            cr_assert_eq(rep.n, 1, "verify reported %zu leases", rep.n);
            cr_assert(strstr(rep.problem, "no process holds"), "%s", rep.problem);
        } else if (round == 1) {
            cr_assert_eq(fdl_cache_prune(dir, 1u << 30, &removed, NULL), FDL_OK);
        } else {
            cr_assert_eq(fdl_cache_clear(dir, &removed, NULL), FDL_OK);
        }
        cr_assert_eq(removed, 1, "round %d removed %zu files", round, removed);
        cr_assert_eq(access(stale, F_OK), -1, "round %d kept the stale lease", round);
        cr_assert_eq(access(held, F_OK), 0, "round %d removed a held lease", round);
        cr_assert_eq(access(other, F_OK), 0, "round %d removed what is no lease", round);
    }
    close(go[1]);
    int status;
    waitpid(pid, &status, 0);
    free(stale);
    free(held);
    free(other);
    free(dir);
}
