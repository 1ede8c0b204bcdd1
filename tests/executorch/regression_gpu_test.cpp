// Exceptions from the engine, through the ExecuTorch backend itself: TensorRTBackend::execute is called by
// ExecuTorch's Method, which does not expect exceptions (a throw through its frames may terminate
// the process). An engine built by a custom factory (set_engine_factory) may throw; the call must
// return an error Error and leave the handle usable: TensorRTBackend's execute is the execute path's
// one exception fence. Below it, the exception passes through the session, which stays usable:
// tests/session/bad_inputs_gpu_test.cpp (ThrowingEngineGpu).
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/evalue.h>
#include <gtest/gtest.h>

#include <atomic>
#include <exception>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "common/memory.h"
#include "engines/probe_engine.h"
#include "executorch/executorch_test_support.h"

namespace trtet_test {
namespace {

using etr::Error;

class ExecuTorchRegressionGpu : public ::testing::TestWithParam<ProbeEngine::Throw> {
 protected:
  void SetUp() override {
    TRTET_REQUIRE_GPU();
    ensure_executorch_runtime();
    clear_log();
  }
};

// An exception thrown by the engine must not escape TensorRTBackend::execute.
TEST_P(ExecuTorchRegressionGpu, AnExceptionFromTheEngineDoesNotEscapeExecute) {
  std::atomic<ProbeEngine*> built{nullptr};
  ex::ScopedEngineFactory factory([&](const ex::EngineRequest& request) -> ex::Result<ex::engine::EnginePtr> {
    auto engine = ProbeEngine::create(request.device, Shape{1, 4}, Shape{64, 4096});
    if (!engine.ok()) return engine.status();
    built.store(engine->get());
    return ex::engine::EnginePtr(std::move(engine).value());
  });
  InitHarness harness;
  ASSERT_EQ(harness.init(elementwise_blob("probe engine")), Error::Ok) << captured_log();
  ProbeEngine* probe = built.load();
  ASSERT_NE(probe, nullptr);

  constexpr int kRows = 8, kCols = 64;
  std::vector<float> x, y, out(kRows * kCols, kPoison);
  fill_elementwise_inputs(x, y, out.size());
  using ::executorch::extension::from_blob;
  auto tx = from_blob(x.data(), {kRows, kCols});
  auto ty = from_blob(y.data(), {kRows, kCols});
  auto tout = from_blob(out.data(), {kRows, kCols});
  std::vector<etr::EValue> values = {etr::EValue(*tx), etr::EValue(*ty), etr::EValue(*tout)};
  std::vector<etr::EValue*> args;
  for (auto& value : values) args.push_back(&value);
  etr::Span<etr::EValue*> span(args.data(), args.size());
  etr::BackendExecutionContext context;

  probe->throw_in.store(GetParam());
  Error error = Error::Ok;
  const std::optional<std::string> escaped =
      escaped_exception([&] { error = harness.backend().execute(context, harness.handle(), span); });  // no guard
  const bool threw = escaped.has_value();
  EXPECT_FALSE(threw) << "TensorRTBackend::execute let the engine's exception escape into ExecuTorch: "
                      << escaped.value_or("");
  EXPECT_EQ(probe->throws.load(), 1) << "the engine was meant to throw once";
  if (!threw) {
    EXPECT_NE(error, Error::Ok) << "a call whose engine threw reported success";
    EXPECT_NE(captured_log().find(ProbeEngine::kThrowMessage), std::string::npos)
        << "the logged error does not carry the exception's message: " << captured_log();
  }

  probe->throw_in.store(ProbeEngine::Throw::kNever);
  fill_elementwise_inputs(x, y, x.size(), 1);  // other inputs, the output poisoned: nothing left over counts
  poison_floats(out.data(), out.size());
  ASSERT_EQ(harness.backend().execute(context, harness.handle(), span), Error::Ok) << captured_log();
  for (std::size_t i = 0; i < out.size(); ++i) {
    ASSERT_FLOAT_EQ(out[i], 2.0f * x[i] - 0.5f * y[i]) << "element " << i << " of the call after the throw";
  }
}

INSTANTIATE_TEST_SUITE_P(Where, ExecuTorchRegressionGpu, ::testing::ValuesIn(kThrowSites),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace trtet_test
