// The side-by-side demo (README's main job): two engines, each in its own green context, then
// both on the whole GPU; prints what a user wants to see and where its latency samples went (bench/plot_cdf.py draws them).
// Usage: trtet-demo [--victim-sms N] [--calls N] [--samples FILE.csv]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda/device.h"
#include "isolation.h"

int main(int argc, char** argv) {
  using namespace trtet_bench;
  IsolationOptions options;
  std::string samples = "side-by-side.csv";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--victim-sms" && i + 1 < argc) {
      options.victim_sms = static_cast<unsigned>(std::atoi(argv[++i]));
    } else if (arg == "--calls" && i + 1 < argc) {
      options.calls = std::atoi(argv[++i]);
    } else if (arg == "--samples" && i + 1 < argc) {
      samples = argv[++i];
    } else {
      std::printf(
          "usage: trtet-demo [--victim-sms N] [--calls N] [--samples FILE.csv]\n"
          "Runs a latency-critical engine (64 blocks x 50 us) and an SM-flooding engine through the\n"
          "delegate, first each on its own green-context partition, then both on the whole GPU, and\n"
          "prints the victim's latency alone and beside the aggressor in both set-ups.\n");
      return arg == "--help" ? 0 : 1;
    }
  }
  auto devices = ex::cuda::device_count();
  if (!devices.ok()) {
    std::fprintf(stderr, "demo: no GPU visible (%s); the side-by-side demo needs a CUDA GPU\n",
                 devices.status().message().c_str());
    return 2;
  }
  std::printf("running %d calls per condition: a %u-SM partition for the latency-critical engine, the rest for "
              "the aggressor...\n",
              options.calls, options.victim_sms);
  auto result = run_isolation(options);
  if (!result.ok()) {
    std::fprintf(stderr, "demo: %s\n", result.status().to_string().c_str());
    return 3;
  }
  const IsolationResult& r = *result;
  std::printf("\n%-30s %8s %9s\n", "partition", "granted", "observed");
  std::printf("%-30s %8u %9zu\n", "latency-critical engine", r.victim_granted, r.victim_observed);
  std::printf("%-30s %8u %9zu\n", "aggressor engine", r.aggressor_granted, r.aggressor_observed);
  std::printf("%-30s %8d %9s   (SMs shared by the partitions: %zu)\n", "whole GPU", r.device_sms, "-", r.overlap);
  std::printf("\n%-34s %10s %10s %14s\n", "latency-critical engine", "p50 (us)", "p99 (us)", "p99 / alone");
  auto line = [](const Condition& c, double alone_p99) {
    std::printf("%-34s %10.1f %10.1f %14.2f\n", c.name, c.latency.p50, c.latency.p99, c.latency.p99 / alone_p99);
  };
  line(r.green_alone, r.green_alone.latency.p99);
  line(r.green_beside, r.green_alone.latency.p99);
  line(r.shared_alone, r.shared_alone.latency.p99);
  line(r.shared_beside, r.shared_alone.latency.p99);
  write_latency_samples(samples, "Latency-critical engine: alone and beside an SM-flooding engine",
                {{"green context, alone", r.green_alone.samples_us},
                 {"green context, beside", r.green_beside.samples_us},
                 {"whole GPU, alone", r.shared_alone.samples_us},
                 {"whole GPU, beside", r.shared_beside.samples_us}});
  std::printf("\nlatency samples written to %s (plot: bench/plot_cdf.py %s)\n", samples.c_str(), samples.c_str());
  return 0;
}
