// The program's scalar types Triton carries (data_types.cpp).
#pragma once

#include <executorch/runtime/core/exec_aten/exec_aten.h>

#include <cstddef>

#include "trtet_triton/triton_api.h"

namespace trtet_triton {

struct DataType {
  ::executorch::aten::ScalarType et;
  TRITONSERVER_DataType triton;
  const char* config;  // model config's name
  std::size_t size;
};

const DataType* data_type_of(::executorch::aten::ScalarType type);

// The model config's name of a Triton type ("TYPE_FP32"), or "a type this backend does not carry".
const char* config_name_of(TRITONSERVER_DataType type);

}  // namespace trtet_triton
