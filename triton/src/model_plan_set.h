// A model that follows a plan set: its set file read and checked before the GPU, and each device's
// plan set taken (or made) for its instances (model_plan_set.cpp).
#pragma once

#include <string>

#include "model.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

TRITONSERVER_Error* read_plan_set_file(ModelState& state, const std::string& model_dir);
TRITONSERVER_Error* acquire_plan_set(ModelState& state);

}  // namespace trtet_triton
