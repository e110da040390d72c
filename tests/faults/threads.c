/*
 * The library from 8 threads at once: each thread, ROUNDS times, parses a declaration file,
 * scans PTX, checks it against the declarations (one conforming module, one that is not, with
 * the diagnostics counted), generates the header, and links the PTX with nvJitLink (with the
 * declarations). Every result must equal the one computed first on the main thread: the header
 * and the cubin byte for byte, the diagnostics by count and first message. Built with
 * FDLINK_SANITIZE=thread by .ci/faults.sh, so that a data race is a TSan report and a failure.
 *
 *   fdlink_threads DATA_DIR [threads [rounds]]    (DATA_DIR: tests/data)
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdlink/abi.h"
#include "fdlink/decl.h"
#include "fdlink/link.h"
#include "fdlink/ptx.h"

typedef struct result {
    char *header;
    size_t header_len;
    size_t bad_diags;
    char first_diag[FDL_ERROR_MESSAGE_MAX];
    unsigned char *cubin;
    size_t cubin_size;
    char failure[FDL_ERROR_MESSAGE_MAX + 64];
} result;

static char *decl_text, *good_ptx, *bad_ptx, *caller_ptx, *mul_ptx, *mul_decl;
static size_t decl_len, good_len, bad_len, caller_len, mul_len, mul_decl_len;
static int rounds = 3;
static result reference;

static char *slurp(const char *dir, const char *name, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(2);
    }
    fclose(f);
    p[n] = '\0';
    *len = (size_t)n;
    return p;
}

static void count_diag(void *ctx, const fdl_error *e)
{
    result *r = ctx;
    if (r->bad_diags++ == 0)
        snprintf(r->first_diag, sizeof r->first_diag, "%s", e->message);
}

/* One round of the work; fills @p r (failure[] on a failure). */
static void work(result *r)
{
    memset(r, 0, sizeof *r);
    fdl_error err = FDL_ERROR_INIT;
    fdl_decls *decls = NULL, *mdecls = NULL;
    fdl_ptx *good = NULL, *bad = NULL;
    fdl_link *link = NULL;
    if (fdl_decls_parse(&decls, decl_text, decl_len, "functions.decl", &err) != FDL_OK ||
        fdl_decls_parse(&mdecls, mul_decl, mul_decl_len, "mul.decl", &err) != FDL_OK ||
        fdl_ptx_scan(&good, good_ptx, good_len, "conforming.ptx", &err) != FDL_OK ||
        fdl_ptx_scan(&bad, bad_ptx, bad_len, "wrong_width.ptx", &err) != FDL_OK) {
        snprintf(r->failure, sizeof r->failure, "parse or scan: %s", err.message);
        goto cleanup;
    }
    fdl_check_options opts = FDL_CHECK_OPTIONS_INIT;
    size_t nd = 0;
    const fdl_ptx *mods[1] = {good};
    if (fdl_abi_check(&nd, decls, mods, 1, &opts, &err) != FDL_OK || nd != 0) {
        snprintf(r->failure, sizeof r->failure, "conforming check: %s", err.message);
        goto cleanup;
    }
    opts.on_diag = count_diag;
    opts.ctx = r;
    mods[0] = bad;
    if (fdl_abi_check(&nd, decls, mods, 1, &opts, &err) != FDL_EABI || nd != r->bad_diags) {
        snprintf(r->failure, sizeof r->failure, "wrong_width check: %zu diagnostics", nd);
        goto cleanup;
    }
    if (fdl_header_generate(&r->header, &r->header_len, decls, NULL, &err) != FDL_OK) {
        snprintf(r->failure, sizeof r->failure, "header: %s", err.message);
        goto cleanup;
    }
    fdl_link_options lo = FDL_LINK_OPTIONS_INIT;
    lo.arch = "sm_90";
    if (fdl_link_create(&link, &lo, &err) != FDL_OK ||
        fdl_link_add_decls(link, mdecls, &err) != FDL_OK ||
        fdl_link_add_data(link, caller_ptx, caller_len, "caller.ptx", FDL_KIND_AUTO, &err) !=
            FDL_OK ||
        fdl_link_add_data(link, mul_ptx, mul_len, "mul.ptx", FDL_KIND_AUTO, &err) != FDL_OK ||
        fdl_link_complete(link, &err) != FDL_OK) {
        snprintf(r->failure, sizeof r->failure, "link: %s", err.message);
        goto cleanup;
    }
    size_t size = 0;
    const void *cubin = fdl_link_cubin(link, &size);
    if (!cubin || !size || !(r->cubin = malloc(size))) {
        snprintf(r->failure, sizeof r->failure, "link: no cubin");
        goto cleanup;
    }
    memcpy(r->cubin, cubin, size);
    r->cubin_size = size;
cleanup:
    fdl_link_destroy(link);
    fdl_ptx_destroy(good);
    fdl_ptx_destroy(bad);
    fdl_decls_destroy(decls);
    fdl_decls_destroy(mdecls);
}

static void result_free(result *r)
{
    free(r->header);
    free(r->cubin);
}

/* NULL when @p r equals the reference, else what differs. */
static const char *differs(const result *r)
{
    if (r->failure[0])
        return r->failure;
    if (r->header_len != reference.header_len || memcmp(r->header, reference.header, r->header_len))
        return "the header differs";
    if (r->bad_diags != reference.bad_diags || strcmp(r->first_diag, reference.first_diag))
        return "the diagnostics differ";
    if (r->cubin_size != reference.cubin_size || memcmp(r->cubin, reference.cubin, r->cubin_size))
        return "the cubin differs";
    return NULL;
}

static void *thread_main(void *arg)
{
    long *bad = arg;
    for (int i = 0; i < rounds; i++) {
        result r;
        work(&r);
        const char *why = differs(&r);
        if (why) {
            fprintf(stderr, "fdlink_threads: round %d: %s\n", i, why);
            ++*bad;
        }
        result_free(&r);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: fdlink_threads DATA_DIR [threads [rounds]]\n");
        return 2;
    }
    int nthreads = argc > 2 ? atoi(argv[2]) : 8;
    if (argc > 3)
        rounds = atoi(argv[3]);
    if (nthreads < 1 || nthreads > 64 || rounds < 1)
        return 2;
    decl_text = slurp(argv[1], "check/functions.decl", &decl_len);
    good_ptx = slurp(argv[1], "check/conforming.ptx", &good_len);
    bad_ptx = slurp(argv[1], "check/wrong_width.ptx", &bad_len);
    caller_ptx = slurp(argv[1], "link/caller.ptx", &caller_len);
    mul_ptx = slurp(argv[1], "link/mul.ptx", &mul_len);
    mul_decl = slurp(argv[1], "link/mul.decl", &mul_decl_len);
    work(&reference);
    if (reference.failure[0]) {
        fprintf(stderr, "fdlink_threads: on the main thread: %s\n", reference.failure);
        return 1;
    }
    pthread_t t[64];
    long bad[64] = {0};
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&t[i], NULL, thread_main, &bad[i]) != 0) {
            fprintf(stderr, "fdlink_threads: cannot start thread %d\n", i);
            return 1;
        }
    long total = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        total += bad[i];
    }
    printf("fdlink_threads: %d threads x %d rounds (parse, scan, check, header, link): %ld "
           "wrong\n",
           nthreads, rounds, total);
    result_free(&reference);
    free(decl_text);
    free(good_ptx);
    free(bad_ptx);
    free(caller_ptx);
    free(mul_ptx);
    free(mul_decl);
    return total ? 1 : 0;
}
