#pragma once
#define CONSUMER_SCALE_UNIT 1.0f
