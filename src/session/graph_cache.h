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
// tensors every call and hit; a caller whose addresses change gets a new graph. Graphs are never
// used while the caller captures (the call is recorded into the caller's graph as usual) or when
// the engine enqueues synchronously.
//
// Note [no graph destroyed in a call]: cudaGraphExecDestroy of a graph captured across streams (a
// fork to auxiliary streams and a join back, as TensorRT's enqueue with aux streams makes) waits
// for work queued on every stream of the device, other callers' and other sessions' included
// (graph_wait_probe on the H200: 1000 ms beside a held stream, for an exec whose launches were
// complete and for one never launched; a one-stream graph's destroy, capture, instantiate, launch,
// cudaGraphExecUpdate and cudaGraphDestroy returned at once). So no call destroys one. A full
// cache hands its least recently used entry to the new signature and the entry keeps its
// executable graph as a spare: when the signature comes back, its capture updates that graph in
// place (cudaGraphExecUpdate; launches already queued run as they were) instead of instantiating
// another. Only an entry of the same green context passes its graph on
// (a graph's kernels keep the context they were captured on); when every entry holds another green
// context's graph, the signature is not kept and its calls run eagerly. An update the driver
// refuses (another topology, as a different profile or shape can give) leaves the signature eager
// until its entry goes. Graphs are destroyed only with the session (EngineRunner::reset).
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

/// A bounded cache of executable graphs by key; the least recently used entry is reused first.
/// Not thread-safe (the session's lock guards it). An entry without a graph marks a key seen once.
class GraphCache {
 public:
  struct Entry {
    GraphKey key;
    cudaGraphExec_t exec = nullptr;  ///< may be a spare: captured for an earlier key (current false)
    bool current = false;            ///< exec runs this key's enqueue
    bool eager = false;              ///< the spare could not be updated to this key: run eagerly
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
  /// Adds an entry for `key` with no current graph. When full, the least recently used entry
  /// without a graph or with one of `key`'s green context takes the key, its graph kept as a spare
  /// (Note [no graph destroyed in a call]); nullptr when there is none. The pointer is valid until
  /// the next insert or clear.
  Entry* insert(const GraphKey& key);
  /// Destroys every graph (no-throw).
  void clear() noexcept;

 private:
  std::size_t capacity_;
  std::uint64_t clock_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace torch_tensorrt::executorch_backend::delegate
