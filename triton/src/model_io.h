// The model's inputs and outputs: the program's, read from its method's metadata, against the
// config's (or written into it by auto-complete) (model_io.cpp).
#pragma once

#include <executorch/runtime/executor/method_meta.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "data_types.h"
#include "errors.h"
#include "program_shapes.h"
#include "shape_rule.h"
#include "trtet_triton/triton_api.h"

namespace trtet_triton {

using Json = nlohmann::json;

struct IoSpec {
  std::string name;
  const DataType* type = nullptr;
  std::vector<std::int64_t> dims;  // the program's sizes: the shape, or the bound of a dynamic tensor
  Dynamism dynamism = Dynamism::kStatic;
  std::vector<std::int64_t> config_dims;  // what the server was told: -1 where any size up to the bound
  bool planned = false;  // memory-planned by the program: set_input copies into it; outputs are not set
  std::size_t bytes = 0;  // of the shape or the bound

  bool dynamic() const { return dynamism != Dynamism::kStatic; }
  // A request's shape for this tensor: nothing where it is served, else the reason (Note [dynamic shapes]).
  std::string check_shape(const std::int64_t* shape, std::uint32_t rank) const;
};

TRITONSERVER_Error* get_int(const Json& value, const std::string& what, std::int64_t& out);
// "name TYPE [dims]" per tensor, with "(dynamic, within [bound])" for a dynamic one: for the log.
std::string io_text(const std::vector<IoSpec>& specs);
TRITONSERVER_Error* read_io(const etr::MethodMeta& meta, bool inputs, const std::vector<Dynamism>& dynamism,
                            std::vector<IoSpec>& out);
// With `batched` (max_batch_size > 0) the config's dims leave out dim 0, the batch dim (Note [batching
// requests]); each spec's config_dims still has it, as -1.
TRITONSERVER_Error* check_io(Json& config, const char* key, std::vector<IoSpec>& program, bool autocomplete,
                             bool& changed, bool batched = false);
// With max_batch_size `max_batch` > 0: every input and output dynamic, with a bound of at least
// `max_batch` in dim 0; else the first that is not, named.
TRITONSERVER_Error* check_batchable(const std::vector<IoSpec>& inputs, const std::vector<IoSpec>& outputs,
                                    std::int64_t max_batch);

}  // namespace trtet_triton
