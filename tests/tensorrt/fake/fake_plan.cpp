#include "fake/fake_plan.h"

#include <nlohmann/json.hpp>

#include <cstring>

#include "fake/fake_stats.h"

namespace trtet_fake {
namespace {

using nlohmann::json;

nvinfer1::Dims dims_of(const json& value) {
  nvinfer1::Dims dims{};
  dims.nbDims = static_cast<std::int32_t>(value.size());
  for (std::size_t i = 0; i < value.size() && i < static_cast<std::size_t>(nvinfer1::Dims::MAX_DIMS); ++i) {
    dims.d[i] = value[i].get<std::int64_t>();
  }
  return dims;
}

nvinfer1::DataType dtype_of(const std::string& name) {
  using nvinfer1::DataType;
  if (name == "float32") return DataType::kFLOAT;
  if (name == "float16") return DataType::kHALF;
  if (name == "bfloat16") return DataType::kBF16;
  if (name == "int8") return DataType::kINT8;
  if (name == "uint8") return DataType::kUINT8;
  if (name == "int32") return DataType::kINT32;
  if (name == "int64") return DataType::kINT64;
  if (name == "bool") return DataType::kBOOL;
  if (name == "fp8") return DataType::kFP8;
  if (name == "int4") return DataType::kINT4;
  throw std::runtime_error("unknown dtype " + name);
}

}  // namespace

const Tensor* Plan::find(const char* name) const {
  if (name == nullptr) return nullptr;
  for (const Tensor& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

bool parse_plan(const void* bytes, std::size_t size, Plan& plan, std::string& error) {
  const std::size_t magic = std::strlen(TRTET_FAKE_PLAN_MAGIC);
  if (bytes == nullptr || size < magic || std::memcmp(bytes, TRTET_FAKE_PLAN_MAGIC, magic) != 0) {
    error = "the bytes are no plan of the fake TensorRT (magic TRTETFAKEPLAN1 missing)";
    return false;
  }
  try {
    const char* text = static_cast<const char*>(bytes) + magic;
    const json spec = json::parse(text, text + (size - magic));
    for (const json& entry : spec.at("tensors")) {
      Tensor tensor;
      tensor.name = entry.at("name").get<std::string>();
      const std::string mode = entry.at("mode").get<std::string>();
      tensor.mode = mode == "input" ? nvinfer1::TensorIOMode::kINPUT
                    : mode == "output" ? nvinfer1::TensorIOMode::kOUTPUT
                                       : nvinfer1::TensorIOMode::kNONE;
      tensor.dtype = dtype_of(entry.value("dtype", std::string("float32")));
      tensor.shape = dims_of(entry.at("shape"));
      tensor.min.nbDims = -1;
      tensor.max.nbDims = -1;
      if (entry.contains("min")) tensor.min = dims_of(entry.at("min"));
      if (entry.contains("max")) tensor.max = dims_of(entry.at("max"));
      if (entry.contains("profiles")) {
        for (const json& bounds : entry.at("profiles")) {
          tensor.more_profiles.emplace_back(dims_of(bounds.at("min")), dims_of(bounds.at("max")));
        }
      }
      if (entry.value("location", std::string("device")) == "host") tensor.location = nvinfer1::TensorLocation::kHOST;
      if (entry.value("format", std::string("linear")) == "chw4") tensor.format = nvinfer1::TensorFormat::kCHW4;
      tensor.shape_tensor = entry.value("shape_tensor", false);
      tensor.aliased_input = entry.value("aliased_input", std::string());
      tensor.from = entry.value("from", std::string());
      tensor.data_dependent = entry.value("data_dependent", false);
      plan.tensors.push_back(std::move(tensor));
    }
    plan.profiles = spec.value("profiles", 1);
    plan.aux_streams = spec.value("aux_streams", 0);
    plan.streamable_bytes = spec.value("streamable_bytes", std::int64_t{0});
    plan.automatic_budget = spec.value("automatic_budget", std::int64_t{-1});
    plan.host_code = spec.value("host_code", false);
    if (spec.contains("fail")) {
      for (const json& what : spec.at("fail")) plan.fail.insert(what.get<std::string>());
    }
  } catch (const std::exception& e) {
    error = std::string("the fake plan's JSON is malformed: ") + e.what();
    return false;
  }
  return true;
}

std::int64_t volume(const nvinfer1::Dims& dims) {
  if (dims.nbDims < 0) return 0;
  std::int64_t count = 1;
  for (std::int32_t i = 0; i < dims.nbDims; ++i) {
    if (dims.d[i] < 0) return 0;
    count *= dims.d[i];
  }
  return count;
}

std::string to_text(const nvinfer1::Dims& dims) {
  if (dims.nbDims < 0) return "[unknown rank]";
  std::string text = "[";
  for (std::int32_t i = 0; i < dims.nbDims; ++i) text += (i > 0 ? ", " : "") + std::to_string(dims.d[i]);
  return text + "]";
}

}  // namespace trtet_fake
