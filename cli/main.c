/*
 * fdlink: the command-line tool. A thin layer over the library: each subcommand parses its
 * arguments, calls the library, prints, frees. It is the only fdlink code that prints or exits.
 *
 * Exit codes: 0 success, 1 failure, 2 usage error. Diagnostics go to stderr as
 * `fdlink: file:line:col: error: message`; data goes to stdout.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h" /* fdl__lib_loading */

typedef struct command {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
    void (*help)(FILE *out);
} command;

static const command commands[] = {
    {"check", "check compiled PTX against declarations", cmd_check, help_check},
    {"header", "generate the prototypes header of a declaration file", cmd_header, help_header},
    {"link", "link device code into a cubin", cmd_link, help_link},
    {"inspect", "show what a device code file holds", cmd_inspect,
     help_inspect},
    {"embed", "generate C source that embeds device code in a program", cmd_embed, help_embed},
    {"run", "launch a kernel from the command line and check its results", cmd_run, help_run},
    {"doctor", "show what works on this machine, and why not", cmd_doctor, help_doctor},
    {"resource-spec", "write a ctest resource spec for the GPUs present", cmd_resource_spec,
     help_resource_spec},
    {"cache", "show, check and clear the cache of links and compiles", cmd_cache, help_cache},
    {"prewarm", "make every link a manifest lists into the cache or a bundle", cmd_prewarm,
     help_prewarm},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void help_main(FILE *out)
{
    fputs("usage: fdlink <command> [options] [args]\n"
          "\n"
          "Build foreign device functions ahead of time, check them against their declarations\n"
          "and link them into caller kernels.\n"
          "\n"
          "commands:\n",
          out);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "options:\n"
          "  -h, --help     show this help; 'fdlink <command> --help' for a command\n"
          "  --version      show the version\n",
          out);
}

/*
 * What a command wrote to standard output must have got there (a full disk, a closed pipe, a
 * file system that reports at close): else one line, and exit 1 whatever the command said.
 */
static int finish_stdout(int rc)
{
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno;
    if (!bad && close(STDOUT_FILENO) != 0 && errno != EBADF) {
        bad = 1;
        e = errno;
    }
    if (!bad || rc != 0)
        return rc; /* a command that failed has said why in its one line */
    fprintf(stderr, "fdlink: error: cannot write standard output: %s\n",
            e ? strerror(e) : "write error");
    return rc ? rc : 1;
}

static int dispatch(int argc, char **argv);

/*
 * No exit 0 without fdlink's own say: a library whose initialiser calls exit() (a fake or broken
 * nvJitLink, NVRTC or driver) would end fdlink with that status, as if the command had worked.
 * An exit that does not come from main's return is a failure, said in one line.
 */
static volatile int g_main_returned;

/* Write @p parts (NULL-terminated) to stderr with write(2) alone: async-signal-safe. */
static void say(const char *const *parts)
{
    for (size_t i = 0; parts[i]; i++) {
        ssize_t w = write(cli_stderr_fd(), parts[i], strlen(parts[i]));
        (void)w;
    }
}

static void exit_guard(void)
{
    if (g_main_returned)
        return;
    /* the library being loaded now, when the exit came from its initialiser (issue 40);
     * fdlink's line first, then what the libraries wrote meanwhile (fd 2 may be captured) */
    const char *lib = fdl__lib_loading();
    if (lib) {
        const char *const parts[] = {"fdlink: error: ", lib,
                                     " ended the process while loading (its initialiser calls "
                                     "exit); try FDLINK_PROBE_LIBS=1 or fdlink doctor\n", NULL};
        say(parts);
        cli_capture_end_active();
        _exit(1);
    }
    static const char *const parts[] = {"fdlink: error: the process was ended from inside a "
                                        "library it loaded (an initialiser that calls exit); try "
                                        "FDLINK_PROBE_LIBS=1 or fdlink doctor\n", NULL};
    say(parts);
    cli_capture_end_active();
    _exit(1);
}

/*
 * A stop (Ctrl-C, timeout's TERM, a hang-up) while a library loads: its initialiser stalled; said
 * with its name, then the signal's own end. At any other time, only the signal's own end.
 */
static void stop_guard(int sig)
{
    const char *lib = fdl__lib_loading();
    if (lib) {
        const char *const parts[] = {"fdlink: error: stopped while loading ", lib, ", which had "
                                     "not finished loading (its initialiser stalls?); try "
                                     "FDLINK_PROBE_LIBS=1 or fdlink doctor\n", NULL};
        say(parts);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

int main(int argc, char **argv)
{
    atexit(exit_guard);
    cli_pair_libraries();
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = stop_guard;
        sigemptyset(&sa.sa_mask);
        /* a signal the caller ignores (nohup, a background job's SIGINT) stays ignored */
        if (sigaction(stops[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(stops[i], &sa, NULL);
    }
    int rc = finish_stdout(dispatch(argc, argv));
    g_main_returned = 1;
    return rc;
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        help_main(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (cli_is_help(name)) {
        help_main(stdout);
        return 0;
    }
    if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
        printf("fdlink %s\n", fdl_version());
        return 0;
    }
    if (strcmp(name, "help") == 0) {
        if (argc > 2) {
            for (size_t i = 0; i < NCOMMANDS; i++)
                if (strcmp(argv[2], commands[i].name) == 0) {
                    commands[i].help(stdout);
                    return 0;
                }
            return cli_usage_error(NULL, "unknown command '%s'", argv[2]);
        }
        help_main(stdout);
        return 0;
    }
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    if (name[0] == '-')
        return cli_usage_error(NULL, "unknown option '%s'", name);
    return cli_usage_error(NULL, "unknown command '%s'", name);
}

