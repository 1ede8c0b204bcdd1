// The seam's shared state and helpers (shim.cpp: the runtime calls and the control API;
// shim_driver.cpp: the driver functions and thread starts). Private to libtrtet_faults.so.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "faults/faults.h"

#ifndef TRTET_CUDART_VERSION_TAG
#error "TRTET_CUDART_VERSION_TAG (libcudart's symbol version, e.g. libcudart.so.13) must be defined"
#endif

namespace trtet_faults_shim {

// ---- the state: made on first use (calls come during static init) ----

struct State {
  std::mutex mutex;
  unsigned kinds = TRTET_FAULT_DEFAULT_KINDS;
  unsigned long armed = 0;  // 0: disarmed
  int error = 0;
  unsigned long reached = 0;
  bool fired = false;
  std::string fired_name;
  std::string names;
  std::map<std::string, unsigned long> calls;
  unsigned long total_calls = 0;
  std::unordered_map<void*, std::size_t> device_live;
  std::unordered_map<void*, std::size_t> pinned_live;
  long long device_bytes = 0;
  long long pinned_bytes = 0;
};

State& state();

extern thread_local cudaError_t t_pending;  ///< the injected error the next cudaGetLastError reports
extern thread_local int t_inside;           ///< > 0 while the shim's own code runs

/// Counts a call that is not a fallible point.
void count_call(const char* name);
/// Counts a call; true when it is a fallible point of an enabled kind and the one armed.
bool point(const char* name, unsigned kind);
/// The armed error, or `fallback` where none was given.
int armed_error(int fallback);
/// Records the armed error (or `fallback`) as the thread's pending last error and returns it.
cudaError_t inject(cudaError_t fallback);
/// Live device or pinned bytes, for the leak checks.
void track(bool pinned, void* ptr, std::size_t bytes);
void untrack(bool pinned, void* ptr);
/// libcudart's (or libc's) definition of `name`: the next one after this library.
void* next_symbol(const char* name, const char* version);

/// Note [planted bugs]
/// --------------------
/// TRTET_FAULTS_PLANT="ACTION API OBJECT START SIZE" plants one deliberate bug for
/// scripts/gpu plant-bugs: each call of the runtime function API made from the bytes [START,
/// START + SIZE) (hexadecimal offsets, as `nm -S` prints a function's) of the loaded object whose
/// path contains OBJECT gets ACTION instead of, or before, its usual forwarding:
///   drop            the call is not made and returns cudaSuccess (a wait, record or synchronize left out)
///   sync_first      cudaStreamSynchronize(stream) runs first (a call that waits where it must not)
///   destroy_fresh   cudaGraphExecUpdate(exec, graph): graph is instantiated and the exec destroyed
///                   first (a graph exec destroyed inside a call)
/// TRTET_FAULTS_PLANT_LOG names a file the process appends its count of planted calls to at exit, so
/// the script can tell a plant that was never reached from one the tests missed.
enum class Plant { kNone, kDrop, kSyncFirst, kDestroyFresh };
/// What TRTET_FAULTS_PLANT asks of a call of `api` that returns to `ret`.
Plant planted(const char* api, const void* ret);

template <typename Fn>
Fn next_cuda(Fn, const char* name) {
  return reinterpret_cast<Fn>(next_symbol(name, TRTET_CUDART_VERSION_TAG));
}

}  // namespace trtet_faults_shim

#define TRTET_REAL(name) static const auto real = next_cuda(&::name, #name)
/// The plant for this call (Note [planted bugs]); used in the interposed function itself, whose
/// return address lies in its caller.
#define TRTET_PLANTED(name) planted(#name, __builtin_return_address(0))
#define TRTET_FAULT(name, kind, fallback) \
  if (point(#name, kind)) return inject(fallback)
#define TRTET_NULL_OUT(ptr) \
  do {                      \
    if ((ptr) != nullptr) *(ptr) = nullptr; \
  } while (0)
