// The seam's state and helpers (shim_state.h).
#include "faults/shim_state.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace trtet_faults_shim {

State& state() {
  static State* s = new State;  // never destroyed: calls may come from static destructors
  return *s;
}

thread_local cudaError_t t_pending = cudaSuccess;  // the injected error the next cudaGetLastError reports
thread_local int t_inside = 0;                      // > 0 while the shim's own code runs

void count_call(const char* name) {
  if (t_inside > 0) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  ++s.calls[name];
  ++s.total_calls;
}

/// Counts a call; true when it is a fallible point of an enabled kind and the one armed.
bool point(const char* name, unsigned kind) {
  if (t_inside > 0) return false;
  ++t_inside;
  bool fail = false;
  {
    State& s = state();
    std::lock_guard<std::mutex> lock(s.mutex);
    ++s.calls[name];
    ++s.total_calls;
    if ((s.kinds & kind) != 0) {
      ++s.reached;
      if (s.names.size() < (1u << 20)) {
        s.names += name;
        s.names += '\n';
      }
      if (s.armed != 0 && s.reached == s.armed) {
        fail = true;
        s.fired = true;
        s.fired_name = name;
        s.armed = 0;
      }
    }
  }
  --t_inside;
  return fail;
}

int armed_error(int fallback) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.error != 0 ? s.error : fallback;
}

cudaError_t inject(cudaError_t fallback) {
  const auto error = static_cast<cudaError_t>(armed_error(fallback));
  t_pending = error;
  return error;
}

void track(bool pinned, void* ptr, std::size_t bytes) {
  if (ptr == nullptr) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto& live = pinned ? s.pinned_live : s.device_live;
  auto& total = pinned ? s.pinned_bytes : s.device_bytes;
  auto [it, inserted] = live.emplace(ptr, bytes);
  if (!inserted) {
    total -= static_cast<long long>(it->second);
    it->second = bytes;
  }
  total += static_cast<long long>(bytes);
}

void untrack(bool pinned, void* ptr) {
  if (ptr == nullptr) return;
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto& live = pinned ? s.pinned_live : s.device_live;
  auto it = live.find(ptr);
  if (it == live.end()) return;
  (pinned ? s.pinned_bytes : s.device_bytes) -= static_cast<long long>(it->second);
  live.erase(it);
}

/// libcudart's definition of `name` (the next one after this library).
void* next_symbol(const char* name, const char* version) {
  void* fn = version != nullptr ? dlvsym(RTLD_NEXT, name, version) : nullptr;
  if (fn == nullptr) fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    std::fprintf(stderr, "libtrtet_faults: no definition of %s after the shim (%s)\n", name, dlerror());
    std::abort();
  }
  return fn;
}

}  // namespace trtet_faults_shim
