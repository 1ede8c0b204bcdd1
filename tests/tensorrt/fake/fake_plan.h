// The test-only TensorRT's "plan": the magic TRTET_FAKE_PLAN_MAGIC, then JSON describing the engine
// (no TensorRT plan can be built where the tests are written, so the fake reads its own format):
//
//   {"tensors": [{"name": "x", "mode": "input", "dtype": "float32", "shape": [-1, 4],
//                 "min": [1, 4], "max": [8, 4], "profiles": [{"min": [9, 4], "max": [64, 4]}]},
//                {"name": "y", "mode": "output", "dtype": "float32", "shape": [-1, 4], "from": "x"}],
//    "profiles": 1, "aux_streams": 2, "streamable_bytes": 0, "automatic_budget": -1,
//    "fail": ["create_context", "enqueue", ...]}
//
// "profiles" at the top is the engine's profile count; an input's "profiles" gives the bounds of
// profiles 1, 2, ... (absent: those of profile 0). Per tensor, optional: "location" ("device"|"host"), "format" ("linear"|"chw4"), "shape_tensor",
// "aliased_input" (outputs: getAliasedInputTensor), "from" (outputs: shape and values follow that
// input: value + 1 for float32), "data_dependent" (outputs: the shape keeps its -1s).
// "host_code": true marks a plan that carries host code (as a version-compatible plan with its lean
// runtime, or serialized plugins): deserializeCudaEngine refuses it unless setEngineHostCodeAllowed(true).
// "fail" injects a failure, logged as a TensorRT error: deserialize, create_context, set_input_shape,
// infer_shapes, set_address, set_budget, enqueue.
#pragma once

#include <NvInferRuntime.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace trtet_fake {

struct Tensor {
  std::string name;
  nvinfer1::TensorIOMode mode = nvinfer1::TensorIOMode::kINPUT;
  nvinfer1::DataType dtype = nvinfer1::DataType::kFLOAT;
  nvinfer1::Dims shape{};
  nvinfer1::Dims min{};  ///< inputs; nbDims -1 when not given
  nvinfer1::Dims max{};
  std::vector<std::pair<nvinfer1::Dims, nvinfer1::Dims>> more_profiles;  ///< profiles 1..: min, max
  /// The bounds in `profile` (profile 0's where none are given); nbDims -1 when the input has none.
  nvinfer1::Dims profile_min(int profile) const {
    return profile > 0 && profile <= static_cast<int>(more_profiles.size()) ? more_profiles[profile - 1].first : min;
  }
  nvinfer1::Dims profile_max(int profile) const {
    return profile > 0 && profile <= static_cast<int>(more_profiles.size()) ? more_profiles[profile - 1].second : max;
  }
  nvinfer1::TensorLocation location = nvinfer1::TensorLocation::kDEVICE;
  nvinfer1::TensorFormat format = nvinfer1::TensorFormat::kLINEAR;
  bool shape_tensor = false;
  std::string aliased_input;
  std::string from;
  bool data_dependent = false;
};

struct Plan {
  std::vector<Tensor> tensors;
  int profiles = 1;
  int aux_streams = 0;
  std::int64_t streamable_bytes = 0;
  std::int64_t automatic_budget = -1;
  std::set<std::string> fail;
  bool host_code = false;

  const Tensor* find(const char* name) const;
  bool fails(const char* what) const { return fail.count(what) != 0; }
};

/// Parses `bytes`; false with `error` set when they are no fake plan.
bool parse_plan(const void* bytes, std::size_t size, Plan& plan, std::string& error);

/// Elements of `dims` (0 for an unknown rank or a negative dimension).
std::int64_t volume(const nvinfer1::Dims& dims);

/// "[2, 4]".
std::string to_text(const nvinfer1::Dims& dims);

}  // namespace trtet_fake
