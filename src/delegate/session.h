// One loaded engine and everything a call needs: staging buffers, completion events, the lock.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "common/status.h"
#include "cuda/device_buffer.h"
#include "cuda/event.h"
#include "cuda/host_pool.h"
#include "cuda/pinned_buffer.h"
#include "delegate/aux_streams.h"
#include "delegate/host_copy_pool.h"
#include "delegate/memory_kind.h"
#include "delegate/policy.h"
#include "delegate/tensor_view.h"
#include "engine/engine.h"

namespace torch_tensorrt::executorch_backend::delegate {

/// Counters a caller or test can read between calls.
struct SessionStats {
  std::uint64_t calls = 0;             ///< successful executes
  std::uint64_t staging_grows = 0;     ///< staging buffers (re)allocated
  std::uint64_t cross_stream_waits = 0;///< GPU-side waits on the previous call's event (stream changed)
  Completion last_completion = Completion::kReturnAtOnce;
  cudaStream_t last_stream = nullptr;
};

/// Runs one engine under Note [Execute contract] (TensorRTBackend.h).
///
/// One call at a time (calls are serialized by a lock). Construct, then initialize() once; the
/// ExecuTorch adapter placement-constructs it in the runtime's allocator.
class Session {
 public:
  explicit Session(engine::EnginePtr engine) noexcept;
  /// Waits, by event, for this session's own in-flight work, then frees its resources in stream
  /// order. Never synchronizes the device or another green context. Serialized with execute().
  ~Session();
  Session(const Session&) = delete;             // owns GPU resources and a lock
  Session& operator=(const Session&) = delete;
  Session(Session&&) = delete;                  // the ExecuTorch handle points at it
  Session& operator=(Session&&) = delete;

  /// Checks the engine's bindings and aliases and makes the session's events and buffers on the
  /// engine's device. kInvalidProgram for inconsistent engine metadata; kNoDevice without a GPU.
  Status initialize();

  /// Runs the engine on `args` (inputs then outputs, in binding order), on the caller stream of
  /// this thread (CudaStreamGuard) or cudaStreamPerThread. Every check is made before any work is
  /// enqueued; a failed call leaves the session usable.
  Status execute(TensorView* args, std::size_t count);

  /// Waits for this session's in-flight work (by event) and releases everything; later calls
  /// fail with kInvalidState. Safe against a concurrent execute on another thread.
  void destroy() noexcept;

  const engine::Engine& engine() const noexcept { return *engine_; }
  SessionStats stats() const;

 private:
  /// Per binding, per call: where the engine reads or writes it.
  struct Binding {
    MemoryKind kind = MemoryKind::kDevice;
    void* address = nullptr;      ///< the address the engine is bound to
    std::size_t bytes = 0;        ///< bytes moved for this call
    bool staged = false;          ///< copied through the session's device staging buffer
  };
  /// Per binding, owned: staging, grown on demand. Host staging comes from the session's host
  /// memory pool (stream-ordered: growing it never synchronizes the device), or, where the device
  /// has no host pools, from cudaHostAlloc.
  struct Staging {
    cuda::DeviceBuffer device;
    cuda::DeviceBuffer host;
    cuda::PinnedBuffer host_fallback;
    void* host_data() const noexcept { return host ? host.data() : host_fallback.data(); }
    std::size_t host_size() const noexcept { return host ? host.size() : host_fallback.size(); }
  };
  /// What the steps of one call share.
  struct Call {
    cudaStream_t stream = nullptr;
    CallFacts facts;
    Completion completion = Completion::kReturnAtOnce;
  };

  Status resolve_stream(Call& call);
  Status classify_arguments(TensorView* args, Call& call);
  Status bind_inputs(TensorView* args, Call& call);
  Status infer_output_shapes(TensorView* args);
  Status bind_outputs(TensorView* args, Call& call);
  Status enqueue(TensorView* args, Call& call);
  Status complete(const Call& call);

  Status order_after_previous_call(const Call& call);
  Status bind_aux_streams(const Call& call);
  Status stage_pageable_input(int index, const void* source, const Call& call);
  Status stage_pageable_output(int index, void* destination, const Call& call);
  Status copy_out_pageable_outputs();
  static std::size_t chunk_bytes(std::size_t bytes) noexcept;
  Status ensure_device_staging(int index, std::size_t bytes, const Call& call);
  Status ensure_host_staging(int index, std::size_t bytes, const Call& call);
  void release() noexcept;

  mutable std::mutex mutex_;
  engine::EnginePtr engine_;
  bool initialized_ = false;
  bool host_memory_is_device_accessible_ = false;  ///< integrated / ATS devices bind host memory directly
  std::vector<Binding> bindings_;
  std::vector<Staging> staging_;
  std::vector<int> alias_input_of_output_;        ///< per binding: aliased input index or -1
  PointerKindCache pointer_kinds_;
  cuda::Event inputs_consumed_;
  cuda::Event completion_;
  bool completion_pending_ = false;               ///< completion_ recorded for work that may be in flight
  cudaStream_t private_stream_ = nullptr;          ///< for housekeeping frees at destroy
  cuda::DeviceBuffer empty_tensor_;
  cuda::HostMemoryPool host_pool_;                 ///< pinned host staging, stream-ordered               ///< valid address for zero-size tensors
  /// A chunk of a pageable output, copied out on the host once its event fires.
  struct HostCopy {
    void* destination;
    const void* source;
    std::size_t bytes;
    std::size_t event;
  };
  static constexpr int kChunkEvents = 128;
  std::vector<cuda::Event> chunk_events_;          ///< one per chunk of pageable output in flight
  std::vector<HostCopy> host_copies_;              ///< this call's pageable output chunks
  AuxStreams aux_streams_;
  cudaStream_t aux_bound_for_ = nullptr;          ///< the stream whose aux streams the engine holds
  SessionStats stats_;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
