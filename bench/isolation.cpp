#include "isolation.h"

#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <atomic>
#include <memory>
#include <thread>

#include "cuda/check.h"
#include "session/session.h"
#include "green/probe.h"
#include "green/split.h"

namespace trtet_bench {
namespace {

using ex::delegate::Session;
using ex::delegate::TensorView;

struct Runner {
  std::unique_ptr<Session> session;
  std::unique_ptr<Buffer> x;
  std::unique_ptr<Buffer> out;
  std::size_t elements = 0;

  ex::Status execute(cudaStream_t stream) {
    TensorView args[2] = {x->view(elements), out->view(elements)};
    ex::CudaStreamGuard guard(stream);
    return session->execute(args, 2);
  }
};

ex::Result<Runner> make_runner(const SpinOptions& options, std::size_t elements) {
  TRTET_ASSIGN_OR_RETURN(std::unique_ptr<SpinEngine> engine, SpinEngine::create(0, options));
  Runner runner;
  runner.session = std::make_unique<Session>(std::move(engine));
  TRTET_RETURN_IF_ERROR(runner.session->initialize());
  runner.x = std::make_unique<Buffer>(Memory::kDevice, elements);
  runner.out = std::make_unique<Buffer>(Memory::kDevice, elements);
  runner.elements = elements;
  return runner;
}

/// Keeps the aggressor's stream full until `stop`.
class Aggressor {
 public:
  Aggressor(Runner& runner, cudaStream_t stream) : runner_(runner), stream_(stream) {}
  void start() {
    stop_ = false;
    thread_ = std::thread([this] {
      while (!stop_.load()) {
        status_ = runner_.execute(stream_);
        if (!status_.ok()) return;
        cudaStreamSynchronize(stream_);
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ex::Status stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    cudaStreamSynchronize(stream_);
    return status_;
  }

 private:
  Runner& runner_;
  cudaStream_t stream_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  ex::Status status_;
};

ex::Status measure(Runner& victim, cudaStream_t stream, int calls, Condition& condition) {
  for (int i = 0; i < 50; ++i) {
    TRTET_RETURN_IF_ERROR(victim.execute(stream));
    TRTET_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  condition.samples_us.clear();
  condition.samples_us.reserve(static_cast<std::size_t>(calls));
  for (int i = 0; i < calls; ++i) {
    const auto start = Clock::now();
    TRTET_RETURN_IF_ERROR(victim.execute(stream));
    TRTET_CUDA_CHECK(cudaStreamSynchronize(stream));
    condition.samples_us.push_back(micros_since(start));
  }
  condition.latency = percentiles(condition.samples_us);
  return ex::Status::Ok();
}

ex::Status run_pair(Runner& victim, cudaStream_t victim_stream, Runner& aggressor, cudaStream_t aggressor_stream,
                    int calls, Condition& alone, Condition& beside) {
  TRTET_RETURN_IF_ERROR(measure(victim, victim_stream, calls, alone));
  Aggressor load(aggressor, aggressor_stream);
  load.start();
  const ex::Status measured = measure(victim, victim_stream, calls, beside);
  const ex::Status stopped = load.stop();
  TRTET_RETURN_IF_ERROR(measured);
  return stopped;
}

}  // namespace

ex::Result<IsolationResult> run_isolation(const IsolationOptions& options) {
  namespace green = ex::green;
  IsolationResult result;
  TRTET_CUDA_CHECK(cudaDeviceGetAttribute(&result.device_sms, cudaDevAttrMultiProcessorCount, 0));
  TRTET_ASSIGN_OR_RETURN(std::vector<green::Partition> partitions,
                         green::split_device(0, green::SplitRequest::counts({options.victim_sms}, /*remainder=*/true)));
  green::Partition& victim_part = partitions[0];
  green::Partition& aggressor_part = partitions[1];
  result.victim_granted = victim_part.granted_sms();
  result.aggressor_granted = aggressor_part.granted_sms();
  TRTET_ASSIGN_OR_RETURN(cudaStream_t victim_green, victim_part.context.make_stream());
  TRTET_ASSIGN_OR_RETURN(cudaStream_t aggressor_green, aggressor_part.context.make_stream());
  TRTET_ASSIGN_OR_RETURN(std::vector<int> victim_sms, green::probe_sms(victim_green));
  TRTET_ASSIGN_OR_RETURN(std::vector<int> aggressor_sms, green::probe_sms(aggressor_green));
  result.victim_observed = victim_sms.size();
  result.aggressor_observed = aggressor_sms.size();
  result.overlap = green::shared_sms(victim_sms, aggressor_sms);

  TRTET_ASSIGN_OR_RETURN(Runner victim, make_runner(options.victim, 4096));
  TRTET_ASSIGN_OR_RETURN(Runner aggressor, make_runner(options.aggressor, 4096));

  TRTET_RETURN_IF_ERROR(run_pair(victim, victim_green, aggressor, aggressor_green, options.calls, result.green_alone,
                                 result.green_beside));

  cudaStream_t victim_shared = nullptr;
  cudaStream_t aggressor_shared = nullptr;
  TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&victim_shared, cudaStreamNonBlocking));
  TRTET_CUDA_CHECK(cudaStreamCreateWithFlags(&aggressor_shared, cudaStreamNonBlocking));
  const ex::Status shared = run_pair(victim, victim_shared, aggressor, aggressor_shared, options.calls,
                                     result.shared_alone, result.shared_beside);
  victim.session->destroy();
  aggressor.session->destroy();
  cudaStreamDestroy(victim_shared);
  cudaStreamDestroy(aggressor_shared);
  TRTET_RETURN_IF_ERROR(shared);
  return result;
}

}  // namespace trtet_bench
