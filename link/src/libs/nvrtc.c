/*
 * NVRTC, opened with dlopen the first time a CUDA C input is compiled, and the places of the
 * CUDA toolkit (for its headers and libcudadevrt.a).
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Only the types: the functions are looked up with dlsym. */
#include <nvrtc.h>

#include "diag.h"
#include "internal.h"
#include "libmemo.h"
#include "libs.h"
#include "probe.h"

#ifndef FDLINK_CUDA_ROOT
#  define FDLINK_CUDA_ROOT "/usr/local/cuda"
#endif

/* ---- the toolkit ---------------------------------------------------------------------------- */

size_t fdl__cuda_roots(const char **roots, size_t max)
{
    const char *candidates[] = {getenv("FDLINK_CUDA_ROOT"), getenv("CUDA_PATH"),
                                FDLINK_CUDA_ROOT, "/usr/local/cuda"};
    size_t n = 0;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && n < max; i++) {
        const char *c = candidates[i];
        if (!c || !c[0])
            continue;
        int seen = 0;
        for (size_t k = 0; k < n; k++)
            seen |= strcmp(roots[k], c) == 0;
        if (!seen)
            roots[n++] = c;
    }
    return n;
}

int fdl__cuda_find(char *out, size_t size, const char *rel)
{
    const char *roots[4];
    size_t n = fdl__cuda_roots(roots, 4);
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(out, size, "%s/%s", roots[i], rel);
        struct stat st;
        if (len > 0 && (size_t)len < size && stat(out, &st) == 0 && S_ISREG(st.st_mode))
            return 1;
    }
    if (size)
        out[0] = '\0';
    return 0;
}

/* ---- the include directories nvcc uses ------------------------------------------------------ */

/* The toolkit's folder for this host (nvcc's _TARGET_DIR_), under the root. */
#if defined(__x86_64__)
#  define TARGET_DIR "targets/x86_64-linux"
#elif defined(__aarch64__)
#  define TARGET_DIR "targets/sbsa-linux"
#elif defined(__powerpc64__)
#  define TARGET_DIR "targets/ppc64le-linux"
#else
#  define TARGET_DIR ""
#endif

#define PROFILE_MAX (1u << 20) /* nvcc.profile is under 1 KiB; anything this large is not one */
#define PROFILE_VARS 64
#define EXPAND_DEPTH 8

/* The profile's variables: NAME = VALUE, NAME += VALUE (appended), NAME =+ VALUE (prepended). */
typedef struct profile {
    const char *name[PROFILE_VARS];
    size_t name_len[PROFILE_VARS];
    fdl__buf value[PROFILE_VARS];
    size_t n;
    int bad;
} profile;

static fdl__buf *profile_var(profile *p, const char *name, size_t len, int create)
{
    for (size_t i = 0; i < p->n; i++)
        if (p->name_len[i] == len && memcmp(p->name[i], name, len) == 0)
            return &p->value[i];
    if (!create || p->n == PROFILE_VARS) {
        p->bad |= create;
        return NULL;
    }
    p->name[p->n] = name;
    p->name_len[p->n] = len;
    memset(&p->value[p->n], 0, sizeof p->value[p->n]);
    return &p->value[p->n++];
}

/* s[0..n) with every $(NAME) replaced, appended to @out; unknown names expand to nothing. */
static void expand(profile *p, fdl__buf *out, const char *s, size_t n, int depth)
{
    for (size_t i = 0; i < n; i++) {
        const char *close;
        if (s[i] == '$' && i + 1 < n && s[i + 1] == '(' &&
            (close = memchr(s + i + 2, ')', n - i - 2)) != NULL) {
            const fdl__buf *v = profile_var(p, s + i + 2, (size_t)(close - s - i - 2), 0);
            if (depth >= EXPAND_DEPTH)
                p->bad = 1;
            else if (v && v->data)
                expand(p, out, v->data, v->len, depth + 1);
            i = (size_t)(close - s);
        } else {
            fdl__buf_append(out, s + i, 1);
        }
    }
}

/* Remove "name/.." pairs from an absolute path, in place ("/usr/local/cuda/bin/../x"). */
static void collapse_dotdot(char *path)
{
    char *p;
    while ((p = strstr(path, "/../")) != NULL || ((p = strstr(path, "/..")) && !p[3])) {
        char *prev = p;
        while (prev > path && prev[-1] != '/')
            prev--;
        if (prev <= path + 1 || strncmp(prev, "../", 3) == 0)
            return;
        memmove(prev - 1, p + 3, strlen(p + 3) + 1);
    }
}

static int add_dir(char (*dirs)[FDL__CUDA_PATH_MAX], size_t *n, size_t max, const char *d,
                   size_t len)
{
    struct stat st;
    if (*n == max || len == 0 || len >= FDL__CUDA_PATH_MAX)
        return 0;
    memcpy(dirs[*n], d, len);
    dirs[*n][len] = '\0';
    collapse_dotdot(dirs[*n]);
    for (size_t i = 0; i < *n; i++)
        if (strcmp(dirs[i], dirs[*n]) == 0)
            return 1;
    if (stat(dirs[*n], &st) == 0 && S_ISDIR(st.st_mode))
        (*n)++;
    return 1;
}

/* The folders a list of nvcc options names with @p flag ("-I", "-isystem"), in order. */
static void option_dirs(const char *s, size_t len, const char *flag,
                        char (*dirs)[FDL__CUDA_PATH_MAX], size_t *n, size_t max)
{
    char tok[FDL__CUDA_PATH_MAX + 16];
    size_t flen = strlen(flag);
    int next_is_dir = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && (s[i] == ' ' || s[i] == '\t'))
            i++;
        if (i == len)
            break;
        size_t t = 0;
        int overflow = 0;
        while (i < len && s[i] != ' ' && s[i] != '\t') {
            if (s[i] == '"') { /* a quoted part: spaces inside kept */
                for (i++; i < len && s[i] != '"'; i++)
                    t < sizeof tok - 1 ? (void)(tok[t++] = s[i]) : (void)(overflow = 1);
                i += i < len;
            } else {
                t < sizeof tok - 1 ? (void)(tok[t++] = s[i]) : (void)(overflow = 1);
                i++;
            }
        }
        tok[t] = '\0';
        if (overflow)
            next_is_dir = 0;
        else if (next_is_dir) {
            add_dir(dirs, n, max, tok, t);
            next_is_dir = 0;
        } else if (t == flen && memcmp(tok, flag, flen) == 0)
            next_is_dir = 1;
        else if (t > flen && memcmp(tok, flag, flen) == 0)
            add_dir(dirs, n, max, tok + flen, t - flen);
    }
}

/* Read @p path (nvcc.profile) and put its include folders into @p dirs; 0 when it is no profile. */
static int read_profile(const char *path, const char *root, char (*dirs)[FDL__CUDA_PATH_MAX],
                        size_t *n, size_t max)
{
    char *text = NULL;
    size_t size = 0;
    struct stat st;
    profile p;
    memset(&p, 0, sizeof p);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)PROFILE_MAX ||
        fdl__read_file(path, &text, &size, NULL) != FDL_OK)
        return 0;
    fdl__buf *here = profile_var(&p, "_HERE_", 6, 1);
    fdl__buf *target = profile_var(&p, "_TARGET_DIR_", 12, 1);
    fdl__buf *space = profile_var(&p, "_SPACE_", 7, 1);
    fdl__buf_printf(here, "%s/bin", root);
    char tdir[FDL__CUDA_PATH_MAX];
    int len = snprintf(tdir, sizeof tdir, "%s/%s", root, TARGET_DIR);
    if (TARGET_DIR[0] && len > 0 && (size_t)len < sizeof tdir && stat(tdir, &st) == 0 &&
        S_ISDIR(st.st_mode))
        fdl__buf_puts(target, TARGET_DIR);
    fdl__buf_puts(space, " ");
    for (char *line = text; line && *line && !p.bad;) {
        char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        char *next = end ? end + 1 : NULL;
        size_t i = 0;
        while (i < ll && (line[i] == ' ' || line[i] == '\t'))
            i++;
        size_t name_at = i;
        while (i < ll && (isalnum((unsigned char)line[i]) || line[i] == '_'))
            i++;
        size_t name_len = i - name_at;
        while (i < ll && (line[i] == ' ' || line[i] == '\t'))
            i++;
        int op = 0; /* 1 =, 2 +=, 3 =+ */
        if (name_len && i + 1 < ll && line[i] == '+' && line[i + 1] == '=')
            op = 2, i += 2;
        else if (name_len && i + 1 < ll && line[i] == '=' && line[i + 1] == '+')
            op = 3, i += 2;
        else if (name_len && i < ll && line[i] == '=')
            op = 1, i += 1;
        if (op && line[name_at] != '#') {
            fdl__buf *v = profile_var(&p, line + name_at, name_len, 1);
            fdl__buf val = {0};
            while (i < ll && (line[i] == ' ' || line[i] == '\t'))
                i++;
            size_t vl = ll - i;
            while (vl && (line[i + vl - 1] == '\r' || line[i + vl - 1] == ' '))
                vl--;
            expand(&p, &val, line + i, vl, 0); /* nvcc expands as it reads */
            if (v && op == 1) {
                fdl__buf_free(v);
                fdl__buf_append(v, val.data ? val.data : "", val.len);
            } else if (v && op == 2) {
                fdl__buf_append(v, val.data ? val.data : "", val.len);
            } else if (v) {
                fdl__buf joined = {0};
                fdl__buf_append(&joined, val.data ? val.data : "", val.len);
                fdl__buf_append(&joined, v->data ? v->data : "", v->len);
                fdl__buf_free(v);
                *v = joined;
            }
            fdl__buf_free(&val);
        }
        line = next;
    }
    const fdl__buf *inc = profile_var(&p, "INCLUDES", 8, 0);
    const fdl__buf *sys = profile_var(&p, "SYSTEM_INCLUDES", 15, 0);
    int ok = !p.bad && (inc || sys);
    for (size_t i = 0; i < p.n; i++)
        ok &= !p.value[i].oom;
    if (ok && inc && inc->data)
        option_dirs(inc->data, inc->len, "-I", dirs, n, max);
    if (ok && sys && sys->data)
        option_dirs(sys->data, sys->len, "-isystem", dirs, n, max);
    for (size_t i = 0; i < p.n; i++)
        fdl__buf_free(&p.value[i]);
    free(text);
    return ok;
}

size_t fdl__cuda_include_dirs(char (*dirs)[FDL__CUDA_PATH_MAX], size_t max, char *from,
                              size_t from_size)
{
    char root_inc[FDL__CUDA_PATH_MAX], profile_path[FDL__CUDA_PATH_MAX];
    size_t n = 0;
    if (from_size)
        from[0] = '\0';
    if (!fdl__cuda_find(root_inc, sizeof root_inc, "include/cuda.h"))
        return 0;
    root_inc[strlen(root_inc) - strlen("/include/cuda.h")] = '\0'; /* the root */
    int len = snprintf(profile_path, sizeof profile_path, "%s/bin/nvcc.profile", root_inc);
    if (len > 0 && (size_t)len < sizeof profile_path &&
        read_profile(profile_path, root_inc, dirs, &n, max) && n) {
        if (from_size)
            snprintf(from, from_size, "%s", profile_path);
        return n;
    }
    /* no profile (a toolkit without nvcc: NVRTC alone, or pip's wheels): its include folder */
    n = 0;
    size_t rl = strlen(root_inc);
    if (rl + 8 < sizeof root_inc) {
        memcpy(root_inc + rl, "/include", 9);
        add_dir(dirs, &n, max, root_inc, rl + 8);
    }
    return n;
}

/* ---- NVRTC ---------------------------------------------------------------------------------- */

typedef nvrtcResult (*create_fn)(nvrtcProgram *prog, const char *src, const char *name,
                                 int nheaders, const char *const *headers,
                                 const char *const *names);
typedef nvrtcResult (*destroy_fn)(nvrtcProgram *prog);
typedef nvrtcResult (*compile_fn)(nvrtcProgram prog, int nopts, const char *const *opts);
typedef nvrtcResult (*size_fn)(nvrtcProgram prog, size_t *size);
typedef nvrtcResult (*get_fn)(nvrtcProgram prog, char *out);
typedef const char *(*errstr_fn)(nvrtcResult result);
typedef nvrtcResult (*version_fn)(int *major, int *minor);

typedef struct nvrtc_fn {
    create_fn create;
    destroy_fn destroy;
    compile_fn compile;
    size_fn ptx_size;
    get_fn ptx;
    size_fn log_size;
    get_fn log;
    errstr_fn error_string;
    size_fn ltoir_size; /* CUDA 12.0 and later */
    get_fn ltoir;
    version_fn version;
} nvrtc_fn;

/* Global state: the entry points, filled once under pthread_once and read-only after. */
static struct {
    pthread_once_t once;
    int status;
    fdl_error error;
    nvrtc_fn fn;
    int64_t load_start_ns; /* CLOCK_REALTIME when the load began (libmemo.h) */
    atomic_int tried;      /* the load has run (whatever its outcome) */
} g_nvrtc = {PTHREAD_ONCE_INIT, FDL_OK, FDL_ERROR_INIT, {0}, 0, 0};

static const char *const nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so",
                                          sizeof FDLINK_CUDA_ROOT > 1
                                              ? FDLINK_CUDA_ROOT "/lib64/libnvrtc.so.13"
                                              : NULL,
                                          NULL};

/* What this process knows of NVRTC's version without loading it (libmemo.h). */
static fdl__libmemo_mem g_nvrtc_memo = FDL__LIBMEMO_MEM_INIT;
static const fdl__libspec nvrtc_spec = {"NVRTC", "FDLINK_NVRTC", nvrtc_names, &g_nvrtc_memo};

#define PURPOSE "to compile CUDA C inputs"

static void nvrtc_load(void)
{
    fdl_error *err = &g_nvrtc.error;
    void *h = NULL;
    static const fdl__symbol symbols[] = {
        {"nvrtcCreateProgram", offsetof(nvrtc_fn, create), 0},
        {"nvrtcDestroyProgram", offsetof(nvrtc_fn, destroy), 0},
        {"nvrtcCompileProgram", offsetof(nvrtc_fn, compile), 0},
        {"nvrtcGetPTXSize", offsetof(nvrtc_fn, ptx_size), 0},
        {"nvrtcGetPTX", offsetof(nvrtc_fn, ptx), 0},
        {"nvrtcGetProgramLogSize", offsetof(nvrtc_fn, log_size), 0},
        {"nvrtcGetProgramLog", offsetof(nvrtc_fn, log), 0},
        {"nvrtcGetErrorString", offsetof(nvrtc_fn, error_string), 0},
        {"nvrtcGetLTOIRSize", offsetof(nvrtc_fn, ltoir_size), 1},
        {"nvrtcGetLTOIR", offsetof(nvrtc_fn, ltoir), 1},
        {"nvrtcVersion", offsetof(nvrtc_fn, version), 1},
    };
    nvrtc_fn fn;
    memset(&fn, 0, sizeof fn);
    g_nvrtc.load_start_ns = fdl__libmemo_now();
    g_nvrtc.status = fdl__dlopen_table(&h, "FDLINK_NVRTC", nvrtc_names, "NVRTC", PURPOSE, symbols,
                                       sizeof symbols / sizeof symbols[0], &fn, err);
    if (g_nvrtc.status == FDL_OK)
        g_nvrtc.fn = fn;
    atomic_store(&g_nvrtc.tried, 1);
}

/*
 * The first error of an NVRTC log, `name(LINE): error: text` (also "catastrophic error"), into
 * @p text with its line; else the first non-blank line, line 0.
 */
static void first_error(const char *log, char *text, size_t size, unsigned *line)
{
    *line = 0;
    text[0] = '\0';
    const char *first = NULL, *first_end = NULL;
    for (const char *l = log; l && *l;) {
        const char *end = strchr(l, '\n');
        if (!end)
            end = l + strlen(l);
        const char *e = strstr(l, "): error: ");
        const char *c = strstr(l, "): catastrophic error: ");
        const char *hit = e && e < end ? e : c && c < end ? c : NULL;
        if (hit) {
            const char *open = hit;
            while (open > l && open[-1] != '(')
                open--;
            unsigned v = 0;
            for (const char *d = open; d < hit && isdigit((unsigned char)*d) && v < 100000000u;
                 d++)
                v = v * 10 + (unsigned)(*d - '0');
            *line = v;
            const char *msg = strstr(hit, "error: ") + 7;
            if (hit == c)
                msg = hit + 3; /* keep "catastrophic error: ..." */
            size_t len = (size_t)(end - msg);
            while (len && (msg[len - 1] == '\r' || msg[len - 1] == ' '))
                len--;
            if (len >= size)
                len = size - 1;
            memcpy(text, msg, len);
            text[len] = '\0';
            return;
        }
        const char *p = l;
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
            p++;
        if (!first && p < end) {
            first = p;
            first_end = end;
        }
        l = *end ? end + 1 : NULL;
    }
    if (first) {
        size_t len = (size_t)(first_end - first);
        if (len >= size)
            len = size - 1;
        memcpy(text, first, len);
        text[len] = '\0';
    }
}

int fdl__nvrtc_version(int *major, int *minor, fdl_error *err)
{
    *major = *minor = 0;
    pthread_once(&g_nvrtc.once, nvrtc_load);
    if (g_nvrtc.status != FDL_OK) {
        if (err)
            *err = g_nvrtc.error;
        return g_nvrtc.status;
    }
    if (!g_nvrtc.fn.version || g_nvrtc.fn.version(major, minor) != NVRTC_SUCCESS) {
        fdl__fail(err, FDL_ENOLIB, "NVRTC does not say its version");
        fdl__error_library(err, "NVRTC");
        return FDL_ENOLIB;
    }
    return FDL_OK;
}

int fdl__nvrtc_quick_version(const char *dir, int *major, int *minor)
{
    *major = *minor = 0;
    unsigned a = 0, b = 0;
    unsigned char id[FDL__LIBMEMO_ID_SIZE];
    if (atomic_load(&g_nvrtc.tried) || !fdl__libmemo_lookup(&nvrtc_spec, dir, &a, &b, id) ||
        a > 100000u || b > 100000u)
        return 0;
    *major = (int)a;
    *minor = (int)b;
    return 1;
}

int fdl__nvrtc_remember(const char *dir, int *major, int *minor)
{
    int rc = fdl__nvrtc_version(major, minor, NULL);
    if (rc != FDL_OK)
        return rc;
    void *sym = NULL; /* POSIX: a data pointer can hold a function's address */
    memcpy(&sym, &g_nvrtc.fn.create, sizeof sym);
    if (*major >= 0 && *minor >= 0)
        fdl__libmemo_record(&nvrtc_spec, dir, sym, g_nvrtc.load_start_ns, (unsigned)*major,
                            (unsigned)*minor, NULL);
    return FDL_OK;
}

int fdl__nvrtc_compile(unsigned char **out, size_t *out_size, char **log, const char *source,
                       size_t size, const char *name, const char *const *options,
                       const fdl__nvrtc_header *headers, size_t nheaders, int ltoir,
                       fdl_error *err)
{
    *out = NULL;
    *out_size = 0;
    *log = NULL;
    pthread_once(&g_nvrtc.once, nvrtc_load);
    if (g_nvrtc.status != FDL_OK) {
        if (err)
            *err = g_nvrtc.error;
        return g_nvrtc.status;
    }
    const nvrtc_fn *fn = &g_nvrtc.fn;
    if (ltoir && (!fn->ltoir_size || !fn->ltoir)) {
        fdl__error(err, FDL_ENOLIB, name, 0, 0, NULL,
                   "NVRTC lacks nvrtcGetLTOIR (CUDA 12.0 and later): it cannot emit LTO-IR; "
                   "compile to PTX instead");
        fdl__error_library(err, "NVRTC");
        return FDL_ENOLIB;
    }
    int rc = FDL_OK;
    nvrtcResult r;
    nvrtcProgram prog = NULL;
    char *text = NULL;
    const char **hdr_text = NULL, **hdr_names = NULL;
    size_t nopts = 0, cap;
    while (options && options[nopts])
        nopts++;
    if (nopts > 65536 || nheaders > 65536)
        return fdl__error(err, FDL_ELIMIT, name, 0, 0, NULL, "too many NVRTC options");
    if (!fdl__size_add(&cap, size, 1) || !(text = malloc(cap)) ||
        !(hdr_text = calloc(nheaders ? nheaders : 1, sizeof *hdr_text)) ||
        !(hdr_names = calloc(nheaders ? nheaders : 1, sizeof *hdr_names))) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory compiling");
        goto cleanup;
    }
    memcpy(text, source, size);
    text[size] = '\0';
    for (size_t i = 0; i < nheaders; i++) {
        hdr_text[i] = headers[i].text;
        hdr_names[i] = headers[i].name;
    }
    r = fn->create(&prog, text, name, (int)nheaders, hdr_text, hdr_names);
    if (r != NVRTC_SUCCESS) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "nvrtcCreateProgram failed: %s",
                        fn->error_string(r));
        if (err)
            err->backend_code = (int)r;
        goto cleanup;
    }
    nvrtcResult compiled = fn->compile(prog, (int)nopts, options);
    size_t lsize = 0;
    if (fn->log_size(prog, &lsize) == NVRTC_SUCCESS && lsize) {
        *log = calloc(lsize + 1, 1);
        if (*log && fn->log(prog, *log) != NVRTC_SUCCESS)
            (*log)[0] = '\0';
    }
    if (compiled != NVRTC_SUCCESS) {
        char first[FDL_ERROR_MESSAGE_MAX];
        unsigned line = 0;
        first_error(*log ? *log : "", first, sizeof first - 64, &line);
        /* the first error as a record: the file NVRTC named (a header, its built-in header) */
        fdl__diags d = {0};
        const fdl_diagnostic *e1 = NULL;
        fdl__diags_parse_nvrtc(&d, *log ? *log : "");
        /* the headline is the first fatal error, where one stopped the compile (a missing
         * header, issue 34: the errors before it are often its cascade), else the first */
        for (size_t i = 0; i < d.n && !e1; i++)
            if (d.v[i].severity == FDL_SEVERITY_ERROR &&
                strncmp(d.v[i].message, "catastrophic error", 18) == 0)
                e1 = &d.v[i];
        for (size_t i = 0; i < d.n && !e1; i++)
            if (d.v[i].severity == FDL_SEVERITY_ERROR)
                e1 = &d.v[i];
        if (compiled == NVRTC_ERROR_INVALID_OPTION)
            /* nvcc's --expt-relaxed-constexpr is no NVRTC option (13.0); the recipes that need
             * it compile with -default-device, which makes unannotated functions, constexpr
             * ones included, device functions (issue 34) */
            rc = fdl__error(err, FDL_EINVAL, name, 0, 0, NULL, "NVRTC refused the options: %s%s",
                            first[0] ? first : fn->error_string(compiled),
                            strstr(first, "relaxed-constexpr")
                                ? " (NVRTC has no --expt-relaxed-constexpr; -Xnvrtc "
                                  "--device-as-default-execution-space makes unannotated "
                                  "constexpr functions device functions)"
                                : "");
        else if (e1)
            rc = fdl__error(err, FDL_EPARSE, e1->file[0] ? e1->file : name, e1->line,
                            e1->column, NULL, "%.400s", e1->message);
        else if (first[0])
            rc = fdl__error(err, FDL_EPARSE, name, line, 0, NULL, "%s", first);
        else
            rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "NVRTC failed: %s",
                            fn->error_string(compiled));
        fdl__diags_free(&d);
        if (err)
            err->backend_code = (int)compiled;
        goto cleanup;
    }
    size_t n = 0;
    r = ltoir ? fn->ltoir_size(prog, &n) : fn->ptx_size(prog, &n);
    if (r != NVRTC_SUCCESS || n == 0) {
        rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "NVRTC produced no %s: %s",
                        ltoir ? "LTO-IR" : "PTX",
                        r != NVRTC_SUCCESS ? fn->error_string(r) : "empty output");
        goto cleanup;
    }
    unsigned char *buf = malloc(n + 1);
    if (!buf) {
        rc = fdl__error(err, FDL_ENOMEM, name, 0, 0, NULL, "out of memory");
        goto cleanup;
    }
    r = ltoir ? fn->ltoir(prog, (char *)buf) : fn->ptx(prog, (char *)buf);
    if (r != NVRTC_SUCCESS) {
        free(buf);
        rc = fdl__error(err, FDL_EPARSE, name, 0, 0, NULL, "cannot fetch NVRTC's output: %s",
                        fn->error_string(r));
        goto cleanup;
    }
    buf[n] = '\0';
    if (!ltoir) /* PTX comes with its NUL */
        while (n && buf[n - 1] == '\0')
            n--;
    *out = buf;
    *out_size = n;
cleanup:
    if (prog)
        fn->destroy(&prog);
    free(text);
    free(hdr_text);
    free(hdr_names);
    return rc;
}

int fdl_nvrtc_version(unsigned *major, unsigned *minor, fdl_error *err)
{
    if (!FDL__CHECK_ARG(major) || !FDL__CHECK_ARG(minor))
        return fdl__fail(err, FDL_EINVAL, "fdl_nvrtc_version: major or minor is NULL");
    *major = 0;
    *minor = 0;
    fdl__lib_probe p;
    fdl__probe_nvrtc(&p);
    if (p.status != FDL_OK) {
        if (err)
            *err = p.error;
        return p.status;
    }
    if (p.major < 0) {
        fdl__fail(err, FDL_ENOLIB, "NVRTC does not say its version (nvrtcVersion failed)");
        fdl__error_library(err, "NVRTC");
        return FDL_ENOLIB;
    }
    *major = (unsigned)p.major;
    *minor = (unsigned)p.minor;
    return FDL_OK;
}

void fdl__probe_nvrtc(fdl__lib_probe *out)
{
    memset(out, 0, sizeof *out);
    out->major = out->minor = -1;
    pthread_once(&g_nvrtc.once, nvrtc_load);
    out->status = g_nvrtc.status;
    if (g_nvrtc.status != FDL_OK) {
        out->error = g_nvrtc.error;
        return;
    }
    void (*any)(void) = NULL;
    memcpy(&any, &g_nvrtc.fn.create, sizeof any);
    fdl__library_of(any, out->path, sizeof out->path);
    int major = -1, minor = -1;
    if (g_nvrtc.fn.version && g_nvrtc.fn.version(&major, &minor) == NVRTC_SUCCESS) {
        out->major = major;
        out->minor = minor;
    }
}
