// The bookkeeping of a staging arena (arena.h) over byte offsets, with no CUDA in it: which
// chunks of the arena's address range are mapped, which bytes are allocated, which are free and
// reusable now, and which were freed in stream order and wait for their event (Note [staging
// arena] in arena.cpp). CPU-tested (tests/staging/arena_book_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace torch_tensorrt::executorch_backend::staging {

class ArenaBook {
 public:
  /// No offset: what take() returns when no mapped memory fits.
  static constexpr std::size_t kNone = ~std::size_t{0};

  /// Chunks [first, first + count) of the range.
  struct Run {
    std::size_t first = 0;
    std::size_t count = 0;
    bool operator==(const Run& other) const noexcept { return first == other.first && count == other.count; }
  };

  /// A range of `chunks` chunks of `chunk_bytes` each, none mapped. Allocations are rounded up to
  /// `alignment` (a power of two dividing `chunk_bytes`). With `same_stream_reuse`, memory freed on
  /// a stream may be handed to a later allocation on that same stream before its free completes
  /// (stream order covers it); without, only once it completed (memory the host writes).
  ArenaBook(std::size_t chunk_bytes, std::size_t chunks, std::size_t alignment, bool same_stream_reuse);

  std::size_t chunk_bytes() const noexcept { return chunk_; }
  std::size_t chunks() const noexcept { return mapped_.size(); }
  /// What an allocation of `bytes` takes: rounded up to the alignment (at least one unit); kNone
  /// where that overflows or exceeds the range.
  std::size_t rounded(std::size_t bytes) const noexcept;

  /// The offset of `bytes` (rounded()) in mapped memory, or kNone. Free memory whose free has
  /// completed is taken first (the smallest block that fits, the lowest address among equals);
  /// else, with same-stream reuse, memory freed on `stream` (a known stream id; 0 is none).
  std::size_t take(std::size_t bytes, std::uint64_t stream);
  /// The unmapped chunks to map so that take(bytes) succeeds: the run needing the fewest chunks,
  /// counting completed free memory just before or after it, the lowest address among equals.
  /// count 0 where the range has no room.
  Run plan_growth(std::size_t bytes) const;
  /// `run`'s chunks are mapped now: they join the completed free memory (coalesced).
  void add_mapped(Run run);

  /// Frees the allocation at `offset`, in order after `token` (the caller's event, recorded on
  /// stream `stream`; 0: unknown). False (nothing changed) where `offset` is no live allocation.
  bool give_back(std::size_t offset, std::uint64_t stream, std::uint64_t token);
  /// Frees the allocation at `offset`, whose uses have all completed.
  bool give_back_now(std::size_t offset);
  /// Frees waiting on a token that `complete(token)` says has completed become completed free
  /// memory (coalesced). complete() is asked once per token.
  void settle(const std::function<bool(std::uint64_t)>& complete);
  /// Tokens no free waits on any more (settled, or their memory taken again): the caller may
  /// record them again. Each is returned once.
  std::vector<std::uint64_t> drain_released_tokens();

  /// Removes every chunk that lies wholly in completed free memory from the book and returns them
  /// (the caller unmaps them; one it cannot unmap goes back with add_mapped), in address order, one
  /// run per stretch.
  std::vector<Run> take_trimmable();

  std::uint64_t mapped_bytes() const noexcept { return static_cast<std::uint64_t>(mapped_count_) * chunk_; }
  std::uint64_t used_bytes() const noexcept { return used_; }
  std::uint64_t mapped_high_bytes() const noexcept { return mapped_high_; }
  std::uint64_t used_high_bytes() const noexcept { return used_high_; }
  std::size_t pending_frees() const noexcept { return pending_.size(); }
  std::size_t free_blocks() const noexcept { return free_.size(); }
  bool is_mapped(std::size_t chunk) const noexcept { return chunk < mapped_.size() && mapped_[chunk] != 0; }
  /// The size a live allocation at `offset` takes (0 where none).
  std::size_t live_size(std::size_t offset) const noexcept;

 private:
  struct Pending {
    std::size_t size;
    std::uint64_t stream;
    std::uint64_t token;
  };
  /// Adds [offset, offset + size) to the completed free memory, merging with its neighbours.
  void add_free(std::size_t offset, std::size_t size);
  void unref(std::uint64_t token);
  /// The size of the completed free block ending at `end` (0 where none).
  std::size_t free_ending_at(std::size_t end) const;
  /// The size of the completed free block starting at `start` (0 where none).
  std::size_t free_starting_at(std::size_t start) const;

  std::size_t chunk_;
  std::size_t alignment_;
  bool same_stream_reuse_;
  std::vector<unsigned char> mapped_;           ///< per chunk: mapped
  std::size_t mapped_count_ = 0;
  std::map<std::size_t, std::size_t> live_;     ///< offset -> size taken
  std::map<std::size_t, std::size_t> free_;     ///< completed free memory: offset -> size, coalesced
  std::map<std::size_t, Pending> pending_;      ///< freed in stream order, waiting: offset -> what
  std::map<std::uint64_t, std::size_t> token_refs_;
  std::vector<std::uint64_t> released_tokens_;
  std::uint64_t used_ = 0;
  std::uint64_t used_high_ = 0;
  std::uint64_t mapped_high_ = 0;
};

}  // namespace torch_tensorrt::executorch_backend::staging
