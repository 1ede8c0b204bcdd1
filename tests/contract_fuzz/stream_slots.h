// The streams one sequence selects: kCreatedSlots streams of its own and kGreenSlots streams on
// the two green-context partitions (none where the world has no green contexts), each of which a
// step may destroy and recreate.
#pragma once

#include <cuda_runtime_api.h>

#include "contract_fuzz/gpu_world.h"
#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

class StreamSlots {
 public:
  explicit StreamSlots(GpuWorld& world) : world_(world) {}
  ~StreamSlots();
  StreamSlots(const StreamSlots&) = delete;             // owns streams
  StreamSlots& operator=(const StreamSlots&) = delete;

  /// Makes every slot's stream (created ones non-blocking).
  ex::Status create();
  /// The stream `ref` names now (cudaStreamPerThread for kPerThread, null for kLegacy).
  cudaStream_t get(const StreamRef& ref) const;
  /// Synchronizes the slot's stream, destroys it and makes a new one (created: with `non_blocking`).
  ex::Status recreate(const StreamRef& ref, bool non_blocking);
  /// Synchronizes every slot's stream (and this thread's per-thread stream).
  ex::Status synchronize_all() const;

 private:
  GpuWorld& world_;
  cudaStream_t created_[kCreatedSlots] = {};
  cudaStream_t green_[kGreenSlots] = {};
};

}  // namespace trtet_test::fuzz
