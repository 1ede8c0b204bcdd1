// ExecuTorch's allocators as fallible points of the seam (faults.h): a MallocMemoryAllocator whose
// every allocate() is a point of kind TRTET_FAULT_HOOK, named after the allocator's role, and which
// returns null (as an exhausted allocator does) for the one armed. Passed to Module as its method
// and temp allocators, so that both ExecuTorch's own allocations while loading a method and the
// delegate's (its handle, in the method's runtime allocator) meet it.
#pragma once

#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>

#include <memory>
#include <string>

#include "faults/faults.h"

namespace trtet_faults {

class FailingAllocator : public ::executorch::extension::MallocMemoryAllocator {
 public:
  /// `role`: the point's name, e.g. "executorch method allocator".
  explicit FailingAllocator(std::string role) : role_(std::move(role)) {}

  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    if (trtet_faults_point(role_.c_str(), TRTET_FAULT_HOOK) != 0) return nullptr;
    return MallocMemoryAllocator::allocate(size, alignment);
  }

 private:
  std::string role_;
};

inline std::unique_ptr<::executorch::runtime::MemoryAllocator> method_allocator() {
  return std::make_unique<FailingAllocator>("executorch method allocator");
}
inline std::unique_ptr<::executorch::runtime::MemoryAllocator> temp_allocator() {
  return std::make_unique<FailingAllocator>("executorch temp allocator");
}

}  // namespace trtet_faults
