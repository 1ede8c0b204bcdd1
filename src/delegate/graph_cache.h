// Delegate-owned CUDA graphs: one captured engine enqueue per call signature, replayed afterwards.
//
// Note [delegate graphs]: with use_cuda_graphs on, a call whose signature (optimization profile,
// the green context of its stream, every input shape, every bound address) was seen once before is
// captured into a graph (the first time it runs eagerly: TensorRT's first enqueue of a shape may do
// one-time work) and every later call with that signature launches the graph on the caller's
// stream instead of the engine's kernels one by one. The graph is captured on a stream of the same
// green context (a graph's kernels run on the partition it was captured on, wherever it is
// launched), so replays stay inside the partition. Staging copies stay outside the graph, so host
// I/O works as eagerly. Addresses are part of the signature: memory-planned runtimes pass the same
// tensors every call and hit; a caller whose addresses change gets a new graph, and the least
// recently used one goes once the cache is full. Graphs are never used while the caller captures
// (the call is recorded into the caller's graph as usual) or when the engine enqueues synchronously.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace torch_tensorrt::executorch_backend::delegate {

/// What a graph depends on.
struct GraphKey {
  int profile = 0;
  CUgreenCtx green = nullptr;
  std::vector<std::int64_t> dims;   ///< per input: its rank, then its dimensions
  std::vector<void*> addresses;     ///< per binding: the bound address
  bool operator==(const GraphKey& other) const noexcept {
    return profile == other.profile && green == other.green && dims == other.dims && addresses == other.addresses;
  }
};

/// A bounded cache of executable graphs by key, least recently used out first. Not thread-safe
/// (the session's lock guards it). An entry without a graph marks a key seen once.
class GraphCache {
 public:
  struct Entry {
    GraphKey key;
    cudaGraphExec_t exec = nullptr;
    std::uint64_t last_used = 0;
  };

  explicit GraphCache(std::size_t capacity = 16) noexcept : capacity_(capacity) {}
  ~GraphCache() { clear(); }
  GraphCache(const GraphCache&) = delete;             // owns graphs
  GraphCache& operator=(const GraphCache&) = delete;

  void set_capacity(std::size_t capacity) noexcept { capacity_ = capacity; }
  std::size_t capacity() const noexcept { return capacity_; }
  std::size_t size() const noexcept { return entries_.size(); }

  /// The entry for `key` (marked used), or nullptr.
  Entry* find(const GraphKey& key) noexcept;
  /// Adds an entry for `key` (no graph yet), evicting the least recently used entry when full
  /// (its graph is destroyed: in-flight launches finish first). The pointer is valid until the
  /// next insert or clear.
  Entry* insert(const GraphKey& key);
  /// Destroys every graph (no-throw).
  void clear() noexcept;

 private:
  std::size_t capacity_;
  std::uint64_t clock_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
