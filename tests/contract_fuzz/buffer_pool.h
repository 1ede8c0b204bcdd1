// The buffers of one sequence, kept until the sequence ends and lent again to later calls of the
// same memory kind. Nothing is freed mid-sequence, so an address never comes back as memory of
// another kind (the delegate caches pointer kinds by address, Note in session/memory_kind.h).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "contract_fuzz/buffer.h"

namespace trtet_test::fuzz {

class BufferPool {
 public:
  /// A buffer of `mem` with at least `bytes` (rounded up to a power of two, at least 4 KiB) not
  /// lent since the last release_all(). Allocates (possibly synchronizing the device) when none is free.
  ex::Result<Buffer*> lend(Mem mem, std::size_t bytes);
  /// Every buffer free again but those in `keep` (the calls that used them are complete; those of
  /// `keep` may still be in flight, or a live graph still addresses them: Note [buffers in use] in
  /// executor_call.cpp).
  void release_all(const std::vector<const Buffer*>& keep = {});
  /// Bytes held, all kinds.
  std::size_t held_bytes() const;

 private:
  struct Entry {
    std::unique_ptr<Buffer> buffer;
    bool lent = false;
  };
  mutable std::mutex mutex_;
  std::vector<Entry> entries_;
};

}  // namespace trtet_test::fuzz
