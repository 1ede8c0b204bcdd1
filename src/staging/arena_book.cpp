#include "staging/arena_book.h"

#include <algorithm>

namespace torch_tensorrt::executorch_backend::staging {

ArenaBook::ArenaBook(std::size_t chunk_bytes, std::size_t chunks, std::size_t alignment, bool same_stream_reuse)
    : chunk_(chunk_bytes), alignment_(alignment), same_stream_reuse_(same_stream_reuse), mapped_(chunks, 0) {}

std::size_t ArenaBook::rounded(std::size_t bytes) const noexcept {
  if (bytes == 0) bytes = 1;
  if (bytes > mapped_.size() * chunk_) return kNone;  // also keeps the sum below from overflowing
  return (bytes + alignment_ - 1) / alignment_ * alignment_;
}

std::size_t ArenaBook::take(std::size_t bytes, std::uint64_t stream) {
  const std::size_t n = rounded(bytes);
  if (n == kNone) return kNone;
  std::size_t offset = kNone;
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second >= n && (best == free_.end() || it->second < best->second)) best = it;
  }
  if (best != free_.end()) {
    offset = best->first;
    const std::size_t size = best->second;
    free_.erase(best);
    if (size > n) free_.emplace(offset + n, size - n);
  } else if (same_stream_reuse_ && stream != 0) {
    auto found = pending_.end();
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (it->second.stream != stream || it->second.size < n) continue;
      if (found == pending_.end() || it->second.size < found->second.size) found = it;
    }
    if (found == pending_.end()) return kNone;
    offset = found->first;
    const Pending what = found->second;
    pending_.erase(found);
    if (what.size > n) {
      pending_.emplace(offset + n, Pending{what.size - n, what.stream, what.token});  // still waits on the token
    } else {
      unref(what.token);
    }
  } else {
    return kNone;
  }
  live_.emplace(offset, n);
  used_ += n;
  used_high_ = std::max(used_high_, used_);
  return offset;
}

std::size_t ArenaBook::free_ending_at(std::size_t end) const {
  auto it = free_.lower_bound(end);
  if (it == free_.begin()) return 0;
  --it;
  return it->first + it->second == end ? it->second : 0;
}

std::size_t ArenaBook::free_starting_at(std::size_t start) const {
  auto it = free_.find(start);
  return it == free_.end() ? 0 : it->second;
}

ArenaBook::Run ArenaBook::plan_growth(std::size_t bytes) const {
  const std::size_t n = rounded(bytes);
  Run best;
  if (n == kNone) return best;
  auto consider = [&](Run candidate) {
    if (best.count == 0 || candidate.count < best.count ||
        (candidate.count == best.count && candidate.first < best.first)) {
      best = candidate;
    }
  };
  auto chunks_for = [&](std::size_t have) {  // chunks that make `have` bytes reach n, at least one
    if (have >= n) return std::size_t{1};
    return (n - have + chunk_ - 1) / chunk_;
  };
  const std::size_t total = mapped_.size();
  for (std::size_t a = 0; a < total;) {
    if (mapped_[a] != 0) {
      ++a;
      continue;
    }
    std::size_t b = a;
    while (b < total && mapped_[b] == 0) ++b;
    const std::size_t length = b - a;
    const std::size_t before = a > 0 ? free_ending_at(a * chunk_) : 0;
    const std::size_t after = b < total ? free_starting_at(b * chunk_) : 0;
    const std::size_t up = chunks_for(before);  // mapped upward from a, after the free memory before
    if (up <= length) consider(Run{a, up});
    const std::size_t down = chunks_for(after);  // mapped downward from b, before the free memory after
    if (down <= length) consider(Run{b - down, down});
    if (before + length * chunk_ + after >= n) consider(Run{a, length});  // the whole gap joins both
    a = b;
  }
  return best;
}

void ArenaBook::add_free(std::size_t offset, std::size_t size) {
  auto next = free_.lower_bound(offset);
  if (next != free_.begin()) {
    auto previous = std::prev(next);
    if (previous->first + previous->second == offset) {
      offset = previous->first;
      size += previous->second;
      free_.erase(previous);
    }
  }
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    free_.erase(next);
  }
  free_.emplace(offset, size);
}

void ArenaBook::add_mapped(Run run) {
  for (std::size_t c = run.first; c < run.first + run.count; ++c) {
    if (mapped_[c] == 0) ++mapped_count_;
    mapped_[c] = 1;
  }
  add_free(run.first * chunk_, run.count * chunk_);
  mapped_high_ = std::max<std::uint64_t>(mapped_high_, mapped_bytes());
}

std::size_t ArenaBook::live_size(std::size_t offset) const noexcept {
  auto it = live_.find(offset);
  return it == live_.end() ? 0 : it->second;
}

bool ArenaBook::give_back(std::size_t offset, std::uint64_t stream, std::uint64_t token) {
  auto it = live_.find(offset);
  if (it == live_.end()) return false;
  const std::size_t size = it->second;
  live_.erase(it);
  used_ -= size;
  pending_.emplace(offset, Pending{size, stream, token});
  ++token_refs_[token];
  return true;
}

bool ArenaBook::give_back_now(std::size_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end()) return false;
  const std::size_t size = it->second;
  live_.erase(it);
  used_ -= size;
  add_free(offset, size);
  return true;
}

void ArenaBook::unref(std::uint64_t token) {
  auto it = token_refs_.find(token);
  if (it == token_refs_.end()) return;
  if (--it->second == 0) {
    token_refs_.erase(it);
    released_tokens_.push_back(token);
  }
}

void ArenaBook::settle(const std::function<bool(std::uint64_t)>& complete) {
  if (pending_.empty()) return;
  std::map<std::uint64_t, bool> asked;
  for (auto it = pending_.begin(); it != pending_.end();) {
    const std::uint64_t token = it->second.token;
    auto known = asked.find(token);
    if (known == asked.end()) known = asked.emplace(token, complete(token)).first;
    if (!known->second) {
      ++it;
      continue;
    }
    add_free(it->first, it->second.size);
    unref(token);
    it = pending_.erase(it);
  }
}

std::vector<std::uint64_t> ArenaBook::drain_released_tokens() {
  std::vector<std::uint64_t> released;
  released.swap(released_tokens_);
  return released;
}

std::vector<ArenaBook::Run> ArenaBook::take_trimmable() {
  std::vector<Run> runs;
  std::map<std::size_t, std::size_t> kept;
  for (const auto& [offset, size] : free_) {
    const std::size_t first = (offset + chunk_ - 1) / chunk_;
    const std::size_t last = (offset + size) / chunk_;
    if (last <= first) {
      kept.emplace(offset, size);
      continue;
    }
    runs.push_back(Run{first, last - first});
    for (std::size_t c = first; c < last; ++c) mapped_[c] = 0;
    mapped_count_ -= last - first;
    if (first * chunk_ > offset) kept.emplace(offset, first * chunk_ - offset);
    if (offset + size > last * chunk_) kept.emplace(last * chunk_, offset + size - last * chunk_);
  }
  free_.swap(kept);
  return runs;
}

}  // namespace torch_tensorrt::executorch_backend::staging
