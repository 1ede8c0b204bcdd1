// A gate: a one-thread kernel queued on a stream that holds everything behind it until the host
// opens it (or a timeout passes). Queued right before a call that must return at once, it makes
// "the call returned before its work ended" exact: the call's work cannot start, let alone end,
// while the gate is closed, so a stream query right after the call says cudaErrorNotReady unless
// the call itself waited (until the timeout let the gate through).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/status.h"

namespace trtet_test::fuzz {

namespace ex = torch_tensorrt::executorch_backend;

class Gate {
 public:
  /// A gate whose closed kernels wait at most `timeout_ms` each. Pinned, mapped host memory holds
  /// the ticket the host has opened up to (cudaHostAllocPortable: seen from every context, green
  /// contexts included).
  static ex::Result<Gate> create(int timeout_ms);
  Gate() = default;
  Gate(Gate&& other) noexcept;
  Gate& operator=(Gate&& other) noexcept;
  Gate(const Gate&) = delete;             // owns pinned memory
  Gate& operator=(const Gate&) = delete;
  ~Gate();

  /// Queues a closed gate on `stream`: what is queued after it waits until open() (or the timeout).
  ex::Status close(cudaStream_t stream);
  /// Opens every gate closed so far. Tickets only grow, so a gate never misses its opening.
  void open() noexcept;
  int timeout_ms() const noexcept { return timeout_ms_; }

 private:
  volatile std::uint64_t* opened_ = nullptr;  ///< the highest ticket opened (host-written)
  std::uint64_t next_ = 0;                    ///< the last ticket handed to a closed gate
  int timeout_ms_ = 0;
};

}  // namespace trtet_test::fuzz
