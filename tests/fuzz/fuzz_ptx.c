/*
 * Fuzz fdl_ptx_scan (as fdl__ptx_scan_bodies: the bodies read too, for ABI-13), then
 * fdl_abi_check (as fdl__abi_check_warn) of a small fixed declaration set against the scanned
 * module (alone, and twice as two inputs of one link). The input is the PTX text, exactly `size`
 * bytes (not NUL-terminated). Properties: a failure fills the error record well (fuzz.h); a
 * success gives prototypes with names, positions and parameters in range that fdl_ptx_find finds;
 * every diagnostic of the check is well formed, cites a rule and says where, and the count of
 * diagnostics agrees with the status.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "fdlink/decl.h"
#include "fdlink/ptx.h"
#include "fuzz.h"
#include "abi_internal.h"

static const char source[] = "fuzz.ptx";

/* Names short enough for the fuzzer to find, and every kind of parameter the check knows. */
static const char decl_text[] =
    "f: float32(float32, float32)\n"
    "g: float32(CPointer(float32), int32)\n"
    "h: uint32(uint32, uint32) abi=c\n"
    "k: float16(float16, int8)\n"
    "v: void(CPointer(int32))\n"
    "c: void(voidptr, float64) abi=c\n"
    "x: int64(intp, uint16, boolean)\n"
    "y: float16(float16) abi=c\n"
    "z: int32()\n"
    "mul_f32_f32: float32(float32, float32)\n"
    "sum_reduce: float32(CPointer(float32), int32)\n"
    "add_cabi: uint32(uint32, uint32) abi=c\n"
    "mul_f16: float16(float16, float16)\n"
    "small_ints: int32(boolean, int8, int16)\n"
    "store_void: void(CPointer(float32), float32)\n";

static fdl_decls *decls(void)
{
    static fdl_decls *d; /* parsed once; the harness's only state */
    if (!d) {
        fdl_error err = FDL_ERROR_INIT;
        int rc = fdl_decls_parse(&d, decl_text, sizeof decl_text - 1, "fuzz.decl", &err);
        FUZZ_REQUIRE(rc == FDL_OK, "fixed declarations: %s", err.message);
    }
    return d;
}

typedef struct diag_count {
    size_t n;
    fdl_error first;
} diag_count;

static void on_diag(void *ctx, const fdl_error *e)
{
    diag_count *dc = ctx;
    fuzz_check_error(e, FDL_EABI);
    FUZZ_REQUIRE(strstr(e->message, "(ABI-") != NULL, "no rule cited: '%s'", e->message);
    FUZZ_REQUIRE(e->message[strlen(e->message) - 1] == ')', "rule not last: '%s'", e->message);
    FUZZ_REQUIRE(strcmp(e->source, source) == 0 || strcmp(e->source, "fuzz.decl") == 0,
                 "source '%s'", e->source);
    if (dc->n++ == 0)
        dc->first = *e;
}

/* A warning (ABI-13): well formed, at a place in the input, never counted. */
static void on_warning(void *ctx, const fdl_error *e)
{
    (void)ctx;
    fuzz_check_error(e, FDL_EABI);
    FUZZ_REQUIRE(strstr(e->message, "(ABI-13; declared at ") != NULL, "warning: '%s'",
                 e->message);
    FUZZ_REQUIRE(strcmp(e->source, source) == 0 && e->line >= 1 && e->column >= 1,
                 "warning at '%s':%u:%u", e->source, e->line, e->column);
}

static void check(const fdl_ptx *const *mods, size_t n, int allow_undefined, int check_externs)
{
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    diag_count dc;
    memset(&dc, 0, sizeof dc);
    opts.allow_undefined = allow_undefined;
    opts.check_externs = check_externs;
    opts.on_diag = on_diag;
    opts.ctx = &dc;
    size_t nd = 0;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl__abi_check_warn(&nd, decls(), mods, n, &opts, on_warning, &err);
    FUZZ_REQUIRE(nd == dc.n, "%zu diagnostics counted, %zu reported", nd, dc.n);
    FUZZ_REQUIRE((rc == FDL_OK) == (nd == 0), "status %d with %zu diagnostics", rc, nd);
    FUZZ_REQUIRE(rc == FDL_OK || rc == FDL_EABI, "status %d", rc);
    if (nd)
        FUZZ_REQUIRE(memcmp(&err, &dc.first, sizeof err) == 0, "err is not the first diagnostic");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    fdl_ptx *ptx = NULL;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl__ptx_scan_bodies(&ptx, text, size, source, &err); /* bodies read too */
    if (rc != FDL_OK) {
        FUZZ_REQUIRE(ptx == NULL, "*out set on failure");
        FUZZ_REQUIRE(rc == FDL_EPARSE || rc == FDL_ELIMIT, "status %d", rc);
        fuzz_check_error(&err, rc);
        FUZZ_REQUIRE(strcmp(err.source, source) == 0, "source '%s'", err.source);
        return 0;
    }
    FUZZ_REQUIRE(err.code == FDL_OK, "err touched on success");
    FUZZ_REQUIRE(!memchr(text, '\0', size), "a NUL byte was accepted");
    const char *version = fdl_ptx_version(ptx);
    FUZZ_REQUIRE(version[0] >= '0' && version[0] <= '9' && strchr(version, '.'), "version '%s'",
                 version);
    unsigned as = fdl_ptx_address_size(ptx);
    FUZZ_REQUIRE(as == 0 || as == 32 || as == 64, "address size %u", as);
    FUZZ_REQUIRE(fdl_ptx_directive_location(ptx, ".version", NULL, NULL), "no .version location");
    FUZZ_REQUIRE(fdl_ptx_directive_location(ptx, ".address_size", NULL, NULL) == (as != 0),
                 ".address_size location");

    size_t n = fdl_ptx_count(ptx);
    for (size_t i = 0; i < n; i++) {
        const fdl_ptx_func *f = fdl_ptx_get(ptx, i);
        FUZZ_REQUIRE(f && f->name && f->name[0], "function %zu has no name", i);
        FUZZ_REQUIRE(strlen(f->name) <= FDL_PTX_MAX_IDENT, "name too long");
        FUZZ_REQUIRE(f->line >= 1 && f->column >= 1 && f->decl_line >= 1, "position");
        FUZZ_REQUIRE(f->decl_line < f->line ||
                         (f->decl_line == f->line && f->decl_column < f->column),
                     "name before the first directive");
        FUZZ_REQUIRE(f->nparams <= FDL_PTX_MAX_PARAMS, "%zu parameters", f->nparams);
        FUZZ_REQUIRE(!f->is_entry || !f->has_return, "kernel with a return value");
        FUZZ_REQUIRE((f->nparams == 0) == (f->params == NULL), "params pointer");
        FUZZ_REQUIRE(!f->has_return || (f->ret.name && f->ret.bits), "return parameter");
        for (size_t k = 0; k < f->nparams; k++) {
            const fdl_ptx_param *p = &f->params[k];
            FUZZ_REQUIRE(p->name && p->bits >= 1 && p->bits <= 128 && p->bytes >= 1,
                         "parameter %zu of %s", k, f->name);
            FUZZ_REQUIRE(strnlen(p->type, sizeof p->type) < sizeof p->type, "type");
            FUZZ_REQUIRE(p->line >= 1 && p->column >= 1, "parameter position");
        }
        const fdl_ptx_func *found = fdl_ptx_find(ptx, f->name);
        FUZZ_REQUIRE(found && strcmp(found->name, f->name) == 0, "find(%s)", f->name);
        FUZZ_REQUIRE(found->is_definition || !f->is_definition, "find(%s) skips a definition",
                     f->name);
        if (n <= 256) { /* the first definition, else the first prototype, of the name */
            const fdl_ptx_func *want = NULL;
            for (size_t j = 0; j < n; j++) {
                const fdl_ptx_func *g = fdl_ptx_get(ptx, j);
                if (strcmp(g->name, f->name) != 0)
                    continue;
                if (!want || (g->is_definition && !want->is_definition))
                    want = g;
            }
            FUZZ_REQUIRE(found == want, "find(%s) is not the first definition", f->name);
        }
    }
    FUZZ_REQUIRE(fdl_ptx_get(ptx, n) == NULL, "get past the end");

    const fdl_ptx *mods[2] = {ptx, ptx};
    check(mods, 1, 0, 1);
    check(mods, 1, 1, 0);
    check(mods, 2, 0, 1);
    fdl_ptx_destroy(ptx);
    return 0;
}
