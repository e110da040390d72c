/*
 * The link cache: entries (a header, a checksum, sections), the memory tier (this process) and
 * the disk tier (a directory shared by processes and machines, where rename is the only atomic
 * step relied on), eviction, and the administration functions of fdlink/cache.h. The keys
 * (XXH3-128 over labelled, length-prefixed fields) are key.c's.
 *
 * Entry file, little-endian:
 *   0  magic "FDLCACHE"        8  format (u32)        12 kind (u32)
 *   16 key (16 bytes)          32 payload length (u64) 40 sections (u32)   44 flags (u32)
 *   48 XXH3-128 of bytes 0..47 and of the payload (canonical, 16 bytes)
 *   64 payload: per section a length (u64) and its bytes
 *   then, when flags has FLAG_SIGNED: HMAC-SHA256 (32 bytes) of everything before it, under the
 *   signing key (FDLINK_CACHE_KEY_FILE; sign.c)
 *
 * Global state: the memory tier, a list under one mutex (statically initialised, so nothing runs
 * at load time; fork handlers, registered once on first use, keep a child's copy unlocked). It is the in-process counterpart of the directory and holds nothing a caller
 * can observe except speed; fdl_cache_clear empties it. It also holds the process memos
 * (cacheint.h), small facts that spare a repeated link its option probe and its PTX scans. (STYLE.md allows global state only for
 * the dlopen tables; the issue asks that a process repeating a link not touch nvJitLink, which
 * needs memory that outlives a link.)
 *
 * xxHash is used header-only (XXH_INLINE_ALL): no run-time dependency.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "cacheint.h"
#include "fdlink/cache.h"
#include "fdlink/version.h"
#include "internal.h"
#include "transport.h"
#include "sign.h"

#define HEADER_SIZE 64
#define FLAG_SIGNED 1u
#define DEFAULT_MAX_SIZE ((uint64_t)512 << 20)
#define MEMORY_MAX ((uint64_t)64 << 20)
#define STATS_FILE "stats"
#define ENTRY_SUFFIX ".fdlc"
#define TEMP_MARK ".fdlc.tmp."
#define MEMO_SUFFIX ".fdlm"
/* A temporary file this old is stale whoever wrote it (a writer takes milliseconds). */
#define STALE_TEMP_SECONDS 3600

static const unsigned char MAGIC[8] = {'F', 'D', 'L', 'C', 'A', 'C', 'H', 'E'};

/* ---- little-endian ----------------------------------------------------------------------- */
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* ---- entries ----------------------------------------------------------------------------- */
void fdl__cache_sections_free(fdl__cache_sections *s)
{
    free(s->buf);
    memset(s, 0, sizeof *s);
}

static void checksum(const unsigned char *header, const unsigned char *payload, size_t n,
                     unsigned char out[16])
{
    XXH3_state_t st;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    XXH3_128bits_update(&st, header, 48);
    XXH3_128bits_update(&st, payload, n);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(&st));
    memcpy(out, c.digest, 16);
}

/* The whole entry file for these sections (malloc'ed), or NULL when out of memory. */
static unsigned char *encode(uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE],
                             const unsigned char *const *secs, const size_t *lens, size_t nsecs,
                             size_t *size)
{
    size_t payload = 0, total;
    for (size_t i = 0; i < nsecs; i++)
        if (!fdl__size_add(&payload, payload, 8) || !fdl__size_add(&payload, payload, lens[i]))
            return NULL;
    if (!fdl__size_add(&total, payload, HEADER_SIZE))
        return NULL;
    unsigned char *b = malloc(total);
    if (!b)
        return NULL;
    memset(b, 0, HEADER_SIZE);
    memcpy(b, MAGIC, 8);
    put32(b + 8, FDL__CACHE_FORMAT);
    put32(b + 12, kind);
    memcpy(b + 16, key, FDL__CACHE_KEY_SIZE);
    put64(b + 32, (uint64_t)payload);
    put32(b + 40, (uint32_t)nsecs);
    size_t at = HEADER_SIZE;
    for (size_t i = 0; i < nsecs; i++) {
        put64(b + at, (uint64_t)lens[i]);
        at += 8;
        if (lens[i])
            memcpy(b + at, secs[i], lens[i]);
        at += lens[i];
    }
    checksum(b, b + HEADER_SIZE, payload, b + 48);
    *size = total;
    return b;
}

/* Split a payload of @p nsecs sections; 0 when the lengths disagree. Takes @p buf. */
static int split(fdl__cache_sections *out, unsigned char *buf, const unsigned char *payload,
                 size_t n, uint32_t nsecs)
{
    memset(out, 0, sizeof *out);
    out->buf = buf;
    if (nsecs > FDL__CACHE_MAX_SECTIONS)
        goto bad;
    size_t at = 0;
    for (uint32_t i = 0; i < nsecs; i++) {
        if (n - at < 8)
            goto bad;
        uint64_t len = get64(payload + at);
        at += 8;
        if (len > n - at)
            goto bad;
        out->p[i] = payload + at;
        out->len[i] = (size_t)len;
        at += (size_t)len;
    }
    if (at != n)
        goto bad;
    out->n = nsecs;
    return 1;
bad:
    fdl__cache_sections_free(out);
    return 0;
}

/*
 * Check a whole entry file: "" when good (then *kind_out and the payload's place are set), else
 * the problem. @p want_key NULL accepts any key.
 */
static const char *check_any_entry(const unsigned char *b, size_t n,
                                   const unsigned char *want_key, uint32_t *kind_out, int memo,
                                   fdl__cache_payload_fn payload)
{
    if (n == 0)
        return "empty";
    if (n < HEADER_SIZE)
        return memcmp(b, MAGIC, n < 8 ? n : 8) == 0 ? "truncated header"
                                                     : "not an fdlink cache entry";
    if (memcmp(b, MAGIC, 8) != 0)
        return "not an fdlink cache entry";
    if (get32(b + 8) != FDL__CACHE_FORMAT)
        return "another format version";
    uint32_t kind = get32(b + 12);
    if (memo ? kind != FDL__CACHE_MEMO
             : kind != FDL__CACHE_LINK && kind != FDL__CACHE_NVRTC && kind != FDL__CACHE_CHECK &&
                   kind != FDL__CACHE_NVVM)
        return "unknown kind";
    if (want_key && memcmp(b + 16, want_key, FDL__CACHE_KEY_SIZE) != 0)
        return "key differs from its file name";
    uint32_t flags = get32(b + 44);
    if (flags & ~FLAG_SIGNED)
        return "unknown flags";
    if (flags & FLAG_SIGNED) {
        if (n - HEADER_SIZE < FDL__TAG_SIZE)
            return "truncated";
        n -= FDL__TAG_SIZE; /* the tag: signed_ok's */
    }
    if (get64(b + 32) != (uint64_t)(n - HEADER_SIZE))
        return get64(b + 32) > (uint64_t)(n - HEADER_SIZE) ? "truncated" : "trailing bytes";
    unsigned char sum[16];
    checksum(b, b + HEADER_SIZE, n - HEADER_SIZE, sum);
    if (memcmp(sum, b + 48, 16) != 0)
        return "checksum mismatch";
    fdl__cache_sections s;
    unsigned char *none = NULL;
    if (!split(&s, none, b + HEADER_SIZE, n - HEADER_SIZE, get32(b + 40)))
        return "section lengths disagree";
    if (!memo && payload) {
        /* the payload as what it stands for: a hit is served as an input would be accepted */
        const char *bad = payload(kind, &s);
        if (bad[0])
            return bad;
    }
    *kind_out = kind;
    return "";
}

/* ---- signatures ------------------------------------------------------------------------- */
/* The payload's length of a checked entry (without the tag of a signed one). */
static size_t payload_size(const unsigned char *b, size_t n)
{
    (void)n;
    return (size_t)get64(b + 32);
}

/*
 * Sign a whole entry in place: the flag set, the checksum redone, the tag appended (*b grows).
 * 0 when out of memory or no library computes the tag (then the entry is not to be written).
 */
static int sign_entry(const fdl__cache_use *u, unsigned char **b, size_t *n)
{
    size_t total;
    if (!fdl__size_add(&total, *n, FDL__TAG_SIZE))
        return 0;
    unsigned char *g = realloc(*b, total);
    if (!g)
        return 0;
    *b = g;
    put32(g + 44, get32(g + 44) | FLAG_SIGNED);
    checksum(g, g + HEADER_SIZE, *n - HEADER_SIZE, g + 48);
    if (!fdl__hmac_sha256(u->sign_key, u->sign_key_len, g, *n, g + *n))
        return 0;
    *n = total;
    return 1;
}

/* With a key in force, whether a checked entry carries a valid tag; without one, 1. */
static int signed_ok(const fdl__cache_use *u, const unsigned char *b, size_t n)
{
    if (!u->sign_key)
        return 1;
    if (!(get32(b + 44) & FLAG_SIGNED) || n < HEADER_SIZE + FDL__TAG_SIZE)
        return 0;
    unsigned char tag[FDL__TAG_SIZE];
    return fdl__hmac_sha256(u->sign_key, u->sign_key_len, b, n - FDL__TAG_SIZE, tag) &&
           fdl__tag_equal(tag, b + n - FDL__TAG_SIZE);
}

/* An entry proper (".fdlc"): a memo's kind is foreign there. */
static const char *check_entry(const unsigned char *b, size_t n, const unsigned char *want_key,
                               uint32_t *kind_out, fdl__cache_payload_fn payload)
{
    return check_any_entry(b, n, want_key, kind_out, 0, payload);
}

/* ---- memory tier ------------------------------------------------------------------------- */
typedef struct mem_entry {
    struct mem_entry *next;
    uint32_t kind;
    unsigned char key[FDL__CACHE_KEY_SIZE];
    uint64_t used;
    uint32_t nsecs;
    size_t size;
    unsigned char *payload;
} mem_entry;

static struct {
    pthread_mutex_t lock;
    pthread_once_t fork_once;
    mem_entry *head;
    uint64_t bytes;
    uint64_t tick;
} g_mem = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_ONCE_INIT, NULL, 0, 0};

/* A fork while another thread holds the lock must not leave the child's copy locked. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&g_mem.lock);
}

static void fork_release(void)
{
    pthread_mutex_unlock(&g_mem.lock);
}

static void register_fork(void)
{
    pthread_atfork(fork_prepare, fork_release, fork_release);
}

static void mem_lock(void)
{
    pthread_once(&g_mem.fork_once, register_fork);
    pthread_mutex_lock(&g_mem.lock);
}

static int mem_get(uint32_t kind, const unsigned char *key, fdl__cache_sections *out)
{
    int found = 0;
    mem_lock();
    for (mem_entry *e = g_mem.head; e; e = e->next) {
        if (e->kind != kind || memcmp(e->key, key, FDL__CACHE_KEY_SIZE) != 0)
            continue;
        unsigned char *copy = malloc(e->size ? e->size : 1);
        if (copy) {
            memcpy(copy, e->payload, e->size);
            found = split(out, copy, copy, e->size, e->nsecs);
            e->used = ++g_mem.tick;
        }
        break;
    }
    pthread_mutex_unlock(&g_mem.lock);
    return found;
}

/* Keep a payload (copied) in memory, dropping the least recently used beyond the bound. */
static void mem_put(uint32_t kind, const unsigned char *key, const unsigned char *payload,
                    size_t size, uint32_t nsecs)
{
    if (size > MEMORY_MAX / 4)
        return;
    mem_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->payload = malloc(size ? size : 1))) {
        free(e);
        return;
    }
    if (size)
        memcpy(e->payload, payload, size);
    e->kind = kind;
    memcpy(e->key, key, FDL__CACHE_KEY_SIZE);
    e->size = size;
    e->nsecs = nsecs;
    mem_lock();
    for (mem_entry **pp = &g_mem.head; *pp; pp = &(*pp)->next)
        if ((*pp)->kind == kind && memcmp((*pp)->key, key, FDL__CACHE_KEY_SIZE) == 0) {
            mem_entry *old = *pp; /* an identical result: keep one */
            *pp = old->next;
            g_mem.bytes -= old->size;
            free(old->payload);
            free(old);
            break;
        }
    e->used = ++g_mem.tick;
    e->next = g_mem.head;
    g_mem.head = e;
    g_mem.bytes += size;
    while (g_mem.bytes > MEMORY_MAX) {
        mem_entry **oldest = NULL;
        for (mem_entry **pp = &g_mem.head; *pp; pp = &(*pp)->next)
            if (!oldest || (*pp)->used < (*oldest)->used)
                oldest = pp;
        mem_entry *o = *oldest;
        *oldest = o->next;
        g_mem.bytes -= o->size;
        free(o->payload);
        free(o);
    }
    pthread_mutex_unlock(&g_mem.lock);
}

int fdl__cache_pmemo_known(const unsigned char key[FDL__CACHE_KEY_SIZE])
{
    int found = 0;
    mem_lock();
    for (mem_entry *e = g_mem.head; e; e = e->next)
        if (e->kind == FDL__CACHE_PMEMO && memcmp(e->key, key, FDL__CACHE_KEY_SIZE) == 0) {
            e->used = ++g_mem.tick;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&g_mem.lock);
    return found;
}

void fdl__cache_pmemo_put(const unsigned char key[FDL__CACHE_KEY_SIZE])
{
    mem_put(FDL__CACHE_PMEMO, key, NULL, 0, 0);
}

static void mem_clear(void)
{
    mem_lock();
    while (g_mem.head) {
        mem_entry *e = g_mem.head;
        g_mem.head = e->next;
        free(e->payload);
        free(e);
    }
    g_mem.bytes = 0;
    pthread_mutex_unlock(&g_mem.lock);
}

/* ---- the directory ----------------------------------------------------------------------- */
const char *fdl_cache_result_name(fdl_cache_result result)
{
    switch (result) {
    case FDL_CACHE_UNUSED: return "unused";
    case FDL_CACHE_MISS: return "miss";
    case FDL_CACHE_HIT_MEMORY: return "memory";
    case FDL_CACHE_HIT_DISK: return "disk";
    case FDL_CACHE_HIT_REMOTE: return "remote";
    }
    return "unknown";
}

int fdl_cache_enabled(void)
{
    const char *v = getenv("FDLINK_CACHE");
    if (!v)
        return 1;
    return !(strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "no") == 0 ||
             strcmp(v, "false") == 0 || strcmp(v, "OFF") == 0);
}

int fdl_cache_dir(char *buf, size_t size, fdl_error *err)
{
    if (!FDL__CHECK_ARG(buf) || size == 0)
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_dir: buf is NULL or size 0");
    buf[0] = '\0';
    const char *d = getenv("FDLINK_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (d && d[0])
        n = snprintf(buf, size, "%s", d);
    else if (xdg && xdg[0] == '/')
        n = snprintf(buf, size, "%s/fdlink", xdg);
    else if (home && home[0])
        n = snprintf(buf, size, "%s/.cache/fdlink", home);
    else
        return fdl__fail(err, FDL_ENOTFOUND, "no cache directory: set FDLINK_CACHE_DIR, "
                                             "XDG_CACHE_HOME or HOME");
    if (n < 0 || (size_t)n >= size) {
        buf[0] = '\0';
        return fdl__fail(err, FDL_ELIMIT, "the cache directory's path is longer than %zu bytes",
                         size - 1);
    }
    return FDL_OK;
}

int fdl_cache_parse_size(const char *text, uint64_t *bytes)
{
    if (!text || !bytes || !text[0] || text[0] == '-' || text[0] == '+')
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long n = strtoull(text, &end, 10);
    if (errno || end == text)
        return 0;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (*end == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end || n > (UINT64_MAX >> shift))
        return 0;
    *bytes = (uint64_t)n << shift;
    return 1;
}

/* FDLINK_CACHE_MAX_SIZE (fdl_cache_parse_size), the default when unset or empty: 1, or 0 when
 * it is set to what is no size (then *out is the default and @p err, unless NULL, says so). */
static int max_size_env(uint64_t *out, fdl_error *err)
{
    const char *v = getenv("FDLINK_CACHE_MAX_SIZE");
    *out = DEFAULT_MAX_SIZE;
    if (!v || !v[0])
        return 1;
    uint64_t n = 0;
    if (fdl_cache_parse_size(v, &n)) {
        *out = n;
        return 1;
    }
    fdl__fail(err, FDL_EINVAL, "FDLINK_CACHE_MAX_SIZE='%.40s%s' is not a size (bytes, or with K, "
              "M or G: e.g. 512M, 2G)", v, strlen(v) > 40 ? "..." : "");
    return 0;
}

static uint64_t max_size_from_env(void)
{
    uint64_t n;
    (void)max_size_env(&n, NULL);
    return n;
}

void fdl__cache_use_init(fdl__cache_use *u, fdl_cache_mode mode, const char *dir,
                         const char *remote)
{
    memset(u, 0, sizeof *u);
    u->on = mode == FDL_CACHE_ON || (mode == FDL_CACHE_AUTO && fdl_cache_enabled());
    if (!u->on)
        return;
    const char *key_file = getenv("FDLINK_CACHE_KEY_FILE");
    if (key_file && key_file[0]) {
        char why[400];
        if (!fdl__sign_key_load(key_file, &u->sign_key, &u->sign_key_len, why, sizeof why)) {
            /* neither trust unsigned entries nor write any: no cache at all */
            snprintf(u->warning, sizeof u->warning, "cache not used: %s", why);
            u->on = 0;
            return;
        }
    }
    u->remotes = fdl__remotes_new(remote ? remote : getenv("FDLINK_CACHE_REMOTE"), u->warning,
                                  sizeof u->warning);
    fdl_error bad = FDL_ERROR_INIT;
    if (!max_size_env(&u->max_size, &bad)) {
        /* a bound that cannot be read is not guessed at: no cache, said once */
        snprintf(u->warning, sizeof u->warning, "cache not used: %.400s", bad.message);
        u->on = 0;
        return;
    }
    char path[4096];
    fdl_error e = FDL_ERROR_INIT;
    if (dir && dir[0])
        u->dir = fdl__strdup(dir);
    else if (fdl_cache_dir(path, sizeof path, &e) == FDL_OK)
        u->dir = fdl__strdup(path);
    else
        snprintf(u->warning, sizeof u->warning, "cache not used: %.400s", e.message);
}

void fdl__cache_use_free(fdl__cache_use *u)
{
    free(u->dir);
    u->dir = NULL;
    fdl__remotes_free(u->remotes);
    u->remotes = NULL;
    if (u->sign_key)
        memset(u->sign_key, 0, u->sign_key_len);
    free(u->sign_key);
    u->sign_key = NULL;
}

/* The directory cannot be used: say why once, and leave it alone from now on. */
static void unusable(fdl__cache_use *u, const char *what, int errnum)
{
    if (!u->warning[0])
        snprintf(u->warning, sizeof u->warning, "cache directory %.300s %s (%s); linking "
                 "without it", u->dir, what, strerror(errnum));
    free(u->dir);
    u->dir = NULL;
}

/* mkdir -p: 1 done, 0 cannot be created (errno), -1 exists and is no folder. */
static int make_dirs(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 1;
        errno = ENOTDIR;
        return -1;
    }
    char *p = fdl__strdup(dir);
    if (!p) {
        errno = ENOMEM;
        return 0;
    }
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            free(p);
            errno = e;
            return 0;
        }
        *s = '/';
    }
    int ok = mkdir(p, 0777) == 0 || errno == EEXIST;
    int e = errno;
    free(p);
    errno = e;
    return ok;
}

static char *join(const char *dir, const char *name)
{
    fdl__buf b = {0};
    fdl__buf_printf(&b, "%s/%s", dir, name);
    if (b.oom) {
        fdl__buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* ---- the directory's files ------------------------------------------------------------------
 * Every name in a shared cache directory is hostile: anyone who can write there may have put a
 * symlink (to another user's file, to /), a FIFO, a device node, a directory or junk under any
 * name fdlink uses. So a name there is only ever looked at without following it (fstatat with
 * AT_SYMLINK_NOFOLLOW first: a device is never opened, a FIFO never waited on), opened with
 * O_NOFOLLOW and O_NONBLOCK and its type checked again on the descriptor, read within a bound;
 * written only by creating a temporary exclusively (O_EXCL | O_NOFOLLOW) and renaming it over
 * the name (which replaces a planted symlink or FIFO, never what it points to); removed only as a
 * name (unlinkat). The directory itself is the user's choice and may be reached through a symlink.
 */

/* The largest entry or memo read (a link's cubin and log, an NVRTC compile's output). */
#define ENTRY_READ_MAX ((size_t)1 << 30)

/* The cache directory opened for the *at calls; -1 with errno. */
static int dir_open(const char *dir)
{
    return open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* What stands at @p name when it is something fdlink does not touch there ("" otherwise). */
static const char *dir_foreign(int dfd, const char *name)
{
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISREG(st.st_mode))
        return "";
    return fdl__file_type_name((unsigned)st.st_mode);
}

/*
 * Open the regular file @p name of @p dfd for reading: 1 and *fd; 0 when there is none (or it
 * went away); -1 when something else is there (*what says what), which is left alone.
 */
static int dir_open_file(int dfd, const char *name, int *fd, const char **what)
{
    *fd = -1;
    *what = dir_foreign(dfd, name);
    if ((*what)[0])
        return -1;
    fdl_error e = FDL_ERROR_INIT;
    if (fdl__open_at(dfd, name, FDL__FILE_NOFOLLOW, fd, NULL, &e) == FDL_OK)
        return 1;
    *what = dir_foreign(dfd, name); /* replaced between the two looks */
    return (*what)[0] ? -1 : 0;
}

/* Read the regular file @p name of @p dfd whole (at most ENTRY_READ_MAX bytes); as dir_open_file. */
static int dir_read(int dfd, const char *name, unsigned char **out, size_t *size,
                    const char **what)
{
    *out = NULL;
    *size = 0;
    int fd, got = dir_open_file(dfd, name, &fd, what);
    if (got != 1)
        return got;
    fdl__read_limit lim = {ENTRY_READ_MAX, "the largest cache entry fdlink reads (1 GiB)"};
    char *b = NULL;
    int rc = fdl__read_fd(fd, name, 0, &lim, &b, size, NULL);
    close(fd);
    if (rc == FDL_ELIMIT) {
        *what = "a file larger than any entry";
        return -1;
    }
    if (rc != FDL_OK)
        return 0;
    *out = (unsigned char *)b;
    return 1;
}

/* The host name as it goes into temporary names: letters, digits and '-' only. */
static void host_tag(char *out, size_t size)
{
    char h[256] = "";
    if (gethostname(h, sizeof h - 1) != 0)
        h[0] = '\0';
    size_t j = 0;
    for (size_t i = 0; h[i] && j + 1 < size; i++) {
        char c = h[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-')
            out[j++] = c;
    }
    if (j == 0 && size > 1)
        out[j++] = 'h';
    out[j] = '\0';
}

/*
 * Write @p data to @p name in @p dir: a temporary created exclusively beside it (fdl__write_new_at,
 * not synced: an entry torn by a crash fails its checksum and is computed afresh), renamed over
 * the name. 1 done; 0 with errno on failure; -1 when something fdlink does not replace stands at
 * the name (a directory), *what saying what; -2 when the temporary vanished before its rename.
 */
static int dir_write(const char *dir, const char *name, const unsigned char *data, size_t n,
                     const char **what)
{
    *what = "";
    char host[64];
    host_tag(host, sizeof host);
    int ok = 0, e = 0;
    fdl__buf t = {0};
    int dfd = dir_open(dir);
    if (dfd < 0)
        return 0;
    uint64_t nonce = fdl__now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&t;
    /* a program ended while the temporary has a name leaves none behind */
    unsigned char saved[FDL__SIGSET_SIZE];
    fdl__signals_hold(saved);
    e = EEXIST;
    for (int attempt = 0; attempt < 16 && e == EEXIST; attempt++) {
        nonce = nonce * 6364136223846793005u + 1442695040888963407u;
        t.len = 0;
        fdl__buf_printf(&t, "%.32s" TEMP_MARK "%s.%ld.%08llx", name, host, (long)getpid(),
                        (unsigned long long)(nonce >> 32));
        if (t.oom) {
            e = ENOMEM;
            break;
        }
        e = fdl__write_new_at(dfd, t.data, data, n, 0);
    }
    if (e)
        goto cleanup;
    /* concurrent writers of one key write the same bytes: whichever rename lands last wins */
    if (renameat(dfd, t.data, dfd, name) != 0) {
        e = errno;
        if (e == ENOENT && faccessat(dfd, t.data, F_OK, AT_EACCESS) != 0) {
            /* someone removed the temporary meanwhile (a `cache clear` that did not wait) */
            ok = -2;
            goto cleanup;
        }
        unlinkat(dfd, t.data, 0);
        if (e == EISDIR || e == ENOTEMPTY || e == EEXIST || e == EBUSY) {
            *what = dir_foreign(dfd, name);
            ok = (*what)[0] ? -1 : 0;
        }
        goto cleanup;
    }
    ok = 1;
cleanup:
    fdl__signals_release(saved);
    close(dfd);
    fdl__buf_free(&t);
    errno = e;
    return ok;
}

/* Remove the name @p name of @p dir (never what a symlink there points to); unlink's result. */
static int dir_unlink(const char *dir, const char *name)
{
    int dfd = dir_open(dir);
    if (dfd < 0)
        return -1;
    int r = unlinkat(dfd, name, 0);
    int e = errno;
    close(dfd);
    errno = e;
    return r;
}

/* Say once, in the warning of @p u, that @p name in the directory was left alone. */
static void ignored(fdl__cache_use *u, const char *name, const char *what)
{
    if (!u->warning[0] && what[0])
        snprintf(u->warning, sizeof u->warning,
                 "cache directory %.300s: ignored %s, %s (fdlink reads and replaces only regular "
                 "files there, and follows no symlink)", u->dir, name, what);
}

/*
 * Append @p n bytes (one write(2), so that concurrent lines never mix; O_APPEND: no lock needed)
 * to @p name in the directory @p dir: never through a symlink, into a FIFO or a device, or when
 * anything but a regular file stands there. 0 done or not possible; -1 when something other than
 * a regular file is at @p name.
 */
int fdl__cache_append(const char *dir, const char *name, const void *data, size_t n)
{
    int dfd = dir_open(dir);
    if (dfd < 0)
        return 0;
    int rc = 0;
    if (dir_foreign(dfd, name)[0]) {
        rc = -1;
        goto cleanup;
    }
    int fd = openat(dfd, name,
                    O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                    0666);
    if (fd < 0) {
        rc = errno == ELOOP || errno == ENXIO ? -1 : 0;
        goto cleanup;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        ssize_t w = write(fd, data, n);
        (void)w;
    } else {
        rc = -1;
    }
    close(fd);
cleanup:
    close(dfd);
    return rc;
}

/* One event into the counters: 'h' hit, 'm' miss, 'c' corrupt, 'u' unsigned or forged. */
static int count_event(const char *dir, char event)
{
    return fdl__cache_append(dir, STATS_FILE, &event, 1);
}

static void count(fdl__cache_use *u, char event)
{
    if (event != 'h' && u->quiet_misses)
        return; /* a second look of the same link (fdl__cache_lease_take): counted once */
    if (count_event(u->dir, event) < 0)
        ignored(u, STATS_FILE, "not a regular file");
}

fdl_cache_result fdl__cache_get(fdl__cache_use *u, uint32_t kind,
                                const unsigned char key[FDL__CACHE_KEY_SIZE],
                                fdl__cache_sections *out)
{
    memset(out, 0, sizeof *out);
    if (!u->on)
        return FDL_CACHE_MISS;
    if (mem_get(kind, key, out))
        return FDL_CACHE_HIT_MEMORY;
    if (!u->dir)
        return fdl__cache_remote_get(u, kind, key, out);
    int made = make_dirs(u->dir);
    if (made != 1) {
        unusable(u, made < 0 ? "is not a directory" : "cannot be created", errno);
        return fdl__cache_remote_get(u, kind, key, out);
    }
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" ENTRY_SUFFIX, hex);
    fdl_cache_result result = FDL_CACHE_MISS;
    unsigned char *b = NULL;
    size_t n = 0;
    const char *what = "";
    int dfd = dir_open(u->dir);
    int got = dfd < 0 ? 0 : dir_read(dfd, name, &b, &n, &what);
    if (got != 1) {
        if (got < 0)
            ignored(u, name, what); /* a miss; the store renames a good entry over it */
        count(u, 'm');
        goto cleanup;
    }
    uint32_t got_kind = 0;
    const char *problem = check_entry(b, n, key, &got_kind, u->payload);
    if (!problem[0] && got_kind != kind)
        problem = "another kind";
    if (problem[0]) {
        unlinkat(dfd, name, 0); /* a bad entry is removed, counted, and computed afresh */
        count(u, 'c');
        count(u, 'm');
        goto cleanup;
    }
    if (!signed_ok(u, b, n)) {
        /* kept: a reader without the key may use it; this one links and signs its own */
        count(u, 'u');
        count(u, 'm');
        goto cleanup;
    }
    /* mark it used (least recently used go first): by name, never through a symlink */
    utimensat(dfd, name, NULL, AT_SYMLINK_NOFOLLOW);
    uint32_t nsecs = get32(b + 40);
    size_t psize = payload_size(b, n);
    mem_put(kind, key, b + HEADER_SIZE, psize, nsecs);
    if (split(out, b, b + HEADER_SIZE, psize, nsecs)) {
        b = NULL;
        result = FDL_CACHE_HIT_DISK;
        count(u, 'h');
    }
cleanup:
    if (dfd >= 0)
        close(dfd);
    free(b);
    if (result == FDL_CACHE_MISS && !u->quiet_misses) /* a second look: the directory only */
        result = fdl__cache_remote_get(u, kind, key, out);
    return result;
}

void fdl__cache_forget(const char *dir, uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE])
{
    mem_lock();
    for (mem_entry **pp = &g_mem.head; *pp; pp = &(*pp)->next)
        if ((*pp)->kind == kind && memcmp((*pp)->key, key, FDL__CACHE_KEY_SIZE) == 0) {
            mem_entry *old = *pp;
            *pp = old->next;
            g_mem.bytes -= old->size;
            free(old->payload);
            free(old);
            break;
        }
    pthread_mutex_unlock(&g_mem.lock);
    if (!dir)
        return;
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" ENTRY_SUFFIX, hex);
    dir_unlink(dir, name); /* absent already: nothing to do */
}

/* ---- memos (libmemo.c) ------------------------------------------------------------------- */
int fdl__cache_memo_get(const char *dir, const unsigned char key[FDL__CACHE_KEY_SIZE],
                        fdl__cache_sections *out)
{
    memset(out, 0, sizeof *out);
    if (!dir)
        return 0;
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" MEMO_SUFFIX, hex);
    int ok = 0;
    unsigned char *b = NULL;
    size_t n = 0;
    const char *what;
    int dfd = dir_open(dir);
    if (dfd < 0 || dir_read(dfd, name, &b, &n, &what) != 1)
        goto cleanup; /* none, or something that is no memo: the library is loaded instead */
    uint32_t kind = 0;
    if (check_any_entry(b, n, key, &kind, 1, NULL)[0]) {
        unlinkat(dfd, name, 0); /* torn or foreign: gone, and the library is loaded instead */
        goto cleanup;
    }
    if (split(out, b, b + HEADER_SIZE, n - HEADER_SIZE, get32(b + 40))) {
        b = NULL;
        ok = 1;
    }
cleanup:
    if (dfd >= 0)
        close(dfd);
    free(b);
    return ok;
}

void fdl__cache_memo_put(const char *dir, const unsigned char key[FDL__CACHE_KEY_SIZE],
                         const unsigned char *const *secs, const size_t *lens, size_t nsecs)
{
    if (!dir || make_dirs(dir) != 1)
        return;
    size_t n = 0;
    unsigned char *b = encode(FDL__CACHE_MEMO, key, secs, lens, nsecs, &n);
    if (!b)
        return;
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" MEMO_SUFFIX, hex);
    const char *what;
    dir_write(dir, name, b, n, &what); /* best effort: without a memo the library is loaded */
    free(b);
}

static int is_memo_name(const char *name)
{
    size_t n = strlen(name);
    unsigned char key[FDL__CACHE_KEY_SIZE];
    return n == 32 + strlen(MEMO_SUFFIX) && strcmp(name + 32, MEMO_SUFFIX) == 0 &&
           fdl__cache_key_from_hex(name, key);
}

/* Remove the memos of @p dir; FDL_OK or FDL_EIO. */
static int remove_memos(const char *dir, fdl_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return FDL_OK; /* scan_dir has just read it; nothing to add */
    int rc = FDL_OK;
    struct dirent *e;
    while (rc == FDL_OK && (e = readdir(d)) != NULL) {
        if (!is_memo_name(e->d_name))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
            char *path = join(dir, e->d_name);
            rc = path ? fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot remove: %s",
                                   strerror(errno))
                      : fdl__fail(err, FDL_ENOMEM, "out of memory");
            free(path);
        }
    }
    closedir(d);
    return rc;
}

/* ---- scanning the directory -------------------------------------------------------------- */
typedef struct scan_item {
    char *name;
    uint64_t size;
    int64_t mtime_ns;
    int temp;
} scan_item;

typedef struct scan {
    scan_item *v;
    size_t n, cap;
    uint64_t bytes;
    size_t entries, temps;
    size_t ignored; /* names fdlink uses that hold no regular file */
} scan;

static void scan_free(scan *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].name);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int is_entry_name(const char *name)
{
    size_t n = strlen(name);
    unsigned char key[FDL__CACHE_KEY_SIZE];
    return n == 32 + strlen(ENTRY_SUFFIX) && strcmp(name + 32, ENTRY_SUFFIX) == 0 &&
           fdl__cache_key_from_hex(name, key);
}

static int is_temp_name(const char *name)
{
    return strstr(name, TEMP_MARK) != NULL;
}

/* Entries and temporary files of @p dir; a missing directory is empty. 0 with errno. */
static int scan_dir(const char *dir, scan *s)
{
    memset(s, 0, sizeof *s);
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT;
    struct dirent *de;
    int ok = 1;
    while ((de = readdir(d))) {
        int temp = is_temp_name(de->d_name);
        if (!temp && !is_entry_name(de->d_name))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* removed meanwhile */
        if (!S_ISREG(st.st_mode)) {
            s->ignored++; /* a symlink, FIFO, device or folder under fdlink's names: left alone */
            continue;
        }
        scan_item *grown = fdl__grow(s->v, &s->cap, s->n + 1, sizeof *s->v);
        char *name = fdl__strdup(de->d_name);
        if (!grown || !name) {
            if (grown)
                s->v = grown;
            free(name);
            errno = ENOMEM;
            ok = 0;
            break;
        }
        s->v = grown;
        s->v[s->n++] = (scan_item){name, (uint64_t)st.st_size,
                                   (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
                                   temp};
        if (temp) {
            s->temps++;
        } else {
            s->entries++;
            s->bytes += (uint64_t)st.st_size;
        }
    }
    closedir(d);
    return ok;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const scan_item *)a)->name, ((const scan_item *)b)->name);
}

static int by_age(const void *a, const void *b)
{
    const scan_item *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

/* Remove least recently used entries until at most @p max bytes remain; returns how many. */
static size_t evict(const char *dir, scan *s, uint64_t max)
{
    size_t removed = 0;
    if (s->bytes <= max)
        return 0;
    qsort(s->v, s->n, sizeof *s->v, by_age);
    for (size_t i = 0; i < s->n && s->bytes > max; i++) {
        if (s->v[i].temp)
            continue;
        if (dir_unlink(dir, s->v[i].name) == 0 || errno == ENOENT) {
            s->bytes -= s->v[i].size;
            s->entries--;
            removed++;
        }
    }
    return removed;
}

/* A temporary file whose writer is gone: its process is not running here, or it is old. */
static int temp_is_stale(const scan_item *it)
{
    if ((int64_t)time(NULL) - it->mtime_ns / 1000000000 > STALE_TEMP_SECONDS)
        return 1;
    const char *m = strstr(it->name, TEMP_MARK);
    char host[64], theirs[64];
    host_tag(host, sizeof host);
    m += strlen(TEMP_MARK);
    const char *dot = strchr(m, '.');
    if (!dot || (size_t)(dot - m) >= sizeof theirs)
        return 0;
    memcpy(theirs, m, (size_t)(dot - m));
    theirs[dot - m] = '\0';
    if (strcmp(theirs, host) != 0)
        return 0; /* another machine's writer: only age tells */
    char *end = NULL;
    long pid = strtol(dot + 1, &end, 10);
    if (pid <= 0 || !end || *end != '.')
        return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

void fdl__cache_put(fdl__cache_use *u, uint32_t kind, const unsigned char key[FDL__CACHE_KEY_SIZE],
                    const unsigned char *const *secs, const size_t *lens, size_t nsecs)
{
    if (!u->on || nsecs > FDL__CACHE_MAX_SECTIONS)
        return;
    /* never stored what would not be served */
    fdl__cache_sections view;
    memset(&view, 0, sizeof view);
    view.n = nsecs;
    for (size_t i = 0; i < nsecs; i++) {
        view.p[i] = secs[i];
        view.len[i] = lens[i];
    }
    if (u->payload && u->payload(kind, &view)[0])
        return;
    size_t n = 0;
    unsigned char *b = encode(kind, key, secs, lens, nsecs, &n);
    if (!b)
        return;
    mem_put(kind, key, b + HEADER_SIZE, n - HEADER_SIZE, (uint32_t)nsecs);
    if (u->sign_key && !sign_entry(u, &b, &n))
        goto cleanup; /* never written unsigned while a key is in force */
    fdl__cache_remote_put(u, key, b, n);
    if (!u->dir)
        goto cleanup;
    if (n > u->max_size)
        goto cleanup; /* would be evicted at once */
    int made = make_dirs(u->dir);
    if (made != 1) {
        unusable(u, made < 0 ? "is not a directory" : "cannot be created", errno);
        goto cleanup;
    }
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" ENTRY_SUFFIX, hex);
    const char *what;
    int wrote = dir_write(u->dir, name, b, n, &what);
    if (wrote == -2) {
        if (!u->warning[0])
            snprintf(u->warning, sizeof u->warning,
                     "cache directory %.300s: %s not stored: its temporary file was removed "
                     "while it was written (by a cache clear or another user)", u->dir, name);
        goto cleanup;
    }
    if (wrote < 0) {
        ignored(u, name, what);
        goto cleanup;
    }
    if (!wrote) {
        int e = errno;
        unusable(u, e == ENOSPC || e == EDQUOT ? "is full" : "cannot be written to", e);
        goto cleanup;
    }
    scan s;
    if (scan_dir(u->dir, &s))
        evict(u->dir, &s, u->max_size);
    scan_free(&s);
cleanup:
    free(b);
}

const char *fdl__cache_check(const unsigned char *b, size_t n,
                             const unsigned char want_key[FDL__CACHE_KEY_SIZE],
                             fdl__cache_payload_fn payload)
{
    uint32_t kind = 0;
    return check_entry(b, n, want_key, &kind, payload);
}

int fdl__cache_entry_key(const unsigned char *b, size_t n, unsigned char key[FDL__CACHE_KEY_SIZE])
{
    if (n < HEADER_SIZE)
        return 0;
    memcpy(key, b + 16, FDL__CACHE_KEY_SIZE);
    return 1;
}

int fdl__cache_adopt(fdl__cache_use *u, uint32_t kind, const unsigned char *want_key,
                     const unsigned char *b, size_t n, fdl__cache_sections *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    uint32_t got_kind = 0;
    if (check_entry(b, n, want_key, &got_kind, u->payload)[0] || (kind && got_kind != kind))
        return 'c';
    if (!signed_ok(u, b, n))
        return 'u';
    unsigned char key[FDL__CACHE_KEY_SIZE];
    memcpy(key, b + 16, FDL__CACHE_KEY_SIZE);
    uint32_t nsecs = get32(b + 40);
    size_t psize = payload_size(b, n);
    mem_put(got_kind, key, b + HEADER_SIZE, psize, nsecs);
    if (out) {
        unsigned char *copy = malloc(psize ? psize : 1);
        if (!copy)
            return 'c';
        if (psize)
            memcpy(copy, b + HEADER_SIZE, psize);
        if (!split(out, copy, copy, psize, nsecs))
            return 'c';
    }
    if (!u->dir || n > u->max_size || make_dirs(u->dir) != 1)
        return 'w';
    char hex[33], name[64];
    fdl__cache_key_hex(key, hex);
    snprintf(name, sizeof name, "%s" ENTRY_SUFFIX, hex);
    const char *what;
    return dir_write(u->dir, name, b, n, &what) == 1 ? 'g' : 'w';
}

/* ---- administration ---------------------------------------------------------------------- */
/* The directory to administer: @p dir, or the default. */
int fdl__cache_admin_dir(const char *dir, char *buf, size_t size, fdl_error *err)
{
    if (dir && dir[0]) {
        if (strlen(dir) >= size)
            return fdl__fail(err, FDL_ELIMIT, "cache directory path too long");
        fdl__strlcpy(buf, dir, size);
        return FDL_OK;
    }
    return fdl_cache_dir(buf, size, err);
}

static int scan_or_fail(const char *dir, scan *s, fdl_error *err)
{
    if (!scan_dir(dir, s)) {
        int e = errno;
        scan_free(s);
        return fdl__error(err, FDL_EIO, dir, 0, 0, NULL, "cannot read the cache directory: %s",
                          strerror(e));
    }
    return FDL_OK;
}

/* Kind of an entry from its header ("unknown" when it cannot be read). */
static const char *entry_kind(const char *dir, const char *name)
{
    unsigned char h[16];
    const char *what;
    int fd = -1, dfd = dir_open(dir);
    ssize_t n = -1;
    if (dfd >= 0 && dir_open_file(dfd, name, &fd, &what) == 1) {
        n = read(fd, h, sizeof h);
        close(fd);
    }
    if (dfd >= 0)
        close(dfd);
    if (n != (ssize_t)sizeof h || memcmp(h, MAGIC, 8) != 0)
        return "unknown";
    uint32_t k = get32(h + 12);
    return k == FDL__CACHE_LINK    ? "link"
           : k == FDL__CACHE_NVRTC ? "nvrtc"
           : k == FDL__CACHE_CHECK ? "check"
           : k == FDL__CACHE_NVVM  ? "nvvm"
                                   : "unknown";
}

int fdl_cache_stats_get(fdl_cache_stats *out, const char *dir, fdl_error *err)
{
    if (!FDL__CHECK_ARG(out))
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_stats_get: out is NULL");
    memset(out, 0, sizeof *out);
    char d[4096];
    int rc = fdl__cache_admin_dir(dir, d, sizeof d, err);
    if (rc != FDL_OK)
        return rc;
    scan s;
    if ((rc = scan_or_fail(d, &s, err)) != FDL_OK)
        return rc;
    out->entries = s.entries;
    out->bytes = s.bytes;
    out->temporaries = s.temps;
    out->max_size = max_size_from_env();
    scan_free(&s);
    int fd = -1, dfd = dir_open(d);
    const char *what;
    if (dfd >= 0) {
        dir_open_file(dfd, STATS_FILE, &fd, &what); /* anything but a regular file: no counts */
        close(dfd);
    }
    if (fd >= 0) {
        unsigned char buf[4096];
        ssize_t n;
        while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            for (ssize_t i = 0; i < n; i++) {
                out->hits += buf[i] == 'h';
                out->misses += buf[i] == 'm';
                out->corrupt += buf[i] == 'c';
                out->unsigned_forged += buf[i] == 'u';
            }
        close(fd);
    }
    return FDL_OK;
}

int fdl_cache_list(const char *dir, fdl_cache_entry_fn fn, void *ctx, fdl_error *err)
{
    if (!FDL__CHECK_ARG(fn))
        return fdl__fail(err, FDL_EINVAL, "fdl_cache_list: fn is NULL");
    char d[4096];
    int rc = fdl__cache_admin_dir(dir, d, sizeof d, err);
    if (rc != FDL_OK)
        return rc;
    scan s;
    if ((rc = scan_or_fail(d, &s, err)) != FDL_OK)
        return rc;
    for (size_t i = 0; i < s.n; i++) {
        fdl_cache_entry e = {s.v[i].name,
                             s.v[i].temp ? "temporary" : entry_kind(d, s.v[i].name),
                             s.v[i].size, s.v[i].mtime_ns / 1000000000, NULL};
        fn(ctx, &e);
    }
    scan_free(&s);
    return FDL_OK;
}

/* Remove @p name from the directory @p d by name (never through a symlink); none is fine. */
static int remove_counter(const char *d, const char *name, fdl_error *err)
{
    if (dir_unlink(d, name) == 0 || errno == ENOENT || errno == EISDIR)
        return FDL_OK;
    int e = errno;
    char *path = join(d, name);
    int rc = path ? fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot remove: %s", strerror(e))
                  : fdl__fail(err, FDL_ENOMEM, "out of memory");
    free(path);
    return rc;
}

int fdl_cache_clear(const char *dir, size_t *removed, fdl_error *err)
{
    if (removed)
        *removed = 0;
    mem_clear();
    char d[4096];
    int rc = fdl__cache_admin_dir(dir, d, sizeof d, err);
    if (rc != FDL_OK)
        return rc;
    scan s;
    if ((rc = scan_or_fail(d, &s, err)) != FDL_OK)
        return rc;
    for (size_t i = 0; i < s.n && rc == FDL_OK; i++) {
        /* a running writer's temporary stays (it renames it into place in milliseconds): only
         * those of writers that are gone, or older than the bound, go */
        if (s.v[i].temp && !temp_is_stale(&s.v[i]))
            continue;
        if (dir_unlink(d, s.v[i].name) == 0) {
            if (removed)
                ++*removed;
        } else if (errno != ENOENT) {
            int e = errno;
            char *path = join(d, s.v[i].name);
            rc = path ? fdl__error(err, FDL_EIO, path, 0, 0, NULL, "cannot remove: %s",
                                   strerror(e))
                      : fdl__fail(err, FDL_ENOMEM, "out of memory");
            free(path);
        }
    }
    scan_free(&s);
    if (rc == FDL_OK)
        rc = remove_memos(d, err);
    /* the counters (stats, tier_remote.c's remote-stats), or whatever was planted under their
     * names (a directory stays) */
    if (rc == FDL_OK)
        rc = remove_counter(d, STATS_FILE, err);
    if (rc == FDL_OK)
        rc = remove_counter(d, FDL__REMOTE_STATS, err);
    return rc;
}

/* Remove the temporary files of writers that are gone; returns how many. */
static size_t remove_stale_temps(const char *dir, const scan *s, fdl_cache_entry_fn fn, void *ctx)
{
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->v[i].temp || !temp_is_stale(&s->v[i]))
            continue;
        if (dir_unlink(dir, s->v[i].name) == 0) {
            n++;
            if (fn) {
                fdl_cache_entry e = {s->v[i].name, "temporary", s->v[i].size,
                                     s->v[i].mtime_ns / 1000000000,
                                     "temporary file of a writer that is gone"};
                fn(ctx, &e);
            }
        }
    }
    return n;
}

int fdl_cache_prune(const char *dir, uint64_t max_size, size_t *removed, fdl_error *err)
{
    if (removed)
        *removed = 0;
    char d[4096];
    int rc = fdl__cache_admin_dir(dir, d, sizeof d, err);
    if (rc != FDL_OK)
        return rc;
    scan s;
    if ((rc = scan_or_fail(d, &s, err)) != FDL_OK)
        return rc;
    uint64_t bound = max_size;
    if (!bound && !max_size_env(&bound, err)) {
        scan_free(&s);
        return FDL_EINVAL;
    }
    size_t n = remove_stale_temps(d, &s, NULL, NULL);
    n += evict(d, &s, bound);
    scan_free(&s);
    if (removed)
        *removed = n;
    return FDL_OK;
}

int fdl__cache_verify(const char *dir, fdl__cache_payload_fn payload, fdl_cache_entry_fn fn,
                      void *ctx, size_t *bad, fdl_error *err)
{
    if (bad)
        *bad = 0;
    char d[4096];
    int rc = fdl__cache_admin_dir(dir, d, sizeof d, err);
    if (rc != FDL_OK)
        return rc;
    scan s;
    if ((rc = scan_or_fail(d, &s, err)) != FDL_OK)
        return rc;
    if (s.n > 1) /* qsort may not be given NULL, even for no elements */
        qsort(s.v, s.n, sizeof *s.v, by_name); /* reports in a stable order */
    size_t nbad = remove_stale_temps(d, &s, fn, ctx);
    for (size_t i = 0; i < s.n; i++) {
        if (s.v[i].temp)
            continue;
        unsigned char *b = NULL;
        size_t n = 0;
        const char *what;
        int dfd = dir_open(d);
        int got = dfd < 0 ? 0 : dir_read(dfd, s.v[i].name, &b, &n, &what);
        if (got != 1) {
            if (dfd >= 0)
                close(dfd);
            continue; /* removed meanwhile, or replaced by what is no entry */
        }
        unsigned char key[FDL__CACHE_KEY_SIZE];
        fdl__cache_key_from_hex(s.v[i].name, key);
        uint32_t kind = 0;
        const char *problem = check_entry(b, n, key, &kind, payload);
        if (problem[0] && unlinkat(dfd, s.v[i].name, 0) == 0) {
            nbad++;
            count_event(d, 'c');
            if (fn) {
                fdl_cache_entry e = {s.v[i].name, "unknown", s.v[i].size,
                                     s.v[i].mtime_ns / 1000000000, problem};
                fn(ctx, &e);
            }
        }
        close(dfd);
        free(b);
    }
    scan_free(&s);
    if (bad)
        *bad = nbad;
    return FDL_OK;
}
