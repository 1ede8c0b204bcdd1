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
  TRTET_CUDA_CHECK(cudaHostAlloc(&memory, kSlots * sizeof(std::uint64_t), cudaHostAllocPortable | cudaHostAllocMapped));
  gate.opened_ = static_cast<volatile std::uint64_t*>(memory);
  for (int s = 0; s < kSlots; ++s) gate.opened_[s] = 0;
  gate.timeout_ms_ = timeout_ms;
  return ex::Result<Gate>(std::move(gate));
}

Gate::Gate(Gate&& other) noexcept
    : opened_(std::exchange(other.opened_, nullptr)),
      next_(other.next_),
      next_slot_(other.next_slot_),
      timeout_ms_(other.timeout_ms_) {}

Gate& Gate::operator=(Gate&& other) noexcept {
  if (this != &other) {
    this->~Gate();
    opened_ = std::exchange(other.opened_, nullptr);
    next_ = other.next_;
    next_slot_ = other.next_slot_;
    timeout_ms_ = other.timeout_ms_;
  }
  return *this;
}

Gate::~Gate() {
  if (opened_ == nullptr) return;
  open_all();
  TRTET_CUDA_WARN(cudaFreeHost(const_cast<std::uint64_t*>(opened_)));
  opened_ = nullptr;
}

ex::Result<Gate::Ticket> Gate::close(cudaStream_t stream) {
  TRTET_CHECK_OR_RETURN(opened_ != nullptr, kInvalidState, "Gate::close on an empty gate");
  Ticket ticket;
  ticket.slot = next_slot_;
  next_slot_ = (next_slot_ + 1) % kSlots;
  ticket.value = ++next_[static_cast<std::size_t>(ticket.slot)];
  ticket.closed_at = std::chrono::steady_clock::now();
  const unsigned long long timeout_ns = static_cast<unsigned long long>(timeout_ms_) * 1000000ull;
  gate_kernel<<<1, 1, 0, stream>>>(reinterpret_cast<const volatile unsigned long long*>(opened_ + ticket.slot),
                                   ticket.value, timeout_ns);
  TRTET_CUDA_CHECK(cudaGetLastError());
  return ticket;
}

void Gate::open(const Ticket& ticket) noexcept {
  if (opened_ == nullptr || !ticket.valid()) return;
  __sync_synchronize();
  if (opened_[ticket.slot] < ticket.value) opened_[ticket.slot] = ticket.value;
  __sync_synchronize();
}

void Gate::open_all() noexcept {
  if (opened_ == nullptr) return;
  __sync_synchronize();
  for (int s = 0; s < kSlots; ++s) opened_[s] = next_[static_cast<std::size_t>(s)];
  __sync_synchronize();
}

}  // namespace trtet_test::fuzz
