// The test buffers' pool: what a pending call or a live graph uses is not lent again until released.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "contract_fuzz/buffer_pool.h"
#include "contract_fuzz/call_args.h"
#include "contract_fuzz/engine_model.h"

namespace trtet_test::fuzz {
namespace {

// Note [buffers in use] (executor_call.cpp): the buffers of a call still to be checked and of a
// live graph stay lent across the pool's release; every other buffer is lent again. Seed
// 4581569510697142803's shape: a captured sum call's 4-byte output, released, became the next
// call's output, and the graph's replay wrote its own sum there before that call was checked.
// Pageable memory: no GPU needed.
TEST(ContractFuzzPool, AGraphsAndAPendingCallsBuffersAreNotLentAgainUntilReleased) {
  EngineSpec spec;
  spec.kind = EngineKind::kSum;  // x, a one-element output
  const EngineModel model(spec);
  CallPlan plan;
  plan.mems = {Mem::kPageable, Mem::kPageable};
  plan.shape = InputShape{8159, 1};
  BufferPool pool;
  auto graph = CallArgs::prepare(model, plan, pool, nullptr);
  ASSERT_TRUE(graph.ok()) << graph.status().to_string();
  plan.shape = InputShape{47896, 3};
  plan.data_seed = 2;
  auto pending = CallArgs::prepare(model, plan, pool, nullptr);
  ASSERT_TRUE(pending.ok()) << pending.status().to_string();
  const std::vector<const Buffer*> graph_buffers = (*graph)->buffers();
  ASSERT_EQ(graph_buffers.size(), 2u) << "the input and the output";
  std::vector<const Buffer*> in_use = graph_buffers;
  for (const Buffer* b : (*pending)->buffers()) in_use.push_back(b);

  pool.release_all(in_use);
  for (int round = 0; round < 2; ++round) {  // the same sizes again: every free buffer would fit
    plan.shape = round == 0 ? InputShape{8159, 1} : InputShape{47896, 3};
    auto later = CallArgs::prepare(model, plan, pool, nullptr);
    ASSERT_TRUE(later.ok()) << later.status().to_string();
    for (const Buffer* b : (*later)->buffers()) {
      EXPECT_EQ(std::find(in_use.begin(), in_use.end(), b), in_use.end())
          << "round " << round << ": a buffer still in use was lent to a later call";
    }
  }
  // Once the graph is retired and the call checked, their buffers are lent again.
  pool.release_all();
  plan.shape = InputShape{8159, 1};
  auto again = CallArgs::prepare(model, plan, pool, nullptr);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ((*again)->buffers(), graph_buffers) << "the first free buffers that fit: the graph's, in the same order";
}

}  // namespace
}  // namespace trtet_test::fuzz
