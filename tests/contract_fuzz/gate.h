// Gates: one-thread kernels queued on a stream that hold everything behind them until the host
// opens them (or a timeout passes). Queued right before a call that must return at once, a gate
// makes "the call returned before its work ended" exact: the call's work cannot start, let alone
// end, while the gate is closed, so a stream query right after the call says cudaErrorNotReady
// unless the call itself waited (until the timeout let the gate through). Kept closed while a
// later call on another stream is made, it makes "the later call waits for the earlier one" exact
// too: the later call's work cannot end before the gate opens.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <chrono>
#include <cstdint>

#include "common/status.h"

namespace trtet_test::fuzz {

namespace ex = torch_tensorrt::executorch_backend;

class Gate {
 public:
  /// One closed gate: opened by open(ticket) or open_all().
  struct Ticket {
    int slot = -1;
    std::uint64_t value = 0;
    std::chrono::steady_clock::time_point closed_at;
    bool valid() const noexcept { return slot >= 0; }
  };
  static constexpr int kSlots = 16;  ///< gates closed at once, at most

  /// Gates whose kernels wait at most `timeout_ms` each. Pinned, mapped host memory holds, per
  /// slot, the ticket the host has opened up to (cudaHostAllocPortable: seen from every context,
  /// green contexts included).
  static ex::Result<Gate> create(int timeout_ms);
  Gate() = default;
  Gate(Gate&& other) noexcept;
  Gate& operator=(Gate&& other) noexcept;
  Gate(const Gate&) = delete;             // owns pinned memory
  Gate& operator=(const Gate&) = delete;
  ~Gate();

  /// Queues a closed gate on `stream`: what is queued after it waits until it opens (or the timeout).
  ex::Result<Ticket> close(cudaStream_t stream);
  /// Opens one gate. A slot's tickets only grow, so a gate never misses its opening.
  void open(const Ticket& ticket) noexcept;
  /// Opens every gate closed so far.
  void open_all() noexcept;
  int timeout_ms() const noexcept { return timeout_ms_; }

 private:
  volatile std::uint64_t* opened_ = nullptr;  ///< per slot: the highest ticket opened (host-written)
  std::array<std::uint64_t, kSlots> next_{};  ///< per slot: the last ticket handed out
  int next_slot_ = 0;
  int timeout_ms_ = 0;
};

}  // namespace trtet_test::fuzz
