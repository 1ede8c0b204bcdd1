// The load trace (common/load_trace.h, Note [load trace]): steps record into the calling thread's
// trace only while one is set, in order, summed by name; another thread's steps never land in it.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/load_trace.h"

namespace {

namespace ex = torch_tensorrt::executorch_backend;
using ex::LoadTrace;
using ex::TimedStep;

TEST(LoadTrace, StepsRecordOnlyWhileATraceIsSet) {
  ASSERT_EQ(ex::load_trace(), nullptr) << "a thread starts without a trace";
  { TimedStep untraced("before"); }
  LoadTrace trace;
  ex::set_load_trace(&trace);
  {
    TimedStep step("sleep");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  { TimedStep step("other"); }
  { TimedStep step("sleep"); }
  ex::set_load_trace(nullptr);
  { TimedStep untraced("after"); }
  ASSERT_EQ(trace.steps().size(), 3u);
  EXPECT_STREQ(trace.steps()[0].name, "sleep");
  EXPECT_STREQ(trace.steps()[1].name, "other");
  EXPECT_GE(trace.steps()[0].ns, 2'000'000u) << "the step's time is its scope's";
  EXPECT_EQ(trace.total_ns("sleep"), trace.steps()[0].ns + trace.steps()[2].ns);
  EXPECT_EQ(trace.total_ns("before"), 0u);
  EXPECT_EQ(trace.total_ns("after"), 0u);
  trace.clear();
  EXPECT_TRUE(trace.steps().empty());
}

TEST(LoadTrace, AnotherThreadsStepsStayOutOfThisThreadsTrace) {
  LoadTrace trace;
  ex::set_load_trace(&trace);
  std::thread other([] {
    EXPECT_EQ(ex::load_trace(), nullptr);
    TimedStep step("elsewhere");
  });
  other.join();
  { TimedStep step("here"); }
  ex::set_load_trace(nullptr);
  ASSERT_EQ(trace.steps().size(), 1u);
  EXPECT_STREQ(trace.steps()[0].name, "here");
}

}  // namespace
