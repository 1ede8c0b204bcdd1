#include "contract_fuzz/buffer_pool.h"

#include <algorithm>

namespace trtet_test::fuzz {

ex::Result<Buffer*> BufferPool::lend(Mem mem, std::size_t bytes) {
  std::size_t capacity = 4096;
  while (capacity < bytes) capacity *= 2;
  std::lock_guard<std::mutex> lock(mutex_);
  Entry* best = nullptr;
  for (Entry& entry : entries_) {
    if (entry.lent || entry.buffer->mem() != mem || entry.buffer->capacity() < bytes) continue;
    if (best == nullptr || entry.buffer->capacity() < best->buffer->capacity()) best = &entry;
  }
  if (best == nullptr) {
    TRTET_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer, Buffer::allocate(mem, capacity));
    entries_.push_back(Entry{std::move(buffer), false});
    best = &entries_.back();
  }
  best->lent = true;
  return best->buffer.get();
}

void BufferPool::release_all(const std::vector<const Buffer*>& keep) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& entry : entries_) {
    entry.lent = std::find(keep.begin(), keep.end(), entry.buffer.get()) != keep.end();
  }
}

std::size_t BufferPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::size_t total = 0;
  for (const Entry& entry : entries_) total += entry.buffer->capacity();
  return total;
}

}  // namespace trtet_test::fuzz
