// A model as the backend's CPU tests make it (no program behind it): two FP32 inputs, input_0 and
// input_1, dynamic within [8, 64], and the max_batch_size given.
#pragma once

#include <cstdint>
#include <string>

#include "model.h"

namespace trtet_triton_test {

inline void two_input_model(trtet_triton::ModelState& model, const std::string& name, std::int64_t max_batch) {
  model.name = name;
  model.max_batch = max_batch;
  for (const char* input : {"input_0", "input_1"}) {
    trtet_triton::IoSpec spec;
    spec.name = input;
    spec.type = trtet_triton::data_type_of(::executorch::aten::ScalarType::Float);
    spec.dims = {8, 64};
    spec.dynamism = trtet_triton::Dynamism::kDynamicBound;
    spec.config_dims = {-1, -1};
    spec.bytes = 8 * 64 * 4;
    model.inputs.push_back(spec);
  }
}

}  // namespace trtet_triton_test
