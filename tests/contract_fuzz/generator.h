// Draws a sequence from a seed: the sessions' engines, then `length` steps weighted towards plain
// calls, with captures, replays, concurrency, destroys and stream churn mixed in.
#pragma once

#include "contract_fuzz/rng.h"
#include "contract_fuzz/sequence.h"

namespace trtet_test::fuzz {

/// Deterministic: the same config gives the same sequence on every platform.
Sequence generate(const FuzzConfig& config);

/// Tensor sizes the draws favour, in bytes: empty, one element, around the pageable staging's 1 MiB
/// chunk (and two chunks), and around 64 MiB (64 chunks, the most per tensor). Values above the
/// config's max_bytes are not drawn.
const std::vector<std::size_t>& boundary_sizes();

/// Log-uniform in [lo, hi].
std::size_t log_uniform(Rng& rng, std::size_t lo, std::size_t hi);
/// One of boundary_sizes() up to `max_bytes`, each as likely.
std::size_t draw_boundary_size(Rng& rng, std::size_t max_bytes);

}  // namespace trtet_test::fuzz
