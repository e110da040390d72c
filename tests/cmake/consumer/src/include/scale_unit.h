#pragma once
#ifndef CONSUMER_USAGE_REQUIREMENTS
#error "the usage requirements of consumer_headers did not reach nvcc"
#endif
#include "detail/unit.h"
