#include "staging/staging.h"

#include <atomic>
#include <map>
#include <mutex>

#include "cuda/check.h"
#include "cuda/device.h"

namespace torch_tensorrt::executorch_backend::staging {
namespace {

// Frees are ordered on one non-blocking stream per device that is never destroyed (frees made
// after a session and its streams are gone need a stream that outlives them).
struct Reaper {
  std::mutex mutex;
  std::map<int, cudaStream_t> streams;
  std::vector<GraphHold> released;         ///< holds of graphs that are gone, not yet freed
  std::atomic<bool> has_released{false};
};

Reaper& reaper() {
  static Reaper* instance = new Reaper();  // never destroyed: graphs may be released at exit
  return *instance;
}

// The reaper's stream of the current device (mutex held).
cudaStream_t reaper_stream_locked(Reaper& r) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  auto found = r.streams.find(device);
  if (found != r.streams.end()) return found->second;
  cudaStream_t stream = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  r.streams.emplace(device, stream);
  return stream;
}

// Drops `buffer`'s reference (mutex held); frees it on the reaper stream if it was the last.
void drop_locked(Reaper& r, SharedBuffer& buffer) {
  if (buffer == nullptr) return;
  if (buffer.use_count() == 1) {
    cudaStream_t stream = reaper_stream_locked(r);
    if (stream != nullptr) {
      buffer->set_stream(stream);
      buffer->reset();
    }  // else: no stream to order the free on; the memory stays with the pool until exit
  }
  buffer.reset();
}

void CUDART_CB on_graph_released(void* data) {
  // Driver thread: no CUDA calls here, only hand the references over.
  std::unique_ptr<GraphHold> hold(static_cast<GraphHold*>(data));
  Reaper& r = reaper();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.released.push_back(std::move(*hold));
  r.has_released.store(true, std::memory_order_release);
}

}  // namespace

Status retain_in_capture(cudaStream_t stream, GraphHold hold) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  TRTET_CUDA_CHECK(cudaStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr));
  TRTET_CHECK_OR_RETURN(status == cudaStreamCaptureStatusActive && graph != nullptr, kInternal,
                        "the stream stopped capturing during the call");
  auto owned = std::make_unique<GraphHold>(std::move(hold));
  cudaUserObject_t object = nullptr;
  TRTET_CUDA_CHECK(cudaUserObjectCreate(&object, owned.get(), on_graph_released, 1, cudaUserObjectNoDestructorSync));
  owned.release();  // the user object owns it now
  TRTET_CUDA_CHECK(cudaGraphRetainUserObject(graph, object, 1, cudaGraphUserObjectMove));
  return Status::Ok();
}

void release_shared(SharedBuffer buffer, cudaEvent_t after) noexcept {
  if (buffer == nullptr) return;
  Reaper& r = reaper();
  std::lock_guard<std::mutex> lock(r.mutex);
  cudaStream_t stream = reaper_stream_locked(r);
  if (stream != nullptr && after != nullptr) TRTET_CUDA_WARN(cudaStreamWaitEvent(stream, after, 0));
  drop_locked(r, buffer);
}

void drain_released_graph_holds() noexcept {
  Reaper& r = reaper();
  if (!r.has_released.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(r.mutex);
  for (GraphHold& hold : r.released) {
    cuda::DeviceGuard device(hold.device);
    if (!device.status().ok()) continue;
    for (SharedBuffer& buffer : hold.buffers) drop_locked(r, buffer);
    hold.events.clear();  // an event destroyed after its last record still completes that record
  }
  r.released.clear();
  r.has_released.store(false, std::memory_order_release);
}

}  // namespace torch_tensorrt::executorch_backend::staging
