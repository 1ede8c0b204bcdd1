// GPU tests of plan sets (torch_tensorrt/executorch/PlanSet.h): a ladder of four plans made up front
// (every partition as planned, disjoint within its plan, the device memory it takes printed);
// switches while several threads call, each call checked to run inside its plan's partition (the
// test engines record %smid; src/green/probe measures each partition); and destruction after a
// switch with a call still queued (waited for, memory given back).
#include <torch_tensorrt/executorch/CudaStreamGuard.h>
#include <torch_tensorrt/executorch/PlanSet.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/error_match.h"
#include "common/gpu.h"
#include "green/probe.h"
#include "plan/plan_set_ladder.h"
#include "session/session_fixture.h"

namespace trtet_test {
namespace {

class PlanSetGpu : public PlanSetGpuFixture {};

TEST_F(PlanSetGpu, FourPlansAreMadeUpFrontWithTheirMemoryPrinted) {
  const unsigned u = gpu_.granularity;
  const std::size_t before = free_bytes();
  std::size_t made = 0;
  std::size_t held = 0;
  {
    auto parts = ex::apply_plan_set(set_, 0);
    ASSERT_TRUE(parts.ok()) << parts.error().message();
    made = free_bytes();
    std::printf("plan set of %zu plans on '%s': %.1f MiB of device memory (%.1f MiB a plan; %.0f MiB free before)\n",
                parts->plans().size(), gpu_.name.c_str(), mib(static_cast<double>(before) - made),
                mib((static_cast<double>(before) - made) / parts->plans().size()), mib(before));
    EXPECT_EQ(parts->device(), 0);
    ASSERT_EQ(parts->plans().size(), 4u);
    EXPECT_EQ(parts->models(), (std::vector<std::string>{"latency", "batch", "others"}));
    EXPECT_EQ(parts->current(), parts->plans()[0]);
    const unsigned granules[] = {2, 3, 4, 6};
    for (std::size_t i = 0; i < 4; ++i) {
      const std::string& plan = parts->plans()[i];
      auto latency = parts->partition(plan, "latency");
      auto batch = parts->partition(plan, "batch");
      auto others = parts->partition(plan, "others");
      ASSERT_TRUE(latency.ok() && batch.ok() && others.ok()) << plan;
      EXPECT_EQ((*latency)->sm_count(), granules[i] * u) << plan;
      EXPECT_EQ((*batch)->sm_count(), 4 * u) << plan;
      EXPECT_TRUE((*others)->is_remainder()) << plan;
      EXPECT_EQ((*others)->sm_count(), gpu_.sm_count - (granules[i] + 4) * u) << plan;
      // One split: the plan's partitions share no SM.
      auto l = ex::green::probe_sms((*latency)->stream());
      auto b = ex::green::probe_sms((*batch)->stream());
      auto o = ex::green::probe_sms((*others)->stream());
      ASSERT_TRUE(l.ok() && b.ok() && o.ok()) << plan;
      EXPECT_LE(l->size(), (*latency)->sm_count());
      EXPECT_EQ(ex::green::shared_sms(*l, *b), 0u) << plan;
      EXPECT_EQ(ex::green::shared_sms(*l, *o), 0u) << plan;
      EXPECT_EQ(ex::green::shared_sms(*b, *o), 0u) << plan;
      std::printf("  %-12s latency %3zu SMs, batch %3zu, others %3zu\n", plan.c_str(), l->size(), b->size(), o->size());
    }
    TRTET_EXPECT_ERROR(parts->partition("latency-999", "latency"), ex::ErrorCode::kInvalidArgument,
                       "no plan named 'latency-999'; it holds 'latency-");
    TRTET_EXPECT_ERROR(parts->stream("vision"), ex::ErrorCode::kInvalidArgument,
                       "no model named 'vision'; it has 'latency', 'batch', 'others'");
    held = free_bytes();  // the probes' stream-ordered memory counted here and after alike
  }
  const std::size_t after = free_bytes();
  std::printf("destroyed: %.1f MiB given back (%.1f MiB taken)\n", mib(static_cast<double>(after) - held),
              mib(static_cast<double>(before) - made));
  EXPECT_GE(after, held);
}

// Three models, each called from its own thread on stream(model), while another thread switches the
// plan every 200 us. Every call is checked: its result, and that its engine's kernels ran inside the
// partition of the plan whose stream it got.
TEST_F(PlanSetGpu, SwitchesUnderConcurrentCallsRunEachCallOnItsPlansPartition) {
  auto parts = ex::apply_plan_set(set_, 0);
  ASSERT_TRUE(parts.ok()) << parts.error().message();
  const std::vector<std::string>& plans = parts->plans();
  const std::vector<std::string>& models = parts->models();
  std::map<cudaStream_t, std::pair<std::size_t, std::size_t>> where;  // stream -> (plan, model)
  std::vector<std::vector<std::vector<int>>> probed(plans.size(), std::vector<std::vector<int>>(models.size()));
  for (std::size_t p = 0; p < plans.size(); ++p) {
    for (std::size_t m = 0; m < models.size(); ++m) {
      auto part = parts->partition(plans[p], models[m]);
      ASSERT_TRUE(part.ok()) << part.error().message();
      where[(*part)->stream()] = {p, m};
      auto ids = ex::green::probe_sms((*part)->stream());
      ASSERT_TRUE(ids.ok()) << ids.status().message();
      probed[p][m] = *ids;
    }
  }
  std::vector<SessionUnderTest> sessions;
  std::vector<std::unique_ptr<AxpbyIo>> ios;
  for (std::size_t m = 0; m < models.size(); ++m) {
    sessions.push_back(make_session("elementwise min=1x4 max=64x4096 kernels=4 record_sms=1"));
    ASSERT_TRUE(sessions.back().session);
    ASSERT_NE(sessions.back().cuda_engine(), nullptr);
    ios.push_back(std::make_unique<AxpbyIo>(Memory::kDevice, Memory::kDevice, Shape{64, 4096}));
  }

  constexpr int kCalls = 200;
  std::atomic<bool> done{false};
  std::atomic<int> switches{0};
  std::string switch_failure;
  std::vector<std::vector<int>> calls_on(models.size(), std::vector<int>(plans.size(), 0));
  std::vector<std::string> failures(models.size());
  std::thread switcher([&] {
    for (std::size_t next = 1; !done.load(); ++next) {
      const ex::Status s = parts->switch_to(plans[next % plans.size()]);
      if (!s.ok()) {
        switch_failure = s.message();
        return;
      }
      switches.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  std::vector<std::thread> callers;
  for (std::size_t m = 0; m < models.size(); ++m) {
    callers.emplace_back([&, m] {
      CudaTestEngine* engine = sessions[m].cuda_engine();
      AxpbyIo& io = *ios[m];
      std::string& failure = failures[m];
      for (int c = 0; c < kCalls && failure.empty(); ++c) {
        auto stream = parts->stream(models[m]);
        if (!stream.ok()) {
          failure = "stream(): " + stream.error().message();
          break;
        }
        const auto it = where.find(*stream);
        if (it == where.end() || it->second.second != m) {
          failure = "stream() gave a stream of no partition of this model";
          break;
        }
        const std::size_t p = it->second.first;
        io.refresh();
        const ex::Status s = execute_on(*stream, *sessions[m].session, io.args());
        if (!s.ok()) failure = "call " + std::to_string(c) + ": " + s.message();
        if (failure.empty() && cudaStreamSynchronize(*stream) != cudaSuccess) failure = "synchronize failed";
        if (failure.empty() && !io.out_matches()) failure = "call " + std::to_string(c) + ": wrong result";
        if (failure.empty()) {
          auto sms = engine->recorded_sms();
          if (!sms.ok()) {
            failure = "recorded_sms: " + sms.error().message();
          } else if (!is_subset(*sms, probed[p][m])) {
            failure = "call " + std::to_string(c) + " ran outside plan '" + plans[p] + "''s partition";
          }
        }
        if (failure.empty() && !engine->clear_recorded_sms().ok()) failure = "clear_recorded_sms failed";
        if (failure.empty()) ++calls_on[m][p];
      }
    });
  }
  for (std::thread& t : callers) t.join();
  done.store(true);
  switcher.join();
  EXPECT_TRUE(switch_failure.empty()) << switch_failure;
  std::size_t plans_used = 0;
  for (std::size_t p = 0; p < plans.size(); ++p) {
    int calls = 0;
    for (std::size_t m = 0; m < models.size(); ++m) calls += calls_on[m][p];
    plans_used += calls > 0 ? 1 : 0;
    std::printf("  %-12s %d calls\n", plans[p].c_str(), calls);
  }
  std::printf("%d switches during %d calls of %zu models\n", switches.load(), kCalls * static_cast<int>(models.size()),
              models.size());
  for (std::size_t m = 0; m < models.size(); ++m) EXPECT_TRUE(failures[m].empty()) << models[m] << ": " << failures[m];
  EXPECT_GE(plans_used, 2u) << "the calls never saw a switch";
}

TEST_F(PlanSetGpu, DestroyedAfterASwitchWithACallStillQueued) {
  auto s = make_session("elementwise min=1x4 max=64x4096 spin_us=20000 record_sms=1");
  ASSERT_TRUE(s.session);
  AxpbyIo io(Memory::kDevice, Memory::kDevice, Shape{64, 4096});
  std::vector<int> probed;
  std::size_t held = 0;
  {
    auto parts = ex::apply_plan_set(set_, 0);
    ASSERT_TRUE(parts.ok()) << parts.error().message();
    const std::string top = parts->plans().back();
    TRTET_ASSERT_OK(parts->switch_to(top));
    EXPECT_EQ(parts->current(), top);
    auto stream = parts->stream("latency");
    ASSERT_TRUE(stream.ok()) << stream.error().message();
    auto latency = parts->partition(top, "latency");
    ASSERT_TRUE(latency.ok()) << latency.error().message();
    EXPECT_EQ((*latency)->stream(), *stream);
    auto ids = ex::green::probe_sms(*stream);
    ASSERT_TRUE(ids.ok()) << ids.status().message();
    probed = *ids;
    io.refresh();
    TRTET_ASSERT_OK(execute_on(*stream, *s.session, io.args()));  // 20 ms of work queued, not waited for
    TRTET_EXPECT_ERROR(parts->switch_to("latency-999"), ex::ErrorCode::kInvalidArgument,
                       "cannot switch to 'latency-999': the set holds no such plan; it holds 'latency-");
    EXPECT_EQ(parts->current(), top);
    held = free_bytes();
  }  // destroyed: the queued call is waited for, then the streams and the green contexts go
  EXPECT_TRUE(io.out_matches()) << "the queued call did not finish before its stream was destroyed";
  auto sms = s.cuda_engine()->recorded_sms();
  TRTET_ASSERT_OK(sms);
  EXPECT_TRUE(is_subset(*sms, probed)) << "the call ran outside the partition of the plan switched to";
  const std::size_t after = free_bytes();
  std::printf("destroyed after a switch: %.1f MiB given back\n", mib(static_cast<double>(after) - held));
  EXPECT_GE(after, held);
  // The session goes on, on another stream, after the stream of its last call is gone.
  TRTET_ASSERT_OK(s.cuda_engine()->clear_recorded_sms());
  OwnedStream other;
  ASSERT_TRUE(other.ok());
  TRTET_ASSERT_OK(run_and_sync(*s.session, io, other.get()));
  EXPECT_TRUE(io.out_matches());
}

}  // namespace
}  // namespace trtet_test
