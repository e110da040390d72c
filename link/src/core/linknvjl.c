/*
 * nvJitLink runs for a link: the option probe at create time, and one link of some of its inputs
 * (the link itself in backend_nvjl.c, the post-LTO PTX of the checks in postlto.c), with
 * both logs fetched.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "linkobj.h"
#include "formats.h"
#include "nvjl.h"

/* Fetch one of nvJitLink's logs into a fresh NUL-terminated buffer ("" when empty). */
static char *fetch_log(const fdl__nvjl *nv, nvJitLinkHandle h, int info)
{
    size_t size = 0;
    nvJitLinkResult r = info ? nv->get_info_log_size(h, &size) : nv->get_error_log_size(h, &size);
    if (r != NVJITLINK_SUCCESS)
        size = 0;
    size_t cap;
    if (!fdl__size_add(&cap, size, 1))
        return NULL;
    char *log = calloc(cap, 1);
    if (!log)
        return NULL;
    if (size) {
        r = info ? nv->get_info_log(h, log) : nv->get_error_log(h, log);
        if (r != NVJITLINK_SUCCESS)
            log[0] = '\0';
    }
    log[size] = '\0';
    return log;
}

/*
 * The probe's run (in this process, or in an isolated link's child): a handle created with the
 * link's options and dropped. Success answers one byte, as a link answers its cubin; a refusal
 * is FDL_ELINK with nvJitLink's result and its error log in @p run.
 */
static int probe_here(const fdl_link *link, int lto, int ptx, fdl__link_input *const *ins,
                      size_t nins, const unsigned char *extra, size_t extra_size,
                      fdl__nvjl_run *run, fdl_error *err)
{
    (void)lto, (void)ptx, (void)ins, (void)nins, (void)extra, (void)extra_size;
    memset(run, 0, sizeof *run);
    fdl__strv o;
    if (!fdl__link_nvjl_options(link, 0, 0, &o))
        return fdl__fail(err, FDL_ENOMEM, "out of memory building link options");
    int rc = FDL_OK;
    nvJitLinkHandle h = NULL;
    nvJitLinkResult r = link->nv->create(&h, (uint32_t)o.n, (const char **)o.v);
    run->r = r;
    if (r != NVJITLINK_SUCCESS) {
        /* the handle may hold a log even though creation failed */
        run->error = h ? fetch_log(link->nv, h, 0) : NULL;
        rc = FDL_ELINK;
    } else if ((run->out = malloc(1)) != NULL) {
        run->out[0] = 1;
        run->out_size = 1;
    } else {
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory probing the link options");
    }
    if (h)
        link->nv->destroy(&h);
    fdl__strv_free(&o);
    return rc;
}

/*
 * Let nvJitLink refuse bad options now rather than at the end (a handle that is then dropped).
 * A link that runs isolated probes isolated too: nvJitLink can abort the process while it
 * creates a handle (LLVM's "out of memory" under an address-space limit, seen on a 32-core host).
 */
int fdl__link_probe(fdl_link *link, fdl_error *err)
{
    link->nvjl_probes++;
    fdl__nvjl_run run;
    int rc = fdl__isolate_wanted(&link->opts)
                 ? fdl__isolate_nvjl_link(probe_here, link, 0, 0, NULL, 0, NULL, 0, &run, err)
                 : probe_here(link, 0, 0, NULL, 0, NULL, 0, &run, err);
    if (rc == FDL_ELINK && run.signal) {
        /* one line: the first of what it printed ("LLVM ERROR: out of memory"), if anything */
        const char *said = run.error ? run.error : "";
        static const char printed[] = "nvJitLink printed:\n"; /* isolate.c's header of its words */
        if (strncmp(said, printed, sizeof printed - 1) == 0)
            said += sizeof printed - 1;
        int len = (int)strcspn(said, "\n");
        static const char tail[] = "nvJitLink died of signal"; /* isolate.c's own last line */
        if ((size_t)len >= sizeof tail - 1 && memcmp(said, tail, sizeof tail - 1) == 0)
            len = 0; /* nvJitLink printed nothing */
        rc = fdl__fail(err, FDL_ELINK, "nvJitLink died of signal %d (%s) checking the link's "
                       "options%s%.*s", run.signal, strsignal(run.signal), len ? ": " : "", len,
                       said);
        if (err)
            err->backend_code = NVJITLINK_ERROR_INTERNAL;
    } else if (rc == FDL_ELINK && run.r != NVJITLINK_SUCCESS) {
        char headline[FDL_ERROR_MESSAGE_MAX] = "";
        char symbol[FDL_ERROR_SYMBOL_MAX];
        if (run.error)
            fdl__link_log_headline(run.error, headline, sizeof headline, symbol, sizeof symbol);
        rc = fdl__fail(err, FDL_ELINK, "nvJitLink rejected the options: %s",
                       headline[0] ? headline : fdl__nvjl_result_name((int)run.r));
        if (err)
            err->backend_code = (int)run.r;
    }
    free(run.out);
    free(run.info);
    free(run.error);
    return rc;
}

static nvJitLinkInputType nvjl_type(fdl_input_kind kind)
{
    switch (kind) {
    case FDL_KIND_PTX: return NVJITLINK_INPUT_PTX;
    case FDL_KIND_CUBIN: return NVJITLINK_INPUT_CUBIN;
    case FDL_KIND_FATBIN: return NVJITLINK_INPUT_FATBIN;
    case FDL_KIND_LTOIR: return NVJITLINK_INPUT_LTOIR;
    case FDL_KIND_OBJECT: return NVJITLINK_INPUT_OBJECT;
    case FDL_KIND_LIBRARY: return NVJITLINK_INPUT_LIBRARY;
    default: return NVJITLINK_INPUT_ANY;
    }
}

/*
 * A static library, rewritten first when nvJitLink would misread it (fdl__archive_for_linker);
 * the rewritten bytes go to *fixed, to be freed once the link is over.
 */
static int add_library(const fdl__nvjl *nv, nvJitLinkHandle h, const fdl__link_input *in,
                       unsigned char **fixed, nvJitLinkResult *r, fdl_error *err)
{
    size_t n = 0;
    int got = fdl__archive_for_linker(in->data, in->size, fixed, &n);
    if (got < 0)
        return fdl__fail(err, FDL_ENOMEM, "out of memory rewriting %s for nvJitLink", in->name);
    *r = got ? nv->add_data(h, NVJITLINK_INPUT_LIBRARY, *fixed, n, in->name)
             : nv->add_data(h, NVJITLINK_INPUT_LIBRARY, in->data, in->size, in->name);
    return FDL_OK;
}

/*
 * Link @p nins inputs (plus @p extra LTO-IR of @p extra_size bytes when not NULL) with nvJitLink.
 * @return FDL_OK; FDL_ELINK with run->r, run->refused and the logs; FDL_ENOMEM
 */
static int nvjl_link_here(const fdl_link *link, int lto, int ptx, fdl__link_input *const *ins,
                        size_t nins, const unsigned char *extra, size_t extra_size,
                        fdl__nvjl_run *run, fdl_error *err)
{
    memset(run, 0, sizeof *run);
    /* a large LTO program: partitioned by fdlink, deterministic on every core (partition.c) */
    if (lto && ptx == FDL__NVJL_CUBIN && !extra && fdl__partition_wanted(link, ins, nins)) {
        int prc = fdl__partition_link(link, ins, nins, run, err);
        if (prc != FDL__PARTITION_NO)
            return prc;
    }
    const fdl__nvjl *nv = link->nv;
    fdl__strv o;
    if (!fdl__link_nvjl_options(link, lto, ptx, &o))
        return fdl__fail(err, FDL_ENOMEM, "out of memory building link options");
    int rc = FDL_OK;
    nvJitLinkHandle h = NULL;
    /* libraries rewritten for nvJitLink, kept until the link is over */
    unsigned char **fixed = calloc(nins ? nins : 1, sizeof *fixed);
    if (!fixed) {
        fdl__strv_free(&o);
        return fdl__fail(err, FDL_ENOMEM, "out of memory");
    }
    /* the tests' stand-in for a program that -split-compile-extended kills nvJitLink on
     * (tests/link/test_link_kinds.c); such a link runs in a child process */
    const char *dies = getenv("FDL_TEST_EXTENDED_DIES");
    if (dies && strcmp(dies, "1") == 0)
        for (size_t i = 0; i < o.n; i++)
            if (strncmp(o.v[i], "-split-compile-extended", 23) == 0)
                raise(SIGSEGV);
    nvJitLinkResult r = nv->create(&h, (uint32_t)o.n, (const char **)o.v);
    for (size_t i = 0; r == NVJITLINK_SUCCESS && i < nins; i++) {
        const fdl__link_input *in = ins[i];
        if (in->kind == FDL_KIND_LIBRARY) {
            if ((rc = add_library(nv, h, in, &fixed[i], &r, err)) != FDL_OK)
                goto cleanup;
        } else {
            r = nv->add_data(h, nvjl_type(in->kind), in->data, in->size, in->name);
        }
        if (r != NVJITLINK_SUCCESS)
            run->refused = in->name;
    }
    if (r == NVJITLINK_SUCCESS && extra) {
        r = nv->add_data(h, NVJITLINK_INPUT_LTOIR, extra, extra_size, "fdlink-keep");
        if (r != NVJITLINK_SUCCESS)
            run->refused = "fdlink-keep";
    }
    if (r == NVJITLINK_SUCCESS)
        r = nv->complete(h);
    run->r = r;
    if (h) {
        run->info = fetch_log(nv, h, 1);
        run->error = fetch_log(nv, h, 0);
        if (!run->info || !run->error) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory reading the nvJitLink log");
            goto cleanup;
        }
    }
    if (r != NVJITLINK_SUCCESS) {
        rc = FDL_ELINK;
        goto cleanup;
    }
    size_t size = 0;
    ptx = ptx != FDL__NVJL_CUBIN;
    r = ptx ? nv->get_linked_ptx_size(h, &size) : nv->get_linked_cubin_size(h, &size);
    if (r == NVJITLINK_SUCCESS && size == 0)
        r = NVJITLINK_ERROR_INTERNAL;
    if (r == NVJITLINK_SUCCESS) {
        size_t cap;
        if (!fdl__size_add(&cap, size, 1) || !(run->out = malloc(cap))) {
            rc = fdl__fail(err, FDL_ENOMEM, "out of memory copying %zu bytes", size);
            goto cleanup;
        }
        r = ptx ? nv->get_linked_ptx(h, (char *)run->out) : nv->get_linked_cubin(h, run->out);
        run->out[size] = '\0';
        if (ptx)
            while (size && run->out[size - 1] == '\0')
                size--;
        run->out_size = size;
    }
    run->r = r;
    if (r != NVJITLINK_SUCCESS)
        rc = FDL_ELINK;
cleanup:
    if (h)
        nv->destroy(&h);
    for (size_t i = 0; i < nins; i++)
        free(fixed[i]);
    free(fixed);
    fdl__strv_free(&o);
    return rc;
}

/* As nvjl_link_here, in a child process when the link is isolated (isolate.c). */
int fdl__nvjl_link(const fdl_link *link, int lto, int ptx, fdl__link_input *const *ins,
                 size_t nins, const unsigned char *extra, size_t extra_size, fdl__nvjl_run *run,
                 fdl_error *err)
{
    /* every run of a link that fdlink gives -split-compile-extended is isolated (its checks'
     * too: no run of the link is ever inside nvJitLink in this process while another forks) */
    if (fdl__isolate_wanted(&link->opts) || fdl__link_extended_auto(link))
        return fdl__isolate_nvjl_link(nvjl_link_here, link, lto, ptx, ins, nins, extra, extra_size,
                                    run, err);
    return nvjl_link_here(link, lto, ptx, ins, nins, extra, extra_size, run, err);
}

/* ---- the link's run, started beside the checks ----------------------------------------------- */

struct fdl__nvjl_ahead {
    pthread_t thread;
    fdl_link *link;
    fdl__link_input **ins;
    fdl__nvjl_run run;
    int rc;
    fdl_error err;
};

static void *ahead_main(void *arg)
{
    struct fdl__nvjl_ahead *a = arg;
    const fdl_link *link = a->link;
    a->rc = fdl__nvjl_link(link, link->lto, FDL__NVJL_CUBIN, a->ins, link->ninputs, NULL, 0, &a->run,
                         &a->err);
    return NULL;
}

int fdl__nvjl_ahead_start(fdl_link *link)
{
    if (link->ahead || !link->ninputs)
        return 0;
    struct fdl__nvjl_ahead *a = calloc(1, sizeof *a);
    if (!a || !(a->ins = malloc(link->ninputs * sizeof *a->ins))) {
        free(a);
        return 0;
    }
    fdl_error none = FDL_ERROR_INIT;
    a->err = none;
    a->link = link;
    for (size_t i = 0; i < link->ninputs; i++)
        a->ins[i] = &link->inputs[i];
    if (pthread_create(&a->thread, NULL, ahead_main, a) != 0) {
        free(a->ins);
        free(a);
        return 0; /* no thread: the backend links as it always did */
    }
    link->ahead = a;
    link->ahead_runs++;
    return 1;
}

int fdl__nvjl_ahead_take(fdl_link *link, fdl__nvjl_run *run, int *rc, fdl_error *err)
{
    struct fdl__nvjl_ahead *a = link->ahead;
    if (!a)
        return 0;
    link->ahead = NULL;
    pthread_join(a->thread, NULL);
    *run = a->run;
    *rc = a->rc;
    /* the statuses that fill err (ENOMEM, EIO); FDL_ELINK's is made from the run by the caller */
    if (a->rc != FDL_OK && err)
        *err = a->err;
    free(a->ins);
    free(a);
    return 1;
}

void fdl__nvjl_ahead_discard(fdl_link *link)
{
    fdl__nvjl_run run;
    int rc;
    if (fdl__nvjl_ahead_take(link, &run, &rc, NULL))
        fdl__nvjl_run_free(&run);
}
