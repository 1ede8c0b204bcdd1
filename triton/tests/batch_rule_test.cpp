// Which requests go into one call (triton/src/batch_rule.h, Note [batching requests]): consecutive
// valid requests with the same dims past dim 0, their rows within the limit; invalid ones left out,
// 0-row ones alone. No server and no GPU.
#include "batch_rule.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

using trtet_triton::batch_calls;
using trtet_triton::BatchCall;
using Shapes = std::vector<std::vector<std::vector<std::int64_t>>>;

std::vector<std::vector<std::size_t>> requests_of(const std::vector<BatchCall>& calls) {
  std::vector<std::vector<std::size_t>> out;
  for (const BatchCall& c : calls) out.push_back(c.requests);
  return out;
}

TEST(BatchRule, RequestsOfOneShapeShareACallWithinTheLimit) {
  // Two inputs each; rows 2, 3, 1, 4 of [*, 64]: 2 + 3 + 1 = 6 fit a limit of 8, the 4 does not.
  const Shapes shapes = {{{2, 64}, {2, 64}}, {{3, 64}, {3, 64}}, {{1, 64}, {1, 64}}, {{4, 64}, {4, 64}}};
  const auto calls = batch_calls(shapes, {true, true, true, true}, 8);
  ASSERT_EQ(requests_of(calls), (std::vector<std::vector<std::size_t>>{{0, 1, 2}, {3}}));
  EXPECT_EQ(calls[0].rows, 6);
  EXPECT_EQ(calls[1].rows, 4);
}

TEST(BatchRule, ARowCountExactlyAtTheLimitFits) {
  const Shapes shapes = {{{4, 8}}, {{4, 8}}, {{1, 8}}};
  EXPECT_EQ(requests_of(batch_calls(shapes, {true, true, true}, 8)),
            (std::vector<std::vector<std::size_t>>{{0, 1}, {2}}));
}

TEST(BatchRule, AnotherShapePastDimZeroStartsAnotherCall) {
  // The second input differs in dim 1 for request 1: it cannot share request 0's call; request 2
  // matches request 1 and follows it, not request 0 (the order is kept).
  const Shapes shapes = {{{1, 64}, {1, 64}}, {{1, 64}, {1, 32}}, {{1, 64}, {1, 32}}, {{1, 64}, {1, 64}}};
  EXPECT_EQ(requests_of(batch_calls(shapes, {true, true, true, true}, 8)),
            (std::vector<std::vector<std::size_t>>{{0}, {1, 2}, {3}}));
}

TEST(BatchRule, AnotherRankStartsAnotherCall) {
  const Shapes shapes = {{{1, 4, 4}}, {{1, 16}}, {{1, 16}}};
  EXPECT_EQ(requests_of(batch_calls(shapes, {true, true, true}, 8)),
            (std::vector<std::vector<std::size_t>>{{0}, {1, 2}}));
}

TEST(BatchRule, InvalidRequestsAreLeftOutAndDoNotSplitACall) {
  const Shapes shapes = {{{1, 8}}, {{9, 8}}, {{2, 8}}, {{1, 8}}};
  const auto calls = batch_calls(shapes, {true, false, true, false}, 8);
  ASSERT_EQ(requests_of(calls), (std::vector<std::vector<std::size_t>>{{0, 2}}));
  EXPECT_EQ(calls[0].rows, 3);
  EXPECT_TRUE(batch_calls(shapes, {false, false, false, false}, 8).empty());
}

TEST(BatchRule, ZeroRowsAreServedAloneAndCloseTheCallBefore) {
  const Shapes shapes = {{{1, 8}}, {{0, 8}}, {{1, 8}}, {{1, 8}}};
  const auto calls = batch_calls(shapes, {true, true, true, true}, 8);
  ASSERT_EQ(requests_of(calls), (std::vector<std::vector<std::size_t>>{{0}, {1}, {2, 3}}));
  EXPECT_EQ(calls[1].rows, 0);
}

TEST(BatchRule, AnOversizedRequestStillGetsACallOfItsOwn) {
  // Above the limit on its own (the per-request check refuses such a request first; the rule does
  // not drop it silently): alone, and the requests around it are not merged across it.
  const Shapes shapes = {{{2, 8}}, {{9, 8}}, {{2, 8}}};
  EXPECT_EQ(requests_of(batch_calls(shapes, {true, true, true}, 8)),
            (std::vector<std::vector<std::size_t>>{{0}, {1}, {2}}));
}

TEST(BatchRule, EveryValidRequestIsInExactlyOneCallInOrder) {
  // A mix of shapes, rows and validity: each valid request once, all in their order.
  Shapes shapes;
  std::vector<bool> valid;
  for (int r = 0; r < 200; ++r) {
    const std::int64_t rows = r % 5;
    const std::int64_t cols = r % 7 < 4 ? 64 : 32;
    shapes.push_back({{rows, cols}, {rows, cols}});
    valid.push_back(r % 11 != 3);
  }
  std::vector<std::size_t> seen;
  for (const BatchCall& c : batch_calls(shapes, valid, 8)) {
    std::int64_t rows = 0;
    for (std::size_t r : c.requests) {
      seen.push_back(r);
      rows += shapes[r][0][0];
    }
    EXPECT_EQ(rows, c.rows);
    EXPECT_LE(c.rows, 8);
  }
  std::vector<std::size_t> expected;
  for (std::size_t r = 0; r < shapes.size(); ++r) {
    if (valid[r]) expected.push_back(r);
  }
  EXPECT_EQ(seen, expected);
}

}  // namespace
