/*
 * The LTO report (fdl_link_options.lto_report, issue 32): after a link that ran, one note per
 * declared function saying whether its calls were inlined or stayed calls, and why. Read from
 * the linked cubin: a function that LTO inlined into every caller is gone from it, one whose
 * calls stayed calls is still a function symbol (of any binding: whole-program LTO makes the
 * functions it keeps local). Why a call stayed: the input that defines the function is PTX or a
 * cubin, which does not join LTO (nvJitLink only assembles and relocates it), or the link is not
 * LTO at all, or LTO kept it (the optimiser chose not to inline, e.g. a large or recursive one).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "fdlink/abi.h"
#include "fdlink/ptx.h"
#include "elfread.h"
#include "formats.h"
#include "internal.h"
#include "checks.h"
#include "linkobj.h"

/* Whether the cubin @p p, @p n defines a function symbol @p name (any binding). */
int fdl__lto_cubin_keeps(const void *data, size_t n, const char *name)
{
    const unsigned char *p = data;
    fdl__elf e;
    const char *why = NULL;
    if (!p || fdl__elf_open(&e, p, n, &why) != 1)
        return 0;
    for (size_t i = 0; i < e.shnum; i++) {
        fdl__shdr s;
        fdl__elf_shdr(&e, i, &s);
        if (s.type != FDL__SHT_SYMTAB || s.entsize < 24)
            continue;
        const unsigned char *d = NULL;
        if (!fdl__elf_section_bytes(&e, &s, &d) || !d)
            continue;
        for (uint64_t off = 0; off + 24 <= s.size; off += s.entsize) {
            const unsigned char *sym = d + off;
            unsigned type = sym[4] & 0xf;
            uint16_t shndx = fdl__le16(sym + 6);
            if (type != 2 /* STT_FUNC */ || shndx == 0)
                continue;
            const char *nm = fdl__elf_string(&e, s.link, fdl__le32(sym));
            if (nm && strcmp(nm, name) == 0)
                return 1;
        }
    }
    return 0;
}

/* The input whose PTX or cubin defines @p name (not LTO-IR), and that kind's name, or NULL. */
static const fdl__link_input *defined_outside_lto(const fdl_link *link, const char *name,
                                                  const char **kind)
{
    for (size_t i = 0; i < link->ninputs; i++) {
        const fdl__link_input *in = &link->inputs[i];
        for (size_t u = 0; u < in->images.nunits; u++) {
            const fdl__image *img = in->chosen ? in->chosen[u] : NULL;
            if (!img)
                continue;
            if (img->pub.kind == FDL_KIND_PTX && img->ptx) {
                const fdl_ptx_func *f = fdl_ptx_find(img->ptx, name);
                if (f && f->is_definition) {
                    *kind = "PTX";
                    return in;
                }
            } else if (img->pub.kind == FDL_KIND_CUBIN) {
                for (size_t k = 0; k < img->nsyms; k++)
                    if (img->syms[k].defined && strcmp(img->syms[k].name, name) == 0) {
                        *kind = "a cubin";
                        return in;
                    }
            }
        }
    }
    return NULL;
}

static void note(fdl_link *link, const fdl_decl *d, const char *text)
{
    fdl__diags_add(&link->diags, "fdlink", d->source, d->line, d->column, FDL_SEVERITY_NOTE,
                   "lto-report", text);
}

void fdl__lto_report(fdl_link *link)
{
    char text[FDL_ERROR_MESSAGE_MAX];
    for (size_t s = 0; s < link->ndecls; s++)
        for (size_t i = 0; i < fdl_decls_count(link->decls[s]); i++) {
            const fdl_decl *d = fdl_decls_get(link->decls[s], i);
            if (fdl__link_find_decl(link, d->name) != d)
                continue; /* declared in an earlier set too: said once */
            const char *kind = NULL;
            const fdl__link_input *in = defined_outside_lto(link, d->name, &kind);
            if (!fdl__lto_cubin_keeps(link->cubin, link->cubin_size, d->name)) {
                snprintf(text, sizeof text, "%s: every call inlined (LTO left no function of "
                         "that name in the cubin)", d->name);
            } else if (!link->lto) {
                snprintf(text, sizeof text, "%s: calls stay calls: the link is not LTO (no input "
                         "is LTO-IR)%s%.200s", d->name, in ? "; defined in " : "",
                         in ? in->name : "");
            } else if (in) {
                snprintf(text, sizeof text, "%s: calls stay calls: defined in %.200s (%s), which "
                         "does not join LTO; give it as LTO-IR (nvcc -dlto) to inline it",
                         d->name, in->name, kind);
            } else {
                snprintf(text, sizeof text, "%s: calls stay calls: LTO kept the function "
                         "(the optimiser did not inline it)", d->name);
            }
            note(link, d, text);
        }
}
