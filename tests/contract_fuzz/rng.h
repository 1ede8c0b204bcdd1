// The fuzzer's random source: tests/common/random.h's RandomStream (SplitMix64, so a seed draws the
// same sequence on every platform and standard library), and seeds of sub-draws.
#pragma once

#include <cstdint>

#include "common/random.h"

namespace trtet_test::fuzz {

using Rng = RandomStream;

/// A well-mixed 64-bit value of (a, b): seeds of sub-draws that do not depend on draw order.
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) noexcept {
  Rng rng(a ^ (b * 0xd1b54a32d192ed03ull));
  return rng.next();
}

}  // namespace trtet_test::fuzz
