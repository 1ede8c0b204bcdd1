#include "session/graph_cache.h"

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
  if (entries_.size() < capacity_) {
    entries_.push_back(Entry{key, nullptr, false, false, ++clock_});
    return &entries_.back();
  }
  // Full: nothing is destroyed here (Note [no graph destroyed in a call]).
  Entry* reused = nullptr;
  for (Entry& entry : entries_) {
    if (entry.exec != nullptr && entry.key.green != key.green) continue;
    if (reused == nullptr || entry.last_used < reused->last_used) reused = &entry;
  }
  if (reused == nullptr) return nullptr;
  reused->key = key;
  reused->current = false;
  reused->eager = false;
  reused->last_used = ++clock_;
  return reused;
}

void GraphCache::clear() noexcept {
  for (Entry& entry : entries_) {
    if (entry.exec != nullptr) TRTET_CUDA_WARN(cudaGraphExecDestroy(entry.exec));
  }
  entries_.clear();
}

}  // namespace torch_tensorrt::executorch_backend::delegate
