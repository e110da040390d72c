/* Memos of library versions: see libmemo.h for what a memo holds and when it is believed. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__GLIBC__) && defined(__x86_64__) && defined(__linux__)
#  define MEMO_SUPPORTED 1
#  include <gnu/libc-version.h>
#  include <sys/auxv.h>
#else
#  define MEMO_SUPPORTED 0
#endif

#include "cacheint.h"
#include "internal.h"
#include "libmemo.h"
#include "strv.h"

#define TAG(a, b, c, d)                                                                            \
    ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)

/* A file changed this recently before the load began may have changed under it. */
#define RACY_NS 1000000000LL

/* Sections of a memo. */
enum { SEC_PATH, SEC_FILE, SEC_VERSION, NSECS };

/* What stat says of a file or folder, as stored: absent, or device, inode, size, mtime, ctime. */
typedef struct ident {
    uint64_t present, dev, ino, size, mtime_ns, ctime_ns;
} ident;

#define IDENT_WORDS 6

int64_t fdl__libmemo_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#if MEMO_SUPPORTED

/* 1 and *out filled (present or absent); 0 when stat failed otherwise (doubt). */
static int ident_of(const char *path, ident *out)
{
    memset(out, 0, sizeof *out);
    struct stat st;
    if (stat(path, &st) != 0)
        return errno == ENOENT || errno == ENOTDIR;
    out->present = 1;
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    out->size = (uint64_t)st.st_size;
    out->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
    out->ctime_ns = (uint64_t)st.st_ctim.tv_sec * 1000000000u + (uint64_t)st.st_ctim.tv_nsec;
    return 1;
}

static void ident_put(unsigned char *p, const ident *id)
{
    const uint64_t w[IDENT_WORDS] = {id->present, id->dev, id->ino, id->size, id->mtime_ns,
                                     id->ctime_ns};
    for (int i = 0; i < IDENT_WORDS; i++)
        for (int b = 0; b < 8; b++)
            p[8 * i + b] = (unsigned char)(w[i] >> (8 * b));
}

static int ident_same(const unsigned char *p, const ident *id)
{
    unsigned char now[8 * IDENT_WORDS];
    ident_put(now, id);
    return memcmp(p, now, sizeof now) == 0;
}

/* The search path of the object that calls dlopen for fdl__dlopen_table (dlinfo's own list). */
static int search_path(fdl__strv *dirs)
{
    Dl_info info;
    struct link_map *lm = NULL;
    int (*caller)(void **, const char *const *, const char *, fdl_error *) = fdl__dlopen_first;
    void *at = NULL; /* POSIX: a data pointer can hold a function's address */
    memcpy(&at, &caller, sizeof at);
    if (!dladdr1(at, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return 0;
    void *h = lm->l_name && lm->l_name[0] ? dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD)
                                          : dlopen(NULL, RTLD_LAZY);
    if (!h)
        return 0;
    int ok = 0;
    Dl_serinfo size, *si = NULL;
    if (dlinfo(h, RTLD_DI_SERINFOSIZE, &size) != 0 || size.dls_size < sizeof size)
        goto cleanup;
    if (!(si = malloc(size.dls_size)))
        goto cleanup;
    si->dls_size = size.dls_size;
    si->dls_cnt = size.dls_cnt;
    if (dlinfo(h, RTLD_DI_SERINFO, si) != 0)
        goto cleanup;
    ok = 1;
    for (unsigned i = 0; i < si->dls_cnt && ok; i++) {
        const char *d = si->dls_serpath[i].dls_name;
        /* a relative folder (an empty LD_LIBRARY_PATH element) depends on the working folder */
        if (!d || d[0] != '/' || !fdl__strv_push(dirs, "%s", d))
            ok = 0;
    }
cleanup:
    free(si);
    dlclose(h);
    return ok;
}

/* The memo's key and the search folders. */
static int context_key(const fdl__libspec *lib, fdl__strv *dirs,
                       unsigned char key[FDL__CACHE_KEY_SIZE])
{
    memset(dirs, 0, sizeof *dirs);
    if (!search_path(dirs))
        return 0;
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_MEMO);
    if (!k)
        return 0;
    fdl__keyb_str(k, TAG('L', 'I', 'B', ' '), lib->what);
    fdl__keyb_str(k, TAG('E', 'N', 'V', 'N'), lib->env);
    fdl__keyb_str(k, TAG('E', 'N', 'V', 'V'), lib->env ? getenv(lib->env) : NULL);
    for (size_t i = 0; lib->names[i]; i++)
        fdl__keyb_str(k, TAG('T', 'R', 'Y', ' '), lib->names[i]);
    fdl__keyb_str(k, TAG('L', 'I', 'B', 'C'), gnu_get_libc_version());
    const char *platform = (const char *)getauxval(AT_PLATFORM);
    fdl__keyb_str(k, TAG('P', 'L', 'A', 'T'), platform);
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    fdl__keyb_str(k, TAG('H', 'O', 'S', 'T'), host);
    ident cache;
    if (!ident_of("/etc/ld.so.cache", &cache)) {
        fdl__keyb_free(k);
        return 0;
    }
    unsigned char c[8 * IDENT_WORDS];
    ident_put(c, &cache);
    fdl__keyb_bytes(k, TAG('L', 'D', 'S', 'C'), c, sizeof c);
    fdl__keyb_u64(k, TAG('N', 'D', 'I', 'R'), dirs->n);
    for (size_t i = 0; i < dirs->n; i++)
        fdl__keyb_str(k, TAG('D', 'I', 'R', ' '), dirs->v[i]);
    return fdl__keyb_finish(k, key);
}

/* The identity of a library for memos about it: its path, its file, its version. */
static int library_id(const char *path, const unsigned char *file, unsigned major, unsigned minor,
                      unsigned char id[FDL__LIBMEMO_ID_SIZE])
{
    fdl__keyb *k = fdl__keyb_new(FDL__CACHE_MEMO);
    if (!k)
        return 0;
    fdl__keyb_str(k, TAG('P', 'A', 'T', 'H'), path);
    fdl__keyb_bytes(k, TAG('F', 'I', 'L', 'E'), file, 8 * IDENT_WORDS);
    fdl__keyb_u64(k, TAG('M', 'A', 'J', 'O'), major);
    fdl__keyb_u64(k, TAG('M', 'I', 'N', 'O'), minor);
    return fdl__keyb_finish(k, id);
}

/*
 * Does any file stand where dlopen would look before it reached @p path? For each folder of the
 * search path, up to the one holding @p path: the names tried before @p path's own name, and
 * that name too; and in every folder, the hardware-capability subfolders glibc also searches
 * (glibc-hwcaps, tls, the legacy platform folders): none may exist, since the memo does not
 * follow them. A path given with a '/' is opened as it is, with no search. 1 when all is clear.
 */
static int nothing_before(const fdl__libspec *lib, const fdl__strv *dirs, const char *path)
{
    static const char *const caps[] = {"glibc-hwcaps", "tls", "x86_64", "haswell", "xeon_phi",
                                       "avx512_1", "i686"};
    const size_t ncaps = sizeof caps / sizeof caps[0];
    const char *override = lib->env ? getenv(lib->env) : NULL;
    const char *const only[] = {override, NULL};
    const char *const *names = override && override[0] ? only : lib->names;
    const char *base = strrchr(path, '/') + 1;
    size_t k = 0; /* the name that found @p path */
    while (names[k] && strcmp(names[k], strchr(names[k], '/') ? path : base) != 0)
        k++;
    if (!names[k])
        return 0; /* found by no name fdlink gives: doubt */
    /* a name with a '/' is opened as given; those before it were searched for in vain */
    const char *platform = (const char *)getauxval(AT_PLATFORM);
    size_t dir_len = (size_t)(base - 1 - path);
    int clear = 1, reached = 0;
    for (size_t i = 0; i < dirs->n && clear; i++) {
        const char *d = dirs->v[i];
        size_t dl = strlen(d);
        while (dl > 1 && d[dl - 1] == '/')
            dl--;
        int holds = dl == dir_len && memcmp(d, path, dl) == 0;
        for (size_t n = 0; n <= k && clear; n++) {
            if (strchr(names[n], '/') || (reached && n == k) || (holds && n == k))
                continue;
            fdl__buf p = {0};
            fdl__buf_printf(&p, "%.*s/%s", (int)dl, d, names[n]);
            struct stat st;
            clear = !p.oom && stat(p.data, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
            fdl__buf_free(&p);
        }
        for (size_t c = 0; clear && c <= ncaps; c++) {
            const char *sub = c < ncaps ? caps[c] : platform;
            if (!sub)
                continue;
            fdl__buf p = {0};
            fdl__buf_printf(&p, "%.*s/%s", (int)dl, d, sub);
            struct stat st;
            clear = !p.oom && stat(p.data, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
            fdl__buf_free(&p);
        }
        reached |= holds;
    }
    return clear;
}

/* Is one of the names dlopen would be given for @p lib loaded in this process already? */
static int already_loaded(const fdl__libspec *lib)
{
    const char *override = lib->env ? getenv(lib->env) : NULL;
    const char *const only[] = {override, NULL};
    const char *const *names = override && override[0] ? only : lib->names;
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            return 1;
        }
    }
    return 0;
}

static void mem_fill(fdl__libmemo_mem *m, unsigned major, unsigned minor,
                     const unsigned char id[FDL__LIBMEMO_ID_SIZE])
{
    int empty = 0;
    if (!atomic_compare_exchange_strong(&m->state, &empty, 1))
        return;
    m->major = major;
    m->minor = minor;
    memcpy(m->id, id, FDL__LIBMEMO_ID_SIZE);
    atomic_store(&m->state, 2);
}

int fdl__libmemo_lookup(const fdl__libspec *lib, const char *dir, unsigned *major,
                        unsigned *minor, unsigned char id[FDL__LIBMEMO_ID_SIZE])
{
    *major = *minor = 0;
    fdl__libmemo_mem *m = lib->mem;
    if (atomic_load(&m->state) == 2) {
        *major = m->major;
        *minor = m->minor;
        memcpy(id, m->id, FDL__LIBMEMO_ID_SIZE);
        return 1;
    }
    if (!dir)
        return 0;
    fdl__strv dirs;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    fdl__cache_sections s;
    memset(&s, 0, sizeof s);
    int ok = 0;
    if (!context_key(lib, &dirs, key) || !fdl__cache_memo_get(dir, key, &s))
        goto cleanup;
    if (s.n != NSECS || s.len[SEC_FILE] != 8 * IDENT_WORDS || s.len[SEC_VERSION] != 8 ||
        s.len[SEC_PATH] < 2 || s.len[SEC_PATH] > 4095 || s.p[SEC_PATH][0] != '/' ||
        memchr(s.p[SEC_PATH], '\0', s.len[SEC_PATH]))
        goto cleanup;
    char path[4096];
    memcpy(path, s.p[SEC_PATH], s.len[SEC_PATH]);
    path[s.len[SEC_PATH]] = '\0';
    ident now;
    if (!ident_of(path, &now) || !now.present || !ident_same(s.p[SEC_FILE], &now))
        goto cleanup;
    if (!nothing_before(lib, &dirs, path) || already_loaded(lib))
        goto cleanup; /* dlopen would return that one, whatever it is: load it (cheap) */
    const unsigned char *v = s.p[SEC_VERSION];
    unsigned a = (unsigned)v[0] | (unsigned)v[1] << 8 | (unsigned)v[2] << 16 |
                 (unsigned)v[3] << 24;
    unsigned b = (unsigned)v[4] | (unsigned)v[5] << 8 | (unsigned)v[6] << 16 |
                 (unsigned)v[7] << 24;
    if (!library_id(path, s.p[SEC_FILE], a, b, id))
        goto cleanup;
    *major = a;
    *minor = b;
    mem_fill(m, a, b, id);
    atomic_store(&m->recorded, 1); /* the directory holds it: nothing to write */
    ok = 1;
cleanup:
    fdl__cache_sections_free(&s);
    fdl__strv_free(&dirs);
    return ok;
}

static int racy(const ident *id, int64_t load_start_ns)
{
    return id->present && (int64_t)id->ctime_ns >= load_start_ns - RACY_NS;
}

int fdl__libmemo_record(const fdl__libspec *lib, const char *dir, const void *sym,
                        int64_t load_start_ns, unsigned major, unsigned minor,
                        unsigned char id[FDL__LIBMEMO_ID_SIZE])
{
    if (id)
        memset(id, 0, FDL__LIBMEMO_ID_SIZE);
    fdl__libmemo_mem *m = lib->mem;
    /* known in memory: done, unless the memo is still to be written (it was kept in memory) */
    if (atomic_load(&m->state) == 2 && (!dir || atomic_load(&m->recorded))) {
        if (id)
            memcpy(id, m->id, FDL__LIBMEMO_ID_SIZE);
        return m->major == major && m->minor == minor;
    }
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname || info.dli_fname[0] != '/')
        return 0;
    const char *path = info.dli_fname;
    fdl__strv dirs;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    unsigned char file[8 * IDENT_WORDS], version[8];
    int ok = 0;
    ident fid;
    if (!context_key(lib, &dirs, key) || !ident_of(path, &fid) || !fid.present ||
        racy(&fid, load_start_ns))
        goto cleanup;
    ident cache;
    if (!ident_of("/etc/ld.so.cache", &cache) || racy(&cache, load_start_ns))
        goto cleanup;
    ident_put(file, &fid);
    for (int b = 0; b < 4; b++) {
        version[b] = (unsigned char)(major >> (8 * b));
        version[4 + b] = (unsigned char)(minor >> (8 * b));
    }
    if (!nothing_before(lib, &dirs, path))
        goto cleanup;
    unsigned char lid[FDL__LIBMEMO_ID_SIZE];
    if (!library_id(path, file, major, minor, lid))
        goto cleanup;
    int written = 0;
    if (dir && atomic_compare_exchange_strong(&m->recorded, &written, 1)) {
        const unsigned char *secs[NSECS] = {(const unsigned char *)path, file, version};
        size_t lens[NSECS] = {strlen(path), sizeof file, sizeof version};
        fdl__cache_memo_put(dir, key, secs, lens, NSECS);
    }
    mem_fill(m, major, minor, lid);
    if (id)
        memcpy(id, lid, FDL__LIBMEMO_ID_SIZE);
    ok = 1;
cleanup:
    fdl__strv_free(&dirs);
    return ok;
}

#else /* !MEMO_SUPPORTED */

int fdl__libmemo_lookup(const fdl__libspec *lib, const char *dir, unsigned *major,
                        unsigned *minor, unsigned char id[FDL__LIBMEMO_ID_SIZE])
{
    (void)lib;
    (void)dir;
    (void)id;
    *major = *minor = 0;
    return 0;
}

int fdl__libmemo_record(const fdl__libspec *lib, const char *dir, const void *sym,
                        int64_t load_start_ns, unsigned major, unsigned minor,
                        unsigned char id[FDL__LIBMEMO_ID_SIZE])
{
    (void)lib;
    (void)dir;
    (void)sym;
    (void)load_start_ns;
    (void)major;
    (void)minor;
    if (id)
        memset(id, 0, FDL__LIBMEMO_ID_SIZE);
    return 0;
}

#endif
