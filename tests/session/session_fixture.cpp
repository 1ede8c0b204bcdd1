#include "session/session_fixture.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <torch_tensorrt/executorch/CudaStreamGuard.h>

#include "cuda/check.h"
#include "cuda/driver.h"
#include "engines/kernels.h"
#include "engines/test_engine_factory.h"
#include "green/probe.h"

namespace trtet_test {

SessionUnderTest make_session(std::unique_ptr<TestEngine> engine, ex::delegate::SessionOptions options) {
  SessionUnderTest out;
  out.engine = engine.get();
  auto session = std::make_unique<Session>(std::move(engine), options);
  const ex::Status status = session->initialize();
  if (!status.ok()) {
    ADD_FAILURE() << "Session::initialize: " << status.to_string();
    out.engine = nullptr;
    return out;
  }
  out.session = std::move(session);
  return out;
}

SessionUnderTest make_session(std::string_view spec, ex::delegate::SessionOptions options) {
  return make_session_on(0, spec, options);
}

SessionUnderTest make_session_on(int device, std::string_view spec, ex::delegate::SessionOptions options) {
  auto engine = make_test_engine(spec, device);
  if (!engine.ok()) {
    ADD_FAILURE() << "make_test_engine(\"" << spec << "\", " << device << "): " << engine.status().to_string();
    return {};
  }
  auto* test_engine = dynamic_cast<TestEngine*>(engine->get());
  engine->release();
  return make_session(std::unique_ptr<TestEngine>(test_engine), options);
}

ex::Status execute_on(cudaStream_t stream, Session& session, TensorView* args, std::size_t count) {
  ex::CudaStreamGuard guard(stream);
  return session.execute(args, count);
}

ex::Result<MemoryBlock> queue_spin_then_write(cudaStream_t stream, std::int64_t spin_us, OwnedTensor& input,
                                              const std::vector<float>& values) {
  const std::size_t bytes = values.size() * sizeof(float);
  TRTET_CHECK_OR_RETURN(input.memory() == Memory::kDevice && bytes > 0 && bytes <= input.capacity_bytes(),
                        kInvalidArgument, "test: queue_spin_then_write writes 1 to %zu bytes of device memory",
                        input.capacity_bytes());
  TRTET_ASSIGN_OR_RETURN(MemoryBlock pinned, MemoryBlock::allocate(Memory::kPinned, bytes));
  std::memcpy(pinned.data(), values.data(), bytes);
  TRTET_RETURN_IF_ERROR(launch_spin(spin_us * 1000, 1, stream));
  TRTET_CUDA_CHECK(cudaMemcpyAsync(input.data(), pinned.data(), bytes, cudaMemcpyHostToDevice, stream));
  return pinned;
}

CapturedCall capture_call(cudaStream_t stream, Session& session, TensorView* args, std::size_t count) {
  CapturedCall captured;
  captured.ended = cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
  if (captured.ended != cudaSuccess) return captured;
  captured.status = execute_on(stream, session, args, count);
  captured.ended = cudaStreamEndCapture(stream, &captured.graph);
  return captured;
}

ex::Status run_and_sync(Session& session, AxpbyIo& io, cudaStream_t stream) {
  io.refresh();
  ex::Status status = execute_on(stream, session, io.args());
  if (status.ok() && cudaStreamSynchronize(stream) != cudaSuccess) {
    return ex::make_error(ex::ErrorCode::kInternal, "cudaStreamSynchronize failed");
  }
  return status;
}

AxpbyIo::AxpbyIo(Memory inputs, Memory output, const ex::Shape& s, std::size_t out_capacity_elements)
    : shape(s),
      x(std::make_unique<OwnedTensor>(inputs, s)),
      y(std::make_unique<OwnedTensor>(inputs, s)),
      out(std::make_unique<OwnedTensor>(output, s, out_capacity_elements)) {
  EXPECT_TRUE(x->status().ok() && y->status().ok() && out->status().ok()) << "allocation failed";
  refresh();
}

void AxpbyIo::refresh() { refresh(fresh_seed()); }

void AxpbyIo::refresh(std::uint64_t seed) {
  const std::size_t n = static_cast<std::size_t>(shape.numel());
  xv = random_floats(n, seed);
  yv = random_floats(n, ~seed);
  x->write(xv);
  y->write(yv);
  out->poison();
  views = {x->view(), y->view(), out->view()};
}

namespace {

::testing::AssertionResult launch_and_check(cudaGraphExec_t exec, cudaStream_t stream, AxpbyIo& io) {
  if (const cudaError_t launched = cudaGraphLaunch(exec, stream); launched != cudaSuccess) {
    return ::testing::AssertionFailure() << "cudaGraphLaunch: " << cudaGetErrorString(launched);
  }
  if (const cudaError_t synced = cudaStreamSynchronize(stream); synced != cudaSuccess) {
    return ::testing::AssertionFailure() << "cudaStreamSynchronize after the replay: " << cudaGetErrorString(synced);
  }
  return io.out_matches();
}

}  // namespace

::testing::AssertionResult replay_and_check(cudaGraphExec_t exec, cudaStream_t stream, AxpbyIo& io) {
  io.refresh();
  return launch_and_check(exec, stream, io);
}

::testing::AssertionResult replay_and_check(cudaGraphExec_t exec, cudaStream_t stream, AxpbyIo& io,
                                            std::uint64_t seed) {
  io.refresh(seed);
  return launch_and_check(exec, stream, io);
}

::testing::AssertionResult axpby_matches(const std::vector<float>& out, const std::vector<float>& x,
                                         const std::vector<float>& y, float a, float b) {
  if (out.size() != x.size()) {
    return ::testing::AssertionFailure() << "out has " << out.size() << " elements, x " << x.size();
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float expected = a * x[i] + b * y[i];
    const float tolerance = 1e-5f * (std::fabs(a * x[i]) + std::fabs(b * y[i])) + 1e-6f;
    if (!(std::fabs(out[i] - expected) <= tolerance)) {
      return ::testing::AssertionFailure() << "out[" << i << "] = " << out[i] << ", expected " << expected
                                           << (out[i] == kPoison ? " (still poison: never written)" : "");
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<float> fresh_random(std::int64_t n) { return random_floats(static_cast<std::size_t>(n), fresh_seed()); }

TensorView view_of(OwnedTensor& tensor, const ex::Shape& shape) {
  TensorView view = tensor.view();
  view.shape = shape;
  return view;
}

::testing::AssertionResult exactly(const std::vector<float>& got, const std::vector<float>& expected) {
  if (got.size() != expected.size()) {
    return ::testing::AssertionFailure() << "got " << got.size() << " elements, expected " << expected.size();
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i]) {
      return ::testing::AssertionFailure() << "element " << i << " = " << got[i] << ", expected " << expected[i];
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult AxpbyIo::out_matches(float a, float b) const { return axpby_matches(out->read(), xv, yv, a, b); }

GreenPartitions::GreenPartitions(unsigned small_sms_count) {
  auto split = ex::green::split_device(0, ex::green::SplitRequest::counts({small_sms_count}, /*remainder=*/true));
  if (!split.ok()) {
    ADD_FAILURE() << "split_device: " << split.status().to_string();
    return;
  }
  partitions = std::move(split).value();
  if (partitions.size() != 2) {
    ADD_FAILURE() << "split_device made " << partitions.size() << " partitions, expected 2";
    return;
  }
  auto s = partitions[0].context.make_stream();
  auto r = partitions[1].context.make_stream();
  if (!s.ok() || !r.ok()) {
    ADD_FAILURE() << "make_stream: " << (s.ok() ? r.status() : s.status()).to_string();
    return;
  }
  auto ps = ex::green::probe_sms(*s);
  auto pr = ex::green::probe_sms(*r);
  if (!ps.ok() || !pr.ok()) {
    ADD_FAILURE() << "probe_sms: " << (ps.ok() ? pr.status() : ps.status()).to_string();
    return;
  }
  small_sms = *ps;
  rest_sms = *pr;
  small = *s;
  rest = *r;
}

bool is_subset(const std::vector<int>& subset, const std::vector<int>& set) {
  return std::all_of(subset.begin(), subset.end(),
                     [&](int id) { return std::binary_search(set.begin(), set.end(), id); });
}

ScopedCurrentContext::ScopedCurrentContext(const ex::green::DriverGreenContext& context) {
  auto api = ex::cuda::driver();
  auto ctx = context.as_context();
  if (!api.ok() || !ctx.ok()) {
    ADD_FAILURE() << "green context as CUcontext: " << (api.ok() ? ctx.status() : api.status()).to_string();
    return;
  }
  if ((*api)->cuCtxGetCurrent(&previous_) != CUDA_SUCCESS || (*api)->cuCtxSetCurrent(*ctx) != CUDA_SUCCESS) {
    ADD_FAILURE() << "cuCtxSetCurrent(green context) failed";
    return;
  }
  ok_ = true;
}

ScopedCurrentContext::~ScopedCurrentContext() {
  if (!ok_) return;
  auto api = ex::cuda::driver();
  if (api.ok()) (*api)->cuCtxSetCurrent(previous_);
}

}  // namespace trtet_test
