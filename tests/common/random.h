// Random test data and draws: SplitMix64, so a seed draws the same values on every platform and
// standard library (std:: distributions are not specified bit for bit), fast enough to refill
// tensors of tens of megabytes on every call, and any element drawable alone. RandomStream draws
// one value after another (integers, reals, choices) for tests that draw cases.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <vector>

namespace trtet_test {

/// SplitMix64's step between states.
inline constexpr std::uint64_t kSplitMixGamma = 0x9e3779b97f4a7c15ull;

/// SplitMix64's output of the state `z`: a well-mixed 64-bit value.
constexpr std::uint64_t splitmix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// Element `i` of the sequence of `seed`: a float in [-4, -0.25] U [0.25, 4], never zero (so an
/// output left at zero or at a neighbour's value is never right by chance).
inline float random_float_at(std::uint64_t seed, std::size_t i) noexcept {
  const std::uint64_t z = splitmix64(seed + kSplitMixGamma * (static_cast<std::uint64_t>(i) + 1));
  const float magnitude = 0.25f + 3.75f * static_cast<float>(z & 0xFFFFFF) * (1.0f / 16777216.0f);
  return (z >> 63) != 0 ? -magnitude : magnitude;
}

/// `values` filled with the sequence of `seed`.
inline void fill_random(std::vector<float>& values, std::uint64_t seed) noexcept {
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = random_float_at(seed, i);
}

/// The first `n` floats of the sequence of `seed`.
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed) {
  std::vector<float> values(n);
  fill_random(values, seed);
  return values;
}

/// `bytes` bytes at `data` from the sequence of `seed` (the top byte of each element's value):
/// arbitrary payloads (engine bytes, buffers) that a seed repeats.
inline void fill_random_bytes(void* data, std::size_t bytes, std::uint64_t seed) noexcept {
  auto* out = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    out[i] = static_cast<unsigned char>(splitmix64(seed + kSplitMixGamma * (static_cast<std::uint64_t>(i) + 1)) >> 56);
  }
}

/// SplitMix64's sequence of `seed`, one draw after another.
class RandomStream {
 public:
  explicit RandomStream(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept { return splitmix64(state_ += kSplitMixGamma); }
  /// Uniform in [lo, hi] (inclusive); lo when hi < lo.
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) noexcept {
    if (hi <= lo) return lo;
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    return lo + static_cast<std::int64_t>(next() % span);
  }
  /// Uniform in [0, 1).
  double unit() noexcept { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  /// Uniform in [lo, hi).
  double uniform_real(double lo, double hi) noexcept { return lo + (hi - lo) * unit(); }
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

/// A seed no earlier call in this process returned (std::random_device mixed with a counter).
inline unsigned fresh_seed() {
  static std::atomic<unsigned> counter{0};
  static const unsigned base = std::random_device{}();
  return base ^ (0x9e3779b9u * (counter.fetch_add(1) + 1));
}

}  // namespace trtet_test
