#include "batch_rule.h"

namespace trtet_triton {

namespace {

// The same dims past dim 0 in every input.
bool same_rows(const std::vector<std::vector<std::int64_t>>& a, const std::vector<std::vector<std::int64_t>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || a[i].empty()) return false;
    for (std::size_t d = 1; d < a[i].size(); ++d) {
      if (a[i][d] != b[i][d]) return false;
    }
  }
  return true;
}

std::int64_t rows_of(const std::vector<std::vector<std::int64_t>>& inputs) {
  return inputs.empty() || inputs[0].empty() ? 0 : inputs[0][0];
}

}  // namespace

std::vector<BatchCall> batch_calls(const std::vector<std::vector<std::vector<std::int64_t>>>& shapes,
                                   const std::vector<bool>& valid, const std::int64_t limit) {
  std::vector<BatchCall> calls;
  bool open = false;  // the last call may take more requests
  for (std::size_t r = 0; r < shapes.size(); ++r) {
    if (r >= valid.size() || !valid[r]) continue;
    const std::int64_t rows = rows_of(shapes[r]);
    if (rows <= 0) {  // 0 rows (or none given): served alone
      calls.push_back(BatchCall{{r}, 0});
      open = false;
      continue;
    }
    if (open) {
      BatchCall& last = calls.back();
      if (last.rows + rows <= limit && same_rows(shapes[last.requests.front()], shapes[r])) {
        last.requests.push_back(r);
        last.rows += rows;
        continue;
      }
    }
    calls.push_back(BatchCall{{r}, rows});
    open = true;
  }
  return calls;
}

}  // namespace trtet_triton
