/**
 * @file fdlink/fdlink.h
 * Umbrella header: every public fdlink header.
 */
#ifndef FDLINK_FDLINK_H
#define FDLINK_FDLINK_H

#include "fdlink/version.h"
#include "fdlink/error.h"
#include "fdlink/sig.h"
#include "fdlink/decl.h"
#include "fdlink/ptx.h"
#include "fdlink/abi.h"
#include "fdlink/cache.h"
#include "fdlink/link.h"
#include "fdlink/host.h"
#include "fdlink/verify.h"
#include "fdlink/gen.h"

#endif /* FDLINK_FDLINK_H */
