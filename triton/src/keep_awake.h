// Host cores kept out of their idle halt while the server serves (keep_awake.cpp): the backend setting
// `keep-cores-awake` (tritonserver --backend-config=torchtrt_executorch,keep-cores-awake=<cores>).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace trtet_triton {

// Note [cores kept awake]
// -----------------------
// On the virtual machines lent to this work (S58, S59) the guest has no CPU idle driver, so an idle core
// halts and the hypervisor takes the virtual CPU off its physical one. A thread woken on such a core
// waits until the hypervisor runs it again. On the H100 machine of S59, one thread waking another every
// 500 us through a condition variable took p99 191 to 214 us when the woken thread's core was idle, and
// 12 us with a spinning SCHED_IDLE thread on that core (trtet_triton_wake_bench measures the same with
// this file's threads). In the server every request wakes threads on idle cores: the frontend's, the
// instance's, and the instance's again after its stream wait. One perf run there, partitioned, with
// such a thread on every core read the latency model's client p99 alone 176 to 340 us, against 692 to
// 1,194 us in the same session's three runs without them (docs/SERVING.md, "Cores kept awake").
//
// With `keep-cores-awake`, the backend starts one thread per named core while it is loaded. Each
// thread is pinned to its core, runs at SCHED_IDLE (the scheduler runs it only when nothing else on
// that core wants to run, and preempts it as soon as a thread is woken there), and spins on a pause
// instruction until the backend is finalized. The cores read busy in `top`, and on a machine billed
// or throttled by its CPU time, they cost it. It changes no host setting: what the kernel's own
// remedies do (the cpuidle-haltpoll driver, or idle=poll on the kernel's command line) needs the
// host's administrator; this needs no privilege.
//
// A thread that cannot be pinned or lowered to SCHED_IDLE is refused, and so is the whole setting:
// a spinning thread at normal priority would take time from the server's own threads.

// Parses a core list ("0-11", "0,2,4-7"): ascending, no core twice, each below kMaxCore. On a refusal
// returns false with `why` naming the part of `text` that is wrong.
constexpr int kMaxCore = 1024;
bool parse_core_list(const std::string& text, std::vector<int>& cores, std::string& why);

// The threads of Note [cores kept awake]; stopped and joined when destroyed.
class CoresKeptAwake {
 public:
  CoresKeptAwake() = default;
  CoresKeptAwake(const CoresKeptAwake&) = delete;
  CoresKeptAwake& operator=(const CoresKeptAwake&) = delete;
  ~CoresKeptAwake() { stop(); }

  // Starts a thread on each of `cores`. Every core must be one this process may pin a thread to (one
  // that is online and in its cpuset; it need not be in the starting thread's own affinity, as cores
  // Triton's host policy gives an instance are not). Returns false with the reason, and no thread left
  // running, where a thread could not be pinned or lowered to SCHED_IDLE.
  bool start(const std::vector<int>& cores, std::string& why);
  void stop();
  std::size_t threads() const { return threads_.size(); }

 private:
  std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::thread> threads_;
};

// The backend's setting: `value` is the backend-config value of keep-cores-awake. Starts the
// threads into `out`, or returns false with a message that names the setting and the reason.
bool keep_cores_awake(const std::string& value, CoresKeptAwake& out, std::string& why);

}  // namespace trtet_triton
