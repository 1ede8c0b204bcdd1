#include "fault.h"

#include <atomic>
#include <mutex>
#include <thread>

#include "errors.h"

namespace trtet_triton {

namespace {

std::atomic<bool> g_poisoned{false};
std::atomic<TRITONSERVER_Server*> g_server{nullptr};
std::mutex g_mutex;  // g_cause, g_stopper
std::string g_cause;
std::thread g_stopper;

}  // namespace

void remember_server(TRITONSERVER_Server* server) {
  if (server != nullptr) g_server.store(server);
}

void poison_process(const std::string& cause) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_poisoned.load()) {
    log(TRITONSERVER_LOG_ERROR, "after the process was poisoned: " + cause);
    return;
  }
  g_cause = cause;
  g_poisoned.store(true);
  log(TRITONSERVER_LOG_ERROR,
      "this process's CUDA context is lost: " + cause +
          ". Every model of this server fails from now on (one process is one fault domain: partitions "
          "isolate SMs, not faults); every later request is refused with this cause, and the server stops "
          "(readiness and liveness false) so that it is restarted");
  TRITONSERVER_Server* server = g_server.load();
  if (server == nullptr) {
    log(TRITONSERVER_LOG_ERROR, "no server to stop: readiness stays as the server reports it");
    return;
  }
  // The stop waits (up to the server's exit timeout) for every model to unload, which waits for the
  // request being executed now: it runs on a thread of its own, never on the instance's.
  g_stopper = std::thread([server] {
    TRITONSERVER_Error* e = TRITONSERVER_ServerStop(server);
    if (e != nullptr) {
      log(TRITONSERVER_LOG_ERROR, std::string("stopping the server: ") + TRITONSERVER_ErrorMessage(e));
      TRITONSERVER_ErrorDelete(e);
    }
  });
}

bool process_poisoned(std::string& cause) {
  if (!g_poisoned.load(std::memory_order_acquire)) return false;
  std::lock_guard<std::mutex> lock(g_mutex);
  cause = g_cause;
  return true;
}

bool poison_if_sticky(const cudaError_t error, const std::string& what) {
  if (!poisons_process(error)) return g_poisoned.load();
  poison_process(format("%s: %s (%s)", what.c_str(), cudaGetErrorString(error), cudaGetErrorName(error)));
  return true;
}

void finish_fault_domain() {
  std::thread stopper;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    stopper = std::move(g_stopper);
  }
  if (!stopper.joinable()) return;
  if (stopper.get_id() == std::this_thread::get_id()) {
    stopper.detach();  // finalized from within the stop itself: it returns from here
  } else {
    stopper.join();
  }
}

}  // namespace trtet_triton
