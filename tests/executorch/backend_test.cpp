// TensorRTBackend without a program: registration, error mapping, argument views, and every init
// error path, calling the backend as ExecuTorch's Method does. No GPU needed.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/evalue.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/error_match.h"
#include "common/gpu.h"
#include "engines/fake_engine.h"
#include "backend/error_map.h"
#include "executorch/executorch_test_support.h"
#include "backend/registration.h"
#include "backend/tensor_views.h"

namespace trtet_test {
namespace {

using etr::Error;
using ex::ErrorCode;

constexpr const char* kFake = "fake min=1x4 max=64x4096";

class BackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ensure_executorch_runtime();
    clear_log();
  }
};

TEST_F(BackendTest, RegisteredAsTensorRTBackendAtLoad) {
  EXPECT_EQ(ex::registration_status(), Error::Ok);
  EXPECT_TRUE(ex::detail::kTensorRTBackendRegistered);
  etr::BackendInterface* backend = etr::get_backend_class("TensorRTBackend");
  ASSERT_NE(backend, nullptr);
  EXPECT_NE(dynamic_cast<ex::TensorRTBackend*>(backend), nullptr);
  EXPECT_TRUE(backend->is_available());
  EXPECT_STREQ(ex::TensorRTBackend::kBackendId, "TensorRTBackend");
}

TEST_F(BackendTest, ErrorsMapByMeaning) {
  using ex::DelegatePhase;
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kOk, DelegatePhase::kInit), Error::Ok);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kInvalidArgument, DelegatePhase::kExecute), Error::InvalidArgument);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kInvalidProgram, DelegatePhase::kInit), Error::InvalidProgram);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kInternal, DelegatePhase::kExecute), Error::Internal);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kIncompatible, DelegatePhase::kInit),
            Error::DelegateInvalidCompatibility);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kNotSupported, DelegatePhase::kInit), Error::NotSupported);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kNotFound, DelegatePhase::kInit), Error::NotFound);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kMemoryAllocationFailed, DelegatePhase::kInit),
            Error::DelegateMemoryAllocationFailed);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kMemoryAllocationFailed, DelegatePhase::kExecute),
            Error::MemoryAllocationFailed);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kNoDevice, DelegatePhase::kExecute), Error::AccessFailed);
  EXPECT_EQ(ex::to_executorch_error(ErrorCode::kInvalidState, DelegatePhase::kExecute), Error::InvalidState);
}

TEST_F(BackendTest, ReportLogsTheMessageThroughExecuTorch) {
  EXPECT_EQ(ex::report(ex::make_error(ErrorCode::kInvalidArgument, "input 1 is wrong"), ex::DelegatePhase::kExecute,
                       "execute"),
            Error::InvalidArgument);
  EXPECT_NE(captured_log().find("TensorRTBackend execute: InvalidArgument: input 1 is wrong"), std::string::npos)
      << captured_log();
}

TEST_F(BackendTest, ReportLogsALongMessageWholeInParts) {
  // ExecuTorch cuts a log line at 256 bytes: a message naming a long path before its cause must still
  // reach the log whole, cause included.
  clear_log();
  std::string path;  // words, so the parts are cut after spaces
  while (path.size() < 600) path += "/directory of a long build path";
  EXPECT_EQ(ex::report(ex::make_error(ErrorCode::kInternal, "loading %s: an illegal memory access was encountered",
                                      path.c_str()),
                       ex::DelegatePhase::kInit, "init"),
            Error::Internal);
  const std::string log = captured_log();
  EXPECT_NE(log.find("encountered"), std::string::npos) << log;  // the end of the message reached the log
  EXPECT_NE(log.find("TensorRTBackend init (continued): "), std::string::npos) << log;
  std::string joined;  // the parts, their prefixes dropped, are the message
  for (std::size_t at = 0; at < log.size();) {
    const std::size_t end = log.find('\n', at);
    std::string line = log.substr(at, end - at);
    EXPECT_LE(line.size(), ex::kLogLine) << line;
    for (const char* prefix : {"TensorRTBackend init (continued): ", "TensorRTBackend init: "}) {
      if (line.rfind(prefix, 0) == 0) line.erase(0, std::strlen(prefix));
    }
    joined += line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  EXPECT_EQ(joined, "Internal: loading " + path + ": an illegal memory access was encountered");
}

// ---- argument views ----

TEST_F(BackendTest, ScalarTypesMapToEngineTypes) {
  using ST = ::executorch::aten::ScalarType;
  EXPECT_EQ(ex::data_type_of(ST::Float).value(), ex::DataType::kFloat32);
  EXPECT_EQ(ex::data_type_of(ST::Half).value(), ex::DataType::kFloat16);
  EXPECT_EQ(ex::data_type_of(ST::BFloat16).value(), ex::DataType::kBFloat16);
  EXPECT_EQ(ex::data_type_of(ST::Double).value(), ex::DataType::kFloat64);
  EXPECT_EQ(ex::data_type_of(ST::Char).value(), ex::DataType::kInt8);
  EXPECT_EQ(ex::data_type_of(ST::Byte).value(), ex::DataType::kUInt8);
  EXPECT_EQ(ex::data_type_of(ST::Int).value(), ex::DataType::kInt32);
  EXPECT_EQ(ex::data_type_of(ST::Long).value(), ex::DataType::kInt64);
  EXPECT_EQ(ex::data_type_of(ST::Bool).value(), ex::DataType::kBool);
  EXPECT_EQ(ex::data_type_of(ST::Float8_e4m3fn).value(), ex::DataType::kFloat8E4M3);
  auto complex = ex::data_type_of(ST::ComplexFloat);
  ASSERT_FALSE(complex.ok());
  EXPECT_EQ(complex.status().code(), ErrorCode::kInvalidArgument);
}

struct ViewsFixture {
  std::vector<float> x = std::vector<float>(8 * 64), y = std::vector<float>(8 * 64), out = std::vector<float>(8 * 64);
  ::executorch::extension::TensorPtr tx, ty, tout;
  std::vector<etr::EValue> values;
  std::vector<etr::EValue*> args;
  std::unique_ptr<FakeEngine> engine = FakeEngine::elementwise(Shape{1, 4}, Shape{64, 4096});

  explicit ViewsFixture(::executorch::aten::Device out_device = ::executorch::aten::Device(
                            ::executorch::aten::DeviceType::CPU)) {
    using ::executorch::extension::from_blob;
    tx = from_blob(x.data(), {2, 16});
    ty = from_blob(y.data(), {2, 16});
    tout = from_blob(out.data(), {8, 64}, ::executorch::aten::ScalarType::Float, out_device);
    values = {etr::EValue(*tx), etr::EValue(*ty), etr::EValue(*tout)};
    for (auto& value : values) args.push_back(&value);
  }
  etr::Span<etr::EValue*> span() { return {args.data(), args.size()}; }
};

TEST_F(BackendTest, ViewsFollowBindingOrderWithShapesTypesAndCallbacks) {
  ViewsFixture f;
  std::vector<ex::delegate::TensorView> views;
  TRTET_ASSERT_OK(ex::make_tensor_views(*f.engine, f.span(), views));
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[0].data, f.x.data());
  EXPECT_EQ(views[0].shape, (Shape{2, 16}));
  EXPECT_EQ(views[0].capacity_bytes, 2u * 16 * sizeof(float));
  EXPECT_EQ(views[0].dtype, ex::DataType::kFloat32);
  EXPECT_EQ(views[0].hint, ex::delegate::MemoryHint::kUnknown);  // CPU is also ExecuTorch's default: no evidence
  EXPECT_EQ(views[0].resize, nullptr);                            // inputs are never resized
  ASSERT_NE(views[2].resize, nullptr);
  ASSERT_NE(views[2].set_data, nullptr);

  // The output is resized through ExecuTorch (within its bound) and the view re-read.
  TRTET_ASSERT_OK(views[2].resize(views[2].context, views[2], Shape{2, 16}));
  EXPECT_EQ(views[2].shape, (Shape{2, 16}));
  EXPECT_EQ(views[2].capacity_bytes, 2u * 16 * sizeof(float));
  EXPECT_EQ(f.tout->size(0), 2);
  EXPECT_EQ(f.tout->size(1), 16);

  // Beyond the tensor's bound ExecuTorch refuses, and the error says so.
  auto too_big = views[2].resize(views[2].context, views[2], Shape{64, 4096});
  TRTET_EXPECT_ERROR(too_big, ErrorCode::kInvalidArgument, "cannot resize");

  // An aliased output is pointed at its input's memory.
  TRTET_ASSERT_OK(views[2].set_data(views[2].context, views[2], f.x.data()));
  EXPECT_EQ(f.tout->const_data_ptr(), static_cast<const void*>(f.x.data()));
  EXPECT_EQ(views[2].data, f.x.data());
}

TEST_F(BackendTest, ViewsTakeDeviceResidencyFromExecuTorchDeviceInfo) {
  ViewsFixture f(::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0));
  std::vector<ex::delegate::TensorView> views;
  TRTET_ASSERT_OK(ex::make_tensor_views(*f.engine, f.span(), views));
  EXPECT_EQ(views[2].hint, ex::delegate::MemoryHint::kDevice);
  EXPECT_EQ(views[0].hint, ex::delegate::MemoryHint::kUnknown);
}

TEST_F(BackendTest, ViewsRejectWrongArgumentCountAndNonTensors) {
  ViewsFixture f;
  std::vector<ex::delegate::TensorView> views;
  auto short_call = ex::make_tensor_views(*f.engine, {f.args.data(), 2}, views);
  TRTET_EXPECT_ERROR(short_call, ErrorCode::kInvalidArgument, "passes 2 arguments, the engine has 3 bindings");

  etr::EValue number(static_cast<int64_t>(3));
  f.args[1] = &number;
  auto not_tensor = ex::make_tensor_views(*f.engine, f.span(), views);
  TRTET_EXPECT_ERROR(not_tensor, ErrorCode::kInvalidArgument, "argument 1 (input \"y\") is not a tensor");
}

// ---- init: what it builds and what it reads ----

TEST_F(BackendTest, InitBuildsTheBlobsEngineAndFreesTheBlob) {
  RecordingFactory factory;
  InitHarness harness;
  ASSERT_EQ(harness.init(elementwise_blob(kFake)), Error::Ok) << captured_log();
  EXPECT_NE(harness.handle(), nullptr);
  EXPECT_TRUE(harness.freed_by_init());
  const auto requests = factory.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].spec, kFake);
  EXPECT_EQ(requests[0].device, 0);
  EXPECT_EQ(requests[0].method_name, "forward");
  EXPECT_EQ(requests[0].io_bindings, 3u);
  EXPECT_FALSE(requests[0].budget.has_value());
}

TEST_F(BackendTest, BudgetFromCompileSpec) {
  RecordingFactory factory;
  InitHarness harness;
  ASSERT_EQ(harness.init(elementwise_blob(kFake), {{"weight_streaming_budget", "1048576"}, {"other_key", "x"}}),
            Error::Ok)
      << captured_log();
  ASSERT_EQ(factory.requests().size(), 1u);
  EXPECT_EQ(factory.requests()[0].budget, std::optional<std::uint64_t>(1048576));
}

TEST_F(BackendTest, LoadTimeIntOptionTakesPrecedenceOverCompileSpec) {
  RecordingFactory factory;
  InitHarness harness;
  ASSERT_EQ(harness.init(elementwise_blob(kFake), {{"weight_streaming_budget", "1048576"}},
                         {int_option("weight_streaming_budget", 4096)}),
            Error::Ok)
      << captured_log();
  EXPECT_EQ(factory.requests().at(0).budget, std::optional<std::uint64_t>(4096));
}

TEST_F(BackendTest, LoadTimeStringOptionTakesPrecedenceOverCompileSpec) {
  RecordingFactory factory;
  InitHarness harness;
  ASSERT_EQ(harness.init(elementwise_blob(kFake), {{"weight_streaming_budget", "1048576"}},
                         {string_option("weight_streaming_budget", "8192")}),
            Error::Ok)
      << captured_log();
  EXPECT_EQ(factory.requests().at(0).budget, std::optional<std::uint64_t>(8192));
}

TEST_F(BackendTest, LoadTimeOptionAloneSetsTheBudget) {
  RecordingFactory factory;
  InitHarness harness;
  ASSERT_EQ(harness.init(elementwise_blob(kFake), {}, {int_option("weight_streaming_budget", 0)}), Error::Ok)
      << captured_log();
  EXPECT_EQ(factory.requests().at(0).budget, std::optional<std::uint64_t>(0));
}

TEST_F(BackendTest, RuntimeLibraryOptionReachesTheFactory) {
  RecordingFactory factory;
  InitHarness order, repeated, none;
  ASSERT_EQ(order.init(elementwise_blob(kFake), {}, {string_option("tensorrt_runtime", "lean,dispatch")}), Error::Ok)
      << captured_log();
  ASSERT_EQ(repeated.init(elementwise_blob(kFake), {},
                          {string_option("tensorrt_runtime", "full"), string_option("tensorrt_runtime", "/opt/x.so")}),
            Error::Ok)
      << captured_log();
  ASSERT_EQ(none.init(elementwise_blob(kFake)), Error::Ok) << captured_log();
  const std::vector<SeenRequest> requests = factory.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].runtime_library, std::optional<std::string>("lean,dispatch"));
  EXPECT_EQ(requests[1].runtime_library, std::optional<std::string>("/opt/x.so"));  // the last one wins
  EXPECT_EQ(requests[2].runtime_library, std::nullopt);                              // none given
}

// Engine host code is the application's choice (docs/SECURITY.md): its load-time option reaches
// the factory; nothing in a program can set it.
TEST_F(BackendTest, TheHostCodeOptionReachesTheFactoryAndACompileSpecCannotSetIt) {
  RecordingFactory factory;
  InitHarness allowed, refused, program_says, none;
  ASSERT_EQ(allowed.init(elementwise_blob(kFake), {}, {bool_option("allow_engine_host_code", true)}), Error::Ok)
      << captured_log();
  ASSERT_EQ(refused.init(elementwise_blob(kFake), {}, {bool_option("allow_engine_host_code", false)}), Error::Ok)
      << captured_log();
  ASSERT_EQ(program_says.init(elementwise_blob(kFake), {{"allow_engine_host_code", "1"}}), Error::Ok) << captured_log();
  ASSERT_EQ(none.init(elementwise_blob(kFake)), Error::Ok) << captured_log();
  const std::vector<SeenRequest> requests = factory.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0].allow_engine_host_code, std::optional<bool>(true));
  EXPECT_EQ(requests[1].allow_engine_host_code, std::optional<bool>(false));
  EXPECT_EQ(requests[2].allow_engine_host_code, std::nullopt) << "a compile spec set engine host code";
  EXPECT_EQ(requests[3].allow_engine_host_code, std::nullopt);
}

// The metadata cap: a blob whose metadata is past the application's limit is refused at init; the
// application can raise the limit at load time.
TEST_F(BackendTest, TheMetadataCapIsTheApplicationsToSet) {
  RecordingFactory factory;
  const std::vector<std::uint8_t> blob = elementwise_blob(kFake);
  InitHarness small;
  clear_log();
  EXPECT_EQ(small.init(blob, {}, {int_option("max_blob_metadata_bytes", 16)}), Error::InvalidProgram) << captured_log();
  EXPECT_EQ(small.handle(), nullptr);
  InitHarness enough;
  EXPECT_EQ(enough.init(blob, {}, {int_option("max_blob_metadata_bytes", 1 << 20)}), Error::Ok) << captured_log();
}

// ---- init: every error path ----

/// init() of `blob` with `specs` and `options` must fail with `expected`, log a message containing
/// `message`, build no session and leave the blob freed.
void expect_init_error(Error expected, const std::string& message, const std::vector<std::uint8_t>& blob,
                       const std::vector<std::pair<std::string, std::string>>& specs = {},
                       std::vector<etr::BackendOption> options = {}) {
  clear_log();
  InitHarness harness;
  EXPECT_EQ(harness.init(blob, specs, std::move(options)), expected) << captured_log();
  EXPECT_EQ(harness.handle(), nullptr);
  EXPECT_TRUE(harness.freed_by_init());
  EXPECT_NE(captured_log().find("TensorRTBackend init: "), std::string::npos) << captured_log();
  EXPECT_NE(captured_log().find(message), std::string::npos) << "expected \"" << message << "\" in:\n" << captured_log();
}

TEST_F(BackendTest, InitWithoutEngineFactoryIsNotSupported) {
  ex::ScopedEngineFactory none{ex::EngineFactory()};
  expect_init_error(Error::NotSupported, "no engine factory is installed", elementwise_blob(kFake));
}

TEST_F(BackendTest, InitRejectsMalformedBlobs) {
  RecordingFactory factory;
  const std::string text = "not a processed blob at all, but long enough for a header";
  expect_init_error(Error::InvalidProgram, "InvalidProgram", std::vector<std::uint8_t>(text.begin(), text.end()));
  expect_init_error(Error::InvalidProgram, "InvalidProgram", std::vector<std::uint8_t>{'T', 'R', '0', '1'});
  auto truncated = elementwise_blob(kFake);
  truncated.resize(truncated.size() - 4);  // the engine now runs past the end
  expect_init_error(Error::InvalidProgram, "InvalidProgram", truncated);
  EXPECT_TRUE(factory.requests().empty()) << "no engine is built from a malformed blob";
}

TEST_F(BackendTest, InitWithoutProcessedDataIsInvalidProgram) {
  InitHarness harness;
  etr::BackendInitContext context(nullptr);
  auto handle = harness.backend().init(context, nullptr, {});
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.error(), Error::InvalidProgram);
  EXPECT_NE(captured_log().find("no processed data"), std::string::npos) << captured_log();
}

TEST_F(BackendTest, InitRejectsMalformedCompileSpecBudget) {
  RecordingFactory factory;
  for (const char* bad : {"-5", "12x", "", " 1", "99999999999999999999"}) {
    SCOPED_TRACE(bad);
    expect_init_error(Error::InvalidProgram, "weight_streaming_budget", elementwise_blob(kFake),
                      {{"weight_streaming_budget", bad}});
  }
  expect_init_error(Error::InvalidProgram, "appears more than once", elementwise_blob(kFake),
                    {{"weight_streaming_budget", "1"}, {"weight_streaming_budget", "2"}});
  EXPECT_TRUE(factory.requests().empty());
}

TEST_F(BackendTest, InitRejectsMalformedLoadTimeBudget) {
  RecordingFactory factory;
  expect_init_error(Error::InvalidArgument, "negative", elementwise_blob(kFake), {},
                    {int_option("weight_streaming_budget", -1)});
  expect_init_error(Error::InvalidArgument, "weight_streaming_budget", elementwise_blob(kFake), {},
                    {string_option("weight_streaming_budget", "lots")});
  expect_init_error(Error::InvalidArgument, "is a bool", elementwise_blob(kFake), {},
                    {bool_option("weight_streaming_budget", true)});
  // A malformed option is rejected even where a valid compile spec exists.
  expect_init_error(Error::InvalidArgument, "weight_streaming_budget", elementwise_blob(kFake),
                    {{"weight_streaming_budget", "1024"}}, {string_option("weight_streaming_budget", "-1")});
  EXPECT_TRUE(factory.requests().empty());
}

TEST_F(BackendTest, InitRejectsMalformedRuntimeLibraryOption) {
  RecordingFactory factory;
  expect_init_error(Error::InvalidArgument, "is an int", elementwise_blob(kFake), {},
                    {int_option("tensorrt_runtime", 1)});
  expect_init_error(Error::InvalidArgument, "is a bool", elementwise_blob(kFake), {},
                    {bool_option("tensorrt_runtime", true)});
  expect_init_error(Error::InvalidArgument, "is empty", elementwise_blob(kFake), {},
                    {string_option("tensorrt_runtime", "")});
  EXPECT_TRUE(factory.requests().empty());
}

TEST_F(BackendTest, TheTensorRTAdapterReportsAMissingRuntimeLibraryNamedByTheOption) {
#if defined(TRTET_HAVE_TENSORRT)
  // No factory of the test's: the TensorRT adapter's, installed at load, serves init and reads the option.
  ASSERT_TRUE(static_cast<bool>(ex::engine_factory())) << "the TensorRT adapter installed no factory at load";
  // ExecuTorch's log line holds ~250 characters: the start of the message (the adapter's tests check all of it).
  expect_init_error(Error::NotSupported, "no TensorRT runtime library could be loaded", elementwise_blob(kFake), {},
                    {string_option("tensorrt_runtime", "/nonexistent/libnvinfer_lean.so")});
  EXPECT_NE(captured_log().find("from load-time option tensorrt_runtime"), std::string::npos) << captured_log();
#else
  GTEST_SKIP() << "built without the TensorRT adapter (no TensorRT headers)";
#endif
}

TEST_F(BackendTest, InitReportsTheFactorysError) {
  RecordingFactory factory;
  expect_init_error(Error::InvalidProgram, "bogus", elementwise_blob("bogus min=1"));
  EXPECT_EQ(factory.requests().size(), 1u);
}

TEST_F(BackendTest, InitRejectsEngineBindingsThatContradictTheBlob) {
  RecordingFactory factory;
  expect_init_error(Error::InvalidProgram, "the blob lists input \"a\", the engine has input \"x\"",
                    blob_with_io({"a", "b"}, {"c"}, kFake));
  expect_init_error(Error::InvalidProgram, "the blob lists 2 I/O bindings, its engine has 3",
                    blob_with_io({"a", "b"}, {}, kFake));
}

TEST_F(BackendTest, InitMapsFactoryErrorsByMeaning) {
  ex::ScopedEngineFactory incompatible([](const ex::EngineRequest&) -> ex::Result<ex::engine::EnginePtr> {
    return ex::make_error(ErrorCode::kIncompatible, "engine built by TensorRT 9, this is 10");
  });
  expect_init_error(Error::DelegateInvalidCompatibility, "engine built by TensorRT 9", elementwise_blob(kFake));
  ex::ScopedEngineFactory nothing([](const ex::EngineRequest&) -> ex::Result<ex::engine::EnginePtr> {
    return ex::engine::EnginePtr();
  });
  expect_init_error(Error::Internal, "returned no engine", elementwise_blob(kFake));
}

TEST_F(BackendTest, InitReportsAnExhaustedRuntimeAllocator) {
  RecordingFactory factory;
  InitHarness harness(16);  // too small for the handle
  EXPECT_EQ(harness.init(elementwise_blob(kFake)), Error::DelegateMemoryAllocationFailed) << captured_log();
  EXPECT_EQ(harness.handle(), nullptr);
  EXPECT_NE(captured_log().find("runtime allocator has no room"), std::string::npos) << captured_log();
}

// ---- execute before any GPU work ----

TEST_F(BackendTest, ExecuteOfNullHandleIsInvalidHandle) {
  InitHarness harness;
  etr::BackendExecutionContext context;
  EXPECT_EQ(harness.backend().execute(context, nullptr, {}), Error::DelegateInvalidHandle);
}

TEST_F(BackendTest, WithoutGpuInitSucceedsAndExecuteReportsTheMissingGpu) {
  if (no_gpu_reason().empty()) GTEST_SKIP() << "a GPU is present: this checks the GPU-less report";
  RecordingFactory factory;
  InitHarness harness;
  ASSERT_EQ(harness.init(elementwise_blob(kFake)), Error::Ok) << captured_log();
  ViewsFixture f;
  etr::BackendExecutionContext context;
  clear_log();
  EXPECT_EQ(harness.backend().execute(context, harness.handle(), f.span()), Error::AccessFailed);
  EXPECT_NE(captured_log().find("TensorRTBackend execute: NoDevice: no usable GPU when the method was loaded"),
            std::string::npos)
      << captured_log();
  EXPECT_NE(captured_log().find(no_gpu_reason()), std::string::npos) << captured_log();
}

}  // namespace
}  // namespace trtet_test
