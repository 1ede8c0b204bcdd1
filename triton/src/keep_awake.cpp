// Note [cores kept awake] (keep_awake.h).
#include "keep_awake.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>
#include <future>

#include "common/escape.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace trtet_triton {
namespace {

void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

bool parse_core(const std::string& text, int& core) {
  if (text.empty() || text.size() > 4) return false;
  int value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value >= kMaxCore) return false;
  core = value;
  return true;
}

std::string escape(const std::string& text) { return torch_tensorrt::executorch_backend::escape_for_message(text, 64); }

// Pins the calling thread to `core` and lowers it to SCHED_IDLE; "" or the reason.
std::string settle_on(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) {
    return "core " + std::to_string(core) + " is not one this process may run on (pinning a thread there: " +
           std::strerror(rc) + ")";
  }
  sched_param param{};
  param.sched_priority = 0;
  rc = pthread_setschedparam(pthread_self(), SCHED_IDLE, &param);
  if (rc != 0) return "lowering the thread on core " + std::to_string(core) + " to SCHED_IDLE: " + std::strerror(rc);
  const std::string name = "trtet-awake-" + std::to_string(core);
  (void)pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  return "";
}

}  // namespace

bool parse_core_list(const std::string& text, std::vector<int>& cores, std::string& why) {
  cores.clear();
  if (text.empty()) {
    why = "an empty core list";
    return false;
  }
  std::size_t at = 0;
  int last = -1;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(at, comma - at);
    const std::size_t dash = part.find('-');
    int first = 0;
    int end = 0;
    const bool ok = dash == std::string::npos
                        ? parse_core(part, first) && parse_core(part, end)
                        : parse_core(part.substr(0, dash), first) && parse_core(part.substr(dash + 1), end);
    if (!ok) {
      why = "'" + escape(part) + "' is not a core (0 to " + std::to_string(kMaxCore - 1) +
            ") or a range of cores (first-last)";
      return false;
    }
    if (end < first) {
      why = "the range '" + escape(part) + "' runs backwards";
      return false;
    }
    if (first <= last) {
      why = "'" + escape(part) + "' repeats or goes back below core " + std::to_string(last) +
            " (the list is ascending, each core once)";
      return false;
    }
    for (int c = first; c <= end; ++c) cores.push_back(c);
    last = end;
    at = comma + 1;
  }
  return true;
}

bool CoresKeptAwake::start(const std::vector<int>& cores, std::string& why) {
  stop();
  stop_ = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::future<std::string>> settled;
  for (const int core : cores) {
    std::promise<std::string> told;
    settled.push_back(told.get_future());
    threads_.emplace_back([core, stop = stop_, told = std::move(told)]() mutable {
      const std::string problem = settle_on(core);
      told.set_value(problem);
      if (!problem.empty()) return;  // never spins at the priority it was started with
      while (!stop->load(std::memory_order_relaxed)) relax();
    });
  }
  std::string first_problem;
  for (auto& s : settled) {
    std::string problem = s.get();
    if (!problem.empty() && first_problem.empty()) first_problem = problem;
  }
  if (!first_problem.empty()) {
    stop();
    why = first_problem;
    return false;
  }
  return true;
}

void CoresKeptAwake::stop() {
  stop_->store(true, std::memory_order_relaxed);
  for (auto& t : threads_) t.join();
  threads_.clear();
}

bool keep_cores_awake(const std::string& value, CoresKeptAwake& out, std::string& why) {
  std::vector<int> cores;
  std::string reason;
  if (!parse_core_list(value, cores, reason) || !out.start(cores, reason)) {
    why = "backend setting keep-cores-awake=" + escape(value) + ": " + reason;
    return false;
  }
  return true;
}

}  // namespace trtet_triton
