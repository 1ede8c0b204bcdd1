#include "engines/recording_factory.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string_view>

#include "engine/engine_factory.h"
#include "engines/cuda_test_engine.h"
#include "engines/test_engine_factory.h"

namespace trtet_test {

namespace {

// The live engines the factory built that record SMs.
std::mutex g_mutex;
std::vector<CudaTestEngine*> g_recording;

// Hands every call to the test engine and takes it off g_recording when the delegate destroys it
// (with its method), so the runner never asks a destroyed engine.
class Registered final : public ex::engine::Engine {
 public:
  explicit Registered(ex::engine::EnginePtr engine) : engine_(std::move(engine)) {
    recording_ = dynamic_cast<CudaTestEngine*>(engine_.get());
    if (recording_ != nullptr && !recording_->records_sms()) recording_ = nullptr;
    if (recording_ != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_recording.push_back(recording_);
    }
  }
  ~Registered() override {
    if (recording_ == nullptr) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_recording.erase(std::remove(g_recording.begin(), g_recording.end(), recording_), g_recording.end());
  }
  Registered(const Registered&) = delete;
  Registered& operator=(const Registered&) = delete;

  int io_count() const noexcept override { return engine_->io_count(); }
  const ex::engine::IoDesc& io(int index) const noexcept override { return engine_->io(index); }
  const std::vector<ex::engine::Alias>& aliases() const noexcept override { return engine_->aliases(); }
  int device() const noexcept override { return engine_->device(); }
  ex::Status set_input_shape(int index, const ex::Shape& shape) override { return engine_->set_input_shape(index, shape); }
  ex::Result<int> infer_shapes() override { return engine_->infer_shapes(); }
  ex::Result<ex::Shape> output_shape(int index) const override { return engine_->output_shape(index); }
  ex::Status set_tensor_address(int index, void* address) override {
    return engine_->set_tensor_address(index, address);
  }
  int aux_stream_count() const noexcept override { return engine_->aux_stream_count(); }
  ex::Status set_aux_streams(cudaStream_t* streams, int count) override {
    return engine_->set_aux_streams(streams, count);
  }
  ex::Status enqueue(cudaStream_t stream) override { return engine_->enqueue(stream); }
  bool enqueue_is_synchronous() const noexcept override { return engine_->enqueue_is_synchronous(); }

 private:
  ex::engine::EnginePtr engine_;
  CudaTestEngine* recording_ = nullptr;
};

}  // namespace

ex::Status install_recording_test_engine_factory() {
  ex::set_engine_factory([](const ex::EngineRequest& request) -> ex::Result<ex::engine::EnginePtr> {
    const std::string_view spec(reinterpret_cast<const char*>(request.engine_bytes), request.engine_size);
    TRTET_ASSIGN_OR_RETURN(ex::engine::EnginePtr engine, make_test_engine(spec, request.device));
    return ex::engine::EnginePtr(std::make_unique<Registered>(std::move(engine)));
  });
  return ex::Status::Ok();
}

ex::Status clear_engine_sms() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (CudaTestEngine* engine : g_recording) TRTET_RETURN_IF_ERROR(engine->clear_recorded_sms());
  return ex::Status::Ok();
}

ex::Result<std::optional<std::vector<int>>> engine_sms() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_recording.empty()) return std::optional<std::vector<int>>();
  std::vector<int> all;
  for (CudaTestEngine* engine : g_recording) {
    TRTET_ASSIGN_OR_RETURN(std::vector<int> sms, engine->recorded_sms());
    all.insert(all.end(), sms.begin(), sms.end());
  }
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  return std::optional<std::vector<int>>(std::move(all));
}

}  // namespace trtet_test
