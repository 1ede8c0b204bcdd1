// tensorrt/mapping.h: element types, Dims and Shape, and the binding table built by name from the
// blob's io_bindings and the engine's I/O tensors. Host-only: needs TensorRT's headers, not libnvinfer.
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include "tensorrt/mapping.h"

namespace torch_tensorrt::executorch_backend::tensorrt {
namespace {

using nvinfer1::TensorIOMode;
using TrtType = nvinfer1::DataType;

nvinfer1::Dims make_dims(std::initializer_list<std::int64_t> values) {
  nvinfer1::Dims dims{};
  for (std::int64_t v : values) dims.d[dims.nbDims++] = v;
  return dims;
}

nvinfer1::Dims no_dims() {
  nvinfer1::Dims dims{};
  dims.nbDims = -1;
  return dims;
}

EngineTensor input_tensor(std::string name, TrtType type, nvinfer1::Dims shape, nvinfer1::Dims min,
                          nvinfer1::Dims max) {
  EngineTensor t;
  t.name = std::move(name);
  t.mode = TensorIOMode::kINPUT;
  t.dtype = type;
  t.shape = shape;
  t.profile_min = min;
  t.profile_max = max;
  return t;
}

EngineTensor output_tensor(std::string name, TrtType type, nvinfer1::Dims shape) {
  EngineTensor t;
  t.name = std::move(name);
  t.mode = TensorIOMode::kOUTPUT;
  t.dtype = type;
  t.shape = shape;
  t.profile_min = no_dims();
  t.profile_max = no_dims();
  return t;
}

blob::IoBinding listed(std::string name, bool is_input, std::string dtype = "", std::vector<int64_t> shape = {}) {
  blob::IoBinding b;
  b.name = std::move(name);
  b.is_input = is_input;
  b.dtype = std::move(dtype);
  b.shape = std::move(shape);
  return b;
}

/// x [1..4, 3] float, y [1..4, 3] half → out [-1, 3] float; as Torch-TensorRT writes it (no dtype, no shape).
struct Fixture {
  blob::Metadata metadata;
  std::vector<EngineTensor> tensors;
  Fixture() {
    metadata.io_bindings = {listed("x", true), listed("y", true), listed("out", false)};
    // The engine's own order differs from the blob's: the binding follows the blob.
    tensors = {output_tensor("out", TrtType::kFLOAT, make_dims({-1, 3})),
               input_tensor("y", TrtType::kHALF, make_dims({-1, 3}), make_dims({1, 3}), make_dims({4, 3})),
               input_tensor("x", TrtType::kFLOAT, make_dims({-1, 3}), make_dims({1, 3}), make_dims({4, 3}))};
  }
  EngineTensor& tensor(const std::string& name) {
    for (EngineTensor& t : tensors) {
      if (t.name == name) return t;
    }
    throw std::logic_error("no tensor " + name);
  }
};

/// The error bind_by_name gives for `fixture`: its code, and its message must mention `needle`.
void expect_bind_error(const Fixture& fixture, ErrorCode code, const std::string& needle) {
  Result<std::vector<engine::IoDesc>> io = bind_by_name(fixture.metadata, fixture.tensors);
  ASSERT_FALSE(io.ok());
  TRTET_EXPECT_ERROR(io, code, needle);
}

/// expect_bind_error on a fresh Fixture that `change` altered first.
template <typename Change>
void expect_bind_error_when(Change change, ErrorCode code, const std::string& needle) {
  Fixture fixture;
  change(fixture);
  expect_bind_error(fixture, code, needle);
}

// ---- element types ----

TEST(TensorRTDataType, MapsEveryBindableType) {
  const std::pair<TrtType, DataType> pairs[] = {
      {TrtType::kFLOAT, DataType::kFloat32}, {TrtType::kHALF, DataType::kFloat16}, {TrtType::kBF16, DataType::kBFloat16},
      {TrtType::kINT8, DataType::kInt8},     {TrtType::kUINT8, DataType::kUInt8},  {TrtType::kINT32, DataType::kInt32},
      {TrtType::kINT64, DataType::kInt64},   {TrtType::kBOOL, DataType::kBool},    {TrtType::kFP8, DataType::kFloat8E4M3},
  };
  for (const auto& [trt, ours] : pairs) {
    EXPECT_EQ(from_tensorrt(trt), ours) << to_string(trt);
    EXPECT_EQ(to_tensorrt(ours), trt) << to_string(ours);
  }
}

TEST(TensorRTDataType, RefusesTypesWithoutCounterpart) {
  EXPECT_EQ(from_tensorrt(TrtType::kINT4), std::nullopt);  // sub-byte
  EXPECT_EQ(from_tensorrt(static_cast<TrtType>(99)), std::nullopt);
  EXPECT_EQ(to_tensorrt(DataType::kFloat64), std::nullopt);  // TensorRT has no 64-bit float
}

TEST(TensorRTDataType, NamesForMessages) {
  EXPECT_EQ(to_string(TrtType::kFLOAT), "kFLOAT");
  EXPECT_EQ(to_string(TrtType::kBF16), "kBF16");
  EXPECT_EQ(to_string(static_cast<TrtType>(99)), "DataType(99)");
  EXPECT_STREQ(to_string(TensorIOMode::kINPUT), "input");
  EXPECT_STREQ(to_string(TensorIOMode::kOUTPUT), "output");
}

// ---- Dims and Shape ----

TEST(TensorRTDims, ConcreteDimsBecomeAShape) {
  Result<Shape> shape = shape_from_dims(make_dims({2, 3, 4}));
  TRTET_ASSERT_OK(shape);
  EXPECT_EQ(*shape, Shape({2, 3, 4}));
  Result<Shape> scalar = shape_from_dims(make_dims({}));
  TRTET_ASSERT_OK(scalar);
  EXPECT_EQ(scalar->rank, 0);
  Result<Shape> full = shape_from_dims(make_dims({1, 2, 3, 4, 5, 6, 7, 8}));
  TRTET_ASSERT_OK(full);
  EXPECT_EQ(full->rank, Shape::kMaxRank);
}

TEST(TensorRTDims, ShapeRefusesWildcardsAndBadRanks) {
  EXPECT_EQ(shape_from_dims(make_dims({2, -1})).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(shape_from_dims(make_dims({-3})).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(shape_from_dims(no_dims()).status().code(), ErrorCode::kInvalidArgument);
  nvinfer1::Dims too_many = make_dims({1});
  too_many.nbDims = Shape::kMaxRank + 1;
  EXPECT_EQ(shape_from_dims(too_many).status().code(), ErrorCode::kInvalidArgument);
}

TEST(TensorRTDims, PatternKeepsWildcardsOnly) {
  Result<Shape> pattern = pattern_from_dims(make_dims({-1, 3}));
  TRTET_ASSERT_OK(pattern);
  EXPECT_EQ((*pattern)[0], -1);
  EXPECT_EQ((*pattern)[1], 3);
  EXPECT_EQ(pattern_from_dims(make_dims({-2})).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(pattern_from_dims(no_dims()).status().code(), ErrorCode::kInvalidArgument);
}

TEST(TensorRTDims, ShapeBecomesDims) {
  const nvinfer1::Dims dims = dims_from_shape(Shape({5, 0, 7}));
  EXPECT_EQ(dims.nbDims, 3);
  EXPECT_EQ(dims.d[0], 5);
  EXPECT_EQ(dims.d[1], 0);
  EXPECT_EQ(dims.d[2], 7);
  for (int i = 3; i < nvinfer1::Dims::MAX_DIMS; ++i) EXPECT_EQ(dims.d[i], 0) << i;
  Result<Shape> back = shape_from_dims(dims);
  TRTET_ASSERT_OK(back);
  EXPECT_EQ(*back, Shape({5, 0, 7}));
  EXPECT_EQ(dims_from_shape(Shape()).nbDims, 0);
}

TEST(TensorRTDims, Concreteness) {
  EXPECT_TRUE(is_concrete(make_dims({1, 2})));
  EXPECT_TRUE(is_concrete(make_dims({})));
  EXPECT_FALSE(is_concrete(make_dims({1, -1})));
  EXPECT_FALSE(is_concrete(no_dims()));
}

// ---- binding table ----

TEST(TensorRTBindByName, FollowsTheBlobOrder) {
  Fixture f;
  Result<std::vector<engine::IoDesc>> io = bind_by_name(f.metadata, f.tensors);
  TRTET_ASSERT_OK(io);
  ASSERT_EQ(io->size(), 3u);
  EXPECT_EQ((*io)[0].name, "x");
  EXPECT_TRUE((*io)[0].is_input);
  EXPECT_EQ((*io)[0].dtype, DataType::kFloat32);
  EXPECT_EQ((*io)[0].min_shape, Shape({1, 3}));
  EXPECT_EQ((*io)[0].max_shape, Shape({4, 3}));
  EXPECT_EQ((*io)[1].name, "y");
  EXPECT_EQ((*io)[1].dtype, DataType::kFloat16);
  EXPECT_EQ((*io)[2].name, "out");
  EXPECT_FALSE((*io)[2].is_input);
  EXPECT_EQ((*io)[2].min_shape.rank, 2);
  EXPECT_EQ((*io)[2].min_shape[0], -1);  // decided at run time
  EXPECT_EQ((*io)[2].min_shape[1], 3);
}

TEST(TensorRTBindByName, AcceptsMatchingDtypeAndShape) {
  Fixture f;
  f.metadata.io_bindings[0] = listed("x", true, "torch.float32", {-1, 3});
  f.metadata.io_bindings[1] = listed("y", true, "float16", {2, 3});  // a fixed dim within the profile
  f.metadata.io_bindings[2] = listed("out", false, "fp32", {7, 3});  // output wildcard: anything
  TRTET_EXPECT_OK(bind_by_name(f.metadata, f.tensors));
}

TEST(TensorRTBindByName, StaticInputWithoutProfileUsesItsShape) {
  Fixture f;
  f.tensor("x") = input_tensor("x", TrtType::kFLOAT, make_dims({2, 3}), no_dims(), no_dims());
  Result<std::vector<engine::IoDesc>> io = bind_by_name(f.metadata, f.tensors);
  TRTET_ASSERT_OK(io);
  EXPECT_EQ((*io)[0].min_shape, Shape({2, 3}));
  EXPECT_EQ((*io)[0].max_shape, Shape({2, 3}));
}

TEST(TensorRTBindByName, RefusesABlobWithoutBindings) {
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings.clear(); }, ErrorCode::kInvalidProgram,
                         "no io_bindings");
}

TEST(TensorRTBindByName, RefusesADuplicateName) {
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings.push_back(listed("x", true)); },
                         ErrorCode::kInvalidProgram, "\"x\" twice");
}

TEST(TensorRTBindByName, RefusesANameTheEngineLacks) {
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings[1].name = "z"; }, ErrorCode::kInvalidProgram,
                         "(\"z\"): the engine has no I/O tensor");
}

TEST(TensorRTBindByName, RefusesAnEngineTensorTheBlobLacks) {
  expect_bind_error_when(
      [](Fixture& f) { f.tensors.push_back(output_tensor("extra", TrtType::kFLOAT, make_dims({1}))); },
      ErrorCode::kInvalidProgram, "\"extra\" is not among the blob's io_bindings");
}

TEST(TensorRTBindByName, RefusesAnIoModeMismatch) {
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings[2].is_input = true; }, ErrorCode::kInvalidProgram,
                         "the blob lists it as an input, the engine's tensor \"out\" is an output");
}

TEST(TensorRTBindByName, RefusesADtypeMismatch) {
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings[1].dtype = "float32"; }, ErrorCode::kInvalidProgram,
                         "the blob says dtype float32, the engine's tensor is float16");
}

TEST(TensorRTBindByName, RefusesAnUnknownBlobDtype) {
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings[0].dtype = "complex64"; }, ErrorCode::kInvalidProgram,
                         "\"complex64\" is not a known type");
}

TEST(TensorRTBindByName, RefusesAnEngineTypeWithoutCounterpart) {
  expect_bind_error_when([](Fixture& f) { f.tensor("out").dtype = TrtType::kINT4; }, ErrorCode::kInvalidProgram,
                         "kINT4 is not supported");
}

TEST(TensorRTBindByName, RefusesAShapeMismatch) {
  const ErrorCode kInvalid = ErrorCode::kInvalidProgram;
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings[0].shape = {-1, 3, 1}; }, kInvalid, "rank 3");
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings[0].shape = {-1, 4}; }, kInvalid, "fixes it to 3");
  expect_bind_error_when([](Fixture& f) { f.metadata.io_bindings[0].shape = {5, 3}; }, kInvalid,
                         "outside the engine's profile [1, 3]..[4, 3]");
}

TEST(TensorRTBindByName, RefusesUnusableProfiles) {
  const ErrorCode kInvalid = ErrorCode::kInvalidProgram;
  expect_bind_error_when([](Fixture& f) { f.tensor("x").profile_min = make_dims({5, 3}); }, kInvalid,
                         "exceeds its maximum");
  expect_bind_error_when([](Fixture& f) { f.tensor("x").profile_min = f.tensor("x").profile_max = no_dims(); },
                         kInvalid, "profile 0 minimum is unusable");
  expect_bind_error_when([](Fixture& f) { f.tensor("x").profile_max = make_dims({4, 3, 1}); }, kInvalid,
                         "do not have the tensor's rank");
}

TEST(TensorRTBindByName, RefusesIoTheDelegateCannotBind) {
  const ErrorCode kUnsupported = ErrorCode::kNotSupported;
  expect_bind_error_when([](Fixture& f) { f.tensor("x").shape_tensor = true; }, kUnsupported, "shape tensor");
  expect_bind_error_when([](Fixture& f) { f.tensor("out").on_host = true; }, kUnsupported, "host memory");
  expect_bind_error_when([](Fixture& f) { f.tensor("y").linear = false; }, kUnsupported, "non-linear");
}

// ---- aliases ----

/// cache (input), x (input) → cache_out (output, in place into cache), y (output).
struct AliasFixture {
  blob::Metadata metadata;
  std::vector<EngineTensor> tensors;
  std::vector<engine::IoDesc> io;
  AliasFixture() {
    metadata.io_bindings = {listed("cache", true), listed("x", true), listed("cache_out", false), listed("y", false)};
    tensors = {input_tensor("cache", TrtType::kHALF, make_dims({8}), make_dims({8}), make_dims({8})),
               input_tensor("x", TrtType::kHALF, make_dims({8}), make_dims({8}), make_dims({8})),
               output_tensor("cache_out", TrtType::kHALF, make_dims({8})),
               output_tensor("y", TrtType::kHALF, make_dims({8}))};
    blob::AliasedIo alias;
    alias.output = "cache_out";
    alias.input = "cache";
    alias.kind = blob::AliasKind::kKvCacheUpdate;
    metadata.aliased_io = {alias};
    tensors[2].aliased_input = "cache";
    io = bind_by_name(metadata, tensors).value();
  }
};

void expect_alias_error(const AliasFixture& f, const std::string& needle) {
  Result<std::vector<engine::Alias>> aliases = map_aliases(f.metadata, f.io, f.tensors);
  ASSERT_FALSE(aliases.ok());
  TRTET_EXPECT_ERROR(aliases, ErrorCode::kInvalidProgram, needle);
}

TEST(TensorRTAliases, NamesBecomeBindingIndices) {
  AliasFixture f;
  Result<std::vector<engine::Alias>> aliases = map_aliases(f.metadata, f.io, f.tensors);
  TRTET_ASSERT_OK(aliases);
  ASSERT_EQ(aliases->size(), 1u);
  EXPECT_EQ((*aliases)[0].output, 2);
  EXPECT_EQ((*aliases)[0].input, 0);
  EXPECT_EQ((*aliases)[0].kind, engine::AliasKind::kKvCacheUpdate);
}

TEST(TensorRTAliases, UserAliasesNeedNoEngineReport) {
  AliasFixture f;
  blob::AliasedIo user;
  user.output = "y";
  user.input = "x";
  user.kind = blob::AliasKind::kUser;
  f.metadata.aliased_io.push_back(user);
  Result<std::vector<engine::Alias>> aliases = map_aliases(f.metadata, f.io, f.tensors);
  TRTET_ASSERT_OK(aliases);
  ASSERT_EQ(aliases->size(), 2u);
  EXPECT_EQ((*aliases)[1].output, 3);
  EXPECT_EQ((*aliases)[1].input, 1);
  EXPECT_EQ((*aliases)[1].kind, engine::AliasKind::kUser);
}

TEST(TensorRTAliases, NoAliases) {
  AliasFixture f;
  f.metadata.aliased_io.clear();
  f.tensors[2].aliased_input.clear();
  Result<std::vector<engine::Alias>> aliases = map_aliases(f.metadata, f.io, f.tensors);
  TRTET_ASSERT_OK(aliases);
  EXPECT_TRUE(aliases->empty());
}

TEST(TensorRTAliases, RefusesUnknownOrSwappedNames) {
  AliasFixture unknown;
  unknown.metadata.aliased_io[0].output = "nope";
  expect_alias_error(unknown, "\"nope\" as an output");
  AliasFixture swapped;
  swapped.metadata.aliased_io[0].output = "cache";
  swapped.metadata.aliased_io[0].input = "cache_out";
  expect_alias_error(swapped, "\"cache\" as an output");
  AliasFixture input_is_output;
  input_is_output.metadata.aliased_io[0].input = "y";
  expect_alias_error(input_is_output, "\"y\" as an input");
}

TEST(TensorRTAliases, RefusesAnOutputAliasedTwice) {
  AliasFixture f;
  f.metadata.aliased_io.push_back(f.metadata.aliased_io[0]);
  expect_alias_error(f, "more than once");
}

TEST(TensorRTAliases, RefusesInPlaceOutputsTheBlobDoesNotDeclare) {
  AliasFixture undeclared;
  undeclared.metadata.aliased_io.clear();
  expect_alias_error(undeclared, "does not declare it");
  AliasFixture other_input;
  other_input.metadata.aliased_io[0].input = "x";
  expect_alias_error(other_input, "the blob says input \"x\"");
}

}  // namespace
}  // namespace torch_tensorrt::executorch_backend::tensorrt
