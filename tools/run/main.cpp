// trtet-run: runs any ExecuTorch program (.pte) on a green-context partition of the GPU or on the
// whole GPU and reports its latency; --compare shows the isolation a partition gives, --sweep-sms
// finds the smallest partition that meets a p99 target. See --help.
#include <torch_tensorrt/executorch/GreenContext.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "green/probe.h"
#include "run/engines.h"
#include "run/load.h"
#include "run/npy.h"
#include "run/options.h"
#include "run/report.h"
#include "run/runner.h"

namespace et = torch_tensorrt::executorch_backend;

namespace trtet_run {
namespace {

int exit_for(const ex::Status& status) {
  return status.code() == ex::ErrorCode::kInvalidArgument ? kExitUsage
         : status.code() == ex::ErrorCode::kNoDevice      ? kExitNoGpu
                                                          : kExitFailed;
}

// The partitions API returns the same Error (Status) as the library: one fail() for both.
int fail(const std::string& what, const ex::Status& status) {
  std::fprintf(stderr, "trtet-run: %s: %s\n", what.c_str(), status.message().c_str());
  return exit_for(status);
}

/// A non-blocking stream on the whole device (no green context), destroyed with this object.
class WholeGpuStream {
 public:
  WholeGpuStream() {
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess) stream_ = nullptr;
  }
  ~WholeGpuStream() {
    if (stream_ != nullptr) {
      (void)cudaStreamSynchronize(stream_);
      (void)cudaStreamDestroy(stream_);
    }
  }
  WholeGpuStream(const WholeGpuStream&) = delete;
  WholeGpuStream& operator=(const WholeGpuStream&) = delete;
  cudaStream_t get() const noexcept { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

/// The SMs a stream's kernels can reach, measured by the SM probe ("?" when it fails).
std::string reach(cudaStream_t stream) {
  auto sms = ex::green::probe_sms(stream);
  return sms.ok() ? std::to_string(sms->size()) : "?";
}

void print_ran_on(const std::string& label, const Measurement& m, cudaStream_t stream) {
  if (m.engine_sms) {
    std::printf("%s: the engine's kernels ran on %zu SMs (recorded by the engine: %s); the stream reaches %s SMs "
                "(SM probe)\n",
                label.c_str(), m.engine_sms->size(), format_ids(*m.engine_sms).c_str(), reach(stream).c_str());
  } else {
    std::printf("%s: this engine does not record its SMs; the stream it ran on reaches %s SMs (SM probe)\n",
                label.c_str(), reach(stream).c_str());
  }
}

std::string partition_label(unsigned sms) { return std::to_string(sms) + "-SM partition"; }

int run_single(Runner& runner, const RunOptions& o, const et::GreenContextLimits& limits) {
  std::vector<et::GreenContext> partition;
  WholeGpuStream whole;
  cudaStream_t stream = whole.get();
  std::string label = "whole GPU";
  unsigned sms = limits.sm_count;
  if (o.sms != 0) {
    auto split = et::split_device(o.device, {o.sms});
    if (!split.ok()) return fail("--sms " + std::to_string(o.sms), split.error());
    partition = std::move(*split);
    stream = partition.front().stream();
    sms = partition.front().sm_count();
    label = partition_label(sms);
  }
  if (stream == nullptr) return fail("making a stream", ex::make_error(ex::ErrorCode::kInternal, "no stream"));
  std::error_code ignored;
  if (!o.etdump.empty() && !o.overwrite && std::filesystem::exists(std::filesystem::symlink_status(o.etdump, ignored))) {
    std::fprintf(stderr, "trtet-run: --etdump %s exists: pass --overwrite to replace it\n", o.etdump.c_str());
    return kExitUsage;
  }
  auto m = runner.measure(stream, o.iterations, o.warmup);
  if (!m.ok()) return fail("running on the " + label, m.status());
  std::printf("%s\n%s\n\n", table_header("run").c_str(), table_row(label, sms, m->stats, m->engine_sms).c_str());
  print_ran_on(label, *m, stream);
  int code = kExitOk;
  if (o.p99_target_us > 0) {
    const bool met = m->stats.p99_us <= o.p99_target_us;
    std::printf("p99 target %.1f us: %s (p99 %.1f us)\n", o.p99_target_us, met ? "met" : "NOT met", m->stats.p99_us);
    if (!met) code = kExitTargetMissed;
  }
  if (!o.etdump.empty()) {
    const ex::Status written = runner.write_etdump(o.etdump, o.overwrite);
    if (!written.ok()) return fail("writing the ETDump " + o.etdump, written);
    std::printf("ETDump of %d calls written to %s (table and timeline: tools/etdump_report.py %s --plot timeline.png)\n",
                o.warmup + o.iterations, o.etdump.c_str(), o.etdump.c_str());
  }
  if (!o.save_outputs.empty()) {
    const ex::Status saved = runner.save_outputs(o.save_outputs, stream);
    if (!saved.ok()) return fail("saving the outputs", saved);
    std::printf("outputs of the last call written to %s/output_<i>.npy\n", o.save_outputs.c_str());
  }
  return code;
}

int run_compare(Runner& runner, const RunOptions& o, const et::GreenContextLimits& limits) {
  auto split = et::split_device(o.device, {o.sms}, et::Remainder::kKeep);
  if (!split.ok()) return fail("--sms " + std::to_string(o.sms) + " --compare", split.error());
  et::GreenContext& mine = split->front();
  et::GreenContext& rest = split->back();
  WholeGpuStream whole, whole_load;
  if (whole.get() == nullptr || whole_load.get() == nullptr) {
    return fail("making whole-GPU streams", ex::make_error(ex::ErrorCode::kInternal, "cudaStreamCreateWithFlags failed"));
  }
  struct Row {
    std::string label;
    unsigned sms;
    Measurement m;
  };
  std::vector<Row> rows;
  auto measure = [&](const std::string& label, unsigned sms, cudaStream_t stream, cudaStream_t load_on) -> int {
    std::unique_ptr<Load> load;
    if (load_on != nullptr) {
      auto started = Load::start(load_on, o.device, o.load_us);
      if (!started.ok()) return fail("starting the load", started.status());
      load = std::move(*started);
    }
    auto m = runner.measure(stream, o.iterations, o.warmup);
    load.reset();  // stops the load and waits for its stream before the next condition
    if (!m.ok()) return fail("running " + label, m.status());
    rows.push_back({label, sms, std::move(*m)});
    return kExitOk;
  };
  const std::string part = partition_label(mine.sm_count());
  int code = measure(part + ", alone", mine.sm_count(), mine.stream(), nullptr);
  if (code == kExitOk) code = measure(part + ", beside load", mine.sm_count(), mine.stream(), rest.stream());
  if (code == kExitOk) code = measure("whole GPU, alone", limits.sm_count, whole.get(), nullptr);
  if (code == kExitOk) code = measure("whole GPU, beside load", limits.sm_count, whole.get(), whole_load.get());
  if (code != kExitOk) return code;

  std::printf("%s\n", table_header("condition", "p99 / alone").c_str());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double alone = rows[i / 2 * 2].m.stats.p99_us;
    char ratio[32];
    std::snprintf(ratio, sizeof(ratio), "%11.2f", alone > 0 ? rows[i].m.stats.p99_us / alone : 0.0);
    std::printf("%s\n", table_row(rows[i].label, rows[i].sms, rows[i].m.stats, rows[i].m.engine_sms, ratio).c_str());
  }
  std::printf("\nload: kernels of %d blocks x %d us flooding the %u SMs of the remainder partition (beside the "
              "partition), or the whole GPU (beside the whole-GPU run)\n",
              2 * static_cast<int>(limits.sm_count), o.load_us, rest.sm_count());
  print_ran_on(part + " beside load", rows[1].m, mine.stream());
  const double green_ratio = rows[1].m.stats.p99_us / rows[0].m.stats.p99_us;
  const double whole_ratio = rows[3].m.stats.p99_us / rows[2].m.stats.p99_us;
  std::printf("isolation: beside the load, p99 grows %.2fx on the %u-SM partition and %.2fx on the whole GPU\n",
              green_ratio, mine.sm_count(), whole_ratio);
  return kExitOk;
}

int run_sweep(Runner& runner, const RunOptions& o, const et::GreenContextLimits& limits) {
  std::vector<unsigned> counts;
  for (unsigned n : o.sweep_counts) {
    if (n % limits.granularity != 0) {
      std::fprintf(stderr,
                   "trtet-run: --sweep-sms %s: %u SMs is not a multiple of the GPU's %u-SM granularity (%u SMs, "
                   "minimum partition %u, alignment %u); e.g. --sweep-sms %u:%u:%u\n",
                   o.sweep.c_str(), n, limits.granularity, limits.sm_count, limits.min_partition, limits.alignment,
                   limits.granularity, limits.sm_count, limits.granularity);
      return kExitUsage;
    }
    if (n > limits.max_partitioned_sms) {
      std::printf("note: %u SMs is more than one partition can have on this GPU (%u of %u); the whole-GPU row "
                  "stands for it\n",
                  n, limits.max_partitioned_sms, limits.sm_count);
      continue;
    }
    counts.push_back(n);
  }
  std::vector<SweepPoint> points;
  std::vector<std::optional<std::vector<int>>> ran_on;
  const bool target = o.p99_target_us > 0;
  std::printf("%s\n", table_header("partition", target ? "meets p99 target" : "").c_str());
  auto row = [&](const std::string& label, const SweepPoint& p, const std::optional<std::vector<int>>& seen) {
    const std::string met = target ? (p.stats.p99_us <= o.p99_target_us ? "yes" : "no") : "";
    std::printf("%s\n", table_row(label, p.sms, p.stats, seen, met).c_str());
    std::fflush(stdout);
  };
  for (unsigned n : counts) {
    auto split = et::split_device(o.device, {n});
    if (!split.ok()) return fail("--sweep-sms at " + std::to_string(n) + " SMs", split.error());
    auto m = runner.measure(split->front().stream(), o.iterations, o.warmup);
    if (!m.ok()) return fail("running on " + std::to_string(n) + " SMs", m.status());
    SweepPoint p{split->front().sm_count(), false, m->stats};
    points.push_back(p);
    row(partition_label(p.sms), p, m->engine_sms);
  }
  WholeGpuStream whole;
  auto m = runner.measure(whole.get(), o.iterations, o.warmup);
  if (!m.ok()) return fail("running on the whole GPU", m.status());
  SweepPoint w{limits.sm_count, true, m->stats};
  points.push_back(w);
  row("whole GPU", w, m->engine_sms);

  if (!o.csv.empty()) {
    // Like every file trtet-run writes: no symbolic link followed, an existing file replaced only with --overwrite.
    const std::string csv = sweep_csv(points);
    const ex::Status written = write_file(o.csv, csv.data(), csv.size(), o.overwrite);
    if (!written.ok()) return fail("writing " + o.csv, written);
    char plot_target[64] = "";
    if (target) std::snprintf(plot_target, sizeof(plot_target), " --p99-target-us %g", o.p99_target_us);
    std::printf("\ncurve written to %s (plot: tools/plot_sweep.py %s%s)\n", o.csv.c_str(), o.csv.c_str(), plot_target);
  }
  if (!target) return kExitOk;
  std::printf("%s\n", recommendation(points, o.p99_target_us).c_str());
  return smallest_meeting(points, o.p99_target_us) ? kExitOk : kExitTargetMissed;
}

int run(const RunOptions& o) {
  // The program first: a damaged one is refused as such on any machine, before anything reads it.
  const ex::Status verified = verify_program(o.program, o.method);
  if (!verified.ok()) return fail("loading " + o.program, verified);
  int devices = 0;
  const cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "trtet-run: no usable GPU: %s\n",
                 counted != cudaSuccess ? cudaGetErrorString(counted) : "no CUDA device visible");
    return kExitNoGpu;
  }
  if (o.device >= devices) {
    std::fprintf(stderr, "trtet-run: --device %d: only %d device(s) visible\n", o.device, devices);
    return kExitUsage;
  }
  auto limits = et::green_context_limits(o.device);
  if (!limits.ok()) return fail("reading the GPU's SM layout", limits.error());
  auto runner = Runner::load(o);
  if (!runner.ok()) return fail("loading " + o.program, runner.status());

  cudaDeviceProp prop{};
  (void)cudaGetDeviceProperties(&prop, o.device);
  std::printf("program: %s (method %s)%s\n", o.program.c_str(), o.method.c_str(),
              o.test_engines ? ", engines from the test-engine factory" : "");
  for (const std::string& line : (*runner)->io().describe()) std::printf("  %s\n", line.c_str());
  std::printf("GPU %d: %s, %u SMs; partitions are multiples of %u SMs (minimum %u, alignment %u), at most %u per "
              "split\n",
              o.device, prop.name, limits->sm_count, limits->granularity, limits->min_partition, limits->alignment,
              limits->max_partitioned_sms);
  std::printf("%d calls after %d warm-up, one at a time; latency = host time of execute + stream sync\n\n",
              o.iterations, o.warmup);
  if (!o.sweep_counts.empty()) return run_sweep(**runner, o, *limits);
  if (o.compare) return run_compare(**runner, o, *limits);
  return run_single(**runner, o, *limits);
}

}  // namespace
}  // namespace trtet_run

int main(int argc, char** argv) {
  const trtet_run::ParseOutcome parsed = trtet_run::parse_options(argc, argv, trtet_run::have_test_engines());
  if (!parsed.run) {
    std::fputs(parsed.message.c_str(), parsed.exit_code == 0 ? stdout : stderr);
    return parsed.exit_code;
  }
  return trtet_run::run(parsed.options);
}
