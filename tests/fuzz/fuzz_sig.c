/*
 * Fuzz fdl_sig_parse. The input is the signature text, exactly `size` bytes (not NUL-terminated).
 * Properties: a failure fills the error record well (fuzz.h) with a column inside the text; a
 * success prints back canonically, the canonical text parses to an equal signature and prints the
 * same again, and fdl_sig_format truncates like snprintf.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <string.h>

#include "fdlink/sig.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    fdl_sig sig;
    fdl_error err = FDL_ERROR_INIT;
    int rc = fdl_sig_parse(&sig, text, size, &err);
    if (rc != FDL_OK) {
        FUZZ_REQUIRE(rc == FDL_EPARSE || rc == FDL_ELIMIT, "status %d", rc);
        fuzz_check_error(&err, rc);
        FUZZ_REQUIRE(err.line == 0 && err.column >= 1, "position %u:%u", err.line, err.column);
        size_t limit = size < FDL_SIG_MAX_LENGTH ? size : FDL_SIG_MAX_LENGTH;
        FUZZ_REQUIRE(err.column <= limit + 1, "column %u past the text (%zu bytes)", err.column,
                     size);
        return 0;
    }
    FUZZ_REQUIRE(err.code == FDL_OK, "err touched on success");
    FUZZ_REQUIRE(!memchr(text, '\0', size), "a NUL byte was accepted");
    FUZZ_REQUIRE(sig.nparams <= FDL_SIG_MAX_PARAMS, "%zu parameters", sig.nparams);

    char canon[2 * FDL_SIG_MAX_LENGTH];
    size_t n = fdl_sig_format(&sig, canon, sizeof canon);
    FUZZ_REQUIRE(n < sizeof canon && strlen(canon) == n, "format length %zu", n);
    FUZZ_REQUIRE(n <= FDL_SIG_MAX_LENGTH, "canonical form of %zu bytes cannot be parsed back", n);

    fdl_sig again;
    rc = fdl_sig_parse(&again, canon, n, &err);
    FUZZ_REQUIRE(rc == FDL_OK, "canonical '%s' does not parse: %s", canon, err.message);
    FUZZ_REQUIRE(fdl_sig_equal(&sig, &again), "'%s' parses to a different signature", canon);
    char canon2[2 * FDL_SIG_MAX_LENGTH];
    fdl_sig_format(&again, canon2, sizeof canon2);
    FUZZ_REQUIRE(strcmp(canon, canon2) == 0, "'%s' prints as '%s'", canon, canon2);

    /* snprintf behaviour: every prefix size gives the prefix, NUL-terminated, and the full count */
    size_t sizes[] = {0, 1, 2, n / 2 + 1, n, n + 1};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char small[2 * FDL_SIG_MAX_LENGTH];
        memset(small, 'x', sizeof small);
        size_t k = sizes[i];
        FUZZ_REQUIRE(fdl_sig_format(&sig, k ? small : NULL, k) == n, "count for size %zu", k);
        if (k) {
            FUZZ_REQUIRE(strlen(small) == (k - 1 < n ? k - 1 : n), "truncation to %zu", k);
            FUZZ_REQUIRE(memcmp(small, canon, strlen(small)) == 0, "prefix for size %zu", k);
        }
    }
    for (size_t i = 0; i < sig.nparams; i++) {
        char t[512];
        size_t tn = fdl_type_format(sig.params[i], t, sizeof t);
        FUZZ_REQUIRE(tn < sizeof t && strstr(canon, t) != NULL, "parameter %zu '%s'", i, t);
        FUZZ_REQUIRE(fdl_type_size(sig.params[i]) > 0, "parameter %zu has size 0", i);
    }
    return 0;
}
