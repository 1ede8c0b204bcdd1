#include "data_types.h"

namespace trtet_triton {

// ---- data types: the program's scalar types Triton carries ----

constexpr DataType kDataTypes[] = {
    {::executorch::aten::ScalarType::Float, TRITONSERVER_TYPE_FP32, "TYPE_FP32", 4},
    {::executorch::aten::ScalarType::Half, TRITONSERVER_TYPE_FP16, "TYPE_FP16", 2},
    {::executorch::aten::ScalarType::BFloat16, TRITONSERVER_TYPE_BF16, "TYPE_BF16", 2},
    {::executorch::aten::ScalarType::Double, TRITONSERVER_TYPE_FP64, "TYPE_FP64", 8},
    {::executorch::aten::ScalarType::Int, TRITONSERVER_TYPE_INT32, "TYPE_INT32", 4},
    {::executorch::aten::ScalarType::Long, TRITONSERVER_TYPE_INT64, "TYPE_INT64", 8},
    {::executorch::aten::ScalarType::Short, TRITONSERVER_TYPE_INT16, "TYPE_INT16", 2},
    {::executorch::aten::ScalarType::Char, TRITONSERVER_TYPE_INT8, "TYPE_INT8", 1},
    {::executorch::aten::ScalarType::Byte, TRITONSERVER_TYPE_UINT8, "TYPE_UINT8", 1},
    {::executorch::aten::ScalarType::Bool, TRITONSERVER_TYPE_BOOL, "TYPE_BOOL", 1},
};

const DataType* data_type_of(::executorch::aten::ScalarType type) {
  for (const DataType& d : kDataTypes) {
    if (d.et == type) return &d;
  }
  return nullptr;
}

const char* config_name_of(const TRITONSERVER_DataType type) {
  for (const DataType& d : kDataTypes) {
    if (d.triton == type) return d.config;
  }
  return "a type this backend does not carry";
}

}  // namespace trtet_triton
