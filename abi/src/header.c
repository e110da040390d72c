/*
 * Header generation (abi/ABI.md, "The generated header"): one `extern "C" __device__` prototype
 * per declaration. Force-included when the definitions are compiled, it turns every type
 * disagreement that PTX cannot show (ABI-10) into a compile error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/decl.h"
#include "fdlink/version.h"
#include "abi_internal.h"

/*
 * ABI-5: the C type of each scalar, chosen so that nvcc gives it exactly the PTX parameter of
 * the rule (bool and the 8/16-bit integers promote to .b32, float16 is `.align 2 .b8 [2]`).
 * intp/uintp are 64-bit on every CUDA target (ABI-12).
 */
static const char *const c_types[FDL_SCALAR_COUNT] = {
    [FDL_VOID] = "void",
    [FDL_BOOL] = "bool",
    [FDL_INT8] = "signed char",
    [FDL_INT16] = "short",
    [FDL_INT32] = "int",
    [FDL_INT64] = "long long",
    [FDL_UINT8] = "unsigned char",
    [FDL_UINT16] = "unsigned short",
    [FDL_UINT32] = "unsigned int",
    [FDL_UINT64] = "unsigned long long",
    [FDL_INTP] = "long long",
    [FDL_UINTP] = "unsigned long long",
    [FDL_FLOAT16] = "__half",
    [FDL_FLOAT32] = "float",
    [FDL_FLOAT64] = "double",
};

const char *fdl__abi_c_type(int scalar)
{
    return scalar >= 0 && scalar < FDL_SCALAR_COUNT ? c_types[scalar] : "void";
}

static int type_valid(fdl_type t)
{
    return (unsigned)t.base < FDL_SCALAR_COUNT && t.depth <= FDL_SIG_MAX_DEPTH;
}

/* `float *name`, `unsigned int name`, `void **name`. */
static void put_declarator(fdl__buf *b, fdl_type t, const char *name)
{
    fdl__buf_puts(b, c_types[t.base]);
    fdl__buf_puts(b, " ");
    for (unsigned i = 0; i < t.depth; i++)
        fdl__buf_puts(b, "*");
    fdl__buf_puts(b, name);
}

/* Length of the well-formed UTF-8 sequence at @p s (1 to 4), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
    size_t n = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
             : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

/* Text for a C comment: no control characters, no `*` that could end the comment, and bytes
 * that are not UTF-8 (a path's) as '?': NVRTC takes a byte 0xff for the end of the file. */
static void put_comment_text(fdl__buf *b, const char *s)
{
    while (*s) {
        unsigned char c = (unsigned char)*s;
        size_t n = c < 0x80 ? 1 : utf8_seq((const unsigned char *)s);
        if (n > 1) {
            fdl__buf_append(b, s, n);
            s += n;
            continue;
        }
        char out = c < 0x20 || c == 0x7f || c == '*' || c >= 0x80 ? '?' : (char)c;
        fdl__buf_append(b, &out, 1);
        s++;
    }
}

static const char *base_name(const char *path)
{
    const char *base = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    return base;
}

/* FDLINK_GENERATED_<BASE NAME, upper case, runs of other characters as one '_'>_H */
static void put_guard(fdl__buf *b, const char *source)
{
    fdl__buf_puts(b, "FDLINK_GENERATED_");
    int pending = 0, any = 0;
    for (const char *p = base_name(source); *p; p++) {
        unsigned char c = (unsigned char)*p;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
            if (pending && any)
                fdl__buf_puts(b, "_");
            char u = (char)(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
            fdl__buf_append(b, &u, 1);
            pending = 0;
            any = 1;
        } else {
            pending = 1;
        }
    }
    if (!any)
        fdl__buf_puts(b, "DECLS");
    fdl__buf_puts(b, "_H");
}

static void put_prototype(fdl__buf *b, const fdl_decl *d)
{
    char arg[32];
    fdl__buf_puts(b, "extern \"C\" __device__ ");
    if (d->abi == FDL_ABI_C) {
        /* ABI-9: T name(args...) */
        put_declarator(b, d->sig.ret, d->name);
        fdl__buf_puts(b, "(");
        if (!d->sig.nparams)
            fdl__buf_puts(b, "void");
    } else {
        /* ABI-1, ABI-3, ABI-4: int name(T *return_value, args...); void returns void * */
        fdl_type slot = d->sig.ret;
        slot.depth++;
        fdl__buf_printf(b, "int %s(", d->name);
        put_declarator(b, slot, "return_value");
    }
    for (size_t i = 0; i < d->sig.nparams; i++) {
        if (i || d->abi != FDL_ABI_C)
            fdl__buf_puts(b, ", ");
        snprintf(arg, sizeof arg, "arg%zu", i + 1);
        put_declarator(b, d->sig.params[i], arg);
    }
    fdl__buf_puts(b, ");\n");
}

int fdl_header_generate(char **out, size_t *len, const fdl_decls *decls, const char *guard,
                        fdl_error *err)
{
    if (!FDL__CHECK_ARG(out != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_header_generate: out is NULL");
    *out = NULL;
    if (len)
        *len = 0;
    if (!FDL__CHECK_ARG(decls != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_header_generate: decls is NULL");
    if (guard && !fdl__is_identifier(guard, strlen(guard))) {
        char q[64 + 4];
        return fdl__fail(err, FDL_EINVAL, "include guard '%s' is not a C identifier",
                         fdl__quote(q, sizeof q, guard, strlen(guard), 64));
    }

    int rc = FDL_OK;
    fdl__buf b = {0};
    fdl__buf guard_buf = {0};
    char *sig_text = NULL;
    const char *source = fdl_decls_source(decls);
    const char *file = base_name(source);
    size_t count = fdl_decls_count(decls);

    int half = 0;
    for (size_t i = 0; i < count; i++) {
        const fdl_decl *d = fdl_decls_get(decls, i);
        int bad = !type_valid(d->sig.ret) || d->sig.nparams > FDL_SIG_MAX_PARAMS;
        half |= d->sig.ret.base == FDL_FLOAT16;
        for (size_t j = 0; !bad && j < d->sig.nparams; j++) {
            bad = !type_valid(d->sig.params[j]);
            half |= d->sig.params[j].base == FDL_FLOAT16;
        }
        if (bad) {
            rc = fdl__error(err, FDL_EINVAL, source, d->line, d->column, d->name,
                            "declaration holds an invalid type");
            goto cleanup;
        }
    }

    if (!guard) {
        put_guard(&guard_buf, source);
        guard = guard_buf.data;
    }
    fdl__buf_puts(&b, "/* Generated by fdlink " FDLINK_VERSION_STRING " from ");
    put_comment_text(&b, file);
    fdl__buf_puts(&b, ": do not edit. */\n");
    fdl__buf_printf(&b, "#ifndef %s\n#define %s\n\n", guard ? guard : "", guard ? guard : "");
    fdl__buf_puts(&b,
                  "/*\n"
                  " * Prototypes of the foreign device functions declared in ");
    put_comment_text(&b, file);
    fdl__buf_puts(&b,
                  " (rules: fdlink's ABI.md).\n"
                  " * Numba ABI (ABI-1): int name(T *return_value, args...), 0 = success.\n"
                  " * C ABI (ABI-9, abi=c): T name(args...).\n"
                  " * Include this header where the functions are defined, so that a definition\n"
                  " * whose types disagree with its declaration does not compile (ABI-10).\n"
                  " */\n"
                  "#if defined(__CUDACC__) || defined(__CUDACC_RTC__)\n");
    if (half)
        /* NVRTC has no built-in cuda_fp16.h: say what to do instead of "cannot open". */
        fdl__buf_puts(&b, "\n#ifndef __CUDA_FP16_H__\n"
                          "#if defined(__CUDACC_RTC__) && defined(__has_include)\n"
                          "#if !__has_include(<cuda_fp16.h>)\n"
                          "#error \"float16 needs cuda_fp16.h: give NVRTC -I<CUDA toolkit>/include\"\n"
                          "#endif\n"
                          "#endif\n"
                          "#include <cuda_fp16.h>\n"
                          "#endif\n");

    for (size_t i = 0; i < count; i++) {
        const fdl_decl *d = fdl_decls_get(decls, i);
        size_t n = fdl_sig_format(&d->sig, NULL, 0);
        char *p = realloc(sig_text, n + 1);
        if (!p) {
            b.oom = 1;
            break;
        }
        sig_text = p;
        fdl_sig_format(&d->sig, sig_text, n + 1);
        fdl__buf_printf(&b, "\n/* %s: %s%s  (", d->name, sig_text,
                        d->abi == FDL_ABI_C ? " abi=c" : "");
        put_comment_text(&b, file);
        fdl__buf_printf(&b, ":%u) */\n", d->line);
        put_prototype(&b, d);
    }
    fdl__buf_puts(&b, "\n#endif /* __CUDACC__ || __CUDACC_RTC__ */\n");
    fdl__buf_printf(&b, "\n#endif /* %s */\n", guard ? guard : "");
    if (b.oom || guard_buf.oom) {
        rc = fdl__error(err, FDL_ENOMEM, source, 0, 0, NULL, "out of memory generating header");
        goto cleanup;
    }
    if (len)
        *len = b.len;
    *out = b.data;
    b.data = NULL;
cleanup:
    free(sig_text);
    fdl__buf_free(&guard_buf);
    fdl__buf_free(&b);
    return rc;
}

int fdl_header_write(const fdl_decls *decls, const char *path, fdl_error *err)
{
    if (!FDL__CHECK_ARG(decls != NULL && path != NULL))
        return fdl__fail(err, FDL_EINVAL, "fdl_header_write: decls or path is NULL");
    char *text = NULL;
    size_t len = 0;
    int rc = fdl_header_generate(&text, &len, decls, NULL, err);
    if (rc == FDL_OK)
        rc = fdl__write_atomic(path, text, len, err);
    free(text);
    return rc;
}
