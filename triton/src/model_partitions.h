// The model's partitions: its plan files, read and checked before the GPU, and each device's split
// taken (or made) for its instances (model_partitions.cpp).
#pragma once

#include <string>

#include "model.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

// A file's text, at most 1 MiB; on failure "" and `why` says what failed.
std::string read_file_text(const std::string& path, std::string& why);
TRITONSERVER_Error* read_plans(ModelState& state, const std::string& model_dir);
TRITONSERVER_Error* check_device_plans(const ModelState& state, int gpus, const std::string& why);
TRITONSERVER_Error* acquire_partitions(ModelState& state);

}  // namespace trtet_triton
