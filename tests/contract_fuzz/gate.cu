#include "contract_fuzz/gate.h"

#include <utility>

#include "cuda/check.h"

namespace trtet_test::fuzz {
namespace {

__global__ void gate_kernel(const volatile unsigned long long* opened, unsigned long long ticket,
                            unsigned long long timeout_ns) {
  unsigned long long start = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*opened < ticket) {
    unsigned long long now = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) return;
    __nanosleep(2000);
  }
}

}  // namespace

ex::Result<Gate> Gate::create(int timeout_ms) {
  Gate gate;
  void* memory = nullptr;
  TRTET_CUDA_CHECK(cudaHostAlloc(&memory, sizeof(std::uint64_t), cudaHostAllocPortable | cudaHostAllocMapped));
  gate.opened_ = static_cast<volatile std::uint64_t*>(memory);
  *gate.opened_ = 0;
  gate.timeout_ms_ = timeout_ms;
  return ex::Result<Gate>(std::move(gate));
}

Gate::Gate(Gate&& other) noexcept
    : opened_(std::exchange(other.opened_, nullptr)), next_(other.next_), timeout_ms_(other.timeout_ms_) {}

Gate& Gate::operator=(Gate&& other) noexcept {
  if (this != &other) {
    this->~Gate();
    opened_ = std::exchange(other.opened_, nullptr);
    next_ = other.next_;
    timeout_ms_ = other.timeout_ms_;
  }
  return *this;
}

Gate::~Gate() {
  if (opened_ == nullptr) return;
  open();
  TRTET_CUDA_WARN(cudaFreeHost(const_cast<std::uint64_t*>(opened_)));
  opened_ = nullptr;
}

ex::Status Gate::close(cudaStream_t stream) {
  TRTET_CHECK_OR_RETURN(opened_ != nullptr, kInvalidState, "Gate::close on an empty gate");
  const unsigned long long timeout_ns = static_cast<unsigned long long>(timeout_ms_) * 1000000ull;
  gate_kernel<<<1, 1, 0, stream>>>(reinterpret_cast<const volatile unsigned long long*>(opened_), ++next_, timeout_ns);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return ex::Status::Ok();
}

void Gate::open() noexcept {
  if (opened_ == nullptr) return;
  __sync_synchronize();
  *opened_ = next_;
  __sync_synchronize();
}

}  // namespace trtet_test::fuzz
