/*
 * The partitioned link of a large LTO program (issue 41): nvJitLink's own splits are either
 * deterministic and slow (-split-compile: the optimiser mostly on one thread) or fast and not
 * deterministic (-split-compile-extended: its partitions laid out as they finish, and at 256
 * functions different code from run to run). fdlink partitions the program itself:
 *
 *   1. one LTO-to-PTX run at -O0 (cheap) lists the program's kernels and variables;
 *   2. the kernels, in that order, are cut into FDL__PARTITION_GROUPS groups of consecutive
 *      kernels (a function of the kernel list alone, never of the job count); each group's
 *      kernels are optimised by one LTO-to-PTX run of their own (-kernels-used, and every variable
 *      kept as a whole-program link keeps it: -variables-used with every first character, so that
 *      no __constant__ is folded and no variable dropped), the runs spread over the link's
 *      threads (the job slots, --jobs, the memory budget);
 *   3. the groups' PTX is merged, in group order, into one module: every kernel once (a run
 *      given k1 keeps k10 too: kept where it was asked for), every variable that has one
 *      definition in the program defined once and shared by all groups, each group's internal
 *      functions (and copies of the toolkit's read-only tables) renamed apart;
 *   4. one nvJitLink run assembles that module, ptxas sharing its functions out among threads
 *      with -split-compile=0 always (the same command line, so the same .note.nv.tkinfo, whatever
 *      the job count; the threads held to the job count by the CPU affinity of the run).
 *
 * The result is byte-identical from run to run and over job counts. Its code is not raw
 * nvJitLink's byte for byte (the module is assembled as relocatable PTX, and each group is
 * optimised on its own), its behaviour is: bench/large/run.sh runs every kernel of both.
 * Anything the merge cannot place for certain (debug sections, texture references, an internal
 * variable whose name more than one translation unit's copy could carry) links as before.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "linkobj.h"
#include "nvjl.h"

/* ---- PTX at module scope -------------------------------------------------------------------- */

enum { IT_HEADER, IT_ENTRY, IT_FUNC, IT_VAR, IT_OTHER };
enum { LK_INTERNAL, LK_VISIBLE, LK_EXTERN, LK_WEAK };

typedef struct item {
    const char *start, *end; /* the text, its ';' or '}' included */
    int type, linkage, body, init, shared_space;
    const char *name;        /* into the text; name_len bytes */
    size_t name_len;
} item;

typedef struct items {
    item *v;
    size_t n, cap;
} items;

static int is_id_start(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}

static int is_id(int c)
{
    return is_id_start(c) || (c >= '0' && c <= '9');
}

static int word_is(const char *p, const char *end, const char *w)
{
    size_t n = strlen(w);
    return (size_t)(end - p) >= n && memcmp(p, w, n) == 0 && (p + n == end || !is_id(p[n]));
}

/* Skip blanks and comments from @p p; @return the first other byte, or end. */
static const char *skip_space(const char *p, const char *end)
{
    while (p < end) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            p++;
        } else if (p + 1 < end && p[0] == '/' && p[1] == '/') {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            p = nl ? nl + 1 : end;
        } else if (p + 1 < end && p[0] == '/' && p[1] == '*') {
            const char *q = p + 2;
            while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
                q++;
            p = q + 1 < end ? q + 2 : end;
        } else {
            break;
        }
    }
    return p;
}

/* The end of one module-scope statement from @p p: its ';' at depth 0, or its body's '}'. */
static const char *statement_end(const char *p, const char *end, int *body)
{
    const char *start = p;
    int depth = 0;
    *body = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
        } else if (c == '/' && p + 1 < end && (p[1] == '/' || p[1] == '*')) {
            p = skip_space(p, end);
            continue;
        } else if (c == '(' || c == '[') {
            depth++;
        } else if (c == ')' || c == ']') {
            depth--;
        } else if (c == '{') {
            if (depth == 0 && !*body) {
                /* an initializer follows '='; a body does not */
                const char *q = p;
                while (q > start && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\n'))
                    q--;
                if (q == start || q[-1] != '=')
                    *body = 1;
            }
            depth++;
        } else if (c == '}') {
            if (--depth == 0 && *body)
                return p + 1;
        } else if (c == ';' && depth == 0 && !*body) {
            return p + 1;
        }
        p++;
    }
    return NULL;
}

/* Classify one statement; @return 0 for a kind that the merge does not place. */
static int classify(item *it)
{
    const char *p = it->start, *end = it->end;
    it->type = IT_OTHER;
    it->linkage = LK_INTERNAL;
    it->init = it->shared_space = 0;
    it->name = NULL;
    it->name_len = 0;
    if (word_is(p, end, ".version") || word_is(p, end, ".target") ||
        word_is(p, end, ".address_size")) {
        it->type = IT_HEADER;
        return 1;
    }
    for (;;) {
        if (word_is(p, end, ".visible"))
            it->linkage = LK_VISIBLE;
        else if (word_is(p, end, ".extern"))
            it->linkage = LK_EXTERN;
        else if (word_is(p, end, ".weak") || word_is(p, end, ".common"))
            it->linkage = LK_WEAK;
        else
            break;
        while (p < end && is_id(*++p))
            ;
        p = skip_space(p, end);
    }
    if (word_is(p, end, ".entry") || word_is(p, end, ".func")) {
        it->type = word_is(p, end, ".entry") ? IT_ENTRY : IT_FUNC;
        p = skip_space(p + (it->type == IT_ENTRY ? 6 : 5), end);
        if (p < end && *p == '(') { /* the return parameter */
            int depth = 0;
            for (; p < end; p++) {
                depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
                if (depth == 0)
                    break;
            }
            p = skip_space(p + 1, end);
        }
        if (p >= end || !is_id_start(*p))
            return 0;
        it->name = p;
        while (p < end && is_id(*p))
            p++;
        it->name_len = (size_t)(p - it->name);
        return 1;
    }
    if (!(word_is(p, end, ".global") || word_is(p, end, ".const") ||
          word_is(p, end, ".shared") || word_is(p, end, ".local")))
        return 0; /* .file, .section, .pragma...: debug information and the like */
    it->type = IT_VAR;
    it->shared_space = word_is(p, end, ".shared") || word_is(p, end, ".local");
    /* the name: the last identifier before '[', '=' or ';' */
    for (; p < end && *p != '[' && *p != '=' && *p != ';'; p++) {
        if (*p == '.' && p + 1 < end && is_id(p[1])) {
            if (word_is(p, end, ".texref") || word_is(p, end, ".samplerref") ||
                word_is(p, end, ".surfref"))
                return 0;
            while (p + 1 < end && is_id(p[1]))
                p++;
        } else if (is_id_start(*p)) {
            it->name = p;
            while (p + 1 < end && is_id(p[1]))
                p++;
            it->name_len = (size_t)(p + 1 - it->name);
        }
    }
    it->init = memchr(p, '=', (size_t)(end - p)) != NULL;
    return it->name != NULL;
}

/* The module-scope statements of @p ptx; @return 1, 0 for PTX the merge does not place, -1 ENOMEM */
static int parse(const char *ptx, size_t size, items *out)
{
    const char *p = ptx, *end = ptx + size;
    memset(out, 0, sizeof *out);
    for (;;) {
        p = skip_space(p, end);
        if (p >= end || *p == '\0')
            return 1;
        item it;
        it.start = p;
        if (word_is(p, end, ".version") || word_is(p, end, ".target") ||
            word_is(p, end, ".address_size")) {
            /* a header directive: one line, no ';' */
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            it.end = nl ? nl : end;
            it.body = 0;
        } else {
            it.end = statement_end(p, end, &it.body);
        }
        if (!it.end)
            return 0;
        if (!classify(&it))
            return 0;
        if (out->n == out->cap) {
            size_t cap = out->cap ? out->cap * 2 : 256;
            item *v = realloc(out->v, cap * sizeof *v);
            if (!v)
                return -1;
            out->v = v;
            out->cap = cap;
        }
        out->v[out->n++] = it;
        p = it.end;
    }
}

/* The length of @p name up to its first '$' after the first byte (NVVM's copies: name$6). */
static size_t base_len(const char *name, size_t len)
{
    for (size_t i = 1; i < len; i++)
        if (name[i] == '$')
            return i;
    return len;
}

/* ---- a set of names ----------------------------------------------------------------------- */

typedef struct nameset {
    const char **name;
    size_t *len;
    size_t cap, n;
} nameset;

static uint64_t hash_name(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void nameset_free(nameset *s)
{
    free(s->name);
    free(s->len);
    memset(s, 0, sizeof *s);
}

/* @return the slot of @p name: found, or empty */
static size_t nameset_slot(const nameset *s, const char *name, size_t len)
{
    size_t i = (size_t)hash_name(name, len) & (s->cap - 1);
    while (s->name[i] && !(s->len[i] == len && memcmp(s->name[i], name, len) == 0))
        i = (i + 1) & (s->cap - 1);
    return i;
}

static int nameset_has(const nameset *s, const char *name, size_t len)
{
    return s->cap && s->name[nameset_slot(s, name, len)] != NULL;
}

static int nameset_add(nameset *s, const char *name, size_t len)
{
    if ((s->n + 1) * 2 > s->cap) {
        nameset grown = {NULL, NULL, s->cap ? s->cap * 2 : 64, 0};
        grown.name = calloc(grown.cap, sizeof *grown.name);
        grown.len = calloc(grown.cap, sizeof *grown.len);
        if (!grown.name || !grown.len) {
            nameset_free(&grown);
            return 0;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->name[i]) {
                size_t j = nameset_slot(&grown, s->name[i], s->len[i]);
                grown.name[j] = s->name[i];
                grown.len[j] = s->len[i];
                grown.n++;
            }
        nameset_free(s);
        *s = grown;
    }
    size_t i = nameset_slot(s, name, len);
    if (!s->name[i]) {
        s->name[i] = name;
        s->len[i] = len;
        s->n++;
    }
    return 1;
}

/* ---- a growing text ------------------------------------------------------------------------- */

typedef struct text {
    char *p;
    size_t n, cap;
    int failed;
} text;

static void put(text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->n + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1 << 20;
        while (cap < t->n + n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = 1;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, s, n);
    t->n += n;
    t->p[t->n] = '\0';
}

/* @p it's text with every name of @p rename followed by @p suffix (comments and strings as they are) */
static void put_renamed(text *t, const item *it, const nameset *rename, const char *suffix)
{
    const char *p = it->start, *end = it->end, *done = p;
    size_t sl = strlen(suffix);
    while (p < end) {
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\')
                    p++;
            p++;
        } else if (*p == '/' && p + 1 < end && (p[1] == '/' || p[1] == '*')) {
            p = skip_space(p, end);
        } else if (is_id_start(*p) && (p == it->start || !is_id(p[-1]) || p[-1] == '.')) {
            const char *w = p;
            while (p < end && is_id(*p))
                p++;
            if (w > it->start && w[-1] == '.')
                continue; /* a directive or a type: .b32 */
            if (nameset_has(rename, w, (size_t)(p - w))) {
                put(t, done, (size_t)(p - done));
                put(t, suffix, sl);
                done = p;
            }
        } else if (is_id(*p)) {
            while (p < end && is_id(*p))
                p++;
        } else {
            p++;
        }
    }
    put(t, done, (size_t)(end - done));
    put(t, "\n", 1);
}

/* ---- nvJitLink runs ------------------------------------------------------------------------- */

/* The link's options for a run of the partition: its own, less the splits (and -time). */
static int part_options(const fdl_link *link, int lto, int ptx, fdl__strv *o)
{
    fdl__strv all;
    if (!fdl__link_nvjl_options(link, lto, ptx, &all))
        return 0;
    memset(o, 0, sizeof *o);
    int ok = 1;
    for (size_t i = 0; ok && i < all.n; i++) {
        const char *x = all.v[i];
        if (strncmp(x, "-split-compile", 14) == 0 || strncmp(x, "-Xptxas=--split-compile", 23) == 0 ||
            strcmp(x, "-time") == 0)
            continue;
        ok = fdl__strv_push(o, x, NULL);
    }
    fdl__strv_free(&all);
    if (!ok)
        fdl__strv_free(o);
    return ok;
}

/* One nvJitLink run over @p ins (or the PTX @p ptx_in); its PTX (NUL-terminated) or cubin. */
static int run_one(const fdl__nvjl *nv, const fdl__strv *o, fdl__link_input *const *ins,
                   size_t nins, const char *ptx_in, size_t ptx_size, int want_ptx,
                   unsigned char **out, size_t *out_size)
{
    nvJitLinkHandle h = NULL;
    *out = NULL;
    *out_size = 0;
    nvJitLinkResult r = nv->create(&h, (uint32_t)o->n, (const char **)o->v);
    for (size_t i = 0; r == NVJITLINK_SUCCESS && i < nins; i++)
        r = nv->add_data(h, NVJITLINK_INPUT_LTOIR, ins[i]->data, ins[i]->size, ins[i]->name);
    if (r == NVJITLINK_SUCCESS && ptx_in)
        r = nv->add_data(h, NVJITLINK_INPUT_PTX, ptx_in, ptx_size, "fdlink-partition.ptx");
    if (r == NVJITLINK_SUCCESS)
        r = nv->complete(h);
    size_t size = 0;
    if (r == NVJITLINK_SUCCESS)
        r = want_ptx ? nv->get_linked_ptx_size(h, &size) : nv->get_linked_cubin_size(h, &size);
    int rc = 0;
    if (r == NVJITLINK_SUCCESS && size) {
        *out = malloc(size + 1);
        if (!*out) {
            rc = -1;
        } else if ((want_ptx ? nv->get_linked_ptx(h, (char *)*out)
                             : nv->get_linked_cubin(h, *out)) == NVJITLINK_SUCCESS) {
            (*out)[size] = 0;
            while (want_ptx && size && (*out)[size - 1] == 0)
                size--;
            *out_size = size;
            rc = 1;
        } else {
            free(*out);
            *out = NULL;
        }
    }
    if (h)
        nv->destroy(&h);
    return rc;
}

typedef struct group {
    size_t first, n;          /* its kernels: names[first..first+n) */
    unsigned char *ptx;
    size_t size;
    int rc;
} group;

typedef struct pool {
    const fdl_link *link;
    fdl__link_input *const *ins;
    size_t nins;
    const fdl__strv *base;    /* the group runs' options, less -kernels-used */
    char **kernels;           /* every kernel's name, in the program's order */
    group *groups;
    size_t ngroups, next;
    pthread_mutex_t lock;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->lock);
        size_t g = p->next++;
        pthread_mutex_unlock(&p->lock);
        if (g >= p->ngroups)
            return NULL;
        group *gr = &p->groups[g];
        fdl__strv o;
        memset(&o, 0, sizeof o);
        int ok = 1;
        for (size_t i = 0; ok && i < p->base->n; i++)
            ok = fdl__strv_push(&o, p->base->v[i], NULL);
        for (size_t k = gr->first; ok && k < gr->first + gr->n; k++)
            ok = fdl__strv_push(&o, "-kernels-used=%s", p->kernels[k]);
        gr->rc = ok ? run_one(p->link->nv, &o, p->ins, p->nins, NULL, 0, 1, &gr->ptx, &gr->size)
                    : -1;
        fdl__strv_free(&o);
    }
}

/* ---- the partition ---------------------------------------------------------------------- */

int fdl__partition_wanted(const fdl_link *link, fdl__link_input *const *ins, size_t nins)
{
    const char *env = getenv("FDLINK_PARTITION");
    if (env && strcmp(env, "0") == 0)
        return 0;
    const fdl_link_options *o = &link->opts;
    if (!link->lto || o->split_compile != -1 || o->split_compile_extended != -1 ||
        fdl__link_extended_auto(link) || fdl__link_split_threads(link) != 0)
        return 0; /* a small program, or splits the caller chose */
    for (size_t i = 0; i < nins; i++)
        if (ins[i]->kind != FDL_KIND_LTOIR || ins[i]->builtin || !ins[i]->data)
            return 0;
    for (size_t i = 0; i < link->extra.n; i++) {
        const char *x = link->extra.v[i];
        if (strncmp(x, "-kernels-used", 13) == 0 || strncmp(x, "-variables-used", 15) == 0 ||
            strcmp(x, "-g") == 0 || strcmp(x, "-lineinfo") == 0)
            return 0;
    }
    return 1;
}

/* Whether an internal variable is, by its name, data that nothing writes: the toolkit's tables
 * (__cudart_i2opi_f), string literals ($str), the optimiser's constants (switch.table.*,
 * __const.*: '.' is '$' in PTX). */
static int read_only_name(const char *name, size_t len)
{
    static const char *const prefixes[] = {"__cudart_", "$str", "switch$table$", "__const$"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (len >= n && memcmp(name, prefixes[i], n) == 0)
            return 1;
    }
    return 0;
}

/*
 * Group @p g's statements (@p gi, its kernels @p gr) into @p merged: its own kernels, what the
 * program defines once where no earlier group defined it, its functions and its copies renamed.
 * @return 1; 0 for a variable the merge cannot place (no partition); -1 out of memory
 */
static int merge_group(size_t g, const items *gi, const group *gr, char *const *kernels,
                       const nameset *whole, const nameset *ambiguous, nameset *defined,
                       nameset *externs, text *merged, size_t *emitted)
{
    nameset rename = {0}, mine = {0};
    int rc = -1;
    char suffix[32];
    snprintf(suffix, sizeof suffix, "$fdl%zu", g);
    for (size_t k = gr->first; k < gr->first + gr->n; k++)
        if (!nameset_add(&mine, kernels[k], strlen(kernels[k])))
            goto cleanup;
    /* what this group renames: its functions, its .shared and .local variables, and its own
     * copies of read-only tables whose name more than one copy may carry */
    for (size_t i = 0; i < gi->n; i++) {
        const item *it = &gi->v[i];
        int own = 0;
        if (it->type == IT_FUNC && it->linkage != LK_EXTERN) {
            own = 1;
        } else if (it->type == IT_VAR && it->linkage == LK_INTERNAL) {
            size_t bl = base_len(it->name, it->name_len);
            if (it->shared_space) {
                own = 1;
            } else if (nameset_has(ambiguous, it->name, bl) || bl != it->name_len ||
                       !nameset_has(whole, it->name, bl)) {
                /* a copy: only of what nothing writes (the toolkit's tables, string literals,
                 * the optimiser's constants); any other (a static variable) cannot be told
                 * apart: no partition */
                if (!it->init || !read_only_name(it->name, it->name_len)) {
                    rc = 0;
                    goto cleanup;
                }
                own = 1;
            }
        }
        if (own && !nameset_add(&rename, it->name, it->name_len))
            goto cleanup;
    }
    for (size_t i = 0; i < gi->n; i++) {
        const item *it = &gi->v[i];
        if (it->type == IT_HEADER)
            continue;
        if (it->type == IT_ENTRY) {
            if (!it->body || !nameset_has(&mine, it->name, it->name_len))
                continue; /* another group's (a prefix of -kernels-used) */
            (*emitted)++;
        } else if (it->linkage == LK_EXTERN) {
            if (nameset_has(externs, it->name, it->name_len))
                continue; /* declared by an earlier group */
            if (!nameset_add(externs, it->name, it->name_len))
                goto cleanup;
        } else if (!nameset_has(&rename, it->name, it->name_len)) {
            /* one definition for the program: the first group's */
            if (nameset_has(defined, it->name, it->name_len))
                continue;
            if (!nameset_add(defined, it->name, it->name_len))
                goto cleanup;
        }
        if (it->type == IT_FUNC && it->linkage != LK_EXTERN) {
            /* internal to the module: .visible and .weak dropped with the rename */
            item bare = *it;
            while (bare.start < bare.end && !word_is(bare.start, bare.end, ".func"))
                bare.start++;
            put_renamed(merged, &bare, &rename, suffix);
        } else {
            put_renamed(merged, it, &rename, suffix);
        }
    }
    rc = 1;
cleanup:
    nameset_free(&rename);
    nameset_free(&mine);
    return rc;
}

/* every character a PTX name may start with, for -variables-used (a prefix: keeps them all) */
static const char first_chars[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$%";

/* Hold the calling thread (and the threads it starts) to @p n of its processors; @return 1 when set */
static int hold_cpus(int n, cpu_set_t *saved)
{
    if (n <= 0 || sched_getaffinity(0, sizeof *saved, saved) != 0 || CPU_COUNT(saved) <= n)
        return 0;
    cpu_set_t few;
    CPU_ZERO(&few);
    for (int c = 0, got = 0; c < CPU_SETSIZE && got < n; c++)
        if (CPU_ISSET(c, saved)) {
            CPU_SET(c, &few);
            got++;
        }
    return sched_setaffinity(0, sizeof few, &few) == 0;
}

int fdl__partition_link(const fdl_link *link, fdl__link_input *const *ins, size_t nins,
                        fdl__nvjl_run *run, fdl_error *err)
{
    int rc = FDL__PARTITION_NO;
    unsigned char *view = NULL, *cubin = NULL;
    size_t view_size = 0, cubin_size = 0;
    items vi, *gi = NULL;
    memset(&vi, 0, sizeof vi);
    char **kernels = NULL;
    size_t nk = 0;
    group *groups = NULL;
    size_t ng = 0;
    nameset whole = {0}, defined = {0}, externs = {0}, ambiguous = {0};
    text merged = {0};
    fdl__strv o, base;
    memset(&o, 0, sizeof o);
    memset(&base, 0, sizeof base);
    pool pl;
    int have_lock = 0;
    size_t emitted = 0;

    uint64_t t0 = fdl__now_ns(), t1 = t0, t2 = t0, t3 = t0;
    /* 1. the kernels and variables of the whole program, from a cheap -O0 run */
    if (!part_options(link, 1, FDL__NVJL_VIEW, &o)) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    int got = run_one(link->nv, &o, ins, nins, NULL, 0, 1, &view, &view_size);
    fdl__strv_free(&o);
    if (got < 0) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    if (got == 0)
        goto cleanup; /* the ordinary link says why */
    got = parse((const char *)view, view_size, &vi);
    if (got < 0) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    if (got == 0)
        goto cleanup;
    for (size_t i = 0; i < vi.n; i++)
        if (vi.v[i].type == IT_ENTRY && vi.v[i].body)
            nk++;
    if (nk < FDL__PARTITION_KERNELS)
        goto cleanup;
    if (!(kernels = calloc(nk, sizeof *kernels))) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    nk = 0;
    for (size_t i = 0; i < vi.n; i++) {
        const item *it = &vi.v[i];
        if (it->type == IT_ENTRY && it->body) {
            if (!(kernels[nk] = strndup(it->name, it->name_len))) {
                rc = FDL_ENOMEM;
                goto cleanup;
            }
            nk++;
        } else if (it->type == IT_VAR && it->linkage != LK_EXTERN) {
            /* a name more than one copy carries (name, name$1...) cannot be shared by name */
            size_t bl = base_len(it->name, it->name_len);
            if (nameset_has(&whole, it->name, bl) && !nameset_add(&ambiguous, it->name, bl)) {
                rc = FDL_ENOMEM;
                goto cleanup;
            }
            if (!nameset_add(&whole, it->name, bl)) {
                rc = FDL_ENOMEM;
                goto cleanup;
            }
        }
    }

    /* 2. the groups' LTO-to-PTX runs, on the link's threads */
    t1 = fdl__now_ns();
    ng = nk < FDL__PARTITION_GROUPS ? nk : FDL__PARTITION_GROUPS;
    if (!(groups = calloc(ng, sizeof *groups)) || !(gi = calloc(ng, sizeof *gi))) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    for (size_t g = 0; g < ng; g++) {
        groups[g].first = g * nk / ng;
        groups[g].n = (g + 1) * nk / ng - groups[g].first;
    }
    if (!part_options(link, 1, FDL__NVJL_PTX, &base)) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    for (const char *c = first_chars; *c; c++) {
        char pre[2] = {*c, 0};
        if (!fdl__strv_push(&base, "-variables-used=%s", pre)) {
            rc = FDL_ENOMEM;
            goto cleanup;
        }
    }
    long nproc = sysconf(_SC_NPROCESSORS_ONLN);
    size_t threads = link->jobs.threads > 0 ? (size_t)link->jobs.threads
                     : nproc > 0               ? (size_t)nproc
                                               : 1;
    if (threads > ng)
        threads = ng;
    memset(&pl, 0, sizeof pl);
    pl.link = link;
    pl.ins = ins;
    pl.nins = nins;
    pl.base = &base;
    pl.kernels = kernels;
    pl.groups = groups;
    pl.ngroups = ng;
    if (pthread_mutex_init(&pl.lock, NULL) != 0) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    have_lock = 1;
    pthread_t *tids = calloc(threads, sizeof *tids);
    if (!tids) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    size_t started = 0;
    for (; started + 1 < threads; started++)
        if (pthread_create(&tids[started], NULL, worker, &pl) != 0)
            break;
    worker(&pl); /* this thread is one of them */
    for (size_t t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    free(tids);
    for (size_t g = 0; g < ng; g++) {
        if (groups[g].rc < 0) {
            rc = FDL_ENOMEM;
            goto cleanup;
        }
        if (groups[g].rc == 0)
            goto cleanup;
        got = parse((const char *)groups[g].ptx, groups[g].size, &gi[g]);
        if (got < 0) {
            rc = FDL_ENOMEM;
            goto cleanup;
        }
        if (got == 0)
            goto cleanup;
    }

    /* 3. one module: the header once, then each group's statements in its order */
    t2 = fdl__now_ns();
    for (size_t i = 0; i < gi[0].n; i++)
        if (gi[0].v[i].type == IT_HEADER)
            put(&merged, gi[0].v[i].start, (size_t)(gi[0].v[i].end - gi[0].v[i].start)),
                put(&merged, "\n", 1);
    for (size_t g = 0; g < ng; g++) {
        got = merge_group(g, &gi[g], &groups[g], kernels, &whole, &ambiguous, &defined, &externs,
                          &merged, &emitted);
        if (got < 0) {
            rc = FDL_ENOMEM;
            goto cleanup;
        }
        if (got == 0)
            goto cleanup;
    }
    if (merged.failed) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    if (emitted != nk)
        goto cleanup; /* a kernel that its group's run did not give: never a cubin without it */

    /* 4. the module assembled: ptxas's split always "0", its threads held to the job count */
    t3 = fdl__now_ns();
    if (!part_options(link, 0, FDL__NVJL_CUBIN, &o) ||
        !fdl__strv_push(&o, "-Xptxas=--split-compile=0", NULL)) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    cpu_set_t saved;
    int held = hold_cpus(link->jobs.threads, &saved);
    got = run_one(link->nv, &o, NULL, 0, merged.p, merged.n + 1, 0, &cubin, &cubin_size);
    if (held)
        sched_setaffinity(0, sizeof saved, &saved);
    if (got < 0) {
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    if (got == 0)
        goto cleanup;
    char line[320];
    uint64_t t4 = fdl__now_ns();
    snprintf(line, sizeof line,
             "fdlink: partitioned link: %zu kernels in %zu groups (on %zu thread%s: kernels listed "
             "in %.0f ms, groups optimised in %.0f ms, merged in %.0f ms, %zu bytes of PTX "
             "assembled in %.0f ms)\n",
             nk, ng, threads, threads == 1 ? "" : "s", (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6,
             (double)(t3 - t2) / 1e6, merged.n, (double)(t4 - t3) / 1e6);
    memset(run, 0, sizeof *run);
    run->r = NVJITLINK_SUCCESS;
    run->out = cubin;
    run->out_size = cubin_size;
    cubin = NULL;
    run->info = fdl__strdup(line);
    run->error = calloc(1, 1);
    if (!run->info || !run->error) {
        fdl__nvjl_run_free(run);
        rc = FDL_ENOMEM;
        goto cleanup;
    }
    rc = FDL_OK;
cleanup:
    if (rc == FDL_ENOMEM)
        rc = fdl__fail(err, FDL_ENOMEM, "out of memory partitioning the link");
    if (have_lock)
        pthread_mutex_destroy(&pl.lock);
    fdl__strv_free(&o);
    fdl__strv_free(&base);
    for (size_t g = 0; gi && g < ng; g++)
        free(gi[g].v);
    free(gi);
    for (size_t g = 0; groups && g < ng; g++)
        free(groups[g].ptx);
    free(groups);
    for (size_t k = 0; kernels && k < nk; k++)
        free(kernels[k]);
    free(kernels);
    free(vi.v);
    free(view);
    free(cubin);
    free(merged.p);
    nameset_free(&whole);
    nameset_free(&defined);
    nameset_free(&externs);
    nameset_free(&ambiguous);
    return rc;
}
