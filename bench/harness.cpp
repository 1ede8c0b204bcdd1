#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace trtet_bench {

void require(const ex::Status& status, const char* what) {
  if (status.ok()) return;
  std::fprintf(stderr, "bench: %s: %s\n", what, status.to_string().c_str());
  std::exit(3);
}

void require_cuda(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return;
  std::fprintf(stderr, "bench: %s: %s\n", what, cudaGetErrorString(error));
  std::exit(3);
}

Buffer::Buffer(Memory memory, std::size_t count) : memory_(memory), count_(count) {
  const std::size_t size = std::max<std::size_t>(count, 1) * sizeof(float);
  std::vector<float> pattern(std::max<std::size_t>(count, 1));
  for (std::size_t i = 0; i < pattern.size(); ++i) pattern[i] = static_cast<float>((i * 2654435761u) % 1000) * 1e-3f;
  switch (memory) {
    case Memory::kDevice:
      require_cuda(cudaMalloc(reinterpret_cast<void**>(&data_), size), "cudaMalloc (bench setup)");
      require_cuda(cudaMemcpy(data_, pattern.data(), size, cudaMemcpyHostToDevice), "fill");
      break;
    case Memory::kPinned:
      require_cuda(cudaHostAlloc(reinterpret_cast<void**>(&data_), size, cudaHostAllocPortable), "cudaHostAlloc (bench setup)");
      std::copy(pattern.begin(), pattern.end(), data_);
      break;
    case Memory::kPageable:
      data_ = new float[std::max<std::size_t>(count, 1)];
      std::copy(pattern.begin(), pattern.end(), data_);
      break;
  }
}

Buffer::~Buffer() {
  switch (memory_) {
    case Memory::kDevice: cudaFree(data_); break;
    case Memory::kPinned: cudaFreeHost(data_); break;
    case Memory::kPageable: delete[] data_; break;
  }
}

ex::delegate::TensorView Buffer::view(std::size_t elements) const {
  ex::delegate::TensorView v;
  v.data = data_;
  v.capacity_bytes = bytes();
  v.shape = ex::Shape{static_cast<std::int64_t>(elements)};
  v.dtype = ex::DataType::kFloat32;
  return v;
}

Percentiles percentiles(std::vector<double> samples) {
  Percentiles p;
  p.n = samples.size();
  if (samples.empty()) return p;
  std::sort(samples.begin(), samples.end());
  auto rank = [&](double q) {
    const std::size_t i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(samples.size()))) - 1;
    return samples[std::min(i, samples.size() - 1)];
  };
  p.p50 = rank(0.50);
  p.p99 = rank(0.99);
  double sum = 0;
  for (double s : samples) sum += s;
  p.mean = sum / static_cast<double>(samples.size());
  return p;
}

void write_latency_samples(const std::string& path, const std::string& title, const std::vector<Series>& series) {
  std::ofstream out(path);
  out << "# " << title << "\n";
  out << "series,latency_us\n";
  for (const Series& s : series) {
    std::string quoted = "\"";  // CSV: labels may hold commas
    for (char c : s.label) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    quoted += '"';
    for (double v : s.samples_us) out << quoted << ',' << format("%.3f", v) << '\n';
  }
}

void append_csv(const std::string& path, const std::string& header, const std::vector<std::string>& rows) {
  std::ifstream probe(path);
  const bool fresh = !probe.good();
  probe.close();
  std::ofstream out(path, std::ios::app);
  if (fresh) out << header << "\n";
  for (const std::string& row : rows) out << row << "\n";
}

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int size = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string s(size > 0 ? static_cast<std::size_t>(size) : 0, '\0');
  if (size > 0) std::vsnprintf(s.data(), s.size() + 1, fmt, args);
  va_end(args);
  return s;
}

}  // namespace trtet_bench
