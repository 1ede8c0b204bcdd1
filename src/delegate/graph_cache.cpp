#include "delegate/graph_cache.h"

#include <algorithm>

#include "cuda/check.h"

namespace torch_tensorrt::executorch_backend::delegate {

GraphCache::Entry* GraphCache::find(const GraphKey& key) noexcept {
  for (Entry& entry : entries_) {
    if (entry.key == key) {
      entry.last_used = ++clock_;
      return &entry;
    }
  }
  return nullptr;
}

GraphCache::Entry* GraphCache::insert(const GraphKey& key) {
  if (capacity_ == 0) return nullptr;
  if (entries_.size() >= capacity_) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.last_used < b.last_used; });
    if (oldest->exec != nullptr) TRTET_CUDA_WARN(cudaGraphExecDestroy(oldest->exec));
    entries_.erase(oldest);
  }
  entries_.push_back(Entry{key, nullptr, ++clock_});
  return &entries_.back();
}

void GraphCache::clear() noexcept {
  for (Entry& entry : entries_) {
    if (entry.exec != nullptr) TRTET_CUDA_WARN(cudaGraphExecDestroy(entry.exec));
  }
  entries_.clear();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
