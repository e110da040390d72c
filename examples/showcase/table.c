/*
 * The showcase table: runs each example program given on the command line, passes its output
 * through, and collects the summary line each prints,
 *
 *     fdlink-example: <name> | <what it exercised> | verified <yes|no|skipped> | <key figure>
 *
 * into one table. Exit status 0 when every example verified its results or was skipped for want
 * of a GPU (exit 77), 1 when any failed.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MAX_EXAMPLES 32
#define FIELD 160

typedef struct row {
    char name[FIELD], exercised[FIELD], verified[FIELD], figure[FIELD];
    int status;
} row;

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    size_t k = 0;
    while (s[k] == ' ')
        k++;
    memmove(s, s + k, strlen(s + k) + 1);
}

/* Split "a | b | verified c | d" into the row's fields. */
static int parse_summary(const char *line, row *r)
{
    const char *p = line + strlen("fdlink-example:");
    char *fields[4] = {r->name, r->exercised, r->verified, r->figure};
    for (int f = 0; f < 4; f++) {
        const char *bar = f < 3 ? strchr(p, '|') : p + strlen(p);
        if (!bar)
            return 0;
        size_t n = (size_t)(bar - p);
        if (n >= FIELD)
            n = FIELD - 1;
        memcpy(fields[f], p, n);
        fields[f][n] = '\0';
        trim(fields[f]);
        p = *bar ? bar + 1 : bar;
    }
    if (strncmp(r->verified, "verified ", 9) == 0)
        memmove(r->verified, r->verified + 9, strlen(r->verified + 9) + 1);
    return 1;
}

int main(int argc, char **argv)
{
    row rows[MAX_EXAMPLES];
    int nrows = 0, failed = 0, gpu = 1;
    for (int i = 1; i < argc && nrows < MAX_EXAMPLES; i++) {
        row *r = &rows[nrows++];
        memset(r, 0, sizeof *r);
        /* the program's file name, without its directory and arguments, until it names itself */
        const char *end = strchr(argv[i], ' ');
        size_t len = end ? (size_t)(end - argv[i]) : strlen(argv[i]);
        const char *base = argv[i];
        for (size_t k = 0; k < len; k++)
            if (argv[i][k] == '/')
                base = argv[i] + k + 1;
        snprintf(r->name, sizeof r->name, "%.*s", (int)(argv[i] + len - base), base);
        snprintf(r->verified, sizeof r->verified, "no");
        snprintf(r->figure, sizeof r->figure, "no summary line");
        printf("== %s\n", r->name);
        fflush(stdout);
        FILE *p = popen(argv[i], "r");
        if (!p) {
            snprintf(r->figure, sizeof r->figure, "cannot run");
            failed = 1;
            continue;
        }
        char line[1024];
        int have = 0;
        while (fgets(line, sizeof line, p)) {
            if (strncmp(line, "fdlink-example:", 15) == 0)
                have = parse_summary(line, r);
            else
                fputs(line, stdout);
        }
        int st = pclose(p);
        r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
        if (!have)
            snprintf(r->verified, sizeof r->verified, "no");
        if (r->status == 77)
            gpu = 0;
        else if (r->status != 0 || strcmp(r->verified, "yes") != 0)
            failed = 1;
    }
    printf("\n%-20s %-58s %-9s %s\n", "example", "what it exercised", "verified", "key figure");
    for (int i = 0; i < nrows; i++)
        printf("%-20s %-58s %-9s %s\n", rows[i].name, rows[i].exercised, rows[i].verified,
               rows[i].figure);
    if (!gpu)
        printf("\nno GPU here: every example was declared, compiled, checked and linked at build "
               "time; the launches were skipped\n");
    printf("%s\n", failed ? "result: FAILED" : gpu ? "result: all verified on the GPU" : "result: ok");
    return failed ? 1 : 0;
}
