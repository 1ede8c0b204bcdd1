// trtet-small-copies: what a small host-I/O call pays for its copies, through the copy engines or
// through a copy kernel that reads and writes page-locked host memory mapped into the device.
//
// Each iteration is the shape of a call with pageable host I/O: the input copied into page-locked
// staging, moved to the device, a one-block "engine" kernel, the output moved back into page-locked
// staging, the stream's event waited for, the output copied out. Two ways to move the bytes:
// cudaMemcpyAsync (the copy engines) and a copy kernel on the call's stream (its SMs, no copy
// engine): the staging layer's own kernel_copy, which moves chunks of at most 64 KiB (Note [small
// copies] in src/staging/small_copy.cu, which cites this bench's numbers). Each is timed on the host, call by
// call, alone and beside an aggressor thread that keeps the copy engines busy with large copies on a
// stream of its own; the GPU time of the two copies is timed with events on one call in 16. Every
// output is checked. The table ends with kernel / copy-engine ratios.
//
//   trtet-small-copies [iterations]      (default 4000 a row; sizes 256 B, 4 KiB, 64 KiB, 1 MiB)

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "staging/small_copy.h"

namespace {

#define CHECK(call)                                                                                 \
  do {                                                                                              \
    const cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)

// The stand-in engine: out[i] = in[i] + 1 over 32-bit words, one block.
__global__ void engine_kernel(unsigned* out, const unsigned* in, size_t words) {
  for (size_t i = threadIdx.x; i < words; i += blockDim.x) out[i] = in[i] + 1;
}

void launch_copy(void* to, const void* from, size_t bytes, cudaStream_t stream) {
  const auto status = torch_tensorrt::executorch_backend::staging::kernel_copy(to, from, bytes, stream);
  if (!status.ok()) {
    std::fprintf(stderr, "kernel_copy: %s\n", status.to_string().c_str());
    std::exit(1);
  }
}

struct Row {
  double p50 = 0, p99 = 0, p999 = 0, gpu_copies = 0;
};

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t at = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[at];
}

struct Buffers {
  size_t bytes = 0;
  std::vector<unsigned char> user_in, user_out;
  unsigned char *pinned_in = nullptr, *pinned_out = nullptr, *dev_in = nullptr, *dev_out = nullptr;
  explicit Buffers(size_t n) : bytes(n), user_in(n), user_out(n) {
    CHECK(cudaHostAlloc(&pinned_in, n, cudaHostAllocPortable));
    CHECK(cudaHostAlloc(&pinned_out, n, cudaHostAllocPortable));
    CHECK(cudaMalloc(&dev_in, n));
    CHECK(cudaMalloc(&dev_out, n));
    for (size_t i = 0; i < n; ++i) user_in[i] = static_cast<unsigned char>(i * 7 + 3);
  }
  ~Buffers() {
    cudaFreeHost(pinned_in);
    cudaFreeHost(pinned_out);
    cudaFree(dev_in);
    cudaFree(dev_out);
  }
};

// One call: in, engine, out, waited for; `timed` records the copies' events.
void call(Buffers& b, bool kernel_copies, cudaStream_t stream, cudaEvent_t done, cudaEvent_t* marks) {
  std::memcpy(b.pinned_in, b.user_in.data(), b.bytes);
  if (marks != nullptr) CHECK(cudaEventRecord(marks[0], stream));
  if (kernel_copies) {
    launch_copy(b.dev_in, b.pinned_in, b.bytes, stream);
  } else {
    CHECK(cudaMemcpyAsync(b.dev_in, b.pinned_in, b.bytes, cudaMemcpyHostToDevice, stream));
  }
  if (marks != nullptr) CHECK(cudaEventRecord(marks[1], stream));
  engine_kernel<<<1, 256, 0, stream>>>(reinterpret_cast<unsigned*>(b.dev_out), reinterpret_cast<unsigned*>(b.dev_in),
                                       b.bytes / 4);
  if (marks != nullptr) CHECK(cudaEventRecord(marks[2], stream));
  if (kernel_copies) {
    launch_copy(b.pinned_out, b.dev_out, b.bytes, stream);
  } else {
    CHECK(cudaMemcpyAsync(b.pinned_out, b.dev_out, b.bytes, cudaMemcpyDeviceToHost, stream));
  }
  if (marks != nullptr) CHECK(cudaEventRecord(marks[3], stream));
  CHECK(cudaEventRecord(done, stream));
  CHECK(cudaEventSynchronize(done));
  std::memcpy(b.user_out.data(), b.pinned_out, b.bytes);
}

bool check(const Buffers& b) {
  for (size_t w = 0; w + 4 <= b.bytes; w += 4) {
    unsigned in = 0, out = 0;
    std::memcpy(&in, b.user_in.data() + w, 4);
    std::memcpy(&out, b.user_out.data() + w, 4);
    if (out != in + 1) return false;
  }
  return true;
}

Row measure(Buffers& b, bool kernel_copies, int iterations, cudaStream_t stream, bool& right) {
  cudaEvent_t done, marks[4];
  CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  for (auto& m : marks) CHECK(cudaEventCreate(&m));
  for (int i = 0; i < 200; ++i) call(b, kernel_copies, stream, done, nullptr);
  std::vector<double> us;
  us.reserve(static_cast<size_t>(iterations));
  double gpu = 0;
  int timed = 0;
  for (int i = 0; i < iterations; ++i) {
    std::memset(b.user_out.data(), 0, b.bytes);
    const bool time_gpu = i % 16 == 0;
    const auto t0 = std::chrono::steady_clock::now();
    call(b, kernel_copies, stream, done, time_gpu ? marks : nullptr);
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (!check(b)) right = false;
    if (time_gpu) {
      float in_ms = 0, out_ms = 0;
      CHECK(cudaEventElapsedTime(&in_ms, marks[0], marks[1]));
      CHECK(cudaEventElapsedTime(&out_ms, marks[2], marks[3]));
      gpu += (in_ms + out_ms) * 1e3;
      ++timed;
    }
  }
  CHECK(cudaEventDestroy(done));
  for (auto& m : marks) CHECK(cudaEventDestroy(m));
  Row row;
  row.p50 = percentile(us, 0.50);
  row.p99 = percentile(us, 0.99);
  row.p999 = percentile(us, 0.999);
  row.gpu_copies = timed > 0 ? gpu / timed : 0;
  return row;
}

// Keeps the copy engines busy: 32 MiB each way, back to back, on a stream of its own.
class Aggressor {
 public:
  Aggressor() {
    CHECK(cudaHostAlloc(&host_, kBytes, cudaHostAllocPortable));
    CHECK(cudaMalloc(&device_, kBytes));
    CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    thread_ = std::thread([this] {
      while (!stop_.load(std::memory_order_relaxed)) {
        CHECK(cudaMemcpyAsync(device_, host_, kBytes, cudaMemcpyHostToDevice, stream_));
        CHECK(cudaMemcpyAsync(host_, device_, kBytes, cudaMemcpyDeviceToHost, stream_));
        CHECK(cudaStreamSynchronize(stream_));
        ++rounds_;
      }
    });
  }
  ~Aggressor() {
    stop_ = true;
    thread_.join();
    cudaStreamDestroy(stream_);
    cudaFreeHost(host_);
    cudaFree(device_);
  }
  long rounds() const { return rounds_.load(); }

 private:
  static constexpr size_t kBytes = size_t{32} << 20;
  void* host_ = nullptr;
  void* device_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<long> rounds_{0};
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::max(100, std::atoi(argv[1])) : 4000;
  int device = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&device) != cudaSuccess || cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    std::printf("trtet-small-copies: no CUDA device\n");
    return 0;
  }
  if (!prop.unifiedAddressing || !prop.canMapHostMemory) {
    std::printf("trtet-small-copies: %s cannot map page-locked host memory into the device\n", prop.name);
    return 0;
  }
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("trtet-small-copies on %s (%d SMs, %d copy engines), %d calls a row\n", prop.name,
              prop.multiProcessorCount, prop.asyncEngineCount, iterations);
  std::printf("%-8s %-7s %-6s %10s %10s %10s %14s\n", "bytes", "beside", "copies", "p50 us", "p99 us", "p99.9 us",
              "GPU copies us");
  bool right = true;
  struct Result {
    size_t bytes;
    bool beside;
    Row dma, kernel;
  };
  std::vector<Result> results;
  long aggressor_rounds = 0;
  for (const size_t bytes : {size_t{256}, size_t{4096}, size_t{65536}, size_t{1} << 20}) {
    Buffers b(bytes);
    for (const bool beside : {false, true}) {
      Result r{bytes, beside, {}, {}};
      {
        std::unique_ptr<Aggressor> aggressor;
        if (beside) aggressor = std::make_unique<Aggressor>();
        // DMA and kernel alternate in halves, so drift over the row falls on both.
        const Row d1 = measure(b, false, iterations / 2, stream, right);
        const Row k1 = measure(b, true, iterations / 2, stream, right);
        const Row k2 = measure(b, true, iterations / 2, stream, right);
        const Row d2 = measure(b, false, iterations / 2, stream, right);
        auto mean = [](const Row& x, const Row& y) {
          return Row{(x.p50 + y.p50) / 2, (x.p99 + y.p99) / 2, (x.p999 + y.p999) / 2, (x.gpu_copies + y.gpu_copies) / 2};
        };
        r.dma = mean(d1, d2);
        r.kernel = mean(k1, k2);
        if (aggressor) aggressor_rounds += aggressor->rounds();
      }
      for (const auto& [name, row] : {std::pair<const char*, Row>{"dma", r.dma}, {"kernel", r.kernel}}) {
        std::printf("%-8zu %-7s %-6s %10.1f %10.1f %10.1f %14.2f\n", bytes, beside ? "yes" : "no", name, row.p50, row.p99,
                    row.p999, row.gpu_copies);
      }
      results.push_back(r);
    }
  }
  std::printf("aggressor: %ld rounds of 32 MiB each way\n", aggressor_rounds);
  std::printf("\nkernel / dma (below 1: the copy kernel is the faster)\n");
  std::printf("%-8s %-7s %8s %8s %10s\n", "bytes", "beside", "p50", "p99", "GPU copies");
  for (const Result& r : results) {
    std::printf("%-8zu %-7s %8.2f %8.2f %10.2f\n", r.bytes, r.beside ? "yes" : "no", r.kernel.p50 / r.dma.p50,
                r.kernel.p99 / r.dma.p99, r.kernel.gpu_copies / r.dma.gpu_copies);
  }
  std::printf("outputs: %s\n", right ? "all right" : "WRONG");
  CHECK(cudaStreamDestroy(stream));
  return right ? 0 : 1;
}
