// Profiling on a GPU (include/torch_tensorrt/executorch/Profiling.h): a program run through
// ExecuTorch's Module with ETDumpGen attached, the ETDump written and read back by
// tools/etdump_report.py. Every call logs its host time and, once known, its engine's GPU time,
// which agrees with CUDA events the test records around the same calls; no call waits for it.
// Label gpu: each test skips, with CUDA's reason, where no GPU is usable.
#include <torch_tensorrt/executorch/TensorRTBackend.h>

#include <cuda_runtime_api.h>
#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/gpu.h"
#include "executorch/etdump_support.h"
#include "executorch/module_test_support.h"
#include "green/split.h"

namespace trtet_test {
namespace {

using ::executorch::etdump::ETDumpGen;
namespace green = ex::green;

constexpr int kRows = 64;
constexpr int kCols = 4096;
constexpr std::size_t kCount = std::size_t{kRows} * kCols;
constexpr std::size_t kBytes = kCount * sizeof(float);
constexpr int kCalls = 8;

class EtdumpGpu : public ModuleGpuTest {  // ExecuTorch's log captured: captured_log() in the messages below
 protected:
  /// A 16-SM green-context partition (and the remainder) and a stream on it.
  void make_partition() {
    auto partitions = green::split_device(0, green::SplitRequest::counts({16}, /*remainder=*/true));
    ASSERT_TRUE(partitions.ok()) << partitions.status().to_string();
    partitions_ = std::move(partitions).value();
    auto stream = partitions_[0].context.make_stream();
    ASSERT_TRUE(stream.ok()) << stream.status().to_string();
    stream_ = *stream;
  }

  /// Program "etdump_skipped" (device I/O, a 10 ms engine) loaded through Module with an ETDumpGen
  /// (gen_), and device inputs for it.
  /// `options`: load-time backend options for the program, if any.
  void load(const etr::LoadBackendOptionsMap* options = nullptr) {
    auto tracer = std::make_unique<ETDumpGen>();
    gen_ = tracer.get();
    module_ = std::make_unique<Module>(program_path("etdump_skipped"), Module::LoadMode::File, std::move(tracer));
    if (options != nullptr) {
      ASSERT_EQ(module_->load(*options), Error::Ok) << captured_log();
    }
    ASSERT_EQ(module_->load_method("forward"), Error::Ok) << captured_log();
    std::vector<float> x, y;
    fill_elementwise_inputs(x, y, kCount);
    for (void** p : {&dx_, &dy_}) ASSERT_EQ(cudaMalloc(p, kBytes), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dx_, x.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dy_, y.data(), kBytes, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // test setup, outside any execute
    const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
    tx_ = from_blob(dx_, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
    ty_ = from_blob(dy_, {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  }

  etr::Result<std::vector<etr::EValue>> forward() {
    return module_->forward(std::vector<etr::EValue>{etr::EValue(*tx_), etr::EValue(*ty_)});
  }

  /// The ETDump written and read back; null (with a failure recorded) where the script failed.
  nlohmann::json written_report(const char* name) {
    const std::string file = ::testing::TempDir() + name;
    EXPECT_TRUE(write_etdump(*gen_, file));
    std::string failure;
    nlohmann::json report = report_etdump(file, failure);
    EXPECT_FALSE(report.is_null()) << failure;
    std::printf("%s", run_shell(std::string(TRTET_PYTHON) + " " + TRTET_SOURCE_DIR + "/tools/etdump_report.py '" +
                                file + "' --schema-dir '" + TRTET_ETDUMP_SCHEMA_DIR + "' --flatc '" +
                                TRTET_ETDUMP_FLATC + "'")
                          .output.c_str());
    std::remove(file.c_str());
    return report;
  }

  void TearDown() override {
    module_.reset();
    for (void* p : {dx_, dy_}) {
      if (p != nullptr) cudaFree(p);  // test teardown, outside any execute
    }
  }

  RecordingFactory factory_;
  std::vector<green::Partition> partitions_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<Module> module_;
  ETDumpGen* gen_ = nullptr;  ///< owned by module_
  void* dx_ = nullptr;
  void* dy_ = nullptr;
  ::executorch::extension::TensorPtr tx_, ty_;
};

// N calls under a guard on a green-context stream: each returns while its engine still runs (the
// stream is busy right at return), and the ETDump holds N host events and N engine GPU events whose
// durations agree within 5 % with CUDA events recorded around the same calls on the same stream.
TEST_F(EtdumpGpu, EveryCallLogsItsHostTimeAndItsEnginesGpuTimeWithoutWaiting) {
  TRTET_SKIP_TIMING_UNDER_SANITIZER();
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ASSERT_NO_FATAL_FAILURE(make_partition());
  ASSERT_NO_FATAL_FAILURE(load());
  std::vector<cudaEvent_t> before(kCalls), after(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_EQ(cudaEventCreate(&before[i]), cudaSuccess);
    ASSERT_EQ(cudaEventCreate(&after[i]), cudaSuccess);
  }
  std::vector<cudaError_t> at_return(kCalls, cudaSuccess);
  for (int i = 0; i < kCalls; ++i) {
    ex::CudaStreamGuard guard(stream_);
    ASSERT_EQ(cudaEventRecord(before[i], stream_), cudaSuccess);
    auto outputs = forward();
    at_return[i] = cudaStreamQuery(stream_);
    ASSERT_TRUE(outputs.ok()) << captured_log();
    ASSERT_EQ(cudaEventRecord(after[i], stream_), cudaSuccess);
  }
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(at_return[i], cudaErrorNotReady) << "call " << i + 1 << " waited for its engine";
  // Nothing waits for a GPU time: a flush now logs what is known and leaves the calls still
  // running (some 10 ms engines are still queued) pending.
  const auto early = ex::flush_profiling(gen_);
  TRTET_ASSERT_OK(early);
  EXPECT_GE(*early, 1u) << "the flush waited for the GPU";
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  const auto pending = ex::flush_profiling(gen_);
  TRTET_ASSERT_OK(pending);
  EXPECT_EQ(*pending, 0u) << "the stream is synchronized: every GPU time is known";

  const nlohmann::json report = written_report("etdump_gpu_calls.etdp");
  ASSERT_FALSE(report.is_null());
  const auto& calls = report["calls"];
  ASSERT_EQ(calls.size(), static_cast<std::size_t>(kCalls)) << report.dump(1);
  EXPECT_EQ(count_kind(report, "host"), kCalls);
  EXPECT_EQ(count_kind(report, "gpu_engine"), kCalls);
  for (int i = 0; i < kCalls; ++i) {
    const auto& call = calls[static_cast<std::size_t>(i)];
    SCOPED_TRACE("call " + std::to_string(i + 1));
    ASSERT_EQ(call["call"], i + 1);
    EXPECT_EQ(call["delegate"], "forward:TensorRTBackend#0");
    EXPECT_EQ(call["green_sms"], std::to_string(partitions_[0].granted_sms()));
    EXPECT_EQ(call["staged_bytes"], "0");
    EXPECT_EQ(call["path"], i == 0 ? "eager" : "repeat") << "device I/O at the same addresses repeats the call";
    float measured_ms = 0;
    ASSERT_EQ(cudaEventElapsedTime(&measured_ms, before[i], after[i]), cudaSuccess);
    const double logged_us = call["gpu_engine"]["us"].get<double>();
    std::printf("call %d: engine %.1f us logged, %.1f us between the test's events; host %.1f us\n", i + 1, logged_us,
                measured_ms * 1e3, call["host"]["us"].get<double>());
    EXPECT_NEAR(logged_us, measured_ms * 1e3, 0.05 * measured_ms * 1e3);
    EXPECT_LT(call["host"]["us"].get<double>(), logged_us) << "execute returned before its engine ended";
  }
  for (int i = 0; i < kCalls; ++i) {
    cudaEventDestroy(before[i]);
    cudaEventDestroy(after[i]);
  }
}

// profiling_gpu_every=3 (Note [sampled GPU times]): every call logs its host event; calls 1, 4
// and 7 alone are GPU-timed, and each host event says whether its call was.
TEST_F(EtdumpGpu, EveryThirdCallIsGpuTimedAndEveryCallLogsItsHostTime) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ASSERT_NO_FATAL_FAILURE(make_partition());
  etr::BackendOptions<1> options;
  ASSERT_EQ(options.set_option("profiling_gpu_every", 3), Error::Ok);
  etr::LoadBackendOptionsMap map;
  ASSERT_EQ(map.set_options("TensorRTBackend", options.view()), Error::Ok);
  ASSERT_NO_FATAL_FAILURE(load(&map));
  constexpr int kSampledCalls = 7;
  for (int i = 0; i < kSampledCalls; ++i) {
    ex::CudaStreamGuard guard(stream_);
    auto outputs = forward();
    ASSERT_TRUE(outputs.ok()) << captured_log();
  }
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  const auto pending = ex::flush_profiling(gen_);
  TRTET_ASSERT_OK(pending);
  EXPECT_EQ(*pending, 0u);
  const nlohmann::json report = written_report("etdump_gpu_sampled.etdp");
  ASSERT_FALSE(report.is_null());
  const auto& calls = report["calls"];
  ASSERT_EQ(calls.size(), static_cast<std::size_t>(kSampledCalls)) << report.dump(1);
  EXPECT_EQ(count_kind(report, "host"), kSampledCalls);
  EXPECT_EQ(count_kind(report, "gpu_engine"), 3) << report.dump(1);
  for (int i = 0; i < kSampledCalls; ++i) {
    const auto& call = calls[static_cast<std::size_t>(i)];
    SCOPED_TRACE("call " + std::to_string(i + 1));
    const bool timed = i % 3 == 0;
    EXPECT_EQ(call["gpu_timed"], timed ? "1" : "0");
    EXPECT_EQ(call.contains("gpu_engine"), timed);
    EXPECT_TRUE(call.contains("host"));
    EXPECT_EQ(call["status"], "ok");
  }
}

// Calls waited for one by one: each call's GPU time is logged by the next call (none pending at
// the end but the last), into the tracer block of that later execute.
TEST_F(EtdumpGpu, ALaterCallLogsTheGpuTimesThatBecameKnown) {
  TRTET_SKIP_IF_GREEN_UNSUPPORTED();
  ASSERT_NO_FATAL_FAILURE(make_partition());
  ASSERT_NO_FATAL_FAILURE(load());
  for (int i = 0; i < 3; ++i) {
    ex::CudaStreamGuard guard(stream_);
    ASSERT_TRUE(forward().ok()) << captured_log();
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  }
  // Without a flush: calls 1 and 2 were logged by calls 2 and 3; call 3's time is not known to the tracer.
  const nlohmann::json report = written_report("etdump_gpu_later.etdp");
  ASSERT_FALSE(report.is_null());
  EXPECT_EQ(count_kind(report, "host"), 3);
  EXPECT_EQ(count_kind(report, "gpu_engine"), 2);
  ASSERT_EQ(report["calls"].size(), 3u);
  EXPECT_TRUE(report["calls"][0].contains("gpu_engine"));
  EXPECT_TRUE(report["calls"][1].contains("gpu_engine"));
  EXPECT_FALSE(report["calls"][2].contains("gpu_engine"));
  EXPECT_GE(report["runs"], 3) << "one tracer block per execute (and ExecuTorch's own at load)";
}

// A call recorded into the caller's graph logs that it was captured, and no GPU time of its own;
// a refused call logs a failed host event and nothing else; eager calls around them are timed.
TEST_F(EtdumpGpu, CapturedAndFailedCallsLogNothingFalse) {
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_NO_FATAL_FAILURE(load());
  {
    ex::CudaStreamGuard guard(stream_);
    ASSERT_TRUE(forward().ok()) << captured_log();  // call 1: eager
  }
  cudaGraph_t graph = nullptr;
  {
    ex::CudaStreamGuard guard(stream_);
    ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    auto captured = forward();  // call 2: captured
    EXPECT_TRUE(captured.ok()) << captured_log();
    ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess) << "profiling invalidated the capture";
  }
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
  std::vector<float> host_x(kCount, 1.0f);
  const auto cuda = ::executorch::aten::Device(::executorch::aten::DeviceType::CUDA, 0);
  auto wrong = from_blob(host_x.data(), {kRows, kCols}, ::executorch::aten::ScalarType::Float, cuda);
  {
    ex::CudaStreamGuard guard(stream_);
    auto refused = module_->forward(std::vector<etr::EValue>{etr::EValue(*wrong), etr::EValue(*ty_)});  // call 3
    EXPECT_FALSE(refused.ok());
    ASSERT_TRUE(forward().ok()) << captured_log();  // call 4: eager again
  }
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  TRTET_ASSERT_OK(ex::flush_profiling(gen_));
  const nlohmann::json report = written_report("etdump_gpu_captured.etdp");
  ASSERT_FALSE(report.is_null());
  const auto& calls = report["calls"];
  ASSERT_EQ(calls.size(), 4u) << report.dump(1);
  EXPECT_TRUE(calls[0].contains("gpu_engine"));
  EXPECT_EQ(calls[1]["path"], "captured");
  EXPECT_FALSE(calls[1].contains("gpu_engine"));
  EXPECT_EQ(calls[2]["status"], "failed");
  EXPECT_FALSE(calls[2].contains("gpu_engine"));
  EXPECT_FALSE(calls[2].contains("path"));
  EXPECT_EQ(calls[3]["status"], "ok");
  EXPECT_TRUE(calls[3].contains("gpu_engine"));
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  module_.reset();
  cudaStreamDestroy(stream_);
}

// A tracer at ExecuTorch's kProfileMethodOnly asked for no operator events: the delegate's calls
// log nothing and leave nothing pending (none is timed), ExecuTorch's Method::execute events are
// still there, and the outputs are right. Back at kProfileAllEvents, the next calls are logged whole.
TEST_F(EtdumpGpu, AtMethodOnlyLevelTheDelegateLogsNothingUntilTheLevelComesBack) {
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_NO_FATAL_FAILURE(load());
  std::vector<float> x, y;
  fill_elementwise_inputs(x, y, kCount);
  auto expect_right_output = [&](const etr::Result<std::vector<etr::EValue>>& outputs, const char* when) {
    ASSERT_TRUE(outputs.ok()) << when << ": " << captured_log();
    std::vector<float> out(kCount);
    ASSERT_EQ(cudaMemcpy(out.data(), outputs->at(0).toTensor().const_data_ptr(), kBytes, cudaMemcpyDeviceToHost),
              cudaSuccess);
    long wrong = 0;
    for (std::size_t i = 0; i < kCount; ++i) wrong += out[i] != elementwise_expected(x[i], y[i]) ? 1 : 0;
    EXPECT_EQ(wrong, 0) << when;
  };
  gen_->set_event_tracer_profiling_level(etr::EventTracerProfilingLevel::kProfileMethodOnly);
  for (int i = 0; i < 3; ++i) {
    ex::CudaStreamGuard guard(stream_);
    const auto outputs = forward();
    auto pending = ex::flush_profiling(gen_);  // before the 10 ms engine ends: a timed call would be pending
    TRTET_ASSERT_OK(pending);
    EXPECT_EQ(*pending, 0u) << "a call at kProfileMethodOnly was timed";
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    expect_right_output(outputs, "method only");
  }
  gen_->set_event_tracer_profiling_level(etr::EventTracerProfilingLevel::kProfileAllEvents);
  for (int i = 0; i < 2; ++i) {
    ex::CudaStreamGuard guard(stream_);
    const auto outputs = forward();
    if (i == 0) {
      auto pending = ex::flush_profiling(gen_);
      TRTET_ASSERT_OK(pending);
      EXPECT_EQ(*pending, 1u) << "back at kProfileAllEvents, the call still running waits for its GPU time";
    }
    ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    expect_right_output(outputs, "all events");
  }
  auto pending = ex::flush_profiling(gen_);
  TRTET_ASSERT_OK(pending);
  EXPECT_EQ(*pending, 0u);
  const nlohmann::json report = written_report("etdump_gpu_method_only.etdp");
  ASSERT_FALSE(report.is_null());
  const auto& calls = report["calls"];
  ASSERT_EQ(calls.size(), 2u) << "only the calls at kProfileAllEvents are the delegate's to log: " << report.dump(1);
  EXPECT_EQ(calls[0]["call"], 1) << "the delegate numbers the calls it logs";
  EXPECT_EQ(count_kind(report, "host"), 2);
  EXPECT_EQ(count_kind(report, "gpu_engine"), 2);
  EXPECT_GE(report["events"].get<int>(), 3 + 2 * 4) << "Method::execute for every call; the instruction, host and "
                                                        "engine events for the last two";
  module_.reset();
  cudaStreamDestroy(stream_);
}

// Destroying the method logs nothing: here the ETDump is taken (ETDumpGen takes no events after
// that and aborts the process on one) while a call still runs, then the method is unloaded. Its
// delegate forgets the pending call; a flush afterwards has nothing of it to log.
TEST_F(EtdumpGpu, UnloadingAfterTheDumpWasTakenLogsNothing) {
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_NO_FATAL_FAILURE(load());
  {
    ex::CudaStreamGuard guard(stream_);
    ASSERT_TRUE(forward().ok()) << captured_log();
  }
  auto pending = ex::flush_profiling(gen_);
  TRTET_ASSERT_OK(pending);
  EXPECT_EQ(*pending, 1u) << "the 10 ms engine is still running";
  const nlohmann::json report = written_report("etdump_gpu_unload.etdp");  // get_etdump_data: the tracer is done
  ASSERT_FALSE(report.is_null());
  EXPECT_EQ(count_kind(report, "host"), 1);
  EXPECT_EQ(count_kind(report, "gpu_engine"), 0);
  ASSERT_TRUE(module_->unload_method("forward"));  // waits for the engine; must not log into the finished tracer
  pending = ex::flush_profiling(gen_);
  TRTET_ASSERT_OK(pending);
  EXPECT_EQ(*pending, 0u);
  EXPECT_EQ(ex::flush_profiling(nullptr).status().code(), ex::ErrorCode::kInvalidArgument);
  module_.reset();
  cudaStreamDestroy(stream_);
}

#ifdef TRTET_RUN_BINARY
// trtet-run --etdump on a program whose I/O is memory-planned in host memory: every call stages
// its inputs and outputs, so each logs its host time, its engine's GPU time and its copies'.
TEST_F(EtdumpGpu, TrtetRunWritesAnETDumpOfEveryCall) {
  const std::string file = ::testing::TempDir() + "trtet_run.etdp";
  std::remove(file.c_str());
  const Ran ran = run_shell(std::string("'") + TRTET_RUN_BINARY + "' '" + program_path("elementwise") +
                            "' --test-engines -n 5 --warmup 1 --etdump '" + file + "'");
  std::printf("%s\n", ran.output.c_str());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_NE(ran.output.find("ETDump of 6 calls written to"), std::string::npos) << ran.output;
  std::string failure;
  const nlohmann::json report = report_etdump(file, failure);
  ASSERT_FALSE(report.is_null()) << failure;
  ASSERT_EQ(report["calls"].size(), 6u) << report.dump(1);
  for (const char* kind : {"host", "gpu_engine", "gpu_copy_in", "gpu_copy_out"}) {
    EXPECT_EQ(count_kind(report, kind), 6) << kind;
  }
  for (const auto& call : report["calls"]) {
    EXPECT_NE(call["staged_bytes"], "0") << call.dump();
    EXPECT_EQ(call["green_sms"], "0") << "the whole GPU: an ordinary stream";
  }
  const Ran again = run_shell(std::string("'") + TRTET_RUN_BINARY + "' '" + program_path("elementwise") +
                              "' --test-engines -n 1 --warmup 0 --etdump '" + file + "'");
  EXPECT_NE(again.exit_code, 0) << "an existing file is replaced only with --overwrite";
  EXPECT_NE(again.output.find("--overwrite"), std::string::npos) << again.output;
  std::remove(file.c_str());
}
#endif

}  // namespace
}  // namespace trtet_test
