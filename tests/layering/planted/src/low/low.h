#pragma once
#include "high/high.h"  // planted: a lower layer reaching up
