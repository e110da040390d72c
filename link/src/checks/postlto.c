/*
 * The post-LTO PTX of LTO-IR inputs: what whole-program LTO makes of them at -O0, linked by
 * nvJitLink with -ptx (through the cache) and scanned, so that the declaration check
 * (check_decls.c) and the report of an undefined symbol (undefined.c) can read LTO-IR as PTX.
 *
 * Why -O0: the view needs every function the LTO-IR defines, under the name it defines it with,
 * and its prototype, not optimised code. At -O0 nvJitLink inlines nothing, so each function the
 * keeper (check_decls.c) or a kernel refers to stays a definition of its own, and the run costs
 * under 1% of the optimising link (0.5 s against 64 s for 256 generated functions on the H100
 * host). Unreferenced functions are dropped at -O0 too: the keeper still takes their addresses.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "cacheint.h"
#include "fdlink/ptx.h"
#include "abi_internal.h"
#include "checks.h"
#include "linkobj.h"
#include "nvjl.h"

/* Byte offset of 1-based @p line, @p column in @p text, or SIZE_MAX. */
static size_t offset_of(const char *text, size_t len, unsigned line, unsigned column)
{
    size_t off = 0;
    for (unsigned l = 1; l < line; l++) {
        const char *nl = memchr(text + off, '\n', len - off);
        if (!nl)
            return SIZE_MAX;
        off = (size_t)(nl - text) + 1;
    }
    if (column == 0 || column - 1 > len - off)
        return SIZE_MAX;
    return off + column - 1;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Scan post-LTO PTX as a module of @p name. Whole-program LTO gives every device function
 * internal linkage; the declared ones it kept are visible to other inputs all the same (their
 * LTO-IR defines them for the link), so they are scanned as `.visible` (ABI-6).
 */
static int scan_post_lto(fdl_link *link, const char *text, size_t len, const char *name,
                         fdl_ptx **out, fdl_error *err)
{
    *out = NULL;
    int rc;
    fdl_ptx *first = NULL;
    size_t *at = NULL, nat = 0;
    fdl__buf b = {0};
    if ((rc = fdl__ptx_scan_bodies(&first, text, len, name, err)) != FDL_OK)
        goto cleanup;
    size_t count = fdl_ptx_count(first);
    if (!(at = malloc((count ? count : 1) * sizeof *at))) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < count; i++) {
        const fdl_ptx_func *f = fdl_ptx_get(first, i);
        if (f->is_definition && !f->is_entry && f->linkage == FDL_PTX_LINK_NONE &&
            fdl__link_find_decl(link, f->name)) {
            size_t off = offset_of(text, len, f->decl_line, f->decl_column);
            if (off != SIZE_MAX)
                at[nat++] = off;
        }
    }
    if (!nat) {
        *out = first;
        first = NULL;
        goto cleanup;
    }
    qsort(at, nat, sizeof *at, cmp_size);
    size_t prev = 0;
    for (size_t i = 0; i < nat; i++) {
        fdl__buf_append(&b, text + prev, at[i] - prev);
        fdl__buf_puts(&b, ".visible ");
        prev = at[i];
    }
    fdl__buf_append(&b, text + prev, len - prev);
    if (b.oom) {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        goto cleanup;
    }
    rc = fdl__ptx_scan_bodies(out, b.data, b.len, name, err);
cleanup:
    fdl_ptx_destroy(first);
    free(at);
    fdl__buf_free(&b);
    return rc;
}

/*
 * The post-LTO PTX of @p n inputs' LTO-IR, linked together in one nvJitLink run, kept with the
 * first of them (declaration check; the others' post_lto stay NULL). One input's module is named
 * "<name>[post-LTO ptx]", that of several "<a>+<b>+...[post-LTO ptx]".
 */
int fdl__link_post_lto_joint(fdl_link *link, fdl__link_input **ins, size_t n, int with_keeper,
                          fdl_error *err)
{
    if (ins[0]->post_lto)
        return FDL_OK;
    fdl__nvjl_run run;
    memset(&run, 0, sizeof run);
    const unsigned char *keep = with_keeper ? link->keeper : NULL;
    /* the post-LTO PTX depends only on the inputs, the keeper and the options: cached */
    unsigned char key[FDL__CACHE_KEY_SIZE];
    int keyed = fdl__link_check_key(link, ins, n, keep, link->keeper_size, key);
    int rc = FDL_OK;
    fdl__cache_sections cached;
    memset(&cached, 0, sizeof cached);
    if (keyed)
        fdl__link_memos_write(link); /* the cache is used: the memos the link learnt go in */
    if (keyed && fdl__cache_get(&link->cache, FDL__CACHE_CHECK, key, &cached) != FDL_CACHE_MISS &&
        cached.n == 1 && cached.len[0] && (run.out = malloc(cached.len[0] + 1))) {
        memcpy(run.out, cached.p[0], cached.len[0]);
        run.out[cached.len[0]] = '\0';
        run.out_size = cached.len[0];
    } else if (fdl__link_warm_required(link)) {
        char hex[33] = "";
        if (keyed)
            fdl__cache_key_hex(key, hex);
        rc = fdl__link_cold(link, "the post-LTO view (declaration check)", NULL, hex, err);
    } else if ((rc = fdl__link_need_nv(link, err)) == FDL_OK) {
        rc = fdl__nvjl_link(link, 1, FDL__NVJL_VIEW, ins, n, keep, link->keeper_size, &run, err);
        link->nvjl_runs++;
        if (rc == FDL_OK && keyed) {
            const unsigned char *secs[1] = {run.out};
            size_t lens[1] = {run.out_size};
            fdl__cache_put(&link->cache, FDL__CACHE_CHECK, key, secs, lens, 1);
        }
    }
    fdl__cache_sections_free(&cached);
    fdl__link_cache_warn(link);
    if (rc == FDL_ELINK && err) {
        char symbol[FDL_ERROR_SYMBOL_MAX];
        char *log = run.error;
        run.error = NULL;
        rc = fdl__link_backend_error(link, log, (int)run.r, fdl__nvjl_result_name((int)run.r),
                                     n == 1 ? ins[0]->name : run.refused,
                                     n == 1 ? "link-time optimisation of the input failed"
                                            : "link-time optimisation of the LTO-IR inputs "
                                              "failed",
                                     symbol, sizeof symbol, err);
    }
    if (rc == FDL_OK) {
        fdl__buf name = {0};
        for (size_t i = 0; i < n; i++)
            fdl__buf_printf(&name, "%s%s", i ? "+" : "", ins[i]->name);
        fdl__buf_puts(&name, "[post-LTO ptx]");
        if (name.oom)
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory");
        else
            rc = scan_post_lto(link, (const char *)run.out, run.out_size, name.data,
                               &ins[0]->post_lto, err);
        fdl__buf_free(&name);
    }
    fdl__nvjl_run_free(&run);
    return rc;
}

/* The post-LTO PTX of one input's LTO-IR, kept with the input (declaration check). */
int fdl__link_post_lto(fdl_link *link, fdl__link_input *in, int with_keeper, fdl_error *err)
{
    fdl__link_input *one[1] = {in};
    return fdl__link_post_lto_joint(link, one, 1, with_keeper, err);
}
