/*
 * The caches of compiles: NVRTC's of CUDA C inputs and libNVVM's of bitcode inputs, their keys
 * and the `#include` scanner that an NVRTC key needs (the entries are linkcache.c's
 * fdl__link_compile_get and fdl__link_compile_put).
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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cacheint.h"
#include "internal.h"
#include "libs.h"
#include "linkobj.h"

/* Field tags (four letters, for reading a key dump), as linkcache.c's. */
#define TAG(a, b, c, d) ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

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
    if (!fdl__link_compile_get(link, FDL__CACHE_NVRTC, key, out, out_size, log))
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
        fdl__link_compile_put(link, FDL__CACHE_NVRTC, key, *out, *out_size, *log);
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
    if (!fdl__link_compile_get(link, FDL__CACHE_NVVM, key, out, out_size, log))
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
        fdl__link_compile_put(link, FDL__CACHE_NVVM, key, *out, *out_size, *log);
    return rc;
}
