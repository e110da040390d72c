/*
 * The fuzz oracle's second half: feed binaries to the real nvJitLink, each in a child process of
 * its own, and report any that kills it.
 *
 *   fdlink_jloracle [--all] [--arch sm_90] [--with FILE] FILE...
 *
 * By default only the files that fdlink's validation accepts (fdl_inspect_data succeeds) are fed
 * to nvJitLink: the claim under test is that no image passing validation crashes the linker.
 * --all feeds every file (to show that the rejected ones do crash it: the reproduction of the
 * crashes the validation prevents). --with FILE is added to every link first (a caller).
 * Each file is linked in a forked child (fork without exec is safe here: this program is single-
 * threaded and never loads nvJitLink itself; each child loads it anew).
 * Prints one line per crash ("FILE: nvJitLink died of signal N (NAME)") and a summary line
 * ("oracle: N files, A accepted by the validation, L linked, C crashed"). Exit status: 0 when
 * nothing crashed, 1 when something did, 77 when nvJitLink cannot be loaded (ctest: skipped),
 * 2 on misuse.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fdlink/fdlink.h"

typedef int (*create_fn)(void **, unsigned, const char **);
typedef int (*add_fn)(void *, int, const void *, size_t, const char *);
typedef int (*complete_fn)(void *);

static void *open_nvjitlink(void)
{
    const char *env = getenv("FDLINK_NVJITLINK");
    static const char *const names[] = {"libnvJitLink.so.13", "libnvJitLink.so",
                                        "/usr/local/cuda/lib64/libnvJitLink.so.13"};
    if (env && *env)
        return dlopen(env, RTLD_NOW | RTLD_LOCAL);
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *grown = realloc(buf, cap *= 2);
            if (!grown)
                free(buf);
            buf = grown;
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

/* In the child: link @p with (may be NULL) and the file; exit 0 linked, 1 refused. */
static void child(const char *arch, const unsigned char *with, size_t nwith, const char *file,
                  const unsigned char *p, size_t n)
{
    /* no core files from the crashes this exists to provoke */
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    void *lib = open_nvjitlink();
    if (!lib)
        _exit(3);
    create_fn create = (create_fn)(uintptr_t)dlsym(lib, "nvJitLinkCreate");
    add_fn add = (add_fn)(uintptr_t)dlsym(lib, "nvJitLinkAddData");
    complete_fn complete = (complete_fn)(uintptr_t)dlsym(lib, "nvJitLinkComplete");
    if (!create || !add || !complete)
        _exit(3);
    char opt[64];
    snprintf(opt, sizeof opt, "-arch=%s", arch);
    const char *opts[] = {opt};
    void *h = NULL;
    if (create(&h, 1, opts) != 0)
        _exit(3);
    /* stderr: nvJitLink's own complaints about the inputs are expected, not interesting */
    if (!freopen("/dev/null", "w", stderr))
        _exit(3);
    if (with && add(h, 10, with, nwith, "with") != 0)
        _exit(1);
    if (add(h, 10, p, n, file) != 0)
        _exit(1);
    _exit(complete(h) == 0 ? 0 : 1);
}

int main(int argc, char **argv)
{
    const char *arch = "sm_90", *with_path = NULL;
    int all = 0, i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--all") == 0)
            all = 1;
        else if (strcmp(argv[i], "--arch") == 0 && i + 1 < argc)
            arch = argv[++i];
        else if (strcmp(argv[i], "--with") == 0 && i + 1 < argc)
            with_path = argv[++i];
        else {
            fprintf(stderr, "usage: fdlink_jloracle [--all] [--arch ARCH] [--with FILE] FILE...\n");
            return 2;
        }
    }
    /* nvJitLink is loaded in the children only: this process stays free of it (and of what
     * LeakSanitizer would see of it at exit) */
    size_t nwith = 0;
    unsigned char *with = NULL;
    if (with_path && !(with = slurp(with_path, &nwith))) {
        fprintf(stderr, "fdlink_jloracle: cannot read %s\n", with_path);
        return 2;
    }
    size_t files = 0, accepted = 0, linked = 0, crashed = 0;
    for (; i < argc; i++) {
        size_t n = 0;
        unsigned char *p = slurp(argv[i], &n);
        if (!p) {
            fprintf(stderr, "fdlink_jloracle: cannot read %s\n", argv[i]);
            return 2;
        }
        files++;
        fdl_inspection *ins = NULL;
        int ok = fdl_inspect_data(&ins, p, n, argv[i], FDL_KIND_AUTO, NULL) == FDL_OK;
        fdl_inspection_destroy(ins);
        accepted += ok;
        if (!ok && !all) {
            free(p);
            continue;
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            child(arch, with, nwith, argv[i], p, n);
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid) {
            perror("fdlink_jloracle: fork");
            return 2;
        }
        if (WIFSIGNALED(status)) {
            crashed++;
            printf("%s: nvJitLink died of signal %d (%s)%s\n", argv[i], WTERMSIG(status),
                   strsignal(WTERMSIG(status)), ok ? ", and fdlink's validation accepted it" : "");
        } else if (WEXITSTATUS(status) == 3) {
            printf("oracle: skipped: nvJitLink cannot be loaded in the child\n");
            return 77;
        } else {
            linked += WEXITSTATUS(status) == 0;
        }
        free(p);
    }
    free(with);
    printf("oracle: %zu files, %zu accepted by the validation, %zu linked, %zu crashed\n", files,
           accepted, linked, crashed);
    return crashed ? 1 : 0;
}
