// The fuzzer's random source: SplitMix64, so a seed draws the same sequence on every platform and
// standard library (std:: distributions are not specified bit for bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "common/random.h"

namespace trtet_test::fuzz {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept { return splitmix64(state_ += kSplitMixGamma); }
  /// Uniform in [lo, hi] (inclusive); lo when hi < lo.
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) noexcept {
    if (hi <= lo) return lo;
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(next() % span);
  }
  /// Uniform in [0, 1).
  double unit() noexcept { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  /// True with probability p.
  bool chance(double p) noexcept { return unit() < p; }
  /// An index drawn with the given relative weights.
  std::size_t weighted(std::initializer_list<double> weights) noexcept {
    double total = 0;
    for (double w : weights) total += w;
    double pick = unit() * total;
    std::size_t index = 0;
    for (double w : weights) {
      if (pick < w) return index;
      pick -= w;
      ++index;
    }
    return weights.size() - 1;
  }

 private:
  std::uint64_t state_;
};

/// A well-mixed 64-bit value of (a, b): seeds of sub-draws that do not depend on draw order.
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) noexcept {
  Rng rng(a ^ (b * 0xd1b54a32d192ed03ull));
  return rng.next();
}

}  // namespace trtet_test::fuzz
