// What the benchmark programs share: buffers of each memory kind, tensor views over them,
// latency statistics and CSV (latency samples for bench/plot_cdf.py among them).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "session/tensor_view.h"

namespace trtet_bench {

namespace ex = torch_tensorrt::executorch_backend;

/// Exits the program with the message when `status` is an error (benchmarks have no recovery).
void require(const ex::Status& status, const char* what);
/// Exits when a CUDA call failed.
void require_cuda(cudaError_t error, const char* what);

enum class Memory { kDevice, kPinned, kPageable };

/// A float32 buffer of `count` elements in the chosen memory, filled with a pattern. Benchmark setup
/// only: allocates with cudaMalloc / cudaHostAlloc / new.
class Buffer {
 public:
  Buffer(Memory memory, std::size_t count);
  ~Buffer();
  Buffer(const Buffer&) = delete;             // owns memory
  Buffer& operator=(const Buffer&) = delete;

  float* data() const noexcept { return data_; }
  std::size_t count() const noexcept { return count_; }
  std::size_t bytes() const noexcept { return count_ * sizeof(float); }
  /// A view of the first `elements` elements as a 1-d float32 tensor.
  ex::delegate::TensorView view(std::size_t elements) const;

 private:
  Memory memory_;
  std::size_t count_;
  float* data_ = nullptr;
};

using Clock = std::chrono::steady_clock;
inline double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

struct Percentiles {
  double p50 = 0;
  double p99 = 0;
  double mean = 0;
  std::size_t n = 0;
};
/// p50, p99 and mean of `samples` (nearest-rank percentiles).
Percentiles percentiles(std::vector<double> samples);

/// The latency samples of one condition (one line of a CDF plot).
struct Series {
  std::string label;
  std::vector<double> samples_us;
};
/// Writes every sample of `series` as CSV ("# title", then "series,latency_us" rows), which
/// bench/plot_cdf.py draws as latency CDFs with matplotlib.
void write_latency_samples(const std::string& path, const std::string& title, const std::vector<Series>& series);

/// Appends rows to a CSV file (the header is written when the file is new).
void append_csv(const std::string& path, const std::string& header, const std::vector<std::string>& rows);

/// printf into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace trtet_bench
