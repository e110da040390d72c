/*
 * Makes the inputs of the catalogue of bad inputs (tests/cli/cases_bad.cmake) in a scratch
 * folder, fresh for each case, so that a case may damage them and the runner can prove that
 * fdlink did not:
 *
 *   fdlink_badgen DIR DATA FIXTURES SPEC...
 *
 * DATA is tests/data, FIXTURES the folder of nvcc-built link fixtures (tests/link). Each SPEC is
 * NAME=KIND[:ARG[:ARG]], NAME relative to DIR (folders are made); "%ff" in NAME is the byte 0xff
 * (a name that is not UTF-8). Kinds:
 *   empty                  0 bytes
 *   copy:SRC               a copy of SRC ("data/..." or "fx/...")
 *   head:SRC:N             the first N bytes of SRC (a truncated input)
 *   nul_ptx                valid PTX with a NUL byte in a comment
 *   huge_line_ptx:SRC      SRC (PTX) with a 4 MiB comment line after its first line
 *   huge_line_decl         a declaration file whose one line is 4 MiB of name
 *   deep_decl:N            a declaration f: int32(CPointer(...(int32)...)) nested N deep
 *   many_decls:N           N valid declarations, then a line with an unknown type
 *   ptx_version:V          valid PTX with `.version V`
 *   host_elf               a 64-byte x86-64 ELF header and nothing else
 *   cuda_elf_headers       a CUDA ELF (e_machine 190) whose section headers lie past its end
 *   fatbin_overrun         a fatbin header that claims more bytes than follow
 *   archive_bad            `!<arch>\n` and a member header that is not one
 *   ltoir_truncated        the NVVM container magic and 4 more bytes
 *   bitcode_bad            the LLVM bitcode magic ('BC' 0xC0DE) and bytes that are no module
 *   random:N               N pseudo-random bytes (fixed seed)
 *   dir                    a folder
 *   readonly_dir           a folder with mode 0555
 *   unreadable:SRC         a copy of SRC with mode 0000
 *   symlink:TARGET         a symbolic link to TARGET (which need not exist)
 *   decl_text:TEXT         a declaration file of one line TEXT ("~" stands for a space)
 *   fifo                   a FIFO (named pipe) that nothing writes or reads
 *   socket                 a Unix socket that nothing listens on
 *   chrdev:MAJ:MIN         a character device node (mknod; needs root: else the case is skipped)
 *   blkdev:MAJ:MIN         a block device node (likewise)
 *   elf:..., elfhost:..., ar_empty_first:..., ar_bsd:...   damaged binaries (badgen_elf.c)
 * "%XX" (two hex digits) in NAME is that byte: %0a a newline, %1b an escape, %ff not UTF-8.
 * Exit 77 with "SKIP: why" on stderr when this machine cannot make what a case needs.
 */
#define _DEFAULT_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "badgen.h"

static const char *g_data, *g_fixtures;

static const char valid_ptx[] = ".version 8.0\n.target sm_75\n.address_size 64\n\n"
                                ".visible .func (.param .b32 r) f(.param .b64 p)\n{\n"
                                "    st.param.b32 [r], 0;\n    ret;\n}\n";

static void die(const char *what, const char *name)
{
    fprintf(stderr, "fdlink_badgen: %s %s: %s\n", what, name, strerror(errno));
    exit(1);
}

static FILE *create(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        die("cannot create", path);
    return f;
}

static void finish(FILE *f, const char *path)
{
    if (ferror(f) || fclose(f) != 0)
        die("cannot write", path);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = create(path);
    if (n && fwrite(p, 1, n, f) != n)
        die("cannot write", path);
    finish(f, path);
}

/* The bytes of "data/..." or "fx/..."; *n their count. */
static unsigned char *read_source(const char *src, size_t *n)
{
    char path[4096];
    if (strncmp(src, "data/", 5) == 0)
        snprintf(path, sizeof path, "%s/%s", g_data, src + 5);
    else if (strncmp(src, "fx/", 3) == 0)
        snprintf(path, sizeof path, "%s/%s", g_fixtures, src + 3);
    else {
        fprintf(stderr, "fdlink_badgen: source %s is neither data/ nor fx/\n", src);
        exit(2);
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open", path);
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    if (!buf || ferror(f))
        die("cannot read", path);
    fclose(f);
    *n = len;
    return buf;
}

/* Folders leading to @p path. */
static void make_parents(char *path)
{
    for (char *s = path + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            die("cannot make folder", path);
        *s = '/';
    }
}

static void make(const char *dir, const char *spec)
{
    char path[4096], kind[4096];
    const char *eq = strchr(spec, '=');
    if (!eq) {
        fprintf(stderr, "fdlink_badgen: %s: expected NAME=KIND\n", spec);
        exit(2);
    }
    /* the name, with %ff for the byte 0xff */
    size_t at = (size_t)snprintf(path, sizeof path, "%s/", dir);
    for (const char *s = spec; s < eq && at + 1 < sizeof path; s++) {
        unsigned byte;
        if (s[0] == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2]) &&
            sscanf(s + 1, "%2x", &byte) == 1) {
            path[at++] = (char)byte;
            s += 2;
        } else {
            path[at++] = *s;
        }
    }
    path[at] = '\0';
    make_parents(path);
    snprintf(kind, sizeof kind, "%s", eq + 1);
    char *arg = strchr(kind, ':');
    if (arg)
        *arg++ = '\0';

    if (strcmp(kind, "empty") == 0) {
        write_bytes(path, "", 0);
    } else if (strcmp(kind, "copy") == 0 || strcmp(kind, "unreadable") == 0) {
        size_t n;
        unsigned char *p = read_source(arg, &n);
        write_bytes(path, p, n);
        free(p);
        if (kind[0] == 'u' && chmod(path, 0) != 0)
            die("cannot chmod", path);
    } else if (strcmp(kind, "head") == 0) {
        char *colon = strrchr(arg, ':');
        *colon = '\0';
        size_t n, keep = strtoul(colon + 1, NULL, 10);
        unsigned char *p = read_source(arg, &n);
        write_bytes(path, p, keep < n ? keep : n);
        free(p);
    } else if (strcmp(kind, "nul_ptx") == 0) {
        static const char head[] = ".version 8.0\n.target sm_75\n// a NUL: ";
        FILE *f = create(path);
        fwrite(head, 1, sizeof head - 1, f);
        fputc('\0', f);
        fputs("\n.address_size 64\n", f);
        finish(f, path);
    } else if (strcmp(kind, "huge_line_ptx") == 0) {
        size_t n;
        unsigned char *p = read_source(arg, &n);
        unsigned char *nl = memchr(p, '\n', n);
        size_t first = nl ? (size_t)(nl - p) + 1 : n;
        FILE *f = create(path);
        fwrite(p, 1, first, f);
        fputs("//", f);
        for (int i = 0; i < 4 << 20; i++)
            fputc('x', f);
        fputc('\n', f);
        fwrite(p + first, 1, n - first, f);
        free(p);
        finish(f, path);
    } else if (strcmp(kind, "huge_line_decl") == 0) {
        FILE *f = create(path);
        for (int i = 0; i < 4 << 20; i++)
            fputc('f', f);
        fputs(": int32(int32)\n", f);
        finish(f, path);
    } else if (strcmp(kind, "deep_decl") == 0) {
        long n = strtol(arg, NULL, 10);
        FILE *f = create(path);
        fputs("f: int32(", f);
        for (long i = 0; i < n; i++)
            fputs("CPointer(", f);
        fputs("int32", f);
        for (long i = 0; i < n; i++)
            fputc(')', f);
        fputs(")\n", f);
        finish(f, path);
    } else if (strcmp(kind, "many_decls") == 0) {
        long n = strtol(arg, NULL, 10);
        FILE *f = create(path);
        for (long i = 0; i < n; i++)
            fprintf(f, "f%ld: float32(float32, int32)\n", i);
        fputs("last: float32(float33)\n", f);
        finish(f, path);
    } else if (strcmp(kind, "ptx_version") == 0) {
        FILE *f = create(path);
        fprintf(f, ".version %s\n%s", arg, strchr(valid_ptx, '\n') + 1);
        finish(f, path);
    } else if (strcmp(kind, "host_elf") == 0) {
        unsigned char e[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
        e[16] = 1;  /* ET_REL */
        e[18] = 62; /* EM_X86_64 */
        e[20] = 1;
        e[52] = 64;
        write_bytes(path, e, sizeof e);
    } else if (strcmp(kind, "cuda_elf_headers") == 0) {
        unsigned char e[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0x41};
        e[16] = 2;   /* ET_EXEC */
        e[18] = 190; /* EM_CUDA */
        e[20] = 1;
        e[40] = 0x00; /* e_shoff = 0x1000, far past the end */
        e[41] = 0x10;
        e[52] = 64;
        e[58] = 64; /* e_shentsize */
        e[60] = 8;  /* e_shnum */
        write_bytes(path, e, sizeof e);
    } else if (strcmp(kind, "fatbin_overrun") == 0) {
        unsigned char h[16] = {0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0, 0, 0, 1};
        write_bytes(path, h, sizeof h);
    } else if (strcmp(kind, "archive_bad") == 0) {
        static const char a[] = "!<arch>\nthis is not a member header, and it is short\n";
        write_bytes(path, a, sizeof a - 1);
    } else if (strcmp(kind, "ltoir_truncated") == 0) {
        unsigned char h[8] = {0xed, 0x43, 0x4e, 0x7f, 1, 0, 0, 0};
        write_bytes(path, h, sizeof h);
    } else if (strcmp(kind, "random") == 0) {
        size_t n = strtoul(arg, NULL, 10);
        unsigned char *p = malloc(n ? n : 1);
        uint32_t x = 2463534242u;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            p[i] = (unsigned char)x;
        }
        if (n)
            p[0] = 0x13; /* no magic of any kind */
        write_bytes(path, p, n);
        free(p);
    } else if (strcmp(kind, "dir") == 0 || strcmp(kind, "readonly_dir") == 0) {
        if (mkdir(path, 0755) != 0)
            die("cannot make folder", path);
        if (kind[0] == 'r' && chmod(path, 0555) != 0)
            die("cannot chmod", path);
    } else if (strcmp(kind, "symlink") == 0) {
        if (symlink(arg, path) != 0)
            die("cannot link", path);
    } else if (strcmp(kind, "bitcode_bad") == 0) {
        FILE *f = create(path);
        fputs("BC\xc0\xde", f);
        for (int i = 0; i < 60; i++)
            fputc(0x35 + i, f);
        finish(f, path);
    } else if (strcmp(kind, "decl_text") == 0) {
        FILE *f = create(path);
        for (const char *s = arg; *s; s++)
            fputc(*s == '~' ? ' ' : *s, f);
        fputc('\n', f);
        finish(f, path);
    } else if (strcmp(kind, "fifo") == 0) {
        if (mkfifo(path, 0644) != 0)
            die("cannot make FIFO", path);
    } else if (strcmp(kind, "socket") == 0) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof sa);
        sa.sun_family = AF_UNIX;
        /* bound by a name relative to its folder: a socket's path has a short limit */
        char *slash = strrchr(path, '/');
        *slash = '\0';
        int here = open(".", O_RDONLY | O_DIRECTORY);
        if (fd < 0 || here < 0 || chdir(path) != 0 || strlen(slash + 1) >= sizeof sa.sun_path)
            die("cannot make socket", path);
        memcpy(sa.sun_path, slash + 1, strlen(slash + 1));
        if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || fchdir(here) != 0)
            die("cannot bind socket", slash + 1);
        close(here);
        close(fd);
    } else if (strcmp(kind, "chrdev") == 0 || strcmp(kind, "blkdev") == 0) {
        unsigned maj = 0, min = 0;
        if (!arg || sscanf(arg, "%u:%u", &maj, &min) != 2)
            die("expected MAJ:MIN for", path);
        mode_t type = kind[0] == 'c' ? S_IFCHR : S_IFBLK;
        if (mknod(path, type | 0644, makedev(maj, min)) != 0) {
            if (errno == EPERM || errno == EACCES) {
                fprintf(stderr, "SKIP: mknod needs root (or CAP_MKNOD), which this is not\n");
                exit(77);
            }
            die("cannot make device node", path);
        }
    } else if (!arg || !badgen_elf(path, kind, arg)) {
        fprintf(stderr, "fdlink_badgen: unknown kind %s\n", kind);
        exit(2);
    }
}

unsigned char *badgen_read_source(const char *src, size_t *n) { return read_source(src, n); }
FILE *badgen_create(const char *path) { return create(path); }
void badgen_finish(FILE *f, const char *path) { finish(f, path); }
void badgen_write(const char *path, const void *p, size_t n) { write_bytes(path, p, n); }

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: fdlink_badgen DIR DATA FIXTURES SPEC...\n");
        return 2;
    }
    g_data = argv[2];
    g_fixtures = argv[3];
    for (int i = 4; i < argc; i++)
        make(argv[1], argv[i]);
    return 0;
}
