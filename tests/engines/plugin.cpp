// libtrtet_test_engines_plugin.so: the test engines for processes the test suite does not link,
// such as a Python interpreter (ctypes.CDLL) or a Triton server (LD_PRELOAD). Test builds only:
// never installed. A C interface, so no caller needs the project's internal headers.
//
//   trtet_test_engines_install()      the test-engine factory becomes the process's engine factory
//   trtet_test_engines_clear_sms()    forget the SMs the live recording engines ran on
//   trtet_test_engines_sms(out, cap)  the SM ids they ran on since (their work complete): the count
//                                     (at most cap written), 0 when none records, -1 on error
//   trtet_test_engines_last_error()   the message of the last failure on this thread
//
// With TRTET_TEST_ENGINES_AUTOINSTALL=1 in the environment the factory is installed as the library
// loads (a preloaded server has no other hook).
#include <cstdlib>
#include <cstring>
#include <string>

#include "engines/recording_factory.h"

namespace {

thread_local std::string g_last_error;

int report(const torch_tensorrt::executorch_backend::Status& status) {
  if (status.ok()) return 0;
  g_last_error = status.message();
  return -1;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int trtet_test_engines_install() {
  return report(trtet_test::install_recording_test_engine_factory());
}

__attribute__((visibility("default"))) int trtet_test_engines_clear_sms() {
  return report(trtet_test::clear_engine_sms());
}

__attribute__((visibility("default"))) int trtet_test_engines_sms(int* out, int capacity) {
  auto sms = trtet_test::engine_sms();
  if (!sms.ok()) {
    g_last_error = sms.error().message();
    return -1;
  }
  if (!sms->has_value()) return 0;
  const std::vector<int>& ids = **sms;
  for (int i = 0; i < capacity && i < static_cast<int>(ids.size()); ++i) out[i] = ids[static_cast<std::size_t>(i)];
  return static_cast<int>(ids.size());
}

__attribute__((visibility("default"))) const char* trtet_test_engines_last_error() { return g_last_error.c_str(); }

}  // extern "C"

namespace {

// Installs the factory at load when the environment asks for it (TRTET_TEST_ENGINES_AUTOINSTALL=1).
[[maybe_unused]] const bool g_autoinstalled = [] {
  const char* value = std::getenv("TRTET_TEST_ENGINES_AUTOINSTALL");
  return value != nullptr && std::strcmp(value, "1") == 0 && trtet_test_engines_install() == 0;
}();

}  // namespace

// ---- the SMs on demand, for a server the test cannot call into ----
//
// With TRTET_TEST_ENGINES_SMS_FILE=<path> in the environment, a thread of the plugin answers requests
// written to <path>.request: "clear" (trtet_test_engines_clear_sms) or "read" (trtet_test_engines_sms).
// The answer replaces <path> (written beside it, then renamed): "ok <count> <id> <id> ..." or
// "error <message>"; then the request file is removed. The Triton suite (scripts/gpu-triton) asks
// this way which SMs the engines loaded into the server ran on.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>
#include <vector>

namespace {

void answer_sms_requests(std::string path) {
  const std::string request = path + ".request";
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream in(request);
    if (!in) continue;
    std::string command;
    in >> command;
    in.close();
    std::string reply;
    if (command == "clear") {
      reply = trtet_test_engines_clear_sms() == 0 ? "ok 0" : "error " + g_last_error;
    } else if (command == "read") {
      std::vector<int> ids(4096);
      const int n = trtet_test_engines_sms(ids.data(), static_cast<int>(ids.size()));
      if (n < 0) {
        reply = "error " + g_last_error;
      } else {
        reply = "ok " + std::to_string(n);
        for (int i = 0; i < n && i < static_cast<int>(ids.size()); ++i) reply += " " + std::to_string(ids[static_cast<std::size_t>(i)]);
      }
    } else {
      reply = "error unknown request '" + command + "'";
    }
    const std::string partial = path + ".partial";
    { std::ofstream(partial) << reply << "\n"; }
    std::rename(partial.c_str(), path.c_str());
    std::remove(request.c_str());
  }
}

[[maybe_unused]] const bool g_sms_server = [] {
  const char* path = std::getenv("TRTET_TEST_ENGINES_SMS_FILE");
  if (path == nullptr || *path == '\0') return false;
  std::thread(answer_sms_requests, std::string(path)).detach();
  return true;
}();

}  // namespace
