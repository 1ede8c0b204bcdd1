// What the coexistence tests read from the stand-in for ExecuTorch's CUDA backend
// (standin_cuda_allocator.cpp, a shared library of its own).
#pragma once

#include <executorch/runtime/core/device_allocator.h>

#include <atomic>
#include <cstdint>

namespace trtet_standin {

/// What the stand-in's static initializer saw and did.
struct InitRecord {
  bool registered = false;                     ///< it reached the end (register_device_allocator returned)
  bool tensorrt_initializer_ran_first = false;  ///< TensorRTBackend was already registered
  bool cuda_slot_was_empty = false;            ///< no CUDA allocator was registered before its own
};
const InitRecord& init_record();

/// Calls the stand-in's allocator served.
struct Counters {
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> deallocations{0};
  std::atomic<std::uint64_t> host_to_device{0};
  std::atomic<std::uint64_t> device_to_host{0};
};
Counters& counters();

/// executorch::backends::cuda::CudaAllocator::instance(), as the base class.
::executorch::runtime::DeviceAllocator& standin_allocator();

}  // namespace trtet_standin
