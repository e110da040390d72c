/*
 * What link.c, the top of link/src, offers the CLI beyond the public API (internal, not installed).
 */
#ifndef FDLINK_LINKTOP_H
#define FDLINK_LINKTOP_H

#include "fdlink/error.h"
#include "fdlink/link.h"

/*
 * The checks fdl_link_create makes of @p opts before it loads anything (each option, and what the
 * culink backend cannot do), so that the CLI says what is wrong with a command line before it
 * opens a device for cuLink. @return FDL_OK, or fdl_link_create's FDL_EINVAL or FDL_ELIMIT.
 */
int fdl__link_options_check(const fdl_link_options *opts, fdl_error *err);

/*
 * The threads the completed link's split compilation ran on (0: every processor, or no split)
 * and the jobserver tokens it took for them (issue 32), for `fdlink link -v`.
 */
void fdl__link_jobs(const fdl_link *link, int *threads, int *tokens, int *jobserver);
/* Whether the memory budget bounded those threads (jobs.c). */
int fdl__link_jobs_memory_bound(const fdl_link *link);

/* Whether the cubin @p data, @p size defines a function @p name (any binding): fdlink inspect's
 * LTO report (a function LTO inlined everywhere is gone from the linked cubin). */
int fdl__cubin_defines_function(const void *data, size_t size, const char *name);

#endif /* FDLINK_LINKTOP_H */
