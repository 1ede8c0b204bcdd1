#pragma once
#include "low/low.h"
#include "low/inner.h"  // planted: a header the lower layer keeps to itself
