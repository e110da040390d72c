/*
 * What a link puts into its cache key, and the conversation around fdl_link_complete (a begin:
 * the lookup and the lease; an end: the store and the release), with the entries of links and
 * of compiles (the entries themselves are cache.c's; the compiles' keys are compilecache.c's).
 *
 * A link's key: the backend and its version, the arch, the canonical nvJitLink options and the
 * modes that decide LTO and PTX output, every input's kind, origin and bytes in order, and the
 * declarations' prototypes header (so that a hit stands for a declaration check that passed).
 * Input names are in the key only when they can reach the result: with -g, -lineinfo or
 * -verbose (the info log names the inputs).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cacheint.h"
#include "elfread.h"
#include "formats.h"
#include "internal.h"
#include "libs.h"
#include "linkobj.h"
#include "nvjl.h"

/* Field tags (four letters, for reading a key dump). */
#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

void fdl__link_cache_warn(fdl_link *link)
{
    if (!link->cache.warning[0] || link->cache_warned)
        return;
    link->cache_warned = 1;
    if (!link->on_diag)
        return;
    fdl_error e = FDL_ERROR_INIT;
    fdl__error(&e, FDL_EIO, NULL, 0, 0, NULL, "%s", link->cache.warning);
    link->on_diag(link->diag_ctx, &e);
}

int fdl__link_need_nv(fdl_link *link, fdl_error *err)
{
    if (link->nv)
        return FDL_OK;
    int rc = fdl__nvjl_get(&link->nv, err);
    if (rc != FDL_OK)
        return rc;
    /* the library's own word from now on; a memo that disagrees made keys of another version */
    unsigned major = 0, minor = 0;
    int known = link->nv->version && link->nv->version(&major, &minor) == NVJITLINK_SUCCESS;
    link->nvjl_memo = 0;
    link->nvjl_known = known;
    link->nvjl_major = major;
    link->nvjl_minor = minor;
    /* in memory only: fdl__link_memos_write puts it in the cache directory */
    link->nvjl_id_ok = known && link->cache.on && fdl__nvjl_remember(NULL, link->nvjl_id);
    return FDL_OK;
}

/* The options nvJitLink checks at create time, as the probe passes them (for the memos' keys). */
static void key_probe_options(fdl__keyb *k, const fdl__strv *o)
{
    fdl__keyb_u64(k, TAG('N', 'O', 'P', 'T'), o->n);
    for (size_t i = 0; i < o->n; i++)
        fdl__keyb_str(k, TAG('O', 'P', 'T', ' '), o->v[i]);
}

/* The memo of options that a library accepted, in the cache directory: its key. */
static int probe_key(fdl_link *link, const fdl__strv *o, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    if (!link->nvjl_id_ok || !link->cache.on || !link->cache.dir)
        return 0;
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_MEMO);
    if (k) {
        fdl__keyb_str(k, TAG('P', 'R', 'O', 'B'), "nvJitLinkCreate accepts");
        fdl__keyb_bytes(k, TAG('L', 'I', 'B', 'I'), link->nvjl_id, sizeof link->nvjl_id);
        key_probe_options(k, o);
    }
    return k && fdl__keyb_finish(k, key);
}

/*
 * The same in this process (a process memo, whatever the cache mode): the library is the one
 * this process loaded, or would load, told by its version and, when known, its identity.
 */
static int probe_pkey(fdl_link *link, const fdl__strv *o, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_PMEMO);
    if (k) {
        fdl__keyb_str(k, TAG('P', 'R', 'O', 'B'), "nvJitLinkCreate accepts");
        fdl__keyb_u64(k, TAG('J', 'L', 'K', 'N'), (uint64_t)link->nvjl_known);
        fdl__keyb_u64(k, TAG('J', 'L', 'M', 'A'), link->nvjl_major);
        fdl__keyb_u64(k, TAG('J', 'L', 'M', 'I'), link->nvjl_minor);
        fdl__keyb_u64(k, TAG('L', 'I', 'B', 'K'), (uint64_t)link->nvjl_id_ok);
        if (link->nvjl_id_ok)
            fdl__keyb_bytes(k, TAG('L', 'I', 'B', 'I'), link->nvjl_id, sizeof link->nvjl_id);
        key_probe_options(k, o);
    }
    return k && fdl__keyb_finish(k, key);
}

static const char PROBE_OK[] = "accepted";

/* The memo @p key in the cache directory says that this library accepted the options. */
static int probe_memo_says(fdl_link *link, const unsigned char key[FDL__CACHE_KEY_SIZE])
{
    fdl__cache_sections s;
    if (!fdl__cache_memo_get(link->cache.dir, key, &s))
        return 0;
    int ok = s.n == 1 && s.len[0] == sizeof PROBE_OK - 1 &&
             memcmp(s.p[0], PROBE_OK, sizeof PROBE_OK - 1) == 0;
    fdl__cache_sections_free(&s);
    return ok;
}

/* The memo in the cache directory says that this library accepted these options. */
static int probe_known_on_disk(fdl_link *link, const fdl__strv *o)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    return probe_key(link, o, key) && probe_memo_says(link, key);
}

int fdl__link_probe_known(fdl_link *link)
{
    fdl__strv o;
    if (!fdl__link_nvjl_options(link, 0, 0, &o))
        return 0;
    unsigned char pkey[FDL__CACHE_KEY_SIZE];
    int have_pkey = probe_pkey(link, &o, pkey);
    int known = have_pkey && fdl__cache_pmemo_known(pkey);
    if (!known && probe_known_on_disk(link, &o)) {
        known = 1;
        if (have_pkey)
            fdl__cache_pmemo_put(pkey);
    }
    fdl__strv_free(&o);
    return known;
}

void fdl__link_probe_remember(fdl_link *link)
{
    fdl__strv o;
    if (!fdl__link_nvjl_options(link, 0, 0, &o))
        return;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    if (probe_pkey(link, &o, key))
        fdl__cache_pmemo_put(key);
    link->probe_memo_pending = probe_key(link, &o, link->probe_memo);
    fdl__strv_free(&o);
}

void fdl__link_memos_write(fdl_link *link)
{
    if (!link->cache.on)
        return;
    /* nvJitLink's version: once a process (libmemo.h), and only when this link loaded it */
    unsigned char id[FDL__LIBMEMO_ID_SIZE];
    if (link->nv && link->nvjl_id_ok)
        fdl__nvjl_remember(link->cache.dir, id);
    if (link->probe_memo_pending) {
        link->probe_memo_pending = 0;
        if (!probe_memo_says(link, link->probe_memo)) {
            const unsigned char *secs[1] = {(const unsigned char *)PROBE_OK};
            size_t lens[1] = {sizeof PROBE_OK - 1};
            fdl__cache_memo_put(link->cache.dir, link->probe_memo, secs, lens, 1);
        }
    }
}

/* The process memo that fdl_ptx_scan accepts @p in's bytes: its key. */
static int scan_pkey(const fdl__link_input *in, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_PMEMO);
    if (k) {
        fdl__keyb_str(k, TAG('S', 'C', 'A', 'N'), "fdl_ptx_scan accepts");
        fdl__keyb_bytes(k, TAG('D', 'A', 'T', 'A'), in->data, in->size);
    }
    return k && fdl__keyb_finish(k, key);
}

int fdl__link_scan_known(const fdl__link_input *in)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    return scan_pkey(in, key) && fdl__cache_pmemo_known(key);
}

void fdl__link_scan_remember(const fdl__link_input *in)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    if (scan_pkey(in, key))
        fdl__cache_pmemo_put(key);
}

/* The linker as the key sees it: nvJitLink's major.minor, the arch and the nvJitLink options in
 * canonical form (fdl__link_nvjl_options with @p lto and @p ptx); 0 when out of memory. */
static int key_linker(fdl__keyb *k, fdl_link *link, int lto, int ptx)
{
    fdl__keyb_u64(k, TAG('J', 'L', 'M', 'A'), link->nvjl_major);
    fdl__keyb_u64(k, TAG('J', 'L', 'M', 'I'), link->nvjl_minor);
    fdl__keyb_str(k, TAG('A', 'R', 'C', 'H'), link->arch);
    fdl__strv o;
    if (!fdl__link_nvjl_options(link, lto, ptx, &o))
        return 0;
    fdl__keyb_u64(k, TAG('N', 'O', 'P', 'T'), o.n);
    for (size_t i = 0; i < o.n; i++)
        fdl__keyb_str(k, TAG('O', 'P', 'T', ' '), o.v[i]);
    fdl__strv_free(&o);
    return 1;
}

/* The link's key; 0 when it cannot be made (then the cache is not used). */
static int link_key(fdl_link *link, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_LINK);
    if (!k)
        return 0;
    if (!link->nvjl_known || link->opts.time) {
        /* a version that cannot be told apart cannot be cached; nor can -time's log, which says
         * how long this run took (a hit would give an old run's times as the new one's) */
        fdl__keyb_free(k);
        return 0;
    }
    fdl__keyb_str(k, TAG('B', 'A', 'C', 'K'), fdl_link_backend_name(link->backend));
    if (!key_linker(k, link, 0, 0)) {
        fdl__keyb_free(k);
        return 0;
    }
    fdl__keyb_u64(k, TAG('L', 'T', 'O', 'M'), (uint64_t)link->opts.lto);
    fdl__keyb_u64(k, TAG('E', 'P', 'T', 'X'), (uint64_t)(link->opts.emit_ptx != 0));
    int names = link->opts.debug || link->opts.lineinfo || link->opts.verbose;
    fdl__keyb_u64(k, TAG('N', 'A', 'M', 'S'), (uint64_t)names);
    fdl__keyb_u64(k, TAG('N', 'I', 'N', 'P'), link->ninputs);
    for (size_t i = 0; i < link->ninputs; i++) {
        const fdl__link_input *in = &link->inputs[i];
        fdl__keyb_u64(k, TAG('K', 'I', 'N', 'D'), (uint64_t)in->kind);
        fdl__keyb_u64(k, TAG('F', 'C', 'U', 'D'), (uint64_t)in->from_cuda);
        fdl__keyb_u64(k, TAG('B', 'L', 'T', 'N'), (uint64_t)in->builtin);
        fdl__keyb_bytes(k, TAG('D', 'A', 'T', 'A'), in->data, in->size);
        if (names)
            fdl__keyb_str(k, TAG('N', 'A', 'M', 'E'), in->name);
    }
    fdl__keyb_u64(k, TAG('N', 'D', 'E', 'C'), link->ndecls);
    if (link->ndecls) {
        char *header = NULL;
        if (fdl__link_decls_header(link, &header, NULL) != FDL_OK) {
            fdl__keyb_free(k);
            return 0;
        }
        fdl__keyb_str(k, TAG('D', 'E', 'C', 'L'), header);
        free(header);
    }
    return fdl__keyb_finish(k, key);
}

int fdl__link_check_key(fdl_link *link, fdl__link_input *const *ins, size_t n,
                        const unsigned char *keep, size_t keep_size,
                        unsigned char key[FDL__CACHE_KEY_SIZE])
{
    if (!link->cache.on || link->backend != FDL_BACKEND_NVJITLINK)
        return 0;
    /* a check that misses runs nvJitLink: its version from itself (the error, if it cannot be
     * loaded, comes from that run) */
    if (fdl__link_need_nv(link, NULL) != FDL_OK || !link->nvjl_known)
        return 0;
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_CHECK);
    if (!k)
        return 0;
    if (!key_linker(k, link, 1, FDL__NVJL_VIEW)) {
        fdl__keyb_free(k);
        return 0;
    }
    fdl__keyb_u64(k, TAG('N', 'I', 'N', 'P'), n);
    for (size_t i = 0; i < n; i++) {
        fdl__keyb_u64(k, TAG('K', 'I', 'N', 'D'), (uint64_t)ins[i]->kind);
        fdl__keyb_bytes(k, TAG('D', 'A', 'T', 'A'), ins[i]->data, ins[i]->size);
    }
    fdl__keyb_u64(k, TAG('K', 'E', 'E', 'P'), keep != NULL);
    if (keep)
        fdl__keyb_bytes(k, TAG('K', 'B', 'I', 'N'), keep, keep_size);
    char *header = NULL;
    if (link->ndecls && fdl__link_decls_header(link, &header, NULL) != FDL_OK) {
        fdl__keyb_free(k);
        return 0;
    }
    fdl__keyb_str(k, TAG('D', 'E', 'C', 'L'), header);
    free(header);
    return fdl__keyb_finish(k, key);
}

/* Flags section: byte 0 LTO, byte 1 PTX present. */
/* SEC_WARN: the declaration check's warnings (ABI-13), added with that check; entries made
 * before have only the five before it, and are read as having none */
/* SEC_PARAMS: the kernels' parameter classes (issue 38); entries made before have none, and
 * read as links whose parameters' classes are unknown. */
enum { SEC_CUBIN, SEC_PTX, SEC_INFO, SEC_ERROR, SEC_FLAGS, SEC_WARN, SEC_PARAMS, NSECS };

static unsigned char *dup_bytes(const unsigned char *p, size_t n)
{
    unsigned char *b = malloc(n + 1);
    if (b) {
        if (n)
            memcpy(b, p, n);
        b[n] = '\0';
    }
    return b;
}

static int take_entry(fdl_link *link, fdl_cache_result r, fdl__cache_sections *s);

/* A compile's entry (NVRTC's or libNVVM's): two sections, the output and the log. */
int fdl__link_compile_get(fdl_link *link, uint32_t kind, const unsigned char *key,
                          unsigned char **out, size_t *out_size, char **log)
{
    fdl__cache_sections s;
    fdl_cache_result r = fdl__cache_get(&link->cache, kind, key, &s);
    fdl__link_cache_warn(link);
    int hit = 0;
    if (r != FDL_CACHE_MISS && s.n == 2 && s.len[0]) {
        unsigned char *o = dup_bytes(s.p[0], s.len[0]);
        char *l = (char *)dup_bytes(s.p[1], s.len[1]);
        if (o && l) {
            *out = o;
            *out_size = s.len[0];
            *log = l;
            hit = 1;
        } else {
            free(o);
            free(l);
        }
    }
    fdl__cache_sections_free(&s);
    return hit;
}

/* Store a compile's output and log (NULL: none) as fdl__link_compile_get reads them. */
void fdl__link_compile_put(fdl_link *link, uint32_t kind, const unsigned char *key,
                           const unsigned char *out, size_t out_size, const char *log)
{
    const char *l = log ? log : "";
    const unsigned char *secs[2] = {out, (const unsigned char *)l};
    size_t lens[2] = {out_size, strlen(l)};
    fdl__cache_put(&link->cache, kind, key, secs, lens, 2);
    fdl__link_cache_warn(link);
}


/* The key of the link as cache_lookup made it (its 32 hex digits kept in the link). */
static void link_key_of(const fdl_link *link, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    for (int i = 0; i < FDL__CACHE_KEY_SIZE; i++) {
        unsigned hi = (unsigned)(link->cache_key[2 * i] <= '9' ? link->cache_key[2 * i] - '0'
                                                               : link->cache_key[2 * i] - 'a' + 10);
        unsigned lo = (unsigned)(link->cache_key[2 * i + 1] <= '9'
                                     ? link->cache_key[2 * i + 1] - '0'
                                     : link->cache_key[2 * i + 1] - 'a' + 10);
        key[i] = (unsigned char)(hi << 4 | lo);
    }
}

/* How long a link that misses waits for another process linking the same key (ms). */
static long lease_timeout_ms(const fdl_link *link)
{
    if (link->opts.cache_lease_ms >= 0)
        return link->opts.cache_lease_ms;
    const char *env = getenv("FDLINK_CACHE_LEASE_MS");
    if (env && *env) {
        char *end = NULL;
        errno = 0;
        long v = strtol(env, &end, 10);
        if (errno == 0 && end && *end == '\0' && v >= 0)
            return v;
    }
    return FDL_LINK_LEASE_MS_DEFAULT;
}

/*
 * After a miss: take the key's lease (lease.c), waiting while another process links the same
 * key; 1 when that process's entry came back (the link is then as from a hit), 0 to link (with
 * the lease, when one could be had: cache_unlease gives it up).
 */
static int cache_lease(fdl_link *link)
{
    if (link->cache_result != FDL_CACHE_MISS || link->lease.fd >= 0 || link->lease.remote)
        return 0;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    link_key_of(link, key);
    fdl__cache_sections s;
    fdl_cache_result r = fdl__cache_lease_take(&link->cache, FDL__CACHE_LINK, key,
                                               lease_timeout_ms(link), &link->lease, &s);
    link->lease_waited = link->lease.waited;
    fdl__link_cache_warn(link);
    if (r == FDL_CACHE_MISS)
        return 0;
    return take_entry(link, r, &s);
}

static void cache_unlease(fdl_link *link)
{
    if (link->lease.fd < 0 && !link->lease.remote)
        return;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    link_key_of(link, key);
    fdl__cache_lease_release(&link->cache, key, &link->lease);
}

/* ---- -split-compile-extended that killed nvJitLink ---------------------------------------- */

/* The memo that -split-compile-extended killed nvJitLink on this link: @p disk's, or the
 * process's (the link's own key, whatever the cache: the memo holds with the cache off too). */
static int extended_key(fdl_link *link, int disk, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    unsigned char lk[FDL__CACHE_KEY_SIZE];
    if (!link_key(link, lk))
        return 0;
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_PMEMO);
    if (k) {
        fdl__keyb_str(k, TAG('X', 'T', 'N', 'D'),
                      disk ? "-split-compile-extended killed nvJitLink (directory)"
                           : "-split-compile-extended killed nvJitLink (process)");
        fdl__keyb_bytes(k, TAG('L', 'I', 'N', 'K'), lk, sizeof lk);
    }
    return k && fdl__keyb_finish(k, key);
}

static const char EXTENDED_DIED[] = "died";

void fdl__link_extended_recall(fdl_link *link)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    if (extended_key(link, 0, key) && fdl__cache_pmemo_known(key)) {
        link->no_extended = 1;
        return;
    }
    fdl__cache_sections s;
    if (!link->cache.on || !extended_key(link, 1, key) ||
        !fdl__cache_memo_get(link->cache.dir, key, &s))
        return;
    link->no_extended = s.n == 1 && s.len[0] == sizeof EXTENDED_DIED - 1 &&
                        memcmp(s.p[0], EXTENDED_DIED, sizeof EXTENDED_DIED - 1) == 0;
    fdl__cache_sections_free(&s);
}

void fdl__link_extended_failed(fdl_link *link, int sig)
{
    link->no_extended = 1;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    if (extended_key(link, 0, key))
        fdl__cache_pmemo_put(key);
    int kept = 0;
    if (link->cache.on && extended_key(link, 1, key)) {
        const unsigned char *secs[1] = {(const unsigned char *)EXTENDED_DIED};
        size_t lens[1] = {sizeof EXTENDED_DIED - 1};
        fdl__cache_memo_put(link->cache.dir, key, secs, lens, 1);
        kept = link->cache.dir != NULL;
    }
    fdl_error e = FDL_ERROR_INIT;
    fdl__error(&e, FDL_EIO, NULL, 0, 0, NULL,
               "nvJitLink died of signal %d (%s) with -split-compile-extended; linking again "
               "with -split-compile (%s)",
               sig, strsignal(sig),
               kept ? "remembered in the cache directory" : "remembered in this process");
    /* said as the cache's warnings are (FDL_EIO through the callback: the CLI's "warning:") */
    if (link->on_diag)
        link->on_diag(link->diag_ctx, &e);
}

const char *fdl__cache_payload_problem(uint32_t kind, const fdl__cache_sections *s)
{
    switch (kind) {
    case FDL__CACHE_LINK: {
        if (s->n != NSECS && s->n != SEC_PARAMS && s->n != SEC_WARN)
            return "a link entry without its five, six or seven sections";
        if (s->len[SEC_FLAGS] != 2 || s->p[SEC_FLAGS][0] > 1 || s->p[SEC_FLAGS][1] > 1)
            return "a link entry with bad flags";
        if (s->len[SEC_CUBIN] == 0)
            return "a link entry with an empty cubin";
        if (s->p[SEC_FLAGS][1] && s->len[SEC_PTX] == 0)
            return "a link entry whose PTX is missing";
        fdl_error e = FDL_ERROR_INIT;
        int rc = fdl__elf_check(s->p[SEC_CUBIN], s->len[SEC_CUBIN], "entry", "cubin", 0, &e);
        if (rc == FDL_OK) {
            fdl__elf elf;
            const char *why;
            if (!fdl__elf_open(&elf, s->p[SEC_CUBIN], s->len[SEC_CUBIN], &why) ||
                elf.machine != FDL__EM_CUDA)
                return "a link entry whose cubin is no CUDA ELF";
        }
        return rc == FDL_OK ? "" : rc == FDL_ENOMEM ? "out of memory validating the cubin"
                                                    : "a link entry whose cubin is malformed";
    }
    case FDL__CACHE_NVRTC:
    case FDL__CACHE_NVVM: {
        if (s->n != 2 || s->len[0] == 0)
            return "a compile entry without its output";
        fdl_input_kind k;
        fdl_error e = FDL_ERROR_INIT;
        if (fdl__detect(&k, s->p[0], s->len[0], "entry", FDL_KIND_AUTO, &e) != FDL_OK ||
            (k != FDL_KIND_LTOIR && k != FDL_KIND_PTX && k != FDL_KIND_CUBIN))
            return "a compile entry whose output is no PTX, LTO-IR or cubin";
        if (k == FDL_KIND_CUBIN &&
            fdl__elf_check(s->p[0], s->len[0], "entry", "cubin", 0, &e) != FDL_OK)
            return "a compile entry whose cubin is malformed";
        return "";
    }
    case FDL__CACHE_CHECK:
        if (s->n != 1 || s->len[0] == 0)
            return "a check entry without its PTX";
        return "";
    default:
        return "unknown kind";
    }
}

/* ---- warm deployments (issue 40) ------------------------------------------------------------ */

int fdl__link_warm_required(const fdl_link *link)
{
    if (link->opts.require_warm)
        return link->opts.require_warm > 0;
    const char *env = getenv("FDLINK_REQUIRE_WARM");
    return env && env[0] && strcmp(env, "0") != 0;
}

int fdl__link_cold(fdl_link *link, const char *what, const char *source, const char *key_hex,
                   fdl_error *err)
{
    char inputs[512] = "";
    size_t at = 0;
    for (size_t i = 0; i < link->ninputs && at + 1 < sizeof inputs; i++) {
        if (link->inputs[i].builtin)
            continue;
        int w = snprintf(inputs + at, sizeof inputs - at, "%s%s", at ? ", " : "",
                         link->inputs[i].name);
        if (w < 0 || (size_t)w >= sizeof inputs - at) {
            snprintf(inputs + (sizeof inputs - 5), 5, "...");
            break;
        }
        at += (size_t)w;
    }
    const char *by = link->opts.require_warm > 0 ? "require_warm" : "FDLINK_REQUIRE_WARM";
    if (!key_hex || !key_hex[0])
        return fdl__error(err, FDL_ENOTFOUND, source, 0, 0, NULL,
                          "%s of %s for %s needs the cache, which is not in use (off, or the "
                          "culink backend), and %s forbids making it", what,
                          source ? source : inputs[0] ? inputs : "no inputs", link->arch, by);
    return fdl__error(err, FDL_ENOTFOUND, source, 0, 0, NULL,
                      "cache miss: %s of %s for %s (key %s) is not in the cache, and %s forbids "
                      "making it", what, source ? source : inputs[0] ? inputs : "no inputs",
                      link->arch, key_hex, by);
}

/*
 * Look the link up in the cache (after devrt was added, before the checks): on a hit the link
 * holds its cubin, PTX, logs and LTO decision and is complete. @return 1 on a hit
 */
static int cache_lookup(fdl_link *link)
{
    link->cache_result = FDL_CACHE_UNUSED;
    fdl__link_cache_warn(link); /* e.g. a signing key that turned the cache off */
    fdl__link_memos_write(link);
    if (!link->cache.on || link->backend != FDL_BACKEND_NVJITLINK)
        return 0;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    if (!link_key(link, key))
        return 0;
    fdl__cache_key_hex(key, link->cache_key);
    link->cache_result = FDL_CACHE_MISS;
    fdl__cache_sections s;
    fdl_cache_result r = fdl__cache_get(&link->cache, FDL__CACHE_LINK, key, &s);
    fdl__link_cache_warn(link);
    if (r == FDL_CACHE_MISS) {
        /* the link runs nvJitLink now: when the memo's version was not the library's, the key
         * named another linker, so look again under the right one (a failed load is reported
         * by the link itself) */
        if (link->nvjl_memo) {
            unsigned major = link->nvjl_major, minor = link->nvjl_minor;
            if (fdl__link_need_nv(link, NULL) == FDL_OK &&
                (!link->nvjl_known || link->nvjl_major != major || link->nvjl_minor != minor))
                return cache_lookup(link);
        }
        return 0;
    }
    return take_entry(link, r, &s);
}

/*
 * The declaration check's warnings (tool fdlink, code ABI-13) of @p link as an entry keeps them,
 * so that a hit says them again: a record a line, `LINE COLUMN FILELEN MSGLEN CODE\n` then the
 * file and the message bytes. 0 when out of memory.
 */
static int warnings_out(const fdl_link *link, fdl__buf *b)
{
    for (size_t i = 0; i < link->diags.n; i++) {
        const fdl_diagnostic *d = &link->diags.v[i];
        if (d->severity != FDL_SEVERITY_WARNING || strcmp(d->tool, "fdlink") != 0 ||
            strcmp(d->code, "ABI-13") != 0)
            continue;
        fdl__buf_printf(b, "%u %u %zu %zu %s\n", d->line, d->column, strlen(d->file),
                        strlen(d->message), d->code);
        fdl__buf_puts(b, d->file);
        fdl__buf_puts(b, d->message);
    }
    return !b->oom;
}

/* The records warnings_out wrote, added to @p link's diagnostics; what does not parse ends it. */
static void warnings_in(fdl_link *link, const unsigned char *p, size_t n)
{
    const char *s = (const char *)p, *end = s + n;
    while (s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        char head[96], code[16];
        unsigned line, column;
        size_t flen, mlen;
        if (!nl || (size_t)(nl - s) >= sizeof head)
            return;
        memcpy(head, s, (size_t)(nl - s));
        head[nl - s] = '\0';
        if (sscanf(head, "%u %u %zu %zu %15s", &line, &column, &flen, &mlen, code) != 5)
            return;
        s = nl + 1;
        if (flen > (size_t)(end - s) || mlen > (size_t)(end - s) - flen ||
            flen >= FDL_ERROR_SOURCE_MAX * 16 || mlen >= FDL_ERROR_MESSAGE_MAX * 4)
            return;
        char *file = malloc(flen + 1), *msg = malloc(mlen + 1);
        if (file && msg) {
            memcpy(file, s, flen);
            file[flen] = '\0';
            memcpy(msg, s + flen, mlen);
            msg[mlen] = '\0';
            fdl__diags_add(&link->diags, "fdlink", file, line, column, FDL_SEVERITY_WARNING, code,
                           msg); /* out of memory: left out */
        }
        free(file);
        free(msg);
        s += flen + mlen;
    }
}

/* The link's cubin, PTX and logs from an entry @p s that @p r found. 1, or 0 (a miss). */
static int take_entry(fdl_link *link, fdl_cache_result r, fdl__cache_sections *s_)
{
    fdl__cache_sections s = *s_;
    memset(s_, 0, sizeof *s_);
    int hit = 0;
    unsigned char *cubin = NULL, *ptx = NULL, *info = NULL, *error = NULL, *params = NULL;
    if ((s.n != NSECS && s.n != SEC_PARAMS && s.n != SEC_WARN) || s.len[SEC_FLAGS] != 2 ||
        s.len[SEC_CUBIN] == 0)
        goto cleanup;
    if (s.n == NSECS && s.len[SEC_PARAMS] &&
        !(params = dup_bytes(s.p[SEC_PARAMS], s.len[SEC_PARAMS])))
        goto cleanup;
    int has_ptx = s.p[SEC_FLAGS][1] != 0;
    if (!(cubin = dup_bytes(s.p[SEC_CUBIN], s.len[SEC_CUBIN])) ||
        (has_ptx && !(ptx = dup_bytes(s.p[SEC_PTX], s.len[SEC_PTX]))) ||
        !(info = dup_bytes(s.p[SEC_INFO], s.len[SEC_INFO])) ||
        !(error = dup_bytes(s.p[SEC_ERROR], s.len[SEC_ERROR])))
        goto cleanup;
    if (!fdl__link_set_log(link, 1, (char *)info)) {
        info = NULL;
        goto cleanup;
    }
    info = NULL;
    if (!fdl__link_set_log(link, 0, (char *)error)) {
        error = NULL;
        goto cleanup;
    }
    error = NULL;
    link->cubin = cubin;
    link->cubin_size = s.len[SEC_CUBIN];
    cubin = NULL;
    if (has_ptx) {
        link->ptx = (char *)ptx;
        link->ptx_size = s.len[SEC_PTX];
        ptx = NULL;
    }
    if (params) {
        free(link->params);
        link->params = (char *)params;
        link->params_size = s.len[SEC_PARAMS];
        params = NULL;
    }
    link->lto = s.p[SEC_FLAGS][0] != 0;
    link->cache_result = r;
    if (s.n > SEC_WARN)
        warnings_in(link, s.p[SEC_WARN], s.len[SEC_WARN]);
    hit = 1;
cleanup:
    if (!hit)
        link->cache_result = FDL_CACHE_MISS;
    free(cubin);
    free(ptx);
    free(info);
    free(error);
    free(params);
    fdl__cache_sections_free(&s);
    return hit;
}

/* Store the completed link's result under the key that cache_lookup computed. */
static void cache_store(fdl_link *link)
{
    if (link->cache_result != FDL_CACHE_MISS)
        return;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    link_key_of(link, key);
    unsigned char flags[2] = {(unsigned char)(link->lto != 0), (unsigned char)(link->ptx != NULL)};
    /* as fdl_link_info_log and fdl_link_error_log say them (link.c sits above this file) */
    const char *info = link->info_log ? link->info_log : "";
    const char *error = link->error_log ? link->error_log : "";
    fdl__buf warn = {0};
    int ok = warnings_out(link, &warn); /* out of memory: not kept, rather than without them */
    const unsigned char *secs[NSECS] = {link->cubin, (const unsigned char *)link->ptx,
                                        (const unsigned char *)info,
                                        (const unsigned char *)error, flags,
                                        (const unsigned char *)(warn.data ? warn.data : ""),
                                        (const unsigned char *)(link->params ? link->params : "")};
    size_t lens[NSECS] = {link->cubin_size, link->ptx ? link->ptx_size : 0, strlen(info),
                          strlen(error), sizeof flags, warn.len,
                          link->params ? link->params_size : 0};
    if (ok)
        fdl__cache_put(&link->cache, FDL__CACHE_LINK, key, secs, lens, NSECS);
    fdl__buf_free(&warn);
    fdl__link_cache_warn(link);
}

int fdl__link_cache_begin(fdl_link *link, int *hit, fdl_error *err)
{
    *hit = cache_lookup(link);
    /* a warm deployment (issue 40): a miss is an error, before any lease or link */
    if (!*hit && fdl__link_warm_required(link))
        return fdl__link_cold(link, "the link", NULL, link->cache_key, err);
    /* a miss: when another process links the same key now, wait for its entry (a lease) */
    if (!*hit)
        *hit = cache_lease(link);
    return FDL_OK;
}

void fdl__link_cache_end(fdl_link *link, int rc)
{
    if (rc == FDL_OK)
        cache_store(link);
    cache_unlease(link); /* after the store: a waiter finds the entry */
}
