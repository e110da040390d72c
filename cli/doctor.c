/*
 * fdlink doctor: what works on this machine, and why not. The driver, each GPU, the toolkit,
 * the libraries fdlink opens at run time, fdlink's own build and the FDLINK_* variables; the
 * classic traps checked; then a verdict per capability, each tried for real (a small link, a
 * CUDA C compile, a launch on each GPU). Text for people, --json for scripts.
 */
#define _POSIX_C_SOURCE 200809L
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "internal.h"
#include "hostprobe.h"
#include "json.h"

extern char **environ;

/* The command line of `fdlink doctor`. */
typedef struct doctor_args {
    int json;       /* --json */
    int no_gpu;     /* --no-gpu (1, the default), --gpu (0) */
    cli_list archs; /* --arch, repeatable */
} doctor_args;

/* --arch sm_NN */
static int take_arch(void *t, const cli_opt *o, const char *cmd, const char *arg, const char *v)
{
    (void)arg;
    if (!v || strncmp(v, "sm_", 3) != 0)
        return cli_usage_error(cmd, "%s", o->bad);
    if (!cli_list_add(&((doctor_args *)t)->archs, v)) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    return 0;
}

/* --ctest-resource-spec anywhere but first (cmd_doctor hands the command line over then). */
static int take_resource_spec(void *t, const cli_opt *o, const char *cmd, const char *arg,
                              const char *v)
{
    (void)t, (void)arg, (void)v;
    return cli_usage_error(cmd, "%s", o->bad);
}

/* No operands; "-" alone is an option here, an unknown one. */
static int take_operand(void *t, const char *cmd, const char *arg)
{
    (void)t;
    return cli_usage_error(cmd, arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'",
                           arg);
}

#define DA(field) offsetof(doctor_args, field)

static const cli_opt doctor_opts[] = {
    {.arg = CLI_FLAG, .name = "--json", .at = DA(json), .set = 1, .usage = "--json",
     .help = "one JSON object on stdout instead of text"},
    {.arg = CLI_FLAG, .name = "--gpu", .at = DA(no_gpu), .set = 0, .usage = "--gpu",
     .help = "a GPU is expected: skipped GPU verdicts make the exit status 1"},
    {.arg = CLI_FLAG, .name = "--no-gpu", .at = DA(no_gpu), .set = 1, .usage = "--no-gpu",
     .help = "no GPU is expected (the default)"},
    {.arg = CLI_CUSTOM, .name = "--arch", .alias = "-arch", .parse = take_arch,
     .bad = "option --arch needs an architecture (sm_NN)", .usage = "--arch sm_NN",
     .help = "also try a link for this architecture (repeatable)"},
    {.arg = CLI_FLAG, .name = "--ctest-resource-spec", .parse = take_resource_spec,
     .bad = "--ctest-resource-spec must come first", .usage = "--ctest-resource-spec",
     .help = "write the ctest resource spec of the GPUs present instead (as 'fdlink "
             "resource-spec', whose --slots and -o follow it)"},
    {.arg = CLI_DOC, .usage = "-h, --help", .help = "show this help"},
    {.arg = CLI_END},
};

void help_doctor(FILE *out)
{
    fputs("usage: fdlink doctor [--json] [--no-gpu] [--arch sm_NN]...\n"
          "       fdlink doctor --ctest-resource-spec [--slots N] [-o FILE]\n"
          "\n"
          "Show what works on this machine, and why not: run it first when something does not\n"
          "work, and quote it in a bug report. It reports the CUDA driver (path, version), each\n"
          "GPU (index, name, sm_XX, memory, and the one FDLINK_DEVICE selects), the toolkit\n"
          "(nvcc path and version), nvJitLink, NVRTC, libzstd and libcudadevrt (path, version),\n"
          "fdlink's version and build, the link cache (directory, entries, hits, misses) and\n"
          "the FDLINK_* variables in effect. It checks the\n"
          "traps: PTX newer than the driver can JIT, an nvJitLink older or newer than the\n"
          "toolkit, an NVRTC newer than nvJitLink, LTO-IR from another toolkit major. Then\n"
          "one verdict per capability, each tried for real: link for each GPU's sm_XX (and\n"
          "each --arch; sm_90 when there is neither), LTO, CUDA C at run time, load and\n"
          "launch on each GPU.\n"
          "\n"
          "Exit status: 0 when every capability is usable and no trap was found, 1 otherwise,\n"
          "with one line on stderr per reason. Without a driver or a GPU the GPU verdicts are\n"
          "'skipped': a finding, not an error, unless --gpu says that a GPU is expected here.\n"
          "\n"
          "options:\n",
          out);
    cli_opts_help(doctor_opts, 18, out);
}

static const cli_command_line doctor_line = {"doctor", doctor_opts, help_doctor, take_operand};

#define MAX_GPUS 64
#define MAX_ITEMS 96
#define TEXT_MAX 768

typedef enum state { ST_OK, ST_NO, ST_SKIPPED } state;

/* A check of a trap, or a capability's verdict. */
typedef struct item {
    char name[96];
    state st;
    char text[TEXT_MAX];
} item;

typedef struct gpu {
    int ok;
    fdl_device_info info;
    char error[FDL_ERROR_MESSAGE_MAX];
} gpu;

/* The link cache as this process would use it: directory, on or off, what it holds. */
typedef struct cache_probe {
    int enabled;
    int ok;
    char dir[4096];
    fdl_cache_stats stats;
    fdl_error error;
    /* the remote stores (FDLINK_CACHE_REMOTE), shown without credentials, and their counters */
    fdl_cache_remote remotes[16];
    char urls[16][300];
    size_t nremotes;
    char remote_env[4900]; /* "FDLINK_CACHE_REMOTE=" and the shown URLs, for the environment */
    fdl_error remote_error;
} cache_probe;

typedef struct report {
    fdl__lib_probe driver, nvjitlink, nvrtc, zstd, cudadevrt;
    fdl__toolkit_probe toolkit;
    int ngpus, selected;
    char gpu_error[FDL_ERROR_MESSAGE_MAX]; /* why there are none: "" when counted */
    char select_error[FDL_ERROR_MESSAGE_MAX];
    gpu gpus[MAX_GPUS];
    item checks[MAX_ITEMS], verdicts[MAX_ITEMS];
    size_t nchecks, nverdicts;
    cache_probe cache;
} report;

static const char probe_ptx[] = ".version 7.0\n"
                                ".target sm_75\n"
                                ".address_size 64\n"
                                "\n"
                                ".visible .entry fdlink_doctor_probe()\n"
                                "{\n"
                                "\tret;\n"
                                "}\n";

static const char probe_cuda[] =
    "extern \"C\" __global__ void fdlink_doctor_probe(int *p) { if (p) *p = 1; }\n";

static item *add(item *list, size_t *n, state st, const char *name)
{
    if (*n >= MAX_ITEMS)
        return NULL;
    item *it = &list[(*n)++];
    snprintf(it->name, sizeof it->name, "%s", name);
    it->st = st;
    it->text[0] = '\0';
    return it;
}

/* A verdict's text; a long path may cut it short (the result is tested so that the compiler
 * knows the truncation is expected). */
#define SAY(it, ...)                                                                              \
    do {                                                                                          \
        if ((it) && snprintf((it)->text, sizeof (it)->text, __VA_ARGS__) < 0)                     \
            (it)->text[0] = '\0';                                                                 \
    } while (0)

static void version_text(char *buf, size_t size, int major, int minor)
{
    if (major >= 0)
        snprintf(buf, size, "%d.%d", major, minor);
    else
        snprintf(buf, size, "unknown");
}

/* A link of the probe PTX (or, with @cuda, CUDA C; with @lto, as LTO-IR) for @arch. */
static int try_link(const char *arch, int cuda, int lto, fdl_error *err)
{
    fdl_link_options opts = FDL_LINK_OPTIONS_INIT;
    fdl_nvrtc_options copts = FDL_NVRTC_OPTIONS_INIT;
    fdl_link *link = NULL;
    opts.arch = arch;
    opts.backend = FDL_BACKEND_NVJITLINK;
    opts.cache = FDL_CACHE_OFF; /* the linker and NVRTC themselves are tried, not the cache */
    opts.lto = lto ? FDL_LTO_ON : FDL_LTO_OFF;
    copts.output = lto ? FDL_CUDA_OUTPUT_LTOIR : FDL_CUDA_OUTPUT_PTX;
    opts.cuda = &copts;
    int rc = fdl_link_create(&link, &opts, err);
    if (rc == FDL_OK)
        rc = cuda ? fdl_link_add_cuda(link, probe_cuda, sizeof probe_cuda - 1, "probe.cu", NULL,
                                      err)
                  : fdl_link_add_data(link, probe_ptx, sizeof probe_ptx - 1, "probe.ptx",
                                      FDL_KIND_PTX, err);
    if (rc == FDL_OK)
        rc = fdl_link_complete(link, err);
    fdl_link_destroy(link);
    return rc;
}

/* Load the probe PTX on GPU @ordinal and launch it once, waiting for it. */
static int try_launch(int ordinal, fdl_error *err)
{
    fdl_device *dev = NULL;
    fdl_module *mod = NULL;
    fdl_kernel *k = NULL;
    fdl_launch_config cfg = FDL_LAUNCH_CONFIG_INIT;
    cfg.flags = FDL_LAUNCH_SYNC;
    int rc = fdl_device_open(&dev, ordinal, err);
    if (rc == FDL_OK)
        rc = fdl_module_load_data(&mod, dev, probe_ptx, sizeof probe_ptx - 1, "probe.ptx", err);
    if (rc == FDL_OK)
        rc = fdl_module_get_kernel(&k, mod, "fdlink_doctor_probe", err);
    if (rc == FDL_OK)
        rc = fdl_kernel_launch_ex(k, &cfg, NULL, 0, err);
    fdl_device_destroy(dev);
    return rc;
}

static void probe_gpus(report *r)
{
    fdl_error err = FDL_ERROR_INIT;
    r->selected = -1;
    if (r->driver.status != FDL_OK) {
        snprintf(r->gpu_error, sizeof r->gpu_error, "%s", r->driver.error.message);
        return;
    }
    int count = 0;
    if (fdl_device_count(&count, &err) != FDL_OK) {
        snprintf(r->gpu_error, sizeof r->gpu_error, "%s", err.message);
        return;
    }
    if (count == 0)
        snprintf(r->gpu_error, sizeof r->gpu_error, "the driver reports no CUDA device");
    r->ngpus = count < MAX_GPUS ? count : MAX_GPUS;
    for (int i = 0; i < r->ngpus; i++) {
        fdl_device *dev = NULL;
        gpu *g = &r->gpus[i];
        if (fdl_device_open(&dev, i, &err) == FDL_OK &&
            fdl_device_get_info(dev, &g->info, &err) == FDL_OK)
            g->ok = 1;
        else
            snprintf(g->error, sizeof g->error, "%s", err.message);
        fdl_device_destroy(dev);
    }
    fdl_device *sel = NULL;
    if (fdl_device_open(&sel, -1, &err) == FDL_OK)
        r->selected = fdl_device_ordinal(sel);
    else
        snprintf(r->select_error, sizeof r->select_error, "%s", err.message);
    fdl_device_destroy(sel);
}

static int isa_major(int isa)
{
    return isa / 10;
}

static int driver_isa(const report *r)
{
    return fdl__ptx_isa_of_cuda(r->driver.major * 1000 + r->driver.minor * 10);
}

static void check_traps(report *r)
{
    item *it;
    char a[32], b[32];
    int tk = r->toolkit.version;
    int tk_major = tk / 1000, tk_minor = tk % 1000 / 10;
    /* PTX newer than the driver */
    if (r->driver.status != FDL_OK || !tk) {
        it = add(r->checks, &r->nchecks, ST_SKIPPED, "ptx isa");
        SAY(it, "needs %s", r->driver.status != FDL_OK ? "the driver" : "the toolkit's version");
    } else {
        int drv = r->driver.major * 1000 + r->driver.minor * 10;
        int drv_isa = fdl__ptx_isa_of_cuda(drv), nvcc_isa = fdl__ptx_isa_of_cuda(tk);
        if (nvcc_isa > drv_isa) {
            it = add(r->checks, &r->nchecks, ST_NO, "ptx isa");
            SAY(it,
                "nvcc of CUDA %d.%d writes PTX ISA %d.%d, but the driver (CUDA %d.%d) JITs PTX "
                "only up to ISA %d.%d, so PTX built here does not load "
                "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION); fix: update the NVIDIA driver, or load "
                "cubins (nvcc -arch=sm_XX, or fdlink link, which compiles PTX with nvJitLink)",
                tk_major, tk_minor, isa_major(nvcc_isa), nvcc_isa % 10, r->driver.major,
                r->driver.minor, isa_major(drv_isa), drv_isa % 10);
        } else {
            it = add(r->checks, &r->nchecks, ST_OK, "ptx isa");
            SAY(it, "the driver JITs PTX up to ISA %d.%d; nvcc of CUDA %d.%d writes ISA %d.%d",
                isa_major(drv_isa), drv_isa % 10, tk_major, tk_minor, isa_major(nvcc_isa),
                nvcc_isa % 10);
        }
    }
    /* nvJitLink against the toolkit */
    if (r->nvjitlink.status != FDL_OK || r->nvjitlink.major < 0 || !tk) {
        it = add(r->checks, &r->nchecks, ST_SKIPPED, "nvjitlink version");
        SAY(it, "needs %s",
            r->nvjitlink.status != FDL_OK ? "nvJitLink"
            : !tk                         ? "the toolkit's version"
                                          : "nvJitLinkVersion (CUDA 12.3 or later)");
    } else {
        int jl = r->nvjitlink.major * 1000 + r->nvjitlink.minor * 10;
        version_text(a, sizeof a, r->nvjitlink.major, r->nvjitlink.minor);
        snprintf(b, sizeof b, "%d.%d", tk_major, tk_minor);
        if (jl < tk) {
            it = add(r->checks, &r->nchecks, ST_NO, "nvjitlink version");
            SAY(it,
                "nvJitLink %s is older than the toolkit's headers (CUDA %s): it may refuse PTX "
                "and LTO-IR that this nvcc writes; fix: put the toolkit's libnvJitLink first "
                "(FDLINK_NVJITLINK=%s/lib64/libnvJitLink.so.%d)",
                a, b, r->toolkit.root, tk_major);
        } else if (r->nvjitlink.major != tk_major) {
            it = add(r->checks, &r->nchecks, ST_NO, "nvjitlink version");
            SAY(it,
                "nvJitLink %s is of a newer major than the toolkit's headers (CUDA %s); fix: use "
                "the toolkit's (FDLINK_NVJITLINK=%s/lib64/libnvJitLink.so.%d)",
                a, b, r->toolkit.root, tk_major);
        } else {
            it = add(r->checks, &r->nchecks, ST_OK, "nvjitlink version");
            SAY(it, "nvJitLink %s, toolkit CUDA %s", a, b);
        }
    }
    /* LTO-IR from another major */
    if (r->nvjitlink.status != FDL_OK || r->nvjitlink.major < 0 || !tk) {
        it = add(r->checks, &r->nchecks, ST_SKIPPED, "lto-ir major");
        SAY(it, "needs nvJitLink's version and the toolkit's");
    } else if (r->nvjitlink.major != tk_major) {
        it = add(r->checks, &r->nchecks, ST_NO, "lto-ir major");
        SAY(it,
            "LTO-IR that nvcc of CUDA %d writes (nvcc -dlto) cannot be linked by nvJitLink %d: "
            "LTO-IR is read only by the major that wrote it; fix: use one toolkit for both",
            tk_major, r->nvjitlink.major);
    } else {
        it = add(r->checks, &r->nchecks, ST_OK, "lto-ir major");
        SAY(it, "nvcc and nvJitLink are both CUDA %d", tk_major);
    }
    /* NVRTC and nvJitLink of different releases (issue 40): NVRTC's LTO-IR and PTX newer than
     * the linker cannot be linked (an older NVRTC's can) */
    if (r->nvjitlink.status == FDL_OK && r->nvrtc.status == FDL_OK && r->nvjitlink.major >= 0 &&
        r->nvrtc.major >= 0) {
        int jl = r->nvjitlink.major * 1000 + r->nvjitlink.minor * 10;
        int rtc = r->nvrtc.major * 1000 + r->nvrtc.minor * 10;
        version_text(a, sizeof a, r->nvrtc.major, r->nvrtc.minor);
        version_text(b, sizeof b, r->nvjitlink.major, r->nvjitlink.minor);
        if (rtc > jl) {
            it = add(r->checks, &r->nchecks, ST_NO, "nvrtc and nvjitlink");
            SAY(it,
                "NVRTC %s and nvJitLink %s disagree: the LTO-IR and PTX that NVRTC %s writes "
                "cannot be linked by nvJitLink %s; fix: use nvJitLink %s or later "
                "(FDLINK_NVJITLINK, or the cu%d extra), or NVRTC %s (FDLINK_NVRTC)",
                a, b, a, b, a, r->nvrtc.major, b);
        } else if (rtc < jl) {
            it = add(r->checks, &r->nchecks, ST_OK, "nvrtc and nvjitlink");
            SAY(it, "NVRTC %s and nvJitLink %s differ: nvJitLink links the older NVRTC's output",
                a, b);
        } else {
            it = add(r->checks, &r->nchecks, ST_OK, "nvrtc and nvjitlink");
            SAY(it, "both %s", a);
        }
    }
}

static void verdicts(report *r, const cli_list *archs)
{
    fdl_error err = FDL_ERROR_INIT;
    item *it;
    char name[96];
    /* link for each GPU's architecture and each --arch, else sm_90 */
    const char *seen[MAX_GPUS + MAX_ITEMS];
    size_t nseen = 0;
    for (int i = 0; i < r->ngpus; i++)
        if (r->gpus[i].ok)
            seen[nseen++] = r->gpus[i].info.arch;
    for (size_t i = 0; i < archs->n && nseen < sizeof seen / sizeof seen[0]; i++)
        seen[nseen++] = archs->v[i];
    if (nseen == 0)
        seen[nseen++] = "sm_90";
    for (size_t i = 0; i < nseen; i++) {
        int dup = 0;
        for (size_t k = 0; k < i; k++)
            dup |= strcmp(seen[k], seen[i]) == 0;
        if (dup)
            continue;
        snprintf(name, sizeof name, "link for %s", seen[i]);
        if (try_link(seen[i], 0, 0, &err) == FDL_OK) {
            it = add(r->verdicts, &r->nverdicts, ST_OK, name);
            SAY(it, "nvJitLink %d.%d", r->nvjitlink.major, r->nvjitlink.minor);
        } else {
            it = add(r->verdicts, &r->nverdicts, ST_NO, name);
            SAY(it, "%s", err.message);
        }
    }
    /* LTO and CUDA C, both through NVRTC's output */
    const char *arch = seen[0];
    if (r->nvrtc.status != FDL_OK) {
        it = add(r->verdicts, &r->nverdicts, ST_NO, "CUDA C at run time");
        SAY(it, "%s", r->nvrtc.error.message);
        int lto_ok = r->nvjitlink.status == FDL_OK &&
                     (r->nvjitlink.major < 0 || !r->toolkit.version ||
                      r->nvjitlink.major == r->toolkit.version / 1000);
        it = add(r->verdicts, &r->nverdicts, lto_ok ? ST_OK : ST_NO, "LTO");
        if (lto_ok)
            SAY(it, "by the versions only: no NVRTC to make LTO-IR and try");
        else
            SAY(it, "%s", r->nvjitlink.status != FDL_OK
                              ? r->nvjitlink.error.message
                              : "nvJitLink and the toolkit are of different majors");
    } else {
        if (try_link(arch, 1, 0, &err) == FDL_OK) {
            it = add(r->verdicts, &r->nverdicts, ST_OK, "CUDA C at run time");
            SAY(it, "NVRTC %d.%d compiled and linked for %s", r->nvrtc.major, r->nvrtc.minor,
                arch);
        } else {
            it = add(r->verdicts, &r->nverdicts, ST_NO, "CUDA C at run time");
            SAY(it, "%s", err.message);
        }
        if (try_link(arch, 1, 1, &err) == FDL_OK) {
            it = add(r->verdicts, &r->nverdicts, ST_OK, "LTO");
            SAY(it, "LTO-IR from NVRTC linked by nvJitLink for %s", arch);
        } else {
            it = add(r->verdicts, &r->nverdicts, ST_NO, "LTO");
            SAY(it, "%s", err.message);
        }
    }
    /* load and launch on each GPU */
    if (r->ngpus == 0) {
        it = add(r->verdicts, &r->nverdicts, ST_SKIPPED, "load and launch");
        SAY(it, "no GPU: %s", r->gpu_error);
    }
    for (int i = 0; i < r->ngpus; i++) {
        snprintf(name, sizeof name, "load and launch on GPU %d", i);
        if (try_launch(i, &err) == FDL_OK) {
            it = add(r->verdicts, &r->nverdicts, ST_OK, name);
            SAY(it, "%s (%s)", r->gpus[i].info.name, r->gpus[i].info.arch);
        } else {
            it = add(r->verdicts, &r->nverdicts, ST_NO, name);
            SAY(it, "%s", err.message);
        }
    }
    if (r->select_error[0]) {
        it = add(r->verdicts, &r->nverdicts, ST_NO, "FDLINK_DEVICE");
        SAY(it, "%s", r->select_error);
    }
}

/* ---- output ---------------------------------------------------------------------------------- */

static const char *state_word(state s, int check)
{
    return s == ST_OK ? "ok" : s == ST_SKIPPED ? "skipped" : check ? "problem" : "no";
}

/* "key": "value", or null when the value is empty. */
static void json_field(fdl__json *j, const char *key, const char *value)
{
    fdl__json_member_string(j, key, value && value[0] ? value : NULL);
}

static void json_lib(fdl__json *j, const char *key, const fdl__lib_probe *p)
{
    char v[32];
    version_text(v, sizeof v, p->major, p->minor);
    fdl__json_key(j, key);
    fdl__json_object_begin(j);
    fdl__json_member_bool(j, "usable", p->status == FDL_OK);
    json_field(j, "path", p->path);
    json_field(j, "version", p->major >= 0 ? v : NULL);
    json_field(j, "error", p->status == FDL_OK ? NULL : p->error.message);
    fdl__json_object_end(j);
}

static void json_items(fdl__json *j, const char *key, const char *name_key, const item *items,
                       size_t n, int check)
{
    fdl__json_key(j, key);
    fdl__json_array_begin(j);
    for (size_t i = 0; i < n; i++) {
        fdl__json_object_begin(j);
        json_field(j, name_key, items[i].name);
        json_field(j, "state", state_word(items[i].st, check));
        json_field(j, "reason", items[i].text);
        fdl__json_object_end(j);
    }
    fdl__json_array_end(j);
}

static const char *build_type(void)
{
#ifdef NDEBUG
    return "release";
#else
    return "debug (assertions on)";
#endif
}

static const char *compiler(void)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__VERSION__)
    return "gcc " __VERSION__;
#elif defined(__VERSION__)
    return __VERSION__; /* clang's says "Clang ..." */
#else
    return "unknown";
#endif
}

static void add_remote(void *ctx, const fdl_cache_remote *r)
{
    cache_probe *c = ctx;
    if (c->nremotes == sizeof c->remotes / sizeof c->remotes[0])
        return;
    snprintf(c->urls[c->nremotes], sizeof c->urls[0], "%s", r->url);
    c->remotes[c->nremotes] = *r;
    c->remotes[c->nremotes].url = c->urls[c->nremotes];
    size_t at = strlen(c->remote_env);
    snprintf(c->remote_env + at, sizeof c->remote_env - at, "%s%s%s", c->nremotes ? " " : "",
             r->url, r->read_only ? "|read-only" : "");
    c->nremotes++;
}

/* The link cache as this process would use it. */
static void probe_cache(cache_probe *c)
{
    c->remote_error = (fdl_error)FDL_ERROR_INIT;
    snprintf(c->remote_env, sizeof c->remote_env, "FDLINK_CACHE_REMOTE=");
    if (fdl_cache_dir(c->dir, sizeof c->dir, NULL) == FDL_OK)
        fdl_cache_remotes(c->dir, NULL, add_remote, c, &c->remote_error);
    c->enabled = fdl_cache_enabled();
    c->error = (fdl_error)FDL_ERROR_INIT;
    c->ok = fdl_cache_dir(c->dir, sizeof c->dir, &c->error) == FDL_OK &&
            fdl_cache_stats_get(&c->stats, c->dir, &c->error) == FDL_OK;
}

/* The report as one JSON object (json.h: every string valid JSON, whatever bytes it holds). */
static int print_json(const report *r, char **env, size_t nenv, int usable)
{
    char v[32];
    int bv = fdl__build_cuda_version();
    fdl__buf out = {0};
    fdl__json j;
    fdl__json_init(&j, &out, 2);
    fdl__json_object_begin(&j);
    fdl__json_key(&j, "fdlink");
    fdl__json_object_begin(&j);
    json_field(&j, "version", fdl_version());
    snprintf(v, sizeof v, "%d.%d", bv / 1000, bv % 1000 / 10);
    json_field(&j, "cuda_headers", v);
    json_field(&j, "toolkit_root", fdl__build_cuda_root());
    json_field(&j, "build", build_type());
    json_field(&j, "compiler", compiler());
    fdl__json_object_end(&j);
    fdl__json_key(&j, "driver");
    fdl__json_object_begin(&j);
    fdl__json_member_bool(&j, "usable", r->driver.status == FDL_OK);
    json_field(&j, "path", r->driver.path);
    version_text(v, sizeof v, r->driver.major, r->driver.minor);
    json_field(&j, "version", r->driver.major >= 0 ? v : NULL);
    json_field(&j, "error", r->driver.status == FDL_OK ? NULL : r->driver.error.message);
    fdl__json_object_end(&j);
    fdl__json_key(&j, "gpus");
    fdl__json_array_begin(&j);
    for (int i = 0; i < r->ngpus; i++) {
        const gpu *g = &r->gpus[i];
        fdl__json_object_begin(&j);
        fdl__json_member_int(&j, "index", i);
        if (g->ok) {
            json_field(&j, "name", g->info.name);
            json_field(&j, "arch", g->info.arch);
            fdl__json_member_uint(&j, "memory_bytes", g->info.total_memory);
            fdl__json_member_int(&j, "sm_count", g->info.sm_count);
        } else {
            json_field(&j, "error", g->error);
        }
        fdl__json_member_bool(&j, "selected", i == r->selected);
        fdl__json_object_end(&j);
    }
    fdl__json_array_end(&j);
    fdl__json_key(&j, "toolkit");
    fdl__json_object_begin(&j);
    json_field(&j, "root", r->toolkit.root);
    snprintf(v, sizeof v, "%d.%d", r->toolkit.version / 1000, r->toolkit.version % 1000 / 10);
    json_field(&j, "version", r->toolkit.version ? v : NULL);
    json_field(&j, "nvcc", r->toolkit.nvcc);
    fdl__json_key(&j, "include_dirs"); /* NVRTC's search order after the user's -I */
    fdl__json_array_begin(&j);
    for (size_t i = 0; i < r->toolkit.ninclude; i++)
        fdl__json_string(&j, r->toolkit.include[i]);
    fdl__json_array_end(&j);
    json_field(&j, "include_from", r->toolkit.include_from);
    fdl__json_object_end(&j);
    fdl__json_key(&j, "libraries");
    fdl__json_object_begin(&j);
    json_lib(&j, "nvjitlink", &r->nvjitlink);
    json_lib(&j, "nvrtc", &r->nvrtc);
    json_lib(&j, "libzstd", &r->zstd);
    json_lib(&j, "cudadevrt", &r->cudadevrt);
    fdl__json_object_end(&j);
    fdl__json_key(&j, "cache");
    fdl__json_object_begin(&j);
    fdl__json_member_bool(&j, "enabled", r->cache.enabled);
    json_field(&j, "dir", r->cache.dir[0] ? r->cache.dir : NULL);
    if (r->cache.ok) {
        fdl__json_member_uint(&j, "entries", r->cache.stats.entries);
        fdl__json_member_uint(&j, "bytes", r->cache.stats.bytes);
        fdl__json_member_uint(&j, "max_size", r->cache.stats.max_size);
        fdl__json_member_uint(&j, "hits", r->cache.stats.hits);
        fdl__json_member_uint(&j, "misses", r->cache.stats.misses);
        fdl__json_member_uint(&j, "corrupt", r->cache.stats.corrupt);
    }
    fdl__json_key(&j, "remotes");
    fdl__json_array_begin(&j);
    for (size_t i = 0; i < r->cache.nremotes; i++) {
        const fdl_cache_remote *m = &r->cache.remotes[i];
        fdl__json_object_begin(&j);
        json_field(&j, "url", m->url);
        fdl__json_member_bool(&j, "read_only", m->read_only);
        fdl__json_member_uint(&j, "hits", m->hits);
        fdl__json_member_uint(&j, "misses", m->misses);
        fdl__json_member_uint(&j, "errors", m->errors);
        fdl__json_member_uint(&j, "corrupt", m->corrupt);
        fdl__json_member_uint(&j, "unsigned_or_forged", m->unsigned_forged);
        fdl__json_object_end(&j);
    }
    fdl__json_array_end(&j);
    json_field(&j, "error", r->cache.ok ? NULL : r->cache.error.message);
    fdl__json_object_end(&j);
    fdl__json_key(&j, "environment");
    fdl__json_object_begin(&j);
    for (size_t i = 0; i < nenv; i++) {
        const char *eq = strchr(env[i], '=');
        char *name = fdl__strndup(env[i], (size_t)(eq - env[i]));
        if (!name) {
            out.oom = 1;
            break;
        }
        fdl__json_member_string(&j, name, eq + 1);
        free(name);
    }
    fdl__json_object_end(&j);
    json_items(&j, "checks", "name", r->checks, r->nchecks, 1);
    json_items(&j, "verdicts", "capability", r->verdicts, r->nverdicts, 0);
    fdl__json_member_bool(&j, "usable", usable);
    fdl__json_object_end(&j);
    int ok = fdl__json_finish(&j) && fwrite(out.data, 1, out.len, stdout) == out.len;
    fdl__buf_free(&out);
    return ok;
}

static void text_lib(const char *name, const fdl__lib_probe *p)
{
    char v[32];
    version_text(v, sizeof v, p->major, p->minor);
    if (p->status == FDL_OK)
        printf("%-12s %s, %s\n", name, p->path[0] ? p->path : "(path unknown)",
               p->major >= 0 ? v : "version unknown");
    else
        printf("%-12s not usable: %s\n", name, p->error.message);
}

static void print_text(const report *r, char **env, size_t nenv)
{
    int bv = fdl__build_cuda_version();
    printf("%-12s %s (%s; CUDA %d.%d headers; toolkit %s; compiler %s)\n", "fdlink",
           fdl_version(), build_type(), bv / 1000, bv % 1000 / 10, fdl__build_cuda_root(),
           compiler());
    if (r->driver.status == FDL_OK)
        printf("%-12s %s, CUDA %d.%d (JITs PTX up to ISA %d.%d)\n", "driver", r->driver.path,
               r->driver.major, r->driver.minor, isa_major(driver_isa(r)), driver_isa(r) % 10);
    else
        printf("%-12s %s%snot usable: %s\n", "driver", r->driver.path,
               r->driver.path[0] ? ": " : "", r->driver.error.message);
    if (r->ngpus == 0)
        printf("%-12s none: %s\n", "gpu", r->gpu_error);
    for (int i = 0; i < r->ngpus; i++) {
        const gpu *g = &r->gpus[i];
        char label[16];
        snprintf(label, sizeof label, "gpu %d", i);
        if (g->ok)
            printf("%-12s %s, %s, %.1f GiB, %d SMs%s\n", label, g->info.name, g->info.arch,
                   (double)g->info.total_memory / (1024.0 * 1024.0 * 1024.0), g->info.sm_count,
                   i == r->selected ? " (selected)" : "");
        else
            printf("%-12s not usable: %s\n", label, g->error);
    }
    if (r->toolkit.root[0])
        printf("%-12s %s, CUDA %d.%d, nvcc %s (writes PTX ISA %d.%d)\n", "toolkit",
               r->toolkit.root, r->toolkit.version / 1000, r->toolkit.version % 1000 / 10,
               r->toolkit.nvcc[0] ? r->toolkit.nvcc : "not found",
               isa_major(fdl__ptx_isa_of_cuda(r->toolkit.version)),
               fdl__ptx_isa_of_cuda(r->toolkit.version) % 10);
    else
        printf("%-12s not found (FDLINK_CUDA_ROOT, CUDA_PATH, %s, /usr/local/cuda)\n",
               "toolkit", fdl__build_cuda_root());
    /* what NVRTC searches after the user's -I: nvcc's order for this toolkit */
    for (size_t i = 0; i < r->toolkit.ninclude; i++)
        printf("%-12s %zu. %s%s%s%s\n", i ? "" : "includes", i + 1, r->toolkit.include[i],
               i ? "" : " (", i ? "" : r->toolkit.include_from[0] ? r->toolkit.include_from
                                                                   : "no nvcc.profile",
               i ? "" : ": after the user's -I, as nvcc)");
    text_lib("nvjitlink", &r->nvjitlink);
    text_lib("nvrtc", &r->nvrtc);
    text_lib("libzstd", &r->zstd);
    text_lib("cudadevrt", &r->cudadevrt);
    if (r->cache.ok)
        printf("%-12s %s, %s: %zu entries, %.1f of %.1f MiB, %llu hits, %llu misses, "
               "%llu corrupt found\n",
               "cache", r->cache.dir, r->cache.enabled ? "on" : "off (FDLINK_CACHE=0)",
               r->cache.stats.entries, (double)r->cache.stats.bytes / (1024.0 * 1024.0),
               (double)r->cache.stats.max_size / (1024.0 * 1024.0),
               (unsigned long long)r->cache.stats.hits,
               (unsigned long long)r->cache.stats.misses,
               (unsigned long long)r->cache.stats.corrupt);
    else
        printf("%-12s %s%s%s, %s\n", "cache", r->cache.dir, r->cache.dir[0] ? ": " : "",
               r->cache.error.message,
               r->cache.enabled ? "links proceed without it" : "off (FDLINK_CACHE=0)");
    for (size_t i = 0; i < r->cache.nremotes; i++) {
        const fdl_cache_remote *m = &r->cache.remotes[i];
        printf("%-12s %s%s: %llu hits, %llu misses, %llu errors, %llu corrupt, %llu unsigned or "
               "forged\n", "remote", m->url, m->read_only ? " (read-only)" : "",
               (unsigned long long)m->hits, (unsigned long long)m->misses,
               (unsigned long long)m->errors, (unsigned long long)m->corrupt,
               (unsigned long long)m->unsigned_forged);
    }
    if (r->cache.remote_error.message[0])
        printf("%-12s %s\n", "remote", r->cache.remote_error.message);
    if (nenv == 0)
        printf("%-12s no FDLINK_* variables\n", "environment");
    for (size_t i = 0; i < nenv; i++)
        printf("%-12s %s\n", i ? "" : "environment", env[i]);
    printf("\nchecks:\n");
    for (size_t i = 0; i < r->nchecks; i++)
        printf("  %-8s %s: %s\n", state_word(r->checks[i].st, 1), r->checks[i].name,
               r->checks[i].text);
    printf("\nverdicts:\n");
    for (size_t i = 0; i < r->nverdicts; i++)
        printf("  %-8s %s: %s\n", state_word(r->verdicts[i].st, 0), r->verdicts[i].name,
               r->verdicts[i].text);
}

/* Whether @p entry ("NAME=value") is the variable that fdlink set itself, not the user. */
static int paired(const char *entry)
{
    size_t n = cli_paired_variable ? strlen(cli_paired_variable) : 0;
    return n && strncmp(entry, cli_paired_variable, n) == 0 && entry[n] == '=';
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cmd_doctor(int argc, char **argv)
{
    /* each library tried in a child before it is loaded here: one that exits, crashes or hangs
     * while loading is a line of the report, not the end of it (FDLINK_PROBE_LIBS=0: not) */
    int user_probe = getenv("FDLINK_PROBE_LIBS") != NULL; /* listed only when the user set it */
    setenv("FDLINK_PROBE_LIBS", "1", 0);
    doctor_args a = {0, 1, {NULL, 0}};
    int rc = 1;
    char **env = NULL;
    size_t nenv = 0;
    report *r = calloc(1, sizeof *r);
    if (!r) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        return 1;
    }
    /* `fdlink doctor --ctest-resource-spec ARGS` is `fdlink resource-spec ARGS` */
    if (argc > 1 && strcmp(argv[1], "--ctest-resource-spec") == 0) {
        rc = cmd_resource_spec(argc - 1, argv + 1);
        goto cleanup;
    }
    if (cli_command_parse(&doctor_line, &a, argc, argv, &rc))
        goto cleanup;

    /* the FDLINK_* variables in effect, sorted */
    for (char **e = environ; e && *e; e++)
        nenv += strncmp(*e, "FDLINK_", 7) == 0 &&
                (user_probe || strncmp(*e, "FDLINK_PROBE_LIBS=", 18) != 0) && !paired(*e);
    env = calloc(nenv + 1, sizeof *env);
    if (!env) {
        fprintf(stderr, "fdlink: error: out of memory\n");
        goto cleanup;
    }
    nenv = 0;
    for (char **e = environ; e && *e; e++)
        if (strncmp(*e, "FDLINK_", 7) == 0 &&
            (user_probe || strncmp(*e, "FDLINK_PROBE_LIBS=", 18) != 0) && !paired(*e))
            env[nenv++] = *e;
    qsort(env, nenv, sizeof *env, cmp_str);
    probe_cache(&r->cache);
    /* never a password: the remotes' URLs as fdl_cache_remotes shows them */
    for (size_t i = 0; i < nenv; i++)
        if (strncmp(env[i], "FDLINK_CACHE_REMOTE=", 20) == 0)
            env[i] = r->cache.remote_env;

    fdl__probe_driver(&r->driver);
    probe_gpus(r);
    fdl__probe_toolkit(&r->toolkit);
    fdl__probe_nvjl(&r->nvjitlink);
    fdl__probe_nvrtc(&r->nvrtc);
    fdl__probe_zstd(&r->zstd);
    fdl__probe_cudadevrt(&r->cudadevrt, &r->toolkit);
    check_traps(r);
    verdicts(r, &a.archs);

    /* usable: no problem found, no capability missing, nothing skipped that was expected */
    int usable = 1;
    for (size_t i = 0; i < r->nchecks; i++)
        if (r->checks[i].st == ST_NO)
            usable = 0;
    for (size_t i = 0; i < r->nverdicts; i++)
        if (r->verdicts[i].st == ST_NO || (r->verdicts[i].st == ST_SKIPPED && !a.no_gpu))
            usable = 0;
    if (a.json && !print_json(r, env, nenv, usable)) {
        fputs("fdlink: error: cannot write the report as JSON (out of memory?)\n", stderr);
        usable = 0;
    } else if (!a.json)
        print_text(r, env, nenv);
    fflush(stdout);
    for (size_t i = 0; i < r->nchecks; i++)
        if (r->checks[i].st == ST_NO)
            fprintf(stderr, "fdlink: error: %s: %s\n", r->checks[i].name, r->checks[i].text);
    for (size_t i = 0; i < r->nverdicts; i++)
        if (r->verdicts[i].st == ST_NO ||
            (r->verdicts[i].st == ST_SKIPPED && !a.no_gpu))
            fprintf(stderr, "fdlink: error: %s: %s%s\n", r->verdicts[i].name,
                    r->verdicts[i].st == ST_SKIPPED ? "skipped: " : "", r->verdicts[i].text);
    rc = usable ? 0 : 1;
cleanup:
    free(a.archs.v);
    free(env);
    free(r);
    return rc;
}
