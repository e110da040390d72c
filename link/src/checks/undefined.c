/*
 * An undefined symbol said fully, for the backends: the symbol, the input that refers to it, and
 * where it is declared, or that it is not.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "fdlink/abi.h"
#include "internal.h"
#include "checks.h"
#include "libs.h"
#include "linkobj.h"
#include "unpack.h"

/* The function's own name in @p name, mangled or not: "mul" of "mul", of "_Z3mulff"
 * ("mul(float, float)") and of "ns::mul<int>(int)"; into @p out. */
static void base_name(const char *name, char *out, size_t cap)
{
    char d[FDL_ERROR_MESSAGE_MAX];
    const char *s = fdl__demangle(name, d, sizeof d) ? d : name;
    const char *end = s + strlen(s);
    /* before the parameters, and before template arguments */
    int depth = 0;
    for (const char *p = s; *p; p++) {
        if (*p == '<')
            depth++;
        else if (*p == '>')
            depth--;
        else if (*p == '(' && depth == 0) {
            end = p;
            break;
        }
    }
    const char *lt = memchr(s, '<', (size_t)(end - s));
    if (lt)
        end = lt;
    const char *begin = s;
    for (const char *p = s; p + 1 < end; p++)
        if (p[0] == ':' && p[1] == ':')
            begin = p + 2;
    for (const char *p = begin; p < end; p++) /* "double f" of a template's return type */
        if (*p == ' ')
            begin = p + 1;
    snprintf(out, cap, "%.*s", (int)(end - begin), begin);
}

/* Call @p fn for every name a definition of image @p img (loaded if need be; one that cannot be
 * read defines nothing as far as this can tell) or PTX @p ptx gives, until it returns 1. */
static int each_definition(fdl__image *img, const fdl_ptx *ptx,
                           int (*fn)(void *ctx, const char *name), void *ctx)
{
    if (img && (img->pub.kind == FDL_KIND_CUBIN || img->pub.kind == FDL_KIND_PTX)) {
        fdl_error ignored = FDL_ERROR_INIT;
        if (!img->loaded && fdl__image_load(img, &ignored) != FDL_OK)
            return 0;
        ptx = img->ptx;
        for (size_t k = 0; k < img->nsyms; k++)
            if (img->syms[k].defined && img->syms[k].name && fn(ctx, img->syms[k].name))
                return 1;
    }
    for (size_t k = 0; ptx && k < fdl_ptx_count(ptx); k++) {
        const fdl_ptx_func *f = fdl_ptx_get(ptx, k);
        if (f->is_definition && fn(ctx, f->name))
            return 1;
    }
    return 0;
}

typedef struct match {
    const char *symbol;
    char base[FDL_ERROR_MESSAGE_MAX];
    const char *found; /* the name defined: the symbol itself, or one of the same base */
} match;

static int same_name(void *ctx, const char *name)
{
    match *m = ctx;
    if (strcmp(name, m->symbol) == 0) {
        m->found = name;
        return 1;
    }
    return 0;
}

static int same_base(void *ctx, const char *name)
{
    match *m = ctx;
    char b[FDL_ERROR_MESSAGE_MAX];
    if ((strncmp(name, "_Z", 2) == 0) == (strncmp(m->symbol, "_Z", 2) == 0))
        return 0; /* both C++ or both C: an overload, not a linkage mix-up */
    base_name(name, b, sizeof b);
    if (b[0] && strcmp(b, m->base) == 0) {
        m->found = name;
        return 1;
    }
    return 0;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * Who defines or would define @p symbol (@p readable: its demangled form, or ""), as " (...)"
 * in @p out, or "": an image of an input the link does not use (another architecture), or a
 * well-known library by the name's prefix: libcudadevrt, libdevice, NVSHMEM, MathDx (issue 34).
 */
static void who_defines(fdl_link *link, const char *symbol, const char *readable, char *out,
                        size_t cap)
{
    out[0] = '\0';
    match m = {symbol, "", NULL};
    base_name(symbol, m.base, sizeof m.base);
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < link->ninputs; i++) {
            fdl__link_input *in = &link->inputs[i];
            /* LTO-IR is read through its post-LTO PTX (made on a failure only) */
            if (pass == 1 && !in->post_lto && link->backend == FDL_BACKEND_NVJITLINK &&
                fdl__link_chosen_kind(in, FDL_KIND_LTOIR))
                fdl__link_post_lto(link, in, 0, NULL);
            for (size_t k = 0; k <= in->images.n; k++) {
                fdl__image *img = k < in->images.n ? &in->images.v[k] : NULL;
                int used = img && in->chosen && img->unit < in->images.nunits &&
                           in->chosen[img->unit] == img;
                if (pass == 0 && !used && img &&
                    each_definition(img, NULL, same_name, &m)) {
                    /* the image the link does not use: another architecture's */
                    snprintf(out, cap, " (%.200s defines it, but a link for %s does not use "
                             "that image: rebuild it for %s)", img->pub.name,
                             link->arch, link->arch);
                    return;
                }
                if (pass == 1 && (used || !img) &&
                    each_definition(used ? img : NULL, img ? NULL : in->post_lto, same_base,
                                    &m)) {
                    /* extern "C" on one side only */
                    char d[FDL_ERROR_MESSAGE_MAX];
                    int cxx = fdl__demangle(m.found, d, sizeof d);
                    snprintf(out, cap, " (%.120s defines %.120s%s%.120s%s, a %s name: declare it "
                             "extern \"C\" on both sides, or on neither)", in->name,
                             cxx ? d : m.found, cxx ? " [" : "", cxx ? m.found : "",
                             cxx ? "]" : "", cxx ? "C++" : "C");
                    return;
                }
            }
        }
    }
    if (starts(symbol, "__cudaCDP") || starts(symbol, "cudaGetParameterBuffer") ||
        starts(symbol, "cudaLaunchDevice") || starts(symbol, "cudaCGGetIntrinsicHandle") ||
        starts(symbol, "cudaCGSynchronizeGrid"))
        snprintf(out, cap, " (a kernel launches kernels: link libcudadevrt, -lcudadevrt)");
    else if (starts(symbol, "__nv_"))
        snprintf(out, cap, " (libdevice defines it: add <toolkit>/nvvm/libdevice/"
                 "libdevice.10.bc as an input)");
    else if (starts(symbol, "nvshmem") || strstr(symbol, "nvshmem"))
        snprintf(out, cap, " (NVSHMEM's device library defines it: add libnvshmem_device.a "
                 "from the nvidia-nvshmem-cu13 wheel; its .bc files are LLVM bitcode that "
                 "libNVVM cannot read)");
    else {
        static const struct {
            const char *ns, *name;
        } dx[] = {{"cublasdx::", "cuBLASDx"}, {"cufftdx::", "cuFFTDx"},
                  {"cusolverdx::", "cuSolverDx"}, {"curanddx::", "cuRANDDx"},
                  {"cusparsedx::", "cuSPARSEDx"}, {"nvcompdx::", "nvCOMPDx"},
                  {"commondx::", "MathDx"}};
        for (size_t i = 0; i < sizeof dx / sizeof dx[0]; i++) {
            char mangled[40];
            size_t n = strlen(dx[i].ns) - 2;
            snprintf(mangled, sizeof mangled, "%zu%.*s", n, (int)n, dx[i].ns);
            if (starts(readable, dx[i].ns) || strstr(readable, dx[i].ns) ||
                strstr(symbol, mangled)) {
                if (!strcmp(dx[i].ns, "cusolverdx::"))
                    /* libmathdx's solver LTO-IR calls into the library's precompiled code */
                    snprintf(out, cap, " (cuSolverDx's universal fatbin defines it: add the "
                             "fatbin libmathdx's cusolverdxGetUniversalFATBIN returns, or "
                             "lib/libcusolverdx.fatbin of a MathDx package)");
                else
                    snprintf(out, cap, " (%s, of MathDx, would define it: link the code "
                             "libmathdx generates for this function, nvidia-libmathdx-cu13)",
                             dx[i].name);
                return;
            }
        }
    }
}

/*
 * An undefined symbol, said fully: the symbol, the input that references it, and where it is
 * declared (or that it is not). nvJitLink names the input itself for PTX and cubins
 * ("in 'caller.ptx'"); after LTO, ptxas only says "unresolved extern function", and the LTO-IR
 * inputs are linked alone to find the one that refers to it.
 */
void fdl__link_undefined_error(fdl_link *link, const char *symbol, fdl_error *err)
{
    const char *where = NULL;
    unsigned line = 0, column = 0;
    char quoted[FDL_ERROR_SOURCE_MAX] = "";
    if (!fdl__link_find_reference(link, symbol, &where, &line, &column) && link->lto &&
        link->backend == FDL_BACKEND_NVJITLINK) {
        for (size_t i = 0; i < link->ninputs; i++)
            if (fdl__link_chosen_kind(&link->inputs[i], FDL_KIND_LTOIR))
                fdl__link_post_lto(link, &link->inputs[i], 0, NULL);
        fdl__link_find_reference(link, symbol, &where, &line, &column);
    }
    if (!where && err) {
        /* the backend's own word: "... in 'caller.ptx'" */
        const char *m = strstr(err->message, " in '");
        if (m) {
            m += 5;
            const char *q = strchr(m, '\'');
            if (q && (size_t)(q - m) < sizeof quoted) {
                memcpy(quoted, m, (size_t)(q - m));
                quoted[q - m] = '\0';
                where = quoted;
            }
        }
    }
    char declared[FDL_ERROR_MESSAGE_MAX];
    const fdl_decl *d = fdl__link_find_decl(link, symbol);
    if (d) {
        snprintf(declared, sizeof declared, "declared at %s:%u:%u but defined in no input",
                 d->source, d->line, d->column);
    } else if (link->ndecls) {
        fdl__buf files = {0};
        for (size_t i = 0; i < link->ndecls; i++)
            fdl__buf_printf(&files, "%s%s", i ? ", " : "", fdl_decls_source(link->decls[i]));
        snprintf(declared, sizeof declared, "not declared in %.300s, nor defined in any input",
                 files.data ? files.data : "");
        fdl__buf_free(&files);
    } else
        snprintf(declared, sizeof declared, "defined in no input, and not declared (no "
                 "declarations were given)");
    if (!err)
        return;
    int code = err->backend_code;
    const char *log = err->log;
    /* a C++ name readable, with its mangled form kept (issue 34) */
    char readable[FDL_ERROR_MESSAGE_MAX], shown[FDL_ERROR_MESSAGE_MAX], hint[1024];
    if (fdl__demangle(symbol, readable, sizeof readable)) {
        if (strlen(readable) > 160)
            memcpy(readable + 157, "...", 4);
        snprintf(shown, sizeof shown, "%.160s [%.200s]", readable, symbol);
    } else {
        readable[0] = '\0';
        snprintf(shown, sizeof shown, "%s", symbol);
    }
    who_defines(link, symbol, readable, hint, sizeof hint);
    int lto_inputs = 0;
    for (size_t i = 0; i < link->ninputs; i++)
        lto_inputs |= !link->inputs[i].builtin &&
                      fdl__link_chosen_kind(&link->inputs[i], FDL_KIND_LTOIR);
    if (!hint[0] && !d && !link->ndecls && lto_inputs && strncmp(symbol, "_Z", 2) != 0)
        /* whole-program LTO drops a definition nothing calls, one under a C++ name included,
         * and LTO-IR cannot be read otherwise: the declarations let the check keep and name it
         * (ABI-7, check_decls.c's keeper), as the PTX of the same code shows it (issue 38) */
        snprintf(hint, sizeof hint, " (a definition under a C++ name, without extern \"C\", is "
                 "dropped unseen by link-time optimisation, which keeps only what is called: "
                 "with the declarations, --decl, fdlink looks for it under its C++ names too)");
    /* the input that refers to it is err->source, with the line of a PTX reference */
    fdl__error(err, FDL_ELINK, where, line, column, symbol, "%s: undefined reference%s; %s%s",
               shown, where ? "" : " in an input", declared, hint);
    err->backend_code = code;
    err->log = log;
}
