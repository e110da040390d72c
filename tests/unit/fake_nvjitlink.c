/*
 * A stand-in for libnvJitLink for the memo tests of test_cache (libmemo.h): it exports every
 * entry point fdlink looks up, and only nvJitLinkVersion works (77.FAKE_MINOR); the others
 * fail. Two builds with different minors stand for two releases of the library.
 */
#define FAIL(name)                                                                                 \
    int name(void);                                                                                \
    int name(void) { return 6; /* NVJITLINK_ERROR_INTERNAL */ }

FAIL(nvJitLinkCreate)
FAIL(nvJitLinkDestroy)
FAIL(nvJitLinkAddData)
FAIL(nvJitLinkComplete)
FAIL(nvJitLinkGetLinkedCubinSize)
FAIL(nvJitLinkGetLinkedCubin)
FAIL(nvJitLinkGetErrorLogSize)
FAIL(nvJitLinkGetErrorLog)
FAIL(nvJitLinkGetInfoLogSize)
FAIL(nvJitLinkGetInfoLog)
FAIL(nvJitLinkGetLinkedPtxSize)
FAIL(nvJitLinkGetLinkedPtx)

int nvJitLinkVersion(unsigned *major, unsigned *minor);
int nvJitLinkVersion(unsigned *major, unsigned *minor)
{
    *major = 77;
    *minor = FAKE_MINOR;
    return 0;
}
