#include "plan/measure.h"

#include <torch_tensorrt/executorch/GreenContext.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "run/load.h"

namespace trtet_plan {
namespace {

namespace et = torch_tensorrt::executorch_backend;
using Clock = std::chrono::steady_clock;

ex::Status from_green(const et::GreenContextError& error, const std::string& what) {
  const ex::ErrorCode code = error.code() == et::GreenContextErrc::kInvalidArgument ? ex::ErrorCode::kInvalidArgument
                             : error.code() == et::GreenContextErrc::kNoDevice      ? ex::ErrorCode::kNoDevice
                                                                                    : ex::ErrorCode::kInternal;
  return ex::Status(code, what + ": " + error.message());
}

trtet_run::IoMemory io_memory(Io io) {
  switch (io) {
    case Io::kPinned:
      return trtet_run::IoMemory::kPinned;
    case Io::kHost:
      return trtet_run::IoMemory::kHost;
    case Io::kDevice:
      break;
  }
  return trtet_run::IoMemory::kDevice;
}

}  // namespace

trtet_run::RunOptions run_options(const ModelSpec& spec, const PlanOptions& options) {
  trtet_run::RunOptions run;
  run.program = spec.program;
  run.method = spec.method;
  run.device = options.device;
  run.io = io_memory(spec.io);
  run.shapes = spec.shapes;
  run.test_engines = options.test_engines;
  run.iterations = options.iterations;
  run.warmup = options.warmup;
  return run;
}

ex::Result<std::vector<LoadedModel>> load_models(const PlanOptions& options) {
  std::vector<LoadedModel> models;
  for (const ModelSpec& spec : options.models) {
    auto runner = trtet_run::Runner::load(run_options(spec, options));
    if (!runner.ok()) {
      return ex::Status(runner.status().code(),
                        "model '" + spec.name + "' (" + spec.program + "): " + runner.status().message());
    }
    models.push_back(LoadedModel{spec, std::move(runner).value()});
  }
  return models;
}

ex::Result<Curves> measure_curves(std::vector<LoadedModel>& models, int device, const std::vector<unsigned>& sizes,
                                  int iterations, int warmup, std::FILE* log) {
  Curves curves;
  curves.points.resize(models.size());
  curves.p50_us.resize(models.size());
  if (log) {
    std::fprintf(log, "%-24s %5s %10s %10s %10s\n", "model alone", "SMs", "p50 (us)", "p99 (us)", "calls/s");
  }
  for (unsigned n : sizes) {
    auto split = et::split_device(device, {n});
    if (!split.ok()) return from_green(split.error(), "a partition of " + std::to_string(n) + " SMs");
    const cudaStream_t stream = split->front().stream();
    for (std::size_t i = 0; i < models.size(); ++i) {
      auto m = models[i].runner->measure(stream, iterations, warmup);
      if (!m.ok()) {
        return ex::Status(m.status().code(), "model '" + models[i].spec.name + "' on " + std::to_string(n) +
                                                 " SMs: " + m.status().message());
      }
      const unsigned granted = split->front().sm_count();
      curves.points[i].push_back(CurvePoint{granted, m->stats.p99_us, m->stats.calls_per_s});
      curves.p50_us[i].push_back(m->stats.p50_us);
      if (log) {
        std::fprintf(log, "%-24s %5u %10.1f %10.1f %10.0f\n", models[i].spec.name.c_str(), granted, m->stats.p50_us,
                     m->stats.p99_us, m->stats.calls_per_s);
        std::fflush(log);
      }
    }
  }
  return curves;
}

ex::Result<std::vector<trtet_run::LatencyStats>> run_side_by_side(std::vector<LoadedModel>& models,
                                                                  const std::vector<cudaStream_t>& streams, int device,
                                                                  int iterations, int warmup) {
  TRTET_CHECK_OR_RETURN(streams.size() == models.size(), kInvalidArgument, "%zu streams for %zu models",
                        streams.size(), models.size());
  const std::size_t count = models.size();
  std::atomic<std::size_t> ready{0};
  std::atomic<bool> go{false};
  std::atomic<std::size_t> reached{0};
  std::atomic<bool> failed{false};
  std::vector<ex::Status> errors(count);
  std::vector<std::vector<double>> samples(count);
  std::vector<double> wall_s(count, 0);
  std::vector<std::thread> threads;
  threads.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    threads.emplace_back([&, i] {
      trtet_run::Runner& runner = *models[i].runner;
      const cudaError_t selected = cudaSetDevice(device);  // a new thread starts on device 0
      if (selected != cudaSuccess) {
        errors[i] = ex::Status(ex::ErrorCode::kInternal,
                               std::string("selecting the device: ") + cudaGetErrorString(selected));
        failed = true;
      }
      if (warmup > 0 && !failed.load()) {
        auto w = runner.measure(streams[i], 1, warmup);
        if (!w.ok()) {
          errors[i] = w.status();
          failed = true;
        }
      }
      ++ready;
      while (!go.load()) std::this_thread::yield();
      samples[i].reserve(static_cast<std::size_t>(iterations) * 2);
      const auto start = Clock::now();
      while (!failed.load()) {
        // One timed call (execute + sync of this stream), the same measurement as the curves'.
        auto m = runner.measure(streams[i], 1, 0);
        if (!m.ok()) {
          errors[i] = m.status();
          failed = true;
          break;
        }
        samples[i].push_back(m->stats.p50_us);
        if (samples[i].size() == static_cast<std::size_t>(iterations)) ++reached;
        if (reached.load() == count) break;
      }
      wall_s[i] = std::chrono::duration<double>(Clock::now() - start).count();
    });
  }
  while (ready.load() < count) std::this_thread::yield();
  go = true;
  for (std::thread& t : threads) t.join();
  for (std::size_t i = 0; i < count; ++i) {
    if (!errors[i].ok()) {
      return ex::Status(errors[i].code(), "model '" + models[i].spec.name + "' beside the others: " +
                                              errors[i].message());
    }
  }
  std::vector<trtet_run::LatencyStats> stats;
  for (std::size_t i = 0; i < count; ++i) stats.push_back(trtet_run::summarize(std::move(samples[i]), wall_s[i]));
  return stats;
}

ex::Result<std::unique_ptr<GpuMeasurer>> GpuMeasurer::create(const PlanOptions& options) {
  std::unique_ptr<GpuMeasurer> measurer(new GpuMeasurer(options));
  TRTET_ASSIGN_OR_RETURN(measurer->models_, load_models(options));
  return ex::Result<std::unique_ptr<GpuMeasurer>>(std::move(measurer));
}

ex::Result<et::PlanGpu> GpuMeasurer::gpu() {
  auto gpu = et::plan_gpu(options_.device);
  if (!gpu.ok()) return from_green(gpu.error(), "reading GPU " + std::to_string(options_.device));
  return *gpu;
}

ex::Result<Curves> GpuMeasurer::curves(const std::vector<unsigned>& sizes, std::FILE* log) {
  return measure_curves(models_, options_.device, sizes, options_.iterations, options_.warmup, log);
}

ex::Result<std::vector<trtet_run::LatencyStats>> GpuMeasurer::side_by_side(const std::vector<unsigned>& sms,
                                                                           bool keep_remainder, bool load_remainder) {
  auto split = et::split_device(options_.device, sms, keep_remainder ? et::Remainder::kKeep : et::Remainder::kDrop);
  if (!split.ok()) return from_green(split.error(), "splitting the GPU as planned");
  std::vector<cudaStream_t> streams;
  for (std::size_t i = 0; i < sms.size(); ++i) streams.push_back((*split)[i].stream());
  std::unique_ptr<trtet_run::Load> load;
  if (load_remainder && keep_remainder) {
    auto started = trtet_run::Load::start(split->back().stream(), options_.device, options_.load_us);
    if (!started.ok()) return started.status();
    load = std::move(*started);
  }
  auto stats = run_side_by_side(models_, streams, options_.device, options_.iterations, options_.warmup);
  load.reset();  // stops the load and waits for its stream before the partitions go
  return stats;
}

ex::Result<PlannerResult> run_planner_on_gpu(const PlanOptions& options, std::FILE* log) {
  TRTET_ASSIGN_OR_RETURN(std::unique_ptr<GpuMeasurer> measurer, GpuMeasurer::create(options));
  return run_planner(options, *measurer, log);
}

}  // namespace trtet_plan
