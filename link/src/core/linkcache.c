/*
 * What a link and an NVRTC compile put into their cache keys, and the lookups and stores around
 * fdl_link_complete and CUDA C inputs (the entries themselves are cache.c's).
 *
 * A link's key: the backend and its version, the arch, the canonical nvJitLink options and the
 * modes that decide LTO and PTX output, every input's kind, origin and bytes in order, and the
 * declarations' prototypes header (so that a hit stands for a declaration check that passed).
 * Input names are in the key only when they can reach the result: with -g, -lineinfo or
 * -verbose (the info log names the inputs).
 *
 * An NVRTC compile's key: NVRTC's version, the source's name and bytes, every option, the
 * in-memory headers, and every file that an `#include`, `#include_next` or `__has_include` of
 * the source or of such a file could name, looked up through the includer's folder, the working
 * folder and the -I folders, conditionals ignored: each existing candidate by path and content,
 * the absent ones by their absence (a header created later changes the key). A source with an
 * include that is not a literal name (a macro) is not cached.
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

/*
 * A compile's entry (NVRTC's or libNVVM's): two sections, the output and the log. On a hit,
 * *out (its size in *out_size) and *log (NUL-terminated, possibly empty) are owned copies.
 * @return 1 hit, 0 miss (or out of memory)
 */
static int compile_get(fdl_link *link, uint32_t kind, const unsigned char *key,
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

/* Store a compile's output and log (NULL: none) as compile_get reads them. */
static void compile_put(fdl_link *link, uint32_t kind, const unsigned char *key,
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

/* ---- NVRTC ------------------------------------------------------------------------------- */
#define MAX_INCLUDE_FILES 4096

typedef struct inc_state {
    fdl__keyb *k;
    fdl__strv dirs;    /* -I folders, in order */
    fdl__strv seen;    /* files scanned */
    fdl__strv queue_path;
    char **queue_text; /* parallel to queue_path (owned) */
    size_t *queue_size;
    size_t nqueue, capqueue;
    int ok;
    unsigned line;     /* of the include being resolved, in the file being scanned */
    fdl_error refused; /* an include that names what is no file (a FIFO would hang NVRTC) */
} inc_state;

static int seen_before(inc_state *st, const char *path)
{
    for (size_t i = 0; i < st->seen.n; i++)
        if (strcmp(st->seen.v[i], path) == 0)
            return 1;
    return 0;
}

static int push_file(inc_state *st, const char *path, char *text, size_t size)
{
    if (st->seen.n >= MAX_INCLUDE_FILES || !fdl__strv_push(&st->seen, path, NULL))
        return 0;
    if (st->nqueue == st->capqueue) {
        size_t cap = st->capqueue ? st->capqueue * 2 : 16;
        char **t = realloc(st->queue_text, cap * sizeof *t);
        if (!t)
            return 0;
        st->queue_text = t;
        size_t *z = realloc(st->queue_size, cap * sizeof *z);
        if (!z)
            return 0;
        st->queue_size = z;
        st->capqueue = cap;
    }
    if (!fdl__strv_push(&st->queue_path, path, NULL))
        return 0;
    st->queue_text[st->nqueue] = text;
    st->queue_size[st->nqueue] = size;
    st->nqueue++;
    return 1;
}

/* The folder part of @p path ("." when none), malloc'ed. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return fdl__strdup(".");
    if (slash == path)
        return fdl__strdup("/");
    return fdl__strndup(path, (size_t)(slash - path));
}

/* Every candidate of one include name, into the key; existing ones queued for scanning. */
static void resolve(inc_state *st, const char *name, size_t n, int quoted, const char *includer)
{
    char *inc = fdl__strndup(name, n);
    char *own = includer ? dir_of(includer) : NULL;
    if (!inc || (includer && !own)) {
        st->ok = 0;
        goto cleanup;
    }
    fdl__keyb_str(st->k, TAG('I', 'N', 'C', 'N'), inc);
    fdl__keyb_u64(st->k, TAG('I', 'N', 'C', 'Q'), (uint64_t)quoted);
    size_t ncand = st->dirs.n + 2;
    int found = 0; /* an earlier candidate is the one NVRTC opens */
    for (size_t c = 0; c < ncand && st->ok; c++) {
        const char *dir;
        if (c == 0)
            dir = quoted ? own : NULL;
        else if (c == 1)
            dir = quoted ? "." : NULL;
        else
            dir = st->dirs.v[c - 2];
        if (!dir)
            continue;
        fdl__buf p = {0};
        if (inc[0] == '/')
            fdl__buf_puts(&p, inc);
        else
            fdl__buf_printf(&p, "%s/%s", dir, inc);
        if (p.oom) {
            st->ok = 0;
            fdl__buf_free(&p);
            break;
        }
        char *text = NULL;
        size_t size = 0;
        struct stat sb;
        int there = stat(p.data, &sb) == 0;
        if (!there && errno != ENOENT && errno != ENOTDIR)
            st->ok = 0; /* there, perhaps, but unreadable: what NVRTC sees cannot be told */
        else if (there && S_ISDIR(sb.st_mode))
            there = 0; /* a folder of that name is nothing NVRTC includes */
        else if (there && !S_ISREG(sb.st_mode) && !found && !st->refused.code) {
            /* NVRTC would open it and, for a FIFO, wait for ever: refused before it runs */
            fdl__error(&st->refused, FDL_EIO, includer ? includer : "", st->line, 0, NULL,
                       "cannot include %s: it is %s, not a file", p.data,
                       fdl__file_type_name((unsigned)sb.st_mode));
            st->ok = 0;
            there = 0;
        }
        if (there && fdl__read_file(p.data, &text, &size, NULL) != FDL_OK) {
            st->ok = 0;
            there = 0;
        }
        if (there) {
            found = 1;
            fdl__keyb_str(st->k, TAG('I', 'N', 'C', 'P'), p.data);
            fdl__keyb_bytes(st->k, TAG('I', 'N', 'C', 'C'), text, size);
            if (!seen_before(st, p.data)) {
                if (!push_file(st, p.data, text, size)) {
                    st->ok = 0;
                    free(text);
                }
            } else {
                free(text);
            }
        }
        fdl__buf_free(&p);
        if (inc[0] == '/')
            break;
    }
cleanup:
    free(inc);
    free(own);
}

static const char *skip_blank(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* After `#include` or `__has_include(`: a literal name, or st->ok = 0. */
static void literal_name(inc_state *st, const char *p, const char *end, const char *includer)
{
    p = skip_blank(p, end);
    if (p < end && (*p == '"' || *p == '<')) {
        char close = *p == '"' ? '"' : '>';
        const char *q = memchr(p + 1, close, (size_t)(end - p - 1));
        if (q && q > p + 1) {
            resolve(st, p + 1, (size_t)(q - p - 1), close == '"', includer);
            return;
        }
    }
    st->ok = 0; /* a macro include: what it names cannot be known without preprocessing */
}

/* Every include of one file, conditionals ignored. */
static void scan_includes(inc_state *st, const char *text, size_t size, const char *includer)
{
    const char *end = text + size;
    st->line = 0;
    const char *line = text;
    while (line < end && st->ok) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *le = nl ? nl : end;
        const char *p = skip_blank(line, le);
        st->line++;
        if (p < le && *p == '#') {
            p = skip_blank(p + 1, le);
            if ((size_t)(le - p) >= 12 && memcmp(p, "include_next", 12) == 0)
                literal_name(st, p + 12, le, includer);
            else if ((size_t)(le - p) >= 7 && memcmp(p, "include", 7) == 0)
                literal_name(st, p + 7, le, includer);
            else if ((size_t)(le - p) >= 6 && memcmp(p, "import", 6) == 0)
                literal_name(st, p + 6, le, includer);
        }
        /* __has_include anywhere on the line */
        for (const char *h = line; st->ok && h < le;) {
            const char *m = memchr(h, '_', (size_t)(le - h));
            if (!m)
                break;
            if ((size_t)(le - m) >= 13 && memcmp(m, "__has_include", 13) == 0) {
                const char *q = m + 13;
                if ((size_t)(le - q) >= 5 && memcmp(q, "_next", 5) == 0)
                    q += 5;
                q = skip_blank(q, le);
                if (q < le && *q == '(')
                    literal_name(st, q + 1, le, includer);
                else
                    st->ok = 0;
                h = q;
            } else {
                h = m + 1;
            }
        }
        line = nl ? nl + 1 : end;
    }
}

/* The compile's key; 0 when it must not be cached. */
static int nvrtc_key(int major, int minor, const char *source, size_t size, const char *name,
                     const char *const *options, const fdl__nvrtc_header *headers,
                     size_t nheaders, int ltoir, unsigned char key[FDL__CACHE_KEY_SIZE],
                     fdl_error *refused)
{
    inc_state st;
    memset(&st, 0, sizeof st);
    st.ok = 1;
    st.k = fdl__keyb_new(FDL__CACHE_NVRTC);
    if (!st.k)
        return 0;
    fdl__keyb_u64(st.k, TAG('N', 'V', 'M', 'A'), (uint64_t)major);
    fdl__keyb_u64(st.k, TAG('N', 'V', 'M', 'I'), (uint64_t)minor);
    fdl__keyb_str(st.k, TAG('N', 'A', 'M', 'E'), name);
    fdl__keyb_bytes(st.k, TAG('S', 'R', 'C', ' '), source, size);
    fdl__keyb_u64(st.k, TAG('L', 'T', 'O', 'I'), (uint64_t)ltoir);
    for (size_t i = 0; options && options[i]; i++) {
        fdl__keyb_str(st.k, TAG('O', 'P', 'T', ' '), options[i]);
        if (strncmp(options[i], "-I", 2) == 0 && !fdl__strv_push(&st.dirs, options[i] + 2, NULL))
            st.ok = 0;
        if (strncmp(options[i], "--include-path=", 15) == 0 ||
            strncmp(options[i], "-include", 8) == 0 || strcmp(options[i], "-I") == 0)
            st.ok = 0; /* spellings the scanner does not follow */
    }
    fdl__keyb_u64(st.k, TAG('N', 'H', 'D', 'R'), nheaders);
    for (size_t i = 0; i < nheaders; i++) {
        fdl__keyb_str(st.k, TAG('H', 'N', 'A', 'M'), headers[i].name);
        fdl__keyb_str(st.k, TAG('H', 'T', 'X', 'T'), headers[i].text);
    }
    scan_includes(&st, source, size, name);
    for (size_t q = 0; q < st.nqueue && st.ok; q++)
        scan_includes(&st, st.queue_text[q], st.queue_size[q], st.queue_path.v[q]);
    for (size_t q = 0; q < st.nqueue; q++)
        free(st.queue_text[q]);
    free(st.queue_text);
    free(st.queue_size);
    fdl__strv_free(&st.queue_path);
    fdl__strv_free(&st.seen);
    fdl__strv_free(&st.dirs);
    if (st.refused.code)
        *refused = st.refused;
    if (!st.ok) {
        fdl__keyb_free(st.k);
        return 0;
    }
    return fdl__keyb_finish(st.k, key);
}

/* Key the compile with NVRTC @p major.@p minor and look it up: 1 on a hit (*out, *log set). */
static int nvrtc_lookup(fdl_link *link, int major, int minor, const char *source, size_t size,
                        const char *name, const char *const *options,
                        const fdl__nvrtc_header *headers, size_t nheaders, int ltoir,
                        unsigned char key[FDL__CACHE_KEY_SIZE], int *keyed, unsigned char **out,
                        size_t *out_size, char **log, fdl_error *refused)
{
    *keyed = nvrtc_key(major, minor, source, size, name, options, headers, nheaders, ltoir, key,
                       refused);
    if (!*keyed)
        return 0;
    if (!compile_get(link, FDL__CACHE_NVRTC, key, out, out_size, log))
        return 0;
    link->nvrtc_hits++;
    return 1;
}

int fdl__link_nvrtc_cached(fdl_link *link, unsigned char **out, size_t *out_size, char **log,
                           const char *source, size_t size, const char *name,
                           const char *const *options, const fdl__nvrtc_header *headers,
                           size_t nheaders, int ltoir, fdl_error *err)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    int keyed = 0, major = 0, minor = 0;
    fdl_error refused = FDL_ERROR_INIT;
    if (link->cache.on) {
        fdl__link_memos_write(link);
        /* NVRTC's version from its memo when there is one, so that a hit does not load NVRTC */
        int memo = fdl__nvrtc_quick_version(link->cache.dir, &major, &minor);
        if (memo || fdl__nvrtc_remember(link->cache.dir, &major, &minor) == FDL_OK) {
            if (nvrtc_lookup(link, major, minor, source, size, name, options, headers, nheaders,
                             ltoir, key, &keyed, out, out_size, log, &refused))
                return FDL_OK;
            /* a miss compiles, so NVRTC is loaded now; when the memo's version is not its own,
             * the key named another compiler: look again under the right one (a failed load is
             * the compile's to report) */
            int real_major = 0, real_minor = 0;
            if (memo && keyed) {
                if (fdl__nvrtc_remember(link->cache.dir, &real_major, &real_minor) != FDL_OK)
                    keyed = 0;
                else if ((real_major != major || real_minor != minor) &&
                         nvrtc_lookup(link, real_major, real_minor, source, size, name, options,
                                      headers, nheaders, ltoir, key, &keyed, out, out_size, log,
                                      &refused))
                    return FDL_OK;
            }
        }
    }
    if (!keyed && !refused.code) {
        /* no key was made (no cache, or not cacheable): the include scan alone, so that what
         * NVRTC would open and hang on (a FIFO among the headers) is refused all the same */
        unsigned char unused[FDL__CACHE_KEY_SIZE];
        (void)nvrtc_key(0, 0, source, size, name, options, headers, nheaders, ltoir, unused,
                        &refused);
    }
    if (refused.code) {
        if (err)
            *err = refused;
        return refused.code;
    }
    if (fdl__link_warm_required(link)) {
        char hex[33] = "";
        if (keyed)
            fdl__cache_key_hex(key, hex);
        return fdl__link_cold(link, "the NVRTC compile", name, hex, err);
    }
    int rc = fdl__nvrtc_compile(out, out_size, log, source, size, name, options, headers,
                                nheaders, ltoir, err);
    link->nvrtc_compiled++;
    if (rc == FDL_OK && keyed)
        compile_put(link, FDL__CACHE_NVRTC, key, *out, *out_size, *log);
    return rc;
}

/* ---- libNVVM compiles of bitcode inputs (issue 34) ------------------------------------------- */

/*
 * The compile's key: libNVVM's version, the input's name (libNVVM names the module after it) and
 * bytes, and what fdl__nvvm_compile passes as options: the architecture and whether the output
 * is LTO-IR (-gen-lto) or PTX. libNVVM's LTO-IR differs from run to run for the same input
 * (it is encrypted), so without this entry no link with a bitcode input would ever hit the
 * link cache: the cached bytes make the link's key repeatable too.
 */
static int nvvm_key(int major, int minor, const unsigned char *bc, size_t size, const char *name,
                    const char *arch, int ltoir, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_NVVM);
    if (!k)
        return 0;
    fdl__keyb_u64(k, TAG('N', 'V', 'V', 'A'), (uint64_t)major);
    fdl__keyb_u64(k, TAG('N', 'V', 'V', 'I'), (uint64_t)minor);
    fdl__keyb_str(k, TAG('N', 'A', 'M', 'E'), name);
    fdl__keyb_bytes(k, TAG('B', 'C', 'O', 'D'), bc, size);
    fdl__keyb_str(k, TAG('A', 'R', 'C', 'H'), arch);
    fdl__keyb_u64(k, TAG('L', 'T', 'O', 'I'), (uint64_t)ltoir);
    return fdl__keyb_finish(k, key);
}

/* Key the compile with libNVVM @p major.@p minor and look it up: 1 on a hit (*out, *log set). */
static int nvvm_lookup(fdl_link *link, int major, int minor, const unsigned char *bc, size_t size,
                       const char *name, const char *arch, int ltoir,
                       unsigned char key[FDL__CACHE_KEY_SIZE], int *keyed, unsigned char **out,
                       size_t *out_size, char **log)
{
    *keyed = nvvm_key(major, minor, bc, size, name, arch, ltoir, key);
    if (!*keyed)
        return 0;
    if (!compile_get(link, FDL__CACHE_NVVM, key, out, out_size, log))
        return 0;
    if (!(*log)[0]) { /* libNVVM said nothing: no log, as from a compile */
        free(*log);
        *log = NULL;
    }
    link->nvvm_hits++;
    return 1;
}

int fdl__link_nvvm_cached(fdl_link *link, unsigned char **out, size_t *out_size, char **log,
                          const unsigned char *bc, size_t size, const char *name,
                          const char *arch, int ltoir, fdl_error *err)
{
    unsigned char key[FDL__CACHE_KEY_SIZE];
    int keyed = 0, major = 0, minor = 0;
    *out = NULL;
    *out_size = 0;
    *log = NULL;
    if (link->cache.on) {
        fdl__link_memos_write(link);
        /* libNVVM's version from its memo when there is one, so that a hit does not load it */
        int memo = fdl__nvvm_quick_version(link->cache.dir, &major, &minor);
        if (memo || fdl__nvvm_remember(link->cache.dir, &major, &minor) == FDL_OK) {
            if (nvvm_lookup(link, major, minor, bc, size, name, arch, ltoir, key, &keyed, out,
                            out_size, log))
                return FDL_OK;
            /* a miss compiles, so libNVVM is loaded now; when the memo's version is not its
             * own, the key named another libNVVM: look again under the right one */
            int real_major = 0, real_minor = 0;
            if (memo && keyed) {
                if (fdl__nvvm_remember(link->cache.dir, &real_major, &real_minor) != FDL_OK)
                    keyed = 0;
                else if ((real_major != major || real_minor != minor) &&
                         nvvm_lookup(link, real_major, real_minor, bc, size, name, arch, ltoir,
                                     key, &keyed, out, out_size, log))
                    return FDL_OK;
            }
        }
    }
    if (fdl__link_warm_required(link)) {
        char hex[33] = "";
        if (keyed)
            fdl__cache_key_hex(key, hex);
        return fdl__link_cold(link, "the libNVVM compile", name, hex, err);
    }
    int rc = fdl__nvvm_compile(out, out_size, log, bc, size, name, arch, ltoir, err);
    link->nvvm_compiled++;
    if (rc == FDL_OK && keyed)
        compile_put(link, FDL__CACHE_NVVM, key, *out, *out_size, *log);
    return rc;
}
