// The model's partitions: its plan files, read and checked before the GPU, and each device's split
// taken (or made) for its instances (model_partitions.cpp).
#pragma once

#include <cstddef>
#include <string>

#include "model.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

// The most a plan file or plan set file the config names may hold.
constexpr std::size_t kMaxConfigFileBytes = std::size_t{1} << 20;
// A regular file's text, at most kMaxConfigFileBytes; on failure "" and `why` says what failed (a
// FIFO, a device or a directory is refused as not a regular file, without waiting on it).
std::string read_file_text(const std::string& path, std::string& why);
TRITONSERVER_Error* read_plans(ModelState& state, const std::string& model_dir);
TRITONSERVER_Error* check_device_plans(const ModelState& state, int gpus, const std::string& why);
TRITONSERVER_Error* acquire_partitions(ModelState& state);

}  // namespace trtet_triton
