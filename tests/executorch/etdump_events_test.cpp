// Profiling without a GPU (include/torch_tensorrt/executorch/Profiling.h): the deferral of GPU
// times (Note [deferred GPU times]) against a scripted GPU, and the events a call becomes, written
// by ExecuTorch's own ETDumpGen and read back by tools/etdump_report.py.
#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "session/call_timing.h"
#include "executorch/etdump_support.h"
#include "executorch/executorch_test_support.h"
#include "backend/gpu_timing.h"

namespace trtet_test {
namespace {

namespace d = ex::delegate;
using d::CallMarks;
using d::CallPath;
using d::CallRecord;
using d::Mark;

/// A GPU whose progress the test sets: a mark has passed once `now_ms` reaches its time. Nothing
/// here can wait, so a collect that returned did not wait.
class ScriptedGpu final : public d::MarkReader {
 public:
  void at(const CallMarks& marks, Mark mark, double ms) { times_[{&marks, static_cast<int>(mark)}] = ms; }
  ex::Result<bool> passed(const CallMarks& marks, Mark mark) override {
    ++queries;
    return time(marks, mark) <= now_ms;
  }
  ex::Result<float> elapsed_ms(const CallMarks& from, Mark a, const CallMarks& to, Mark b) override {
    return static_cast<float>(time(to, b) - time(from, a));
  }
  double now_ms = 0;
  int queries = 0;

 private:
  double time(const CallMarks& marks, Mark mark) const { return times_.at({&marks, static_cast<int>(mark)}); }
  std::map<std::pair<const CallMarks*, int>, double> times_;
};

/// One scripted call's GPU marks: each (mark, GPU ms); the first recorded at `host_ns`.
struct Script {
  std::vector<std::pair<Mark, double>> marks;
  std::uint64_t host_ns = 0;
};

CallRecord record_of(CallPath path, int profile = 0, std::uint64_t staged = 0) {
  CallRecord record;
  record.filled = true;
  record.path = path;
  record.profile = profile;
  record.staged_bytes = staged;
  return record;
}

class DeferredGpuTimes : public ::testing::Test {
 protected:
  /// A call through `profiler_` that ended with `ok`, its marks as `script` says.
  void call(std::uint64_t sequence, const Script& script, const CallRecord& record, bool ok = true) {
    std::unique_ptr<CallMarks> marks = profiler_.take_marks();
    for (const auto& [mark, ms] : script.marks) {
      marks->note_recorded(mark, script.host_ns);
      gpu_.at(*marks, mark, ms);
    }
    profiler_.finish(std::move(marks), record, sequence, ok);
  }
  std::vector<d::TimedCall> collect() {
    std::vector<d::TimedCall> out;
    EXPECT_TRUE(profiler_.collect(out).ok());
    return out;
  }
  static Script engine(double start_ms, double end_ms, std::uint64_t host_ns = 0) {
    return Script{{{Mark::kEngineStart, start_ms}, {Mark::kEngineEnd, end_ms}}, host_ns};
  }

  ScriptedGpu gpu_;
  d::CallTimer profiler_{d::TickClock{nullptr, 1.0}, gpu_};  // one tick a nanosecond
};

TEST_F(DeferredGpuTimes, ACallIsLoggedOnceItsGpuWorkHasPassedNeverBefore) {
  call(1, engine(0.0, 2.0), record_of(CallPath::kEager));
  gpu_.now_ms = 0.5;  // the engine is still running
  EXPECT_TRUE(collect().empty());
  EXPECT_EQ(profiler_.pending(), 1u);
  EXPECT_GE(gpu_.queries, 1) << "the profiler asked (a query) rather than waited";
  gpu_.now_ms = 2.0;
  const auto timed = collect();
  ASSERT_EQ(timed.size(), 1u);
  EXPECT_EQ(timed[0].sequence, 1u);
  EXPECT_TRUE(timed[0].engine.present);
  EXPECT_DOUBLE_EQ(timed[0].engine.duration_ns, 2e6);
  EXPECT_FALSE(timed[0].copy_in.present);
  EXPECT_FALSE(timed[0].copy_out.present);
  EXPECT_EQ(profiler_.pending(), 0u);
  EXPECT_TRUE(collect().empty()) << "a call is logged once";
}

TEST_F(DeferredGpuTimes, CallsAreLoggedInOrderWithOneQueryForTheFirstStillRunning) {
  call(1, engine(0.0, 50.0), record_of(CallPath::kEager));  // a long engine on one stream
  call(2, engine(1.0, 2.0), record_of(CallPath::kEager));   // a short one on another, done first
  for (std::uint64_t i = 3; i <= 100; ++i) call(i, engine(60.0 + i, 61.0 + i), record_of(CallPath::kRepeat));
  gpu_.now_ms = 3.0;
  gpu_.queries = 0;
  EXPECT_TRUE(collect().empty());
  EXPECT_EQ(gpu_.queries, 1) << "one query, whatever the number of calls behind the first";
  EXPECT_EQ(profiler_.pending(), 100u);
  gpu_.now_ms = 100.0;  // calls 1 to 39 are done
  auto timed = collect();
  ASSERT_EQ(timed.size(), 39u);
  for (std::size_t i = 0; i < timed.size(); ++i) EXPECT_EQ(timed[i].sequence, i + 1);
  gpu_.now_ms = 1000.0;
  timed = collect();
  ASSERT_EQ(timed.size(), 61u);
  EXPECT_EQ(timed.back().sequence, 100u);
}

TEST_F(DeferredGpuTimes, FailedAndCapturedCallsKeepNothingToLog) {
  call(1, engine(0.0, 1.0), record_of(CallPath::kEager), /*ok=*/false);
  call(2, Script{}, record_of(CallPath::kCaptured));
  call(3, engine(0.0, 1.0), record_of(CallPath::kCaptured));
  EXPECT_EQ(profiler_.pending(), 0u);
  gpu_.now_ms = 10;
  EXPECT_TRUE(collect().empty());
}

TEST_F(DeferredGpuTimes, CopySpansAndTheEngineSpanComeFromTheirOwnMarks) {
  call(1, Script{{{Mark::kCopyInStart, 10.0}, {Mark::kCopyInEnd, 10.25}, {Mark::kEngineStart, 10.5},
                  {Mark::kEngineEnd, 12.5}, {Mark::kCopyOutEnd, 12.75}},
                 /*host_ns=*/1'000'000},
       record_of(CallPath::kEager, 1, 4096));
  gpu_.now_ms = 13;
  const auto timed = collect();
  ASSERT_EQ(timed.size(), 1u);
  const d::TimedCall& t = timed[0];
  EXPECT_EQ(t.record.profile, 1);
  EXPECT_EQ(t.record.staged_bytes, 4096u);
  EXPECT_EQ(t.record.marks, nullptr);
  // The first call is the anchor: its first mark sits at the host ticks of its recording.
  EXPECT_EQ(t.copy_in.start_ticks, 1'000'000u);
  EXPECT_DOUBLE_EQ(t.copy_in.duration_ns, 0.25e6);
  EXPECT_EQ(t.engine.start_ticks, 1'500'000u);
  EXPECT_EQ(t.engine.end_ticks, 3'500'000u);
  EXPECT_EQ(t.copy_out.start_ticks, 3'500'000u);
  EXPECT_DOUBLE_EQ(t.copy_out.duration_ns, 0.25e6);
}

TEST_F(DeferredGpuTimes, PlacementFollowsTheAnchorAndOnlyEverMovesItLater) {
  call(1, engine(10.0, 11.0, 1'000'000), record_of(CallPath::kEager));  // the anchor, at 1 ms of host time
  call(2, engine(12.0, 12.5, 1'500'000), record_of(CallPath::kRepeat));
  // Call 3 was recorded at 10 ms of host time but the anchor would place it at 4 ms: the anchor
  // was placed 6 ms too early (its stream was busy), and moves.
  call(3, engine(13.0, 13.5, 10'000'000), record_of(CallPath::kRepeat));
  call(4, engine(14.0, 14.5, 10'100'000), record_of(CallPath::kRepeat));
  gpu_.now_ms = 20;
  const auto timed = collect();
  ASSERT_EQ(timed.size(), 4u);
  EXPECT_EQ(timed[0].engine.start_ticks, 1'000'000u);
  EXPECT_EQ(timed[1].engine.start_ticks, 3'000'000u);
  EXPECT_EQ(timed[2].engine.start_ticks, 10'000'000u);
  EXPECT_EQ(timed[3].engine.start_ticks, 11'000'000u);
  for (const auto& t : timed) EXPECT_DOUBLE_EQ(t.engine.end_ticks - t.engine.start_ticks, t.engine.duration_ns);
}

TEST_F(DeferredGpuTimes, ACallMoreThanASecondAfterTheAnchorBecomesTheNextAnchor) {
  call(1, engine(0.0, 1.0, 5'000), record_of(CallPath::kEager));
  call(2, engine(1500.0, 1501.0, 6'000), record_of(CallPath::kEager));  // 1.5 s later on the GPU
  call(3, engine(1502.0, 1503.0, 7'000), record_of(CallPath::kEager));
  gpu_.now_ms = 2000;
  const auto timed = collect();
  ASSERT_EQ(timed.size(), 3u);
  EXPECT_EQ(timed[1].engine.start_ticks, 5'000u + 1'500'000'000u);
  EXPECT_EQ(timed[2].engine.start_ticks, 5'000u + 1'502'000'000u);  // placed from call 2, the new anchor
}

TEST_F(DeferredGpuTimes, TheOldestCallGoesWhenTooManyWait) {
  for (std::size_t i = 1; i <= d::CallTimer::kMaxPending + 3; ++i) call(i, engine(0.0, 1.0), record_of(CallPath::kEager));
  EXPECT_EQ(profiler_.pending(), d::CallTimer::kMaxPending);
  EXPECT_EQ(profiler_.dropped(), 3u);
  gpu_.now_ms = 2;
  const auto timed = collect();
  ASSERT_EQ(timed.size(), d::CallTimer::kMaxPending);
  EXPECT_EQ(timed.front().sequence, 4u);
}

std::string metadata(const char* kind, std::uint64_t sequence, const CallRecord& record, unsigned sms, double gpu_ns,
                     bool ok, int gpu_timed = -1) {
  char text[ex::kMetadataBytes];
  const std::size_t length = ex::event_metadata(text, kind, sequence, record, sms, gpu_ns, ok, gpu_timed);
  EXPECT_EQ(length, std::strlen(text));
  return std::string(text, length);
}

TEST(DelegateEvents, MetadataSaysWhatTheCallDid) {
  EXPECT_EQ(metadata("host", 7, record_of(CallPath::kGraphReplay, 1, 2048), 16, -1, true),
            "trtet call=7 kind=host path=graph_replay profile=1 staged_bytes=2048 green_sms=16 status=ok");
  EXPECT_EQ(metadata("gpu_engine", 8, record_of(CallPath::kRepeat), 0, 1234.4, true),
            "trtet call=8 kind=gpu_engine path=repeat profile=0 staged_bytes=0 green_sms=0 gpu_ns=1234 status=ok");
  // A delegate that times every N-th call says which host events have GPU events to follow.
  EXPECT_EQ(metadata("host", 10, record_of(CallPath::kRepeat), 16, -1, true, 0),
            "trtet call=10 kind=host path=repeat profile=0 staged_bytes=0 green_sms=16 gpu_timed=0 status=ok");
  EXPECT_EQ(metadata("host", 11, record_of(CallPath::kRepeat), 16, -1, true, 1),
            "trtet call=11 kind=host path=repeat profile=0 staged_bytes=0 green_sms=16 gpu_timed=1 status=ok");
  // A failed call: nothing about a path it did not take.
  EXPECT_EQ(metadata("host", 9, CallRecord{}, 0, -1, false), "trtet call=9 kind=host status=failed");
  // The longest there is still fits.
  const std::string longest = metadata("gpu_copy_out", ~0ull, record_of(CallPath::kGraphReplay, 1 << 30, ~0ull),
                                       ~0u, 1e15, true);
  EXPECT_LT(longest.size(), ex::kMetadataBytes);
  EXPECT_EQ(longest.substr(longest.size() - 10), " status=ok") << longest;
}

TEST(DelegateEvents, NamesCountTheMethodsDelegatesInLoadOrder) {
  int arena[8] = {};
  int other[2] = {};
  EXPECT_EQ(ex::delegate_event_name("forward", arena, &arena[1]), "forward:TensorRTBackend#0");
  EXPECT_EQ(ex::delegate_event_name("forward", arena, &arena[4]), "forward:TensorRTBackend#1");
  // The same allocator handing out a lower address: a new load of the method.
  EXPECT_EQ(ex::delegate_event_name("forward", arena, &arena[1]), "forward:TensorRTBackend#0");
  EXPECT_EQ(ex::delegate_event_name("decode", other, &other[1]), "decode:TensorRTBackend#0");
  EXPECT_EQ(ex::delegate_event_name(nullptr, nullptr, &other[0]), "method:TensorRTBackend#0");
}

// Calls logged as the backend logs them (host event at once, GPU events at a later call, in a
// later block of the tracer) into ExecuTorch's ETDumpGen, written, and read back by the script.
TEST(DelegateEvents, AnETDumpOfTheDelegatesEventsReadsBackCallByCall) {
  ensure_executorch_runtime();
  ScriptedGpu gpu;
  d::CallTimer profiler(d::TickClock{nullptr, 1.0}, gpu);
  ::executorch::etdump::ETDumpGen gen;
  const std::string name = "forward:TensorRTBackend#0";
  const ex::EventNames names(name);
  const CallPath paths[] = {CallPath::kEager, CallPath::kGraphReplay, CallPath::kRepeat, CallPath::kRepeat};
  std::vector<d::TimedCall> timed;
  gen.create_event_block("Execute");
  for (int i = 1; i <= 4; ++i) {
    if (i == 3) gen.create_event_block("Execute");  // GPU times of call 2 land in the next method execute
    const double engine_ms = 0.5 * i;               // engine i runs i * 500 us
    const double start = 10.0 * i;
    ex::HostCall host;
    host.sequence = static_cast<std::uint64_t>(i);
    host.start = 1'000'000'000ull + 10'000'000ull * static_cast<std::uint64_t>(i);
    host.end = host.start + 100'000;  // 100 us of host time
    host.record = record_of(paths[i - 1], i == 4 ? 1 : 0, i == 1 ? 8192 : 0);
    host.green_sms = 16;
    ex::log_host_call(gen, names, host);
    std::unique_ptr<CallMarks> marks = profiler.take_marks();
    std::vector<std::pair<Mark, double>> script = {{Mark::kEngineStart, start}, {Mark::kEngineEnd, start + engine_ms}};
    if (i == 1) script = {{Mark::kCopyInStart, start - 0.2}, {Mark::kCopyInEnd, start}, {Mark::kEngineStart, start},
                          {Mark::kEngineEnd, start + engine_ms}, {Mark::kCopyOutEnd, start + engine_ms + 0.1}};
    for (const auto& [mark, ms] : script) {
      marks->note_recorded(mark, host.start);
      gpu.at(*marks, mark, ms);
    }
    profiler.finish(std::move(marks), host.record, host.sequence, true);
    // The previous call's GPU work is done by now, this one's is not.
    gpu.now_ms = start - 1.0;
    timed.clear();
    ASSERT_TRUE(profiler.collect(timed).ok());
    for (const auto& t : timed) ex::log_timed_call(gen, names, t, 16);
  }
  gpu.now_ms = 1000;  // an explicit flush at the end: the last call's times
  timed.clear();
  ASSERT_TRUE(profiler.collect(timed).ok());
  ASSERT_EQ(timed.size(), 1u);
  for (const auto& t : timed) ex::log_timed_call(gen, names, t, 16);
  // A failed call and a captured one: host events only.
  ex::HostCall failed;
  failed.sequence = 5;
  failed.start = 2'000'000'000ull;
  failed.end = failed.start + 50'000;
  failed.ok = false;
  ex::log_host_call(gen, names, failed);
  ex::HostCall captured = failed;
  captured.sequence = 6;
  captured.ok = true;
  captured.record = record_of(CallPath::kCaptured);
  ex::log_host_call(gen, names, captured);

  const std::string file = ::testing::TempDir() + "delegate_events.etdp";
  ASSERT_TRUE(write_etdump(gen, file));
  std::string failure;
  const nlohmann::json report = report_etdump(file, failure);
  ASSERT_FALSE(report.is_null()) << failure;
  EXPECT_EQ(report["runs"], 2);
  const auto& calls = report["calls"];
  ASSERT_EQ(calls.size(), 6u) << report.dump(1);
  EXPECT_EQ(count_kind(report, "host"), 6);
  EXPECT_EQ(count_kind(report, "gpu_engine"), 4);
  EXPECT_EQ(count_kind(report, "gpu_copy_in"), 1);
  EXPECT_EQ(count_kind(report, "gpu_copy_out"), 1);
  const char* path_names[] = {"eager", "graph_replay", "repeat", "repeat"};
  for (int i = 1; i <= 4; ++i) {
    const auto& call = calls[static_cast<std::size_t>(i - 1)];
    SCOPED_TRACE("call " + std::to_string(i));
    EXPECT_EQ(call["call"], i);
    EXPECT_EQ(call["delegate"], name);
    EXPECT_EQ(call["path"], path_names[i - 1]);
    EXPECT_EQ(call["profile"], i == 4 ? "1" : "0");
    EXPECT_EQ(call["staged_bytes"], i == 1 ? "8192" : "0");
    EXPECT_EQ(call["green_sms"], "16");
    EXPECT_EQ(call["status"], "ok");
    EXPECT_NEAR(call["host"]["us"].get<double>(), 100.0, 1e-6);
    EXPECT_NEAR(call["gpu_engine"]["us"].get<double>(), 500.0 * i, 1e-3);
    // The engine span on the host clock: as long as CUDA measured it.
    EXPECT_NEAR(call["gpu_engine"]["end_us"].get<double>() - call["gpu_engine"]["start_us"].get<double>(), 500.0 * i, 1e-3);
  }
  EXPECT_NEAR(calls[0]["gpu_copy_in"]["us"].get<double>(), 200.0, 1e-2);
  EXPECT_NEAR(calls[0]["gpu_copy_out"]["us"].get<double>(), 100.0, 1e-2);
  EXPECT_EQ(calls[4]["status"], "failed");
  EXPECT_FALSE(calls[4].contains("path"));
  EXPECT_FALSE(calls[4].contains("gpu_engine"));
  EXPECT_EQ(calls[5]["path"], "captured");
  EXPECT_FALSE(calls[5].contains("gpu_engine"));

  // The table and the timeline the README shows come from the same file.
  const Ran table = run_shell(std::string(TRTET_PYTHON) + " " + TRTET_SOURCE_DIR + "/tools/etdump_report.py '" + file +
                              "' --schema-dir '" + TRTET_ETDUMP_SCHEMA_DIR + "' --flatc '" + TRTET_ETDUMP_FLATC + "'");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("engine (GPU): 4 events"), std::string::npos) << table.output;
  if (std::getenv("TRTET_KEEP_ETDUMP") == nullptr) std::remove(file.c_str());
}

TEST(DelegateEvents, TheScriptRefusesAFileThatIsNoETDump) {
  const std::string file = ::testing::TempDir() + "not_an_etdump.etdp";
  {
    std::FILE* f = std::fopen(file.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("definitely not a flatbuffer", f);
    std::fclose(f);
  }
  std::string failure;
  EXPECT_TRUE(report_etdump(file, failure).is_null());
  EXPECT_NE(failure.find("not an ETDump file"), std::string::npos) << failure;
  std::remove(file.c_str());
}

}  // namespace
}  // namespace trtet_test
