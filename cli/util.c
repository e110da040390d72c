/* fdlink CLI: printing and argument helpers shared by the subcommands. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h"

/* ---- fd 2 captured around calls into NVIDIA's libraries (cli.h) -------------------------- */

/* The terminal's standard error while fd 2 is captured; NULL otherwise. The CLI is the process's
 * one owner of its file descriptors: this state is the CLI's, never the library's. */
static FILE *g_real_stderr;
static cli_capture *g_capture; /* the capture in progress, for an exit from inside a library */
static pid_t g_capture_pid;    /* the process that captures (not a child forked meanwhile) */

FILE *cli_stderr(void)
{
    return g_real_stderr ? g_real_stderr : stderr;
}

int cli_stderr_fd(void)
{
    /* a child forked by the library (its probe of a library) has its own fd 2 */
    return g_real_stderr && getpid() == g_capture_pid ? fileno(g_real_stderr) : STDERR_FILENO;
}

void cli_capture_end_active(void)
{
    if (g_capture && getpid() == g_capture_pid)
        cli_capture_end(g_capture);
}

#define CAPTURE_SHOW_MAX (1u << 20) /* bytes of captured text shown at most */

void cli_capture_begin(cli_capture *c)
{
    c->tmp = -1;
    if (g_real_stderr)
        return; /* already capturing: the outer capture gets it all */
    fflush(stderr);
    const char *dir = getenv("TMPDIR");
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/fdlink-stderr-XXXXXX", dir && dir[0] ? dir : "/tmp");
    int tmp = n > 0 && (size_t)n < sizeof path ? mkstemp(path) : -1;
    if (tmp < 0)
        return;
    unlink(path);
    int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    FILE *real = saved >= 0 ? fdopen(saved, "w") : NULL;
    if (!real || dup2(tmp, STDERR_FILENO) < 0) {
        if (real)
            fclose(real);
        else if (saved >= 0)
            close(saved);
        close(tmp);
        return;
    }
    setvbuf(real, NULL, _IONBF, 0);
    g_real_stderr = real;
    c->tmp = tmp;
    g_capture = c;
    g_capture_pid = getpid();
}

void cli_capture_end(cli_capture *c)
{
    if (c->tmp < 0)
        return;
    g_capture = NULL;
    fflush(stderr); /* what a library wrote through stdio's stderr */
    int restored = dup2(fileno(g_real_stderr), STDERR_FILENO) >= 0;
    fclose(g_real_stderr);
    g_real_stderr = NULL;
    off_t size = lseek(c->tmp, 0, SEEK_END);
    if (restored && size > 0 && lseek(c->tmp, 0, SEEK_SET) == 0) {
        /* after fdlink's own lines: the libraries' text, as a log (bounded) */
        size_t want = (size_t)size < CAPTURE_SHOW_MAX ? (size_t)size : CAPTURE_SHOW_MAX;
        char *text = malloc(want + 1);
        size_t got = 0;
        while (text && got < want) {
            ssize_t r = read(c->tmp, text + got, want - got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (text && got) {
            fwrite(text, 1, got, stderr);
            if (text[got - 1] != '\n')
                fputc('\n', stderr);
            if ((size_t)size > got)
                fprintf(stderr, "fdlink: note: %lld more bytes of the libraries' output left "
                        "out\n", (long long)((size_t)size - got));
        }
        free(text);
    }
    close(c->tmp);
    c->tmp = -1;
}

void cli_veprintf(const char *fmt, va_list ap)
{
    char small[512];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    char *big = NULL, *text = small;
    if (n >= (int)sizeof small && (big = malloc((size_t)n + 1)) != NULL) {
        vsnprintf(big, (size_t)n + 1, fmt, again);
        text = big;
    }
    va_end(again);
    if (n < 0)
        return;
    size_t len = strlen(text);
    int newline = len && text[len - 1] == '\n';
    if (newline)
        len--;
    /* a file name or a message holding a newline or an escape stays on its one line, inert */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n')
            fputs("\\n", cli_stderr());
        else if (c == '\t')
            fputs("\\t", cli_stderr());
        else if (c < 0x20 || c == 0x7f)
            fprintf(cli_stderr(), "\\x%02x", c);
        else
            fputc(c, cli_stderr());
    }
    if (newline)
        fputc('\n', cli_stderr());
    free(big);
}

void cli_eprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cli_veprintf(fmt, ap);
    va_end(ap);
}

/* One diagnostic line: `fdlink: file:line:col: error: symbol: message`. */
static void print_diag(const char *severity, const fdl_error *err)
{
    char loc[FDL_ERROR_SOURCE_MAX + 32];
    fdl_error where = *err;
    where.symbol[0] = '\0';
    where.message[0] = '\0';
    fdl_error_format(&where, loc, sizeof loc); /* "file:line:col: " or "" */
    int with_symbol = err->symbol[0] && !fdl__message_names(err->message, err->symbol);
    cli_eprintf("fdlink: %s%s: %s%s%s\n", loc, severity, with_symbol ? err->symbol : "",
                with_symbol ? ": " : "", err->message);
}

void cli_print_error(const fdl_error *err)
{
    print_diag("error", err);
}

/* A line of a raw log: [p, e). */
typedef struct log_line {
    const char *p, *e;
} log_line;

static int line_has(const log_line *l, const char *s)
{
    size_t n = strlen(s);
    for (const char *q = l->p; n && q + n <= l->e; q++)
        if (memcmp(q, s, n) == 0)
            return 1;
    return 0;
}

/* Whether line @p l starts an entry of its own: any line not indented and not blank (NVRTC's
 * "file(12): error: ..." with its source line and caret indented under it; a linker's
 * "error   : ...", "ptxas fatal   : ...", "ERROR 9: ...", "nvJitLink printed:" and what follows). */
static int log_entry_start(const log_line *l)
{
    return l->p != l->e && *l->p != ' ' && *l->p != '\t';
}

/* A summary line ("2 errors detected in the compilation of ...", "Compilation terminated.",
 * NVRTC's "Remark: The warnings can be suppressed ..."): kept only after a kept entry. */
static int log_summary(const log_line *l)
{
    return line_has(l, "detected in the compilation of") ||
           line_has(l, "Compilation terminated.") ||
           ((size_t)(l->e - l->p) >= 7 && memcmp(l->p, "Remark:", 7) == 0);
}

static int ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '$' || c == '.';
}

/* Whether the entry starting at line @p l repeats the headline @p err. */
static int log_repeats(const log_line *l, const fdl_error *err)
{
    char at[600];
    /* nvJitLink's echo of its own status: "ERROR 9: finish" */
    if ((size_t)(l->e - l->p) > 6 && memcmp(l->p, "ERROR ", 6) == 0)
        return 1;
    /* NVRTC's entry, "file(line): ...": a repeat at the headline's place only (the same
     * message elsewhere is another error) */
    if (line_has(l, "): ")) {
        if (!err->source[0] || !err->line)
            return 0;
        snprintf(at, sizeof at, "%s(%u): ", err->source, err->line);
        return (size_t)(l->e - l->p) >= strlen(at) && memcmp(l->p, at, strlen(at)) == 0;
    }
    /* a linker's line about a name the headline names: "Undefined reference to 'f' in ..." */
    for (const char *q = l->p; q < l->e; q++) {
        if (*q != '\'')
            continue;
        const char *end = memchr(q + 1, '\'', (size_t)(l->e - q - 1));
        if (!end)
            break;
        size_t n = (size_t)(end - q - 1);
        if (n && n < sizeof at && !memchr(q + 1, ' ', n)) {
            /* a name ('f', not "doesn't match for '"): in the headline as a word of its own */
            memcpy(at, q + 1, n);
            at[n] = '\0';
            for (const char *hit = strstr(err->message, at); hit; hit = strstr(hit + 1, at)) {
                char before = hit == err->message ? ' ' : hit[-1], after = hit[n];
                if (!ident_char(before) && !ident_char(after))
                    return 1;
            }
            q = end;
        }
    }
    /* the headline's own words, or a line the headline quotes whole */
    if (err->message[0] && line_has(l, err->message))
        return 1;
    size_t n = (size_t)(l->e - l->p);
    while (n && (l->p[n - 1] == ' ' || l->p[n - 1] == '\r'))
        n--;
    if (n < 8)
        return 0;
    if (n > 80) /* a long line the headline quotes cut short: its start */
        n = 80;
    for (const char *hit = strchr(err->message, l->p[0]); hit; hit = strchr(hit + 1, l->p[0]))
        if (strncmp(hit, l->p, n) == 0)
            return 1;
    return 0;
}

void cli_print_log_rest(const char *log, const fdl_error *err, int verbose)
{
    if (!log || !log[0])
        return;
    if (verbose || !err) {
        fprintf(cli_stderr(), "%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
        return;
    }
    /* entries are kept or dropped whole (an NVRTC entry: its line, the source line, the
     * caret); the summary only when an entry was kept */
    int keep = 1, kept = 0;
    fdl__buf out = {0};
    for (const char *p = log; *p;) {
        const char *e = strchr(p, '\n');
        log_line l = {p, e ? e : p + strlen(p)};
        int summary = log_summary(&l);
        if (summary)
            keep = kept;
        else if (log_entry_start(&l))
            keep = !log_repeats(&l, err);
        if (keep && (l.e > l.p || kept)) {
            fdl__buf_printf(&out, "%.*s\n", (int)(l.e - l.p), l.p);
            kept |= !summary && log_entry_start(&l);
        }
        p = e ? e + 1 : l.e;
    }
    /* nothing but blank lines or a summary: nothing added */
    if (kept && out.data && !out.oom)
        fputs(out.data, cli_stderr());
    fdl__buf_free(&out);
}

void cli_on_diag(void *ctx, const fdl_error *diag)
{
    size_t *count = ctx;
    ++*count;
    cli_print_error(diag);
}

int cli_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    char what[1024];
    snprintf(what, sizeof what, fmt, arg);
    cli_eprintf("fdlink: error: %s (see 'fdlink %s%s--help')\n", what, cmd ? cmd : "",
                cmd ? " " : "");
    return EXIT_USAGE;
}

int cli_list_add(cli_list *l, const char *s)
{
    const char **grown = realloc(l->v, (l->n + 2) * sizeof *grown);
    if (!grown)
        return 0;
    l->v = grown;
    l->v[l->n++] = s;
    l->v[l->n] = NULL;
    return 1;
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}


int cli_refuse_output_input(const char *cmd, const char *out, const char *const *inputs, size_t n)
{
    if (!out || strcmp(out, "-") == 0)
        return 0;
    struct stat so;
    int out_exists = stat(out, &so) == 0;
    for (size_t i = 0; i < n; i++) {
        struct stat si;
        if (!inputs[i])
            continue;
        if (strcmp(out, inputs[i]) == 0) {
            cli_eprintf("fdlink: error: output %s is also an input; nothing was read or "
                            "written (see 'fdlink %s --help')\n", out, cmd);
            return EXIT_USAGE;
        }
        if (out_exists && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev &&
            si.st_ino == so.st_ino) {
            cli_eprintf("fdlink: error: output %s is the same file as input %s; nothing was "
                            "read or written (see 'fdlink %s --help')\n", out, inputs[i], cmd);
            return EXIT_USAGE;
        }
    }
    return 0;
}

const char *cli_paired_variable;

/*
 * NVRTC and nvJitLink of one release (issue 40): when the user names one of them (FDLINK_NVRTC
 * or FDLINK_NVJITLINK) and not the other, the other is taken from the same folder when it is
 * there (a wheel's lib folder, a toolkit's lib64), not from the search path, where another
 * release may stand (an NVRTC newer than nvJitLink writes what it cannot link). Said by doctor.
 */
void cli_pair_libraries(void)
{
    static const char *const var[2] = {"FDLINK_NVJITLINK", "FDLINK_NVRTC"};
    static const char *const file[2] = {"libnvJitLink.so.13", "libnvrtc.so.13"};
    for (int i = 0; i < 2; i++) {
        const char *set = getenv(var[i]), *other = getenv(var[1 - i]);
        const char *slash = set ? strrchr(set, '/') : NULL;
        if (!slash || (other && other[0]))
            continue;
        char path[4096];
        int n = snprintf(path, sizeof path, "%.*s/%s", (int)(slash - set), set, file[1 - i]);
        if (n > 0 && (size_t)n < sizeof path && access(path, R_OK) == 0 &&
            setenv(var[1 - i], path, 1) == 0)
            cli_paired_variable = var[1 - i];
        return;
    }
}
