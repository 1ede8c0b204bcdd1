#include "contract_fuzz/shrink.h"

namespace trtet_test::fuzz {

std::vector<std::size_t> shrink_steps(std::vector<std::size_t> steps,
                                      const std::function<bool(const std::vector<std::size_t>&)>& still_fails,
                                      std::chrono::steady_clock::time_point deadline, int* trials) {
  int count = 0;
  std::size_t chunk = steps.size() / 2;
  while (chunk >= 1) {
    bool removed_any = false;
    for (std::size_t start = 0; start < steps.size();) {
      if (std::chrono::steady_clock::now() >= deadline) {
        if (trials != nullptr) *trials = count;
        return steps;
      }
      std::vector<std::size_t> candidate(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(start));
      const std::size_t end = std::min(steps.size(), start + chunk);
      candidate.insert(candidate.end(), steps.begin() + static_cast<std::ptrdiff_t>(end), steps.end());
      ++count;
      if (!candidate.empty() && still_fails(candidate)) {
        steps = std::move(candidate);  // the same start now names the next chunk
        removed_any = true;
      } else {
        start += chunk;
      }
    }
    // Single steps: repeat until a full pass removes nothing (a deletion can enable another).
    if (chunk == 1 && !removed_any) break;
    if (chunk > 1) chunk /= 2;
  }
  if (trials != nullptr) *trials = count;
  return steps;
}

}  // namespace trtet_test::fuzz
