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

void write_cdf_svg(const std::string& path, const std::string& title, const std::vector<Series>& series) {
  const double width = 900, height = 520, left = 80, right = 220, top = 50, bottom = 60;
  double lo = 1e300, hi = 0;
  for (const Series& s : series) {
    for (double v : s.samples_us) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (hi <= 0) return;
  lo = std::pow(10.0, std::floor(std::log10(std::max(lo, 1e-3))));
  hi = std::pow(10.0, std::ceil(std::log10(hi)));
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  auto x_of = [&](double v) { return left + plot_w * (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)); };
  auto y_of = [&](double q) { return top + plot_h * (1.0 - q); };
  static const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  std::ofstream out(path);
  out << format("<svg xmlns='http://www.w3.org/2000/svg' width='%.0f' height='%.0f' font-family='sans-serif' font-size='13'>\n",
                width, height);
  out << "<rect width='100%' height='100%' fill='white'/>\n";
  out << format("<text x='%.0f' y='28' font-size='16'>%s</text>\n", left, title.c_str());
  out << format("<rect x='%.0f' y='%.0f' width='%.0f' height='%.0f' fill='none' stroke='#444'/>\n", left, top, plot_w, plot_h);
  for (double d = lo; d <= hi * 1.0001; d *= 10) {
    out << format("<line x1='%.1f' y1='%.0f' x2='%.1f' y2='%.0f' stroke='#ddd'/>\n", x_of(d), top, x_of(d), top + plot_h);
    out << format("<text x='%.1f' y='%.0f' text-anchor='middle'>%g</text>\n", x_of(d), top + plot_h + 18, d);
  }
  for (double q = 0; q <= 1.0001; q += 0.25) {
    out << format("<text x='%.0f' y='%.1f' text-anchor='end'>%.2f</text>\n", left - 6, y_of(q) + 4, q);
  }
  out << format("<text x='%.0f' y='%.0f' text-anchor='middle'>latency per call (us, log scale)</text>\n",
                left + plot_w / 2, height - 15);
  out << format("<text x='18' y='%.0f' transform='rotate(-90 18 %.0f)' text-anchor='middle'>fraction of calls</text>\n",
                top + plot_h / 2, top + plot_h / 2);
  for (std::size_t k = 0; k < series.size(); ++k) {
    std::vector<double> v = series[k].samples_us;
    std::sort(v.begin(), v.end());
    const char* color = kColors[k % 6];
    out << format("<polyline fill='none' stroke='%s' stroke-width='2' points='", color);
    const std::size_t step = std::max<std::size_t>(1, v.size() / 400);
    for (std::size_t i = 0; i < v.size(); i += step) {
      out << format("%.1f,%.1f ", x_of(std::max(v[i], lo)), y_of(static_cast<double>(i + 1) / static_cast<double>(v.size())));
    }
    if (!v.empty()) out << format("%.1f,%.1f", x_of(std::max(v.back(), lo)), y_of(1.0));
    out << "'/>\n";
    const double ly = top + 20 + 22.0 * static_cast<double>(k);
    out << format("<line x1='%.0f' y1='%.0f' x2='%.0f' y2='%.0f' stroke='%s' stroke-width='3'/>\n", width - right + 10, ly,
                  width - right + 35, ly, color);
    out << format("<text x='%.0f' y='%.0f'>%s</text>\n", width - right + 40, ly + 4, series[k].label.c_str());
  }
  out << "</svg>\n";
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
