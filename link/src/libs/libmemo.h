/*
 * Memos of library versions (libmemo.c, internal to link/): what nvJitLink's or NVRTC's version
 * is without loading the library (98 and 105 MB, 15-20 ms to load), so that a cache hit in a
 * fresh process costs a lookup and not a load.
 *
 * A memo lives in the cache directory ("<key>.fdlm", cache.c writes and checks it). Its key is
 * everything that decides which file dlopen would open for the library: the names tried, the
 * override variable's value, the C library's version, the platform, the host, the identity of
 * /etc/ld.so.cache, and the search path of the object that calls dlopen as the dynamic linker
 * itself reports it (dlinfo RTLD_DI_SERINFO: DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, the system
 * folders). It holds the file that was really loaded (dladdr on one of its entry points), that
 * file's identity (device, inode, size, mtime, ctime) and the version the library reported.
 * A memo vouches for a version only while the file stats identical, no file stands where
 * dlopen would look before it (each earlier folder of the search path, under each name tried
 * first), no folder of the path has hardware-capability subfolders (glibc-hwcaps, tls, the
 * legacy platform folders: the memo does not follow them), and no candidate name is loaded in
 * the process already; anything doubtful is 0 (load the library). Written only after a real
 * load, and not when the library or ld.so.cache changed less than a second before the load
 * began (it may have changed under the load: git's "racily clean" rule). Linux with glibc on
 * x86-64 only; elsewhere there is no memo and the library is loaded as before.
 */
#ifndef FDLINK_LIBMEMO_H
#define FDLINK_LIBMEMO_H

#include <stdatomic.h>
#include <stdint.h>

#define FDL__LIBMEMO_ID_SIZE 16

/*
 * What this process already knows (global state beside the dlopen tables, statically
 * initialised): filled once, lock-free (state 0 empty, 1 being filled, 2 ready), so that a
 * fork at any moment leaves a usable copy.
 */
typedef struct fdl__libmemo_mem {
    atomic_int state;
    unsigned major, minor;
    unsigned char id[FDL__LIBMEMO_ID_SIZE];
    atomic_int recorded; /* a memo was written (or tried) by this process, or read from one */
} fdl__libmemo_mem;

#define FDL__LIBMEMO_MEM_INIT {0, 0, 0, {0}, 0}

/* A library as fdl__dlopen_table opens it. */
typedef struct fdl__libspec {
    const char *what;          /* "nvJitLink" */
    const char *env;           /* the override variable, "FDLINK_NVJITLINK" */
    const char *const *names;  /* NULL-terminated, in the order tried */
    fdl__libmemo_mem *mem;
} fdl__libspec;

/*
 * The version of the library that dlopen would open now, from the memo in @p dir (NULL: only
 * what this process knows), without loading it. @p id receives the identity of the library
 * file and version (for memos about that library, such as accepted options).
 * @return 1 when the memo holds, 0 when in doubt (load the library)
 */
int fdl__libmemo_lookup(const fdl__libspec *lib, const char *dir, unsigned *major,
                        unsigned *minor, unsigned char id[FDL__LIBMEMO_ID_SIZE]);

/*
 * After a real load that began at @p load_start_ns (CLOCK_REALTIME): memo in @p dir that the
 * library holding @p sym (one of its entry points) has this version. Best effort, once per
 * process. @p dir NULL: in this process's memory only (what a key needs; nothing written), and a
 * later call with a directory writes it there. @p id, when not NULL, receives the library's
 * identity (all zero when none).
 * @return 1 when @p id is valid
 */
int fdl__libmemo_record(const fdl__libspec *lib, const char *dir, const void *sym,
                        int64_t load_start_ns, unsigned major, unsigned minor,
                        unsigned char id[FDL__LIBMEMO_ID_SIZE]);

/* CLOCK_REALTIME in nanoseconds (for load_start_ns). */
int64_t fdl__libmemo_now(void);

#endif /* FDLINK_LIBMEMO_H */
