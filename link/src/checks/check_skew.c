/*
 * Version skew (issue 40): an LTO-IR or PTX input newer than the nvJitLink that links it. Each
 * input's producer version is read before the link (LTO-IR: the NVVM IR version of its container
 * header; PTX: its .version) and compared with the linker's (nvJitLinkVersion); an input newer
 * than the linker is one line naming both releases, the library and what to do, with the code
 * "version-skew" in its record, instead of nvJitLink's "ERROR 4 in
 * nvvmAddNVVMContainerToProgram" or ptxas's "Unsupported .version". A check of
 * fdl_link_complete (fdl__check_skew), the first: the declaration check runs nvJitLink too.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "checks.h"
#include "formats.h"
#include "linkobj.h"
#include "nvjl.h"

/* A release (major * 1000 + minor * 10, as CUDA_VERSION) and the version its tools write. */
typedef struct release_version {
    int cuda;
    int version;
} release_version;

/*
 * The NVVM IR version (major * 1000 + minor, bytes 6 and 7 of the NVVM container header) that
 * each release's NVRTC writes, read from LTO-IR of the real libraries: NVRTC 12.9.86 (1.64 and IR
 * 2.93), 13.0.88 (1.65, 2.98), 13.5.37 (1.67, 2.131). A release between two rows is not judged
 * by the row after it.
 */
static const release_version nvvm_ir[] = {{12090, 2093}, {13000, 2098}, {13050, 2131}};

/* The PTX ISA (major * 10 + minor) of each release: fdl__ptx_isa_of_cuda's table, and 13.5 (PTX
 * ISA 9.5, read from NVRTC 13.5.37's PTX). */
static const release_version ptx_isa[] = {
    {12000, 80}, {12010, 81}, {12020, 82}, {12030, 83}, {12040, 84}, {12050, 85}, {12080, 87},
    {12090, 88}, {13000, 90}, {13010, 91}, {13050, 95},
};

/*
 * Whether @p version is newer than what the release @p linker reads, by table @p t of @p n rows:
 * 1 when known to be, with *exact the release that writes @p version (0 when none does: then
 * *after is the last release before it). A linker older than the table is not judged.
 */
static int too_new(const release_version *t, size_t n, int linker, int version, int *exact,
                   int *after)
{
    size_t e = n;
    for (size_t i = 0; i < n; i++)
        if (t[i].cuda <= linker)
            e = i;
    if (e == n || version <= t[e].version)
        return 0;
    /* a linker between two rows reads at least its row's version: only the next row's is
     * known to be too new for it */
    if (t[e].cuda != linker && (e + 1 == n || version < t[e + 1].version))
        return 0;
    *exact = 0;
    *after = t[e].cuda;
    for (size_t i = 0; i < n; i++) {
        if (t[i].version == version && !*exact)
            *exact = t[i].cuda;
        if (t[i].version < version)
            *after = t[i].cuda;
    }
    return 1;
}

/* "13.5" of 13050. */
static void release_name(char *buf, size_t cap, int cuda)
{
    snprintf(buf, cap, "%d.%d", cuda / 1000, cuda % 1000 / 10);
}

/* The error: a record with its code, and @p err. */
static int skew_error(fdl_link *link, const char *input, const char *what, int exact, int after,
                      fdl_error *err)
{
    char lib[FDL_ERROR_SOURCE_MAX] = "";
    if (link->nv || fdl__link_need_nv(link, NULL) == FDL_OK) {
        void (*any)(void) = NULL;
        memcpy(&any, &link->nv->create, sizeof any);
        if (!fdl__library_of(any, lib, sizeof lib))
            lib[0] = '\0';
    }
    char need[32], have[32];
    if (exact)
        release_name(need, sizeof need, exact);
    else
        release_name(need, sizeof need, after);
    release_name(have, sizeof have, (int)(link->nvjl_major * 1000 + link->nvjl_minor * 10));
    char use[64];
    if (exact)
        snprintf(use, sizeof use, "use nvJitLink %s or later", need);
    else
        snprintf(use, sizeof use, "use an nvJitLink newer than %s", need);
    fdl__error(err, FDL_ELINK, input, 0, 0, NULL,
               "%s cannot be linked by nvJitLink %s%s%s%s: %s (FDLINK_NVJITLINK, or the cu%u "
               "extra)", what, have, lib[0] ? " (" : "", lib, lib[0] ? ")" : "", use,
               link->nvjl_major);
    if (err) {
        err->backend_code = 14; /* NVJITLINK_ERROR_OUTDATED_LIBRARY, what nvJitLink says */
        fdl__diags_add(&link->diags, "fdlink", input, 0, 0, FDL_SEVERITY_ERROR, "version-skew",
                       err->message); /* out of memory: left out */
    }
    return FDL_ELINK;
}

/* One image the link uses: its version against the linker's. */
static int check_image(fdl_link *link, const fdl__link_input *in, const fdl__image *img,
                       int linker, fdl_error *err)
{
    int exact = 0, after = 0;
    char what[96], rel[32];
    if (img->pub.kind == FDL_KIND_LTOIR) {
        const unsigned char *p = img->bytes;
        if (!p || img->nbytes < 8 || fdl__le32(p) != FDL__NVVM_MAGIC)
            return FDL_OK; /* compressed, or not read: nvJitLink says what it finds */
        int version = p[6] * 1000 + p[7];
        if (!too_new(nvvm_ir, sizeof nvvm_ir / sizeof nvvm_ir[0], linker, version, &exact,
                     &after))
            return FDL_OK;
        release_name(rel, sizeof rel, exact ? exact : after);
        snprintf(what, sizeof what, "LTO-IR made by %s%s %s (NVVM IR %u.%u)",
                 exact ? "" : "a release after ",
                 in->from_cuda == 1 ? "NVRTC" : "CUDA", rel, p[6], p[7]);
        return skew_error(link, img->pub.name ? img->pub.name : in->name, what, exact, after,
                          err);
    }
    if (img->pub.kind == FDL_KIND_PTX) {
        unsigned major = 0, minor = 0;
        if (sscanf(img->version_buf, "%u.%u", &major, &minor) != 2 || major > 99 || minor > 9)
            return FDL_OK;
        if (!too_new(ptx_isa, sizeof ptx_isa / sizeof ptx_isa[0], linker,
                     (int)(major * 10 + minor), &exact, &after))
            return FDL_OK;
        snprintf(what, sizeof what, "PTX ISA %u.%u (.version %u.%u)", major, minor, major,
                 minor);
        return skew_error(link, img->pub.name ? img->pub.name : in->name, what, exact, after,
                          err);
    }
    return FDL_OK;
}

static int run(fdl_link *link, fdl_error *err)
{
    if (link->backend != FDL_BACKEND_NVJITLINK)
        return FDL_OK;
    /* the link loads nvJitLink next in any case; a library that says no version is not judged */
    if (!link->nvjl_known && fdl__link_need_nv(link, NULL) != FDL_OK)
        return FDL_OK;
    if (!link->nvjl_known)
        return FDL_OK;
    int linker = (int)(link->nvjl_major * 1000 + link->nvjl_minor * 10);
    for (size_t i = 0; i < link->ninputs; i++) {
        const fdl__link_input *in = &link->inputs[i];
        if (!in->chosen)
            continue;
        for (size_t u = 0; u < in->images.nunits; u++) {
            if (!in->chosen[u])
                continue;
            int rc = check_image(link, in, in->chosen[u], linker, err);
            if (rc != FDL_OK)
                return rc;
        }
    }
    return FDL_OK;
}

const fdl__link_check fdl__check_skew = {"version skew", run};

int fdl__link_outdated_error(fdl_link *link, const char *input, fdl_error *err)
{
    char what[FDL_ERROR_SOURCE_MAX + 32];
    snprintf(what, sizeof what, "an input newer than the linker");
    int rc = skew_error(link, input, what, 0,
                        (int)(link->nvjl_major * 1000 + link->nvjl_minor * 10), err);
    return rc;
}
