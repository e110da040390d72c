/*
 * What badgen.c shares with the makers of damaged binaries (badgen_elf.c): every helper exits
 * with a message on failure, so a case's inputs are made whole or the case fails.
 */
#ifndef FDLINK_BADGEN_H
#define FDLINK_BADGEN_H

#include <stddef.h>
#include <stdio.h>

/* The bytes of "data/..." or "fx/..." (malloc'd); *n their count. */
unsigned char *badgen_read_source(const char *src, size_t *n);
FILE *badgen_create(const char *path);
void badgen_finish(FILE *f, const char *path);
void badgen_write(const char *path, const void *p, size_t n);

/* Make @p path for the kinds of badgen_elf.c (elf, elfhost, ar_empty_first, ar_bsd); 0 when
 * @p kind is none of them or @p arg is malformed. */
int badgen_elf(const char *path, const char *kind, char *arg);

#endif
