// The backend's request phases (triton/src/request_phases.h, Note [request phases]): each phase is the
// time between its point and the one before, the method phase is added as given, the sums are due
// every 32 requests and start over once taken. No server and no GPU: the arithmetic alone.
#include "request_phases.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using trtet_triton::kPhaseFlushEvery;
using trtet_triton::kPhases;
using trtet_triton::Phase;
using trtet_triton::PhaseFlush;
using trtet_triton::PhaseSums;
using trtet_triton::RequestPoints;

// A request starting at `t0` ns whose phases take 1, 2, ... 8 us in order, 3.5 us of it in Method::execute.
RequestPoints request(std::uint64_t t0) {
  RequestPoints p;
  p.start = t0;
  p.response_new = p.start + 1000;
  p.inputs = p.response_new + 2000;
  p.outputs = p.inputs + 3000;
  p.execute = p.outputs + 4000;
  p.stream_wait = p.execute + 5000;
  p.late_outputs = p.stream_wait + 6000;
  p.send = p.late_outputs + 7000;
  p.release = p.send + 8000;
  p.method_ns = 3500;
  return p;
}

double us(const PhaseFlush& f, Phase phase) { return f.us[static_cast<std::size_t>(phase)]; }

TEST(RequestPhases, EachPhaseIsTheTimeFromThePointBefore) {
  PhaseSums sums;
  EXPECT_FALSE(sums.add(request(1'000'000)));
  const PhaseFlush f = sums.take();
  EXPECT_EQ(f.requests, 1u);
  const Phase order[] = {Phase::kResponseNew, Phase::kInputs, Phase::kOutputs, Phase::kExecute,
                         Phase::kStreamWait,  Phase::kLateOutputs, Phase::kSend, Phase::kRelease};
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(us(f, order[i]), i + 1.0) << trtet_triton::phase_name(order[i]);
  EXPECT_DOUBLE_EQ(us(f, Phase::kMethod), 3.5);
}

TEST(RequestPhases, TritonsThreeFiguresAreSumsOfPhases) {
  // compute input = outputs - start, infer = late_outputs - outputs, output = send - late_outputs.
  PhaseSums sums;
  const RequestPoints p = request(5'000'000);
  sums.add(p);
  const PhaseFlush f = sums.take();
  EXPECT_DOUBLE_EQ(us(f, Phase::kResponseNew) + us(f, Phase::kInputs) + us(f, Phase::kOutputs), (p.outputs - p.start) / 1e3);
  EXPECT_DOUBLE_EQ(us(f, Phase::kExecute) + us(f, Phase::kStreamWait) + us(f, Phase::kLateOutputs),
                   (p.late_outputs - p.outputs) / 1e3);
  EXPECT_DOUBLE_EQ(us(f, Phase::kSend), (p.send - p.late_outputs) / 1e3);
}

TEST(RequestPhases, DueEvery32RequestsAndStartOverWhenTaken) {
  PhaseSums sums;
  for (std::uint64_t r = 1; r < kPhaseFlushEvery; ++r) EXPECT_FALSE(sums.add(request(r * 100'000))) << r;
  EXPECT_TRUE(sums.add(request(kPhaseFlushEvery * 100'000)));
  const PhaseFlush f = sums.take();
  EXPECT_EQ(f.requests, kPhaseFlushEvery);
  EXPECT_DOUBLE_EQ(us(f, Phase::kSend), 7.0 * kPhaseFlushEvery);
  const PhaseFlush empty = sums.take();
  EXPECT_EQ(empty.requests, 0u);
  for (std::size_t i = 0; i < kPhases; ++i) EXPECT_EQ(empty.us[i], 0.0);
  EXPECT_FALSE(sums.add(request(1)));  // counting from one again
  EXPECT_EQ(sums.take().requests, 1u);
}

TEST(RequestPhases, APointBeforeTheOneItFollowsCountsZero) {
  RequestPoints p = request(10'000'000);
  p.stream_wait = p.execute - 1;  // a clock that went back: no negative (wrapped) time
  PhaseSums sums;
  sums.add(p);
  const PhaseFlush f = sums.take();
  EXPECT_EQ(us(f, Phase::kStreamWait), 0.0);
  EXPECT_GT(us(f, Phase::kLateOutputs), 6.0);  // from the earlier point: the time is not lost
}

TEST(RequestPhases, EveryPhaseHasItsMetricLabel) {
  const std::string names[] = {"response_new", "inputs", "outputs", "execute", "stream_wait",
                               "late_outputs", "send",   "release", "method"};
  ASSERT_EQ(sizeof names / sizeof names[0], kPhases);
  for (std::size_t i = 0; i < kPhases; ++i) EXPECT_EQ(trtet_triton::phase_name(static_cast<Phase>(i)), names[i]);
}

}  // namespace
